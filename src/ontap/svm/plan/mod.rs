//! What an `Owned` StorageVirtualMachine wants in ONTAP, and what differs from it there: the SVM
//! plan (`svm`), the LIF plan (`lifs`) and the route plan (`routes`). The steps act on these
//! plans, and a steady pass confirms an SVM, its LIFs and its routes from the cluster's
//! inventory only where they find nothing to change, so each property is compared in one place,
//! here, for both. A spec that cannot become a request turns into a [`DesiredError`], reported
//! as a condition rather than a request ONTAP refuses over and over.
//!
//! Everything here is pure.

mod lifs;
mod limits;
mod qos;
mod routes;
mod svm;

pub use lifs::{
    DesiredLif, LifPlan, LifRemoval, LifRole, LifUpdate, MANAGEMENT_SERVICE_POLICY, Mismatch,
    RemovalReason, data_service_policy, desired_lifs, place_vips, plan_lifs,
};
pub use limits::{DesiredLimits, beyond_bounds, desired_limits, human_bytes};
pub use qos::{Ceiling, QosAction, plan_qos, qos_policy_name};
pub use routes::{DesiredRoute, RoutePlan, desired_routes, plan_routes};
pub use svm::{
    DesiredSvm, LimitsAction, StateAction, SvmPlan, desired_svm, plan_svm, protocol_changes,
};

use std::net::IpAddr;

use crate::api::rules::{LifProtocolsError, MANAGEMENT_LIF_PROTOCOLS_MESSAGE};

// ---------------------------------------------------------------------------------------------
// Errors

/// A spec the controller cannot turn into ONTAP requests. Reported as a condition: retrying does
/// not help until the spec changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DesiredError {
    #[error("{field}: {value:?} is not an IPv4 or IPv6 address")]
    InvalidAddress { field: String, value: String },
    #[error("{field}: prefix length {prefix} is out of range for an IPv{family} address (1-{max})")]
    InvalidPrefix {
        field: String,
        prefix: u8,
        family: u8,
        max: u8,
    },
    #[error("{field}: a VIP LIF is in no subnet, so its prefix length must be {max}, not {prefix}")]
    VipPrefix { field: String, prefix: u8, max: u8 },
    #[error("{field}: {address} is used by more than one LIF")]
    DuplicateAddress { field: String, address: IpAddr },
    #[error("spec.managementLif.protocols: {MANAGEMENT_LIF_PROTOCOLS_MESSAGE}")]
    ManagementLifProtocols,
    #[error("{field}: {source}")]
    LifProtocols {
        field: String,
        source: LifProtocolsError,
    },
    #[error("{field}: {problem}")]
    Placement {
        field: String,
        problem: &'static str,
    },
    #[error(
        "{field}: {value:?} is not what a route takes (a unicast gateway; a network of its family in CIDR notation, host bits zero)"
    )]
    InvalidRoute { field: String, value: String },
    #[error("the StorageVirtualMachine has no uid: it must be read from the API server first")]
    MissingUid,
    #[error(
        "{field}: {value:?} is not a whole number of bytes as a quantity (digits, an optional fraction, and a suffix such as Gi or T)"
    )]
    InvalidQuantity { field: String, value: String },
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use crate::api::StorageVirtualMachine;

    pub(crate) const UID: &str = "9b2e8c1a-0000-4000-8000-000000000002";

    pub(crate) fn svm(spec: serde_json::Value) -> StorageVirtualMachine {
        let mut svm: StorageVirtualMachine = serde_json::from_value(serde_json::json!({
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "StorageVirtualMachine",
            "metadata": { "name": "db", "namespace": "team-a" },
            "spec": spec,
        }))
        .unwrap();
        svm.metadata.uid = Some(UID.into());
        svm
    }

    pub(crate) fn base() -> StorageVirtualMachine {
        svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "ipspace": "Default",
            "aggregates": ["aggr1", "aggr2"],
            "protocols": { "nfs": true },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24 },
            "dataLifs": [
                { "ip": "192.0.2.11", "prefixLength": 24, "homeNode": "n1" },
                { "ip": "2001:db8::11", "prefixLength": 64 }
            ]
        }))
    }
}
