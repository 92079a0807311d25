//! The route plan: the static routes the spec of an `Owned` object asks for
//! ([`desired_routes`]) and the changes that bring the SVM's routes to them ([`plan_routes`]).
//!
//! A spec that lists routes owns the SVM's whole route table: ONTAP records no creator of a
//! route, so a route made by hand cannot be told from one the operator made and left behind.

use std::fmt;
use std::net::IpAddr;

use super::DesiredError;
use crate::api::StorageVirtualMachine;
use crate::ontap::svm::netmask::{max_prefix, netmask_for, prefix_from_netmask};
use ontap_client::{IpInfo, ObjectRef, Route, RouteCreate};

/// One route as the spec wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredRoute {
    /// Where the spec writes it: `spec.routes[2]`.
    pub field: String,
    /// The network address and prefix length; `/0` for the default route.
    pub destination: (IpAddr, u8),
    pub gateway: IpAddr,
}

impl DesiredRoute {
    /// The `POST /api/network/ip/routes` body for the SVM `svm_uuid`.
    pub fn create_request(&self, svm_uuid: &str) -> RouteCreate {
        let (address, prefix) = self.destination;
        RouteCreate {
            svm: ObjectRef::by_uuid(svm_uuid),
            destination: Some(IpInfo {
                address: address.to_string(),
                netmask: netmask_for(prefix),
            }),
            gateway: self.gateway.to_string(),
        }
    }
}

impl fmt::Display for DesiredRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (address, prefix) = self.destination;
        write!(f, "{address}/{prefix} via {}", self.gateway)
    }
}

/// The routes the spec of `svm` asks for; `None` when it leaves the SVM's routes alone.
pub fn desired_routes(
    svm: &StorageVirtualMachine,
) -> Result<Option<Vec<DesiredRoute>>, DesiredError> {
    let Some(routes) = &svm.spec.routes else {
        return Ok(None);
    };
    routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let field = format!("spec.routes[{i}]");
            let invalid = |part: &str, value: &str| DesiredError::InvalidRoute {
                field: format!("{field}.{part}"),
                value: value.to_string(),
            };
            let gateway: IpAddr = route
                .gateway
                .parse()
                .map_err(|_| invalid("gateway", &route.gateway))?;
            let destination = match &route.destination {
                None => (unspecified_like(gateway), 0),
                Some(cidr) => parse_network(cidr)
                    .filter(|(address, _)| address.is_ipv4() == gateway.is_ipv4())
                    .ok_or_else(|| invalid("destination", cidr))?,
            };
            Ok(DesiredRoute {
                field,
                destination,
                gateway,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `0.0.0.0` or `::`, by the family of `address`.
fn unspecified_like(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

/// A network in CIDR notation whose host bits are zero, as admission requires.
fn parse_network(cidr: &str) -> Option<(IpAddr, u8)> {
    let (address, prefix) = cidr.split_once('/')?;
    let address: IpAddr = address.parse().ok()?;
    let prefix: u8 = prefix.parse().ok()?;
    (prefix <= max_prefix(address) && masked(address, prefix) == address)
        .then_some((address, prefix))
}

/// `address` with the bits past `prefix` cleared.
fn masked(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((u32::from(v4) & mask).into())
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((u128::from(v6) & mask).into())
        }
    }
}

/// A route ONTAP shows, as the plan reads it: `None` for one whose fields do not parse.
fn read_route(route: &Route) -> Option<((IpAddr, u8), IpAddr)> {
    let gateway: IpAddr = route.gateway.parse().ok()?;
    let destination = route.destination.as_ref()?;
    let address: IpAddr = destination.address.parse().ok()?;
    let prefix = prefix_from_netmask(&destination.netmask, address)?;
    Some(((masked(address, prefix), prefix), gateway))
}

/// The changes that bring an SVM's routes to the spec. Create before delete: a gateway that
/// changes is never missing in between.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutePlan {
    pub create: Vec<DesiredRoute>,
    /// uuids of routes the spec does not list.
    pub delete: Vec<String>,
    /// uuids of routes whose fields do not parse: left alone rather than deleted on a guess.
    pub unrecognized: Vec<String>,
}

impl RoutePlan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty()
    }
}

/// Compares the desired routes with the SVM's, matching them by destination and gateway.
pub fn plan_routes(desired: &[DesiredRoute], actual: &[Route]) -> RoutePlan {
    let mut plan = RoutePlan::default();
    let mut present = Vec::new();
    for route in actual {
        match read_route(route) {
            None => plan.unrecognized.push(route.uuid.clone()),
            Some(found) => {
                if desired.iter().any(|d| (d.destination, d.gateway) == found) {
                    present.push(found);
                } else {
                    plan.delete.push(route.uuid.clone());
                }
            }
        }
    }
    plan.create = desired
        .iter()
        .filter(|d| !present.contains(&(d.destination, d.gateway)))
        .cloned()
        .collect();
    plan
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ontap::svm::plan::tests::svm;

    fn routed(routes: serde_json::Value) -> StorageVirtualMachine {
        svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24 },
            "dataLifs": [ { "ip": "192.0.2.11", "prefixLength": 24 } ],
            "routes": routes,
        }))
    }

    fn route(uuid: &str, address: &str, netmask: &str, gateway: &str) -> Route {
        serde_json::from_value(serde_json::json!({
            "uuid": uuid, "gateway": gateway,
            "destination": { "address": address, "netmask": netmask },
        }))
        .unwrap()
    }

    #[test]
    fn absent_routes_are_not_managed_and_an_empty_list_is_none() {
        let mut unrouted = routed(serde_json::json!([]));
        unrouted.spec.routes = None;
        assert_eq!(desired_routes(&unrouted).unwrap(), None);
        let none = desired_routes(&routed(serde_json::json!([])))
            .unwrap()
            .unwrap();
        let plan = plan_routes(&none, &[route("r1", "0.0.0.0", "0", "192.0.2.1")]);
        assert_eq!(plan.delete, ["r1"]);
    }

    #[test]
    fn the_plan_keeps_matching_routes_creates_missing_and_deletes_others() {
        let desired = desired_routes(&routed(serde_json::json!([
            { "gateway": "192.0.2.1" },
            { "destination": "198.51.100.0/24", "gateway": "192.0.2.2" },
            { "destination": "2001:db8:1::/48", "gateway": "2001:db8::1" },
        ])))
        .unwrap()
        .unwrap();
        assert_eq!(desired[0].destination, ("0.0.0.0".parse().unwrap(), 0));
        assert_eq!(desired[0].to_string(), "0.0.0.0/0 via 192.0.2.1");
        let actual = [
            // ONTAP's dotted mask and a default route: both the spec's.
            route("r0", "0.0.0.0", "0", "192.0.2.1"),
            route("r1", "198.51.100.0", "255.255.255.0", "192.0.2.2"),
            // Another gateway for the IPv6 network: not the spec's.
            route("r2", "2001:db8:1::", "48", "2001:db8::9"),
            route("rx", "not-an-address", "24", "192.0.2.1"),
        ];
        let plan = plan_routes(&desired, &actual);
        assert_eq!(plan.delete, ["r2"]);
        assert_eq!(plan.unrecognized, ["rx"]);
        assert_eq!(plan.create.len(), 1);
        assert_eq!(plan.create[0].field, "spec.routes[2]");
        let body = serde_json::to_value(plan.create[0].create_request("svm-uuid")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "svm": { "uuid": "svm-uuid" },
                "destination": { "address": "2001:db8:1::", "netmask": "48" },
                "gateway": "2001:db8::1",
            })
        );
        assert!(plan_routes(&desired, &actual[..2]).create.len() == 1);
        assert!(!plan.is_empty());
    }

    #[test]
    fn routes_admission_should_have_refused_are_errors_naming_the_field() {
        for (route, message) in [
            (
                serde_json::json!({ "gateway": "nope" }),
                "spec.routes[0].gateway: \"nope\"",
            ),
            (
                serde_json::json!({ "destination": "198.51.100.1/24", "gateway": "192.0.2.1" }),
                "spec.routes[0].destination: \"198.51.100.1/24\"",
            ),
            (
                serde_json::json!({ "destination": "2001:db8::/32", "gateway": "192.0.2.1" }),
                "spec.routes[0].destination: \"2001:db8::/32\"",
            ),
        ] {
            let err = desired_routes(&routed(serde_json::json!([route]))).unwrap_err();
            assert!(err.to_string().starts_with(message), "{err}");
        }
    }
}
