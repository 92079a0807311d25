//! Typed ONTAP records: what the client reads and what it sends.
//!
//! Readers are lenient where ONTAP versions differ (optional fields, unknown enum values) and
//! strict where the client's decisions depend on a field (`uuid`, `name`, `records`, a job's
//! `state`): a missing one is a decode error, never a silently empty default.
//!
//! One file because each record's `*_FIELDS` list must name exactly the fields its struct
//! decodes, and the conformance suite reads them from here (`tests/conformance`): kept beside one
//! another in one file, a field added to a struct and not to its list is seen in one review.

use std::fmt;

use reqwest::{Method, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use super::error::{ApiError, OntapError};

/// A reference to another object, as ONTAP embeds it (`{"name": …, "uuid": …}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct ObjectRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

impl ObjectRef {
    pub fn by_name(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            uuid: None,
        }
    }

    pub fn by_uuid(uuid: impl Into<String>) -> Self {
        Self {
            name: None,
            uuid: Some(uuid.into()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cluster

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ClusterInfo {
    pub name: String,
    pub uuid: String,
    pub version: ClusterVersion,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ClusterVersion {
    #[serde(default)]
    pub full: String,
    pub generation: u32,
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for ClusterVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.generation, self.major, self.minor)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Node {
    pub uuid: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Aggregate {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub space: Option<AggregateSpace>,
    #[serde(default, rename = "volume-count")]
    pub volume_count: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct AggregateSpace {
    #[serde(default)]
    pub block_storage: Option<BlockStorage>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct BlockStorage {
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub available: Option<u64>,
    #[serde(default)]
    pub used: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// SVMs

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SvmState {
    Starting,
    Running,
    Stopping,
    Stopped,
    Deleting,
    Initializing,
    /// A state this client does not know (a newer ONTAP).
    #[serde(other)]
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Svm {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub state: Option<SvmState>,
    #[serde(default)]
    pub subtype: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub ipspace: Option<ObjectRef>,
    #[serde(default)]
    pub aggregates: Vec<ObjectRef>,
    #[serde(default)]
    pub nfs: Option<ProtocolState>,
    #[serde(default)]
    pub iscsi: Option<ProtocolState>,
    #[serde(default)]
    pub nvme: Option<ProtocolState>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct ProtocolState {
    #[serde(default)]
    pub enabled: bool,
}

/// `fields=` for SVM lookups: everything [`Svm`] reads, nothing expensive.
pub(crate) const SVM_FIELDS: &str = "uuid,name,state,subtype,comment,ipspace.name,aggregates.name,aggregates.uuid,nfs.enabled,iscsi.enabled,nvme.enabled";

/// Body of `POST /api/svm/svms`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SvmCreate {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipspace: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aggregates: Vec<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs: Option<ProtocolState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iscsi: Option<ProtocolState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme: Option<ProtocolState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// The administrative states a PATCH can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SvmTargetState {
    Running,
    Stopped,
}

/// Body of `PATCH /api/svm/svms/{uuid}`; unset fields are left alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SvmPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<SvmTargetState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs: Option<ProtocolState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iscsi: Option<ProtocolState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme: Option<ProtocolState>,
}

// ---------------------------------------------------------------------------------------------
// SVM limits, usage and QoS

/// An SVM's `max_volumes`: ONTAP reports the string `"unlimited"` or a count, as a string
/// (netapp-ontap `Svm.max_volumes`); a count sent as a JSON number is read too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxVolumes {
    Unlimited,
    Limit(u64),
}

impl Serialize for MaxVolumes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MaxVolumes::Unlimited => s.serialize_str("unlimited"),
            MaxVolumes::Limit(n) => s.serialize_str(&n.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for MaxVolumes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) if s == "unlimited" => Ok(MaxVolumes::Unlimited),
            serde_json::Value::String(s) => s
                .parse()
                .map(MaxVolumes::Limit)
                .map_err(|_| D::Error::custom("max_volumes is neither \"unlimited\" nor a count")),
            serde_json::Value::Number(n) => n
                .as_u64()
                .map(MaxVolumes::Limit)
                .ok_or_else(|| D::Error::custom("max_volumes is not a count")),
            _ => Err(D::Error::custom(
                "max_volumes is neither \"unlimited\" nor a count",
            )),
        }
    }
}

/// An SVM's capacity limit and what its volumes take of it (ONTAP 9.13.1+). ONTAP reports
/// `allocated`, `available` and `used_percentage` only while a `limit` is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct SvmStorage {
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub limit_threshold_alert: Option<u64>,
    /// The total size of the SVM's volumes, in bytes.
    #[serde(default)]
    pub allocated: Option<u64>,
    #[serde(default)]
    pub available: Option<u64>,
    #[serde(default)]
    pub used_percentage: Option<u64>,
    #[serde(default)]
    pub limit_threshold_exceeded: Option<bool>,
}

/// An SVM's limits and usage, as the cluster-wide inventory reads them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct SvmLimits {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub max_volumes: Option<MaxVolumes>,
    /// Absent on ONTAP before 9.13.1, which has no capacity limit.
    #[serde(default)]
    pub storage: Option<SvmStorage>,
    #[serde(default)]
    pub qos_policy: Option<ObjectRef>,
}

/// `fields=` for [`SvmLimits`] on ONTAP 9.13.1 and later.
pub(crate) const SVM_LIMIT_FIELDS: &str = "uuid,name,max_volumes,qos_policy.name,qos_policy.uuid,storage.limit,storage.limit_threshold_alert,storage.allocated,storage.available,storage.used_percentage,storage.limit_threshold_exceeded";
/// `fields=` for [`SvmLimits`] before ONTAP 9.13.1, which refuses `storage` as unknown.
pub(crate) const SVM_LIMIT_FIELDS_BEFORE_9_13_1: &str =
    "uuid,name,max_volumes,qos_policy.name,qos_policy.uuid";

/// The release that brought an SVM's capacity limit (`storage.limit`).
pub(crate) const SVM_STORAGE_LIMIT_SINCE: (u32, u32, u32) = (9, 13, 1);

impl ClusterVersion {
    /// Whether the cluster knows an SVM's capacity limit: older releases refuse `storage` as an
    /// unknown field.
    pub fn has_svm_storage_limit(&self) -> bool {
        (self.generation, self.major, self.minor) >= SVM_STORAGE_LIMIT_SINCE
    }
}

/// `fields=` for [`SvmLimits`] on a cluster of this release.
pub(crate) fn svm_limit_fields(version: &ClusterVersion) -> &'static str {
    if version.has_svm_storage_limit() {
        SVM_LIMIT_FIELDS
    } else {
        SVM_LIMIT_FIELDS_BEFORE_9_13_1
    }
}

/// The capacity limit part of an SVM PATCH. A `limit` of 0 removes the limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SvmStorageLimit {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_threshold_alert: Option<u64>,
}

/// Body of `PATCH /api/svm/svms/{uuid}` for an SVM's limits; unset fields are left alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SvmLimitsPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_volumes: Option<MaxVolumes>,
    /// ONTAP 9.13.1+; an older ONTAP refuses the PATCH as invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<SvmStorageLimit>,
    /// A QoS policy of the same SVM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qos_policy: Option<ObjectRef>,
}

/// What one volume takes of its SVM, as the cluster-wide usage listing reads it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct VolumeUsage {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub svm: Option<ObjectRef>,
    /// Bytes.
    #[serde(default)]
    pub size: Option<u64>,
}

pub(crate) const VOLUME_USAGE_FIELDS: &str = "uuid,name,svm.name,svm.uuid,size";

/// A fixed QoS policy's limits; 0 or absent means no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct QosFixed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_throughput_iops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_throughput_mbps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_throughput_iops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_throughput_mbps: Option<u64>,
    /// Whether the limits hold for all objects of the policy together; set at creation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_shared: Option<bool>,
}

/// A QoS policy (`/api/storage/qos/policies`), owned by an SVM.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct QosPolicy {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub svm: Option<ObjectRef>,
    #[serde(default)]
    pub fixed: Option<QosFixed>,
    /// How many storage objects (the SVM, volumes) the policy applies to.
    #[serde(default)]
    pub object_count: Option<u64>,
}

pub(crate) const QOS_POLICY_FIELDS: &str = "uuid,name,svm.name,svm.uuid,fixed.max_throughput_iops,fixed.max_throughput_mbps,fixed.min_throughput_iops,fixed.min_throughput_mbps,fixed.capacity_shared,object_count";

/// Body of `POST /api/storage/qos/policies`. ONTAP keys policies by name across the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QosPolicyCreate {
    pub name: String,
    pub svm: ObjectRef,
    pub fixed: QosFixed,
}

/// Body of `PATCH /api/storage/qos/policies/{uuid}`; unset fields are left alone.
/// `fixed.capacity_shared` cannot change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QosPolicyPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<QosFixed>,
}

// ---------------------------------------------------------------------------------------------
// IP interfaces

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct IpInterface {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub ip: Option<IpInfo>,
    #[serde(default)]
    pub location: Option<InterfaceLocation>,
    #[serde(default)]
    pub svm: Option<ObjectRef>,
    #[serde(default)]
    pub service_policy: Option<ObjectRef>,
    /// Whether the interface is a VIP, announced through BGP rather than homed on a subnet.
    #[serde(default)]
    pub vip: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct IpInfo {
    pub address: String,
    /// A dotted mask or a prefix length, as ONTAP accepts both.
    #[serde(default, deserialize_with = "de_code")]
    pub netmask: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct InterfaceLocation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_node: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_port: Option<ObjectRef>,
}

pub(crate) const INTERFACE_FIELDS: &str = "uuid,name,enabled,ip.address,ip.netmask,location.home_node,location.home_port,svm.name,svm.uuid,service_policy.name,vip";

/// Body of `POST /api/network/ip/interfaces`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IpInterfaceCreate {
    pub name: String,
    pub enabled: bool,
    pub svm: ObjectRef,
    pub ip: IpInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<InterfaceLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_policy: Option<ObjectRef>,
    /// A VIP interface (ONTAP 9.7+). Sent only when true, so a plain interface's body is what
    /// every ONTAP release accepts.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub vip: bool,
}

/// Body of `PATCH /api/network/ip/interfaces/{uuid}`; unset fields are left alone. ONTAP
/// moves an interface by its home node and port; its broadcast domain is set at creation only
/// ([`OntapClient::create_interface_in_broadcast_domain`](crate::OntapClient::create_interface_in_broadcast_domain)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IpInterfacePatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<InterfaceLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_policy: Option<ObjectRef>,
}

// ---------------------------------------------------------------------------------------------
// Ports, broadcast domains, routes

/// A port as another record names it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct PortRef {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub node: Option<ObjectRef>,
}

/// A VLAN port's tag and the port it is on.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct PortVlan {
    pub tag: u16,
    #[serde(default)]
    pub base_port: Option<PortRef>,
}

/// An ethernet port (`/api/network/ethernet/ports`): `physical`, `vlan` or `lag`. The
/// broadcast domain of an interface is the one of its home port: ONTAP takes
/// `location.broadcast_domain` on an interface POST but does not report it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct EthernetPort {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub node: Option<ObjectRef>,
    #[serde(default, rename = "type")]
    pub port_type: Option<String>,
    /// Absent while the port is in no broadcast domain; it then hosts no interface.
    #[serde(default)]
    pub broadcast_domain: Option<ObjectRef>,
    #[serde(default)]
    pub vlan: Option<PortVlan>,
    #[serde(default)]
    pub mtu: Option<u64>,
}

pub(crate) const PORT_FIELDS: &str = "uuid,name,node.name,node.uuid,type,broadcast_domain.name,broadcast_domain.uuid,vlan.tag,vlan.base_port.name,mtu";

/// Body of `POST /api/network/ethernet/ports` for a VLAN port `<base_port>-<tag>` on a node.
/// Without a broadcast domain ONTAP assigns one by probing, minutes later; until then the port
/// hosts no interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlanCreate {
    pub node: String,
    pub base_port: String,
    pub tag: u16,
    pub broadcast_domain: Option<String>,
}

impl VlanCreate {
    /// The name ONTAP gives the port.
    pub fn port_name(&self) -> String {
        format!("{}-{}", self.base_port, self.tag)
    }

    pub(crate) fn body(&self) -> serde_json::Value {
        let mut body = serde_json::json!({
            "type": "vlan",
            "node": { "name": self.node },
            "vlan": { "tag": self.tag, "base_port": { "name": self.base_port, "node": { "name": self.node } } },
        });
        if let Some(domain) = &self.broadcast_domain {
            body["broadcast_domain"] = serde_json::json!({ "name": domain });
        }
        body
    }
}

/// A broadcast domain (`/api/network/ethernet/broadcast-domains`) and its ports.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct BroadcastDomain {
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub mtu: Option<u64>,
    #[serde(default)]
    pub ipspace: Option<ObjectRef>,
    #[serde(default)]
    pub ports: Vec<PortRef>,
}

pub(crate) const BROADCAST_DOMAIN_FIELDS: &str =
    "uuid,name,mtu,ipspace.name,ports.name,ports.uuid,ports.node.name";

/// Body of `POST /api/network/ethernet/broadcast-domains`, in the `Default` IPspace unless
/// `ipspace` names another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BroadcastDomainCreate {
    pub name: String,
    pub mtu: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipspace: Option<ObjectRef>,
}

/// An SVM's static route (`/api/network/ip/routes`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Route {
    pub uuid: String,
    /// `0.0.0.0/0` (or `::/0`) for the default route.
    #[serde(default)]
    pub destination: Option<IpInfo>,
    pub gateway: String,
    /// Absent on a cluster-scoped route.
    #[serde(default)]
    pub svm: Option<ObjectRef>,
    #[serde(default)]
    pub metric: Option<u64>,
}

pub(crate) const ROUTE_FIELDS: &str =
    "uuid,svm.name,svm.uuid,destination.address,destination.netmask,gateway,metric";

/// Body of `POST /api/network/ip/routes` for an SVM. Without a destination ONTAP makes the
/// default route of the gateway's family.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RouteCreate {
    pub svm: ObjectRef,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<IpInfo>,
    pub gateway: String,
}

/// A BGP peer group (`/api/network/ip/bgp/peer-groups`, ONTAP 9.7+): its existence means the
/// cluster announces VIP interfaces to routers.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct BgpPeerGroup {
    pub uuid: String,
    #[serde(default)]
    pub name: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Accounts

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Account {
    pub name: String,
    #[serde(default)]
    pub owner: Option<ObjectRef>,
    #[serde(default)]
    pub role: Option<ObjectRef>,
    #[serde(default)]
    pub locked: Option<bool>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub applications: Vec<AccountApplication>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct AccountApplication {
    pub application: String,
    #[serde(default)]
    pub authentication_methods: Vec<String>,
}

pub(crate) const ACCOUNT_FIELDS: &str =
    "name,owner.name,owner.uuid,role.name,locked,comment,applications";

/// What `POST /api/security/accounts` needs. The password is a [`SecretString`]: it is exposed
/// only while the request body is serialized, and never in `Debug`.
#[derive(Clone, Debug)]
pub struct AccountCreate {
    pub name: String,
    pub owner_uuid: String,
    /// E.g. `vsadmin`.
    pub role: String,
    pub password: SecretString,
    pub comment: Option<String>,
    /// How the account may log in; empty: `http` with a password (REST only). Trident
    /// speaking ZAPI needs `ontapi` too.
    pub applications: Vec<AccountApplication>,
}

impl AccountCreate {
    pub(crate) fn body(&self) -> serde_json::Value {
        let applications = if self.applications.is_empty() {
            serde_json::json!([{"application": "http", "authentication_methods": ["password"]}])
        } else {
            serde_json::json!(self.applications)
        };
        let mut body = serde_json::json!({
            "name": self.name,
            "owner": {"uuid": self.owner_uuid},
            "role": {"name": self.role},
            "applications": applications,
            "password": self.password.expose_secret(),
            "locked": false,
        });
        if let (Some(c), Some(obj)) = (&self.comment, body.as_object_mut()) {
            obj.insert("comment".into(), c.clone().into());
        }
        body
    }
}

/// Body of `PATCH /api/security/accounts/{owner.uuid}/{name}`; unset fields are left alone.
/// ONTAP creates every SVM with a `vsadmin` without password, and refuses to lock or unlock an
/// account without one: to take it over, set its `password` first, then `locked: Some(false)`.
#[derive(Clone, Debug, Default)]
pub struct AccountPatch {
    pub password: Option<SecretString>,
    pub locked: Option<bool>,
    pub comment: Option<String>,
    /// Replaces the account's applications (ONTAP takes the whole list).
    pub applications: Option<Vec<AccountApplication>>,
    /// Gives the account another role (`vsadmin` or a REST role of its SVM) in place: its
    /// password and sessions' credentials stay.
    pub role: Option<String>,
}

impl AccountPatch {
    pub(crate) fn body(&self) -> serde_json::Value {
        let mut body = serde_json::Map::new();
        if let Some(p) = &self.password {
            body.insert("password".into(), p.expose_secret().into());
        }
        if let Some(l) = self.locked {
            body.insert("locked".into(), l.into());
        }
        if let Some(c) = &self.comment {
            body.insert("comment".into(), c.clone().into());
        }
        if let Some(a) = &self.applications {
            body.insert("applications".into(), serde_json::json!(a));
        }
        if let Some(role) = &self.role {
            body.insert("role".into(), serde_json::json!({ "name": role }));
        }
        serde_json::Value::Object(body)
    }
}

// ---------------------------------------------------------------------------------------------
// REST roles

/// What a privilege lets an account do on its API path: `readonly` GET, `read_create` also
/// POST, `read_modify` also PATCH, `read_create_modify` both, `all` also DELETE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleAccess {
    None,
    Readonly,
    ReadCreate,
    ReadModify,
    ReadCreateModify,
    All,
    /// An access level this client does not know (a newer ONTAP).
    #[serde(other)]
    Unknown,
}

/// One privilege of a REST role: an API path (`/api/storage/volumes`; key segments left out,
/// `/api/storage/volumes/snapshots`) and its access. The longest matching path decides.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct RolePrivilege {
    pub path: String,
    pub access: RoleAccess,
}

/// An SVM-scoped REST role (`/api/security/roles`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Role {
    pub name: String,
    #[serde(default)]
    pub owner: Option<ObjectRef>,
    #[serde(default)]
    pub privileges: Vec<RolePrivilege>,
}

pub(crate) const ROLE_FIELDS: &str = "owner.uuid,owner.name,name,privileges.path,privileges.access";

/// Body of `POST /api/security/roles` for a role of the SVM `owner_uuid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleCreate {
    pub name: String,
    pub owner_uuid: String,
    pub privileges: Vec<RolePrivilege>,
}

impl RoleCreate {
    pub(crate) fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "owner": { "uuid": self.owner_uuid },
            "privileges": self.privileges,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Jobs

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Paused,
    Success,
    Failure,
    #[serde(other)]
    Unknown,
}

impl JobState {
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Success | Self::Failure)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Job {
    pub uuid: String,
    pub state: JobState,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// ONTAP sends an integer; kept as a string like the codes of error bodies.
    #[serde(default, deserialize_with = "de_opt_code")]
    pub code: Option<String>,
    #[serde(default, deserialize_with = "de_lenient")]
    pub error: Option<ApiError>,
    #[serde(default, deserialize_with = "de_lenient")]
    pub svm: Option<ObjectRef>,
}

impl Job {
    /// The failure of a job in state `failure`, with the most specific code and message found.
    pub(crate) fn failure(&self) -> OntapError {
        let (code, message) = match &self.error {
            Some(e) if !e.code.is_empty() => (e.code.clone(), e.message.clone()),
            _ => (
                self.code.clone().unwrap_or_default(),
                self.message.clone().unwrap_or_default(),
            ),
        };
        let message = if message.is_empty() {
            self.message.clone().unwrap_or_default()
        } else {
            message
        };
        OntapError::JobFailed {
            job_uuid: self.uuid.clone(),
            code,
            message,
        }
    }
}

/// The body of a 202 answer.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct JobLink {
    pub job: JobRef,
}

/// A record's keys as a POST with `return_records=true` returns them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub(crate) struct CreatedKey {
    pub uuid: String,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct JobRef {
    pub uuid: String,
}

// ---------------------------------------------------------------------------------------------
// Collections and pagination

/// The answer to a POST with `return_records=true`: the created record (its keys and name),
/// next to the job link when ONTAP answers 202; no `records` when not asked for.
#[derive(Debug, Deserialize)]
pub(crate) struct Created<T> {
    #[serde(default = "Vec::new")]
    pub records: Vec<T>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Collection<T> {
    /// Required: an answer without `records` is not "zero records".
    pub records: Vec<T>,
    #[serde(default, rename = "_links")]
    pub links: Option<Links>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Links {
    #[serde(default)]
    pub next: Option<Href>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Href {
    pub href: String,
}

impl<T> Collection<T> {
    pub fn next_href(&self) -> Option<&str> {
        self.links
            .as_ref()
            .and_then(|l| l.next.as_ref())
            .map(|h| h.href.as_str())
            .filter(|h| !h.is_empty())
    }
}

/// Resolves a `_links.next` href against the cluster endpoint. The credentials go wherever this
/// points, so only a path under `/api/` on the same origin is accepted.
pub(crate) fn resolve_next(base: &Url, href: &str) -> Result<Url, String> {
    let next = base
        .join(href)
        .map_err(|e| format!("invalid next link: {e}"))?;
    if next.origin() != base.origin() {
        return Err("next link points to another server".into());
    }
    if !next.path().starts_with("/api/") {
        return Err("next link is not an API path".into());
    }
    Ok(next)
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// Decodes a successful answer. Serde's messages can quote values from the body, so only
/// field names and positions are kept.
pub(crate) fn decode<T: DeserializeOwned>(
    method: &Method,
    endpoint: &'static str,
    status: StatusCode,
    body: &[u8],
) -> Result<T, OntapError> {
    serde_json::from_slice(body).map_err(|e| OntapError::Decode {
        method: method.clone(),
        endpoint,
        status,
        reason: describe_json_error(&e),
    })
}

pub(crate) fn describe_json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let at = format!("line {} column {}", e.line(), e.column());
    match e.classify() {
        Category::Eof => format!("truncated JSON at {at}"),
        Category::Syntax => format!("malformed JSON at {at}"),
        Category::Io => "I/O error while decoding".into(),
        Category::Data => {
            let msg = e.to_string();
            // "missing field `x`" names a field of ours, never a value from the body.
            match msg.find("missing field `") {
                Some(i) => {
                    let rest = &msg[i..];
                    let end = rest[15..].find('`').map_or(rest.len(), |j| j + 16);
                    format!("{} at {at}", &rest[..end])
                }
                None => format!("wrong type or value at {at}"),
            }
        }
    }
}

/// Accepts an error code as a JSON string or number (ONTAP uses both: strings in error bodies,
/// integers in jobs).
pub(crate) fn de_code<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(de_opt_code(d)?.unwrap_or_default())
}

pub(crate) fn de_opt_code<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Code {
        S(String),
        I(i64),
        U(u64),
    }
    Ok(Option::<Code>::deserialize(d)?.map(|c| match c {
        Code::S(s) => s,
        Code::I(i) => i.to_string(),
        Code::U(u) => u.to_string(),
    }))
}

/// For informational fields: a value of an unexpected shape is dropped rather than failing the
/// whole answer.
fn de_lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn storage_limit_from_9_13_1_on() {
        let version = |generation, major, minor| ClusterVersion {
            full: String::new(),
            generation,
            major,
            minor,
        };
        let knows_limit = |v: &ClusterVersion| svm_limit_fields(v) == SVM_LIMIT_FIELDS;
        assert!(!knows_limit(&version(9, 12, 1)));
        assert!(!knows_limit(&version(9, 13, 0)));
        assert!(knows_limit(&version(9, 13, 1)));
        assert!(knows_limit(&version(9, 16, 1)));
        assert!(knows_limit(&version(10, 0, 0)));
        assert_eq!(
            svm_limit_fields(&version(9, 12, 1)),
            SVM_LIMIT_FIELDS_BEFORE_9_13_1
        );
    }

    #[test]
    fn job_states_parse() {
        for (s, st) in [
            ("queued", JobState::Queued),
            ("running", JobState::Running),
            ("paused", JobState::Paused),
            ("success", JobState::Success),
            ("failure", JobState::Failure),
            ("exploded", JobState::Unknown),
        ] {
            let j: Job = serde_json::from_str(&format!(r#"{{"uuid":"u","state":"{s}"}}"#)).unwrap();
            assert_eq!(j.state, st);
            assert_eq!(st.is_terminal(), matches!(s, "success" | "failure"));
        }
    }

    #[test]
    fn job_without_state_is_an_error() {
        assert!(serde_json::from_str::<Job>(r#"{"uuid":"u"}"#).is_err());
        assert!(serde_json::from_str::<Job>(r#"{"uuid":"u","state":3}"#).is_err());
    }

    #[test]
    fn failed_job_carries_code_and_message() {
        let j: Job = serde_json::from_str(
            r#"{"uuid":"j1","state":"failure","message":"Duplicate SVM name","code":13434908,
                "description":"POST /api/svm/svms"}"#,
        )
        .unwrap();
        assert_eq!(j.code.as_deref(), Some("13434908"));
        match j.failure() {
            OntapError::JobFailed {
                job_uuid,
                code,
                message,
            } => {
                assert_eq!(job_uuid, "j1");
                assert_eq!(code, "13434908");
                assert_eq!(message, "Duplicate SVM name");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn failed_job_prefers_nested_error() {
        let j: Job = serde_json::from_str(
            r#"{"uuid":"j","state":"failure","message":"outer","code":0,
                "error":{"code":"13434894","message":"too many jobs"}}"#,
        )
        .unwrap();
        assert_eq!(j.failure().ontap_code(), Some("13434894"));
    }

    #[test]
    fn malformed_job_error_field_is_tolerated() {
        let j: Job =
            serde_json::from_str(r#"{"uuid":"j","state":"failure","code":5,"error":"oops"}"#)
                .unwrap();
        assert!(j.error.is_none());
        assert_eq!(j.failure().ontap_code(), Some("5"));
    }

    #[test]
    fn collection_requires_records() {
        assert!(serde_json::from_str::<Collection<Node>>(r#"{"num_records":0}"#).is_err());
        let c: Collection<Node> =
            serde_json::from_str(r#"{"records":[],"num_records":0}"#).unwrap();
        assert!(c.records.is_empty());
        assert!(c.next_href().is_none());
    }

    #[test]
    fn collection_next_link() {
        let c: Collection<Node> = serde_json::from_str(
            r#"{"records":[{"uuid":"a","name":"n1"}],"num_records":1,
                "_links":{"self":{"href":"/api/cluster/nodes"},
                          "next":{"href":"/api/cluster/nodes?start.uuid=a&max_records=1"}}}"#,
        )
        .unwrap();
        assert_eq!(
            c.next_href(),
            Some("/api/cluster/nodes?start.uuid=a&max_records=1")
        );
        let empty: Collection<Node> =
            serde_json::from_str(r#"{"records":[],"_links":{"next":{"href":""}}}"#).unwrap();
        assert!(empty.next_href().is_none());
    }

    #[test]
    fn next_link_must_stay_on_the_cluster() {
        let base = Url::parse("https://10.0.0.1:8443/").unwrap();
        let ok = resolve_next(&base, "/api/svm/svms?start.uuid=x").unwrap();
        assert_eq!(
            ok.as_str(),
            "https://10.0.0.1:8443/api/svm/svms?start.uuid=x"
        );
        assert!(resolve_next(&base, "https://evil.example/api/svm/svms").is_err());
        assert!(resolve_next(&base, "//evil.example/api/x").is_err());
        assert!(resolve_next(&base, "http://10.0.0.1:8443/api/x").is_err());
        assert!(resolve_next(&base, "/other/path").is_err());
    }

    #[test]
    fn decode_error_does_not_quote_values() {
        let e = decode::<Svm>(
            &Method::GET,
            "/api/svm/svms/{uuid}",
            StatusCode::OK,
            br#"{"uuid":"u","name":"s","state":{"secret":"hunter2hunter2"}}"#,
        )
        .unwrap_err();
        let s = format!("{e} {e:?}");
        assert!(!s.contains("hunter2hunter2"), "{s}");
        let e = decode::<Svm>(&Method::GET, "/x", StatusCode::OK, br#"{"name":"s"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `uuid`"), "{e}");
    }

    #[test]
    fn account_create_debug_hides_password() {
        let a = AccountCreate {
            name: "vsadmin".into(),
            owner_uuid: "o".into(),
            role: "vsadmin".into(),
            password: SecretString::from("hunter2hunter2"),
            comment: None,
            applications: Vec::new(),
        };
        assert!(!format!("{a:?}").contains("hunter2hunter2"));
        assert_eq!(a.body()["password"], "hunter2hunter2");
        assert_eq!(a.body()["owner"]["uuid"], "o");
    }

    #[test]
    fn account_patch_body_and_debug() {
        let p = AccountPatch {
            password: Some(SecretString::from("Abcdefgh1234")),
            locked: Some(false),
            comment: None,
            applications: None,
            role: None,
        };
        assert_eq!(
            p.body(),
            serde_json::json!({"password": "Abcdefgh1234", "locked": false})
        );
        let grant = AccountPatch {
            applications: Some(vec![AccountApplication {
                application: "ontapi".into(),
                authentication_methods: vec!["password".into()],
            }]),
            ..AccountPatch::default()
        };
        assert_eq!(
            grant.body(),
            serde_json::json!({"applications": [{"application": "ontapi", "authentication_methods": ["password"]}]})
        );
        let switch = AccountPatch {
            role: Some("trident".into()),
            ..AccountPatch::default()
        };
        assert_eq!(
            switch.body(),
            serde_json::json!({"role": {"name": "trident"}})
        );
        assert!(!format!("{p:?}").contains("Abcdefgh1234"));
        assert_eq!(AccountPatch::default().body(), serde_json::json!({}));
    }

    #[test]
    fn svm_patch_serializes_only_set_fields() {
        let p = SvmPatch {
            state: Some(SvmTargetState::Stopped),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"state":"stopped"})
        );
    }

    #[test]
    fn max_volumes_reads_and_writes_as_ontap_spells_it() {
        let read = |json: &str| serde_json::from_str::<MaxVolumes>(json).ok();
        assert_eq!(read(r#""unlimited""#), Some(MaxVolumes::Unlimited));
        assert_eq!(read(r#""200""#), Some(MaxVolumes::Limit(200)));
        assert_eq!(read("7"), Some(MaxVolumes::Limit(7)));
        assert_eq!(read(r#""lots""#), None);
        let patch = SvmLimitsPatch {
            max_volumes: Some(MaxVolumes::Limit(200)),
            storage: Some(SvmStorageLimit {
                limit: Some(40 << 30),
                limit_threshold_alert: None,
            }),
            qos_policy: None,
        };
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            serde_json::json!({"max_volumes": "200", "storage": {"limit": 42949672960_u64}})
        );
    }

    #[test]
    fn svm_limits_without_storage_parse() {
        let old: SvmLimits =
            serde_json::from_str(r#"{"uuid":"u","name":"n","max_volumes":"unlimited"}"#).unwrap();
        assert_eq!(old.storage, None);
        let new: SvmLimits = serde_json::from_str(
            r#"{"uuid":"u","name":"n","storage":{"limit":100,"allocated":40,"used_percentage":40}}"#,
        )
        .unwrap();
        assert_eq!(new.storage.and_then(|s| s.allocated), Some(40));
    }

    #[test]
    fn svm_unknown_state_parses() {
        let s: Svm =
            serde_json::from_str(r#"{"uuid":"u","name":"n","state":"hibernating"}"#).unwrap();
        assert_eq!(s.state, Some(SvmState::Unknown));
    }
}
