//! The StorageVirtualMachine reconcile. Every pass verifies every step against ONTAP and the
//! API server as they are now — the SVM, its LIFs, its account, and that the seed Secret's
//! credentials really authenticate — and repairs what differs. Nothing is inferred from an
//! earlier pass or an earlier step's success.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, CustomResourceExt, ResourceExt};
use secrecy::SecretString;

use super::seed_secret::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use super::tenancy;
use super::{
    DesiredLif, ExpectedSeed, Ownership, SeedFields, SeedSecretState, build_seed_secret,
    default_account_name, default_svm_name, desired_lifs, generate_password, inspect_seed_secret,
    owned_by, password_set_at, plan_lifs, protocol_patch, seed_secret_name, svm_create,
};
use crate::api::{
    ADOPT_SVM_UUID_ANNOTATION, DeletionPolicy, OntapCluster, StorageVirtualMachine,
    StorageVirtualMachineStatus, SvmMode, SvmPhase,
};
use crate::controllers::connections::{ClusterConnections, missing, ontap_busy, ontap_error};
use crate::engine::{
    ErrorCategory, Halt, Lifecycle, Manager, ManagerError, Outcome, OwnWrites, Reconciler,
    Registration, SharedCache, StepError, StepRunner, Summary, Wait, Worker,
};
use crate::ontap::{
    Account, AccountCheck, AccountCreate, AccountPatch, ErrorClass, ObjectRef as OntapRef,
    OntapClient, OntapError, Svm, SvmPatch, SvmState, SvmTargetState, codes,
};

/// Keeps the object until ONTAP is cleaned up (or left alone, with `deletionPolicy: Retain`).
pub const FINALIZER: &str = "ontap.storage.dev/svm-cleanup";

crate::engine::steps! {
    /// The steps of the StorageVirtualMachine controller, provisioning then cleanup.
    pub enum SvmStep {
        /// The OntapCluster exists, is Ready, and its credentials load.
        ClusterReady,
        /// Exactly one SVM of our name exists, created by us, running, with the spec's protocols.
        SVMReady,
        /// The SVM's LIFs match the spec.
        LIFsReady,
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
        /// Cleanup: the SVM is gone.
        SVMDeleted,
        /// Cleanup: the seed Secret is gone.
        SecretDeleted,
    }
}

/// The field manager of the operator's writes to seed Secrets.
const FIELD_MANAGER: &str = "ontap-operator";

/// How soon to look again at an SVM that ONTAP is still creating, starting or deleting.
const ONTAP_SETTLING: Duration = Duration::from_secs(2);
/// How often an `AccountOnly` object looks again for an SVM that is missing or not running:
/// another object provisions it, on no schedule this one can see.
const EXISTING_SVM_RECHECK: Duration = Duration::from_secs(5);

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "storagevirtualmachine";

/// Registers the StorageVirtualMachine controller: it owns the seed Secrets (cached by label
/// only: caching every Secret of the cluster would cost memory and widen what a memory dump of
/// the operator reveals), and an OntapCluster's change reconciles the SVMs that use it.
pub fn register(
    manager: &mut Manager,
    connections: ClusterConnections,
) -> Result<(), ManagerError> {
    let clusters = manager.cache::<OntapCluster>()?;
    let reconciler = SvmReconciler {
        kube: manager.client().clone(),
        clusters,
        svms: manager.cache::<StorageVirtualMachine>()?,
        namespaces: manager.cache::<Namespace>()?,
        connections,
        own_writes: OwnWrites::default(),
    };
    manager.register(
        Registration::new(CONTROLLER, reconciler)
            .crd(StorageVirtualMachine::crd())
            .owns::<Secret>(
                watcher::Config::default()
                    .labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")),
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
    pub kube: Client,
    pub clusters: SharedCache<OntapCluster>,
    pub svms: SharedCache<StorageVirtualMachine>,
    pub namespaces: SharedCache<Namespace>,
    pub connections: ClusterConnections,
    /// The seed Secrets this controller wrote: their events need no second pass.
    pub own_writes: OwnWrites,
}

/// The names this object's ONTAP and Kubernetes objects go by.
struct Names {
    svm: String,
    account: String,
    secret: String,
    namespace: String,
    uid: String,
}

impl Reconciler for SvmReconciler {
    type Resource = StorageVirtualMachine;
    type Step = SvmStep;
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    fn own_writes(&self) -> Option<OwnWrites> {
        Some(self.own_writes.clone())
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
                Summary::Failed {
                    category: ErrorCategory::Invalid,
                    ..
                },
            ) => SvmPhase::Failed,
            (Lifecycle::Live, _) => SvmPhase::Provisioning,
        });
    }
}

/// Whether `svm` asks to take over `found` ([`ADOPT_SVM_UUID_ANNOTATION`]).
fn adopts(svm: &StorageVirtualMachine, found: &Svm) -> bool {
    svm.annotations().get(ADOPT_SVM_UUID_ANNOTATION) == Some(&found.uuid)
}

fn kube_error(reason: &'static str) -> impl FnOnce(kube::Error) -> StepError {
    move |e| StepError::from_kube(reason, e)
}

impl SvmReconciler {
    fn names(&self, svm: &StorageVirtualMachine, status: &StorageVirtualMachineStatus) -> Names {
        let namespace = svm.namespace().unwrap_or_default();
        let name = svm.name_any();
        Names {
            // Once provisioned under a name, the SVM keeps it: the status remembers it.
            svm: svm
                .spec
                .svm_name
                .clone()
                .or_else(|| status.svm_name.clone())
                .unwrap_or_else(|| default_svm_name(&namespace, &name)),
            account: svm
                .spec
                .account
                .as_ref()
                .and_then(|a| a.name.clone())
                .unwrap_or_else(|| default_account_name(&namespace, &name)),
            secret: seed_secret_name(svm),
            uid: svm.uid().unwrap_or_default(),
            namespace,
        }
    }

    /// Whether `svm`'s namespace may use `cluster`, and no older object holds the SVM name or a
    /// LIF address it asks for ([`tenancy`](super::tenancy)).
    fn tenancy(
        &self,
        svm: &StorageVirtualMachine,
        cluster: &OntapCluster,
        names: &Names,
    ) -> Result<(), StepError> {
        let namespace = svm.namespace().unwrap_or_default();
        let labels = self
            .namespaces
            .get(&ObjectRef::new(&namespace))
            .map(|ns| ns.labels().clone())
            .ok_or_else(|| {
                StepError::transient_msg(
                    "NamespaceUnknown",
                    format!("the namespace {namespace} is not in the cache yet"),
                )
            })?;
        let allowed = tenancy::namespace_allowed(cluster.spec.namespace_selector.as_ref(), &labels)
            .map_err(|e| StepError::invalid("InvalidNamespaceSelector", e))?;
        if !allowed {
            return Err(StepError::invalid(
                "NamespaceNotAllowed",
                format!(
                    "the OntapCluster {}'s namespaceSelector does not admit the namespace {namespace}; a cluster administrator can label the namespace or widen the selector",
                    cluster.name_any()
                ),
            ));
        }
        let claims = tenancy::Claims::of(svm, names.svm.clone(), names.account.clone());
        let others = self.svms.store().state();
        let contested = tenancy::contested(
            svm,
            &claims,
            others.iter().map(|other| {
                let status = other.status.clone().unwrap_or_default();
                let names = self.names(other, &status);
                (
                    &**other,
                    tenancy::Claims::of(other, names.svm, names.account),
                )
            }),
        );
        match contested {
            Some(why) => Err(StepError::conflict("ClaimedByAnother", why)),
            None => Ok(()),
        }
    }

    /// Whether an `Owned` object provisions the SVM an `AccountOnly` object names, on the same
    /// cluster, and shares it with the object's namespace: an account is vsadmin access, so one
    /// tenant must not give itself an account on another's SVM by naming it. A wait while no
    /// object provisions it (the extension declares both at once).
    fn shared_with(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
    ) -> Result<Option<Wait>, StepError> {
        let all = self.svms.store().state();
        let provider = all.iter().find(|other| {
            other.spec.mode == SvmMode::Owned
                && other.spec.cluster_ref == svm.spec.cluster_ref
                && other.metadata.deletion_timestamp.is_none()
                && {
                    let status = other.status.clone().unwrap_or_default();
                    self.names(other, &status).svm == names.svm
                }
        });
        let Some(provider) = provider else {
            return Ok(Some(Wait {
                reason: "SVMAwaited".into(),
                message: format!(
                    "no StorageVirtualMachine provisions the SVM {} on cluster {}; an AccountOnly object makes its account only on an SVM an Owned object shares with its namespace (spec.shareWith)",
                    names.svm, svm.spec.cluster_ref.name
                ),
                after: EXISTING_SVM_RECHECK,
            }));
        };
        let labels = self
            .namespaces
            .get(&ObjectRef::new(&names.namespace))
            .map(|ns| ns.labels().clone())
            .unwrap_or_default();
        let shared = tenancy::shares_with(provider, &names.namespace, &labels)
            .map_err(|e| StepError::invalid("InvalidShareWith", e))?;
        if shared {
            return Ok(None);
        }
        Err(StepError::invalid(
            "SVMNotShared",
            format!(
                "the SVM {} is not shared with the namespace {} (the shareWith of the StorageVirtualMachine that provisions it does not admit it)",
                names.svm, names.namespace
            ),
        ))
    }

    /// Whether the object with uid `creator`, which marked the SVM `svm` asks for, has handed
    /// it over: it is now an `AccountOnly` object on that SVM, on the same cluster.
    fn handed_over(&self, svm: &StorageVirtualMachine, creator: &str, names: &Names) -> bool {
        self.svms.store().state().iter().any(|other| {
            other.uid().as_deref() == Some(creator)
                && other.spec.mode == SvmMode::AccountOnly
                && other.spec.cluster_ref == svm.spec.cluster_ref
                && other.spec.svm_name.as_deref() == Some(names.svm.as_str())
        })
    }

    /// The live `AccountOnly` objects with accounts on the SVM `svm` provisions: the ones of
    /// its namespace by name, the others only counted (a tenant learns that its SVM is shared,
    /// not with whom).
    fn account_only_users(&self, svm: &StorageVirtualMachine, names: &Names) -> Vec<String> {
        let all = self.svms.store().state();
        let users: Vec<_> = all
            .iter()
            .filter(|other| {
                other.spec.mode == SvmMode::AccountOnly
                    && other.spec.cluster_ref == svm.spec.cluster_ref
                    && other.spec.svm_name.as_deref() == Some(names.svm.as_str())
                    && other.metadata.deletion_timestamp.is_none()
            })
            .collect();
        let mut named: Vec<String> = users
            .iter()
            .filter(|u| u.namespace() == svm.namespace())
            .map(|u| format!("the StorageVirtualMachine {}", u.name_any()))
            .collect();
        let elsewhere = users.len() - named.len();
        if elsewhere > 0 {
            named.push(format!("{elsewhere} of other namespaces"));
        }
        named
    }

    /// Step `ClusterReady`: the OntapCluster exists, is Ready, admits this object (only while it
    /// lives: cleanup of what was provisioned must go on), and its credentials load.
    async fn cluster(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<OntapClient, Halt> {
        steps
            .step(SvmStep::ClusterReady, || async {
                let name = &svm.spec.cluster_ref.name;
                let Some(cluster) = self.clusters.get(&ObjectRef::new(name)) else {
                    let todo = if svm.metadata.deletion_timestamp.is_some() {
                        "; the SVM cannot be cleaned up without it: recreate the OntapCluster, or set deletionPolicy: Retain to let this object go and leave ONTAP alone"
                    } else {
                        ""
                    };
                    return Ok(Outcome::Waiting(missing(
                        "ClusterNotFound",
                        format!("the OntapCluster {name} does not exist{todo}"),
                    )));
                };
                let ready = cluster
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
                // A cluster being deleted is not Ready (it waits for its SVMs), yet its SVMs
                // must still reach it to clean up: then the connection itself is the test.
                if svm.metadata.deletion_timestamp.is_none() {
                    self.tenancy(svm, &cluster, names)?;
                }
                let deleting = cluster.metadata.deletion_timestamp.is_some();
                if !deleting && ready.is_none_or(|c| c.status != "True") {
                    let why = ready
                        .map(|c| c.message.clone())
                        .unwrap_or_else(|| "not verified yet".into());
                    return Ok(Outcome::Waiting(missing(
                        "ClusterNotReady",
                        format!("the OntapCluster {name} is not Ready: {why}"),
                    )));
                }
                match self.connections.connect(&cluster).await {
                    Ok(client) => Ok(Outcome::Unchanged(client)),
                    Err(e) => e.into_step_result(),
                }
            })
            .await
    }

    async fn provision(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let names = self.names(svm, status);
        if let (Some(wanted), Some(provisioned)) = (&svm.spec.svm_name, &status.svm_name)
            && wanted != provisioned
        {
            return steps
                .step(SvmStep::SVMReady, || async {
                    Err::<Outcome, _>(StepError::invalid(
                        "SVMNameChanged",
                        format!("spec.svmName {wanted} differs from the SVM provisioned as {provisioned}; SVMs are not renamed"),
                    ))
                })
                .await;
        }
        let client = self.cluster(svm, &names, steps).await?;
        let worker = steps.worker();
        let ontap_svm = steps
            .step(SvmStep::SVMReady, || async {
                match svm.spec.mode {
                    SvmMode::Owned => {
                        self.ensure_svm(svm, &names, status.uuid.as_deref(), &client, &worker)
                            .await
                    }
                    SvmMode::AccountOnly => match self.shared_with(svm, &names)? {
                        Some(wait) => Ok(Outcome::Waiting(wait)),
                        None => existing_svm(&client, &names).await,
                    },
                }
            })
            .await?;
        // Recorded only once the SVM exists: a name in the status is one ONTAP holds.
        status.svm_name = Some(ontap_svm.name.clone());
        status.uuid = Some(ontap_svm.uuid.clone());
        if svm.spec.mode == SvmMode::Owned {
            steps
                .step(SvmStep::LIFsReady, || ensure_lifs(svm, &ontap_svm, &client))
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

    /// Step `SVMReady`: exactly one SVM of our name exists, created by us, running, with the
    /// protocols of the spec.
    async fn ensure_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        client: &OntapClient,
        worker: &Worker,
    ) -> Result<Outcome<Svm>, StepError> {
        // The engine added the finalizer before this pass, so deleting the object always cleans
        // up what this step creates.
        let mut changed = false;
        let cluster = &svm.spec.cluster_ref.name;
        // Never provisioned: the pass is about to start a job. Its slot is taken before the
        // lookup, so that the lookup is fresh however long the wait, and a pass that waits
        // costs ONTAP nothing.
        let mut slot = None;
        if recorded.is_none() {
            match self.connections.job_slot(cluster, worker).await {
                Ok(permit) => slot = Some(permit),
                Err(wait) => return Ok(Outcome::Waiting(wait)),
            }
        }
        macro_rules! job_slot {
            () => {
                if slot.is_none() {
                    match self.connections.job_slot(cluster, worker).await {
                        Ok(permit) => slot = Some(permit),
                        Err(wait) => return Ok(Outcome::Waiting(wait)),
                    }
                }
                // Held until the step returns, whichever way.
                debug_assert!(slot.is_some());
            };
        }
        let found = match lookup_svm(client, &names.svm).await? {
            Some(found) => found,
            None => {
                // The SVM recorded in the status still exists under another name (renamed in
                // ONTAP): creating a second one would only fight it for the LIF addresses.
                if let Some(uuid) = recorded {
                    match client.svm(uuid).await {
                        Ok(renamed) => {
                            return Err(StepError::invalid(
                                "SVMRenamedInONTAP",
                                format!(
                                    "the SVM {uuid} provisioned as {} is now named {} in ONTAP; rename it back in ONTAP (SVMs are not renamed by the operator)",
                                    names.svm, renamed.name
                                ),
                            ));
                        }
                        Err(e) if is_entry_not_found(&e) => {}
                        Err(e) => return Err(ontap_error("SVMLookupFailed", e)),
                    }
                }
                let mut body = svm_create(svm, &names.svm)
                    .map_err(|e| StepError::invalid("InvalidSpec", e.to_string()))?;
                job_slot!();
                // Only where there is something to create: the steady state does not pay for it.
                let aggregates = self
                    .connections
                    .aggregates(cluster, client)
                    .await
                    .map_err(|e| ontap_error("AggregateLookupFailed", e))?;
                if body.aggregates.is_empty() {
                    body.aggregates = aggregates
                        .iter()
                        .map(|a| OntapRef::by_name(&a.name))
                        .collect();
                } else if let Some(absent) = svm
                    .spec
                    .aggregates
                    .iter()
                    .find(|wanted| !aggregates.iter().any(|a| &a.name == *wanted))
                {
                    return Ok(Outcome::Waiting(missing(
                        "AggregateNotFound",
                        format!(
                            "the aggregate {absent} named in spec.aggregates does not exist in ONTAP"
                        ),
                    )));
                }
                changed = true;
                match client.create_svm(&body).await {
                    Ok(created) => created,
                    Err(e) => {
                        if let Some(wait) = ontap_busy(&e) {
                            return Ok(Outcome::Waiting(wait));
                        }
                        // The POST may have been applied, or a previous attempt's job may be
                        // running: never create twice, look again by name.
                        if !(e.is_ambiguous() || e.class() == ErrorClass::Conflict) {
                            // An aggregate named in the body may be gone: list them afresh.
                            self.connections.forget_aggregates(cluster);
                            return Err(ontap_error("SVMCreateFailed", e));
                        }
                        match lookup_svm(client, &names.svm).await? {
                            Some(found) => found,
                            None => return Err(ontap_error("SVMCreateFailed", e)),
                        }
                    }
                }
            }
        };
        match owned_by(found.comment.as_deref(), &names.uid) {
            Ownership::Ours => {}
            // Taken over: asked for by annotation (a restore), or handed over by its creator,
            // which became an AccountOnly user of it.
            Ownership::Foreign(creator)
                if adopts(svm, &found) || self.handed_over(svm, &creator, names) =>
            {
                // An adoption keeps the account, whose password must be known first; after a
                // hand-over this object's own account is made next.
                if adopts(svm, &found)
                    && matches!(
                        self.seed_state(svm, names, &found).await?.state,
                        SeedSecretState::Missing
                    )
                {
                    return Ok(Outcome::waiting(
                        "AdoptionAwaitsSecret",
                        format!(
                            "adopting the SVM {} waits for the seed Secret {} with its account's password",
                            names.svm, names.secret
                        ),
                        ONTAP_SETTLING,
                    ));
                }
                job_slot!();
                let mark = SvmPatch {
                    comment: Some(super::ownership_comment(
                        &names.uid,
                        &names.namespace,
                        &svm.name_any(),
                    )),
                    ..SvmPatch::default()
                };
                client
                    .patch_svm(&found.uuid, &mark)
                    .await
                    .map_err(|e| ontap_error("SVMAdoptFailed", e))?;
                changed = true;
            }
            Ownership::Foreign(other) => {
                return Err(StepError::invalid(
                    "SVMNameInUse",
                    format!(
                        "the SVM {} in ONTAP belongs to another StorageVirtualMachine (uid {other}); set another spec.svmName",
                        names.svm
                    ),
                ));
            }
            Ownership::Unmarked => {
                return Err(StepError::invalid(
                    "SVMNameInUse",
                    format!(
                        "an SVM named {} exists in ONTAP but was not created by this operator; it is not adopted — set another spec.svmName",
                        names.svm
                    ),
                ));
            }
        }
        match found.state {
            Some(SvmState::Initializing | SvmState::Starting | SvmState::Stopping) => {
                return Ok(Outcome::waiting(
                    "SVMSettling",
                    format!("ONTAP reports the SVM as {:?}", found.state),
                    ONTAP_SETTLING,
                ));
            }
            Some(SvmState::Deleting) => {
                return Ok(Outcome::waiting(
                    "SVMDeleting",
                    "ONTAP is deleting the SVM",
                    ONTAP_SETTLING,
                ));
            }
            Some(SvmState::Stopped) => {
                job_slot!();
                let start = SvmPatch {
                    state: Some(SvmTargetState::Running),
                    ..SvmPatch::default()
                };
                if let Some(wait) = job(
                    client.patch_svm(&found.uuid, &start).await,
                    "SVMStartFailed",
                )? {
                    return Ok(Outcome::Waiting(wait));
                }
                return Ok(Outcome::waiting(
                    "SVMStarting",
                    "the SVM was stopped; it is being started",
                    ONTAP_SETTLING,
                ));
            }
            _ => {}
        }
        if let Some(patch) = protocol_patch(&svm.spec.protocols, &found) {
            job_slot!();
            if let Some(wait) = job(
                client.patch_svm(&found.uuid, &patch).await,
                "SVMProtocolsFailed",
            )? {
                return Ok(Outcome::Waiting(wait));
            }
            changed = true;
        }
        drop(slot);
        Ok(if changed {
            Outcome::Changed(found)
        } else {
            Outcome::Unchanged(found)
        })
    }

    /// Step `AccountReady`: the SVM-scoped account exists with role vsadmin, unlocked.
    ///
    /// When the seed Secret holds the account's credentials, one GET authenticated as the
    /// account both proves them and reads the account (role; an account that can log in is not
    /// locked): that check is the `SecretReady` step's as well, so a pass over a Ready SVM costs
    /// ONTAP this GET and the two lookups before it. Otherwise the administrator looks.
    async fn ensure_account(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
    ) -> Result<Outcome<Option<Verified>>, StepError> {
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        if let SeedSecretState::Complete { username, password } = &seed.state
            && *username == names.account
            && let AccountCheck::Valid(account) =
                confirmed_check(client, &ontap_svm.uuid, &names.account, password).await?
        {
            check_role(&account, names)?;
            return Ok(Outcome::Unchanged(Some(Verified {
                password_set_at: seed.password_set_at,
            })));
        }
        let existing = client
            .account(&ontap_svm.uuid, &names.account)
            .await
            .map_err(|e| ontap_error("AccountLookupFailed", e))?;
        if let Some(account) = existing {
            check_role(&account, names)?;
            if unlock_needed(&account) {
                let unlock = AccountPatch {
                    locked: Some(false),
                    ..AccountPatch::default()
                };
                client
                    .patch_account(&ontap_svm.uuid, &names.account, &unlock)
                    .await
                    .map_err(|e| ontap_error("AccountUnlockFailed", e))?;
                return Ok(Outcome::Changed(None));
            }
            return Ok(Outcome::Unchanged(None));
        }
        // A password must exist before the account does; it goes into the Secret first, so a
        // crash right after the account is created leaves a Secret that matches it.
        // The Secret-first write below replaces the only record of a previous account name.
        retire_renamed_account(client, ontap_svm, names, &seed.state).await?;
        let password = match seed.state {
            SeedSecretState::Complete { username, password } if username == names.account => {
                password
            }
            SeedSecretState::NotOurs(_) => generate_password(&names.account),
            _ => {
                let password = generate_password(&names.account);
                self.write_secret(
                    svm,
                    names,
                    ontap_svm,
                    &password,
                    None,
                    seed.resource_version.as_deref(),
                )
                .await?;
                password
            }
        };
        let create = AccountCreate {
            name: names.account.clone(),
            owner_uuid: ontap_svm.uuid.clone(),
            role: "vsadmin".into(),
            password,
            comment: Some(format!("ontap-operator:uid={}", names.uid)),
        };
        match client.create_account(&create).await {
            Ok(()) => Ok(Outcome::Changed(None)),
            // Applied or not, the next pass looks again; a duplicate means it exists already.
            Err(e) if e.class() == ErrorClass::Conflict => Ok(Outcome::Changed(None)),
            Err(e) => Err(ontap_error("AccountCreateFailed", e)),
        }
    }

    async fn seed_state(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
    ) -> Result<Seed, StepError> {
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
        let current = api
            .get_opt(&names.secret)
            .await
            .map_err(kube_error("SecretReadFailed"))?;
        let expected = ExpectedSeed::for_svm(svm, &names.account, &names.svm, &ontap_svm.uuid)
            .ok_or_else(|| StepError::transient_msg("NotStored", "the object has no uid"))?;
        Ok(Seed {
            state: inspect_seed_secret(current.as_ref(), &expected),
            password_set_at: current.as_ref().and_then(password_set_at),
            resource_version: current.and_then(|s| s.metadata.resource_version),
        })
    }

    /// Creates the seed Secret (when none was read) or replaces the one read at
    /// `read_version`, with `password`. A Secret created or changed by someone else meanwhile
    /// is a conflict, never overwritten and so never adopted (and deleted with the object).
    async fn write_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        password: &SecretString,
        password_set_at: Option<Timestamp>,
        read_version: Option<&str>,
    ) -> Result<(), StepError> {
        let fields = SeedFields {
            username: names.account.clone(),
            password: password.clone(),
            management_lif: svm.spec.management_lif.ip.clone(),
            svm_name: names.svm.clone(),
            svm_uuid: ontap_svm.uuid.clone(),
            password_set_at,
        };
        let mut secret = build_seed_secret(svm, &fields)
            .map_err(|e| StepError::transient_msg("SecretBuildFailed", e.to_string()))?;
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
        let pending = self
            .own_writes
            .begin::<Secret>(Some(&names.namespace), &names.secret);
        let written = match read_version {
            None => {
                let params = PostParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..PostParams::default()
                };
                api.create(&params, &secret).await
            }
            // Server-side apply with the version read as a precondition; a changed type is
            // refused by the API server instead of silently kept.
            Some(version) => {
                secret.metadata.resource_version = Some(version.to_string());
                api.patch(
                    &names.secret,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&secret),
                )
                .await
            }
        };
        let written = written.map_err(|e| match e {
            kube::Error::Api(status) if status.code == 409 => StepError::conflict(
                "SecretChangedMeanwhile",
                format!(
                    "the Secret {} was created or changed by someone else while it was being written; it is read again",
                    names.secret
                ),
            ),
            e => StepError::from_kube("SecretWriteFailed", e),
        })?;
        pending.done(&written);
        Ok(())
    }

    /// Step `SecretReady`: the Secret exists, is complete, and its credentials authenticate
    /// against ONTAP as the account, now. Otherwise: a new password goes into the Secret first,
    /// then into ONTAP; Ready waits until a request sent before it can no longer land, and the
    /// credentials are verified again then.
    async fn ensure_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        verified: Option<Verified>,
    ) -> Result<Outcome, StepError> {
        // `AccountReady` authenticated with the Secret's credentials in this very pass.
        if let Some(verified) = verified {
            return Ok(self.settled(verified.password_set_at));
        }
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        let check = |password: SecretString| async move {
            confirmed_check(client, &ontap_svm.uuid, &names.account, &password).await
        };
        match seed.state {
            SeedSecretState::NotOurs(_) => {
                return Err(StepError::invalid(
                    "SecretNameInUse",
                    format!("Secret {}: {}", names.secret, seed.state),
                ));
            }
            SeedSecretState::Complete { username, password } if username == names.account => {
                if let AccountCheck::Valid(_) = check(password).await? {
                    return Ok(self.settled(seed.password_set_at));
                }
            }
            SeedSecretState::Stale { ref username, .. } if *username != names.account => {
                retire_renamed_account(client, ontap_svm, names, &seed.state).await?;
            }
            SeedSecretState::Stale {
                username, password, ..
            } if username == names.account => {
                // Only descriptive fields differ: keep a password that still works.
                if let AccountCheck::Valid(_) = check(password.clone()).await? {
                    self.write_secret(
                        svm,
                        names,
                        ontap_svm,
                        &password,
                        seed.password_set_at,
                        seed.resource_version.as_deref(),
                    )
                    .await?;
                    return Ok(match self.settled(seed.password_set_at) {
                        Outcome::Unchanged(()) => Outcome::changed(),
                        waiting => waiting,
                    });
                }
            }
            _ => {}
        }
        let password = generate_password(&names.account);
        self.write_secret(
            svm,
            names,
            ontap_svm,
            &password,
            Some(Timestamp::now()),
            seed.resource_version.as_deref(),
        )
        .await?;
        client
            .set_account_password(&ontap_svm.uuid, &names.account, &password)
            .await
            .map_err(|e| ontap_error("PasswordSetFailed", e))?;
        match client
            .verify_account(&ontap_svm.uuid, &names.account, &password)
            .await
            .map_err(|e| ontap_error("CredentialCheckFailed", e))?
        {
            AccountCheck::Valid(_) => Ok(Outcome::waiting(
                "CredentialsSettling",
                self.settling_message(),
                self.settle_window(),
            )),
            other => Err(StepError::transient_msg(
                "CredentialsRejected",
                format!(
                    "ONTAP did not accept the new password of {} ({other:?})",
                    names.account
                ),
            )),
        }
    }

    /// How long after a password was set a request carrying an older one may still land: the
    /// request timeout twice over (a server may work on a request its client gave up on).
    fn settle_window(&self) -> Duration {
        self.connections.request_timeout() * 2
    }

    fn settling_message(&self) -> String {
        format!(
            "a new password was set; an older password request whose answer was lost could still land within {:?}: the credentials are verified again after that",
            self.settle_window()
        )
    }

    /// Verified credentials count once no older password request can land any more.
    fn settled(&self, password_set_at: Option<Timestamp>) -> Outcome {
        let Some(set_at) = password_set_at else {
            return Outcome::unchanged();
        };
        let since = Timestamp::now().duration_since(set_at).unsigned_abs();
        match self.settle_window().checked_sub(since) {
            Some(left) if !left.is_zero() => {
                Outcome::waiting("CredentialsSettling", self.settling_message(), left)
            }
            _ => Outcome::unchanged(),
        }
    }

    async fn delete(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let mut names = self.names(svm, status);
        // The name it was provisioned under, not one set in the spec afterwards.
        if let Some(provisioned) = &status.svm_name {
            names.svm = provisioned.clone();
        }
        if svm.spec.deletion_policy == DeletionPolicy::Delete
            && svm.spec.mode == SvmMode::AccountOnly
        {
            let client = self.cluster(svm, &names, steps).await?;
            let found = steps
                .step(SvmStep::SVMFound, || async {
                    Ok(Outcome::Unchanged(
                        lookup_shared_svm(&client, &names, status.uuid.as_deref()).await?,
                    ))
                })
                .await?;
            if let Some(found) = found {
                steps
                    .step(SvmStep::AccountDeleted, || {
                        delete_account(&client, &found, &names.account)
                    })
                    .await?;
            }
        } else if svm.spec.deletion_policy == DeletionPolicy::Delete {
            let users = self.account_only_users(svm, &names);
            if !users.is_empty() {
                return steps
                    .step(SvmStep::SVMDeleted, || async {
                        Ok(Outcome::<()>::waiting(
                            "SVMShared",
                            format!(
                                "the SVM {} still holds the accounts of {}; it is deleted once they are gone (or set deletionPolicy: Retain to leave it)",
                                names.svm,
                                users.join(", ")
                            ),
                            EXISTING_SVM_RECHECK,
                        ))
                    })
                    .await;
            }
            let client = self.cluster(svm, &names, steps).await?;
            let found = steps
                .step(SvmStep::SVMFound, || {
                    find_for_deletion(&client, &names, status.uuid.as_deref())
                })
                .await?;
            if let Some(found) = found {
                if found.state == Some(SvmState::Deleting) {
                    return steps
                        .step(SvmStep::SVMDeleted, || async {
                            Ok(Outcome::<()>::waiting(
                                "SVMDeleting",
                                format!(
                                    "ONTAP is deleting the SVM {} ({})",
                                    found.name, found.uuid
                                ),
                                ONTAP_SETTLING,
                            ))
                        })
                        .await;
                }
                steps
                    .step(SvmStep::LIFsDeleted, || async {
                        let interfaces = client
                            .interfaces(&found.uuid)
                            .await
                            .map_err(|e| ontap_error("LIFLookupFailed", e))?;
                        for interface in &interfaces {
                            client
                                .delete_interface(&interface.uuid)
                                .await
                                .map_err(|e| ontap_error("LIFDeleteFailed", e))?;
                        }
                        Ok(if interfaces.is_empty() {
                            Outcome::unchanged()
                        } else {
                            Outcome::changed()
                        })
                    })
                    .await?;
                steps
                    .step(SvmStep::AccountDeleted, || {
                        delete_account(&client, &found, &names.account)
                    })
                    .await?;
                let worker = steps.worker();
                steps
                    .step(SvmStep::SVMDeleted, || async {
                        let _slot = match self
                            .connections
                            .job_slot(&svm.spec.cluster_ref.name, &worker)
                            .await
                        {
                            Ok(slot) => slot,
                            Err(wait) => return Ok(Outcome::Waiting(wait)),
                        };
                        Ok(
                            match job(client.delete_svm(&found.uuid).await, "SVMDeleteFailed")? {
                                Some(wait) => Outcome::Waiting(wait),
                                None => Outcome::changed(),
                            },
                        )
                    })
                    .await?;
            }
        }
        steps
            .step(SvmStep::SecretDeleted, || async {
                let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
                let Some(secret) = api
                    .get_opt(&names.secret)
                    .await
                    .map_err(kube_error("SecretReadFailed"))?
                else {
                    return Ok(Outcome::unchanged());
                };
                let ours = secret
                    .owner_references()
                    .iter()
                    .any(|o| o.controller == Some(true) && o.uid == names.uid);
                if ours {
                    // Only the Secret read as ours: not one recreated under the name since.
                    let params = DeleteParams {
                        preconditions: Some(Preconditions {
                            uid: secret.uid(),
                            resource_version: secret.resource_version(),
                        }),
                        ..DeleteParams::default()
                    };
                    match api.delete(&names.secret, &params).await {
                        Err(e) if !is_not_found(&e) => {
                            return Err(StepError::from_kube("SecretDeleteFailed", e));
                        }
                        _ => {}
                    }
                }
                Ok(Outcome::changed())
            })
            .await?;
        Ok(())
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 404)
}

/// The SVM the cleanup deletes: the one recorded in `status.uuid` (whatever it is called in
/// ONTAP now), else the one of our name; only ever one that carries our ownership marker.
/// Only ONTAP's own "entry not found" counts as gone: a proxy's 404 page is an error.
async fn find_for_deletion(
    client: &OntapClient,
    names: &Names,
    recorded: Option<&str>,
) -> Result<Outcome<Option<Svm>>, StepError> {
    let ours = |svm: &Svm| owned_by(svm.comment.as_deref(), &names.uid) == Ownership::Ours;
    if let Some(uuid) = recorded {
        match client.svm(uuid).await {
            Ok(found) if ours(&found) => return Ok(Outcome::Unchanged(Some(found))),
            Ok(found) => {
                return Err(StepError::invalid(
                    "SVMOwnershipChanged",
                    format!(
                        "the SVM {uuid} recorded in status.uuid (now named {}) no longer carries this object's ownership marker; it is not deleted. Delete it in ONTAP, or set deletionPolicy: Retain to let the object go",
                        found.name
                    ),
                ));
            }
            Err(e) if is_entry_not_found(&e) => {}
            Err(e) => return Err(ontap_error("SVMLookupFailed", e)),
        }
    }
    // No uuid recorded (a crash before the status write), or the recorded SVM is gone: an SVM of
    // ours under the provisioned name is still ours to delete.
    Ok(Outcome::Unchanged(
        lookup_svm(client, &names.svm).await?.filter(ours),
    ))
}

/// Step `SVMReady` of an `AccountOnly` object: the SVM it names exists and runs. It is only
/// looked at — whoever provisioned it owns it.
async fn existing_svm(client: &OntapClient, names: &Names) -> Result<Outcome<Svm>, StepError> {
    let Some(found) = lookup_svm(client, &names.svm).await? else {
        return Ok(Outcome::waiting(
            "SVMAwaited",
            format!(
                "the SVM {} does not exist in ONTAP (yet); this AccountOnly object makes its account once it is provisioned",
                names.svm
            ),
            EXISTING_SVM_RECHECK,
        ));
    };
    match found.state {
        Some(SvmState::Running) => Ok(Outcome::Unchanged(found)),
        state => Ok(Outcome::waiting(
            "SVMNotRunning",
            format!(
                "ONTAP reports the SVM {} as {state:?}; the account is made once it runs",
                names.svm
            ),
            EXISTING_SVM_RECHECK,
        )),
    }
}

/// Step `AccountDeleted`: the account is gone from `svm` (already gone counts).
async fn delete_account(
    client: &OntapClient,
    svm: &Svm,
    account: &str,
) -> Result<Outcome, StepError> {
    client
        .delete_account(&svm.uuid, account)
        .await
        .map_err(|e| ontap_error("AccountDeleteFailed", e))?;
    Ok(Outcome::changed())
}

/// The SVM an `AccountOnly` object made its account on: the recorded one, else the one of its
/// name; `None` when neither exists any more (the account went with the SVM).
async fn lookup_shared_svm(
    client: &OntapClient,
    names: &Names,
    recorded: Option<&str>,
) -> Result<Option<Svm>, StepError> {
    if let Some(uuid) = recorded {
        match client.svm(uuid).await {
            Ok(found) => return Ok(Some(found)),
            Err(e) if is_entry_not_found(&e) => {}
            Err(e) => return Err(ontap_error("SVMLookupFailed", e)),
        }
    }
    lookup_svm(client, &names.svm).await
}

/// ONTAP's own answer that the addressed object does not exist (code 4), not just any 404.
fn is_entry_not_found(e: &OntapError) -> bool {
    e.is_not_found() && e.ontap_code() == Some(crate::ontap::codes::ENTRY_NOT_FOUND)
}

/// The account's verdict on `password`, a rejection confirmed by a second look: one spurious
/// 401 or 403 must not mint a new password.
async fn confirmed_check(
    client: &OntapClient,
    owner_uuid: &str,
    account: &str,
    password: &SecretString,
) -> Result<AccountCheck, StepError> {
    let check = async || {
        client
            .verify_account(owner_uuid, account, password)
            .await
            .map_err(|e| ontap_error("CredentialCheckFailed", e))
    };
    match check().await? {
        AccountCheck::Valid(account) => Ok(AccountCheck::Valid(account)),
        AccountCheck::Rejected | AccountCheck::NotAuthorized => check().await,
    }
}

/// After `spec.account.name` changed, the account the Secret still names is deleted (if this
/// object created it), so the password published for it stops working.
async fn retire_renamed_account(
    client: &OntapClient,
    ontap_svm: &Svm,
    names: &Names,
    seed: &SeedSecretState,
) -> Result<(), StepError> {
    let SeedSecretState::Stale { username, .. } = seed else {
        return Ok(());
    };
    if *username == names.account {
        return Ok(());
    }
    let Some(old) = client
        .account(&ontap_svm.uuid, username)
        .await
        .map_err(|e| ontap_error("AccountLookupFailed", e))?
    else {
        return Ok(());
    };
    if owned_by(old.comment.as_deref(), &names.uid) != Ownership::Ours {
        return Ok(());
    }
    client
        .delete_account(&ontap_svm.uuid, username)
        .await
        .map_err(|e| ontap_error("AccountDeleteFailed", e))?;
    Ok(())
}

/// The seed Secret's credentials authenticated as the account in `AccountReady`, this pass.
struct Verified {
    password_set_at: Option<Timestamp>,
}

/// The account must have role vsadmin; another role is not changed.
fn check_role(account: &Account, names: &Names) -> Result<(), StepError> {
    let role = account.role.as_ref().and_then(|r| r.name.as_deref());
    if role != Some("vsadmin") {
        return Err(StepError::invalid(
            "AccountRoleMismatch",
            format!(
                "the account {} has role {}, not vsadmin; it is not changed",
                names.account,
                role.unwrap_or("unknown")
            ),
        ));
    }
    Ok(())
}

/// Unlocked only when ONTAP says so: a missing `locked` field is not a yes.
fn unlock_needed(account: &Account) -> bool {
    account.locked != Some(false)
}

/// The seed Secret as read, and when its password was set.
struct Seed {
    state: SeedSecretState,
    password_set_at: Option<Timestamp>,
    /// The version read; a write is refused if the Secret changed since.
    resource_version: Option<String>,
}

/// The SVM of that name; a failed lookup is an error, never "absent".
async fn lookup_svm(client: &OntapClient, name: &str) -> Result<Option<Svm>, StepError> {
    client
        .svm_by_name(name)
        .await
        .map_err(|e: OntapError| ontap_error("SVMLookupFailed", e))
}

/// Step `LIFsReady`: the management and data LIFs exist with the spec's addresses.
async fn ensure_lifs(
    svm: &StorageVirtualMachine,
    ontap_svm: &Svm,
    client: &OntapClient,
) -> Result<Outcome, StepError> {
    let desired =
        desired_lifs(svm).map_err(|e| StepError::invalid("InvalidLIFs", e.to_string()))?;
    let actual = client
        .interfaces(&ontap_svm.uuid)
        .await
        .map_err(|e| ontap_error("LIFLookupFailed", e))?;
    let plan = plan_lifs(&desired, &actual);
    if plan.is_empty() {
        return Ok(Outcome::unchanged());
    }
    for removal in &plan.delete {
        client
            .delete_interface(&removal.uuid)
            .await
            .map_err(|e| ontap_error("LIFDeleteFailed", e))?;
    }
    for (name, lif) in &plan.create {
        // An ambiguous failure is settled by the next pass, which lists the interfaces again.
        match client
            .create_interface(&lif.create_request(name, &ontap_svm.uuid))
            .await
        {
            Ok(_) => {}
            Err(e) if e.ontap_code() == Some(codes::DUPLICATE_IP) => {
                return Err(address_in_use(client, lif, ontap_svm, e).await);
            }
            Err(e) => return Err(ontap_error("LIFCreateFailed", e)),
        }
    }
    Ok(Outcome::changed())
}

/// A LIF address another interface holds: a conflict that lasts until someone frees it, so it
/// backs off and names the holder.
async fn address_in_use(
    client: &OntapClient,
    lif: &DesiredLif,
    ontap_svm: &Svm,
    error: OntapError,
) -> StepError {
    let holders = match client.interfaces_by_address(&lif.address.to_string()).await {
        Ok(holders) => holders
            .iter()
            .filter(|i| i.svm.as_ref().and_then(|s| s.uuid.as_deref()) != Some(&ontap_svm.uuid))
            .map(|i| {
                format!(
                    "interface {} of SVM {}",
                    i.name,
                    i.svm
                        .as_ref()
                        .and_then(|s| s.name.as_deref())
                        .unwrap_or("unknown")
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => String::new(),
    };
    let holder = if holders.is_empty() {
        "another interface".to_string()
    } else {
        holders
    };
    StepError::conflict(
        "AddressInUse",
        format!(
            "the address {} is held by {holder} in ONTAP; free it there or choose another address ({error})",
            lif.address
        ),
    )
}

/// The result of a request that starts an ONTAP job: done (`None`), a wait while ONTAP is busy,
/// or the step error.
fn job<T>(result: Result<T, OntapError>, reason: &'static str) -> Result<Option<Wait>, StepError> {
    match result {
        Ok(_) => Ok(None),
        Err(e) => match ontap_busy(&e) {
            Some(wait) => Ok(Some(wait)),
            None => Err(ontap_error(reason, e)),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_unlocked_only_when_ontap_says_so() {
        let account = |locked: serde_json::Value| -> Account {
            serde_json::from_value(serde_json::json!({ "name": "a", "locked": locked })).unwrap()
        };
        assert!(unlock_needed(&account(serde_json::json!(true))));
        assert!(unlock_needed(&account(serde_json::Value::Null)));
        assert!(!unlock_needed(&account(serde_json::json!(false))));
        let absent: Account = serde_json::from_value(serde_json::json!({ "name": "a" })).unwrap();
        assert!(unlock_needed(&absent));
    }
}
