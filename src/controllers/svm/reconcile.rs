//! The StorageVirtualMachine reconcile. Every pass verifies every step against ONTAP and the
//! API server as they are now — the SVM, its LIFs, its account, and that the seed Secret's
//! credentials really authenticate — and repairs what differs. Nothing is inferred from an
//! earlier pass or an earlier step's success.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, CustomResourceExt, ResourceExt};
use secrecy::SecretString;

use super::seed_secret::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use super::{
    ExpectedSeed, Ownership, SeedFields, SeedSecretState, build_seed_secret, default_account_name,
    default_svm_name, desired_lifs, generate_password, inspect_seed_secret, owned_by, plan_lifs,
    protocol_patch, seed_secret_name, svm_create,
};
use crate::api::{
    ADOPT_SVM_UUID_ANNOTATION, DeletionPolicy, OntapCluster, StorageVirtualMachine,
    StorageVirtualMachineStatus, SvmPhase,
};
use crate::controllers::connections::{ClusterConnections, missing, ontap_error};
use crate::engine::{
    ErrorCategory, Halt, Lifecycle, Manager, ManagerError, Outcome, Reconciler, Registration,
    SharedCache, StepError, StepRunner, Summary,
};
use crate::ontap::{
    AccountCreate, AccountPatch, CredentialCheck, ErrorClass, ObjectRef as OntapRef, OntapClient,
    OntapError, Svm, SvmPatch, SvmState, SvmTargetState,
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

/// How soon to look again at an SVM that ONTAP is still creating, starting or deleting.
const ONTAP_SETTLING: Duration = Duration::from_secs(2);

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
        connections,
    };
    manager.register(
        Registration::new(CONTROLLER, reconciler)
            .crd(StorageVirtualMachine::crd())
            .owns::<Secret>(
                watcher::Config::default()
                    .labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")),
                &["create", "patch", "delete"],
            )
            .watches::<OntapCluster>(|cluster, svms| {
                let name = cluster.name_any();
                svms.store()
                    .state()
                    .iter()
                    .filter(|s| s.spec.cluster_ref.name == name)
                    .map(|s| ObjectRef::from_obj(&**s))
                    .collect()
            }),
    )
}

pub struct SvmReconciler {
    pub kube: Client,
    pub clusters: SharedCache<OntapCluster>,
    pub connections: ClusterConnections,
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

    /// Step `ClusterReady`: the OntapCluster exists, is Ready, and its credentials load.
    async fn cluster(
        &self,
        svm: &StorageVirtualMachine,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<OntapClient, Halt> {
        steps
            .step(SvmStep::ClusterReady, || async {
                let name = &svm.spec.cluster_ref.name;
                let Some(cluster) = self.clusters.get(&ObjectRef::new(name)) else {
                    return Ok(Outcome::Waiting(missing(
                        "ClusterNotFound",
                        format!("the OntapCluster {name} does not exist"),
                    )));
                };
                let ready = cluster
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
                if ready.is_none_or(|c| c.status != "True") {
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
        status.svm_name = Some(names.svm.clone());

        let client = self.cluster(svm, steps).await?;
        let ontap_svm = steps
            .step(SvmStep::SVMReady, || self.ensure_svm(svm, &names, &client))
            .await?;
        status.uuid = Some(ontap_svm.uuid.clone());
        steps
            .step(SvmStep::LIFsReady, || ensure_lifs(svm, &ontap_svm, &client))
            .await?;
        steps
            .step(SvmStep::AccountReady, || {
                self.ensure_account(svm, &names, &ontap_svm, &client)
            })
            .await?;
        steps
            .step(SvmStep::SecretReady, || {
                self.ensure_secret(svm, &names, &ontap_svm, &client)
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
        client: &OntapClient,
    ) -> Result<Outcome<Svm>, StepError> {
        // The engine added the finalizer before this pass, so deleting the object always cleans
        // up what this step creates.
        let mut changed = false;
        let found = match lookup_svm(client, &names.svm).await? {
            Some(found) => found,
            None => {
                let mut body = svm_create(svm, &names.svm)
                    .map_err(|e| StepError::invalid("InvalidSpec", e.to_string()))?;
                // Only where there is something to create: the steady state does not pay for it.
                let aggregates = client
                    .aggregates()
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
                    // The POST may have been applied, or a previous attempt's job may be
                    // running: never create twice, look again by name.
                    Err(e) if e.is_ambiguous() || e.class() == ErrorClass::Conflict => {
                        match lookup_svm(client, &names.svm).await? {
                            Some(found) => found,
                            None => return Err(ontap_error("SVMCreateFailed", e)),
                        }
                    }
                    Err(e) => return Err(ontap_error("SVMCreateFailed", e)),
                }
            }
        };
        match owned_by(found.comment.as_deref(), &names.uid) {
            Ownership::Ours => {}
            Ownership::Foreign(_) if adopts(svm, &found) => {
                if matches!(
                    self.seed_state(svm, names, &found).await?,
                    SeedSecretState::Missing
                ) {
                    return Ok(Outcome::waiting(
                        "AdoptionAwaitsSecret",
                        format!(
                            "adopting the SVM {} waits for the seed Secret {} with its account's password",
                            names.svm, names.secret
                        ),
                        ONTAP_SETTLING,
                    ));
                }
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
                let start = SvmPatch {
                    state: Some(SvmTargetState::Running),
                    ..SvmPatch::default()
                };
                client
                    .patch_svm(&found.uuid, &start)
                    .await
                    .map_err(|e| ontap_error("SVMStartFailed", e))?;
                return Ok(Outcome::waiting(
                    "SVMStarting",
                    "the SVM was stopped; it is being started",
                    ONTAP_SETTLING,
                ));
            }
            _ => {}
        }
        if let Some(patch) = protocol_patch(&svm.spec.protocols, &found) {
            client
                .patch_svm(&found.uuid, &patch)
                .await
                .map_err(|e| ontap_error("SVMProtocolsFailed", e))?;
            changed = true;
        }
        Ok(if changed {
            Outcome::Changed(found)
        } else {
            Outcome::Unchanged(found)
        })
    }

    /// Step `AccountReady`: the SVM-scoped account exists with role vsadmin, unlocked.
    async fn ensure_account(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
    ) -> Result<Outcome, StepError> {
        let existing = client
            .account(&ontap_svm.uuid, &names.account)
            .await
            .map_err(|e| ontap_error("AccountLookupFailed", e))?;
        if let Some(account) = existing {
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
            if account.locked == Some(true) {
                let unlock = AccountPatch {
                    locked: Some(false),
                    ..AccountPatch::default()
                };
                client
                    .patch_account(&ontap_svm.uuid, &names.account, &unlock)
                    .await
                    .map_err(|e| ontap_error("AccountUnlockFailed", e))?;
                return Ok(Outcome::changed());
            }
            return Ok(Outcome::unchanged());
        }
        // A password must exist before the account does; it goes into the Secret first, so a
        // crash right after the account is created leaves a Secret that matches it.
        let password = match self.seed_state(svm, names, ontap_svm).await? {
            SeedSecretState::Complete { username, password } if username == names.account => {
                password
            }
            SeedSecretState::NotOurs(_) => generate_password(&names.account),
            _ => {
                let password = generate_password(&names.account);
                self.write_secret(svm, names, ontap_svm, &password).await?;
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
            Ok(()) => Ok(Outcome::changed()),
            // Applied or not, the next pass looks again; a duplicate means it exists already.
            Err(e) if e.class() == ErrorClass::Conflict => Ok(Outcome::changed()),
            Err(e) => Err(ontap_error("AccountCreateFailed", e)),
        }
    }

    async fn seed_state(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
    ) -> Result<SeedSecretState, StepError> {
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
        let current = api
            .get_opt(&names.secret)
            .await
            .map_err(kube_error("SecretReadFailed"))?;
        let expected = ExpectedSeed::for_svm(svm, &names.account, &names.svm, &ontap_svm.uuid)
            .ok_or_else(|| StepError::transient_msg("NotStored", "the object has no uid"))?;
        Ok(inspect_seed_secret(current.as_ref(), &expected))
    }

    /// Creates or replaces the seed Secret with `password`.
    async fn write_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        password: &SecretString,
    ) -> Result<(), StepError> {
        let fields = SeedFields {
            username: names.account.clone(),
            password: password.clone(),
            management_lif: svm.spec.management_lif.ip.clone(),
            svm_name: names.svm.clone(),
            svm_uuid: ontap_svm.uuid.clone(),
        };
        let secret = build_seed_secret(svm, &fields)
            .map_err(|e| StepError::transient_msg("SecretBuildFailed", e.to_string()))?;
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
        // Server-side apply: creates or updates in one request, and a changed type is refused
        // by the API server instead of silently kept.
        api.patch(
            &names.secret,
            &PatchParams::apply("ontap-operator").force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(kube_error("SecretWriteFailed"))?;
        Ok(())
    }

    /// Step `SecretReady`: the Secret exists, is complete, and its credentials authenticate
    /// against ONTAP as the account, now. Otherwise: a new password goes into the Secret first,
    /// then into ONTAP, then it is verified again.
    async fn ensure_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
    ) -> Result<Outcome, StepError> {
        let state = self.seed_state(svm, names, ontap_svm).await?;
        let verify = |username: String, password: SecretString| async move {
            client
                .verify_credentials(&username, &password, &names.svm)
                .await
                .map_err(|e| ontap_error("CredentialCheckFailed", e))
        };
        match state {
            SeedSecretState::NotOurs(_) => {
                return Err(StepError::invalid(
                    "SecretNameInUse",
                    format!("Secret {}: {state}", names.secret),
                ));
            }
            SeedSecretState::Complete { username, password } => {
                if verify(username, password).await?.is_valid() {
                    return Ok(Outcome::unchanged());
                }
            }
            SeedSecretState::Stale {
                username, password, ..
            } if username == names.account => {
                // Only descriptive fields differ: keep a password that still works.
                if verify(username, password.clone()).await?.is_valid() {
                    self.write_secret(svm, names, ontap_svm, &password).await?;
                    return Ok(Outcome::changed());
                }
            }
            SeedSecretState::Missing
            | SeedSecretState::Incomplete { .. }
            | SeedSecretState::Stale { .. } => {}
        }
        let password = generate_password(&names.account);
        self.write_secret(svm, names, ontap_svm, &password).await?;
        client
            .set_account_password(&ontap_svm.uuid, &names.account, &password)
            .await
            .map_err(|e| ontap_error("PasswordSetFailed", e))?;
        match verify(names.account.clone(), password).await? {
            CredentialCheck::Valid { .. } => Ok(Outcome::changed()),
            other => Err(StepError::transient_msg(
                "CredentialsRejected",
                format!(
                    "ONTAP did not accept the new password of {} ({other:?})",
                    names.account
                ),
            )),
        }
    }

    async fn delete(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let names = self.names(svm, status);
        if svm.spec.deletion_policy == DeletionPolicy::Delete {
            let client = self.cluster(svm, steps).await?;
            let found = steps
                .step(SvmStep::SVMFound, || async {
                    Ok(Outcome::Unchanged(
                        match lookup_svm(&client, &names.svm).await? {
                            // Never touch what is not ours.
                            Some(found)
                                if owned_by(found.comment.as_deref(), &names.uid)
                                    == Ownership::Ours =>
                            {
                                Some(found)
                            }
                            _ => None,
                        },
                    ))
                })
                .await?;
            if let Some(found) = found {
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
                    .step(SvmStep::AccountDeleted, || async {
                        client
                            .delete_account(&found.uuid, &names.account)
                            .await
                            .map_err(|e| ontap_error("AccountDeleteFailed", e))?;
                        Ok(Outcome::changed())
                    })
                    .await?;
                steps
                    .step(SvmStep::SVMDeleted, || async {
                        client
                            .delete_svm(&found.uuid)
                            .await
                            .map_err(|e| ontap_error("SVMDeleteFailed", e))?;
                        Ok(Outcome::changed())
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
                    match api.delete(&names.secret, &Default::default()).await {
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
        client
            .create_interface(&lif.create_request(name, &ontap_svm.uuid))
            .await
            .map_err(|e| ontap_error("LIFCreateFailed", e))?;
    }
    Ok(Outcome::changed())
}
