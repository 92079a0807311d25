//! Gardener's resources as this operator reads and writes them: `Extension`
//! (`extensions.gardener.cloud/v1alpha1`), `Cluster` (same group) and `ManagedResource`
//! (`resources.gardener.cloud/v1alpha1`).
//!
//! Gardener owns these CRDs; this project never ships them. The `CustomResource` derive is used
//! with `schema = "disabled"` only for typed `Api<…>` access: its generated `crd()` is not part
//! of [`crate::api::all_crds`], so nothing of it reaches `crds/`. Field names follow the CRDs in
//! gardener's `example/seed-crds/` (`hack/tools.sh gardener-crds`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The annotation gardenlet sets to ask for an operation (`reconcile`, `migrate`, `restore`,
/// `wait-for-state`).
pub const OPERATION_ANNOTATION: &str = "gardener.cloud/operation";
/// When gardenlet asked: RFC 3339 with nanoseconds, never removed by the extension.
pub const TIMESTAMP_ANNOTATION: &str = "gardener.cloud/timestamp";
/// Set by gardenlet before it deletes an Extension.
pub const DELETION_CONFIRMATION_ANNOTATION: &str = "confirmation.gardener.cloud/deletion";
/// On the Shoot: the shoot owner asked to force-delete it.
pub const FORCE_DELETION_ANNOTATION: &str = "confirmation.gardener.cloud/force-deletion";
/// On the Shoot: the metal-stack project the shoot belongs to.
pub const METAL_PROJECT_ANNOTATION: &str = "cluster.metal-stack.io/project";

pub use crate::api::GARDENER_PROJECT_ANNOTATION;
/// The label gardenlet puts on a shoot's control-plane namespace in the seed.
pub const SHOOT_NAMESPACE_ROLE_LABEL: &str = "gardener.cloud/role";
/// Value of [`SHOOT_NAMESPACE_ROLE_LABEL`] on shoot namespaces.
pub const SHOOT_NAMESPACE_ROLE: &str = "shoot";

/// Values of [`OPERATION_ANNOTATION`].
pub mod operation {
    pub const RECONCILE: &str = "reconcile";
    pub const MIGRATE: &str = "migrate";
    pub const RESTORE: &str = "restore";
    pub const WAIT_FOR_STATE: &str = "wait-for-state";
}

/// A Gardener extension resource. gardenlet names it after its type and creates it in the
/// shoot's control-plane namespace; `spec.class` stays unset for shoot extensions.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Extension",
    plural = "extensions",
    namespaced,
    status = "ExtensionStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionSpec {
    /// The extension type, e.g. `ontap`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `shoot` (also when unset), `seed` or `garden`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Copied raw from `Shoot.spec.extensions[].providerConfig`; parsed by
    /// [`super::config::parse_provider_config`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Value>,
}

/// `status` of every extension resource (Gardener's `DefaultStatus`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<GardenerCondition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_operation: Option<LastOperation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<Value>,
    /// What a restore on another seed needs, written on migrate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// Resources (Secrets) a restore needs, referenced from `state`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NamedResourceReference>,
}

/// The engine never manages this status (the Extension controller sets
/// [`Reconciler::MANAGES_STATUS`](reconcile_engine::Reconciler::MANAGES_STATUS) to `false` and
/// writes Gardener's fields itself): Gardener's conditions are not Kubernetes conditions, and
/// `observedGeneration` follows Gardener's rules. These methods only satisfy the engine's bound.
impl reconcile_engine::ConditionedStatus for ExtensionStatus {
    fn conditions(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
        &[]
    }
    fn set_conditions(
        &mut self,
        _conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    ) {
    }
    fn set_observed_generation(&mut self, _generation: Option<i64>) {}
    fn halted(&self) -> Option<&reconcile_engine::Halted> {
        None
    }
    fn set_halted(&mut self, _halted: Option<reconcile_engine::Halted>) {}
}

/// The operation an extension controller ran last, and how it went.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastOperation {
    /// Human-readable; names the step.
    pub description: String,
    pub last_update_time: Time,
    /// Percent, 0–100.
    pub progress: i32,
    pub state: LastOperationState,
    #[serde(rename = "type")]
    pub type_: LastOperationType,
}

/// `lastOperation.type`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum LastOperationType {
    Create,
    Reconcile,
    Delete,
    Migrate,
    Restore,
    /// A value this operator does not know (written by something else); never written.
    #[serde(other)]
    Unknown,
}

/// `lastOperation.state`. Extension controllers write Processing, Succeeded and Error only.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum LastOperationState {
    Processing,
    Succeeded,
    Error,
    Failed,
    Pending,
    Aborted,
    #[serde(other)]
    Unknown,
}

/// `lastError`: why the last operation failed, with codes gardenlet acts on.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    pub description: String,
    #[serde(default, rename = "taskID", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<ErrorCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// Gardener's error codes (`core.gardener.cloud/v1beta1` `ErrorCode`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    #[serde(rename = "ERR_INFRA_UNAUTHENTICATED")]
    InfraUnauthenticated,
    #[serde(rename = "ERR_INFRA_UNAUTHORIZED")]
    InfraUnauthorized,
    #[serde(rename = "ERR_INFRA_QUOTA_EXCEEDED")]
    InfraQuotaExceeded,
    #[serde(rename = "ERR_INFRA_RATE_LIMITS_EXCEEDED")]
    InfraRateLimitsExceeded,
    #[serde(rename = "ERR_INFRA_DEPENDENCIES")]
    InfraDependencies,
    #[serde(rename = "ERR_RETRYABLE_INFRA_DEPENDENCIES")]
    RetryableInfraDependencies,
    #[serde(rename = "ERR_INFRA_RESOURCES_DEPLETED")]
    InfraResourcesDepleted,
    #[serde(rename = "ERR_CLEANUP_CLUSTER_RESOURCES")]
    CleanupClusterResources,
    #[serde(rename = "ERR_CONFIGURATION_PROBLEM")]
    ConfigurationProblem,
    #[serde(rename = "ERR_RETRYABLE_CONFIGURATION_PROBLEM")]
    RetryableConfigurationProblem,
    #[serde(rename = "ERR_PROBLEMATIC_WEBHOOK")]
    ProblematicWebhook,
    /// A code this operator does not know; never written.
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// Whether gardenlet's `HasNonRetryableErrorCode` counts this code: the shoot's operation
    /// then becomes Failed, and extensions skip it until a user retries the shoot.
    pub fn is_non_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::InfraUnauthenticated
                | ErrorCode::InfraUnauthorized
                | ErrorCode::InfraQuotaExceeded
                | ErrorCode::InfraRateLimitsExceeded
                | ErrorCode::InfraDependencies
                | ErrorCode::ConfigurationProblem
                | ErrorCode::ProblematicWebhook
        )
    }
}

/// Gardener's condition (`core.gardener.cloud/v1beta1` `Condition`): unlike a Kubernetes
/// condition it has `lastUpdateTime` and `codes`, and no `observedGeneration`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GardenerCondition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False`, `Unknown` or `Progressing`.
    pub status: String,
    pub last_transition_time: Time,
    pub last_update_time: Time,
    pub reason: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<ErrorCode>,
}

/// `status.resources[]`: a named reference to a resource in the same namespace.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NamedResourceReference {
    pub name: String,
    pub resource_ref: CrossVersionObjectReference,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CrossVersionObjectReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub kind: String,
    pub name: String,
}

/// The seed's copy of a shoot's context, cluster-scoped and named like the shoot namespace.
/// gardenlet writes the whole CloudProfile, Seed and Shoot into it; only the Shoot is read
/// here ([`Cluster::shoot`]), the rest is kept raw.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "Cluster",
    plural = "clusters",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    pub cloud_profile: Value,
    /// Absent for self-hosted shoots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Value>,
    pub shoot: Value,
}

/// What this operator reads of the Shoot in a Cluster; everything else is ignored.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ShootView {
    #[serde(default)]
    pub metadata: ShootMetadata,
    #[serde(default)]
    pub spec: ShootSpecView,
    #[serde(default)]
    pub status: ShootStatusView,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ShootMetadata {
    #[serde(default)]
    pub name: String,
    /// The project namespace in the garden (`garden-<project>`).
    #[serde(default)]
    pub namespace: String,
    /// The Shoot's uid in the garden: the same on every seed its control plane moves to.
    #[serde(default)]
    pub uid: Option<String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub deletion_timestamp: Option<Time>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ShootSpecView {
    #[serde(default)]
    pub hibernation: Option<Hibernation>,
    #[serde(default)]
    pub provider: Option<ProviderView>,
    #[serde(default)]
    pub networking: Option<SpecNetworking>,
    /// `spec.extensions`: read by the garden's admission; in a seed, gardenlet hands each its
    /// own Extension.
    #[serde(default)]
    pub extensions: Vec<ShootExtension>,
}

/// One entry of `spec.extensions`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ShootExtension {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub provider_config: Option<Value>,
    #[serde(default)]
    pub disabled: Option<bool>,
}

/// `spec.provider`, as far as the metal project is concerned.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    /// Kept raw: only provider-metal's `projectID` is read, and another provider's shape must
    /// never make a Cluster unreadable.
    #[serde(default)]
    pub infrastructure_config: Option<Value>,
}

/// `spec.networking`: the node network the shoot's owner declared (one CIDR).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SpecNetworking {
    #[serde(default)]
    pub nodes: Option<String>,
}

/// `status.networking`: the node networks in use (one per IP family on a dual-stack shoot).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct StatusNetworking {
    #[serde(default)]
    pub nodes: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Hibernation {
    #[serde(default)]
    pub enabled: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ShootStatusView {
    #[serde(default)]
    pub last_operation: Option<ShootLastOperation>,
    #[serde(default)]
    pub is_hibernated: bool,
    /// The shoot's technical id, `shoot--<project>--<name>` (the seed namespace).
    #[serde(default, rename = "technicalID")]
    pub technical_id: Option<String>,
    #[serde(default)]
    pub networking: Option<StatusNetworking>,
}

/// The Shoot's `lastOperation`: only type and state matter here; they are kept as text, so a
/// value this operator does not know never makes a Cluster unreadable.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct ShootLastOperation {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub state: String,
}

impl Cluster {
    /// The embedded Shoot, as far as this operator reads it.
    pub fn shoot(&self) -> Result<ShootView, serde_json::Error> {
        ShootView::deserialize(&self.spec.shoot)
    }
}

impl ShootView {
    /// gardenlet gave up on the shoot (`status.lastOperation.state == Failed`): extensions leave
    /// it alone, deletion included, until a user retries it (`IsFailed` in Gardener).
    pub fn is_failed(&self) -> bool {
        self.status
            .last_operation
            .as_ref()
            .is_some_and(|op| op.state == "Failed")
    }

    /// The shoot owner asked to force-delete it (`ShootNeedsForceDeletion`: the annotation
    /// parses as true the way Go's `strconv.ParseBool` does).
    pub fn needs_force_deletion(&self) -> bool {
        self.metadata
            .annotations
            .get(FORCE_DELETION_ANNOTATION)
            .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "TRUE" | "true" | "True"))
    }

    /// `spec.hibernation.enabled`.
    pub fn hibernation_enabled(&self) -> bool {
        self.spec
            .hibernation
            .as_ref()
            .and_then(|h| h.enabled)
            .unwrap_or(false)
    }

    /// The Gardener project the shoot belongs to, as its namespace in the garden
    /// (`metadata.namespace` of the Shoot gardenlet copied): unlike annotations, no shoot owner
    /// can choose it.
    pub fn gardener_project(&self) -> Option<&str> {
        Some(self.metadata.namespace.as_str()).filter(|n| !n.is_empty())
    }

    /// provider-metal's `infrastructureConfig.projectID`, which its admission makes immutable
    /// once the shoot exists; `None` on other providers.
    pub fn infrastructure_project_id(&self) -> Option<&str> {
        self.spec
            .provider
            .as_ref()?
            .infrastructure_config
            .as_ref()?
            .get("projectID")?
            .as_str()
            .filter(|p| !p.is_empty())
    }

    /// The networks the shoot's nodes have addresses in: `status.networking.nodes` when
    /// gardenlet reported them (both families of a dual-stack shoot), else
    /// `spec.networking.nodes`; empty when the Cluster names none.
    pub fn node_cidrs(&self) -> Vec<String> {
        let reported = self
            .status
            .networking
            .as_ref()
            .map(|n| n.nodes.clone())
            .unwrap_or_default();
        if !reported.is_empty() {
            return reported;
        }
        self.spec
            .networking
            .as_ref()
            .and_then(|n| n.nodes.clone())
            .into_iter()
            .collect()
    }

    /// The metal-stack project the shoot's annotation names, if it is a metal-stack shoot. Its
    /// owner writes it: trusted only through the binding of [`GARDENER_PROJECT_ANNOTATION`].
    pub fn metal_project(&self) -> Option<&str> {
        self.metadata
            .annotations
            .get(METAL_PROJECT_ANNOTATION)
            .map(String::as_str)
            .filter(|p| !p.is_empty())
    }
}

/// A set of manifests that gardener-resource-manager applies from Secrets to a target cluster.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "resources.gardener.cloud",
    version = "v1alpha1",
    kind = "ManagedResource",
    plural = "managedresources",
    namespaced,
    status = "ManagedResourceStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceSpec {
    /// Secrets in the same namespace whose data keys each hold a manifest stream.
    pub secret_refs: Vec<LocalObjectReference>,
    /// Which resource manager applies it; unset means the shoot's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Leave the objects in the target when the ManagedResource (or an object of it) goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_objects: Option<bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inject_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_overwrite_labels: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_overwrite_annotations: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_persistent_volume_claims: Option<bool>,
    /// Group/kind equivalences, kept raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalences: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct LocalObjectReference {
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<GardenerCondition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The objects applied, kept raw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_data_checksum: Option<String>,
}

/// ManagedResource condition types.
pub mod mr_condition {
    pub const RESOURCES_APPLIED: &str = "ResourcesApplied";
    pub const RESOURCES_HEALTHY: &str = "ResourcesHealthy";
    pub const RESOURCES_PROGRESSING: &str = "ResourcesProgressing";
}

impl ManagedResource {
    fn condition(&self, type_: &str) -> Option<&GardenerCondition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
    }

    /// Gardener's `health.CheckManagedResource`: the status is current and the resources are
    /// applied and healthy. `Err` carries Gardener's message.
    pub fn check_healthy(&self) -> Result<(), String> {
        let id = format!(
            "{}/{}",
            self.metadata.namespace.as_deref().unwrap_or_default(),
            self.metadata.name.as_deref().unwrap_or_default()
        );
        let observed = self
            .status
            .as_ref()
            .and_then(|s| s.observed_generation)
            .unwrap_or(0);
        let generation = self.metadata.generation.unwrap_or(0);
        if observed != generation {
            return Err(format!(
                "observed generation of managed resource {id} outdated ({observed}/{generation})"
            ));
        }
        for type_ in [
            mr_condition::RESOURCES_APPLIED,
            mr_condition::RESOURCES_HEALTHY,
        ] {
            match self.condition(type_) {
                Some(c) if c.status == "True" => {}
                Some(c) => {
                    return Err(format!(
                        "condition {type_} of managed resource {id} is {}: {}",
                        c.status, c.message
                    ));
                }
                None => {
                    return Err(format!(
                        "condition {type_} for managed resource {id} has not been reported yet"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Also not progressing (`WaitUntilHealthyAndNotProgressing`).
    pub fn check_healthy_and_not_progressing(&self) -> Result<(), String> {
        self.check_healthy()?;
        match self.condition(mr_condition::RESOURCES_PROGRESSING) {
            Some(c) if c.status != "False" => Err(format!(
                "condition {} of managed resource is {}: {}",
                mr_condition::RESOURCES_PROGRESSING,
                c.status,
                c.message
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The NFS export's networks: what gardenlet reports (both families of a dual-stack shoot)
    /// before what the owner declared; none when the Cluster names none.
    #[test]
    fn node_networks_come_from_status_then_spec() {
        let shoot = |value: serde_json::Value| ShootView::deserialize(&value).unwrap();
        let declared = json!({"spec": {"networking": {"nodes": "10.250.0.0/16"}}});
        assert_eq!(shoot(declared.clone()).node_cidrs(), ["10.250.0.0/16"]);
        let mut reported = declared;
        reported["status"] = json!({"networking": {"nodes": ["10.250.0.0/16", "2001:db8::/64"]}});
        assert_eq!(
            shoot(reported).node_cidrs(),
            ["10.250.0.0/16", "2001:db8::/64"]
        );
        assert!(shoot(json!({})).node_cidrs().is_empty());
    }

    #[test]
    fn reads_an_extension_as_gardenlet_writes_it() {
        let ext: Extension = serde_json::from_value(json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "Extension",
            "metadata": {"name": "ontap", "namespace": "shoot--p--s", "generation": 2,
                "annotations": {"gardener.cloud/operation": "reconcile"}},
            "spec": {"type": "ontap", "providerConfig": {"apiVersion": "x/v1", "kind": "Y"}},
            "status": {
                "lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100,
                    "description": "ok", "lastUpdateTime": "2026-01-01T00:00:00Z"},
                "lastError": {"description": "boom", "codes": ["ERR_INFRA_UNAUTHENTICATED", "ERR_SOMETHING_NEW"]},
                "observedGeneration": 2
            }
        }))
        .unwrap();
        assert_eq!(ext.spec.type_, "ontap");
        assert_eq!(ext.spec.class, None);
        let status = ext.status.unwrap();
        let op = status.last_operation.unwrap();
        assert_eq!(op.type_, LastOperationType::Reconcile);
        assert_eq!(op.state, LastOperationState::Succeeded);
        assert_eq!(
            status.last_error.unwrap().codes,
            vec![ErrorCode::InfraUnauthenticated, ErrorCode::Unknown]
        );
    }

    #[test]
    fn writes_error_codes_and_types_in_gardeners_spelling() {
        let error = LastError {
            description: "d".into(),
            task_id: None,
            codes: vec![
                ErrorCode::ConfigurationProblem,
                ErrorCode::RetryableInfraDependencies,
            ],
            last_update_time: None,
        };
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"description": "d", "codes": ["ERR_CONFIGURATION_PROBLEM", "ERR_RETRYABLE_INFRA_DEPENDENCIES"]})
        );
        assert_eq!(
            serde_json::to_value(LastOperationType::Create).unwrap(),
            json!("Create")
        );
    }

    #[test]
    fn non_retryable_codes_are_gardenlets() {
        use ErrorCode::*;
        let non_retryable: Vec<_> = [
            InfraUnauthenticated,
            InfraUnauthorized,
            InfraQuotaExceeded,
            InfraRateLimitsExceeded,
            InfraDependencies,
            RetryableInfraDependencies,
            InfraResourcesDepleted,
            CleanupClusterResources,
            ConfigurationProblem,
            RetryableConfigurationProblem,
            ProblematicWebhook,
        ]
        .into_iter()
        .filter(|c| c.is_non_retryable())
        .collect();
        assert_eq!(
            non_retryable,
            vec![
                InfraUnauthenticated,
                InfraUnauthorized,
                InfraQuotaExceeded,
                InfraRateLimitsExceeded,
                InfraDependencies,
                ConfigurationProblem,
                ProblematicWebhook
            ]
        );
    }

    fn cluster(shoot: Value) -> Cluster {
        serde_json::from_value(json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "shoot--p--s"},
            "spec": {"cloudProfile": {}, "shoot": shoot}
        }))
        .unwrap()
    }

    #[test]
    fn reads_what_matters_of_the_shoot() {
        let c = cluster(json!({
            "metadata": {"name": "s", "namespace": "garden-p", "annotations": {
                "cluster.metal-stack.io/project": "0b1f9c3e-aaaa-bbbb-cccc-123456789abc",
                "confirmation.gardener.cloud/force-deletion": "T"}},
            "spec": {"hibernation": {"enabled": true}, "provider": {"type": "metal"}},
            "status": {"lastOperation": {"type": "Reconcile", "state": "Failed"}, "technicalID": "shoot--p--s"}
        }));
        let shoot = c.shoot().unwrap();
        assert!(shoot.is_failed());
        assert!(shoot.needs_force_deletion());
        assert!(shoot.hibernation_enabled());
        assert_eq!(
            shoot.metal_project(),
            Some("0b1f9c3e-aaaa-bbbb-cccc-123456789abc")
        );

        let plain = cluster(json!({"metadata": {"name": "s",
            "annotations": {"confirmation.gardener.cloud/force-deletion": "yes"}},
            "status": {"lastOperation": {"type": "Reconcile", "state": "Succeeded"}}}))
        .shoot()
        .unwrap();
        assert!(!plain.is_failed());
        assert!(!plain.needs_force_deletion(), "ParseBool rejects \"yes\"");
        assert!(!plain.hibernation_enabled());
        assert_eq!(plain.metal_project(), None);
    }

    fn managed_resource(
        generation: i64,
        observed: i64,
        conditions: &[(&str, &str)],
    ) -> ManagedResource {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s, "reason": "r", "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z", "lastUpdateTime": "2026-01-01T00:00:00Z"}))
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "resources.gardener.cloud/v1alpha1",
            "kind": "ManagedResource",
            "metadata": {"name": "mr", "namespace": "ns", "generation": generation},
            "spec": {"secretRefs": [{"name": "s"}]},
            "status": {"observedGeneration": observed, "conditions": conditions}
        }))
        .unwrap()
    }

    #[test]
    fn managed_resource_health_is_gardeners() {
        let healthy = [
            ("ResourcesApplied", "True"),
            ("ResourcesHealthy", "True"),
            ("ResourcesProgressing", "False"),
        ];
        assert_eq!(managed_resource(2, 2, &healthy).check_healthy(), Ok(()));
        assert!(managed_resource(2, 1, &healthy).check_healthy().is_err());
        assert!(
            managed_resource(1, 1, &[("ResourcesApplied", "True")])
                .check_healthy()
                .is_err()
        );
        assert!(
            managed_resource(
                1,
                1,
                &[("ResourcesApplied", "False"), ("ResourcesHealthy", "True")]
            )
            .check_healthy()
            .is_err()
        );
        let progressing = [
            ("ResourcesApplied", "True"),
            ("ResourcesHealthy", "True"),
            ("ResourcesProgressing", "True"),
        ];
        assert_eq!(managed_resource(1, 1, &progressing).check_healthy(), Ok(()));
        assert!(
            managed_resource(1, 1, &progressing)
                .check_healthy_and_not_progressing()
                .is_err()
        );
    }
}
