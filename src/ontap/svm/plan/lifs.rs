//! The LIF plan: the LIFs the spec of an `Owned` object asks for ([`desired_lifs`]) and the
//! changes that bring an SVM's interfaces to them ([`plan_lifs`]).
//!
//! It takes the object and the interfaces ONTAP reported, and returns the typed request bodies
//! of [`ontap_client`]. Admission already rejects malformed addresses; they are checked again
//! here so an object that slipped past it (a CRD installed without its validations) becomes a
//! [`DesiredError`] the controller reports as a condition, not a request ONTAP refuses over and
//! over.

use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;

use super::DesiredError;
use crate::api::rules::{lif_placement, lif_protocols};
use crate::api::{LifSpec, Protocol, StorageVirtualMachine};
use crate::ontap::svm::netmask::{max_prefix, netmask_for, prefix_from_netmask};
use ontap_client::{
    InterfaceLocation, IpInfo, IpInterface, IpInterfaceCreate, IpInterfacePatch, ObjectRef,
};

/// Service policy of the management LIF.
pub const MANAGEMENT_SERVICE_POLICY: &str = "default-management";

/// The service policy of a data LIF serving `protocol`: ONTAP's default policy whose services
/// (`data_nfs`, `data_iscsi`, `data_nvme_tcp`) are what Trident looks a protocol's LIFs up by.
/// An SVM enabling no protocol (`None`) gets `default-data-files`, as ONTAP gives a new LIF.
pub fn data_service_policy(protocol: Option<Protocol>) -> &'static str {
    match protocol {
        Some(Protocol::Nvme) => "default-data-nvme-tcp",
        Some(Protocol::Iscsi) => "default-data-blocks",
        Some(Protocol::Nfs) | None => "default-data-files",
    }
}

/// What a LIF is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LifRole {
    Management,
    Data,
}

/// One LIF as the spec wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredLif {
    /// Preferred interface name: `mgmt`, `data1`, `data2`… by position in the spec. The plan may
    /// pick another free name when this one is held by an interface that stays.
    pub name: String,
    /// Where the spec writes it (`spec.managementLif`, `spec.dataLifs[1]`): what a condition
    /// about one of its fields names.
    pub field: String,
    pub role: LifRole,
    pub address: IpAddr,
    pub prefix_length: u8,
    pub home_node: Option<String>,
    pub home_port: Option<String>,
    /// Where ONTAP places the LIF when it creates it; never compared (ONTAP does not report it).
    pub broadcast_domain: Option<String>,
    /// The spec's own, else the default of the LIF's role and protocol.
    pub service_policy: String,
    pub vip: bool,
    /// Position among the LIFs of its role: which node a VIP LIF without a home node gets.
    pub ordinal: usize,
}

impl DesiredLif {
    /// A VIP LIF the spec gives no node: ONTAP cannot place it by subnet, so the operator must.
    pub fn needs_home_node(&self) -> bool {
        self.vip && self.home_node.is_none()
    }

    /// The `POST /api/network/ip/interfaces` body creating this LIF as `name` in the SVM
    /// `svm_uuid`.
    pub fn create_request(&self, name: &str, svm_uuid: &str) -> IpInterfaceCreate {
        IpInterfaceCreate {
            name: name.to_string(),
            enabled: true,
            svm: ObjectRef::by_uuid(svm_uuid),
            ip: IpInfo {
                address: self.address.to_string(),
                netmask: netmask_for(self.prefix_length),
            },
            location: self.location(),
            service_policy: Some(ObjectRef::by_name(&self.service_policy)),
            vip: self.vip,
        }
    }

    /// The home node and port the spec names, if any (a port is named only with its node).
    fn location(&self) -> Option<InterfaceLocation> {
        self.home_node.as_ref().map(|node| InterfaceLocation {
            home_node: Some(ObjectRef::by_name(node)),
            home_port: self.home_port.as_deref().map(ObjectRef::by_name),
        })
    }
}

/// Gives each VIP LIF to create that names no home node one of `nodes` (in ONTAP's order), as
/// metal-stack's extension places them: the management LIF on the first node, data LIFs
/// round-robin. Without nodes the LIF stays unplaced and ONTAP's refusal says why.
pub fn place_vips(plan: &mut LifPlan, nodes: &[String]) {
    if nodes.is_empty() {
        return;
    }
    for (_, lif) in plan.create.iter_mut().filter(|(_, l)| l.needs_home_node()) {
        lif.home_node = Some(nodes[lif.ordinal % nodes.len()].clone());
    }
}

/// The LIFs the spec of `svm` asks for: the management LIF first, then the data LIFs in order.
pub fn desired_lifs(svm: &StorageVirtualMachine) -> Result<Vec<DesiredLif>, DesiredError> {
    let spec = &svm.spec;
    if spec.management_lif.protocols.is_some() {
        return Err(DesiredError::ManagementLifProtocols);
    }
    let named: Vec<_> = spec
        .data_lifs
        .iter()
        .map(|l| l.protocols.as_deref())
        .collect();
    let served = lif_protocols(&spec.protocols.enabled(), &named).map_err(|source| {
        DesiredError::LifProtocols {
            field: match source.lif() {
                Some(i) => format!("spec.dataLifs[{i}].protocols"),
                None => "spec.dataLifs".into(),
            },
            source,
        }
    })?;
    let mut lifs = vec![desired_lif(
        &spec.management_lif,
        "spec.managementLif".into(),
        "mgmt".into(),
        LifRole::Management,
        MANAGEMENT_SERVICE_POLICY,
        0,
    )?];
    for (i, (lif, protocol)) in spec.data_lifs.iter().zip(served).enumerate() {
        lifs.push(desired_lif(
            lif,
            format!("spec.dataLifs[{i}]"),
            format!("data{}", i + 1),
            LifRole::Data,
            data_service_policy(protocol),
            i,
        )?);
    }
    let mut seen = HashSet::new();
    for (i, lif) in lifs.iter().enumerate() {
        if !seen.insert(lif.address) {
            let field = match i {
                0 => "spec.managementLif.ip".to_string(),
                i => format!("spec.dataLifs[{}].ip", i - 1),
            };
            return Err(DesiredError::DuplicateAddress {
                field,
                address: lif.address,
            });
        }
    }
    Ok(lifs)
}

fn desired_lif(
    lif: &LifSpec,
    field: String,
    name: String,
    role: LifRole,
    default_policy: &'static str,
    ordinal: usize,
) -> Result<DesiredLif, DesiredError> {
    let address: IpAddr = lif.ip.parse().map_err(|_| DesiredError::InvalidAddress {
        field: format!("{field}.ip"),
        value: lif.ip.clone(),
    })?;
    let max = max_prefix(address);
    if lif.prefix_length == 0 || lif.prefix_length > max {
        return Err(DesiredError::InvalidPrefix {
            field: format!("{field}.prefixLength"),
            prefix: lif.prefix_length,
            family: if address.is_ipv4() { 4 } else { 6 },
            max,
        });
    }
    if lif.vip && lif.prefix_length != max {
        return Err(DesiredError::VipPrefix {
            field: format!("{field}.prefixLength"),
            prefix: lif.prefix_length,
            max,
        });
    }
    lif_placement(
        lif.home_node.is_some(),
        lif.home_port.is_some(),
        lif.broadcast_domain.is_some(),
        lif.vip,
    )
    .map_err(|(part, problem)| DesiredError::Placement {
        field: format!("{field}.{part}"),
        problem,
    })?;
    Ok(DesiredLif {
        name,
        field,
        role,
        address,
        prefix_length: lif.prefix_length,
        home_node: lif.home_node.clone(),
        home_port: lif.home_port.clone(),
        broadcast_domain: lif.broadcast_domain.clone(),
        service_policy: lif
            .service_policy
            .clone()
            .unwrap_or_else(|| default_policy.to_string()),
        vip: lif.vip,
        ordinal,
    })
}

/// Why an existing interface is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemovalReason {
    /// Its address is in no LIF of the spec.
    NotInSpec,
    /// Its address is wanted, but with settings ONTAP cannot change in place (its prefix
    /// length, its kind): it is deleted and created again.
    Replaced(Vec<Mismatch>),
}

/// A setting of an existing interface that differs from the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// Reported prefix length (None if ONTAP's netmask could not be read).
    PrefixLength {
        have: Option<u8>,
        want: u8,
    },
    ServicePolicy {
        have: String,
        want: String,
    },
    HomeNode {
        have: Option<String>,
        want: String,
    },
    HomePort {
        have: Option<String>,
        want: String,
    },
    /// A VIP LIF where a subnet LIF is wanted, or the other way round.
    Vip {
        have: bool,
        want: bool,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PrefixLength { have, want } => match have {
                Some(have) => write!(f, "prefix length {have}, want {want}"),
                None => write!(f, "unreadable netmask, want prefix length {want}"),
            },
            Self::ServicePolicy { have, want } => write!(f, "service policy {have}, want {want}"),
            Self::HomeNode { have, want } => {
                write!(
                    f,
                    "home node {}, want {want}",
                    have.as_deref().unwrap_or("unknown")
                )
            }
            Self::HomePort { have, want } => {
                write!(
                    f,
                    "home port {}, want {want}",
                    have.as_deref().unwrap_or("unknown")
                )
            }
            Self::Vip { have, want } => {
                let kind = |vip: &bool| if *vip { "a VIP LIF" } else { "a subnet LIF" };
                write!(f, "{}, want {}", kind(have), kind(want))
            }
        }
    }
}

impl Mismatch {
    /// Whether ONTAP changes it on the existing interface (`PATCH`): its service policy, and
    /// its home, which it moves the interface to. A prefix length or a kind it does not.
    pub fn in_place(&self) -> bool {
        matches!(
            self,
            Self::ServicePolicy { .. } | Self::HomeNode { .. } | Self::HomePort { .. }
        )
    }
}

/// An interface the plan changes in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LifUpdate {
    pub uuid: String,
    pub name: String,
    pub lif: DesiredLif,
    pub changes: Vec<Mismatch>,
}

impl LifUpdate {
    /// The `PATCH /api/network/ip/interfaces/{uuid}` body: only what differs.
    pub fn patch(&self) -> IpInterfacePatch {
        let moved = self
            .changes
            .iter()
            .any(|c| matches!(c, Mismatch::HomeNode { .. } | Mismatch::HomePort { .. }));
        let repolicied = self
            .changes
            .iter()
            .any(|c| matches!(c, Mismatch::ServicePolicy { .. }));
        IpInterfacePatch {
            enabled: None,
            location: moved.then(|| self.lif.location()).flatten(),
            service_policy: repolicied.then(|| ObjectRef::by_name(&self.lif.service_policy)),
        }
    }
}

/// An interface the plan deletes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LifRemoval {
    pub uuid: String,
    pub name: String,
    pub reason: RemovalReason,
}

/// The changes that bring an SVM's interfaces to the spec. Apply `delete` before `create`: a
/// replaced LIF's address and name must be free before it is created again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LifPlan {
    /// uuids of interfaces that already match a desired LIF.
    pub keep: Vec<String>,
    /// Interfaces of a desired address whose differences ONTAP changes in place.
    pub update: Vec<LifUpdate>,
    pub delete: Vec<LifRemoval>,
    /// The LIFs to create, each with the name to create it under.
    pub create: Vec<(String, DesiredLif)>,
    /// uuids of interfaces whose address ONTAP did not report or that does not parse: left
    /// alone rather than deleted on a guess.
    pub unrecognized: Vec<String>,
}

impl LifPlan {
    /// Whether the interfaces already match the spec.
    pub fn is_empty(&self) -> bool {
        self.delete.is_empty() && self.create.is_empty() && self.update.is_empty()
    }
}

/// Compares the desired LIFs with the SVM's interfaces, matching them by address.
pub fn plan_lifs(desired: &[DesiredLif], actual: &[IpInterface]) -> LifPlan {
    let mut plan = LifPlan::default();
    let mut matched = HashSet::new();
    let mut names_in_use = HashSet::new();
    for interface in actual {
        let Some(address) = interface
            .ip
            .as_ref()
            .and_then(|ip| ip.address.parse::<IpAddr>().ok())
        else {
            plan.unrecognized.push(interface.uuid.clone());
            names_in_use.insert(interface.name.clone());
            continue;
        };
        let Some(want) = desired.iter().find(|d| d.address == address) else {
            plan.delete.push(LifRemoval {
                uuid: interface.uuid.clone(),
                name: interface.name.clone(),
                reason: RemovalReason::NotInSpec,
            });
            continue;
        };
        let mismatches = mismatches(want, interface, address);
        if mismatches.is_empty() {
            matched.insert(address);
            names_in_use.insert(interface.name.clone());
            plan.keep.push(interface.uuid.clone());
        } else if mismatches.iter().all(Mismatch::in_place) {
            matched.insert(address);
            names_in_use.insert(interface.name.clone());
            plan.update.push(LifUpdate {
                uuid: interface.uuid.clone(),
                name: interface.name.clone(),
                lif: want.clone(),
                changes: mismatches,
            });
        } else {
            plan.delete.push(LifRemoval {
                uuid: interface.uuid.clone(),
                name: interface.name.clone(),
                reason: RemovalReason::Replaced(mismatches),
            });
        }
    }
    for want in desired.iter().filter(|d| !matched.contains(&d.address)) {
        let name = free_name(want, &names_in_use);
        names_in_use.insert(name.clone());
        plan.create.push((name, want.clone()));
    }
    plan
}

fn mismatches(want: &DesiredLif, have: &IpInterface, address: IpAddr) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let prefix = have
        .ip
        .as_ref()
        .and_then(|ip| prefix_from_netmask(&ip.netmask, address));
    if prefix != Some(want.prefix_length) {
        out.push(Mismatch::PrefixLength {
            have: prefix,
            want: want.prefix_length,
        });
    }
    // Compared only when ONTAP reports them: an absent field is no evidence of a difference.
    if let Some(policy) = have.service_policy.as_ref().and_then(|p| p.name.as_deref())
        && policy != want.service_policy
    {
        out.push(Mismatch::ServicePolicy {
            have: policy.to_string(),
            want: want.service_policy.clone(),
        });
    }
    if let Some(vip) = have.vip
        && vip != want.vip
    {
        out.push(Mismatch::Vip {
            have: vip,
            want: want.vip,
        });
    }
    // A VIP LIF the operator placed (the spec names no node) may be wherever it was put.
    if let Some(node) = &want.home_node {
        let have_node = have
            .location
            .as_ref()
            .and_then(|l| l.home_node.as_ref())
            .and_then(|n| n.name.clone());
        if have_node.as_deref() != Some(node.as_str()) {
            out.push(Mismatch::HomeNode {
                have: have_node,
                want: node.clone(),
            });
        }
    }
    if let Some(port) = &want.home_port {
        let have_port = have
            .location
            .as_ref()
            .and_then(|l| l.home_port.as_ref())
            .and_then(|p| p.name.clone());
        if have_port.as_deref() != Some(port.as_str()) {
            out.push(Mismatch::HomePort {
                have: have_port,
                want: port.clone(),
            });
        }
    }
    out
}

/// `want.name` if no remaining interface holds it, else the first free name of its role
/// (`mgmt2`…, `data2`…).
fn free_name(want: &DesiredLif, in_use: &HashSet<String>) -> String {
    if !in_use.contains(&want.name) {
        return want.name.clone();
    }
    let stem = match want.role {
        LifRole::Management => "mgmt",
        LifRole::Data => "data",
    };
    (2..)
        .map(|n| format!("{stem}{n}"))
        .find(|n| !in_use.contains(n))
        .unwrap_or_else(|| format!("{stem}-{}", want.address))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ontap::svm::plan::tests::{base, svm};

    fn interface(uuid: &str, name: &str, ip: &str, netmask: &str, policy: &str) -> IpInterface {
        serde_json::from_value(serde_json::json!({
            "uuid": uuid, "name": name,
            "ip": { "address": ip, "netmask": netmask },
            "service_policy": { "name": policy },
            "location": { "home_node": { "name": "n1" } }
        }))
        .unwrap()
    }

    #[test]
    fn service_policies() {
        assert_eq!(
            data_service_policy(Some(Protocol::Nfs)),
            "default-data-files"
        );
        assert_eq!(
            data_service_policy(Some(Protocol::Iscsi)),
            "default-data-blocks"
        );
        assert_eq!(
            data_service_policy(Some(Protocol::Nvme)),
            "default-data-nvme-tcp"
        );
        assert_eq!(data_service_policy(None), "default-data-files");
    }

    /// An SVM with `protocols` enabled and data LIFs naming `named` (`None`: nothing).
    fn with_lif_protocols(
        protocols: serde_json::Value,
        named: &[Option<serde_json::Value>],
    ) -> Result<Vec<DesiredLif>, DesiredError> {
        let data_lifs: Vec<_> = named
            .iter()
            .enumerate()
            .map(|(i, names)| {
                let mut lif =
                    serde_json::json!({ "ip": format!("192.0.2.{}", 11 + i), "prefixLength": 24 });
                if let Some(names) = names {
                    lif["protocols"] = names.clone();
                }
                lif
            })
            .collect();
        desired_lifs(&svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "protocols": protocols,
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24 },
            "dataLifs": data_lifs
        })))
    }

    fn data_policies(lifs: &[DesiredLif]) -> Vec<&str> {
        lifs[1..]
            .iter()
            .map(|l| l.service_policy.as_str())
            .collect()
    }

    #[test]
    fn each_protocol_gets_the_data_lifs_that_name_it() {
        use serde_json::json;
        let lifs = with_lif_protocols(
            json!({ "nfs": true, "iscsi": true, "nvme": true }),
            &[
                Some(json!(["nvme"])),
                Some(json!(["iscsi"])),
                Some(json!(["nfs"])),
                Some(json!(["nvme"])),
            ],
        )
        .unwrap();
        assert_eq!(
            data_policies(&lifs),
            [
                "default-data-nvme-tcp",
                "default-data-blocks",
                "default-data-files",
                "default-data-nvme-tcp"
            ]
        );
        // One protocol: a LIF naming none serves it, as before `protocols` existed.
        for (protocol, policy) in [
            ("nfs", "default-data-files"),
            ("iscsi", "default-data-blocks"),
            ("nvme", "default-data-nvme-tcp"),
        ] {
            let lifs =
                with_lif_protocols(json!({ protocol: true }), &[None, Some(json!([protocol]))])
                    .unwrap();
            assert_eq!(data_policies(&lifs), [policy, policy]);
        }
        // No protocol: what ONTAP gives a new LIF.
        let lifs = with_lif_protocols(json!({}), &[None]).unwrap();
        assert_eq!(data_policies(&lifs), ["default-data-files"]);
    }

    #[test]
    fn lif_protocols_the_crd_refuses_are_refused_naming_the_field() {
        use serde_json::json;
        let refused = |protocols, named: &[Option<serde_json::Value>]| {
            with_lif_protocols(protocols, named)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(
                json!({ "nfs": true, "iscsi": true, "nvme": true }),
                &[Some(json!(["nfs"])), None, Some(json!(["nvme"]))]
            ),
            "spec.dataLifs[1].protocols: required when the SVM enables more than one protocol: name the one this data LIF serves"
        );
        assert_eq!(
            refused(
                json!({ "nfs": true, "iscsi": true, "nvme": true }),
                &[Some(json!(["nfs"])), Some(json!(["iscsi"]))]
            ),
            "spec.dataLifs: nvme, which the SVM enables, is served by no data LIF"
        );
        assert_eq!(
            refused(json!({ "nfs": true }), &[None, Some(json!(["iscsi"]))]),
            "spec.dataLifs[1].protocols: iscsi is not among the protocols the SVM enables"
        );
        assert_eq!(
            refused(
                json!({ "nfs": true, "nvme": true }),
                &[Some(json!(["nfs", "nvme"]))]
            ),
            "spec.dataLifs[0].protocols: a data LIF serves exactly one protocol with ONTAP's default service policies, not 2"
        );
        assert_eq!(
            refused(json!({ "nfs": true }), &[Some(json!([]))]),
            "spec.dataLifs[0].protocols: a data LIF serves exactly one protocol with ONTAP's default service policies, not 0"
        );
        let mut management = base();
        management.spec.management_lif.protocols = Some(vec![Protocol::Nfs]);
        assert_eq!(
            desired_lifs(&management).unwrap_err().to_string(),
            "spec.managementLif.protocols: the management LIF serves no data protocol: its service policy is default-management"
        );
    }

    #[test]
    fn a_lif_whose_protocol_changes_gets_the_new_policy_in_place() {
        use serde_json::json;
        let both = json!({ "nfs": true, "nvme": true });
        let before =
            with_lif_protocols(both.clone(), &[Some(json!(["nfs"])), Some(json!(["nvme"]))])
                .unwrap();
        let actual: Vec<_> = before
            .iter()
            .enumerate()
            .map(|(i, l)| {
                interface(
                    &format!("u{i}"),
                    &l.name,
                    &l.address.to_string(),
                    "24",
                    &l.service_policy,
                )
            })
            .collect();
        assert!(plan_lifs(&before, &actual).is_empty());
        // The second LIF now serves NFS, the first NVMe: both change policy, in place.
        let after =
            with_lif_protocols(both, &[Some(json!(["nvme"])), Some(json!(["nfs"]))]).unwrap();
        let plan = plan_lifs(&after, &actual);
        assert_eq!(plan.keep, ["u0"]);
        assert!(plan.delete.is_empty() && plan.create.is_empty(), "{plan:?}");
        assert_eq!(
            plan.update[0].changes,
            [Mismatch::ServicePolicy {
                have: "default-data-files".into(),
                want: "default-data-nvme-tcp".into()
            }]
        );
        let patches: Vec<_> = plan
            .update
            .iter()
            .map(|u| (u.uuid.as_str(), serde_json::to_value(u.patch()).unwrap()))
            .collect();
        assert_eq!(
            patches,
            [
                (
                    "u1",
                    json!({ "service_policy": { "name": "default-data-nvme-tcp" } })
                ),
                (
                    "u2",
                    json!({ "service_policy": { "name": "default-data-files" } })
                )
            ]
        );
    }

    #[test]
    fn placement_and_policy_from_the_spec() {
        use serde_json::json;
        let placed = desired_lifs(&svm(json!({
            "clusterRef": { "name": "lab" },
            "protocols": { "nfs": true },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24, "servicePolicy": "mgmt-https" },
            "dataLifs": [
                { "ip": "192.0.2.11", "prefixLength": 24, "homeNode": "n2", "homePort": "e0d-100" },
                { "ip": "192.0.2.12", "prefixLength": 24, "broadcastDomain": "tenant-a", "servicePolicy": "custom-nfs" }
            ]
        })))
        .unwrap();
        assert_eq!(placed[0].service_policy, "mgmt-https");
        assert_eq!(placed[2].service_policy, "custom-nfs");
        let body = serde_json::to_value(placed[1].create_request("data1", "s")).unwrap();
        assert_eq!(
            body["location"],
            json!({ "home_node": { "name": "n2" }, "home_port": { "name": "e0d-100" } })
        );
        assert_eq!(placed[2].broadcast_domain.as_deref(), Some("tenant-a"));
        // Where ONTAP put it is compared: another port is moved there, in place.
        let mut elsewhere = interface("u1", "data1", "192.0.2.11", "24", "default-data-files");
        elsewhere.location = serde_json::from_value(
            json!({ "home_node": { "name": "n2" }, "home_port": { "name": "e0c" } }),
        )
        .unwrap();
        let plan = plan_lifs(&placed[1..2], &[elsewhere]);
        assert_eq!(
            plan.update[0].changes,
            [Mismatch::HomePort {
                have: Some("e0c".into()),
                want: "e0d-100".into()
            }]
        );
        assert_eq!(
            serde_json::to_value(plan.update[0].patch()).unwrap(),
            json!({ "location": { "home_node": { "name": "n2" }, "home_port": { "name": "e0d-100" } } })
        );
        // What admission refuses, the controller refuses too, naming the field.
        for (lif, message) in [
            (
                json!({ "ip": "192.0.2.11", "prefixLength": 24, "homePort": "e0d" }),
                "spec.dataLifs[0].homePort: homePort names a port of homeNode: set homeNode too",
            ),
            (
                json!({ "ip": "192.0.2.11", "prefixLength": 24, "homeNode": "n1", "homePort": "e0d", "broadcastDomain": "b" }),
                "spec.dataLifs[0].broadcastDomain: homePort and broadcastDomain exclude each other: ONTAP homes a LIF on the port named, or picks a port in the broadcast domain",
            ),
            (
                json!({ "ip": "192.0.2.11", "prefixLength": 32, "vip": true, "broadcastDomain": "b" }),
                "spec.dataLifs[0].vip: a VIP LIF lives on its node's VIP port: it takes no homePort or broadcastDomain",
            ),
        ] {
            let err = desired_lifs(&svm(json!({
                "clusterRef": { "name": "lab" },
                "managementLif": { "ip": "192.0.2.10", "prefixLength": 24 },
                "dataLifs": [lif]
            })))
            .unwrap_err();
            assert_eq!(err.to_string(), message);
        }
    }

    #[test]
    fn desired_lifs_from_the_spec() {
        let lifs = desired_lifs(&base()).unwrap();
        let names: Vec<_> = lifs.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["mgmt", "data1", "data2"]);
        assert_eq!(lifs[0].service_policy, "default-management");
        assert_eq!(lifs[0].role, LifRole::Management);
        assert_eq!(lifs[1].service_policy, "default-data-files");
        let body = serde_json::to_value(lifs[2].create_request("data2", "svm-uuid")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "name": "data2", "enabled": true,
                "svm": { "uuid": "svm-uuid" },
                "ip": { "address": "2001:db8::11", "netmask": "64" },
                "service_policy": { "name": "default-data-files" }
            })
        );
        let body = serde_json::to_value(lifs[1].create_request("data1", "svm-uuid")).unwrap();
        assert_eq!(
            body["location"],
            serde_json::json!({ "home_node": { "name": "n1" } })
        );
        assert_eq!(body["ip"]["netmask"], "24");
    }

    #[test]
    fn desired_lifs_reject_what_admission_should_have() {
        let bad = |mgmt: &str, prefix: u8, data: &str| {
            desired_lifs(&svm(serde_json::json!({
                "clusterRef": { "name": "lab" },
                "managementLif": { "ip": mgmt, "prefixLength": prefix },
                "dataLifs": [ { "ip": data, "prefixLength": 24 } ]
            })))
            .unwrap_err()
        };
        assert_eq!(
            bad("nope", 24, "192.0.2.2"),
            DesiredError::InvalidAddress {
                field: "spec.managementLif.ip".into(),
                value: "nope".into()
            }
        );
        assert!(matches!(
            bad("192.0.2.1", 33, "192.0.2.2"),
            DesiredError::InvalidPrefix {
                max: 32,
                family: 4,
                ..
            }
        ));
        assert_eq!(
            bad("2001:db8::1", 64, "2001:DB8:0::1"),
            DesiredError::DuplicateAddress {
                field: "spec.dataLifs[0].ip".into(),
                address: "2001:db8::1".parse().unwrap()
            }
        );
    }

    #[test]
    fn duplicate_addresses_are_found_across_spellings() {
        let err = desired_lifs(&svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "managementLif": { "ip": "2001:db8::1", "prefixLength": 64 },
            "dataLifs": [
                { "ip": "2001:db8::2", "prefixLength": 64 },
                { "ip": "2001:DB8:0::1", "prefixLength": 64 }
            ]
        })))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.dataLifs[1].ip: 2001:db8::1 is used by more than one LIF"
        );
    }

    #[test]
    fn plan_for_a_new_svm_creates_everything() {
        let desired = desired_lifs(&base()).unwrap();
        let plan = plan_lifs(&desired, &[]);
        let names: Vec<_> = plan.create.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["mgmt", "data1", "data2"]);
        assert!(plan.delete.is_empty() && plan.keep.is_empty());
    }

    #[test]
    fn plan_for_a_converged_svm_is_empty() {
        let desired = desired_lifs(&base()).unwrap();
        let actual = [
            interface(
                "u0",
                "mgmt",
                "192.0.2.10",
                "255.255.255.0",
                "default-management",
            ),
            interface("u1", "data1", "192.0.2.11", "24", "default-data-files"),
            interface("u2", "data2", "2001:DB8::11", "64", "default-data-files"),
        ];
        let plan = plan_lifs(&desired, &actual);
        assert!(plan.is_empty(), "{plan:?}");
        assert_eq!(plan.keep, ["u0", "u1", "u2"]);
    }

    #[test]
    fn plan_deletes_unwanted_and_replaces_changed_lifs() {
        let desired = desired_lifs(&base()).unwrap();
        let actual = [
            interface("u0", "mgmt", "192.0.2.10", "16", "default-management"),
            interface("u1", "data1", "192.0.2.11", "23", "default-data-blocks"),
            interface("u9", "data9", "192.0.2.99", "24", "default-data-files"),
        ];
        let plan = plan_lifs(&desired, &actual);
        assert!(plan.keep.is_empty());
        assert!(plan.update.is_empty());
        assert_eq!(
            plan.delete,
            [
                LifRemoval {
                    uuid: "u0".into(),
                    name: "mgmt".into(),
                    reason: RemovalReason::Replaced(vec![Mismatch::PrefixLength {
                        have: Some(16),
                        want: 24
                    }])
                },
                LifRemoval {
                    uuid: "u1".into(),
                    name: "data1".into(),
                    // Replaced for its prefix length; its policy comes with the new LIF.
                    reason: RemovalReason::Replaced(vec![
                        Mismatch::PrefixLength {
                            have: Some(23),
                            want: 24
                        },
                        Mismatch::ServicePolicy {
                            have: "default-data-blocks".into(),
                            want: "default-data-files".into()
                        }
                    ])
                },
                LifRemoval {
                    uuid: "u9".into(),
                    name: "data9".into(),
                    reason: RemovalReason::NotInSpec
                },
            ]
        );
        let creates: Vec<_> = plan
            .create
            .iter()
            .map(|(n, l)| (n.as_str(), l.address.to_string()))
            .collect();
        assert_eq!(
            creates,
            [
                ("mgmt", "192.0.2.10".to_string()),
                ("data1", "192.0.2.11".to_string()),
                ("data2", "2001:db8::11".to_string())
            ]
        );
    }

    #[test]
    fn plan_avoids_names_held_by_kept_interfaces() {
        // data1 was removed from the spec: the old data2 now sits at position 1 and keeps its
        // name; the new LIF at position 2 cannot be called data2.
        let desired = desired_lifs(&svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24 },
            "dataLifs": [
                { "ip": "192.0.2.12", "prefixLength": 24 },
                { "ip": "192.0.2.13", "prefixLength": 24 }
            ]
        })))
        .unwrap();
        let actual = [
            interface("u0", "mgmt", "192.0.2.10", "24", "default-management"),
            interface("u1", "data1", "192.0.2.11", "24", "default-data-files"),
            interface("u2", "data2", "192.0.2.12", "24", "default-data-files"),
        ];
        let plan = plan_lifs(&desired, &actual);
        assert_eq!(plan.keep, ["u0", "u2"]);
        assert_eq!(plan.delete.len(), 1);
        assert_eq!(plan.delete[0].uuid, "u1");
        // data1 is being deleted, but names are chosen against what stays: data2 is taken.
        let creates: Vec<_> = plan.create.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(creates, ["data3"]);
    }

    #[test]
    fn home_node_is_compared_only_when_the_spec_names_one() {
        let desired = desired_lifs(&base()).unwrap();
        let mut moved = interface("u1", "data1", "192.0.2.11", "24", "default-data-files");
        moved.location =
            serde_json::from_value(serde_json::json!({"home_node": {"name": "n2"}})).unwrap();
        let plan = plan_lifs(&desired[1..2], &[moved.clone()]);
        assert_eq!(
            plan.update[0].changes,
            [Mismatch::HomeNode {
                have: Some("n2".into()),
                want: "n1".into()
            }]
        );
        assert!(plan.delete.is_empty());
        // data2 names no home node: wherever ONTAP put it is fine.
        moved.ip = Some(IpInfo {
            address: "2001:db8::11".into(),
            netmask: "64".into(),
        });
        assert!(plan_lifs(&desired[2..3], &[moved]).is_empty());
    }

    #[test]
    fn interfaces_without_a_readable_address_are_left_alone() {
        let desired = desired_lifs(&base()).unwrap();
        let mut odd = interface("ux", "data1", "not-an-ip", "24", "default-data-files");
        let plan = plan_lifs(&desired, std::slice::from_ref(&odd));
        assert_eq!(plan.unrecognized, ["ux"]);
        assert!(plan.delete.is_empty());
        // Its name stays taken.
        assert_eq!(plan.create[1].0, "data2");
        odd.ip = None;
        assert_eq!(plan_lifs(&desired, &[odd]).unrecognized, ["ux"]);
    }

    fn vip_svm() -> StorageVirtualMachine {
        svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "protocols": { "nvme": true },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 32, "vip": true },
            "dataLifs": [
                { "ip": "192.0.2.11", "prefixLength": 32, "vip": true },
                { "ip": "192.0.2.12", "prefixLength": 32, "vip": true },
                { "ip": "2001:db8::12", "prefixLength": 128, "vip": true, "homeNode": "n9" }
            ]
        }))
    }

    #[test]
    fn vip_lifs_are_placed_round_robin_and_created_as_vips() {
        let desired = desired_lifs(&vip_svm()).unwrap();
        let mut plan = plan_lifs(&desired, &[]);
        place_vips(&mut plan, &["n1".into(), "n2".into()]);
        let nodes: Vec<_> = plan
            .create
            .iter()
            .map(|(_, l)| l.home_node.as_deref().unwrap())
            .collect();
        // The management LIF on the first node, data LIFs round-robin; a named node is kept.
        assert_eq!(nodes, ["n1", "n1", "n2", "n9"]);
        let (name, lif) = &plan.create[2];
        let body = serde_json::to_value(lif.create_request(name, "svm-uuid")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "name": "data2", "enabled": true,
                "svm": { "uuid": "svm-uuid" },
                "ip": { "address": "192.0.2.12", "netmask": "32" },
                "location": { "home_node": { "name": "n2" } },
                "service_policy": { "name": "default-data-nvme-tcp" },
                "vip": true
            })
        );
        // Without nodes nothing is guessed: ONTAP's refusal names what is missing.
        let mut unplaced = plan_lifs(&desired, &[]);
        place_vips(&mut unplaced, &[]);
        assert!(unplaced.create[0].1.home_node.is_none());
        // A subnet LIF's body has no `vip`, so ONTAP releases without VIPs accept it.
        let plain = desired_lifs(&base()).unwrap();
        let body = serde_json::to_value(plain[0].create_request("mgmt", "u")).unwrap();
        assert!(body.get("vip").is_none(), "{body}");
    }

    #[test]
    fn a_lif_of_the_other_kind_is_replaced() {
        let desired = desired_lifs(&vip_svm()).unwrap();
        let vip = |uuid: &str, name: &str, ip: &str, vip: Option<bool>| {
            let mut i = interface(uuid, name, ip, "32", "default-data-nvme-tcp");
            i.vip = vip;
            i
        };
        // metal-stack's VIP LIFs, on whichever node it put them: kept.
        let mut mgmt = vip("u0", "managementlif", "192.0.2.10", Some(true));
        mgmt.service_policy = Some(ObjectRef::by_name("default-management"));
        let kept = plan_lifs(
            &desired[..2],
            &[mgmt, vip("u1", "datalif+0", "192.0.2.11", Some(true))],
        );
        assert!(kept.is_empty(), "{kept:?}");
        // A subnet LIF with a host mask is not a VIP LIF.
        let plan = plan_lifs(
            &desired[1..2],
            &[vip("u1", "data1", "192.0.2.11", Some(false))],
        );
        assert_eq!(
            plan.delete[0].reason,
            RemovalReason::Replaced(vec![Mismatch::Vip {
                have: false,
                want: true
            }])
        );
        // Not reported: no evidence of a difference.
        assert!(plan_lifs(&desired[1..2], &[vip("u1", "data1", "192.0.2.11", None)]).is_empty());
        // And the other way round: a VIP LIF where the spec wants a subnet LIF.
        let plain = desired_lifs(&base()).unwrap();
        let mut have = interface("u1", "data1", "192.0.2.11", "24", "default-data-files");
        have.vip = Some(true);
        let plan = plan_lifs(&plain[1..2], &[have]);
        assert_eq!(
            plan.delete[0].reason,
            RemovalReason::Replaced(vec![Mismatch::Vip {
                have: true,
                want: false
            }])
        );
    }

    #[test]
    fn a_vip_lif_needs_a_host_prefix() {
        let err = desired_lifs(&svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 32, "vip": true },
            "dataLifs": [ { "ip": "2001:db8::1", "prefixLength": 64, "vip": true } ]
        })))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.dataLifs[0].prefixLength: a VIP LIF is in no subnet, so its prefix length must be 128, not 64"
        );
    }

    #[test]
    fn mismatches_read_well() {
        assert_eq!(
            Mismatch::PrefixLength {
                have: Some(16),
                want: 24
            }
            .to_string(),
            "prefix length 16, want 24"
        );
        assert_eq!(
            Mismatch::HomeNode {
                have: None,
                want: "n1".into()
            }
            .to_string(),
            "home node unknown, want n1"
        );
        assert_eq!(
            Mismatch::Vip {
                have: false,
                want: true
            }
            .to_string(),
            "a subnet LIF, want a VIP LIF"
        );
    }
}
