use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An ONTAP cluster the operator provisions SVMs on, reached through its cluster management LIF.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "ontap.storage.dev",
    version = "v1alpha1",
    kind = "OntapCluster",
    plural = "ontapclusters",
    status = "OntapClusterStatus",
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".spec.endpoint"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OntapClusterSpec {
    /// HTTPS URL of the cluster management LIF, e.g. `https://10.0.0.10`.
    #[schemars(regex(pattern = r"^https?://[^\s/]+(:[0-9]+)?/?$"))]
    pub endpoint: String,
    /// Secret with the keys `username` and `password` of a cluster administrator.
    pub credentials_secret_ref: SecretReference,
    /// Secret with the key `ca.crt`: the CA that signed the cluster's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret_ref: Option<SecretReference>,
    /// Skip TLS verification. Only for test clusters: the credentials can then be intercepted.
    #[serde(default, rename = "insecureSkipTLSVerify")]
    pub insecure_skip_tls_verify: bool,
}

/// A Secret named by namespace and name.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct SecretReference {
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OntapClusterStatus {
    /// ONTAP version reported by the cluster, e.g. `9.16.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
