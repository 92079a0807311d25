//! IP interfaces (LIFs) of SVMs; created synchronously. IP addresses are unique cluster-wide
//! (there is only the Default IPspace) and names unique per SVM.

use std::net::IpAddr;

use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Model, Principal, svm::NameRef};
use crate::error::{ApiError, ApiResult, codes};

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
}

impl Interface {
    pub fn to_json(&self, model: &Model) -> Value {
        let svm = model
            .svm(&self.svm_uuid)
            .map(|s| s.reference())
            .unwrap_or_else(|| json!({ "uuid": self.svm_uuid }));
        let node = model
            .cluster
            .node_by(Some(&self.node_uuid), None)
            .map(|n| n.reference())
            .unwrap_or_else(|| json!({ "uuid": self.node_uuid }));
        let port = model
            .cluster
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
            "_links": { "self": { "href": format!("/api/network/ip/interfaces/{}", self.uuid) } },
        })
    }
}

impl Model {
    pub fn interfaces_json(&self, who: &Principal) -> Vec<Value> {
        self.interfaces
            .values()
            .filter(|i| who.may_see(&i.svm_uuid))
            .map(|i| i.to_json(self))
            .collect()
    }

    pub fn interface_json(&self, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.interfaces
            .get(uuid)
            .filter(|i| who.may_see(&i.svm_uuid))
            .map(|i| i.to_json(self))
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
        let port = match location.home_port.and_then(|p| p.name) {
            Some(port) => self.cluster.port(&node.uuid, &port).ok_or_else(|| {
                no_port(&format!("port {port} does not exist on node {}", node.name))
            })?,
            None => self
                .cluster
                .ports
                .iter()
                .find(|p| p.node.uuid == node.uuid)
                .ok_or_else(|| no_port(&format!("node {} has no ports", node.name)))?,
        };
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
        if self.interface_ips.contains_key(&canonical_ip) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_IP,
                format!("Duplicate IP address {canonical_ip}."),
            )
            .with_target("ip.address"));
        }
        if self
            .interfaces
            .values()
            .any(|i| i.svm_uuid == svm_uuid && i.name == name)
        {
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
            ip: canonical_ip.clone(),
            netmask,
            node_uuid: node.uuid.clone(),
            port: port.name.clone(),
            service_policy,
            enabled: req.enabled.unwrap_or(true),
        };
        self.interface_ips.insert(canonical_ip, uuid.clone());
        self.interfaces.insert(uuid.clone(), interface);
        Ok((uuid, name))
    }

    pub fn delete_interface(&mut self, who: &Principal, uuid: &str) -> ApiResult<()> {
        match self.interfaces.get(uuid) {
            Some(i) if who.may_see(&i.svm_uuid) => {
                if let Some(i) = self.interfaces.remove(uuid) {
                    self.interface_ips.remove(&i.ip);
                }
                Ok(())
            }
            _ => Err(ApiError::not_found("uuid")),
        }
    }
}

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
