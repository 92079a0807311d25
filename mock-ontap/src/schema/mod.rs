//! The field names each collection knows, for `fields=` and query filters.
//!
//! ONTAP refuses a `fields=` name it does not know with 400 code `262197` and a query parameter
//! that is neither a control parameter nor a field with 400 code `262179` (`Unexpected argument
//! "x".`). A name is known here when the mock models it (`modelled`: dotted paths, every prefix
//! implied), or when its first segment is a top-level field of ONTAP's schema that the mock does
//! not model (`ontap`, from netapp-ontap). Below a modelled top-level field only modelled paths
//! are known, so a typo such as `ip.adress` is caught.
//!
//! One file because it is one table, every collection's known names beside the rule that reads
//! them; `GET /_mock/schema` serves it whole and `tests/conformance/test_schema.py` compares it
//! with netapp-ontap's schemas as one list.

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
    /// Top-level fields of `ontap` the configured ONTAP release does not have yet: unknown.
    pub absent: &'static [&'static str],
}

impl Schema {
    /// Whether `fields=`/a filter may name `path`.
    pub fn knows(&self, path: &str) -> bool {
        let path = path.trim_end_matches("._links");
        if path.is_empty() || path == "_links" {
            return true;
        }
        let first = path.split('.').next().unwrap_or(path);
        if self.absent.contains(&first) {
            return false;
        }
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
    absent: &[],
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
    absent: &[],
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
    absent: &[],
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
        "broadcast_domain.uuid",
        "broadcast_domain.ipspace.name",
        "vlan.tag",
        "vlan.base_port.name",
        "vlan.base_port.uuid",
        "vlan.base_port.node.name",
    ],
    ontap: ontap::PORTS,
    absent: &[],
};

pub const BROADCAST_DOMAINS: Schema = Schema {
    path: "/api/network/ethernet/broadcast-domains",
    modelled: paths![
        "uuid",
        "name",
        "mtu",
        "ipspace.name",
        "ipspace.uuid",
        "ports.name",
        "ports.uuid",
        "ports.node.name",
    ],
    ontap: ontap::BROADCAST_DOMAINS,
    absent: &[],
};

pub const ROUTES: Schema = Schema {
    path: "/api/network/ip/routes",
    modelled: paths![
        "uuid",
        "destination.address",
        "destination.netmask",
        "destination.family",
        "gateway",
        "metric",
        "scope",
        "svm.name",
        "svm.uuid",
        "ipspace.name",
        "ipspace.uuid",
    ],
    ontap: ontap::ROUTES,
    absent: &[],
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
    absent: &[],
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
        "max_volumes",
        "storage.limit",
        "storage.limit_threshold_alert",
        "storage.allocated",
        "storage.available",
        "storage.used_percentage",
        "storage.limit_threshold_exceeded",
        "qos_policy.name",
        "qos_policy.uuid",
    ],
    ontap: ontap::SVMS,
    absent: &[],
};

/// The release that brought an SVM's `storage` (capacity limit and usage): 9.13.1 (NetApp,
/// "Manage the maximum capacity limit of a storage VM").
pub const SVM_STORAGE_SINCE: (u32, u32, u32) = (9, 13, 1);

/// SVMs on a release before [`SVM_STORAGE_SINCE`]: `storage` is an unknown field there.
pub const SVMS_BEFORE_STORAGE: Schema = Schema {
    absent: &["storage"],
    ..SVMS
};

/// The SVM fields of an ONTAP release.
pub fn svms_at(release: (u32, u32, u32)) -> &'static Schema {
    if release >= SVM_STORAGE_SINCE {
        &SVMS
    } else {
        &SVMS_BEFORE_STORAGE
    }
}

pub const QOS_POLICIES: Schema = Schema {
    path: "/api/storage/qos/policies",
    modelled: paths![
        "uuid",
        "name",
        "svm.name",
        "svm.uuid",
        "scope",
        "policy_class",
        "pgid",
        "object_count",
        "fixed.max_throughput_iops",
        "fixed.max_throughput_mbps",
        "fixed.min_throughput_iops",
        "fixed.min_throughput_mbps",
        "fixed.capacity_shared",
    ],
    ontap: ontap::QOS_POLICIES,
    absent: &[],
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
    absent: &[],
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
    absent: &[],
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
    absent: &[],
};

pub const NFS_SERVICES: Schema = Schema {
    path: "/api/protocols/nfs/services",
    modelled: paths!["svm.name", "svm.uuid", "enabled", "state"],
    ontap: ontap::NFS_SERVICES,
    absent: &[],
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
    absent: &[],
};

pub const NVME_SERVICES: Schema = Schema {
    path: "/api/protocols/nvme/services",
    modelled: paths!["svm.name", "svm.uuid", "enabled"],
    ontap: ontap::NVME_SERVICES,
    absent: &[],
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
    absent: &[],
};

pub const VOLUMES: Schema = Schema {
    path: "/api/storage/volumes",
    modelled: paths![
        "uuid",
        "name",
        "size",
        "state",
        "style",
        "type",
        "comment",
        "create_time",
        "svm.name",
        "svm.uuid",
        "aggregates.name",
        "aggregates.uuid",
        "guarantee.type",
        "snapshot_policy.name",
        "snapshot_directory_access_enabled",
        "encryption.enabled",
        "qos.policy.name",
        "tiering.policy",
        "language",
        "nas.path",
        "nas.security_style",
        "nas.unix_permissions",
        "nas.export_policy.name",
        "nas.export_policy.id",
        "space.size",
        "space.available",
        "space.used",
        "space.logical_space.used",
        "space.logical_space.available",
        "space.snapshot.used",
        "space.snapshot.reserve_percent",
        "snapshot_count",
    ],
    ontap: ontap::VOLUMES,
    absent: &[],
};

pub const SNAPSHOTS: Schema = Schema {
    path: "/api/storage/volumes/{}/snapshots",
    modelled: paths![
        "uuid",
        "name",
        "comment",
        "create_time",
        "size",
        "volume.name",
        "volume.uuid",
        "svm.name",
        "svm.uuid",
    ],
    ontap: ontap::SNAPSHOTS,
    absent: &[],
};

pub const EXPORT_POLICIES: Schema = Schema {
    path: "/api/protocols/nfs/export-policies",
    modelled: paths![
        "id",
        "name",
        "svm.name",
        "svm.uuid",
        "rules.index",
        "rules.clients.match",
        "rules.protocols",
        "rules.ro_rule",
        "rules.rw_rule",
        "rules.superuser",
        "rules.anonymous_user",
        "rules.allow_suid",
        "rules.allow_device_creation",
        "rules.chown_mode",
        "rules.ntfs_unix_security",
    ],
    ontap: ontap::EXPORT_POLICIES,
    absent: &[],
};

pub const EXPORT_RULES: Schema = Schema {
    path: "/api/protocols/nfs/export-policies/{}/rules",
    modelled: paths![
        "index",
        "clients.match",
        "protocols",
        "ro_rule",
        "rw_rule",
        "superuser",
        "anonymous_user",
        "allow_suid",
        "allow_device_creation",
        "chown_mode",
        "ntfs_unix_security",
        "policy.id",
        "policy.name",
        "svm.name",
        "svm.uuid",
    ],
    ontap: ontap::EXPORT_RULES,
    absent: &[],
};

pub const NAMESPACES: Schema = Schema {
    path: "/api/storage/namespaces",
    modelled: paths![
        "uuid",
        "name",
        "comment",
        "os_type",
        "enabled",
        "create_time",
        "svm.name",
        "svm.uuid",
        "location.volume.name",
        "location.volume.uuid",
        "location.namespace",
        "space.size",
        "space.used",
        "space.block_size",
        "status.state",
        "status.mapped",
        "status.read_only",
        "subsystem_map.subsystem.name",
        "subsystem_map.subsystem.uuid",
        "subsystem_map.nsid",
    ],
    ontap: ontap::NAMESPACES,
    absent: &[],
};

pub const NVME_SUBSYSTEMS: Schema = Schema {
    path: "/api/protocols/nvme/subsystems",
    modelled: paths![
        "uuid",
        "name",
        "comment",
        "os_type",
        "target_nqn",
        "serial_number",
        "svm.name",
        "svm.uuid",
        "hosts.nqn",
        "subsystem_maps.namespace.name",
        "subsystem_maps.namespace.uuid",
        "subsystem_maps.nsid",
    ],
    ontap: ontap::NVME_SUBSYSTEMS,
    absent: &[],
};

pub const NVME_SUBSYSTEM_HOSTS: Schema = Schema {
    path: "/api/protocols/nvme/subsystems/{}/hosts",
    modelled: paths!["nqn", "subsystem.uuid", "subsystem.name",],
    ontap: ontap::NVME_SUBSYSTEM_HOSTS,
    absent: &[],
};

pub const NVME_SUBSYSTEM_MAPS: Schema = Schema {
    path: "/api/protocols/nvme/subsystem-maps",
    modelled: paths![
        "svm.name",
        "svm.uuid",
        "subsystem.name",
        "subsystem.uuid",
        "namespace.name",
        "namespace.uuid",
        "nsid",
    ],
    ontap: ontap::NVME_SUBSYSTEM_MAPS,
    absent: &[],
};

pub const LUNS: Schema = Schema {
    path: "/api/storage/luns",
    modelled: paths![
        "uuid",
        "name",
        "comment",
        "os_type",
        "enabled",
        "serial_number",
        "create_time",
        "svm.name",
        "svm.uuid",
        "location.volume.name",
        "location.volume.uuid",
        "location.logical_unit",
        "space.size",
        "space.used",
        "space.guarantee.requested",
        "space.guarantee.reserved",
        "space.scsi_thin_provisioning_support_enabled",
        "status.state",
        "status.mapped",
        "status.read_only",
        "lun_maps.igroup.name",
        "lun_maps.igroup.uuid",
        "lun_maps.logical_unit_number",
        "qos_policy.name",
        "attributes.name",
        "attributes.value",
    ],
    ontap: ontap::LUNS,
    absent: &[],
};

pub const LUN_ATTRIBUTES: Schema = Schema {
    path: "/api/storage/luns/{}/attributes",
    modelled: paths!["name", "value"],
    ontap: ontap::LUN_ATTRIBUTES,
    absent: &[],
};

pub const LUN_MAP_REPORTING_NODES: Schema = Schema {
    path: "/api/protocols/san/lun-maps/{}/{}/reporting-nodes",
    modelled: paths!["uuid", "name", "lun.uuid", "igroup.uuid"],
    ontap: ontap::LUN_MAP_REPORTING_NODES,
    absent: &[],
};

/// No relationship is ever listed, so nothing is modelled: every top-level field of ONTAP's
/// schema is accepted, and names below it (`source.path`) are not checked further.
pub const SNAPMIRROR_RELATIONSHIPS: Schema = Schema {
    path: "/api/snapmirror/relationships",
    modelled: paths![],
    ontap: ontap::SNAPMIRROR_RELATIONSHIPS,
    absent: &[],
};

pub const IGROUPS: Schema = Schema {
    path: "/api/protocols/san/igroups",
    modelled: paths![
        "uuid",
        "name",
        "comment",
        "os_type",
        "protocol",
        "svm.name",
        "svm.uuid",
        "initiators.name",
        "lun_maps.logical_unit_number",
        "lun_maps.lun.name",
        "lun_maps.lun.uuid",
    ],
    ontap: ontap::IGROUPS,
    absent: &[],
};

pub const IGROUP_INITIATORS: Schema = Schema {
    path: "/api/protocols/san/igroups/{}/initiators",
    modelled: paths!["name", "comment", "igroup.name", "igroup.uuid",],
    ontap: ontap::IGROUP_INITIATORS,
    absent: &[],
};

pub const LUN_MAPS: Schema = Schema {
    path: "/api/protocols/san/lun-maps",
    modelled: paths![
        "svm.name",
        "svm.uuid",
        "lun.name",
        "lun.uuid",
        "igroup.name",
        "igroup.uuid",
        "logical_unit_number",
    ],
    ontap: ontap::LUN_MAPS,
    absent: &[],
};

pub const ISCSI_CREDENTIALS: Schema = Schema {
    path: "/api/protocols/san/iscsi/credentials",
    modelled: paths!["svm.name", "svm.uuid", "initiator", "authentication_type",],
    ontap: ontap::ISCSI_CREDENTIALS,
    absent: &[],
};

pub const ROLES: Schema = Schema {
    path: "/api/security/roles",
    modelled: paths![
        "owner.uuid",
        "owner.name",
        "name",
        "privileges.path",
        "privileges.access",
        "builtin",
        "scope",
    ],
    ontap: ontap::ROLES,
    absent: &[],
};

pub const ROLE_PRIVILEGES: Schema = Schema {
    path: "/api/security/roles/{}/{}/privileges",
    modelled: paths!["path", "access"],
    ontap: ontap::ROLE_PRIVILEGES,
    absent: &[],
};

/// Every collection, for `/_mock/schema`.
pub const ALL: &[Schema] = &[
    CLUSTER,
    NODES,
    AGGREGATES,
    PORTS,
    BROADCAST_DOMAINS,
    ROUTES,
    JOBS,
    SVMS,
    INTERFACES,
    BGP_PEER_GROUPS,
    ACCOUNTS,
    NFS_SERVICES,
    ISCSI_SERVICES,
    NVME_SERVICES,
    SVM_PEERS,
    VOLUMES,
    SNAPSHOTS,
    EXPORT_POLICIES,
    EXPORT_RULES,
    NAMESPACES,
    NVME_SUBSYSTEMS,
    NVME_SUBSYSTEM_HOSTS,
    NVME_SUBSYSTEM_MAPS,
    LUNS,
    IGROUPS,
    IGROUP_INITIATORS,
    LUN_MAPS,
    ISCSI_CREDENTIALS,
    LUN_ATTRIBUTES,
    LUN_MAP_REPORTING_NODES,
    SNAPMIRROR_RELATIONSHIPS,
    QOS_POLICIES,
    ROLES,
    ROLE_PRIVILEGES,
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

    #[test]
    fn svm_storage_is_unknown_before_9_13_1() {
        assert!(svms_at((9, 13, 1)).knows("storage.limit"));
        assert!(svms_at((9, 16, 1)).knows("storage"));
        assert!(!svms_at((9, 12, 1)).knows("storage.limit"));
        assert!(!svms_at((9, 12, 1)).knows("storage"));
        assert!(svms_at((9, 12, 1)).knows("max_volumes"));
    }
}
