//! The field names each collection knows, for `fields=` and query filters.
//!
//! ONTAP refuses a `fields=` name it does not know with 400 code `262197` and a query parameter
//! that is neither a control parameter nor a field with 400 code `262179` (`Unexpected argument
//! "x".`). A name is known here when the mock models it (`modelled`: dotted paths, every prefix
//! implied), or when its first segment is a top-level field of ONTAP's schema that the mock does
//! not model (`ontap`, from netapp-ontap). Below a modelled top-level field only modelled paths
//! are known, so a typo such as `ip.adress` is caught.

mod ontap;

use serde_json::{Value, json};

/// The fields one collection knows.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// The collection's path, as `/_mock/schema` reports it.
    pub path: &'static str,
    /// Dotted paths the mock returns (each prefix is known too).
    pub modelled: &'static [&'static str],
    /// Top-level field names of ONTAP's schema for this collection.
    pub ontap: &'static [&'static str],
}

impl Schema {
    /// Whether `fields=`/a filter may name `path`.
    pub fn knows(&self, path: &str) -> bool {
        let path = path.trim_end_matches("._links");
        if path.is_empty() || path == "_links" {
            return true;
        }
        let first = path.split('.').next().unwrap_or(path);
        let modelled_top = self
            .modelled
            .iter()
            .any(|m| m.split('.').next() == Some(first));
        if modelled_top {
            self.modelled
                .iter()
                .any(|m| *m == path || m.strip_prefix(path).is_some_and(|r| r.starts_with('.')))
        } else {
            self.ontap.contains(&first)
        }
    }

    pub fn to_json(self) -> Value {
        json!({ "path": self.path, "modelled": self.modelled, "ontap": self.ontap })
    }
}

macro_rules! paths {
    ($($p:literal),* $(,)?) => { &[$($p),*] };
}

pub const CLUSTER: Schema = Schema {
    path: "/api/cluster",
    modelled: paths![
        "name",
        "uuid",
        "version.full",
        "version.generation",
        "version.major",
        "version.minor",
    ],
    ontap: ontap::CLUSTER,
};

pub const NODES: Schema = Schema {
    path: "/api/cluster/nodes",
    modelled: paths![
        "uuid",
        "name",
        "state",
        "membership",
        "model",
        "version.generation",
        "version.major",
        "version.minor",
    ],
    ontap: ontap::NODES,
};

pub const AGGREGATES: Schema = Schema {
    path: "/api/storage/aggregates",
    modelled: paths![
        "uuid",
        "name",
        "node.name",
        "node.uuid",
        "state",
        "volume-count",
        "space.block_storage.size",
        "space.block_storage.available",
        "space.block_storage.used",
    ],
    ontap: ontap::AGGREGATES,
};

pub const PORTS: Schema = Schema {
    path: "/api/network/ethernet/ports",
    modelled: paths![
        "uuid",
        "name",
        "node.name",
        "node.uuid",
        "type",
        "state",
        "enabled",
        "mtu",
        "speed",
        "broadcast_domain.name",
        "broadcast_domain.ipspace.name",
    ],
    ontap: ontap::PORTS,
};

pub const JOBS: Schema = Schema {
    path: "/api/cluster/jobs",
    modelled: paths![
        "uuid",
        "description",
        "state",
        "message",
        "code",
        "start_time",
        "end_time",
        "svm.name",
        "svm.uuid",
        "error.message",
        "error.code",
    ],
    ontap: ontap::JOBS,
};

pub const SVMS: Schema = Schema {
    path: "/api/svm/svms",
    modelled: paths![
        "uuid",
        "name",
        "subtype",
        "state",
        "comment",
        "language",
        "ipspace.name",
        "ipspace.uuid",
        "aggregates.name",
        "aggregates.uuid",
        "nfs.enabled",
        "nfs.allowed",
        "iscsi.enabled",
        "iscsi.allowed",
        "nvme.enabled",
        "nvme.allowed",
        "cifs.enabled",
        "cifs.allowed",
        "fcp.enabled",
        "fcp.allowed",
        "dns.domains",
        "dns.servers",
    ],
    ontap: ontap::SVMS,
};

pub const INTERFACES: Schema = Schema {
    path: "/api/network/ip/interfaces",
    modelled: paths![
        "uuid",
        "name",
        "enabled",
        "state",
        "scope",
        "ip.address",
        "ip.netmask",
        "ip.family",
        "svm.name",
        "svm.uuid",
        "ipspace.name",
        "location.home_node.name",
        "location.home_node.uuid",
        "location.home_port.name",
        "location.home_port.uuid",
        "location.home_port.node.name",
        "location.node.name",
        "location.node.uuid",
        "location.port.name",
        "location.port.uuid",
        "location.port.node.name",
        "location.broadcast_domain.name",
        "location.is_home",
        "location.auto_revert",
        "service_policy.name",
        "services",
        "vip",
    ],
    ontap: ontap::INTERFACES,
};

pub const BGP_PEER_GROUPS: Schema = Schema {
    path: "/api/network/ip/bgp/peer-groups",
    modelled: paths![
        "uuid",
        "name",
        "ipspace.name",
        "local.interface.name",
        "local.interface.uuid",
        "local.interface.ip.address",
        "local.port.name",
        "local.port.node.name",
        "peer.address",
        "peer.asn",
        "state",
    ],
    ontap: ontap::BGP_PEER_GROUPS,
};

pub const ACCOUNTS: Schema = Schema {
    path: "/api/security/accounts",
    modelled: paths![
        "owner.uuid",
        "owner.name",
        "name",
        "role.name",
        "applications.application",
        "applications.authentication_methods",
        "applications.second_authentication_method",
        "locked",
        "comment",
        "scope",
    ],
    ontap: ontap::ACCOUNTS,
};

pub const NFS_SERVICES: Schema = Schema {
    path: "/api/protocols/nfs/services",
    modelled: paths!["svm.name", "svm.uuid", "enabled", "state"],
    ontap: ontap::NFS_SERVICES,
};

pub const ISCSI_SERVICES: Schema = Schema {
    path: "/api/protocols/san/iscsi/services",
    modelled: paths![
        "svm.name",
        "svm.uuid",
        "enabled",
        "target.name",
        "target.alias",
    ],
    ontap: ontap::ISCSI_SERVICES,
};

pub const NVME_SERVICES: Schema = Schema {
    path: "/api/protocols/nvme/services",
    modelled: paths!["svm.name", "svm.uuid", "enabled"],
    ontap: ontap::NVME_SERVICES,
};

pub const SVM_PEERS: Schema = Schema {
    path: "/api/svm/peers",
    modelled: paths![
        "uuid",
        "name",
        "svm.name",
        "svm.uuid",
        "peer.svm.name",
        "peer.svm.uuid",
        "peer.cluster.name",
        "state",
        "applications",
    ],
    ontap: ontap::SVM_PEERS,
};

/// Every collection, for `/_mock/schema`.
pub const ALL: &[Schema] = &[
    CLUSTER,
    NODES,
    AGGREGATES,
    PORTS,
    JOBS,
    SVMS,
    INTERFACES,
    BGP_PEER_GROUPS,
    ACCOUNTS,
    NFS_SERVICES,
    ISCSI_SERVICES,
    NVME_SERVICES,
    SVM_PEERS,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modelled_paths_prefixes_and_unmodelled_ontap_fields() {
        assert!(INTERFACES.knows("ip.address"));
        assert!(INTERFACES.knows("ip"));
        assert!(INTERFACES.knows("location.home_node"));
        assert!(INTERFACES.knows("svm._links"));
        assert!(
            !INTERFACES.knows("ip.adress"),
            "a typo below a modelled field"
        );
        assert!(INTERFACES.knows("ddns_enabled"), "real, not modelled");
        assert!(!INTERFACES.knows("bogus"));
        assert!(AGGREGATES.knows("volume-count"));
        assert!(!AGGREGATES.knows("volume_count"));
        assert!(AGGREGATES.knows("block_storage.primary.disk_type"));
    }
}
