//! Creating and changing interfaces: where ONTAP places them, what it refuses and with which
//! code.

use std::net::IpAddr;

use uuid::Uuid;

use crate::error::{ApiError, ApiResult, codes};
use crate::model::{Model, network::BroadcastDomain, svm_request::NameRef};

use super::*;

impl Model {
    pub fn create_interface(&mut self, req: InterfaceCreate) -> ApiResult<(String, String)> {
        let name = req
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?;
        let svm_ref = req.svm.ok_or_else(|| ApiError::missing_field("svm"))?;
        let svm_uuid = self.interface_svm(&svm_ref)?;
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
        let auto_revert = location.auto_revert.unwrap_or(true);
        let (node_uuid, port) = self.place(&location, vip)?;
        let service_policy = req
            .service_policy
            .and_then(|p| p.name)
            .unwrap_or_else(|| "default-data-files".into());
        validate_service_policy(&service_policy)?;
        let canonical_ip = parsed.to_string();
        self.check_unique(&svm_uuid, &canonical_ip, &name, None)?;
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
            auto_revert,
            vip,
        };
        self.interfaces.insert(interface);
        Ok((uuid, name))
    }

    /// The SVM a new interface names: ONTAP answers an unknown `svm.name` with 1967146 and an
    /// unknown `svm.uuid` with 1967147 (the codes of its service-policy and interface POSTs).
    fn interface_svm(&self, svm: &NameRef) -> ApiResult<String> {
        if let Some(name) = &svm.name
            && self.svms.uuid_of(name).is_none()
        {
            return Err(ApiError::bad_request(
                codes::SVM_NAME_NOT_FOUND,
                format!("Svm.name \"{name}\" does not exist."),
            )
            .with_target("svm.name"));
        }
        if let Some(uuid) = &svm.uuid
            && self.svms.get(uuid).is_none()
        {
            return Err(ApiError::bad_request(
                codes::SVM_UUID_NOT_FOUND,
                format!("Svm.uuid \"{uuid}\" does not exist."),
            )
            .with_target("svm.uuid"));
        }
        Ok(self
            .usable_svm(svm.uuid.as_deref(), svm.name.as_deref())?
            .uuid
            .clone())
    }

    /// IP addresses are unique cluster-wide (one IPspace), names per SVM.
    fn check_unique(
        &self,
        svm_uuid: &str,
        ip: &str,
        name: &str,
        except: Option<&str>,
    ) -> ApiResult<()> {
        if self
            .interfaces
            .by_ip
            .get(ip)
            .is_some_and(|u| Some(u.as_str()) != except)
        {
            return Err(ApiError::conflict(
                codes::DUPLICATE_IP,
                format!("Duplicate IP address {ip}."),
            )
            .with_target("ip.address"));
        }
        if self
            .interfaces
            .of_svm(svm_uuid)
            .any(|i| i.name == name && Some(i.uuid.as_str()) != except)
        {
            return Err(ApiError::conflict(
                codes::LIF_NAME_EXISTS,
                format!("An interface with the name \"{name}\" already exists in this SVM."),
            )
            .with_target("name"));
        }
        Ok(())
    }

    /// The home node and port of an interface: the ones named, else the port ONTAP picks: the
    /// first port of the named node (or, without one, of the first node with a port) that is
    /// in the named broadcast domain, or in any domain when none is named (a port outside every
    /// domain cannot host an interface). A VIP interface lives on the node's VIP port.
    fn place(&self, location: &Location, vip: bool) -> ApiResult<(String, String)> {
        let domain = location
            .broadcast_domain
            .as_ref()
            .map(|d| self.interface_domain(d))
            .transpose()?;
        let node = location
            .home_node
            .as_ref()
            .map(|r| {
                self.cluster
                    .node_by(r.uuid.as_deref(), r.name.as_deref())
                    .ok_or_else(|| ApiError::invalid_value("location.home_node", "no such node"))
            })
            .transpose()?;
        if vip {
            // ONTAP picks the node's VIP port, which is in no broadcast domain of the mock.
            let node = node
                .or_else(|| self.cluster.nodes.first())
                .ok_or_else(|| no_port("the cluster has no nodes"))?;
            return Ok((node.uuid.clone(), VIP_PORT.to_string()));
        }
        let named_port = location.home_port.as_ref().and_then(|p| p.name.as_deref());
        if let Some(port) = named_port {
            let node = node
                .or_else(|| self.cluster.nodes.first())
                .ok_or_else(|| no_port("the cluster has no nodes"))?;
            let found = self
                .port_on(&node.uuid, port)
                .ok_or_else(|| no_such_port(port, &node.name))?;
            if !may_host(domain.as_ref(), found.domain.as_ref()) {
                return Err(ApiError::bad_request(
                    codes::HOME_PORT_NOT_IN_DOMAIN,
                    format!(
                        "The Vserver Broadcast-Domain Home-Node and Home-Port combination is not valid: port \"{port}\" of node \"{}\" is not in broadcast domain \"{}\".",
                        node.name,
                        domain.as_ref().map_or("(none)", |d| d.name.as_str()),
                    ),
                )
                .with_target("location.home_port.name"));
            }
            return Ok((node.uuid.clone(), found.name));
        }
        let home_node = node.or_else(|| {
            if domain.is_some() {
                None
            } else {
                self.cluster.nodes.first()
            }
        });
        // Ports in node and configuration order, not by uuid, so the pick is predictable.
        let candidate = self
            .cluster
            .nodes
            .iter()
            .filter(|n| home_node.is_none_or(|h| h.uuid == n.uuid))
            .flat_map(|n| self.ports_of_node(&n.uuid))
            .find(|p| may_host(domain.as_ref(), p.domain.as_ref()));
        match candidate {
            Some(port) => Ok((port.node.uuid.clone(), port.name)),
            None => Err(no_port(&match (home_node, &domain) {
                (Some(n), Some(d)) => {
                    format!("node {} has no port in broadcast domain {}", n.name, d.name)
                }
                (Some(n), None) => format!("node {} has no ports", n.name),
                (None, Some(d)) => format!("broadcast domain {} has no ports", d.name),
                (None, None) => "the cluster has no nodes".into(),
            })),
        }
    }

    /// `PATCH /api/network/ip/interfaces/{uuid}`: synchronous in ONTAP.
    pub fn patch_interface(&mut self, uuid: &str, patch: InterfacePatch) -> ApiResult<()> {
        let current = self
            .interfaces
            .by_uuid
            .get(uuid)
            .cloned()
            .ok_or_else(|| ApiError::not_found("uuid"))?;
        let mut next = current.clone();
        if let Some(name) = patch.name {
            if name.is_empty() {
                return Err(ApiError::invalid_value("name", "empty"));
            }
            next.name = name;
        }
        if let Some(enabled) = patch.enabled {
            next.enabled = enabled;
        }
        if let Some(ip) = patch.ip {
            let address = ip.address.unwrap_or_else(|| current.ip.clone());
            let parsed: IpAddr = address
                .parse()
                .map_err(|_| ApiError::invalid_value("ip.address", &address))?;
            let netmask = ip.netmask.unwrap_or_else(|| current.netmask.clone());
            validate_netmask(&netmask, parsed.is_ipv4())?;
            next.ip = parsed.to_string();
            next.netmask = netmask;
        }
        if let Some(policy) = patch.service_policy.and_then(|p| p.name) {
            validate_service_policy(&policy)?;
            next.service_policy = policy;
        }
        if let Some(location) = patch.location {
            if let Some(auto_revert) = location.auto_revert {
                next.auto_revert = auto_revert;
            }
            if location.home_node.is_some() || location.home_port.is_some() {
                if current.vip && location.home_port.is_some() {
                    return Err(vip_home_port());
                }
                let mut target = location.clone();
                if target.home_node.is_none() {
                    target.home_node = Some(NameRef {
                        uuid: Some(current.node_uuid.clone()),
                        name: None,
                    });
                }
                let (node_uuid, port) = self.place(&target, current.vip)?;
                next.node_uuid = node_uuid;
                next.port = port;
            }
        }
        self.check_unique(&current.svm_uuid, &next.ip, &next.name, Some(uuid))?;
        self.interfaces.remove(uuid);
        self.interfaces.insert(next);
        Ok(())
    }

    /// What ONTAP asks of a VIP interface: it lives on a VIP port, never an ethernet one
    /// (1967383); it is in no subnet, so its mask covers the address alone (1967385) and ONTAP
    /// cannot place it by subnet (a home node is named); and only BGP sessions make that port
    /// reachable (1967384).
    fn check_vip(&self, netmask: &str, address: IpAddr, location: &Location) -> ApiResult<()> {
        if location.home_port.is_some() {
            return Err(vip_home_port());
        }
        let full = if address.is_ipv4() { 32 } else { 128 };
        let host_route = netmask.parse::<u8>() == Ok(full)
            || (address.is_ipv4() && netmask == "255.255.255.255");
        if !host_route {
            return Err(ApiError::bad_request(
                codes::VIP_NOT_HOST_MASK,
                format!("The netmask of a VIP interface must be /{full}: a VIP is in no subnet."),
            )
            .with_target("ip.netmask"));
        }
        if location.home_node.is_none() {
            return Err(ApiError::missing_field("location.home_node"));
        }
        if self.peer_groups.is_empty() {
            return Err(ApiError::bad_request(
                codes::VIP_WITHOUT_BGP,
                "A VIP interface needs BGP sessions: no BGP peer group announces VIP interfaces in this IPspace.",
            )
            .with_target("vip"));
        }
        Ok(())
    }
}

/// The VIP port ONTAP creates on a node for its IPspace.
const VIP_PORT: &str = "v0a";

fn vip_home_port() -> ApiError {
    ApiError::bad_request(
        codes::VIP_WITH_HOME_PORT,
        "A VIP interface cannot have a home port: it is homed on the node's VIP port.",
    )
    .with_target("location.home_port")
}

/// Whether a port in broadcast domain `have` may host an interface asked for in `wanted`: a port
/// in no domain hosts none (NetApp: until a port is in a broadcast domain "the port cannot host
/// interfaces").
fn may_host(wanted: Option<&BroadcastDomain>, have: Option<&BroadcastDomain>) -> bool {
    match (wanted, have) {
        (Some(wanted), Some(have)) => wanted.uuid == have.uuid,
        (None, Some(_)) => true,
        (_, None) => false,
    }
}

/// ONTAP had to pick a port and found none.
fn no_port(detail: &str) -> ApiError {
    ApiError::bad_request(
        codes::NO_SUITABLE_PORT,
        format!("Failed to find a suitable port for the interface: {detail}."),
    )
    .with_target("location.home_port")
}

/// The named home port does not exist on the home node.
fn no_such_port(port: &str, node: &str) -> ApiError {
    ApiError::bad_request(
        codes::HOME_PORT_NOT_FOUND,
        format!("Port \"{port}\" does not exist on node \"{node}\"."),
    )
    .with_target("location.home_port.name")
}

/// A service policy the SVM does not have: 53281065 (ONTAP's interface POST and PATCH tables).
fn validate_service_policy(policy: &str) -> ApiResult<()> {
    match services_of(policy) {
        Some(_) => Ok(()),
        None => Err(ApiError::bad_request(
            codes::SERVICE_POLICY_NOT_FOUND,
            format!("The service_policy \"{policy}\" does not exist in the SVM."),
        )
        .with_target("service_policy.name")),
    }
}

/// Accepts a prefix length (`24`) or, for IPv4, a dotted mask (`255.255.255.0`). A prefix
/// length beyond the family's is 1966269; anything else unreadable is an invalid value.
fn validate_netmask(netmask: &str, ipv4: bool) -> ApiResult<()> {
    prefix_length(netmask, ipv4).map(|_| ())
}

/// The prefix length a netmask (a prefix length or, for IPv4, a dotted mask) stands for.
pub(crate) fn prefix_length(netmask: &str, ipv4: bool) -> ApiResult<u32> {
    let max: u32 = if ipv4 { 32 } else { 128 };
    if let Ok(prefix) = netmask.parse::<u32>() {
        if prefix <= max {
            return Ok(prefix);
        }
        return Err(ApiError::bad_request(
            codes::PREFIX_OUT_OF_RANGE,
            format!(
                "Invalid prefix length {prefix}: the prefix length must be between 0 and {max}."
            ),
        )
        .with_target("ip.netmask"));
    }
    let dotted = netmask
        .parse::<std::net::Ipv4Addr>()
        .ok()
        .filter(|_| ipv4)
        .map(u32::from)
        .filter(|bits| bits.leading_ones() + bits.trailing_zeros() == 32);
    match dotted {
        Some(bits) => Ok(bits.leading_ones()),
        None => Err(ApiError::invalid_value("ip.netmask", netmask)),
    }
}
