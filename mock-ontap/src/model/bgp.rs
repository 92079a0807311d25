//! BGP peer groups (ONTAP 9.7+), which announce the SVMs' VIP interfaces to peer routers.
//!
//! The mock keeps only what a client reads and what makes VIP interfaces possible: a peer group
//! names its peer router and the BGP interface it peers from. That interface is cluster-scoped
//! and the mock has no cluster-scoped interfaces, so a peer group is created only in ONTAP's
//! "new local interface" form (`local.ip` and `local.port`), and the interface lives inside the
//! peer group.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Model, Row, svm_request::NameRef};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LocalIp {
    pub address: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LocalPort {
    pub name: Option<String>,
    pub node: Option<NameRef>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LocalInterface {
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Local {
    pub interface: Option<LocalInterface>,
    pub ip: Option<LocalIp>,
    pub port: Option<LocalPort>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Peer {
    pub address: Option<String>,
    pub asn: Option<u64>,
}

/// Body of `POST /api/network/ip/bgp/peer-groups`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PeerGroupCreate {
    pub name: Option<String>,
    pub local: Option<Local>,
    pub peer: Option<Peer>,
}

impl PeerGroupCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "ipspace.name",
        "local.interface.name",
        "local.ip.address",
        "local.ip.netmask",
        "local.port.name",
        "local.port.node.name",
        "peer.address",
        "peer.asn",
    ];
}

#[derive(Debug, Clone)]
pub struct PeerGroup {
    pub uuid: String,
    pub name: String,
    pub interface_name: String,
    pub interface_uuid: String,
    pub local_ip: String,
    pub port: String,
    pub node: String,
    pub peer_address: String,
    pub peer_asn: u64,
}

/// Peer groups by uuid.
#[derive(Default)]
pub struct PeerGroups {
    by_uuid: BTreeMap<String, PeerGroup>,
}

impl PeerGroups {
    pub fn is_empty(&self) -> bool {
        self.by_uuid.is_empty()
    }
}

pub struct PeerGroupRow(PeerGroup);

impl Row for PeerGroupRow {
    fn to_json(&self) -> Value {
        let g = &self.0;
        json!({
            "uuid": g.uuid,
            "name": g.name,
            "ipspace": { "name": "Default" },
            "local": {
                "interface": {
                    "name": g.interface_name,
                    "uuid": g.interface_uuid,
                    "ip": { "address": g.local_ip },
                },
                "port": { "name": g.port, "node": { "name": g.node } },
            },
            "peer": { "address": g.peer_address, "asn": g.peer_asn },
            "state": "up",
            "_links": { "self": { "href": format!("/api/network/ip/bgp/peer-groups/{}", g.uuid) } },
        })
    }
}

impl Model {
    /// Every peer group from the paging cursor on, in uuid order.
    pub fn peer_group_rows(&self, q: &ListQuery) -> Vec<PeerGroupRow> {
        self.peer_groups
            .by_uuid
            .range(q.cursor("uuid").unwrap_or_default().to_owned()..)
            .map(|(_, g)| PeerGroupRow(g.clone()))
            .collect()
    }

    pub fn peer_group_json(&self, uuid: &str) -> ApiResult<Value> {
        self.peer_groups
            .by_uuid
            .get(uuid)
            .map(|g| PeerGroupRow(g.clone()).to_json())
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn create_peer_group(&mut self, req: PeerGroupCreate) -> ApiResult<(String, String)> {
        let name = req
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?;
        let peer = req.peer.unwrap_or_default();
        let peer_address = peer
            .address
            .ok_or_else(|| ApiError::missing_field("peer.address"))?;
        peer_address
            .parse::<IpAddr>()
            .map_err(|_| ApiError::invalid_value("peer.address", &peer_address))?;
        let local = req.local.unwrap_or_default();
        let local_ip = local
            .ip
            .and_then(|ip| ip.address)
            .ok_or_else(|| ApiError::missing_field("local.ip.address"))?;
        let local_ip: IpAddr = local_ip
            .parse()
            .map_err(|_| ApiError::invalid_value("local.ip.address", &local_ip))?;
        let port = local.port.unwrap_or_default();
        let port_name = port
            .name
            .ok_or_else(|| ApiError::missing_field("local.port.name"))?;
        let node_ref = port
            .node
            .ok_or_else(|| ApiError::missing_field("local.port.node.name"))?;
        let node = self
            .cluster
            .node_by(node_ref.uuid.as_deref(), node_ref.name.as_deref())
            .ok_or_else(|| ApiError::invalid_value("local.port.node.name", "no such node"))?;
        let port = self.cluster.port(&node.uuid, &port_name).ok_or_else(|| {
            ApiError::invalid_value(
                "local.port.name",
                format!("port {port_name} does not exist on node {}", node.name),
            )
        })?;
        if self.peer_groups.by_uuid.values().any(|g| g.name == name) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ENTRY,
                format!("A BGP peer group named \"{name}\" already exists."),
            )
            .with_target("name"));
        }
        let uuid = Uuid::new_v4().to_string();
        let group = PeerGroup {
            uuid: uuid.clone(),
            name: name.clone(),
            interface_name: local
                .interface
                .and_then(|i| i.name)
                .unwrap_or_else(|| format!("{name}_bgp_lif")),
            interface_uuid: Uuid::new_v4().to_string(),
            local_ip: local_ip.to_string(),
            port: port.name.clone(),
            node: node.name.clone(),
            peer_address,
            // ONTAP's default is the local node's ASN; the mock's nodes all use 65501.
            peer_asn: peer.asn.unwrap_or(65501),
        };
        self.peer_groups.by_uuid.insert(uuid.clone(), group);
        Ok((uuid, name))
    }

    pub fn delete_peer_group(&mut self, uuid: &str) -> ApiResult<()> {
        self.peer_groups
            .by_uuid
            .remove(uuid)
            .map(|_| ())
            .ok_or_else(|| ApiError::not_found("uuid"))
    }
}
