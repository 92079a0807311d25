//! IP interfaces (LIFs) of SVMs; created synchronously. IP addresses are unique cluster-wide
//! (there is only the Default IPspace) and names unique per SVM.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Model, Principal, Row, indexed, narrowest, network::DomainRef, single, svm_request::NameRef,
};
use crate::error::{ApiError, ApiResult};
use crate::query::ListQuery;

/// The built-in service policies of a data SVM the mock knows, with the `services` ONTAP derives
/// from each (REST spells services with underscores: `data_nfs`, CLI `data-nfs`).
/// `default-data-files` is as netapp-ontap's `IpServicePolicy` example shows it; the others keep
/// `data_core` plus the one data service their name stands for, as far as NetApp's material shows
/// it (see README, "not confirmed").
const SERVICE_POLICIES: &[(&str, &[&str])] = &[
    (
        "default-data-files",
        &["data_core", "data_nfs", "data_cifs", "data_flexcache"],
    ),
    ("default-data-blocks", &["data_core", "data_iscsi"]),
    ("default-data-iscsi", &["data_core", "data_iscsi"]),
    ("default-data-nvme-tcp", &["data_core", "data_nvme_tcp"]),
    (
        "default-management",
        &["data_core", "management_https", "management_ssh"],
    ),
];

/// The services of a known service policy.
fn services_of(policy: &str) -> Option<&'static [&'static str]> {
    SERVICE_POLICIES
        .iter()
        .find(|(name, _)| *name == policy)
        .map(|(_, services)| *services)
}

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
    pub broadcast_domain: Option<DomainRef>,
    pub auto_revert: Option<bool>,
    // `is_home: true` (revert to the home port) is accepted and changes nothing: the mock's
    // interfaces never leave home.
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
        "location.broadcast_domain.name",
        "location.broadcast_domain.uuid",
        "location.auto_revert",
        "service_policy.name",
        "ipspace.name",
        "vip",
    ];
}

/// Body of `PATCH /api/network/ip/interfaces/{uuid}`: what netapp-ontap's `IpInterface` lists as
/// patchable and the mock models.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct InterfacePatch {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub ip: Option<IpSpec>,
    pub location: Option<Location>,
    pub service_policy: Option<NameRef>,
}

impl InterfacePatch {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "enabled",
        "ip.address",
        "ip.netmask",
        "location.home_node.uuid",
        "location.home_node.name",
        "location.home_port.name",
        "location.home_port.node.name",
        "location.auto_revert",
        "location.is_home",
        "service_policy.name",
    ];

    /// Readable, but set only at creation (netapp-ontap: postable, not patchable).
    pub const NOT_PATCHABLE: &'static [&'static str] = &[
        "svm",
        "vip",
        "scope",
        "ipspace",
        "location.broadcast_domain",
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
    pub auto_revert: bool,
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

/// A copy of an interface with what its JSON needs: its SVM, node and port as references and
/// the broadcast domain of its port.
pub struct InterfaceRow {
    interface: Interface,
    svm: Value,
    node: Value,
    port: Value,
    domain: Option<String>,
}

impl Row for InterfaceRow {
    fn to_json(&self) -> Value {
        self.interface.to_json(self)
    }
}

impl Interface {
    fn to_json(&self, row: &InterfaceRow) -> Value {
        let InterfaceRow {
            svm,
            node,
            port,
            domain,
            ..
        } = row;
        let family = if self.ip.contains(':') {
            "ipv6"
        } else {
            "ipv4"
        };
        let mut interface = json!({
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
                "is_home": true, "auto_revert": self.auto_revert,
                "broadcast_domain": { "name": domain },
            },
            "service_policy": { "name": self.service_policy },
            "services": services_of(&self.service_policy).unwrap_or_default(),
            "vip": self.vip,
            "_links": { "self": { "href": format!("/api/network/ip/interfaces/{}", self.uuid) } },
        });
        // A VIP port is in no broadcast domain.
        if let (true, Some(location)) =
            (self.vip || domain.is_none(), interface.get_mut("location"))
            && let Some(obj) = location.as_object_mut()
        {
            obj.remove("broadcast_domain");
        }
        interface
    }
}

impl Model {
    fn interface_row(&self, interface: &Interface) -> InterfaceRow {
        let home = self.port_on(&interface.node_uuid, &interface.port);
        InterfaceRow {
            interface: interface.clone(),
            svm: self
                .svm(&interface.svm_uuid)
                .map(|s| s.reference())
                .unwrap_or_else(|| json!({ "uuid": interface.svm_uuid })),
            node: self
                .cluster
                .node_by(Some(&interface.node_uuid), None)
                .map(|n| n.reference())
                .unwrap_or_else(|| json!({ "uuid": interface.node_uuid })),
            port: home
                .as_ref()
                .map(|p| json!({ "name": p.name, "uuid": p.uuid, "node": { "name": p.node.name } }))
                .unwrap_or_else(|| json!({ "name": interface.port })),
            domain: home.and_then(|p| p.domain).map(|d| d.name),
        }
    }

    /// Whether an interface is homed on this port (none ever leaves home).
    pub(super) fn interfaces_homed_on(&self, node_uuid: &str, port: &str) -> bool {
        self.interfaces
            .by_uuid
            .values()
            .any(|i| !i.vip && i.node_uuid == node_uuid && i.port == port)
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

    pub fn delete_interface(&mut self, who: &Principal, uuid: &str) -> ApiResult<()> {
        match self.interfaces.by_uuid.get(uuid) {
            Some(i) if who.may_see(&i.svm_uuid) => {
                self.interfaces.remove(uuid);
                Ok(())
            }
            _ => Err(ApiError::not_found("uuid")),
        }
    }
}

mod change;

pub(super) use change::prefix_length;
