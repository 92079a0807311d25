//! Volumes, snapshots, export policies, LUNs, NVMe namespaces and the SAN objects that expose
//! them, as Trident's ONTAP drivers call them. Volume and snapshot changes answer 202 + job, as
//! ONTAP documents them; the rest answers 201 (`Location`) or 200 at once. The cluster admin and
//! an SVM's own accounts may use them; another SVM's objects answer 404 as if absent.
//!
//! This file holds the routes and what the handlers share; the handlers are in `nas`
//! (volumes, snapshots, export policies) and `san` (LUNs, namespaces, their groups, maps and
//! attributes).

mod nas;
mod qos;
mod san;

use axum::{Extension, Json, Router, routing::get};
use serde_json::Value;

use super::Pairs;
use crate::{
    error::ApiResult,
    model::{InjectedFailure, San},
    query::{ListQuery, check_single, project_single},
    schema::{self, Schema},
    state::MockState,
};
use nas::{
    iscsi_credentials, policies, policy, policy_create, policy_delete, policy_patch, rule,
    rule_create, rule_delete, rules, snapshot, snapshot_create, snapshot_delete, snapshots, volume,
    volume_create, volume_delete, volume_patch, volumes,
};
use qos::{qos_policies, qos_policy, qos_policy_create, qos_policy_delete, qos_policy_patch};
use san::{
    block_create, block_delete, block_get, block_list, block_patch, group_create, group_delete,
    group_get, group_list, lun_attribute, lun_attribute_create, lun_attribute_delete,
    lun_attribute_patch, lun_attributes, map_create, map_delete, map_get, map_list, member_add,
    member_list, member_remove, reporting_node, reporting_nodes,
};

type Failure = Option<Extension<InjectedFailure>>;

const VOLUME_POST: &[&str] = &[
    "name",
    "size",
    "svm.uuid",
    "svm.name",
    "aggregates.name",
    "aggregates.uuid",
    "guarantee.type",
    "snapshot_policy.name",
    "snapshot_directory_access_enabled",
    "space.snapshot.reserve_percent",
    "comment",
    "state",
    "style",
    "type",
    "encryption.enabled",
    "qos.policy.name",
    "tiering.policy",
    "nas.path",
    "nas.security_style",
    "nas.unix_permissions",
    "nas.export_policy.name",
];
/// What Trident's drivers PATCH on a volume: resize, mount, rename, export policy, permissions,
/// comment, QoS, snapshot directory and reserve.
const VOLUME_PATCH: &[&str] = &[
    "name",
    "size",
    "comment",
    "guarantee.type",
    "snapshot_policy.name",
    "snapshot_directory_access_enabled",
    "space.snapshot.reserve_percent",
    "qos.policy.name",
    "tiering.policy",
    "nas.path",
    "nas.security_style",
    "nas.unix_permissions",
    "nas.export_policy.name",
];
/// netapp-ontap's Volume lists these as postable, not patchable.
const VOLUME_NOT_PATCHABLE: &[&str] = &["svm", "type", "language"];
// Trident names the volume's SVM in the body (`SnapshotCreate`); netapp-ontap's Snapshot has
// `svm`, and a snapshot lives in its volume's SVM.
const SNAPSHOT_POST: &[&str] = &["name", "comment", "svm.uuid", "svm.name"];
const POLICY_FIELDS: &[&str] = &["name", "svm.uuid", "svm.name", "rules"];
const RULE_FIELDS: &[&str] = &[
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
];
const LUN_POST: &[&str] = &[
    "name",
    "os_type",
    "comment",
    "svm.uuid",
    "svm.name",
    "space.size",
    "space.guarantee.requested",
    "space.scsi_thin_provisioning_support_enabled",
    "qos_policy.name",
    "attributes.name",
    "attributes.value",
];
/// netapp-ontap's `LunAttribute`: `name` and `value` postable, `value` patchable.
const LUN_ATTRIBUTE_POST: &[&str] = &["name", "value"];
const LUN_ATTRIBUTE_PATCH: &[&str] = &["value"];
const NAMESPACE_POST: &[&str] = &[
    "name",
    "os_type",
    "comment",
    "svm.uuid",
    "svm.name",
    "space.size",
    "space.block_size",
    "qos_policy.name",
];
const BLOCK_PATCH: &[&str] = &["space.size", "comment", "qos_policy.name"];
const IGROUP_POST: &[&str] = &[
    "name",
    "os_type",
    "protocol",
    "comment",
    "svm.uuid",
    "svm.name",
    "initiators.name",
];
const SUBSYSTEM_POST: &[&str] = &[
    "name",
    "os_type",
    "comment",
    "svm.uuid",
    "svm.name",
    "hosts.nqn",
];
const INITIATOR_POST: &[&str] = &["name", "records.name"];
const HOST_POST: &[&str] = &["nqn", "records.nqn"];
const LUN_MAP_POST: &[&str] = &[
    "svm.uuid",
    "svm.name",
    "lun.uuid",
    "lun.name",
    "igroup.uuid",
    "igroup.name",
    "logical_unit_number",
];
const NAMESPACE_MAP_POST: &[&str] = &[
    "svm.uuid",
    "svm.name",
    "namespace.uuid",
    "namespace.name",
    "subsystem.uuid",
    "subsystem.name",
];

/// A GET on a collection whose records the model built (in key order).
fn listing(
    query: Pairs,
    schema: &Schema,
    base: &str,
    keys: &[&str],
    defaults: &[&str],
    records: impl FnOnce() -> ApiResult<Vec<Value>>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, schema)?;
    let records = records()?;
    Ok(Json(q.collection(base, keys, defaults, records)))
}

/// A GET by key: every field, or the key fields plus those `fields=` names.
fn single(
    query: &Pairs,
    schema: &Schema,
    keys: &[&str],
    record: ApiResult<Value>,
) -> ApiResult<Json<Value>> {
    check_single(query, schema)?;
    Ok(Json(project_single(query, &record?, keys)))
}

fn allow_mapped(query: &Pairs) -> bool {
    query
        .iter()
        .any(|(k, v)| k == "allow_delete_while_mapped" && v == "true")
}

pub fn routes() -> Router<MockState> {
    Router::new()
        .route("/api/storage/volumes", get(volumes).post(volume_create))
        .route(
            "/api/storage/volumes/{uuid}",
            get(volume).patch(volume_patch).delete(volume_delete),
        )
        .route(
            "/api/storage/volumes/{uuid}/snapshots",
            get(snapshots).post(snapshot_create),
        )
        .route(
            "/api/storage/volumes/{uuid}/snapshots/{snapshot}",
            get(snapshot).delete(snapshot_delete),
        )
        .route(
            "/api/protocols/nfs/export-policies",
            get(policies).post(policy_create),
        )
        .route(
            "/api/protocols/nfs/export-policies/{id}",
            get(policy).patch(policy_patch).delete(policy_delete),
        )
        .route(
            "/api/protocols/nfs/export-policies/{id}/rules",
            get(rules).post(rule_create),
        )
        .route(
            "/api/protocols/nfs/export-policies/{id}/rules/{index}",
            get(rule).delete(rule_delete),
        )
        .route(
            "/api/protocols/san/iscsi/credentials",
            get(iscsi_credentials),
        )
        .route(
            "/api/storage/luns/{uuid}/attributes",
            get(lun_attributes).post(lun_attribute_create),
        )
        .route(
            "/api/storage/luns/{uuid}/attributes/{name}",
            get(lun_attribute)
                .patch(lun_attribute_patch)
                .delete(lun_attribute_delete),
        )
        .route(
            "/api/protocols/san/lun-maps/{lun}/{igroup}/reporting-nodes",
            get(reporting_nodes),
        )
        .route(
            "/api/protocols/san/lun-maps/{lun}/{igroup}/reporting-nodes/{uuid}",
            get(reporting_node),
        )
        .route(
            "/api/storage/qos/policies",
            get(qos_policies).post(qos_policy_create),
        )
        .route(
            "/api/storage/qos/policies/{uuid}",
            get(qos_policy)
                .patch(qos_policy_patch)
                .delete(qos_policy_delete),
        )
        .merge(san_routes(San::Iscsi))
        .merge(san_routes(San::Nvme))
}

struct SanPaths {
    blocks: &'static str,
    groups: &'static str,
    members: &'static str,
    maps: &'static str,
    map_key: &'static str,
}

fn paths(san: San) -> SanPaths {
    match san {
        San::Iscsi => SanPaths {
            blocks: "/api/storage/luns",
            groups: "/api/protocols/san/igroups",
            members: "initiators",
            maps: "/api/protocols/san/lun-maps",
            map_key: "{lun}/{igroup}",
        },
        San::Nvme => SanPaths {
            blocks: "/api/storage/namespaces",
            groups: "/api/protocols/nvme/subsystems",
            members: "hosts",
            maps: "/api/protocols/nvme/subsystem-maps",
            map_key: "{subsystem}/{namespace}",
        },
    }
}

struct SanSchemas {
    blocks: &'static Schema,
    groups: &'static Schema,
    members: &'static Schema,
    maps: &'static Schema,
}

fn schemas(san: San) -> SanSchemas {
    match san {
        San::Iscsi => SanSchemas {
            blocks: &schema::LUNS,
            groups: &schema::IGROUPS,
            members: &schema::IGROUP_INITIATORS,
            maps: &schema::LUN_MAPS,
        },
        San::Nvme => SanSchemas {
            blocks: &schema::NAMESPACES,
            groups: &schema::NVME_SUBSYSTEMS,
            members: &schema::NVME_SUBSYSTEM_HOSTS,
            maps: &schema::NVME_SUBSYSTEM_MAPS,
        },
    }
}

/// The LUN or namespace, igroup or subsystem, member and map routes of one SAN protocol.
fn san_routes(san: San) -> Router<MockState> {
    let p = paths(san);
    let block = format!("{}/{{uuid}}", p.blocks);
    let group = format!("{}/{{uuid}}", p.groups);
    let members = format!("{}/{{uuid}}/{}", p.groups, p.members);
    let member = format!("{members}/{{member}}");
    let map = format!("{}/{}", p.maps, p.map_key);
    Router::new()
        .route(
            p.blocks,
            get(move |s, w, q| block_list(san, s, w, q))
                .post(move |s, w, q, b| block_create(san, s, w, q, b)),
        )
        .route(
            &block,
            get(move |s, w, id, q| block_get(san, s, w, id, q))
                .patch(move |s, w, id, b| block_patch(san, s, w, id, b))
                .delete(move |s, w, id, q| block_delete(san, s, w, id, q)),
        )
        .route(
            p.groups,
            get(move |s, w, q| group_list(san, s, w, q))
                .post(move |s, w, q, b| group_create(san, s, w, q, b)),
        )
        .route(
            &group,
            get(move |s, w, id, q| group_get(san, s, w, id, q))
                .delete(move |s, w, id, q| group_delete(san, s, w, id, q)),
        )
        .route(
            &members,
            get(move |s, w, id, q| member_list(san, s, w, id, q))
                .post(move |s, w, id, b| member_add(san, s, w, id, b)),
        )
        .route(
            &member,
            axum::routing::delete(move |s, w, ids| member_remove(san, s, w, ids)),
        )
        .route(
            p.maps,
            get(move |s, w, q| map_list(san, s, w, q))
                .post(move |s, w, q, b| map_create(san, s, w, q, b)),
        )
        .route(
            &map,
            get(move |s, w, ids, q| map_get(san, s, w, ids, q))
                .delete(move |s, w, ids| map_delete(san, s, w, ids)),
        )
}
