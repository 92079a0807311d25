use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An ONTAP Storage Virtual Machine with its LIFs, its SVM-scoped admin account, and a seed
/// Secret holding that account's verified credentials.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "ontap.storage.dev",
    version = "v1alpha1",
    kind = "StorageVirtualMachine",
    plural = "storagevirtualmachines",
    shortname = "svm",
    namespaced,
    status = "StorageVirtualMachineStatus",
    printcolumn = r#"{"name":"SVM","type":"string","jsonPath":".status.svmName"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Secret","type":"string","jsonPath":".status.secretRef"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"UUID","type":"string","jsonPath":".status.uuid","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct StorageVirtualMachineSpec {
    /// The OntapCluster to provision on.
    pub cluster_ref: ClusterReference,
    /// SVM name in ONTAP. Default: derived from namespace and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 47))]
    pub svm_name: Option<String>,
    /// IPspace of the SVM. Default: the cluster's default IPspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipspace: Option<String>,
    /// Aggregates the SVM may use. Default: all data aggregates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregates: Vec<String>,
    #[serde(default)]
    pub protocols: SvmProtocols,
    pub management_lif: LifSpec,
    /// Data LIFs; at least one.
    #[schemars(length(min = 1))]
    pub data_lifs: Vec<LifSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<SvmAccountSpec>,
    /// Name of the seed Secret. Default: `<name>-svm-credentials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct ClusterReference {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// Protocols enabled on the SVM.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct SvmProtocols {
    #[serde(default)]
    pub nvme: bool,
    #[serde(default)]
    pub nfs: bool,
    #[serde(default)]
    pub iscsi: bool,
}

/// A logical interface: one IP address on a home node.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LifSpec {
    pub ip: String,
    #[schemars(range(min = 1, max = 128))]
    pub prefix_length: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_node: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct SvmAccountSpec {
    /// Account name. Default: `vsadmin-` and a deterministic suffix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What happens in ONTAP when the StorageVirtualMachine object is deleted.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum DeletionPolicy {
    /// Delete the LIFs, the account and the SVM.
    #[default]
    Delete,
    /// Leave ONTAP untouched.
    Retain,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum SvmPhase {
    Pending,
    Provisioning,
    Ready,
    Failed,
    Deleting,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageVirtualMachineStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub svm_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<SvmPhase>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Name of the seed Secret in the object's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
