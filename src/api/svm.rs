use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::protocol::Protocol;
use super::rules;
use super::rules::MANAGEMENT_LIF_PROTOCOLS_MESSAGE;

/// The annotation that asks for the account's password to be rotated now: each new value (a
/// timestamp, a counter) rotates once, and the status records the value honoured, as
/// Gardener's `gardener.cloud/operation: rotate-credentials-start` and cert-manager's renewal
/// request do.
pub const ROTATE_CREDENTIALS_ANNOTATION: &str = "ontap.storage.dev/rotate-credentials";

/// The most data LIFs an SVM takes.
pub const MAX_DATA_LIFS: usize = 16;

// CEL fragments of the data LIF protocol rules, whose Rust twin is `rules::lif_protocols`.
/// Over the spec: how many protocols it enables.
const ENABLED_COUNT: &str =
    "[self.protocols.nvme, self.protocols.iscsi, self.protocols.nfs].filter(p, p).size()";
/// Whether the spec enables the protocol `p`.
const ENABLED: &str = "((p == 'nvme' && self.protocols.nvme) || (p == 'iscsi' && self.protocols.iscsi) || (p == 'nfs' && self.protocols.nfs))";
/// The protocols in `Protocol`'s order, as a literal: a message may name one of its elements,
/// whose length the cost estimate knows.
const PROTOCOLS: &str = "['nvme', 'iscsi', 'nfs']";
/// Whether a data LIF names the protocol `p`.
const SERVED: &str = "self.dataLifs.exists(l, has(l.protocols) && p in l.protocols)";

/// Over a data LIF `l`: it names only protocols the spec enables.
fn names_enabled() -> String {
    format!("!has(l.protocols) || l.protocols.all(p, {ENABLED})")
}

/// The index of the first data LIF for which `holds` (over `l`) is false.
fn first_data_lif_failing(holds: &str) -> String {
    format!("self.dataLifs.map(l, {holds}).indexOf(false)")
}

/// `index` as a string, looked up in a table: the cost estimate of `string(int)` is unbounded,
/// and the API server refuses a message expression built on it.
fn index_string(index: &str) -> String {
    let table: Vec<String> = (0..MAX_DATA_LIFS).map(|i| format!("'{i}'")).collect();
    format!("[{}][{index}]", table.join(", "))
}

/// An ONTAP Storage Virtual Machine with its LIFs, its SVM-scoped admin account, and a seed
/// Secret holding that account's verified credentials.
///
/// Admission rejects what can be decided from the object alone (malformed addresses and names,
/// duplicate IPs, changes to immutable fields); what needs the cluster (the OntapCluster exists,
/// an aggregate exists) is reported as a condition by the controller.
#[derive(CustomResource, KubeSchema, Clone, Debug, Deserialize, Serialize, PartialEq)]
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
    printcolumn = r#"{"name":"UUID","type":"string","jsonPath":".status.uuid","priority":1}"#,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".status.accountRole","priority":1}"#,
    printcolumn = r#"{"name":"Usage","type":"string","jsonPath":".status.usage.summary","priority":1}"#
)]
// Setting svmName later is allowed (the object may have started on the default name); the
// controller compares it with the name it provisioned and reports a mismatch as a condition.
#[x_kube(validation = Rule::new(
    "!has(oldSelf.svmName) || (has(self.svmName) && self.svmName == oldSelf.svmName)"
).message("svmName is immutable once set").field_path(".svmName").reason(Reason::FieldValueForbidden))]
// Addresses are compared as parsed IPs, so `2001:db8::1` and `2001:DB8:0::1` collide. Malformed
// addresses are skipped here: the LIF's own rule reports them. No `FieldValueDuplicate` reason on
// the duplicate rules: with it the API server prints `Duplicate value: "object"` and drops the
// message. `!(a == b)` rather than `a != b`:
// the API server's cost estimate for `!=` on IP values is unbounded and the CRD is refused.
#[x_kube(validation = Rule::new(
    "!isIP(self.managementLif.ip) || self.dataLifs.all(l, !isIP(l.ip) || !(ip(l.ip) == ip(self.managementLif.ip)))"
).message("a data LIF must not use the management LIF's IP address").field_path(".dataLifs"))]
#[x_kube(validation = Rule::new(
    "self.mode != 'AccountOnly' || has(self.svmName)"
).message("an AccountOnly object names the existing SVM it makes its account on in svmName").field_path(".svmName"))]
#[x_kube(validation = Rule::new(
    "self.mode != 'AccountOnly' || !has(self.svmName) || has(self.provider)"
).message("an AccountOnly object names the StorageVirtualMachine that provisions its SVM in provider").field_path(".provider"))]
#[x_kube(validation = Rule::new(
    "self.mode == 'AccountOnly' || !has(self.provider)"
).message("only an AccountOnly object names a provider: an Owned object provisions its own SVM").field_path(".provider"))]
#[x_kube(validation = Rule::new(
    "self.mode == oldSelf.mode || (oldSelf.mode == 'Owned' && self.mode == 'AccountOnly' && oldSelf.deletionPolicy == 'Retain')"
).message("mode is immutable, but for Owned to AccountOnly once deletionPolicy is Retain").field_path(".mode").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new(
    "self.mode != 'AccountOnly' || !has(self.shareWith)"
).message("an AccountOnly object shares no SVM: shareWith belongs on the object that provisions it").field_path(".shareWith"))]
// The data LIFs' protocols; messages name the LIF, as the controller's do (`rules::lif_protocols`).
#[x_kube(validation = Rule::new(
    "!has(self.managementLif.protocols)"
).message(MANAGEMENT_LIF_PROTOCOLS_MESSAGE).field_path(".managementLif.protocols").reason(Reason::FieldValueForbidden))]
#[x_kube(validation = Rule::new(format!(
    "{ENABLED_COUNT} <= 1 || self.dataLifs.all(l, has(l.protocols))"
)).message(Message::Expression(format!(
    "'spec.dataLifs[' + {} + '].protocols: {}'",
    index_string(&first_data_lif_failing("has(l.protocols)")),
    rules::LIF_PROTOCOL_REQUIRED,
))).field_path(".dataLifs"))]
#[x_kube(validation = Rule::new(format!(
    "self.dataLifs.all(l, {})", names_enabled()
)).message(Message::Expression(format!(
    "'spec.dataLifs[' + {} + '].protocols: ' + {PROTOCOLS}.filter(p, !{ENABLED} && p in self.dataLifs[{}].protocols)[0] + ' {}'",
    index_string(&first_data_lif_failing(&names_enabled())),
    first_data_lif_failing(&names_enabled()),
    rules::LIF_PROTOCOL_NOT_ENABLED,
))).field_path(".dataLifs"))]
#[x_kube(validation = Rule::new(format!(
    "{ENABLED_COUNT} <= 1 || {PROTOCOLS}.all(p, !{ENABLED} || {SERVED})"
)).message(Message::Expression(format!(
    "'spec.dataLifs: ' + {PROTOCOLS}.filter(p, {ENABLED} && !{SERVED})[0] + ', {}'",
    rules::LIF_PROTOCOL_UNSERVED,
))).field_path(".dataLifs"))]
#[x_kube(validation = Rule::new(
    "self.mode != 'AccountOnly' || !has(self.limits)"
).message("an AccountOnly object sets no limits: they belong on the object that provisions the SVM").field_path(".limits"))]
#[serde(rename_all = "camelCase")]
pub struct StorageVirtualMachineSpec {
    /// What the object manages in ONTAP: `Owned` (default) the SVM, its LIFs, its account and
    /// the seed Secret; `AccountOnly` only an account and its seed Secret on the existing SVM
    /// named by `svmName`. Immutable, but for one hand-over: an `Owned` object with
    /// `deletionPolicy: Retain` may become `AccountOnly` (its SVM then shared, never deleted by
    /// it), as an Extension's shoot object does when per-project sharing arrives.
    #[serde(default)]
    pub mode: SvmMode,
    /// The OntapCluster to provision on. Immutable: moving an SVM between clusters is not a
    /// spec change but a new SVM.
    #[x_kube(validation = Rule::new("self == oldSelf").message("clusterRef is immutable").reason(Reason::FieldValueForbidden))]
    pub cluster_ref: ClusterReference,
    /// SVM name in ONTAP: a letter or `_`, then letters, digits, `_`, `-`, `.`; at most 47
    /// characters; not `all`. Default: derived from namespace and name. Immutable once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 47))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    #[x_kube(validation = Rule::new("self != 'all'").message("'all' is reserved by ONTAP").reason(Reason::FieldValueForbidden))]
    pub svm_name: Option<String>,
    /// IPspace of the SVM. Default: the cluster's default IPspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    pub ipspace: Option<String>,
    /// Aggregates the SVM may use, each named once. Default: all data aggregates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 255)))]
    #[x_kube(merge_strategy = ListMerge::Set)]
    #[x_kube(validation = Rule::new(rules::AGGREGATE_NAMES).message(rules::AGGREGATE_NAMES_MESSAGE))]
    pub aggregates: Vec<String>,
    #[serde(default)]
    pub protocols: SvmProtocols,
    pub management_lif: LifSpec,
    /// Data LIFs: at least one, at most 16, each with its own IP address. With more than one
    /// protocol, each names the protocol it serves, and each protocol has one.
    #[schemars(length(min = 1, max = MAX_DATA_LIFS))]
    #[x_kube(validation = Rule::new(
        "self.all(l, !isIP(l.ip) || self.exists_one(m, isIP(m.ip) && ip(m.ip) == ip(l.ip)))"
    ).message("each data LIF needs an IP address of its own"))]
    pub data_lifs: Vec<LifSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<SvmAccountSpec>,
    /// Name of the seed Secret in the object's namespace (a DNS subdomain).
    /// Default: `<name>-svm-credentials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::DNS_SUBDOMAIN).message(rules::DNS_SUBDOMAIN_MESSAGE))]
    pub secret_name: Option<String>,
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// The namespaces (by their labels) whose `AccountOnly` objects may make accounts on this
    /// object's SVM; the object's own namespace always may. Absent: only the own namespace.
    /// An account is full (vsadmin) access to the SVM: share with the namespaces you trust.
    /// Narrowing it revokes: an excluded consumer's account is locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_with: Option<LabelSelector>,
    /// For an `AccountOnly` object: the `Owned` StorageVirtualMachine that provisions the SVM
    /// of `svmName`. The account is made only while that object shares its SVM with this
    /// object's namespace (`shareWith`) and ONTAP's mark shows the SVM is that object's: a
    /// grant given on both sides, never taken from whoever provisions a name first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderReference>,
    /// Capacity limits ONTAP enforces on the SVM (an `Owned` object's only). A field left out
    /// takes the OntapCluster's `defaults.limits`; with neither, ONTAP's setting is left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<SvmLimitsSpec>,
    /// The SVM's static routes (ONTAP's `/api/network/ip/routes` of the SVM): a default gateway
    /// (a route without `destination`) and routes to other networks. Set, it is the SVM's whole
    /// route table: a route ONTAP shows that is not listed is removed, also one made by hand,
    /// since ONTAP records no creator of a route. Absent: the SVM's routes are not managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_ROUTES))]
    #[x_kube(validation = Rule::new(
        "self.all(r, self.exists_one(s, s == r))"
    ).message("each route is listed once"))]
    pub routes: Option<Vec<RouteSpec>>,
}

/// The most static routes an SVM takes.
pub const MAX_ROUTES: usize = 32;

/// A static route of the SVM.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[x_kube(validation = Rule::new(
    "!has(self.destination) || !isCIDR(self.destination) || !isIP(self.gateway) || cidr(self.destination).ip().family() == ip(self.gateway).family()"
).message("the gateway must be of the destination's address family").field_path(".gateway"))]
pub struct RouteSpec {
    /// The network reached through `gateway`, in CIDR notation (`198.51.100.0/24`,
    /// `2001:db8:1::/48`). Absent: the default route (`0.0.0.0/0` or `::/0`, by the gateway's
    /// family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 49))]
    #[x_kube(validation = Rule::new("isCIDR(self)").message("must be a network in CIDR notation, e.g. 198.51.100.0/24 or 2001:db8:1::/48"))]
    #[x_kube(validation = Rule::new("!isCIDR(self) || cidr(self) == cidr(self).masked()").message("must be a network address: the bits past the prefix length are zero"))]
    pub destination: Option<String>,
    /// The next hop: an IPv4 or IPv6 address in the subnet of one of the SVM's LIFs.
    #[schemars(length(min = 1, max = 45))]
    #[x_kube(validation = Rule::new("isIP(self)").message("must be a valid IPv4 or IPv6 address (no zone, no leading zeros, no IPv4-mapped IPv6)"))]
    #[x_kube(validation = Rule::new("!isIP(self) || ip(self).isGlobalUnicast()").message("must be a unicast address: not unspecified, loopback, link-local, multicast or broadcast"))]
    pub gateway: String,
}

/// Limits ONTAP enforces on an SVM: it refuses a volume beyond them. `0` removes a limit (where
/// the OntapCluster's `allowed` lets an object go without one).
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SvmLimitsSpec {
    /// The most volumes the SVM may hold (ONTAP's `max_volumes`); `0`: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_volumes: Option<u32>,
    /// The most capacity the SVM's volumes may take together, as a Kubernetes quantity
    /// (`500Gi`, `2T`; ONTAP's `storage.limit`, in bytes); `0`: unlimited. ONTAP 9.13.1 or
    /// later: an older cluster leaves it unset, with the condition `LimitsReady` saying why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).compareTo(quantity('0')) >= 0").message("must be a non-negative quantity of bytes, e.g. 500Gi or 2T"))]
    pub storage_limit: Option<String>,
    /// The percentage of `storageLimit` at which ONTAP raises its capacity alert
    /// (`storage.limit_threshold_alert`; ONTAP's default 90).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub storage_limit_threshold_alert: Option<u8>,
    /// The SVM's throughput ceiling in IOPS, for all its volumes together: a fixed QoS policy
    /// the operator creates for the SVM (`fixed.max_throughput_iops`, shared) and applies to it
    /// (the SVM's `qos_policy`); `0`: no ceiling in IOPS. With `maxThroughputMbps` as well,
    /// whichever is reached first holds. No floor: ONTAP applies no policy with a minimum
    /// throughput to an SVM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_throughput_iops: Option<u64>,
    /// The SVM's throughput ceiling in MB/s (`fixed.max_throughput_mbps`); `0`: none in MB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_throughput_mbps: Option<u64>,
}

/// The StorageVirtualMachine that provisions the SVM an `AccountOnly` object uses.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
pub struct ProviderReference {
    /// Its namespace. Default: the object's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub namespace: Option<String>,
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::DNS_SUBDOMAIN).message(rules::DNS_SUBDOMAIN_MESSAGE))]
    pub name: String,
}

/// The OntapCluster an SVM lives on (cluster-scoped, so a name is enough).
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
pub struct ClusterReference {
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::DNS_SUBDOMAIN).message(rules::DNS_SUBDOMAIN_MESSAGE))]
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

impl SvmProtocols {
    pub fn enables(&self, protocol: Protocol) -> bool {
        match protocol {
            Protocol::Nvme => self.nvme,
            Protocol::Iscsi => self.iscsi,
            Protocol::Nfs => self.nfs,
        }
    }

    /// The enabled protocols, in [`Protocol::ALL`]'s order.
    pub fn enabled(&self) -> Vec<Protocol> {
        Protocol::ALL
            .into_iter()
            .filter(|p| self.enables(*p))
            .collect()
    }
}

/// A logical interface: one IP address on a home node.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
// Placement per ONTAP's interface schema; the Rust twin is `rules::lif_placement`.
#[x_kube(validation = Rule::new(
    "!has(self.homePort) || has(self.homeNode)"
).message(rules::HOME_PORT_NEEDS_NODE).field_path(".homePort"))]
#[x_kube(validation = Rule::new(
    "!has(self.homePort) || !has(self.broadcastDomain)"
).message(rules::PORT_OR_DOMAIN).field_path(".broadcastDomain"))]
#[x_kube(validation = Rule::new(
    "!has(self.vip) || !self.vip || (!has(self.homePort) && !has(self.broadcastDomain))"
).message(rules::VIP_UNPLACED).field_path(".vip"))]
#[x_kube(validation = Rule::new(
    "!isIP(self.ip) || self.prefixLength <= (ip(self.ip).family() == 4 ? 32 : 128)"
).message("prefixLength must be at most 32 for an IPv4 address and at most 128 for IPv6").field_path(".prefixLength"))]
// ONTAP places a VIP LIF in no subnet: its netmask covers the address alone.
#[x_kube(validation = Rule::new(
    "!has(self.vip) || !self.vip || !isIP(self.ip) || self.prefixLength == (ip(self.ip).family() == 4 ? 32 : 128)"
).message("a VIP LIF is in no subnet: prefixLength must be 32 for an IPv4 address and 128 for IPv6").field_path(".prefixLength"))]
#[serde(rename_all = "camelCase")]
pub struct LifSpec {
    /// IPv4 or IPv6 address, e.g. `192.0.2.10` or `2001:db8::10`.
    #[schemars(length(min = 1, max = 45))]
    #[x_kube(validation = Rule::new("isIP(self)").message("must be a valid IPv4 or IPv6 address (no zone, no leading zeros, no IPv4-mapped IPv6)"))]
    #[x_kube(validation = Rule::new("!isIP(self) || ip(self).isGlobalUnicast()").message("must be a unicast address: not unspecified, loopback, link-local, multicast or broadcast"))]
    pub ip: String,
    /// Prefix length of the subnet: 1–32 for IPv4, 1–128 for IPv6.
    #[schemars(range(min = 1, max = 128))]
    pub prefix_length: u8,
    /// Node the LIF lives on. Default: chosen by ONTAP; for a VIP LIF, which ONTAP cannot
    /// place by subnet, by the operator (the management LIF on the first node, data LIFs
    /// round-robin over the nodes, as metal-stack's extension does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub home_node: Option<String>,
    /// A VIP LIF (ONTAP 9.7+): in no subnet, announced to the routers by the cluster's BGP peer
    /// groups, so `prefixLength` is 32 (IPv4) or 128 (IPv6). ONTAP refuses one while the
    /// cluster has no BGP peer group. An existing LIF whose kind differs is replaced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vip: bool,
    /// Data LIFs only: the protocol the LIF serves, one the SVM enables. Its service policy
    /// follows, and the policy's services are how ONTAP says which LIF serves which protocol
    /// (Trident finds its LIFs by them): `nvme` → `default-data-nvme-tcp` (`data_nvme_tcp`),
    /// `iscsi` → `default-data-blocks` (`data_iscsi`), `nfs` → `default-data-files`
    /// (`data_nfs`). Exactly one: each of ONTAP's default data policies serves files or blocks,
    /// and NVMe/TCP shares a LIF with no other protocol. Required when the SVM enables more
    /// than one protocol, and then each of them needs a LIF; absent, the LIF serves the SVM's
    /// one protocol. Changing it replaces the LIF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 3))]
    #[x_kube(merge_strategy = ListMerge::Set)]
    #[x_kube(validation = Rule::new("self.size() == 1").message(rules::LIF_PROTOCOL_COUNT_MESSAGE))]
    pub protocols: Option<Vec<Protocol>>,
    /// The port of `homeNode` the LIF is homed on: physical, VLAN or LAG (`e0d`, `e0d-100`,
    /// `a0a`). Needs `homeNode`. Default: a port ONTAP picks. Changing it (or `homeNode`) moves
    /// the LIF in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    pub home_port: Option<String>,
    /// The broadcast domain in which ONTAP picks the LIF's port (on `homeNode`, when named).
    /// It places a LIF being created: ONTAP does not report an interface's broadcast domain,
    /// so an existing LIF is not compared with it (name `homePort` to move one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    pub broadcast_domain: Option<String>,
    /// The LIF's service policy, one the SVM has (ONTAP's built-in ones or one an administrator
    /// made). Default: `default-management` for the management LIF, the policy of its protocol
    /// for a data LIF (see `protocols`). Changing it changes the LIF in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    pub service_policy: Option<String>,
}

/// The SVM-scoped administrator account the operator creates and publishes in the seed Secret.
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SvmAccountSpec {
    /// Account name: 3–64 characters, a letter or `_`, then letters, digits, `_`, `-`, `.`.
    /// Default: `vsadmin-` and a deterministic suffix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 64))]
    #[x_kube(validation = Rule::new(rules::ONTAP_NAME).message(rules::ONTAP_NAME_MESSAGE))]
    #[x_kube(validation = Rule::new(rules::NOT_RESERVED_ACCOUNT).message(rules::NOT_RESERVED_ACCOUNT_MESSAGE).reason(Reason::FieldValueForbidden))]
    pub name: Option<String>,
    /// How often the account's password is replaced (`720h`, `24h`, `90m`: hours, minutes and
    /// seconds, at least `1m`). Overrides the OntapCluster's `defaults.credentialRotationPeriod`;
    /// absent in both: no scheduled rotation (`ontap.storage.dev/rotate-credentials` still
    /// rotates on request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32))]
    #[x_kube(validation = Rule::new(rules::ROTATION_PERIOD).message(rules::ROTATION_PERIOD_MESSAGE))]
    pub rotation_period: Option<String>,
    /// What the account may do on its SVM. Default: the OntapCluster's `defaults.accountRole`,
    /// else `Vsadmin`. Changing it changes the account's role in place: its password stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<AccountRole>,
}

/// The role an SVM account holds.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum AccountRole {
    /// ONTAP's built-in SVM administrator: everything on the SVM.
    #[default]
    Vsadmin,
    /// Least privilege for Trident: an SVM-scoped REST role the operator creates and keeps on
    /// the SVM, holding exactly the privileges NetApp documents for an SVM-scoped Trident user
    /// (NetApp/trident `contrib/ontap/trident_role/cli_pastable/rest_custom_role_output.txt`).
    Trident,
}

/// What a StorageVirtualMachine object manages in ONTAP.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum SvmMode {
    /// The SVM, its LIFs, its account and the seed Secret: created, kept as specified and, per
    /// `deletionPolicy`, deleted with the object.
    #[default]
    Owned,
    /// Only an account and its seed Secret, on an SVM that exists already (provisioned by
    /// another StorageVirtualMachine object, or outside the operator) and is named by
    /// `svmName`. Several objects share one SVM this way, each with an account of its own:
    /// metal-stack's one SVM per project, one account per shoot. The SVM is waited for, never
    /// created, changed or deleted; the spec's LIFs are not managed, its management LIF is the
    /// address the Secret publishes. Deleting the object deletes the account (per
    /// `deletionPolicy`) and the Secret.
    AccountOnly,
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
    /// The SVM is provisioned by a StorageVirtualMachine of another operator installation (a
    /// project SVM whose shoots span seeds): this object shares it with its namespaces and
    /// leaves it alone.
    ServedElsewhere,
}

reconcile_engine::engine_status! {
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub struct StorageVirtualMachineStatus {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub uuid: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub svm_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub phase: Option<SvmPhase>,
        /// Name of the seed Secret in the object's namespace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub secret_ref: Option<String>,
        /// The role the account was verified to hold on the last pass that reached it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub account_role: Option<AccountRole>,
        /// When the account's password was last rotated (on schedule or on request); absent:
        /// never since the account was made.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub credentials_rotated_at: Option<Time>,
        /// When the next scheduled rotation is due; absent: no rotation period applies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub credentials_rotation_due: Option<Time>,
        /// The value of the `ontap.storage.dev/rotate-credentials` annotation last honoured:
        /// each new value rotates once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub rotation_request: Option<String>,
        /// What the SVM uses of its limits, as ONTAP last reported it (objects with limits).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub usage: Option<SvmUsage>,
        /// The broadcast domain of the tenant network the SVM's LIFs are placed in, where the
        /// OntapCluster's `tenantNetworks` grants the object's tenant a VLAN.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tenant_network: Option<String>,
    }
}

/// An SVM's usage against its limits.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SvmUsage {
    /// Volumes of the SVM, where counted (from the cluster's inventory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<u64>,
    /// ONTAP's `max_volumes`; absent: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_volumes: Option<u64>,
    /// Bytes the SVM's volumes take of the capacity limit (ONTAP's `storage.allocated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_used_bytes: Option<u64>,
    /// ONTAP's `storage.limit` in bytes; absent: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_limit_bytes: Option<u64>,
    /// The SVM's throughput ceiling in IOPS, as its QoS policy holds it; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_throughput_iops: Option<u64>,
    /// The SVM's throughput ceiling in MB/s, as its QoS policy holds it; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_throughput_mbps: Option<u64>,
    /// `volumes 3/100, storage 12Gi/500Gi, qos 5000iops`: what `kubectl get svm -o wide` shows.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
}
