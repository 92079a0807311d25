//! The StorageVirtualMachine reconcile. Every pass verifies every step against ONTAP and the
//! API server as they are now — the SVM, its LIFs, its account, and that the seed Secret's
//! credentials really authenticate — and repairs what differs. Nothing is inferred from an
//! earlier pass or an earlier step's success.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, CustomResourceExt, ResourceExt};

use super::VerifyRequests;
use super::authority::Creator;
use super::errors::{Invalid, Waiting};
use super::lifs::ensure_lifs;
use super::naming::{Names, names_of};
use super::routes::ensure_routes;
use super::standing::{AdoptionGrant, Standings};
use super::steady::SteadyInventory;
use crate::api::seed_secret::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::api::{
    OntapCluster, StorageVirtualMachine, StorageVirtualMachineStatus, SvmMode, SvmPhase,
};
use crate::ontap::connections::ClusterConnections;
use reconcile_engine::{
    ErrorCategory, Halt, Lifecycle, Manager, ManagerError, Outcome, OwnWrites, Reconciler,
    Registration, RemoteSystem, SharedCache, StepRunner, Summary,
};

/// Keeps the object until ONTAP is cleaned up (or left alone, with `deletionPolicy: Retain`).
pub const FINALIZER: &str = "ontap.storage.dev/svm-cleanup";

reconcile_engine::steps! {
    /// The steps of the StorageVirtualMachine controller, provisioning then cleanup.
    pub enum SvmStep {
        /// The OntapCluster exists, is Ready, and its credentials load.
        ClusterReady,
        /// Exactly one SVM of our name exists, created by us, running, with the spec's protocols.
        SVMReady,
        /// The SVM's LIFs match the spec.
        LIFsReady,
        /// The SVM's static routes are the spec's (when it lists routes).
        RoutesReady,
        /// The SVM's account exists, unlocked, with the right role.
        AccountReady,
        /// The seed Secret exists and its credentials authenticate against ONTAP.
        SecretReady,
        /// Cleanup: the SVM to delete was looked up.
        SVMFound,
        /// Cleanup: the SVM's LIFs are gone.
        LIFsDeleted,
        /// Cleanup: the SVM's account is gone.
        AccountDeleted,
        /// Cleanup of a tenant's object with `deletionPolicy: Retain`: its account is locked.
        AccountLocked,
        /// Cleanup: the SVM is gone.
        SVMDeleted,
        /// Cleanup: the seed Secret is gone.
        SecretDeleted,
    }
}

/// How soon to look again at an SVM that ONTAP is still creating, starting or deleting.
pub(super) const ONTAP_SETTLING: Duration = Duration::from_secs(2);
/// How often an `AccountOnly` object looks again for an SVM that is missing or not running:
/// another object provisions it, on no schedule this one can see.
pub(super) const EXISTING_SVM_RECHECK: Duration = Duration::from_secs(5);
/// How often an object whose SVM another operator installation provisions looks again: nothing
/// changes for it unless that installation lets the SVM go.
pub(super) const SERVED_ELSEWHERE_RECHECK: Duration = Duration::from_secs(60);

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "storagevirtualmachine";

/// Registers the StorageVirtualMachine controller: it owns the seed Secrets (cached by label
/// only: caching every Secret of the cluster would cost memory and widen what a memory dump of
/// the operator reveals), and an OntapCluster's change reconciles the SVMs that use it.
/// `adoption`: the one namespace whose objects may adopt SVMs the operator did not create, once
/// granted (the Gardener Extension grants its `--extension-project-namespace`); until then none.
/// `verify`: requests for a pass now, from a controller that found the credentials failing.
pub fn register(
    manager: &mut Manager,
    connections: ClusterConnections,
    adoption: AdoptionGrant,
    verify: VerifyRequests,
) -> Result<(), ManagerError> {
    let clusters = manager.cache::<OntapCluster>()?;
    let svms = manager.cache::<StorageVirtualMachine>()?;
    let namespaces = manager.cache::<Namespace>()?;
    let standings = Standings::new(adoption, namespaces.clone());
    let steady = SteadyInventory::new(
        svms.clone(),
        standings.clone(),
        manager.config().engine.sync_period,
        connections.inventory_min_svms(),
    );
    let drifted = steady
        .clone()
        .drifted(clusters.clone(), connections.clone());
    let seed_secrets =
        watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"));
    // One per SVM and read only on its own changes (passes read their Secret from the API
    // server): kept without its data, which a tenant who labels a Secret of its own could make
    // as large as the API server allows, and packed.
    let secrets = manager.cache_with::<Secret>(seed_secrets.clone())?;
    secrets.trim_objects(super::without_data);
    secrets.pack_objects();
    let consumers = Consumers::default();
    let reconciler = SvmReconciler {
        consumers: consumers.clone(),
        sync_period: manager.config().engine.sync_period,
        kube: manager.client().clone(),
        clusters,
        svms,
        standings,
        namespaces,
        connections,
        own_writes: OwnWrites::default(),
        steady,
    };
    manager.register(
        Registration::new(CONTROLLER, reconciler)
            .crd(StorageVirtualMachine::crd())
            // Another controller found the published credentials failing: verify now.
            .triggers(verify.stream())
            // The inventory shows a steady object's SVM or LIFs otherwise than it wants them.
            .triggers(drifted)
            .owns::<Secret>(
                seed_secrets,
                // `get`: a seed Secret that lost its label is outside the cache, and is read
                // directly to be repaired rather than reported as someone else's.
                &["get", "create", "patch", "delete"],
            )
            .watches::<OntapCluster>(|cluster, svms| {
                let name = cluster.name_any();
                svms.store()
                    .state()
                    .iter()
                    .filter(|s| s.spec.cluster_ref.name == name)
                    .map(|s| ObjectRef::from_obj(&**s))
                    .collect()
            })
            // A provider's change concerns the consumers naming it: revocation, or the end of
            // their wait.
            .watches::<StorageVirtualMachine>(move |provider, _| {
                consumers.of(&ObjectRef::from_obj(provider))
            })
            // A namespace's labels decide which clusters its objects may use.
            .watches::<Namespace>(|namespace, svms| {
                let name = namespace.name_any();
                svms.store()
                    .state()
                    .iter()
                    .filter(|s| s.namespace().as_deref() == Some(name.as_str()))
                    .map(|s| ObjectRef::from_obj(&**s))
                    .collect()
            }),
    )
}

pub struct SvmReconciler {
    /// Which consumers name which provider.
    pub consumers: Consumers,
    /// The engine's: the longest a consumer waits before it looks again on its own.
    pub sync_period: Duration,
    pub kube: Client,
    pub clusters: SharedCache<OntapCluster>,
    pub svms: SharedCache<StorageVirtualMachine>,
    pub namespaces: SharedCache<Namespace>,
    pub connections: ClusterConnections,
    /// The seed Secrets this controller wrote: their events need no second pass.
    pub own_writes: OwnWrites,
    /// Each object's standing, from the adoption grant and its namespace's labels.
    pub standings: Standings,
    /// What passes over steady objects may confirm from their cluster's inventory.
    pub steady: SteadyInventory,
}

/// The consumers each provider has: `AccountOnly` objects by the provider they name.
type ConsumerMap =
    HashMap<ObjectRef<StorageVirtualMachine>, HashSet<ObjectRef<StorageVirtualMachine>>>;

/// Which `AccountOnly` objects name which provider: a provider's change (its `shareWith`, its
/// status, its deletion) reconciles its consumers at once, so a narrowed `shareWith` revokes
/// within a pass and a waiting consumer needs no polling. Recorded by each consumer's pass.
#[derive(Clone, Debug, Default)]
pub struct Consumers(Arc<Mutex<ConsumerMap>>);

impl Consumers {
    fn lock(&self) -> std::sync::MutexGuard<'_, ConsumerMap> {
        // The map holds no invariant a panicking holder could break.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `consumer` names `provider` now, and no other (`None`: none, it is gone).
    pub(super) fn record(
        &self,
        consumer: &ObjectRef<StorageVirtualMachine>,
        provider: Option<ObjectRef<StorageVirtualMachine>>,
    ) {
        let mut map = self.lock();
        if let Some(provider) = &provider
            && map.get(provider).is_some_and(|c| c.contains(consumer))
        {
            return;
        }
        map.retain(|_, consumers| {
            consumers.remove(consumer);
            !consumers.is_empty()
        });
        if let Some(provider) = provider {
            map.entry(provider).or_default().insert(consumer.clone());
        }
    }

    /// The consumers that name `provider`.
    fn of(
        &self,
        provider: &ObjectRef<StorageVirtualMachine>,
    ) -> Vec<ObjectRef<StorageVirtualMachine>> {
        self.lock()
            .get(provider)
            .map(|c| c.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl Reconciler for SvmReconciler {
    type Resource = StorageVirtualMachine;
    type Step = SvmStep;
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    fn own_writes(&self) -> Option<OwnWrites> {
        Some(self.own_writes.clone())
    }

    fn remote_system(&self, svm: &StorageVirtualMachine) -> Option<RemoteSystem> {
        Some(self.connections.remote_system(&svm.spec.cluster_ref.name))
    }

    async fn reconcile(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        self.provision(svm, status, steps).await
    }

    async fn cleanup(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        self.delete(svm, status, steps).await
    }

    fn conclude(
        &self,
        status: &mut StorageVirtualMachineStatus,
        lifecycle: Lifecycle,
        summary: &Summary<SvmStep>,
    ) {
        status.phase = Some(match (lifecycle, summary) {
            (Lifecycle::Deleting, _) => SvmPhase::Deleting,
            (Lifecycle::Live, Summary::Done { .. }) => SvmPhase::Ready,
            (
                Lifecycle::Live,
                Summary::Waiting {
                    step: SvmStep::ClusterReady,
                    ..
                },
            ) => SvmPhase::Pending,
            (
                Lifecycle::Live,
                Summary::Waiting {
                    step: SvmStep::SVMReady,
                    wait,
                },
            ) if wait.reason == Waiting::SvmServedElsewhere.as_str() => SvmPhase::ServedElsewhere,
            (
                Lifecycle::Live,
                Summary::Failed {
                    category: ErrorCategory::Invalid,
                    ..
                },
            ) => SvmPhase::Failed,
            (Lifecycle::Live, _) => SvmPhase::Provisioning,
        });
    }
}

impl SvmReconciler {
    /// What the object with uid `marked` (the uid an SVM's mark holds) is to `actor`, which asks
    /// for the SVM `names.svm`: gone, keeping it, or an `AccountOnly` object on that SVM naming
    /// `actor` as its provider — handing it over by its own word.
    pub(super) fn creator(
        &self,
        actor: &StorageVirtualMachine,
        marked: &str,
        names: &Names,
    ) -> Creator {
        let all = self.svms.store().state();
        let Some(creator) = all.iter().find(|o| o.uid().as_deref() == Some(marked)) else {
            return Creator::Absent;
        };
        let names_actor = creator.spec.provider.as_ref().is_some_and(|p| {
            p.name == actor.name_any()
                && p.namespace.as_ref().or(creator.metadata.namespace.as_ref())
                    == actor.metadata.namespace.as_ref()
        });
        if creator.spec.mode == SvmMode::AccountOnly
            && names_actor
            && creator.spec.cluster_ref == actor.spec.cluster_ref
            && creator.spec.svm_name.as_deref() == Some(names.svm.as_str())
        {
            Creator::HandsOverToActor
        } else {
            Creator::Keeps
        }
    }

    async fn provision(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let names = names_of(svm, status);
        if let (Some(wanted), Some(provisioned)) = (&svm.spec.svm_name, &status.svm_name)
            && wanted != provisioned
        {
            return steps
                .step(SvmStep::SVMReady, || async {
                    Err::<Outcome, _>(Invalid::SvmNameChanged.error(
                        format!("spec.svmName {wanted} differs from the SVM provisioned as {provisioned}; SVMs are not renamed"),
                    ).into())
                })
                .await;
        }
        let client = self.cluster(svm, &names, steps).await?;
        let snapshot = self.steady.for_pass(svm, &client).await;
        let jobs = steps.jobs();
        let ontap_svm = steps
            .step(SvmStep::SVMReady, || async {
                match svm.spec.mode {
                    SvmMode::Owned => {
                        self.ensure_svm(
                            svm,
                            &names,
                            status.uuid.as_deref(),
                            snapshot.as_deref(),
                            &client,
                            &jobs,
                        )
                        .await
                    }
                    SvmMode::AccountOnly => self.shared_svm(svm, &names, &client).await,
                }
            })
            .await?;
        // Recorded only once the SVM exists: a name in the status is one ONTAP holds.
        status.svm_name = Some(ontap_svm.name.clone());
        status.uuid = Some(ontap_svm.uuid.clone());
        if svm.spec.mode == SvmMode::Owned {
            let allowed_nodes = self.allowances(svm).home_nodes;
            steps
                .step(SvmStep::LIFsReady, || {
                    ensure_lifs(
                        svm,
                        &ontap_svm,
                        snapshot.as_deref(),
                        &client,
                        &allowed_nodes,
                    )
                })
                .await?;
            steps
                .step(SvmStep::RoutesReady, || {
                    ensure_routes(svm, &ontap_svm, snapshot.as_deref(), &client)
                })
                .await?;
        }
        let verified = steps
            .step(SvmStep::AccountReady, || {
                self.ensure_account(svm, &names, &ontap_svm, &client)
            })
            .await?;
        steps
            .step(SvmStep::SecretReady, || {
                self.ensure_secret(svm, &names, &ontap_svm, &client, verified)
            })
            .await?;
        status.secret_ref = Some(names.secret.clone());
        Ok(())
    }
}
