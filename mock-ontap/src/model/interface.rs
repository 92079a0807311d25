//! IP interfaces (LIFs) of SVMs; created synchronously. IP addresses are unique cluster-wide
//! (there is only the Default IPspace) and names unique per SVM.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    Model, Principal, Row, cluster::Cluster, indexed, narrowest, single, svm_request::NameRef,
};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

const SERVICE_POLICIES: &[&str] = &[
    "default-data-files",
    "default-data-blocks",
    "default-data-iscsi",
    "default-data-nvme-tcp",
    "default-management",
];

#[derive(Debug, Clone, Default, Deserialize)]
pub struct IpSpec {
    pub address: Option<String>,
    pub netmask: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PortRef {
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Location {
    pub home_node: Option<NameRef>,
    pub home_port: Option<PortRef>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct InterfaceCreate {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub svm: Option<NameRef>,
    pub ip: Option<IpSpec>,
    pub location: Option<Location>,
    pub service_policy: Option<NameRef>,
    pub vip: Option<bool>,
}

impl InterfaceCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "enabled",
        "scope",
        "svm.uuid",
        "svm.name",
        "ip.address",
        "ip.netmask",
        "location.home_node.uuid",
        "location.home_node.name",
        "location.home_port.name",
        "location.home_port.node.name",
        "location.auto_revert",
        "service_policy.name",
        "ipspace.name",
        "vip",
    ];
}

#[derive(Debug, Clone)]
pub struct Interface {
    pub uuid: String,
    pub name: String,
    pub svm_uuid: String,
    pub ip: String,
    pub netmask: String,
    pub node_uuid: String,
    pub port: String,
    pub service_policy: String,
    pub enabled: bool,
    /// Announced through BGP from a VIP port rather than homed on an ethernet port.
    pub vip: bool,
}

/// Interfaces by uuid, with indexes on IP address, SVM and name kept in step by every change.
#[derive(Default)]
pub struct Interfaces {
    by_uuid: BTreeMap<String, Interface>,
    by_ip: HashMap<String, String>,
    by_svm: HashMap<String, BTreeSet<String>>,
    by_name: HashMap<String, BTreeSet<String>>,
}

impl Interfaces {
    fn insert(&mut self, interface: Interface) {
        let uuid = &interface.uuid;
        self.by_ip.insert(interface.ip.clone(), uuid.clone());
        for (index, key) in [
            (&mut self.by_svm, &interface.svm_uuid),
            (&mut self.by_name, &interface.name),
        ] {
            index.entry(key.clone()).or_default().insert(uuid.clone());
        }
        self.by_uuid.insert(uuid.clone(), interface);
    }

    fn remove(&mut self, uuid: &str) -> Option<Interface> {
        let interface = self.by_uuid.remove(uuid)?;
        self.by_ip.remove(&interface.ip);
        for (index, key) in [
            (&mut self.by_svm, &interface.svm_uuid),
            (&mut self.by_name, &interface.name),
        ] {
            if let Some(uuids) = index.get_mut(key) {
                uuids.remove(uuid);
                if uuids.is_empty() {
                    index.remove(key);
                }
            }
        }
        Some(interface)
    }

    pub fn remove_svm(&mut self, svm_uuid: &str) {
        let uuids: Vec<String> = self
            .by_svm
            .get(svm_uuid)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        for uuid in uuids {
            self.remove(&uuid);
        }
    }

    fn of_svm<'a>(&'a self, svm_uuid: &str) -> impl Iterator<Item = &'a Interface> {
        self.by_svm
            .get(svm_uuid)
            .into_iter()
            .flatten()
            .filter_map(|uuid| self.by_uuid.get(uuid))
    }
}

/// A copy of an interface with what its JSON needs.
pub struct InterfaceRow {
    interface: Interface,
    svm: Value,
    cluster: Arc<Cluster>,
}

impl Row for InterfaceRow {
    fn to_json(&self) -> Value {
        let InterfaceRow {
            interface,
            svm,
            cluster,
        } = self;
        interface.to_json(svm.clone(), cluster)
    }
}

impl Interface {
    fn to_json(&self, svm: Value, cluster: &Cluster) -> Value {
        let node = cluster
            .node_by(Some(&self.node_uuid), None)
            .map(|n| n.reference())
            .unwrap_or_else(|| json!({ "uuid": self.node_uuid }));
        let port = cluster
            .port(&self.node_uuid, &self.port)
            .map(|p| json!({ "name": p.name, "uuid": p.uuid, "node": { "name": p.node.name } }))
            .unwrap_or_else(|| json!({ "name": self.port }));
        let family = if self.ip.contains(':') {
            "ipv6"
        } else {
            "ipv4"
        };
        json!({
            "uuid": self.uuid,
            "name": self.name,
            "enabled": self.enabled,
            "state": if self.enabled { "up" } else { "down" },
            "scope": "svm",
            "ip": { "address": self.ip, "netmask": self.netmask, "family": family },
            "svm": svm,
            "ipspace": { "name": "Default" },
            "location": {
                "home_node": node, "home_port": port,
                "node": node, "port": port,
                "is_home": true, "auto_revert": false,
            },
            "service_policy": { "name": self.service_policy },
            "vip": self.vip,
            "_links": { "self": { "href": format!("/api/network/ip/interfaces/{}", self.uuid) } },
        })
    }
}

impl Model {
    fn interface_row(&self, interface: &Interface) -> InterfaceRow {
        InterfaceRow {
            interface: interface.clone(),
            svm: self
                .svm(&interface.svm_uuid)
                .map(|s| s.reference())
                .unwrap_or_else(|| json!({ "uuid": interface.svm_uuid })),
            cluster: self.cluster.clone(),
        }
    }

    /// The interfaces the principal may see that can match the query, in uuid order: through
    /// the narrowest of the uuid, IP address, SVM and name indexes the query pins, else from
    /// the paging cursor on.
    pub fn interface_rows(&self, who: &Principal, q: &ListQuery) -> Vec<InterfaceRow> {
        let index = &self.interfaces;
        let svm = who.svm_scope().or(q.exact("svm.uuid")).or_else(|| {
            q.exact("svm.name")
                .map(|n| self.svms.uuid_of(n).unwrap_or_default())
        });
        let pinned = narrowest([
            q.exact("uuid").map(|u| single(Some(u))),
            q.exact("ip.address")
                .map(|ip| single(index.by_ip.get(ip).map(String::as_str))),
            indexed(&index.by_svm, svm),
            indexed(&index.by_name, q.exact("name")),
        ]);
        let candidates: Vec<&Interface> = match &pinned {
            Some(uuids) => uuids.iter().filter_map(|u| index.by_uuid.get(u)).collect(),
            None => index
                .by_uuid
                .range(q.cursor("uuid").unwrap_or_default().to_owned()..)
                .map(|(_, i)| i)
                .collect(),
        };
        candidates
            .into_iter()
            .filter(|i| who.may_see(&i.svm_uuid))
            .map(|i| self.interface_row(i))
            .collect()
    }

    pub fn interface_json(&self, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.interfaces
            .by_uuid
            .get(uuid)
            .filter(|i| who.may_see(&i.svm_uuid))
            .map(|i| self.interface_row(i).to_json())
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn create_interface(&mut self, req: InterfaceCreate) -> ApiResult<(String, String)> {
        let name = req
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?;
        let svm_ref = req.svm.ok_or_else(|| ApiError::missing_field("svm"))?;
        let svm_uuid = self
            .usable_svm(svm_ref.uuid.as_deref(), svm_ref.name.as_deref())?
            .uuid
            .clone();
        let ip = req.ip.unwrap_or_default();
        let address = ip
            .address
            .ok_or_else(|| ApiError::missing_field("ip.address"))?;
        let netmask = ip
            .netmask
            .ok_or_else(|| ApiError::missing_field("ip.netmask"))?;
        let parsed: IpAddr = address
            .parse()
            .map_err(|_| ApiError::invalid_value("ip.address", &address))?;
        validate_netmask(&netmask, parsed.is_ipv4())?;
        let location = req.location.unwrap_or_default();
        let vip = req.vip.unwrap_or(false);
        if vip {
            self.check_vip(&netmask, parsed, &location)?;
        }
        let (node_uuid, port) = self.place(location, vip)?;
        let service_policy = req
            .service_policy
            .and_then(|p| p.name)
            .unwrap_or_else(|| "default-data-files".into());
        if !SERVICE_POLICIES.contains(&service_policy.as_str()) {
            return Err(ApiError::invalid_value(
                "service_policy.name",
                &service_policy,
            ));
        }
        let canonical_ip = parsed.to_string();
        if self.interfaces.by_ip.contains_key(&canonical_ip) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_IP,
                format!("Duplicate IP address {canonical_ip}."),
            )
            .with_target("ip.address"));
        }
        if self.interfaces.of_svm(&svm_uuid).any(|i| i.name == name) {
            return Err(ApiError::conflict(
                codes::LIF_NAME_EXISTS,
                format!("An interface with the name \"{name}\" already exists in this SVM."),
            )
            .with_target("name"));
        }
        let uuid = Uuid::new_v4().to_string();
        let interface = Interface {
            uuid: uuid.clone(),
            name: name.clone(),
            svm_uuid,
            ip: canonical_ip,
            netmask,
            node_uuid,
            port,
            service_policy,
            enabled: req.enabled.unwrap_or(true),
            vip,
        };
        self.interfaces.insert(interface);
        Ok((uuid, name))
    }

    /// The home node and port of a new interface: the ones named, else the first node and its
    /// first port; a VIP interface lives on the node's VIP port.
    fn place(&self, location: Location, vip: bool) -> ApiResult<(String, String)> {
        let node = match location.home_node {
            Some(r) => self
                .cluster
                .node_by(r.uuid.as_deref(), r.name.as_deref())
                .ok_or_else(|| ApiError::invalid_value("location.home_node", "no such node"))?,
            None => self
                .cluster
                .nodes
                .first()
                .ok_or_else(|| no_port("the cluster has no nodes"))?,
        };
        let port = if vip {
            // ONTAP picks the node's VIP port, which is in no broadcast domain of the mock.
            VIP_PORT.to_string()
        } else {
            match location.home_port.and_then(|p| p.name) {
                Some(port) => self.cluster.port(&node.uuid, &port).ok_or_else(|| {
                    no_port(&format!("port {port} does not exist on node {}", node.name))
                })?,
                None => self
                    .cluster
                    .ports
                    .iter()
                    .find(|p| p.node.uuid == node.uuid)
                    .ok_or_else(|| no_port(&format!("node {} has no ports", node.name)))?,
            }
            .name
            .clone()
        };
        Ok((node.uuid.clone(), port))
    }

    pub fn delete_interface(&mut self, who: &Principal, uuid: &str) -> ApiResult<()> {
        match self.interfaces.by_uuid.get(uuid) {
            Some(i) if who.may_see(&i.svm_uuid) => {
                self.interfaces.remove(uuid);
                Ok(())
            }
            _ => Err(ApiError::not_found("uuid")),
        }
    }

    /// What ONTAP asks of a VIP interface: it is in no subnet, so its mask covers the address
    /// alone and ONTAP cannot place it by subnet (a home node is named); it lives on a VIP port,
    /// never an ethernet one; and only a BGP peer group makes that port reachable.
    fn check_vip(&self, netmask: &str, address: IpAddr, location: &Location) -> ApiResult<()> {
        let full = if address.is_ipv4() { 32 } else { 128 };
        let host_route = netmask.parse::<u8>() == Ok(full)
            || (address.is_ipv4() && netmask == "255.255.255.255");
        if !host_route {
            return Err(ApiError::invalid_value(
                "ip.netmask",
                format!("a VIP interface is in no subnet: its netmask must be /{full}"),
            ));
        }
        if location.home_port.is_some() {
            return Err(ApiError::invalid_value(
                "location.home_port",
                "a VIP interface is homed on a VIP port, not an ethernet port",
            ));
        }
        if location.home_node.is_none() {
            return Err(ApiError::missing_field("location.home_node"));
        }
        if self.peer_groups.is_empty() {
            return Err(no_port(
                "no BGP peer group announces VIP interfaces in this IPspace",
            ));
        }
        Ok(())
    }
}

/// The VIP port ONTAP creates on a node for its IPspace.
const VIP_PORT: &str = "v0a";

fn no_port(detail: &str) -> ApiError {
    ApiError::bad_request(
        codes::NO_SUITABLE_PORT,
        format!("Failed to find a suitable port for the interface: {detail}."),
    )
    .with_target("location.home_port")
}

/// Accepts a prefix length (`24`) or, for IPv4, a dotted mask (`255.255.255.0`).
fn validate_netmask(netmask: &str, ipv4: bool) -> ApiResult<()> {
    let max = if ipv4 { 32 } else { 128 };
    let ok = match netmask.parse::<u8>() {
        Ok(prefix) => prefix <= max,
        Err(_) => {
            ipv4 && netmask.parse::<std::net::Ipv4Addr>().is_ok_and(|m| {
                let bits = u32::from(m);
                bits.leading_ones() + bits.trailing_zeros() == 32
            })
        }
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_value("ip.netmask", netmask))
    }
}
