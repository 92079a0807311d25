//! The StorageVirtualMachine reconcile. Every pass verifies every step against ONTAP and the
//! API server as they are now — the SVM, its LIFs, its account, and that the seed Secret's
//! credentials really authenticate — and repairs what differs. Nothing is inferred from an
//! earlier pass or an earlier step's success.

use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{CustomResourceExt, ResourceExt};

use super::VerifyRequests;
use super::errors::{Invalid, Waiting};
use super::lifs::ensure_lifs;
use super::naming::names_of;
use super::rotation::{PeriodError, RotationOutcome, Rotations, rotation_plan};
use super::routes::ensure_routes;
use super::standing::{AdoptionGrant, Standings};
use super::steady::SteadyInventory;
use super::tenant_network::ensure_tenant_network;
use super::{Consumers, SvmReconciler};
use crate::api::seed_secret::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::api::{
    OntapCluster, StorageVirtualMachine, StorageVirtualMachineStatus, SvmMode, SvmPhase,
};
use crate::deploy::REPORTER_DOMAIN;
use crate::ontap::connections::ClusterConnections;
use reconcile_engine::{
    ErrorCategory, Halt, Lifecycle, Manager, ManagerError, Outcome, OwnWrites, Reconciler,
    Registration, RemoteSystem, StepRunner, Summary,
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
        /// The tenant network the OntapCluster grants the object's tenant exists (if any).
        TenantNetworkReady,
        /// The SVM's LIFs match the spec.
        LIFsReady,
        /// The SVM's static routes are the spec's (when it lists routes).
        RoutesReady,
        /// The SVM's account exists, unlocked, with the right role.
        AccountReady,
        /// The seed Secret exists and its credentials authenticate against ONTAP.
        SecretReady,
        /// The SVM's limits are as the spec and the OntapCluster's defaults ask.
        LimitsReady,
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
        /// Cleanup: the tenant network is gone with the tenant's last SVM on the cluster.
        TenantNetworkRemoved,
        /// Cleanup: the seed Secret is gone.
        SecretDeleted,
    }
}

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
    rotations: Rotations,
) -> Result<(), ManagerError> {
    let clusters = manager.cache::<OntapCluster>()?;
    let svms = manager.cache::<StorageVirtualMachine>()?;
    let namespaces = manager.cache::<Namespace>()?;
    let standings = Standings::new(adoption, namespaces.clone());
    let steady = SteadyInventory::new(
        svms.clone(),
        clusters.clone(),
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
    let recorder = Recorder::new(
        manager.client().clone(),
        Reporter {
            controller: format!("{REPORTER_DOMAIN}/{CONTROLLER}"),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
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
        rotations: rotations.wired(recorder.clone(), verify.clone()),
        recorder,
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
            let network = self.tenant_network(svm);
            steps
                .step(SvmStep::TenantNetworkReady, || {
                    ensure_tenant_network(
                        svm,
                        network.as_ref(),
                        snapshot.as_deref(),
                        &client,
                        &self.recorder,
                    )
                })
                .await?;
            status.tenant_network = network.as_ref().map(|n| n.domain.clone());
            let allowed_nodes = self.allowances(svm).home_nodes;
            steps
                .step(SvmStep::LIFsReady, || {
                    ensure_lifs(
                        svm,
                        &ontap_svm,
                        snapshot.as_deref(),
                        &client,
                        &allowed_nodes,
                        network.as_ref().map(|n| n.domain.as_str()),
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
                self.ensure_account(svm, &names, &ontap_svm, snapshot.as_deref(), &client)
            })
            .await?;
        status.account_role = Some(self.account_role(svm));
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name));
        let rotation = rotation_plan(svm, cluster.as_deref(), Timestamp::now());
        let mut rotated = RotationOutcome::None;
        let secret = steps
            .step(SvmStep::SecretReady, || async {
                let rotation = rotation.as_ref().map_err(PeriodError::error)?;
                self.ensure_secret(
                    svm,
                    &names,
                    &ontap_svm,
                    &client,
                    verified,
                    rotation,
                    &mut rotated,
                )
                .await
            })
            .await;
        if let Ok(rotation) = &rotation {
            self.rotations
                .record(
                    svm,
                    status,
                    rotation,
                    rotated,
                    &names.account,
                    self.sync_period,
                )
                .await;
        }
        secret?;
        status.secret_ref = Some(names.secret.clone());
        if svm.spec.mode == SvmMode::Owned {
            let jobs = steps.jobs();
            let previous = status.usage.clone();
            status.usage = steps
                .step(SvmStep::LimitsReady, || {
                    self.ensure_limits(
                        svm,
                        &names,
                        &ontap_svm,
                        snapshot.as_deref(),
                        previous.as_ref(),
                        &client,
                        &jobs,
                    )
                })
                .await?;
        }
        Ok(())
    }
}
