//! Layer 2 and 3 of the fake cluster that clients change: broadcast domains, VLAN ports and
//! SVM routes, all synchronous in ONTAP (201, 200).
//!
//! The physical ports stay the cluster's fixed inventory; which broadcast domain each port is
//! in is kept here, because a VLAN port joins a domain when it is created and leaves it when it
//! is deleted. Every physical port starts in `Default`, as on a fresh cluster whose ports all
//! reach one another. There is one IPspace (`Default`).
//!
//! One file because ports and broadcast domains check each other and the interfaces on every
//! change (a VLAN joins a domain, a domain refuses deletion while it has ports, a port while an
//! interface is homed on it), and routes share the SVM lookup: split, each part would reach
//! into the others' maps.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Model, Principal, cluster::Cluster, cluster::Node, svm_request::NameRef};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

/// The broadcast domain every physical port starts in.
pub const DEFAULT_DOMAIN: &str = "Default";
/// The only IPspace the mock has.
const IPSPACE: &str = "Default";
/// ONTAP's default route metric (REST reference, `POST /network/ip/routes`).
const DEFAULT_METRIC: u64 = 20;
/// The MTU of the ports of the `Default` domain.
const DEFAULT_MTU: u64 = 1500;

#[derive(Debug, Clone)]
pub struct BroadcastDomain {
    pub uuid: String,
    pub name: String,
    pub mtu: u64,
}

#[derive(Debug, Clone)]
struct Vlan {
    uuid: String,
    /// ONTAP names a VLAN port `<base port>-<tag>` (`e0c-100`).
    name: String,
    node: Node,
    base_port: String,
    tag: u64,
}

#[derive(Debug, Clone)]
struct Route {
    uuid: String,
    svm_uuid: String,
    destination: String,
    netmask: String,
    gateway: String,
    metric: u64,
}

/// Broadcast domains, VLAN ports, the domain of every port, and routes.
#[derive(Default)]
pub struct Network {
    domains: BTreeMap<String, BroadcastDomain>,
    /// The broadcast domain (uuid) of each port (uuid) that is in one.
    membership: HashMap<String, String>,
    vlans: BTreeMap<String, Vlan>,
    routes: BTreeMap<String, Route>,
}

impl Network {
    pub fn new(cluster: &Cluster) -> Self {
        let default = BroadcastDomain {
            uuid: Uuid::new_v4().to_string(),
            name: DEFAULT_DOMAIN.into(),
            mtu: DEFAULT_MTU,
        };
        let membership = cluster
            .ports
            .iter()
            .map(|p| (p.uuid.clone(), default.uuid.clone()))
            .collect();
        Self {
            domains: BTreeMap::from([(default.uuid.clone(), default)]),
            membership,
            vlans: BTreeMap::new(),
            routes: BTreeMap::new(),
        }
    }

    pub fn remove_svm(&mut self, svm_uuid: &str) {
        self.routes.retain(|_, r| r.svm_uuid != svm_uuid);
    }

    fn domain_by(&self, uuid: Option<&str>, name: Option<&str>) -> Option<&BroadcastDomain> {
        self.domains
            .values()
            .find(|d| uuid.is_none_or(|u| d.uuid == u) && name.is_none_or(|n| d.name == n))
    }
}

/// A port as placement and the port listing see it: physical or VLAN, with its domain.
#[derive(Debug, Clone)]
pub struct PortView {
    pub uuid: String,
    pub name: String,
    pub node: Node,
    /// Base port name and uuid, and the tag, of a VLAN port.
    vlan: Option<(String, String, u64)>,
    pub domain: Option<BroadcastDomain>,
}

impl PortView {
    pub fn reference(&self) -> Value {
        json!({ "name": self.name, "uuid": self.uuid, "node": { "name": self.node.name },
            "_links": { "self": { "href": format!("/api/network/ethernet/ports/{}", self.uuid) } } })
    }

    fn to_json(&self) -> Value {
        let mut record = json!({
            "uuid": self.uuid,
            "name": self.name,
            "node": self.node.reference(),
            "type": if self.vlan.is_some() { "vlan" } else { "physical" },
            "state": "up",
            "enabled": true,
            "mtu": self.domain.as_ref().map_or(DEFAULT_MTU, |d| d.mtu),
            "speed": 10000,
            "_links": { "self": { "href": format!("/api/network/ethernet/ports/{}", self.uuid) } },
        });
        if let Some(obj) = record.as_object_mut() {
            // A port in no broadcast domain (a VLAN created without one) has no such field.
            if let Some(domain) = &self.domain {
                obj.insert("broadcast_domain".into(), domain.reference());
            }
            if let Some((base, base_uuid, tag)) = &self.vlan {
                obj.insert(
                    "vlan".into(),
                    json!({ "tag": tag, "base_port": {
                        "name": base, "uuid": base_uuid, "node": { "name": self.node.name } } }),
                );
            }
        }
        record
    }
}

impl BroadcastDomain {
    fn reference(&self) -> Value {
        json!({ "name": self.name, "uuid": self.uuid, "ipspace": { "name": IPSPACE },
            "_links": { "self": { "href": format!("/api/network/ethernet/broadcast-domains/{}", self.uuid) } } })
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct DomainRef {
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub ipspace: Option<NameRef>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct BasePort {
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub node: Option<NameRef>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct VlanSpec {
    pub tag: Option<u64>,
    pub base_port: Option<BasePort>,
}

/// Body of `POST /api/network/ethernet/ports`: VLAN ports only (LAGs are not modelled).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PortCreate {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub node: Option<NameRef>,
    pub vlan: Option<VlanSpec>,
    pub broadcast_domain: Option<DomainRef>,
}

impl PortCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "type",
        "node.name",
        "node.uuid",
        // Accepted and not kept: every port of the mock is up and enabled.
        "enabled",
        "vlan.tag",
        "vlan.base_port.name",
        "vlan.base_port.uuid",
        "vlan.base_port.node.name",
        "broadcast_domain.name",
        "broadcast_domain.uuid",
        "broadcast_domain.ipspace.name",
    ];
}

/// Body of `POST /api/network/ethernet/broadcast-domains`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DomainCreate {
    pub name: Option<String>,
    pub mtu: Option<u64>,
    pub ipspace: Option<NameRef>,
}

impl DomainCreate {
    pub const FIELDS: &'static [&'static str] = &["name", "mtu", "ipspace.name", "ipspace.uuid"];
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Destination {
    pub address: Option<String>,
    pub netmask: Option<String>,
}

/// Body of `POST /api/network/ip/routes`: SVM-scoped routes.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RouteCreate {
    pub svm: Option<NameRef>,
    pub destination: Option<Destination>,
    pub gateway: Option<String>,
    pub metric: Option<u64>,
    pub ipspace: Option<NameRef>,
}

impl RouteCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "svm.name",
        "svm.uuid",
        "destination.address",
        "destination.netmask",
        "gateway",
        "metric",
        "ipspace.name",
        "ipspace.uuid",
    ];
}

impl Model {
    /// Every port, physical and VLAN, in uuid order.
    pub fn port_views(&self) -> Vec<PortView> {
        let network = &self.network;
        let domain_of = |uuid: &str| {
            network
                .membership
                .get(uuid)
                .and_then(|d| network.domains.get(d))
                .cloned()
        };
        let mut ports: Vec<PortView> = self
            .cluster
            .ports
            .iter()
            .map(|p| PortView {
                uuid: p.uuid.clone(),
                name: p.name.clone(),
                node: p.node.clone(),
                vlan: None,
                domain: domain_of(&p.uuid),
            })
            .chain(network.vlans.values().map(|v| {
                let base_uuid = self
                    .cluster
                    .port(&v.node.uuid, &v.base_port)
                    .map(|p| p.uuid.clone())
                    .unwrap_or_default();
                PortView {
                    uuid: v.uuid.clone(),
                    name: v.name.clone(),
                    node: v.node.clone(),
                    vlan: Some((v.base_port.clone(), base_uuid, v.tag)),
                    domain: domain_of(&v.uuid),
                }
            }))
            .collect();
        ports.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        ports
    }

    /// A node's ports: physical ones in configuration order, then its VLAN ports.
    pub fn ports_of_node(&self, node_uuid: &str) -> Vec<PortView> {
        let mut views: Vec<PortView> = self
            .port_views()
            .into_iter()
            .filter(|p| p.node.uuid == node_uuid)
            .collect();
        let order = |p: &PortView| {
            self.cluster
                .ports
                .iter()
                .position(|c| c.uuid == p.uuid)
                .unwrap_or(usize::MAX)
        };
        views.sort_by_key(order);
        views
    }

    /// The port of this name on this node, physical or VLAN.
    pub fn port_on(&self, node_uuid: &str, name: &str) -> Option<PortView> {
        self.port_views()
            .into_iter()
            .find(|p| p.node.uuid == node_uuid && p.name == name)
    }

    pub fn port_records(&self) -> Vec<Value> {
        self.port_views().iter().map(PortView::to_json).collect()
    }

    pub fn port_record(&self, uuid: &str) -> ApiResult<Value> {
        self.port_views()
            .iter()
            .find(|p| p.uuid == uuid)
            .map(PortView::to_json)
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    /// The broadcast domain a request names: an unknown one is `name_code` or `uuid_code`
    /// (ONTAP's codes differ per endpoint), target `at`.
    fn named_domain(
        &self,
        domain: &DomainRef,
        at: &str,
        (name_code, uuid_code): (&str, &str),
    ) -> ApiResult<BroadcastDomain> {
        if let Some(ipspace) = domain.ipspace.as_ref().and_then(|i| i.name.as_deref())
            && ipspace != IPSPACE
        {
            return Err(ApiError::bad_request(
                name_code,
                format!("Broadcast domain in IPspace \"{ipspace}\": the IPspace does not exist."),
            )
            .with_target(format!("{at}.ipspace.name")));
        }
        match (domain.name.as_deref(), domain.uuid.as_deref()) {
            (None, None) => Err(ApiError::missing_field(&format!("{at}.name"))),
            (name, uuid) => self
                .network
                .domain_by(uuid, name)
                .cloned()
                .ok_or_else(|| match name {
                    Some(name) => ApiError::bad_request(
                        name_code,
                        format!(
                            "The specified broadcast domain \"{name}\" does not exist in IPspace \"{IPSPACE}\"."
                        ),
                    )
                    .with_target(format!("{at}.name")),
                    None => ApiError::bad_request(
                        uuid_code,
                        "The specified broadcast domain UUID is not valid.",
                    )
                    .with_target(format!("{at}.uuid")),
                }),
        }
    }

    /// The broadcast domain an interface POST names (`location.broadcast_domain`).
    pub(super) fn interface_domain(&self, domain: &DomainRef) -> ApiResult<BroadcastDomain> {
        self.named_domain(
            domain,
            "location.broadcast_domain",
            (
                codes::BROADCAST_DOMAIN_NAME_INVALID,
                codes::BROADCAST_DOMAIN_UUID_INVALID,
            ),
        )
    }

    /// `POST /api/network/ethernet/ports`: a VLAN port on a physical port of the node.
    pub fn create_vlan(&mut self, req: PortCreate) -> ApiResult<(String, String)> {
        match req.kind.as_deref() {
            Some("vlan") => {}
            None => return Err(ApiError::missing_field("type")),
            Some(other) => {
                return Err(ApiError::bad_request(
                    codes::PORT_TYPE_INVALID,
                    format!("The specified type \"{other}\" is not valid."),
                )
                .with_target("type"));
            }
        }
        let node_ref = req.node.ok_or_else(|| ApiError::missing_field("node"))?;
        let node = self
            .cluster
            .node_by(node_ref.uuid.as_deref(), node_ref.name.as_deref())
            .cloned()
            .ok_or_else(|| match &node_ref.name {
                Some(name) => ApiError::bad_request(
                    codes::PORT_NODE_NAME_INVALID,
                    format!("The specified node name \"{name}\" is not valid."),
                )
                .with_target("node.name"),
                None => ApiError::bad_request(
                    codes::PORT_NODE_UUID_INVALID,
                    "The specified node UUID is not valid.",
                )
                .with_target("node.uuid"),
            })?;
        let vlan = req.vlan.ok_or_else(|| ApiError::missing_field("vlan"))?;
        let tag = vlan
            .tag
            .ok_or_else(|| ApiError::missing_field("vlan.tag"))?;
        if !(1..=4094).contains(&tag) {
            return Err(ApiError::invalid_value(
                "vlan.tag",
                format!("{tag} is not a VLAN ID from 1 to 4094"),
            ));
        }
        let base = vlan
            .base_port
            .ok_or_else(|| ApiError::missing_field("vlan.base_port"))?;
        let base_node = match base.node.as_ref() {
            Some(r) => self
                .cluster
                .node_by(r.uuid.as_deref(), r.name.as_deref())
                .cloned(),
            None => Some(node.clone()),
        };
        let base_port = base_node.as_ref().and_then(|n| {
            self.cluster.ports.iter().find(|p| {
                p.node.uuid == n.uuid
                    && base.name.as_deref().is_none_or(|b| p.name == b)
                    && base.uuid.as_deref().is_none_or(|b| p.uuid == b)
                    && (base.name.is_some() || base.uuid.is_some())
            })
        });
        let Some(base_port) = base_port.cloned() else {
            return Err(ApiError::bad_request(
                codes::VLAN_BASE_PORT_INVALID,
                "The specified VLAN base port name and node name are not valid.",
            )
            .with_target("vlan.base_port.name"));
        };
        if base_port.node.uuid != node.uuid {
            return Err(ApiError::bad_request(
                codes::VLAN_BASE_PORT_OTHER_NODE,
                "The specified node does not match the node specified for the VLAN base port.",
            )
            .with_target("node"));
        }
        let domain = req
            .broadcast_domain
            .map(|d| {
                self.named_domain(
                    &d,
                    "broadcast_domain",
                    (
                        codes::PORT_DOMAIN_NAME_INVALID,
                        codes::PORT_DOMAIN_UUID_INVALID,
                    ),
                )
            })
            .transpose()?;
        let name = format!("{}-{tag}", base_port.name);
        if self
            .network
            .vlans
            .values()
            .any(|v| v.node.uuid == node.uuid && v.name == name)
        {
            return Err(ApiError::conflict(
                codes::VLAN_EXISTS,
                format!(
                    "VLAN port \"{name}\" already exists on node \"{}\".",
                    node.name
                ),
            )
            .with_target("vlan.tag"));
        }
        let uuid = Uuid::new_v4().to_string();
        if let Some(domain) = domain {
            self.network.membership.insert(uuid.clone(), domain.uuid);
        }
        self.network.vlans.insert(
            uuid.clone(),
            Vlan {
                uuid: uuid.clone(),
                name: name.clone(),
                node,
                base_port: base_port.name,
                tag,
            },
        );
        Ok((uuid, name))
    }

    /// `DELETE /api/network/ethernet/ports/{uuid}`: VLAN ports only; not one an interface is
    /// homed on.
    pub fn delete_port(&mut self, uuid: &str) -> ApiResult<()> {
        let Some(vlan) = self.network.vlans.get(uuid) else {
            if self.cluster.ports.iter().any(|p| p.uuid == uuid) {
                return Err(ApiError::bad_request(
                    codes::PHYSICAL_PORT_DELETE,
                    "Physical ports cannot be deleted.",
                )
                .with_target("uuid"));
            }
            return Err(ApiError::not_found("uuid"));
        };
        if self.interfaces_homed_on(&vlan.node.uuid, &vlan.name) {
            return Err(ApiError::bad_request(
                codes::PORT_HOSTS_INTERFACE,
                format!(
                    "Port \"{}\" is the home port or current port of an interface.",
                    vlan.name
                ),
            )
            .with_target("uuid"));
        }
        self.network.vlans.remove(uuid);
        self.network.membership.remove(uuid);
        Ok(())
    }

    fn domain_ports(&self, domain_uuid: &str) -> Vec<PortView> {
        self.port_views()
            .into_iter()
            .filter(|p| p.domain.as_ref().is_some_and(|d| d.uuid == domain_uuid))
            .collect()
    }

    fn domain_json(&self, domain: &BroadcastDomain) -> Value {
        let ports: Vec<Value> = self
            .domain_ports(&domain.uuid)
            .iter()
            .map(PortView::reference)
            .collect();
        json!({
            "uuid": domain.uuid,
            "name": domain.name,
            "mtu": domain.mtu,
            "ipspace": self.cluster.ipspace_json(),
            "ports": ports,
            "_links": { "self": { "href": format!("/api/network/ethernet/broadcast-domains/{}", domain.uuid) } },
        })
    }

    pub fn broadcast_domain_records(&self, q: &ListQuery) -> Vec<Value> {
        self.network
            .domains
            .range(q.cursor("uuid").unwrap_or_default().to_owned()..)
            .map(|(_, d)| self.domain_json(d))
            .collect()
    }

    pub fn broadcast_domain_record(&self, uuid: &str) -> ApiResult<Value> {
        self.network
            .domains
            .get(uuid)
            .map(|d| self.domain_json(d))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn create_broadcast_domain(&mut self, req: DomainCreate) -> ApiResult<(String, String)> {
        let name = req
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?;
        let mtu = req.mtu.ok_or_else(|| ApiError::missing_field("mtu"))?;
        if mtu == 0 {
            return Err(ApiError::invalid_value("mtu", "0"));
        }
        if let Some(ipspace) = req.ipspace {
            let known = ipspace.name.as_deref().is_none_or(|n| n == IPSPACE)
                && ipspace
                    .uuid
                    .as_deref()
                    .is_none_or(|u| u == self.cluster.ipspace_uuid);
            if !known {
                return Err(ApiError::bad_request(
                    codes::IPSPACE_NOT_FOUND,
                    "The specified IPspace does not exist.",
                )
                .with_target("ipspace"));
            }
        }
        if self.network.domain_by(None, Some(&name)).is_some() {
            return Err(ApiError::conflict(
                codes::BROADCAST_DOMAIN_EXISTS,
                format!("Broadcast domain \"{name}\" already exists in IPspace \"{IPSPACE}\"."),
            )
            .with_target("name"));
        }
        let uuid = Uuid::new_v4().to_string();
        self.network.domains.insert(
            uuid.clone(),
            BroadcastDomain {
                uuid: uuid.clone(),
                name: name.clone(),
                mtu,
            },
        );
        Ok((uuid, name))
    }

    pub fn delete_broadcast_domain(&mut self, uuid: &str) -> ApiResult<()> {
        if !self.network.domains.contains_key(uuid) {
            return Err(ApiError::not_found("uuid"));
        }
        if !self.domain_ports(uuid).is_empty() {
            return Err(ApiError::bad_request(
                codes::BROADCAST_DOMAIN_HAS_PORTS,
                "A broadcast domain with ports cannot be deleted.",
            )
            .with_target("uuid"));
        }
        self.network.domains.remove(uuid);
        Ok(())
    }

    fn route_json(&self, route: &Route) -> Value {
        let family = if route.gateway.contains(':') {
            "ipv6"
        } else {
            "ipv4"
        };
        json!({
            "uuid": route.uuid,
            "destination": { "address": route.destination, "netmask": route.netmask, "family": family },
            "gateway": route.gateway,
            "metric": route.metric,
            "scope": "svm",
            "svm": self.svm(&route.svm_uuid).map(|s| s.reference()).unwrap_or_else(|| json!({ "uuid": route.svm_uuid })),
            "ipspace": self.cluster.ipspace_json(),
            "_links": { "self": { "href": format!("/api/network/ip/routes/{}", route.uuid) } },
        })
    }

    /// The routes the principal may see (an SVM account: its SVM's), in uuid order.
    pub fn route_records(&self, who: &Principal, q: &ListQuery) -> Vec<Value> {
        self.network
            .routes
            .range(q.cursor("uuid").unwrap_or_default().to_owned()..)
            .filter(|(_, r)| who.may_see(&r.svm_uuid))
            .map(|(_, r)| self.route_json(r))
            .collect()
    }

    pub fn route_record(&self, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.network
            .routes
            .get(uuid)
            .filter(|r| who.may_see(&r.svm_uuid))
            .map(|r| self.route_json(r))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    /// `POST /api/network/ip/routes` for an SVM: the destination defaults to the default
    /// route of the gateway's family, the metric to 20.
    pub fn create_route(&mut self, req: RouteCreate) -> ApiResult<String> {
        let svm_ref = req.svm.ok_or_else(|| ApiError::missing_field("svm"))?;
        let svm_uuid = self.route_svm(&svm_ref)?;
        if let Some(ipspace) = req.ipspace.as_ref().and_then(|i| i.name.as_deref())
            && ipspace != IPSPACE
        {
            return Err(ApiError::bad_request(
                codes::IPSPACE_NOT_FOUND,
                "The specified SVM must exist in the specified IPspace.",
            )
            .with_target("ipspace.name"));
        }
        let gateway_text = req
            .gateway
            .ok_or_else(|| ApiError::missing_field("gateway"))?;
        let gateway: IpAddr = gateway_text
            .parse()
            .map_err(|_| ApiError::invalid_value("gateway", &gateway_text))?;
        let destination = req.destination.unwrap_or_default();
        let default_address = if gateway.is_ipv4() { "0.0.0.0" } else { "::" };
        let address_text = destination
            .address
            .unwrap_or_else(|| default_address.into());
        let address: IpAddr = address_text
            .parse()
            .map_err(|_| ApiError::invalid_value("destination.address", &address_text))?;
        if address.is_ipv4() != gateway.is_ipv4() {
            return Err(ApiError::invalid_value(
                "destination.address",
                "the destination and the gateway are of different address families",
            ));
        }
        let netmask = destination.netmask.unwrap_or_else(|| "0".into());
        let prefix = super::interface::prefix_length(&netmask, address.is_ipv4())
            .map_err(|_| ApiError::invalid_value("destination.netmask", &netmask))?;
        let route = Route {
            uuid: Uuid::new_v4().to_string(),
            svm_uuid,
            destination: address.to_string(),
            netmask: prefix.to_string(),
            gateway: gateway.to_string(),
            metric: req.metric.unwrap_or(DEFAULT_METRIC),
        };
        if self.network.routes.values().any(|r| {
            r.svm_uuid == route.svm_uuid
                && r.destination == route.destination
                && r.netmask == route.netmask
                && r.gateway == route.gateway
        }) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ROUTE,
                "Duplicate route exists.",
            ));
        }
        let uuid = route.uuid.clone();
        self.network.routes.insert(uuid.clone(), route);
        Ok(uuid)
    }

    /// The SVM of a route: ONTAP answers an unknown `svm.name` with 1967146 and an unknown
    /// `svm.uuid` with the generic 2 (its table for `POST /network/ip/routes`).
    fn route_svm(&self, svm: &NameRef) -> ApiResult<String> {
        if let Some(name) = &svm.name
            && self.svms.uuid_of(name).is_none()
        {
            return Err(ApiError::bad_request(
                codes::SVM_NAME_NOT_FOUND,
                format!("The specified svm.name \"{name}\" is not valid."),
            )
            .with_target("svm.name"));
        }
        if let Some(uuid) = &svm.uuid
            && self.svms.get(uuid).is_none()
        {
            return Err(ApiError::bad_request(
                codes::ROUTE_SVM_UUID_INVALID,
                format!("The specified svm.uuid \"{uuid}\" is not valid."),
            )
            .with_target("svm.uuid"));
        }
        Ok(self
            .usable_svm(svm.uuid.as_deref(), svm.name.as_deref())?
            .uuid
            .clone())
    }

    pub fn delete_route(&mut self, uuid: &str) -> ApiResult<()> {
        self.network
            .routes
            .remove(uuid)
            .map(|_| ())
            .ok_or_else(|| ApiError::not_found("uuid"))
    }
}
