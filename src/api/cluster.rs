use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rules;
use super::svm::{AccountRole, SvmLimitsSpec};

/// An ONTAP cluster the operator provisions SVMs on, reached through its cluster management LIF.
#[derive(CustomResource, KubeSchema, Clone, Debug, Deserialize, Serialize, PartialEq)]
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
#[x_kube(validation = Rule::new(
    "(has(self.caSecretRef) ? 1 : 0) + (has(self.caFingerprint) ? 1 : 0) + (has(self.insecureSkipTLSVerify) && self.insecureSkipTLSVerify ? 1 : 0) <= 1"
).message("choose one way to trust the cluster's certificate: caSecretRef, caFingerprint or insecureSkipTLSVerify"))]
#[serde(rename_all = "camelCase")]
pub struct OntapClusterSpec {
    /// HTTPS URL of the cluster management LIF, e.g. `https://10.0.0.10` or
    /// `https://[2001:db8::10]:8443`: a host and an optional port, nothing else.
    #[schemars(length(min = 1, max = 2048))]
    // The operator sends cluster-admin credentials to this URL: plain http is refused outright,
    // with its own message, rather than as a generic pattern mismatch.
    #[x_kube(validation = Rule::new("self.startsWith('https://')").message("must be an https:// URL: the operator sends cluster credentials to it and never over plain http"))]
    #[x_kube(validation = Rule::new(
        "!self.startsWith('https://') || (self.matches('^https://[^/?#@ ]+/?$') && isURL(self) && url(self).getHostname() != '')"
    ).message("must be https://<host>[:<port>], without credentials, path, query or fragment"))]
    pub endpoint: String,
    /// Secret with the keys `username` and `password` of a cluster administrator.
    pub credentials_secret_ref: SecretReference,
    /// Secret with the key `ca.crt`: the CA that signed the cluster's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret_ref: Option<SecretReference>,
    /// SHA-256 fingerprint of the cluster's certificate, or of a CA certificate in the chain it
    /// presents, as `openssl x509 -noout -fingerprint -sha256` prints it (hex, colons optional).
    /// The safe answer to ONTAP's self-signed certificates: only that certificate is trusted, so
    /// nothing can be intercepted, and no CA bundle has to be exported from the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(
        "self.matches('^[0-9A-Fa-f]{2}(:?[0-9A-Fa-f]{2}){31}$')"
    ).message("must be a SHA-256 fingerprint: 32 bytes in hex, optionally separated by colons"))]
    pub ca_fingerprint: Option<String>,
    /// Skip TLS verification. Only for test clusters: the credentials can then be intercepted;
    /// the cluster's `TLSVerified` condition and a Warning Event say so.
    #[serde(default, rename = "insecureSkipTLSVerify")]
    pub insecure_skip_tls_verify: bool,
    /// The namespaces whose StorageVirtualMachines may use this cluster; absent: every namespace.
    /// A StorageVirtualMachine elsewhere is refused with a condition, before anything is sent to
    /// ONTAP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// What StorageVirtualMachines on this cluster may choose, where the administrator bounds
    /// it: an object asking for anything else is refused (`NotAllowedByCluster`, naming the
    /// field) before ONTAP sees it. Absent: no bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<ClusterAllowances>,
    /// What StorageVirtualMachines on this cluster get where they name nothing themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<ClusterDefaults>,
    /// A VLAN and broadcast domain of its own for each tenant listed (OpenStack Manila's NetApp
    /// model): made with the tenant's first SVM on this cluster, its LIFs placed there, removed
    /// with its last. Absent: the operator makes no ports or broadcast domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_networks: Option<TenantNetworks>,
}

/// The administrator's grant of a VLAN to each tenant: the tag is never a tenant's to choose,
/// since a VLAN is a network and a tenant picking another's tag would join its network.
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TenantNetworks {
    /// The physical port a tenant's VLAN port `<basePort>-<tag>` is made on, on each node LIFs
    /// may be homed on (`allowed.homeNodes`, else every node), e.g. `e0d`.
    #[schemars(length(min = 1, max = 15))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    pub base_port: String,
    /// The MTU of a tenant's broadcast domain when it is created. Absent: 1500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 68, max = 9000))]
    pub mtu: Option<u32>,
    /// Whether an `Owned` object whose tenant has no entry is refused (`NotAllowedByCluster`)
    /// rather than placed as if the cluster had no tenant networks. Default: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// One entry per tenant: each tag and each tenant at most once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    #[x_kube(validation = Rule::new("self.all(v, self.exists_one(w, w.tag == v.tag))").message("each VLAN tag is granted once"))]
    #[x_kube(validation = Rule::new(
        "self.all(v, !has(v.__namespace__) || self.exists_one(w, has(w.__namespace__) && w.__namespace__ == v.__namespace__)) && self.all(v, !has(v.gardenerProject) || self.exists_one(w, has(w.gardenerProject) && w.gardenerProject == v.gardenerProject))"
    ).message("each namespace and each Gardener project has at most one VLAN"))]
    pub vlans: Vec<TenantVlan>,
}

/// One tenant's VLAN: a tenant namespace's objects, or a Gardener project's shoots and project
/// objects (whose project only gardenlet and the extension record).
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[x_kube(validation = Rule::new("has(self.__namespace__) != has(self.gardenerProject)").message("name exactly one of namespace and gardenerProject"))]
#[serde(rename_all = "camelCase")]
pub struct TenantVlan {
    /// A tenant namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub namespace: Option<String>,
    /// A Gardener project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub gardener_project: Option<String>,
    /// The VLAN tag (IEEE 802.1Q: 1 to 4094).
    #[schemars(range(min = 1, max = 4094))]
    pub tag: u16,
}

/// An administrator's defaults for StorageVirtualMachines on this cluster: an object's own field
/// overrides them, within ClusterAllowances.
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDefaults {
    /// The role of an account whose object names none (`spec.account.role`). Absent: `Vsadmin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_role: Option<AccountRole>,
    /// How often an account's password is replaced where the object sets no
    /// `spec.account.rotationPeriod` (`720h`: hours, minutes and seconds, at least `1m`).
    /// Absent: no scheduled rotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32))]
    #[x_kube(validation = Rule::new(rules::ROTATION_PERIOD).message(rules::ROTATION_PERIOD_MESSAGE))]
    pub credential_rotation_period: Option<String>,
    /// The limits of an `Owned` object's SVM where the object does not set them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<SvmLimitsSpec>,
}

/// An administrator's bounds on what StorageVirtualMachines choose. Each list, when not empty,
/// is the whole of what may be used.
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAllowances {
    /// IPspaces an SVM may be created in (an object naming none asks for `Default`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 64)))]
    pub ipspaces: Vec<String>,
    /// Aggregates an SVM may use. An object naming none gets these, not every data aggregate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 255)))]
    pub aggregates: Vec<String>,
    /// Nodes a LIF may be homed on. The operator places the LIFs it places (VIP LIFs) on these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 255)))]
    pub home_nodes: Vec<String>,
    /// Ports a LIF may name as its `homePort` (by name, on any allowed node): a port is a
    /// network, so listing each tenant's VLAN ports keeps a tenant off another's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 255)))]
    pub home_ports: Vec<String>,
    /// Broadcast domains a LIF may name as its `broadcastDomain`, for the same reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 255)))]
    pub broadcast_domains: Vec<String>,
    /// Address ranges, in CIDR notation (`192.0.2.0/24`, `2001:db8::/64`), every LIF address
    /// must lie in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 49)))]
    #[x_kube(validation = Rule::new("self.all(c, isCIDR(c))").message("each address range must be in CIDR notation, e.g. 192.0.2.0/24 or 2001:db8::/64"))]
    pub address_ranges: Vec<String>,
    /// The most SVMs (`Owned` objects) one tenant namespace provisions on this ONTAP cluster; an
    /// object beyond it (the newest first) is refused. Absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub svms_per_namespace: Option<u32>,
    /// Whether objects of tenants' namespaces may set `deletionPolicy: Retain`, which leaves an
    /// SVM and its data in ONTAP that no object accounts for any more. Default: true. The
    /// Gardener extension's objects may always (a migration retains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_retain: Option<bool>,
    /// The account roles objects may hold, when not empty: an administrator forces least
    /// privilege with `[Trident]`. An object asking for another role is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 2))]
    pub account_roles: Vec<AccountRole>,
    /// The largest `limits.maxVolumes` an object may ask for; an object may then not go
    /// without one (`0`), and one that sets none, with no default either, gets this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_volumes: Option<u32>,
    /// The largest `limits.storageLimit` an object may ask for, a quantity (`10Ti`); an object
    /// may then not go without one (`0`), and one that sets none, with no default either, gets
    /// this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).compareTo(quantity('0')) > 0").message("must be a positive quantity of bytes, e.g. 10Ti"))]
    pub max_storage_limit: Option<String>,
    /// The largest `limits.maxThroughputIops` an object may ask for; an object may then not go
    /// without an IOPS ceiling (`0`), and one that sets none, with no default either, gets this
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_throughput_iops: Option<u64>,
    /// The largest `limits.maxThroughputMbps` an object may ask for, bounding as
    /// `maxThroughputIops` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_throughput_mbps: Option<u64>,
}

/// A Secret named by namespace and name. The operator reads credential Secrets only in its own
/// namespace (`--credentials-namespace`): whoever may create an OntapCluster must not be able to
/// make the operator send any Secret of the cluster to a host of their choosing.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
pub struct SecretReference {
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub namespace: String,
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::DNS_SUBDOMAIN).message(rules::DNS_SUBDOMAIN_MESSAGE))]
    pub name: String,
}

reconcile_engine::engine_status! {
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub struct OntapClusterStatus {
        /// ONTAP version reported by the cluster, e.g. `9.16.1`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub version: Option<String>,
    }
}
