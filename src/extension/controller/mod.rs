//! The `Extension` controller on the reconcile engine: a Gardener `Extension` of our type
//! becomes a StorageVirtualMachine in the shoot namespace and, once its credentials are verified
//! against ONTAP, the ManagedResources that install Trident in the shoot.
//!
//! Gardener's generic Extension reconciler, mapped onto the engine:
//!
//! - **Which objects**: [`Reconciler::admits`] is the predicate chain — the type, class `shoot`
//!   (also when unset), not `wait-for-state`, not already migrated (`ShouldSkipOperation`), and
//!   not a shoot whose last operation failed (read from the `Cluster`). Nothing is written for
//!   an object that is not admitted, not even the finalizer.
//! - **Operations**: a pass runs an *operation* when gardenlet asked for one (the operation
//!   annotation, removed first when it is `reconcile`) or the last one has not succeeded yet —
//!   the events Gardener's default filter lets through. Only operation passes write
//!   `lastOperation`/`lastError`/`observedGeneration`, with the texts Gardener's library writes
//!   (module [`super::status`]). Every other pass (an SVM, Secret or ManagedResource changed, the
//!   sync period) runs the same idempotent steps — so a rotated password still reaches the shoot
//!   at once — and reports what it found only in the `SystemComponentsHealthy` condition,
//!   which gardenlet copies into the Shoot.
//! - **Status**: the engine does not manage it ([`Reconciler::MANAGES_STATUS`] is `false`); each
//!   write is a JSON merge patch on `/status`, as Gardener's `statusUpdater` sends.
//! - **Create/Reconcile**: `ShootRead` → `ConfigValid` → `SvmDeclared` → `SvmReady` →
//!   `CredentialsVerified` → `DeliveryApplied` → `DeliveryHealthy`. `Succeeded` means the seed
//!   Secret's credentials authenticated against ONTAP in this very pass and the shoot delivery is
//!   applied. Waits are requeues, never a blocked worker.
//! - **Migrate**: the state (SVM, account, a Secret with the credentials) goes into
//!   `status.state`/`status.resources`; the ManagedResources are deleted with `keepObjects`;
//!   the StorageVirtualMachine object is deleted with `deletionPolicy: Retain` (ONTAP untouched);
//!   then all finalizers and the annotation go, as Gardener's `migrate()` does.
//! - **Restore**: from `status.state`, a new StorageVirtualMachine object adopts the SVM in ONTAP
//!   by UUID ([`crate::api::ADOPT_SVM_UUID_ANNOTATION`]) with its seed Secret pre-filled from the
//!   restored credentials: no second SVM, no password rotation. Then it reconciles.
//! - **Delete**: the delivery goes (objects removed from the shoot), then the
//!   StorageVirtualMachine object, whose controller deletes the account and the SVM unless the
//!   policy retains them. **ForceDelete** (the Shoot's force-deletion annotation) waits for
//!   nothing outside the seed: it deletes the ManagedResources and the StorageVirtualMachine
//!   object and removes the latter's finalizer, orphaning what ONTAP holds.

use crate::api::SvmMode;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use secrecy::SecretString;
use serde_json::{Value, json};

use super::api::{
    Cluster, Extension, ExtensionStatus, GardenerCondition, LastOperationState, LastOperationType,
    ManagedResource, ShootView,
};
use super::config::{
    ConfigDefaults, ConfigSource, ExtensionConfig, Protocol, SvmSharing, parse_provider_config,
};
use super::errors::ExtensionFailure;
use super::filter::{self, AnnotationAction, REMOVE_OPERATION_ANNOTATION_PATCH};
use super::health::{SYSTEM_COMPONENTS_HEALTHY, system_components_condition};
use super::shoot::{
    INIT_MANAGED_RESOURCE, KEEP_OBJECTS_PATCH, MANAGED_RESOURCE_NAMES, ORIGIN, ShootCredentials,
    ShootImages, ShootInputs, shoot_delivery,
};
use super::state::{ExtensionState, migration_status_patch, restored_state};
use super::status::{
    compute_operation, error_patch, processing_patch, should_skip_operation, success_patch,
};
use super::{EXTENSION_TYPE, FINALIZER, naming};
use crate::api::{
    ADOPT_SVM_UUID_ANNOTATION, DeletionPolicy, OntapCluster, StorageVirtualMachine,
    StorageVirtualMachineSpec,
};
use crate::ontap::cluster::UNAUTHENTICATED;
use crate::ontap::connections::{ClusterConnections, ConnectError};
use crate::ontap::svm::errors as svm_errors;
use crate::ontap::svm::seed_secret::{PASSWORD_KEY, USERNAME_KEY};
use crate::ontap::svm::{Ownership, SeedFields, build_seed_secret, default_svm_name, owned_by};
use ontap_client::{CredentialCheck, OntapClient};
use reconcile_engine::manager::resource_rule;
use reconcile_engine::{
    Halt, Manager, ManagerError, Outcome, Reconciler, Registration, SharedCache, StepError,
    StepRunner, StepState,
};

reconcile_engine::steps! {
    /// The steps of the Extension controller: reconcile, restore, migrate, delete.
    pub enum ExtensionStep {
        /// The operation annotation was acted on (a `reconcile` request is removed first).
        OperationAccepted,
        /// The shoot's `Cluster` was read.
        ShootRead,
        /// providerConfig is valid and resolved.
        ConfigValid,
        /// Restore: the SVM object adopts the SVM of `status.state`, its Secret pre-filled.
        SvmAdopted,
        /// Per-project sharing: the object that provisions the project's SVM exists.
        ProjectSvmDeclared,
        /// Per-project sharing: an account metal-stack's extension made keeps its password (its
        /// seed Secret's credentials, verified, pre-fill ours), else gets a new one.
        AccountImported,
        /// The StorageVirtualMachine object matches the configuration.
        SvmDeclared,
        /// The StorageVirtualMachine is Ready, at its generation, with a verified Secret.
        SvmReady,
        /// The seed Secret's credentials authenticate against ONTAP, now.
        CredentialsVerified,
        /// The ManagedResources (Secrets first) are written.
        DeliveryApplied,
        /// The resource manager applied them to the shoot.
        DeliveryHealthy,
        /// Migrate: what a restore needs is in `status.state`.
        StateSaved,
        /// Migrate: the ManagedResources are gone, their objects kept in the shoot.
        DeliveryReleased,
        /// Migrate: the StorageVirtualMachine object is gone, ONTAP untouched.
        SvmReleased,
        /// Delete: the ManagedResources and what they put into the shoot are gone.
        DeliveryDeleted,
        /// Delete: the StorageVirtualMachine object is gone (with it, per its policy, the SVM).
        SvmDeleted,
        /// Delete, per-project sharing: the project's object is deleted when this was the last
        /// shoot of the project here and its policy is `Delete`; its controller deletes the SVM
        /// once no shoot's account of any seed is left on it.
        ProjectSvmReleased,
    }
}

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "extension";
/// The Secret that carries the account's credentials through a migration (`status.resources`).
pub const STATE_SECRET: &str = "extension-ontap-state";
/// The label gardener puts on a ManagedResource of an extension, here with [`ORIGIN`].
const ORIGIN_LABEL: &str = "origin";

/// Step reasons the status mapping turns into Gardener error codes.
mod reason {
    pub const CONFIGURATION: &str = "ConfigurationProblem";
    pub const SHOOT: &str = "ShootProblem";
    pub const UNAUTHENTICATED: &str = "OntapUnauthenticated";
    pub const UNREACHABLE: &str = "OntapUnreachable";
    pub const DEPLETED: &str = "ResourcesDepleted";
    pub const CLUSTER_MISSING: &str = "OntapClusterMissing";
}

/// How soon to look again at something converging in the seed or the shoot.
const CONVERGING: Duration = Duration::from_secs(2);

/// What the flags decide for every Extension.
#[derive(Clone, Debug)]
pub struct ExtensionSettings {
    /// `spec.type` served (`--extension-type`).
    pub extension_type: String,
    /// The OntapCluster for a providerConfig that names none; `None`: the only one there is.
    pub default_cluster: Option<String>,
    pub images: ShootImages,
    pub config_defaults: ConfigDefaults,
    /// Where the objects that provision per-project SVMs live (`--extension-project-namespace`).
    pub project_namespace: String,
}

impl Default for ExtensionSettings {
    fn default() -> Self {
        Self {
            extension_type: EXTENSION_TYPE.to_string(),
            default_cluster: None,
            images: ShootImages::default(),
            config_defaults: ConfigDefaults::default(),
            project_namespace: crate::deploy::NAMESPACE.to_owned(),
        }
    }
}

/// Registers the Extension controller. Call only when the extension is enabled: it caches
/// Extensions, Clusters and ManagedResources, which exist only in a Gardener seed. Register
/// it after the StorageVirtualMachine controller, whose label-restricted Secret cache (seed
/// Secrets) it shares.
pub fn register(
    manager: &mut Manager,
    connections: ClusterConnections,
    settings: ExtensionSettings,
) -> Result<(), ManagerError> {
    let managed_resources = manager.cache_with::<ManagedResource>(
        watcher::Config::default().labels(&format!("{ORIGIN_LABEL}={ORIGIN}")),
    )?;
    let reconciler = ExtensionReconciler {
        kube: manager.client().clone(),
        clusters: manager.cache::<Cluster>()?,
        ontap_clusters: manager.cache::<OntapCluster>()?,
        svms: manager.cache::<StorageVirtualMachine>()?,
        secrets: manager.cache::<Secret>()?,
        managed_resources,
        connections,
        settings,
    };
    let write = |verbs: &[&str]| verbs.iter().map(|v| (*v).to_string()).collect::<Vec<_>>();
    manager.register(
        Registration::new(CONTROLLER, reconciler)
            .owns::<StorageVirtualMachine>(
                watcher::Config::default(),
                &["create", "patch", "delete"],
            )
            .watches::<ManagedResource>(same_namespace)
            .watches::<Secret>(same_namespace)
            .watches::<Cluster>(|cluster, extensions| in_namespace(&cluster.name_any(), extensions))
            .rule(resource_rule(
                "resources.gardener.cloud",
                "managedresources",
                &write(&["create", "patch", "delete"]),
            ))
            // The ManagedResources' Secrets and the migration's state Secret; the seed Secret
            // of a restored SVM.
            .rule(resource_rule(
                "",
                "secrets",
                &write(&["get", "create", "patch", "delete"]),
            )),
    )
}

fn same_namespace<K: Resource>(
    changed: &K,
    extensions: &SharedCache<Extension>,
) -> Vec<ObjectRef<Extension>> {
    changed
        .meta()
        .namespace
        .as_deref()
        .map(|ns| in_namespace(ns, extensions))
        .unwrap_or_default()
}

fn in_namespace(namespace: &str, extensions: &SharedCache<Extension>) -> Vec<ObjectRef<Extension>> {
    extensions
        .store()
        .state()
        .iter()
        .filter(|e| e.namespace().as_deref() == Some(namespace))
        .map(|e| ObjectRef::from_obj(&**e))
        .collect()
}

pub struct ExtensionReconciler {
    kube: Client,
    clusters: SharedCache<Cluster>,
    ontap_clusters: SharedCache<OntapCluster>,
    svms: SharedCache<StorageVirtualMachine>,
    secrets: SharedCache<Secret>,
    managed_resources: SharedCache<ManagedResource>,
    connections: ClusterConnections,
    settings: ExtensionSettings,
}

/// Where a shoot's SVM and credentials live: in ONTAP and in the seed.
#[derive(Clone, Debug)]
struct Plan {
    /// The StorageVirtualMachine object in the shoot namespace (named like the Extension).
    object: String,
    cluster: String,
    svm_name: String,
    account: String,
    /// The seed Secret, and the credentials Secret's name in the shoot.
    secret: String,
    /// The object that provisions the SVM a project's shoots share (per-project sharing), in
    /// [`ExtensionSettings::project_namespace`]; `None` when the shoot has an SVM of its own.
    project_object: Option<String>,
}

/// A shoot account's working credentials, found in metal-stack's seed Secret.
struct ImportedAccount {
    /// The SVM the account lives on, which the shoot's object adopts the account on.
    svm_uuid: String,
    password: SecretString,
}

/// The outcome of a pass, for the status.
struct PassReport {
    op: LastOperationType,
    /// gardenlet asked for this operation, or it is unfinished: `lastOperation` is written.
    operation: bool,
    hibernated: bool,
    cluster: Option<String>,
}

impl Reconciler for ExtensionReconciler {
    type Resource = Extension;
    type Step = ExtensionStep;
    const FINALIZER: Option<&'static str> = Some(FINALIZER);
    const MANAGES_STATUS: bool = false;

    fn admits(&self, ext: &Extension) -> bool {
        let class_shoot = ext.spec.class.as_deref().is_none_or(|c| c == "shoot");
        ext.spec.type_ == self.settings.extension_type
            && class_shoot
            && filter::annotation_action(ext) != AnnotationAction::Skip
            && !should_skip_operation(ext, compute_operation(ext))
            && !self.shoot(ext).is_some_and(|s| s.is_failed())
    }

    async fn reconcile(
        &self,
        ext: &Extension,
        _status: &mut ExtensionStatus,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let op = compute_operation(ext);
        let operation = filter::admits_create(ext);
        let mut report = PassReport {
            op,
            operation,
            hibernated: self.shoot(ext).is_some_and(|s| s.hibernation_enabled()),
            cluster: None,
        };
        steps
            .step(ExtensionStep::OperationAccepted, || async {
                if filter::annotation_action(ext) != AnnotationAction::RemoveThenReconcile {
                    return Ok(Outcome::unchanged());
                }
                self.patch_extension(ext, REMOVE_OPERATION_ANNOTATION_PATCH)
                    .await
                    .map_err(|e| StepError::from_kube("AnnotationRemoveFailed", e))?;
                Ok(Outcome::changed())
            })
            .await?;
        let result = match op {
            LastOperationType::Migrate => self.migrate(ext, steps).await,
            _ => self.deliver(ext, op, &mut report, steps).await,
        };
        self.report(ext, &report, steps).await;
        result?;
        match op {
            LastOperationType::Migrate => {
                // Gardener's migrate(): every finalizer goes, so the old seed's namespace can
                // be deleted; admits() keeps the engine from adding ours back.
                self.finish(ext, r#"{"metadata":{"finalizers":null}}"#)
                    .await;
                self.finish(ext, REMOVE_OPERATION_ANNOTATION_PATCH).await;
            }
            LastOperationType::Restore => {
                self.finish(ext, REMOVE_OPERATION_ANNOTATION_PATCH).await;
            }
            _ => {}
        }
        Ok(())
    }

    async fn cleanup(
        &self,
        ext: &Extension,
        _status: &mut ExtensionStatus,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let report = PassReport {
            op: LastOperationType::Delete,
            operation: true,
            hibernated: false,
            cluster: None,
        };
        let force = self.shoot(ext).is_some_and(|s| s.needs_force_deletion());
        let result = self.delete(ext, force, steps).await;
        self.report(ext, &report, steps).await;
        result
    }
}

fn kube_error(reason: &'static str) -> impl FnOnce(kube::Error) -> StepError {
    move |e| StepError::from_kube(reason, e)
}

/// The SVM API's validation (immutable fields, address rules) speaks to the providerConfig's
/// author: a 422 is a configuration problem, anything else what the API server says it is.
fn rejected(reason: &'static str, e: kube::Error) -> StepError {
    match &e {
        kube::Error::Api(s) if s.code == 422 => {
            StepError::invalid(self::reason::CONFIGURATION, s.message.clone())
        }
        _ => StepError::from_kube(reason, e),
    }
}

/// The spec of an SVM object from the shoot's configuration: cluster, SVM name, aggregates,
/// protocols and LIFs, plus `extra` fields.
fn svm_spec(config: &ExtensionConfig, plan: &Plan, extra: Value) -> Value {
    let lif = |l: &super::config::Lif| {
        let mut lif = json!({"ip": l.ip.to_string(), "prefixLength": l.prefix_length});
        if l.vip {
            lif["vip"] = json!(true);
        }
        lif
    };
    let mut spec = json!({
        "clusterRef": {"name": plan.cluster},
        "svmName": plan.svm_name,
        "aggregates": config.aggregates,
        "protocols": {
            "nvme": config.protocols.contains(&Protocol::Nvme),
            "iscsi": config.protocols.contains(&Protocol::Iscsi),
            "nfs": config.protocols.contains(&Protocol::Nfs),
        },
        "managementLif": lif(&config.management_lif),
        "dataLifs": config.data_lifs.iter().map(lif).collect::<Vec<_>>(),
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    spec
}
/// Creates `svm`'s seed Secret with credentials ONTAP already holds (a restore, an import), so
/// its controller verifies and keeps them instead of setting a new password. One that exists
/// already is left as it is: its controller judges it.
async fn prefill_seed_secret(
    secrets: &Api<Secret>,
    svm: &StorageVirtualMachine,
    fields: &SeedFields,
) -> Result<Outcome, StepError> {
    let seed = build_seed_secret(svm, fields)
        .map_err(|e| StepError::transient_msg("SecretBuildFailed", e.to_string()))?;
    match secrets.create(&PostParams::default(), &seed).await {
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(Outcome::unchanged()),
        other => other
            .map(|_| Outcome::changed())
            .map_err(kube_error("SecretWriteFailed")),
    }
}

/// Sets (a uuid) or removes (`null`) the object `name`'s request to adopt an SVM by uuid.
async fn set_adoption(
    api: &Api<StorageVirtualMachine>,
    name: &str,
    uuid: Value,
) -> Result<Outcome, StepError> {
    let patch = json!({"metadata": {"annotations": {ADOPT_SVM_UUID_ANNOTATION: uuid}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(kube_error("SVMPatchFailed"))?;
    Ok(Outcome::changed())
}

fn namespace_of(ext: &Extension) -> String {
    ext.namespace().unwrap_or_default()
}

impl ExtensionReconciler {
    fn shoot(&self, ext: &Extension) -> Option<ShootView> {
        let cluster = self.clusters.get(&ObjectRef::new(&namespace_of(ext)))?;
        cluster.shoot().ok()
    }

    async fn patch_extension(&self, ext: &Extension, patch: &str) -> Result<(), kube::Error> {
        let patch: Value = serde_json::from_str(patch).map_err(kube::Error::SerdeError)?;
        Api::<Extension>::namespaced(self.kube.clone(), &namespace_of(ext))
            .patch(
                &ext.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(|_| ())
    }

    /// A metadata write after a successful operation; a failure leaves the annotation, so the
    /// operation runs again (and succeeds again).
    async fn finish(&self, ext: &Extension, patch: &str) {
        if let Err(error) = self.patch_extension(ext, patch).await {
            tracing::warn!(%error, "finishing the Extension's operation failed");
        }
    }

    async fn patch_status(&self, ext: &Extension, patch: &Value) {
        let api = Api::<Extension>::namespaced(self.kube.clone(), &namespace_of(ext));
        if let Err(error) = api
            .patch_status(
                &ext.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
        {
            // As Gardener's library: the next pass writes the status again.
            tracing::warn!(%error, "writing the Extension's status failed");
        }
    }

    // ---------------------------------------------------------------- create / reconcile

    async fn deliver(
        &self,
        ext: &Extension,
        op: LastOperationType,
        report: &mut PassReport,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let namespace = namespace_of(ext);
        let shoot = steps
            .step(ExtensionStep::ShootRead, || async {
                match self.shoot(ext) {
                    Some(shoot) => Ok(Outcome::Unchanged(shoot)),
                    None => Ok(Outcome::waiting(
                        "ClusterNotFound",
                        format!("the Cluster {namespace} is not readable yet"),
                        CONVERGING,
                    )),
                }
            })
            .await?;
        let state = restored_state(ext)
            .map_err(|e| e.to_string())
            .and_then(|s| s.ok_or_else(String::new));
        let (config, plan) = steps
            .step(ExtensionStep::ConfigValid, || async {
                let config = parse_provider_config(
                    ext.spec.provider_config.as_ref(),
                    &self.settings.config_defaults,
                )
                .map_err(|e| StepError::invalid(reason::CONFIGURATION, e.to_string()))?;
                let plan = self.plan(ext, &config, &shoot, state.as_ref().ok())?;
                Ok(Outcome::Unchanged((config, plan)))
            })
            .await?;
        report.cluster = Some(plan.cluster.clone());
        if op == LastOperationType::Restore
            && let Ok(state) = &state
        {
            steps
                .step(ExtensionStep::SvmAdopted, || {
                    self.adopt(ext, &config, &plan, state)
                })
                .await?;
        }
        if let Some(project_object) = &plan.project_object {
            steps
                .step(ExtensionStep::ProjectSvmDeclared, || {
                    self.declare_project_svm(&config, &plan, project_object)
                })
                .await?;
        }
        if plan.project_object.is_some() {
            steps
                .step(ExtensionStep::AccountImported, || {
                    self.import_account(ext, &config, &plan)
                })
                .await?;
        }
        steps
            .step(ExtensionStep::SvmDeclared, || {
                self.declare_svm(ext, &config, &plan, None)
            })
            .await?;
        steps
            .step(ExtensionStep::SvmReady, || {
                self.svm_ready(&namespace, &plan)
            })
            .await?;
        let credentials = steps
            .step(ExtensionStep::CredentialsVerified, || {
                self.verify_credentials(&namespace, &plan)
            })
            .await?;
        steps
            .step(ExtensionStep::DeliveryApplied, || {
                self.apply_delivery(&namespace, &config, &plan, &credentials)
            })
            .await?;
        let hibernated = report.hibernated;
        steps
            .step(ExtensionStep::DeliveryHealthy, || async {
                // A hibernated shoot's resource manager cannot apply: waiting for it would keep
                // the operation from finishing until the shoot wakes up.
                if hibernated {
                    return Ok(Outcome::unchanged());
                }
                self.delivery_applied(&namespace)
            })
            .await?;
        Ok(())
    }

    /// Names and cluster of the shoot's SVM: from `status.state` after a restore (so nothing
    /// new is made in ONTAP), else from the configuration.
    fn plan(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        shoot: &ShootView,
        state: Option<&ExtensionState>,
    ) -> Result<Plan, StepError> {
        let namespace = namespace_of(ext);
        let object = ext.name_any();
        let cluster = match state {
            Some(state) => state.cluster.clone(),
            None => self.cluster_name(config)?,
        };
        let project = match config.sharing {
            SvmSharing::PerShoot => None,
            SvmSharing::PerProject => Some(shoot.metal_project().ok_or_else(|| {
                StepError::invalid(
                    reason::SHOOT,
                    format!(
                        "a per-project SVM needs the Shoot annotation {}",
                        super::api::METAL_PROJECT_ANNOTATION
                    ),
                )
            })?),
        };
        let project_object = project
            .map(|project| {
                naming::project_object_name(project).ok_or_else(|| {
                    StepError::invalid(
                        reason::SHOOT,
                        format!(
                            "the metal-stack project {project:?} cannot name a Kubernetes object"
                        ),
                    )
                })
            })
            .transpose()?;
        let (svm_name, account) = match (state, project) {
            (Some(state), _) => (state.svm_name.clone(), state.account.clone()),
            (None, None) => (
                default_svm_name(&namespace, &object),
                naming::account_name(&namespace).unwrap_or_else(|| {
                    crate::ontap::svm::default_account_name(&namespace, &object)
                }),
            ),
            (None, Some(project)) => {
                let account = naming::account_name(&namespace).ok_or_else(|| {
                    StepError::invalid(
                        reason::SHOOT,
                        format!("{namespace} is not a shoot namespace (shoot--<project>--<name>)"),
                    )
                })?;
                (naming::project_svm_name(project), account)
            }
        };
        // metal-stack's name where a switch must find its Secrets; an SVM name may hold
        // characters a Secret name cannot.
        let secret = match config.sharing {
            SvmSharing::PerProject => naming::credentials_secret_name(&svm_name, &namespace),
            SvmSharing::PerShoot => None,
        }
        .unwrap_or_else(|| format!("{object}-svm-credentials"));
        Ok(Plan {
            object,
            cluster,
            svm_name,
            account,
            secret,
            project_object,
        })
    }

    fn cluster_name(&self, config: &ExtensionConfig) -> Result<String, StepError> {
        if let Some(name) = config
            .cluster
            .clone()
            .or(self.settings.default_cluster.clone())
        {
            return Ok(name);
        }
        let all = self.ontap_clusters.store().state();
        match all.as_slice() {
            [only] => Ok(only.name_any()),
            // Not cached yet, or not created yet: a missing reference is waited for.
            [] => Err(StepError::transient_msg(
                reason::CLUSTER_MISSING,
                "providerConfig names no cluster and there is no OntapCluster yet",
            )),
            _ => Err(StepError::invalid(
                reason::CONFIGURATION,
                format!(
                    "providerConfig names no cluster and the operator has no default (--extension-default-cluster) among {} OntapClusters",
                    all.len()
                ),
            )),
        }
    }

    fn desired_svm(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        adopt: Option<&str>,
    ) -> Result<StorageVirtualMachine, StepError> {
        // A shoot sharing its project's SVM makes only its account on it: deleting the shoot
        // deletes the account, never the SVM.
        let mode = match config.sharing {
            SvmSharing::PerProject => SvmMode::AccountOnly,
            SvmSharing::PerShoot => SvmMode::Owned,
        };
        let spec: StorageVirtualMachineSpec = serde_json::from_value(svm_spec(
            config,
            plan,
            json!({
                "mode": mode,
                "account": {"name": plan.account},
                "secretName": plan.secret,
                "deletionPolicy": config.deletion_policy,
            }),
        ))
        .map_err(|e| StepError::invalid(reason::CONFIGURATION, e.to_string()))?;
        let owner = ext.controller_owner_ref(&()).ok_or_else(|| {
            StepError::transient_msg("ExtensionUnstored", "the Extension has no uid yet")
        })?;
        let mut svm = StorageVirtualMachine::new(&plan.object, spec);
        svm.metadata.namespace = Some(namespace_of(ext));
        svm.metadata.owner_references = Some(vec![owner]);
        if let Some(uuid) = adopt {
            svm.metadata.annotations = Some(BTreeMap::from([(
                ADOPT_SVM_UUID_ANNOTATION.to_string(),
                uuid.to_string(),
            )]));
        }
        Ok(svm)
    }

    /// Step `ProjectSvmDeclared`: the StorageVirtualMachine that provisions the SVM of the
    /// shoot's metal-stack project exists, created from the first shoot's configuration and
    /// owned by no shoot: it outlives each of them — with `Retain` (a TridentConfig: metal-stack
    /// keeps project SVMs) all of them, with `Delete` until the project's last shoot here goes
    /// ([`Self::release_project_svm`]) — and it shares the SVM with the namespaces of shoots
    /// that enabled this extension. On a seed where another seed's project object provisions the
    /// SVM, this one stands in for it (phase `ServedElsewhere`): it shares, and leaves ONTAP alone.
    async fn declare_project_svm(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
        object: &str,
    ) -> Result<Outcome, StepError> {
        let namespace = &self.settings.project_namespace;
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), namespace);
        let existing = self.svm_object(namespace, object).await?;
        if let Some(existing) = existing {
            // Deleting, it keeps the SVM while accounts are on it, and shares it: possibly for
            // as long as shoots of the project run on other seeds. A shoot arriving meanwhile
            // joins it (its account then holds the SVM too) instead of waiting for it to go;
            // should it go first after all, it is declared anew on the next pass.
            if existing.metadata.deletion_timestamp.is_some() {
                return Ok(Outcome::unchanged());
            }
            // Later shoots of the project take the SVM as the first one declared it.
            let provisions = existing.spec.mode == SvmMode::Owned
                && existing.spec.svm_name.as_deref() == Some(plan.svm_name.as_str())
                && existing.spec.cluster_ref.name == plan.cluster;
            if !provisions {
                return Err(StepError::invalid(
                    reason::CONFIGURATION,
                    format!(
                        "the StorageVirtualMachine {namespace}/{object} exists but does not provision the project's SVM {} on cluster {}",
                        plan.svm_name, plan.cluster
                    ),
                ));
            }
            let provisioned = existing.status.as_ref().is_some_and(|s| s.uuid.is_some());
            if provisioned
                || existing
                    .annotations()
                    .contains_key(ADOPT_SVM_UUID_ANNOTATION)
            {
                return Ok(Outcome::unchanged());
            }
            // Declared before ONTAP could be asked (or by a release that did not adopt): the
            // SVM metal-stack's extension made is adopted now rather than refused.
            let uuid = match self.unmarked_project_svm(plan).await? {
                Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
                Outcome::Unchanged(uuid) | Outcome::Changed(uuid) => uuid,
            };
            let Some(uuid) = uuid else {
                return Ok(Outcome::unchanged());
            };
            return set_adoption(&api, object, json!(uuid)).await;
        }
        let adopt = match self.unmarked_project_svm(plan).await? {
            Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
            Outcome::Unchanged(uuid) | Outcome::Changed(uuid) => uuid,
        };
        // Decided once, as the SVM is declared: peering a cluster with BGP later is an admin's
        // act, and LIFs changing form behind it would cut the data path of every shoot.
        let config = match self.metal_stack_routing(config, plan).await? {
            Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
            Outcome::Unchanged(config) | Outcome::Changed(config) => config,
        };
        let spec: StorageVirtualMachineSpec = serde_json::from_value(svm_spec(
            &config,
            plan,
            json!({
                // TridentConfig: Retain, as metal-stack keeps project SVMs.
                "deletionPolicy": config.deletion_policy,
                "shareWith": {"matchLabels": {
                    format!("extensions.gardener.cloud/{}", self.settings.extension_type): "true"
                }},
            }),
        ))
        .map_err(|e| StepError::invalid(reason::CONFIGURATION, e.to_string()))?;
        let mut svm = StorageVirtualMachine::new(object, spec);
        svm.metadata.namespace = Some(namespace.clone());
        svm.metadata.annotations =
            adopt.map(|uuid| BTreeMap::from([(ADOPT_SVM_UUID_ANNOTATION.to_string(), uuid)]));
        match api.create(&PostParams::default(), &svm).await {
            Ok(_) => Ok(Outcome::changed()),
            // Another shoot of the project declared it first.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Outcome::unchanged()),
            Err(e) => Err(rejected("SVMCreateFailed", e)),
        }
    }

    /// The StorageVirtualMachine `namespace/name`: from the cache, else (just created, not
    /// cached yet) from the API server.
    async fn svm_object(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<StorageVirtualMachine>, StepError> {
        if let Some(cached) = self.svms.get(&ObjectRef::new(name).within(namespace)) {
            return Ok(Some((*cached).clone()));
        }
        Api::<StorageVirtualMachine>::namespaced(self.kube.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(kube_error("SVMReadFailed"))
    }

    /// The ONTAP client of the plan's cluster; `None` while the OntapCluster is not cached (the
    /// `SvmReady` step reports a missing one).
    async fn ontap(&self, plan: &Plan) -> Result<Option<OntapClient>, ConnectError> {
        let Some(cluster) = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster)) else {
            return Ok(None);
        };
        self.connections.connect(&cluster).await.map(Some)
    }

    /// `config` with its LIFs in the form metal-stack's extension gives them on the plan's
    /// cluster (see [`ExtensionConfig::with_metal_stack_routing`]): one ONTAP GET for a
    /// TridentConfig, none for a configuration that states its LIFs. A TridentConfig waits for
    /// the OntapCluster rather than guess: a wrong guess replaces metal-stack's LIFs.
    async fn metal_stack_routing(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
    ) -> Result<Outcome<ExtensionConfig>, StepError> {
        if config.source != ConfigSource::MetalStack {
            return Ok(Outcome::Unchanged(config.clone()));
        }
        let client = match self.ontap(plan).await {
            Ok(Some(client)) => client,
            Ok(None) => {
                return Ok(Outcome::waiting(
                    reason::CLUSTER_MISSING,
                    format!(
                        "the OntapCluster {} is needed to learn whether it routes with BGP",
                        plan.cluster
                    ),
                    CONVERGING,
                ));
            }
            Err(e) => return e.into_step_result(),
        };
        let bgp = match client.bgp_peer_groups().await {
            Ok(peer_groups) => !peer_groups.is_empty(),
            // A release before ONTAP 9.7 has no BGP and no such collection.
            Err(e) if e.is_not_found() => false,
            Err(e) => return Err(StepError::transient(reason::UNREACHABLE, e)),
        };
        Ok(Outcome::Unchanged(
            config.clone().with_metal_stack_routing(bgp),
        ))
    }

    /// The uuid of the project's SVM if ONTAP holds one that the operator did not create:
    /// metal-stack's extension made it. The project object asks to adopt exactly that SVM
    /// ([`ADOPT_SVM_UUID_ANNOTATION`]); an SVM marked for an object is left to the SVM
    /// controller's ownership rules.
    async fn unmarked_project_svm(
        &self,
        plan: &Plan,
    ) -> Result<Outcome<Option<String>>, StepError> {
        let client = match self.ontap(plan).await {
            Ok(Some(client)) => client,
            Ok(None) => return Ok(Outcome::Unchanged(None)),
            Err(e) => return e.into_step_result(),
        };
        let found = client
            .svm_by_name(&plan.svm_name)
            .await
            .map_err(|e| StepError::transient(reason::UNREACHABLE, e))?;
        Ok(Outcome::Unchanged(
            found
                .filter(|svm| owned_by(svm.comment.as_deref(), "") == Ownership::Unmarked)
                .map(|svm| svm.uuid),
        ))
    }

    /// Step `AccountImported`: a shoot switching from metal-stack's extension keeps its ONTAP
    /// account *and its password*: the shoot's Trident uses it until our delivery replaces the
    /// Secret, and a rotation would cut it off meanwhile. metal-stack's seed Secret
    /// (`kube-system/<svm>-<project>--<shoot>-credentials`) is read once; when it names the
    /// shoot's account and its password authenticates against ONTAP now, the shoot's object is
    /// created asking to adopt the SVM's existing account (its controller then waits for the
    /// seed Secret instead of rotating) and the seed Secret is written with that password.
    /// Otherwise nothing is imported and the object's controller sets a new password, Secret
    /// first. The password is never logged: it only passes through [`SecretString`]s.
    async fn import_account(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
    ) -> Result<Outcome, StepError> {
        let namespace = namespace_of(ext);
        let svms: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), &namespace);
        let current = self.svm_object(&namespace, &plan.object).await?;
        // Declared without an import: its controller owns the password from then on.
        if current
            .as_ref()
            .is_some_and(|c| !c.annotations().contains_key(ADOPT_SVM_UUID_ANNOTATION))
        {
            return Ok(Outcome::unchanged());
        }
        let seed_secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
        let has_seed = self
            .secrets
            .get(&ObjectRef::new(&plan.secret).within(&namespace))
            .is_some()
            || seed_secrets
                .get_opt(&plan.secret)
                .await
                .map_err(kube_error("SecretReadFailed"))?
                .is_some();
        if has_seed {
            return Ok(Outcome::unchanged());
        }
        let imported = match self.metal_stack_credentials(plan).await? {
            Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
            Outcome::Unchanged(found) | Outcome::Changed(found) => found,
        };
        let Some(imported) = imported else {
            // Nothing to keep: an object that was waiting for an import gives it up, and its
            // controller sets a new password the usual way.
            if current.is_some() {
                return set_adoption(&svms, &plan.object, Value::Null).await;
            }
            return Ok(Outcome::unchanged());
        };
        let svm = match current {
            Some(svm) => svm,
            None => {
                let desired = self.desired_svm(ext, config, plan, Some(&imported.svm_uuid))?;
                match svms.create(&PostParams::default(), &desired).await {
                    Ok(created) => created,
                    // Created meanwhile: the next pass looks at it.
                    Err(kube::Error::Api(s)) if s.code == 409 => {
                        return Ok(Outcome::waiting(
                            "SVMCreatedMeanwhile",
                            format!("the StorageVirtualMachine {} appeared", plan.object),
                            CONVERGING,
                        ));
                    }
                    Err(e) => return Err(rejected("SVMCreateFailed", e)),
                }
            }
        };
        let fields = SeedFields {
            username: plan.account.clone(),
            password: imported.password,
            management_lif: config.management_lif.ip.to_string(),
            svm_name: plan.svm_name.clone(),
            svm_uuid: imported.svm_uuid,
            // A password ONTAP holds already, not one that might still be in flight.
            password_set_at: None,
        };
        prefill_seed_secret(&seed_secrets, &svm, &fields).await
    }

    /// The shoot's credentials from metal-stack's seed Secret, if they name the shoot's account
    /// and authenticate against ONTAP on the project's SVM now.
    async fn metal_stack_credentials(
        &self,
        plan: &Plan,
    ) -> Result<Outcome<Option<ImportedAccount>>, StepError> {
        let old =
            Api::<Secret>::namespaced(self.kube.clone(), naming::METAL_STACK_SECRET_NAMESPACE)
                .get_opt(&plan.secret)
                .await
                .map_err(kube_error("MetalStackSecretReadFailed"))?;
        let Some((username, password)) = old
            .as_ref()
            .and_then(|s| Some((secret_text(s, USERNAME_KEY)?, secret_text(s, PASSWORD_KEY)?)))
            .filter(|(username, _)| *username == plan.account)
        else {
            return Ok(Outcome::Unchanged(None));
        };
        let password = SecretString::from(password);
        let client = match self.ontap(plan).await {
            Ok(Some(client)) => client,
            Ok(None) => {
                return Ok(Outcome::waiting(
                    "OntapClusterNotCached",
                    format!("the OntapCluster {} is not cached yet", plan.cluster),
                    CONVERGING,
                ));
            }
            Err(e) => return e.into_step_result(),
        };
        let check = client
            .verify_credentials(&username, &password, &plan.svm_name)
            .await
            .map_err(|e| StepError::transient(reason::UNREACHABLE, e))?;
        let CredentialCheck::Valid { svm_uuid } = check else {
            tracing::info!(
                secret = %plan.secret,
                ?check,
                "metal-stack's credentials for the shoot's account do not authenticate: a new password is set"
            );
            return Ok(Outcome::Unchanged(None));
        };
        Ok(Outcome::Unchanged(Some(ImportedAccount {
            svm_uuid,
            password,
        })))
    }

    /// Step `SvmDeclared`: the StorageVirtualMachine object exists with the desired spec.
    async fn declare_svm(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        adopt: Option<&str>,
    ) -> Result<Outcome<StorageVirtualMachine>, StepError> {
        let desired = self.desired_svm(ext, config, plan, adopt)?;
        let namespace = namespace_of(ext);
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), &namespace);
        let current = self.svm_object(&namespace, &plan.object).await?;
        let Some(current) = current else {
            let created = api
                .create(&PostParams::default(), &desired)
                .await
                .map_err(|e| rejected("SVMCreateFailed", e))?;
            return Ok(Outcome::Changed(created));
        };
        if current
            .owner_references()
            .iter()
            .all(|o| Some(&o.uid) != ext.uid().as_ref())
        {
            return Err(StepError::invalid(
                reason::CONFIGURATION,
                format!(
                    "the StorageVirtualMachine {namespace}/{} exists and is not this Extension's",
                    plan.object
                ),
            ));
        }
        if current.spec == desired.spec {
            return Ok(Outcome::Unchanged(current));
        }
        let patched = api
            .patch(
                &plan.object,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": desired.spec})),
            )
            .await
            .map_err(|e| rejected("SVMPatchFailed", e))?;
        Ok(Outcome::Changed(patched))
    }

    /// Step `SvmReady`: the SVM's controller verified its Secret at the current generation.
    /// Failures of the OntapCluster or the SVM become the failures gardenlet reads codes from.
    async fn svm_ready(&self, namespace: &str, plan: &Plan) -> Result<Outcome, StepError> {
        if let Some(cluster) = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster)) {
            let conditions = cluster
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default();
            let connected = conditions.iter().find(|c| c.type_ == "Connected");
            if let Some(c) = connected.filter(|c| c.status == "False") {
                let detail = format!("ONTAP cluster {}: {}", plan.cluster, c.message);
                return Err(if c.reason == UNAUTHENTICATED {
                    StepError::transient_msg(reason::UNAUTHENTICATED, detail)
                } else {
                    StepError::transient_msg(reason::UNREACHABLE, detail)
                });
            }
        } else {
            return Err(StepError::invalid(
                reason::CONFIGURATION,
                format!("the OntapCluster {} does not exist", plan.cluster),
            ));
        }
        let Some(svm) = self
            .svms
            .get(&ObjectRef::new(&plan.object).within(namespace))
        else {
            return Ok(Outcome::waiting(
                "SVMNotCached",
                "the StorageVirtualMachine was just created",
                CONVERGING,
            ));
        };
        let generation = svm.metadata.generation;
        let status = svm.status.clone().unwrap_or_default();
        let condition = |type_: &str| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == type_ && c.observed_generation == generation)
                .cloned()
        };
        let ready = condition("Ready");
        let secret_ready = condition("SecretReady");
        if status.observed_generation == generation
            && ready.as_ref().is_some_and(|c| c.status == "True")
            && secret_ready.as_ref().is_some_and(|c| c.status == "True")
        {
            return Ok(Outcome::unchanged());
        }
        let why = ready
            .map(|c| format!("{}: {}", c.reason, c.message))
            .unwrap_or_else(|| "not reconciled at its generation yet".to_string());
        let message = format!("StorageVirtualMachine {}: {why}", plan.object);
        if let Some(halted) = status.halted.as_ref().filter(|h| h.attempts > 0) {
            return Err(classify_svm_failure(&halted.reason, &message));
        }
        if status.phase == Some(crate::api::SvmPhase::Failed) {
            return Err(StepError::invalid(reason::CONFIGURATION, message));
        }
        Ok(Outcome::waiting("SVMNotReady", message, CONVERGING))
    }

    /// Step `CredentialsVerified`: the seed Secret's credentials authenticate against ONTAP.
    async fn verify_credentials(
        &self,
        namespace: &str,
        plan: &Plan,
    ) -> Result<Outcome<ShootCredentials>, StepError> {
        let waiting = |message: String| {
            Ok(Outcome::waiting(
                "CredentialsNotVerified",
                message,
                CONVERGING,
            ))
        };
        let Some(secret) = self
            .secrets
            .get(&ObjectRef::new(&plan.secret).within(namespace))
        else {
            return waiting(format!(
                "the seed Secret {} does not exist yet",
                plan.secret
            ));
        };
        let (Some(username), Some(password)) = (
            secret_text(&secret, USERNAME_KEY),
            secret_text(&secret, PASSWORD_KEY),
        ) else {
            return waiting(format!("the seed Secret {} is incomplete", plan.secret));
        };
        let Some(cluster) = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster)) else {
            return waiting(format!(
                "the OntapCluster {} is not cached yet",
                plan.cluster
            ));
        };
        let client = match self.connections.connect(&cluster).await {
            Ok(client) => client,
            Err(e) => return e.into_step_result(),
        };
        let password = SecretString::from(password);
        let check = client
            .verify_credentials(&username, &password, &plan.svm_name)
            .await
            .map_err(|e| StepError::transient(reason::UNREACHABLE, e))?;
        if !check.is_valid() {
            // The SVM's controller repairs it; the Secret's change brings us back.
            return waiting(format!(
                "the credentials in {} do not authenticate against ONTAP ({check:?})",
                plan.secret
            ));
        }
        Ok(Outcome::Unchanged(ShootCredentials { username, password }))
    }

    /// Step `DeliveryApplied`: each ManagedResource's Secret, then the ManagedResource.
    async fn apply_delivery(
        &self,
        namespace: &str,
        config: &ExtensionConfig,
        plan: &Plan,
        credentials: &ShootCredentials,
    ) -> Result<Outcome, StepError> {
        let images = ShootImages {
            trident_operator: config
                .trident_operator_image
                .clone()
                .unwrap_or_else(|| self.settings.images.trident_operator.clone()),
            ..self.settings.images.clone()
        };
        let inputs = ShootInputs {
            config,
            svm_name: &plan.svm_name,
            secret_name: &plan.secret,
            credentials,
            images: &images,
        };
        let bundles = shoot_delivery(namespace, &inputs, false)
            .map_err(|e| StepError::transient_msg("RenderFailed", e.to_string()))?;
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        let mrs: Api<ManagedResource> = Api::namespaced(self.kube.clone(), namespace);
        let mut changed = false;
        for bundle in bundles {
            let name = bundle.managed_resource.name_any();
            let current = mrs
                .get_opt(&name)
                .await
                .map_err(kube_error("MRReadFailed"))?;
            let same = current.as_ref().is_some_and(|c| {
                c.spec == bundle.managed_resource.spec
                    && c.labels().get(ORIGIN_LABEL).map(String::as_str) == Some(ORIGIN)
            });
            if same {
                continue;
            }
            match secrets.create(&PostParams::default(), &bundle.secret).await {
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                other => {
                    other.map_err(kube_error("MRSecretWriteFailed"))?;
                }
            }
            let patch = json!({
                "apiVersion": "resources.gardener.cloud/v1alpha1",
                "kind": "ManagedResource",
                "metadata": {"name": name, "labels": bundle.managed_resource.metadata.labels},
                "spec": bundle.managed_resource.spec,
            });
            mrs.patch(
                &name,
                &PatchParams::apply(CONTROLLER).force(),
                &Patch::Apply(&patch),
            )
            .await
            .map_err(kube_error("MRWriteFailed"))?;
            // The previous content's Secret; Gardener's garbage collector would remove it too.
            for old in current.iter().flat_map(|c| c.spec.secret_refs.iter()) {
                if !bundle.managed_resource.spec.secret_refs.contains(old) {
                    delete_ignoring_missing(&secrets, &old.name).await?;
                }
            }
            changed = true;
        }
        Ok(if changed {
            Outcome::changed()
        } else {
            Outcome::unchanged()
        })
    }

    /// Step `DeliveryHealthy`: applied at their generation; all but the Trident operator's
    /// workloads healthy (those need the shoot's nodes; the condition reports them).
    fn delivery_applied(&self, namespace: &str) -> Result<Outcome, StepError> {
        let mut pending = Vec::new();
        for name in MANAGED_RESOURCE_NAMES {
            let mr = self
                .managed_resources
                .get(&ObjectRef::new(name).within(namespace));
            let check = match &mr {
                None => Err(format!("managed resource {name} not found")),
                Some(mr) if name == INIT_MANAGED_RESOURCE => applied(mr),
                Some(mr) => mr.check_healthy(),
            };
            if let Err(why) = check {
                pending.push(why);
            }
        }
        if pending.is_empty() {
            Ok(Outcome::unchanged())
        } else {
            Ok(Outcome::waiting(
                "DeliveryPending",
                pending.join("; "),
                CONVERGING,
            ))
        }
    }

    // ---------------------------------------------------------------- restore

    /// Step `SvmAdopted`: a StorageVirtualMachine object for the restored SVM, with its seed
    /// Secret holding the restored credentials, so its controller adopts the SVM and keeps the
    /// password.
    async fn adopt(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        state: &ExtensionState,
    ) -> Result<Outcome, StepError> {
        let namespace = namespace_of(ext);
        let svms: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), &namespace);
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
        let existing = svms
            .get_opt(&plan.object)
            .await
            .map_err(kube_error("SVMReadFailed"))?;
        let svm = match existing {
            Some(svm) => svm,
            None => {
                // Adopting without the password would rotate it: the restored Secret first.
                if secrets
                    .get_opt(&state.credentials_secret)
                    .await
                    .map_err(kube_error("StateSecretReadFailed"))?
                    .is_none()
                {
                    return Err(StepError::transient_msg(
                        "StateSecretMissing",
                        format!(
                            "the Secret {} named in status.resources was not restored",
                            state.credentials_secret
                        ),
                    ));
                }
                let desired = self.desired_svm(ext, config, plan, state.svm_uuid.as_deref())?;
                svms.create(&PostParams::default(), &desired)
                    .await
                    .map_err(|e| rejected("SVMCreateFailed", e))?
            }
        };
        if secrets
            .get_opt(&plan.secret)
            .await
            .map_err(kube_error("SecretReadFailed"))?
            .is_some()
        {
            return Ok(Outcome::unchanged());
        }
        let restored = secrets
            .get_opt(&state.credentials_secret)
            .await
            .map_err(kube_error("StateSecretReadFailed"))?;
        let Some((username, password)) = restored
            .as_ref()
            .and_then(|s| Some((secret_text(s, USERNAME_KEY)?, secret_text(s, PASSWORD_KEY)?)))
        else {
            return Err(StepError::invalid(
                reason::CONFIGURATION,
                format!(
                    "the restored Secret {} has no credentials",
                    state.credentials_secret
                ),
            ));
        };
        let fields = SeedFields {
            username,
            password: SecretString::from(password),
            management_lif: config.management_lif.ip.to_string(),
            svm_name: state.svm_name.clone(),
            svm_uuid: state.svm_uuid.clone().unwrap_or_default(),
            // The restored password is the one ONTAP holds already, not a new one that might
            // still be in flight.
            password_set_at: None,
        };
        prefill_seed_secret(&secrets, &svm, &fields).await
    }

    // ---------------------------------------------------------------- migrate

    async fn migrate(
        &self,
        ext: &Extension,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let namespace = namespace_of(ext);
        steps
            .step(ExtensionStep::StateSaved, || self.save_state(ext))
            .await?;
        steps
            .step(ExtensionStep::DeliveryReleased, || {
                self.remove_delivery(&namespace, true, true)
            })
            .await?;
        steps
            .step(ExtensionStep::SvmReleased, || {
                self.remove_svm(ext, true, false)
            })
            .await?;
        Ok(())
    }

    /// Step `StateSaved`: the SVM's identity in `status.state`, its credentials in
    /// [`STATE_SECRET`] named by `status.resources`, so gardenlet carries both to the new seed.
    async fn save_state(&self, ext: &Extension) -> Result<Outcome, StepError> {
        let namespace = namespace_of(ext);
        let Some(svm) = self
            .svms
            .get(&ObjectRef::new(&ext.name_any()).within(&namespace))
        else {
            // Nothing provisioned here (or released by an earlier pass): whatever state was
            // saved stays.
            return Ok(Outcome::unchanged());
        };
        let status = svm.status.clone().unwrap_or_default();
        let secret_name = crate::ontap::svm::seed_secret_name(&svm);
        let Some(seed) = self
            .secrets
            .get(&ObjectRef::new(&secret_name).within(&namespace))
        else {
            return Ok(Outcome::waiting(
                "SeedSecretMissing",
                format!("the seed Secret {secret_name} is being repaired"),
                CONVERGING,
            ));
        };
        let state = ExtensionState {
            cluster: svm.spec.cluster_ref.name.clone(),
            svm_name: status
                .svm_name
                .clone()
                .or(svm.spec.svm_name.clone())
                .unwrap_or_default(),
            svm_uuid: status.uuid.clone(),
            account: svm
                .spec
                .account
                .as_ref()
                .and_then(|a| a.name.clone())
                .unwrap_or_default(),
            credentials_secret: STATE_SECRET.to_string(),
        };
        let data: BTreeMap<String, ByteString> = [USERNAME_KEY, PASSWORD_KEY]
            .into_iter()
            .filter_map(|k| Some((k.to_string(), seed.data.as_ref()?.get(k)?.clone())))
            .collect();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(STATE_SECRET.to_string()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            data: Some(data),
            ..Secret::default()
        };
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
        secrets
            .patch(
                STATE_SECRET,
                &PatchParams::apply(CONTROLLER).force(),
                &Patch::Apply(&secret),
            )
            .await
            .map_err(kube_error("StateSecretWriteFailed"))?;
        Api::<Extension>::namespaced(self.kube.clone(), &namespace)
            .patch_status(
                &ext.name_any(),
                &PatchParams::default(),
                &Patch::Merge(migration_status_patch(&state)),
            )
            .await
            .map_err(kube_error("StateWriteFailed"))?;
        Ok(Outcome::changed())
    }

    // ---------------------------------------------------------------- delete

    async fn delete(
        &self,
        ext: &Extension,
        force: bool,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let namespace = namespace_of(ext);
        steps
            .step(ExtensionStep::DeliveryDeleted, || {
                self.remove_delivery(&namespace, false, !force)
            })
            .await?;
        steps
            .step(ExtensionStep::SvmDeleted, || {
                self.remove_svm(ext, false, force)
            })
            .await?;
        steps
            .step(ExtensionStep::ProjectSvmReleased, || {
                self.release_project_svm(ext)
            })
            .await?;
        Ok(())
    }

    /// Step `ProjectSvmReleased`: when the shoot shared its metal-stack project's SVM and no
    /// other shoot here still uses it, the project's object goes if its policy is `Delete`
    /// (`Retain`, metal-stack's way, keeps it for the project's next shoot). Not waited for: its
    /// controller deletes the SVM only once ONTAP holds no other account on it — shoots of the
    /// project that another seed serves keep theirs — and says so while it waits.
    async fn release_project_svm(&self, ext: &Extension) -> Result<Outcome, StepError> {
        let Ok(config) = parse_provider_config(
            ext.spec.provider_config.as_ref(),
            &self.settings.config_defaults,
        ) else {
            return Ok(Outcome::unchanged());
        };
        let project = self
            .shoot(ext)
            .filter(|_| config.sharing == SvmSharing::PerProject)
            .and_then(|shoot| shoot.metal_project().and_then(naming::project_object_name));
        let Some(object) = project else {
            return Ok(Outcome::unchanged());
        };
        let namespace = &self.settings.project_namespace;
        let Some(project) = self.svm_object(namespace, &object).await? else {
            return Ok(Outcome::unchanged());
        };
        let (own_namespace, own_name) = (namespace_of(ext), ext.name_any());
        let in_use = self.svms.store().state().iter().any(|other| {
            other.spec.mode == SvmMode::AccountOnly
                && other.spec.cluster_ref == project.spec.cluster_ref
                && other.spec.svm_name == project.spec.svm_name
                && other.metadata.deletion_timestamp.is_none()
                && (other.namespace().as_deref(), other.name_any().as_str())
                    != (Some(own_namespace.as_str()), own_name.as_str())
        });
        if in_use
            || project.spec.deletion_policy != DeletionPolicy::Delete
            || project.metadata.deletion_timestamp.is_some()
        {
            return Ok(Outcome::unchanged());
        }
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), namespace);
        delete_ignoring_missing(&api, &object).await?;
        Ok(Outcome::changed())
    }

    /// Deletes the ManagedResources (first setting `keepObjects` when `keep`), waits until the
    /// resource manager released them when `wait`, then deletes their Secrets.
    async fn remove_delivery(
        &self,
        namespace: &str,
        keep: bool,
        wait: bool,
    ) -> Result<Outcome, StepError> {
        let mrs: Api<ManagedResource> = Api::namespaced(self.kube.clone(), namespace);
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        // In reverse: the CRDs go last, or the resource manager could no longer delete the
        // TridentOrchestrator whose kind they define.
        for name in MANAGED_RESOURCE_NAMES.iter().rev().copied() {
            let Some(mr) = mrs
                .get_opt(name)
                .await
                .map_err(kube_error("MRReadFailed"))?
            else {
                continue;
            };
            if keep && mr.spec.keep_objects != Some(true) {
                let patch: Value = serde_json::from_str(KEEP_OBJECTS_PATCH)
                    .map_err(|e| StepError::transient_msg("PatchBuildFailed", e.to_string()))?;
                mrs.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(kube_error("MRPatchFailed"))?;
            }
            if mr.metadata.deletion_timestamp.is_none() {
                delete_ignoring_missing(&mrs, name).await?;
            }
            if wait {
                return Ok(Outcome::waiting(
                    "DeliveryDeleting",
                    format!("the resource manager is removing {name} from the shoot"),
                    CONVERGING,
                ));
            }
            for secret in &mr.spec.secret_refs {
                delete_ignoring_missing(&secrets, &secret.name).await?;
            }
        }
        // Gone: their Secrets may go now (and any left by an interrupted earlier pass).
        let list = secrets
            .list(&Default::default())
            .await
            .map_err(kube_error("SecretListFailed"))?;
        for secret in list {
            let name = secret.name_any();
            if MANAGED_RESOURCE_NAMES
                .iter()
                .any(|mr| name.starts_with(&format!("managedresource-{mr}-")))
            {
                delete_ignoring_missing(&secrets, &name).await?;
            }
        }
        Ok(Outcome::unchanged())
    }

    /// Deletes the StorageVirtualMachine object. `retain` first sets `deletionPolicy: Retain`
    /// (a migration: ONTAP must stay as it is); `orphan` removes its finalizer instead of waiting
    /// for ONTAP (force-deletion).
    async fn remove_svm(
        &self,
        ext: &Extension,
        retain: bool,
        orphan: bool,
    ) -> Result<Outcome, StepError> {
        let namespace = namespace_of(ext);
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), &namespace);
        let name = ext.name_any();
        let Some(svm) = api
            .get_opt(&name)
            .await
            .map_err(kube_error("SVMReadFailed"))?
        else {
            return Ok(Outcome::unchanged());
        };
        if svm
            .owner_references()
            .iter()
            .all(|o| Some(&o.uid) != ext.uid().as_ref())
        {
            return Ok(Outcome::unchanged());
        }
        if retain && svm.spec.deletion_policy != DeletionPolicy::Retain {
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"deletionPolicy": "Retain"}})),
            )
            .await
            .map_err(kube_error("SVMPatchFailed"))?;
        }
        if svm.metadata.deletion_timestamp.is_none() {
            delete_ignoring_missing(&api, &name).await?;
        }
        if orphan {
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await
            .or_else(|e| {
                if is_not_found(&e) {
                    Ok(svm.clone())
                } else {
                    Err(e)
                }
            })
            .map_err(kube_error("SVMFinalizerRemoveFailed"))?;
            return Ok(Outcome::changed());
        }
        Ok(Outcome::waiting(
            "SVMDeleting",
            format!("the StorageVirtualMachine {name} is being deleted"),
            CONVERGING,
        ))
    }

    // ---------------------------------------------------------------- status

    /// Writes what this pass found: `lastOperation`/`lastError`/`observedGeneration` on an
    /// operation pass, the `SystemComponentsHealthy` condition always — each only when it
    /// differs from what the object shows.
    async fn report(&self, ext: &Extension, pass: &PassReport, steps: &StepRunner<ExtensionStep>) {
        let now = Time(Timestamp::now());
        let status = ext.status.clone().unwrap_or_default();
        let halted = steps.records().iter().find(|r| !r.state.is_done());
        let previous = status
            .conditions
            .iter()
            .find(|c| c.type_ == SYSTEM_COMPONENTS_HEALTHY);
        let mut patch = match halted.map(|r| &r.state) {
            None => {
                if pass.operation {
                    success_patch(ext.metadata.generation, pass.op, &now)
                } else {
                    json!({"status": {}})
                }
            }
            Some(StepState::Waiting(wait)) => {
                let unchanged = status.last_operation.as_ref().is_some_and(|last| {
                    last.state == LastOperationState::Processing
                        && last.type_ == pass.op
                        && last.description.ends_with(&wait.message)
                });
                if pass.operation && !unchanged {
                    let step = halted.map(|r| r.name).unwrap_or_default();
                    processing_patch(
                        pass.op,
                        Some(&format!("{step}: {}", wait.message)),
                        progress(step),
                        &now,
                    )
                } else {
                    json!({"status": {}})
                }
            }
            Some(StepState::Failed(err)) => {
                let failure = self.failure(ext, pass, err.reason(), err.message());
                if pass.operation {
                    error_patch(ext.metadata.generation, pass.op, &failure, &now)
                } else {
                    json!({"status": {}})
                }
            }
            Some(_) => json!({"status": {}}),
        };
        if pass.op != LastOperationType::Delete && pass.op != LastOperationType::Migrate {
            let condition =
                self.health_condition(ext, pass, halted.map(|r| &r.state), previous, &now);
            if previous.is_none_or(|p| !same_condition(p, &condition)) {
                patch["status"]["conditions"] = json!([condition]);
            }
        }
        if patch["status"].as_object().is_some_and(|m| !m.is_empty()) {
            self.patch_status(ext, &patch).await;
        }
    }

    fn failure(
        &self,
        ext: &Extension,
        pass: &PassReport,
        reason: &str,
        message: &str,
    ) -> ExtensionFailure {
        let cluster = pass.cluster.clone().unwrap_or_default();
        let detail = message.to_string();
        match reason {
            // The providerConfig's own error when it has one; else the configuration is valid
            // but does not fit (the SVM API refused it, the OntapCluster does not exist).
            reason::CONFIGURATION => match parse_provider_config(
                ext.spec.provider_config.as_ref(),
                &self.settings.config_defaults,
            ) {
                Err(e) => ExtensionFailure::Configuration(e),
                Ok(_) => ExtensionFailure::Shoot(detail),
            },
            reason::SHOOT => ExtensionFailure::Shoot(detail),
            reason::UNAUTHENTICATED => ExtensionFailure::OntapUnauthenticated { cluster, detail },
            reason::UNREACHABLE => ExtensionFailure::OntapUnreachable { cluster, detail },
            reason::DEPLETED => ExtensionFailure::ResourcesDepleted { cluster, detail },
            _ => ExtensionFailure::Other(detail),
        }
    }

    fn health_condition(
        &self,
        ext: &Extension,
        pass: &PassReport,
        halted: Option<&StepState>,
        previous: Option<&GardenerCondition>,
        now: &Time,
    ) -> GardenerCondition {
        let namespace = namespace_of(ext);
        let found: Vec<(&str, Option<ManagedResource>)> = MANAGED_RESOURCE_NAMES
            .iter()
            .map(|name| {
                (
                    *name,
                    self.managed_resources
                        .get(&ObjectRef::new(name).within(&namespace))
                        .map(|m| (*m).clone()),
                )
            })
            .collect();
        let refs: Vec<(&str, Option<&ManagedResource>)> =
            found.iter().map(|(n, m)| (*n, m.as_ref())).collect();
        let mut condition = system_components_condition(&refs, pass.hibernated, previous, now);
        if pass.hibernated {
            return condition;
        }
        let (status, reason, message, codes) = match halted {
            Some(StepState::Failed(err)) => {
                let failure = self.failure(ext, pass, err.reason(), err.message());
                (
                    "False",
                    "HealthCheckUnsuccessful",
                    failure.to_string(),
                    failure.codes(),
                )
            }
            Some(StepState::Waiting(wait)) => (
                "Progressing",
                "HealthCheckProgressing",
                wait.message.clone(),
                Vec::new(),
            ),
            _ => return condition,
        };
        if previous.is_none_or(|p| p.status != status) {
            condition.last_transition_time = now.clone();
        }
        condition.status = status.to_string();
        condition.reason = reason.to_string();
        condition.message = reconcile_engine::text::bounded(&message);
        condition.codes = codes;
        condition
    }
}

fn same_condition(a: &GardenerCondition, b: &GardenerCondition) -> bool {
    a.status == b.status && a.reason == b.reason && a.message == b.message && a.codes == b.codes
}

/// A rough share of the reconcile done when `step` waits, as `lastOperation.progress`.
fn progress(step: &str) -> i32 {
    const ORDER: [ExtensionStep; 7] = [
        ExtensionStep::ShootRead,
        ExtensionStep::ConfigValid,
        ExtensionStep::SvmDeclared,
        ExtensionStep::SvmReady,
        ExtensionStep::CredentialsVerified,
        ExtensionStep::DeliveryApplied,
        ExtensionStep::DeliveryHealthy,
    ];
    use reconcile_engine::StepName;
    let index = ORDER.iter().position(|s| s.as_str() == step).unwrap_or(0);
    i32::try_from(1 + index * 90 / ORDER.len()).unwrap_or(1)
}

/// What an SVM that keeps failing says, as the failure gardenlet reads codes from.
fn classify_svm_failure(svm_reason: &str, message: &str) -> StepError {
    if ontap_client::mentions_depletion(message) {
        return StepError::transient_msg(reason::DEPLETED, message.to_string());
    }
    if CONFIGURATION_REASONS.contains(&svm_reason) {
        return StepError::invalid(reason::CONFIGURATION, message.to_string());
    }
    StepError::transient_msg("SVMFailing", message.to_string())
}

/// The SVM's reasons that only a change of the shoot's configuration fixes, named through the
/// SVM controller's typed reasons so a renamed one cannot silently fall through to
/// `SVMFailing`. ONTAP refusing a name (`SVMNameConflict`) is not among them: the SVM
/// controller retries it.
const CONFIGURATION_REASONS: [&str; 7] = [
    svm_errors::Invalid::Spec.as_str(),
    svm_errors::Invalid::SvmNameInUse.as_str(),
    svm_errors::Invalid::AdoptionNotAllowed.as_str(),
    svm_errors::Invalid::SecretNameInUse.as_str(),
    svm_errors::Invalid::AccountRoleMismatch.as_str(),
    svm_errors::Invalid::SvmNameChanged.as_str(),
    svm_errors::Waiting::AggregateNotFound.as_str(),
];

fn applied(mr: &ManagedResource) -> Result<(), String> {
    let status = mr.status.clone().unwrap_or_default();
    if status.observed_generation != mr.metadata.generation {
        return Err(format!(
            "managed resource {} is not observed at its generation yet",
            mr.name_any()
        ));
    }
    match status
        .conditions
        .iter()
        .find(|c| c.type_ == super::api::mr_condition::RESOURCES_APPLIED)
    {
        Some(c) if c.status == "True" => Ok(()),
        Some(c) => Err(format!(
            "managed resource {} is not applied: {}",
            mr.name_any(),
            c.message
        )),
        None => Err(format!(
            "managed resource {} is not applied yet",
            mr.name_any()
        )),
    }
}

fn secret_text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone())
        .ok()
        .filter(|s| !s.is_empty())
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

async fn delete_ignoring_missing<K>(api: &Api<K>, name: &str) -> Result<(), StepError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Err(e) if !is_not_found(&e) => Err(StepError::from_kube("DeleteFailed", e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_svms_map_to_gardener_codes() {
        let code = |reason: &str, message: &str| {
            classify_svm_failure(reason, message).reason().to_string()
        };
        assert_eq!(
            code("SVMCreateFailed", "aggregate aggr1: insufficient space"),
            reason::DEPLETED
        );
        assert_eq!(code("SVMNameInUse", "taken"), reason::CONFIGURATION);
        assert_eq!(code("SVMNameConflict", "duplicate"), "SVMFailing");
        assert_eq!(code("LIFsFailed", "port down"), "SVMFailing");
    }

    #[test]
    fn progress_grows_with_the_steps() {
        assert_eq!(progress("ShootRead"), 1);
        assert!(progress("DeliveryHealthy") > progress("SvmReady"));
        assert!(progress("DeliveryHealthy") < 100);
    }
}
