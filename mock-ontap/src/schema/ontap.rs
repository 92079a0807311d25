//! Top-level field names of ONTAP's REST schemas, as netapp-ontap 9.19.1.0 (generated from
//! ONTAP's REST specification) lists them in `netapp_ontap/resources/*.py`. The mock accepts these
//! in `fields=` and as filters even where it does not model them (it then returns nothing for
//! them), so a client that asks for a real field is not refused; anything else is unknown.
//! tests/conformance/test_schema.py checks this file against the installed netapp-ontap.
//!
//! One file because it is one table, kept in netapp-ontap's order so that the conformance check
//! and a reader can compare it with the library line by line.

/// `netapp_ontap.resources.Svm` (9.19.1.0): every top-level field.
pub const SVMS: &[&str] = &[
    "aggregates",
    "aggregates_delegated",
    "anti_ransomware",
    "anti_ransomware_auto_switch_duration_without_new_file_extension",
    "anti_ransomware_auto_switch_from_learning_to_enabled",
    "anti_ransomware_auto_switch_minimum_file_count",
    "anti_ransomware_auto_switch_minimum_file_extension",
    "anti_ransomware_auto_switch_minimum_incoming_data",
    "anti_ransomware_auto_switch_minimum_learning_period",
    "anti_ransomware_default_volume_state",
    "anti_ransomware_incoming_write_threshold",
    "anti_ransomware_incoming_write_threshold_percent",
    "auto_enable_activity_tracking",
    "auto_enable_analytics",
    "certificate",
    "cifs",
    "comment",
    "dns",
    "fc_interfaces",
    "fcp",
    "ip_interfaces",
    "ipspace",
    "is_space_enforcement_logical",
    "is_space_reporting_logical",
    "iscsi",
    "language",
    "ldap",
    "max_volumes",
    "name",
    "ndmp",
    "nfs",
    "nis",
    "nsswitch",
    "number_of_volumes_in_recovery_queue",
    "nvme",
    "qos_adaptive_policy_group_template",
    "qos_policy",
    "qos_policy_group_template",
    "routes",
    "s3",
    "san_multipathing",
    "snapmirror",
    "snapshot_autodelete_enabled",
    "snapshot_policy",
    "snapshot_reserve_percent",
    "state",
    "storage",
    "subtype",
    "total_volume_size_in_recovery_queue",
    "uuid",
];

/// `netapp_ontap.resources.IpInterface` (9.19.1.0): every top-level field.
pub const INTERFACES: &[&str] = &[
    "ddns_enabled",
    "dns_zone",
    "enabled",
    "fail_if_subnet_conflicts",
    "ip",
    "ipspace",
    "location",
    "metric",
    "name",
    "probe_port",
    "rdma_protocols",
    "scope",
    "service_policy",
    "services",
    "state",
    "statistics",
    "subnet",
    "svm",
    "uuid",
    "vip",
];

/// `netapp_ontap.resources.Account` (9.19.1.0): every top-level field.
pub const ACCOUNTS: &[&str] = &[
    "applications",
    "comment",
    "locked",
    "name",
    "owner",
    "password",
    "password_hash_algorithm",
    "role",
    "scope",
];

/// `netapp_ontap.resources.Aggregate` (9.19.1.0): every top-level field.
pub const AGGREGATES: &[&str] = &[
    "_tags",
    "block_storage",
    "cloud_storage",
    "create_time",
    "data_encryption",
    "dr_home_node",
    "home_node",
    "inactive_data_reporting",
    "inode_attributes",
    "is_spare_low",
    "metric",
    "name",
    "node",
    "sidl_enabled",
    "snaplock_type",
    "snapshot",
    "space",
    "state",
    "statistics",
    "uuid",
    "volume-count",
];

/// `netapp_ontap.resources.Node` (9.19.1.0): every top-level field.
pub const NODES: &[&str] = &[
    "anti_ransomware_version",
    "cluster_interface",
    "cluster_interfaces",
    "controller",
    "date",
    "external_cache",
    "external_cache_bypass",
    "ha",
    "hw_assist",
    "is_spares_low",
    "location",
    "management_interface",
    "management_interfaces",
    "membership",
    "metric",
    "metrocluster",
    "model",
    "name",
    "nvlog",
    "nvram",
    "owner",
    "serial_number",
    "service_processor",
    "snaplock",
    "state",
    "statistics",
    "storage_availability_zones",
    "storage_configuration",
    "system_aggregate",
    "system_id",
    "system_machine_type",
    "uptime",
    "uuid",
    "vendor_serial_number",
    "version",
    "vm",
];

/// `netapp_ontap.resources.Port` (9.19.1.0): every top-level field.
pub const PORTS: &[&str] = &[
    "broadcast_domain",
    "discovered_devices",
    "enabled",
    "flowcontrol_admin",
    "interface_count",
    "lag",
    "mac_address",
    "metric",
    "mtu",
    "name",
    "node",
    "pfc_queues_admin",
    "rdma_protocols",
    "reachability",
    "reachable_broadcast_domains",
    "speed",
    "state",
    "statistics",
    "type",
    "uuid",
    "vlan",
];

/// `netapp_ontap.resources.Job` (9.19.1.0): every top-level field.
pub const JOBS: &[&str] = &[
    "code",
    "description",
    "end_time",
    "error",
    "message",
    "node",
    "start_time",
    "state",
    "svm",
    "uuid",
];

/// `netapp_ontap.resources.Cluster` (9.19.1.0): every top-level field.
pub const CLUSTER: &[&str] = &[
    "_tags",
    "active_directory",
    "auto_enable_activity_tracking",
    "auto_enable_analytics",
    "certificate",
    "cluster_network_overlay_enabled",
    "configuration_backup",
    "contact",
    "disaggregated",
    "dns_domains",
    "ha",
    "license",
    "location",
    "management_interface",
    "management_interfaces",
    "metric",
    "name",
    "name_servers",
    "nodes",
    "ntp_servers",
    "password",
    "peering_policy",
    "san_optimized",
    "statistics",
    "timezone",
    "uuid",
    "version",
];

/// `netapp_ontap.resources.BgpPeerGroup` (9.19.1.0): every top-level field.
pub const BGP_PEER_GROUPS: &[&str] = &["ipspace", "local", "name", "peer", "state", "uuid"];

/// `netapp_ontap.resources.BroadcastDomain` (9.19.1.0): every top-level field.
pub const BROADCAST_DOMAINS: &[&str] = &["ipspace", "mtu", "name", "ports", "uuid"];

/// `netapp_ontap.resources.NetworkRoute` (9.19.1.0): every top-level field.
pub const ROUTES: &[&str] = &[
    "destination",
    "gateway",
    "interfaces",
    "ipspace",
    "metric",
    "scope",
    "svm",
    "uuid",
];

/// `netapp_ontap.resources.NfsService` (9.19.1.0): every top-level field.
pub const NFS_SERVICES: &[&str] = &[
    "access_cache_config",
    "auth_sys_extended_groups_enabled",
    "credential_cache",
    "enabled",
    "exports",
    "extended_groups_limit",
    "file_session_io_grouping_count",
    "file_session_io_grouping_duration",
    "metric",
    "protocol",
    "protocol_access_rules",
    "qtree",
    "root",
    "rquota_enabled",
    "security",
    "showmount_enabled",
    "state",
    "statistics",
    "svm",
    "transport",
    "vstorage_enabled",
    "windows",
];

/// `netapp_ontap.resources.IscsiService` (9.19.1.0): every top-level field.
pub const ISCSI_SERVICES: &[&str] = &["enabled", "metric", "statistics", "svm", "target"];

/// `netapp_ontap.resources.NvmeService` (9.19.1.0): every top-level field.
pub const NVME_SERVICES: &[&str] = &["enabled", "metric", "statistics", "svm"];

/// `netapp_ontap.resources.SvmPeer` (9.19.1.0): every top-level field.
pub const SVM_PEERS: &[&str] = &[
    "applications",
    "force",
    "name",
    "peer",
    "state",
    "svm",
    "uuid",
];

/// `netapp_ontap.resources.Volume` (9.19.1.0): every top-level field.
pub const VOLUMES: &[&str] = &[
    "_tags",
    "access_time_enabled",
    "activity_tracking",
    "aggregates",
    "aggressive_readahead_mode",
    "analytics",
    "anti_ransomware",
    "application",
    "asynchronous_directory_delete",
    "autosize",
    "clone",
    "cloud_retrieval_policy",
    "cloud_write_enabled",
    "comment",
    "consistency_group",
    "constituent_count",
    "constituents",
    "constituents_per_aggregate",
    "convert_unicode",
    "create_time",
    "efficiency",
    "encryption",
    "error_state",
    "files",
    "flash_pool",
    "flexcache_endpoint_type",
    "flexgroup",
    "granular_data",
    "granular_data_mode",
    "guarantee",
    "has_dir_index_public",
    "has_large_dir",
    "is_dir_index_transfer_enabled",
    "is_large_dir_enabled",
    "is_object_store",
    "is_s3_arbitrary_part_size_enabled",
    "is_svm_root",
    "language",
    "max_dir_size",
    "metric",
    "movement",
    "msid",
    "name",
    "nas",
    "nodes",
    "optimize_aggregates",
    "qos",
    "queue_for_encryption",
    "quota",
    "rebalancing",
    "scheduled_snapshot_naming_scheme",
    "size",
    "sizing_method",
    "smas_protection",
    "snaplock",
    "snapmirror",
    "snapshot_count",
    "snapshot_directory_access_enabled",
    "snapshot_locking_enabled",
    "snapshot_policy",
    "space",
    "state",
    "statistics",
    "status",
    "style",
    "svm",
    "svm_dr_protection",
    "tiering",
    "type",
    "use_mirrored_aggregates",
    "uuid",
    "validate_only",
];

/// `netapp_ontap.resources.Snapshot` (9.19.1.0): every top-level field.
pub const SNAPSHOTS: &[&str] = &[
    "comment",
    "compress_savings",
    "create_time",
    "dedup_savings",
    "delta",
    "expiry_time",
    "logical_size",
    "name",
    "owners",
    "provenance_volume",
    "reclaimable_space",
    "size",
    "snaplock",
    "snaplock_expiry_time",
    "snapmirror_label",
    "state",
    "svm",
    "uuid",
    "vbn0_savings",
    "version_uuid",
    "volume",
];

/// `netapp_ontap.resources.ExportPolicy` (9.19.1.0): every top-level field.
pub const EXPORT_POLICIES: &[&str] = &["are_rules_truncated", "id", "name", "rules", "svm"];

/// `netapp_ontap.resources.ExportRule` (9.19.1.0): every top-level field.
pub const EXPORT_RULES: &[&str] = &[
    "allow_device_creation",
    "allow_nfs_tls_only",
    "allow_suid",
    "anonymous_user",
    "chown_mode",
    "clients",
    "index",
    "ntfs_unix_security",
    "policy",
    "protocols",
    "ro_rule",
    "rw_rule",
    "superuser",
    "svm",
];

/// `netapp_ontap.resources.NvmeNamespace` (9.19.1.0): every top-level field.
pub const NAMESPACES: &[&str] = &[
    "auto_delete",
    "clone",
    "comment",
    "consistency_group",
    "convert",
    "create_time",
    "enabled",
    "encryption",
    "location",
    "metric",
    "name",
    "os_type",
    "provisioning_options",
    "qos_policy",
    "space",
    "statistics",
    "status",
    "subsystem_map",
    "svm",
    "uuid",
];

/// `netapp_ontap.resources.NvmeSubsystem` (9.19.1.0): every top-level field.
pub const NVME_SUBSYSTEMS: &[&str] = &[
    "comment",
    "delete_on_unmap",
    "hosts",
    "io_queue",
    "name",
    "os_type",
    "replication",
    "serial_number",
    "subsystem_maps",
    "svm",
    "target_nqn",
    "uuid",
    "vendor_uuids",
];

/// `netapp_ontap.resources.NvmeSubsystemHost` (9.19.1.0): every top-level field.
pub const NVME_SUBSYSTEM_HOSTS: &[&str] = &[
    "dh_hmac_chap",
    "io_queue",
    "nqn",
    "priority",
    "proximity",
    "records",
    "subsystem",
    "tls",
];

/// `netapp_ontap.resources.NvmeSubsystemMap` (9.19.1.0): every top-level field.
pub const NVME_SUBSYSTEM_MAPS: &[&str] = &["anagrpid", "namespace", "nsid", "subsystem", "svm"];

/// `netapp_ontap.resources.Lun` (9.19.1.0): every top-level field.
pub const LUNS: &[&str] = &[
    "access_mode",
    "attributes",
    "auto_delete",
    "class",
    "clone",
    "comment",
    "consistency_group",
    "convert",
    "copy",
    "create_time",
    "enabled",
    "encryption",
    "location",
    "lun_maps",
    "metric",
    "movement",
    "name",
    "os_type",
    "provisioning_options",
    "qos_policy",
    "serial_number",
    "serial_number_hex",
    "space",
    "statistics",
    "status",
    "svm",
    "uuid",
    "vvol",
];

/// `netapp_ontap.resources.Igroup` (9.19.1.0): every top-level field.
pub const IGROUPS: &[&str] = &[
    "comment",
    "connectivity_tracking",
    "delete_on_unmap",
    "igroups",
    "initiators",
    "lun_maps",
    "name",
    "os_type",
    "parent_igroups",
    "portset",
    "protocol",
    "replication",
    "supports_igroups",
    "svm",
    "target",
    "uuid",
];

/// `netapp_ontap.resources.IgroupInitiator` (9.19.1.0): every top-level field.
pub const IGROUP_INITIATORS: &[&str] = &[
    "comment",
    "connectivity_tracking",
    "igroup",
    "name",
    "proximity",
    "records",
];

/// `netapp_ontap.resources.LunMap` (9.19.1.0): every top-level field.
pub const LUN_MAPS: &[&str] = &[
    "igroup",
    "logical_unit_number",
    "lun",
    "replicated",
    "reporting_nodes",
    "svm",
];

/// `netapp_ontap.resources.IscsiCredentials` (9.19.1.0): every top-level field.
pub const ISCSI_CREDENTIALS: &[&str] = &[
    "authentication_type",
    "chap",
    "initiator",
    "initiator_address",
    "svm",
];

/// `netapp_ontap.resources.LunAttribute` (9.19.1.0): every top-level field.
pub const LUN_ATTRIBUTES: &[&str] = &["lun", "name", "value"];

/// `netapp_ontap.resources.LunMapReportingNode` (9.19.1.0): every top-level field.
pub const LUN_MAP_REPORTING_NODES: &[&str] = &["igroup", "lun", "name", "uuid"];

/// `netapp_ontap.resources.SnapmirrorRelationship` (9.19.1.0): every top-level field.
pub const SNAPMIRROR_RELATIONSHIPS: &[&str] = &[
    "backoff_level",
    "consistency_group_failover",
    "create_destination",
    "destination",
    "exported_snapshot",
    "group_type",
    "healthy",
    "identity_preservation",
    "io_serving_copy",
    "lag_time",
    "last_transfer_network_compression_ratio",
    "last_transfer_type",
    "master_bias_activated_site",
    "policy",
    "preferred_site",
    "preserve",
    "quick_resync",
    "recover_after_break",
    "restore",
    "restore_to_snapshot",
    "selective_volumes",
    "source",
    "state",
    "svmdr_volumes",
    "throttle",
    "total_transfer_bytes",
    "total_transfer_duration",
    "transfer",
    "transfer_schedule",
    "unhealthy_reason",
    "uuid",
];

/// `netapp_ontap.resources.QosPolicy` (9.19.1.0): every top-level field.
pub const QOS_POLICIES: &[&str] = &[
    "adaptive",
    "burst",
    "fixed",
    "name",
    "object_count",
    "pgid",
    "policy_class",
    "scope",
    "svm",
    "uuid",
];

/// `netapp_ontap.resources.Role` (9.19.1.0): every top-level field.
pub const ROLES: &[&str] = &["builtin", "name", "owner", "privileges", "scope"];

/// `netapp_ontap.resources.RolePrivilege` (9.19.1.0): every top-level field.
pub const ROLE_PRIVILEGES: &[&str] = &["access", "path", "query"];
