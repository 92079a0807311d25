//! Volumes, snapshots, export policies, LUNs, NVMe namespaces and the SAN objects that expose
//! them, as Trident's ONTAP drivers call them. Volume and snapshot changes answer 202 + job, as
//! ONTAP documents them; the rest answers 201 (`Location`) or 200 at once. The cluster admin and
//! an SVM's own accounts may use them; another SVM's objects answer 404 as if absent.

use axum::{
    Extension, Json, Router,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
    routing::get,
};
use serde_json::Value;

use super::{
    Pairs, created, job_answer, ok_empty, parse_body, refuse_unsettable, return_timeout,
    wants_records, with_location,
};
use crate::{
    error::ApiResult,
    model::{InjectedFailure, Principal, San},
    query::{ListQuery, check_single, project_single},
    schema::{self, Schema},
    state::MockState,
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

// ------------------------------------------------------------------ volumes

async fn volumes(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::VOLUMES,
        "/api/storage/volumes",
        &["uuid"],
        &["uuid", "name"],
        || Ok(state.model().0.volume_records(&who)),
    )
}

async fn volume(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.volume_record(&who, &uuid);
    single(&query, &schema::VOLUMES, &["uuid", "name"], record)
}

async fn volume_create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let wait = return_timeout(&query)?;
    let body: Value = parse_body(&body, VOLUME_POST)?;
    let (job, record) = {
        let (mut model, now) = state.model();
        model.create_volume(&who, &body, failure.map(|Extension(f)| f), now)?
    };
    let location = format!(
        "/api/storage/volumes/{}",
        record["uuid"].as_str().unwrap_or_default()
    );
    let record = wants_records(&query).then_some(record);
    Ok(with_location(
        job_answer(&job, record, wait).await,
        &location,
    ))
}

async fn volume_patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let wait = return_timeout(&query)?;
    refuse_unsettable(&body, VOLUME_NOT_PATCHABLE)?;
    let body: Value = parse_body(&body, VOLUME_PATCH)?;
    let job = {
        let (mut model, now) = state.model();
        model.patch_volume(&who, &uuid, body, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}

async fn volume_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Response> {
    let wait = return_timeout(&query)?;
    let job = {
        let (mut model, now) = state.model();
        model.delete_volume(&who, &uuid, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}

// ------------------------------------------------------------------ snapshots

async fn snapshots(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(volume): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::SNAPSHOTS,
        &format!("/api/storage/volumes/{volume}/snapshots"),
        &["uuid"],
        &["uuid", "name"],
        || state.model().0.snapshot_records(&who, &volume),
    )
}

async fn snapshot(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((volume, uuid)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.snapshot_record(&who, &volume, &uuid);
    single(&query, &schema::SNAPSHOTS, &["uuid", "name"], record)
}

async fn snapshot_create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Path(volume): Path<String>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let wait = return_timeout(&query)?;
    let body: Value = parse_body(&body, SNAPSHOT_POST)?;
    let (job, record) = {
        let (mut model, now) = state.model();
        model.create_snapshot(&who, &volume, &body, failure.map(|Extension(f)| f), now)?
    };
    let location = format!(
        "/api/storage/volumes/{volume}/snapshots/{}",
        record["uuid"].as_str().unwrap_or_default()
    );
    let record = wants_records(&query).then_some(record);
    Ok(with_location(
        job_answer(&job, record, wait).await,
        &location,
    ))
}

async fn snapshot_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Path((volume, uuid)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Response> {
    let wait = return_timeout(&query)?;
    let job = {
        let (mut model, now) = state.model();
        model.delete_snapshot(&who, &volume, &uuid, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}

// ------------------------------------------------------------------ export policies

async fn policies(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::EXPORT_POLICIES,
        "/api/protocols/nfs/export-policies",
        &["id"],
        &["id", "name"],
        || Ok(state.model().0.policy_records(&who)),
    )
}

async fn policy(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.policy_record(&who, &id);
    single(&query, &schema::EXPORT_POLICIES, &["id", "name"], record)
}

async fn policy_create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let mut allowed: Vec<String> = POLICY_FIELDS.iter().map(|f| (*f).to_owned()).collect();
    allowed.extend(RULE_FIELDS.iter().map(|f| format!("rules.{f}")));
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let body: Value = parse_body(&body, &allowed)?;
    let (id, record) = state.model().0.create_policy(&who, &body)?;
    Ok(created(
        &format!("/api/protocols/nfs/export-policies/{id}"),
        wants_records(&query).then_some(record),
    ))
}

async fn policy_patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let mut allowed: Vec<String> = vec!["name".into(), "rules".into()];
    allowed.extend(RULE_FIELDS.iter().map(|f| format!("rules.{f}")));
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let body: Value = parse_body(&body, &allowed)?;
    state.model().0.patch_policy(&who, &id, &body)?;
    Ok(ok_empty())
}

async fn policy_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    state.model().0.delete_policy(&who, &id)?;
    Ok(ok_empty())
}

async fn rules(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::EXPORT_RULES,
        &format!("/api/protocols/nfs/export-policies/{id}/rules"),
        &["index"],
        &["index"],
        || state.model().0.rule_records(&who, &id),
    )
}

async fn rule(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((id, index)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.rule_record(&who, &id, &index);
    single(&query, &schema::EXPORT_RULES, &["index"], record)
}

async fn rule_create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = parse_body(&body, RULE_FIELDS)?;
    let record = state.model().0.create_rule(&who, &id, &body)?;
    let index = record["index"].as_u64().unwrap_or_default();
    Ok(created(
        &format!("/api/protocols/nfs/export-policies/{id}/rules/{index}"),
        wants_records(&query).then_some(record),
    ))
}

async fn rule_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((id, index)): Path<(String, String)>,
) -> ApiResult<Response> {
    state.model().0.delete_rule(&who, &id, &index)?;
    Ok(ok_empty())
}

async fn iscsi_credentials(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::ISCSI_CREDENTIALS,
        "/api/protocols/san/iscsi/credentials",
        &["svm.uuid", "initiator"],
        &["svm.uuid", "svm.name", "initiator"],
        || Ok(state.model().0.iscsi_credential_records(&who)),
    )
}

// ------------------------------------------------------------------ LUNs and namespaces

async fn block_list(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let asked = attributes_asked(&query);
    let mut answer = listing(
        query,
        schemas(san).blocks,
        paths(san).blocks,
        &["uuid"],
        &["uuid", "name"],
        || Ok(state.model().0.block_records(san, &who)),
    )?;
    if let Some(records) = answer.0["records"].as_array_mut()
        && !asked
    {
        records.iter_mut().for_each(drop_attributes);
    }
    Ok(answer)
}

/// Whether `fields=` asks for a LUN's `attributes`. NetApp lists them among the properties with
/// "an added computational cost" that a GET populates only when `fields` names them; `**`
/// (every field, expensive ones included) does, `*` does not.
fn attributes_asked(query: &Pairs) -> bool {
    query
        .iter()
        .filter(|(k, _)| k == "fields")
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .any(|f| f == "**" || f == "attributes" || f.starts_with("attributes."))
}

fn drop_attributes(record: &mut Value) {
    if let Some(obj) = record.as_object_mut() {
        obj.remove("attributes");
    }
}

async fn block_get(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let mut record = state.model().0.block_record(san, &who, &uuid);
    if let Ok(r) = &mut record
        && !attributes_asked(&query)
    {
        drop_attributes(r);
    }
    single(&query, schemas(san).blocks, &["uuid", "name"], record)
}

async fn block_create(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let fields = match san {
        San::Iscsi => LUN_POST,
        San::Nvme => NAMESPACE_POST,
    };
    let body: Value = parse_body(&body, fields)?;
    let record = {
        let (mut model, now) = state.model();
        model.create_block(san, &who, &body, now)?
    };
    let location = format!(
        "{}/{}",
        paths(san).blocks,
        record["uuid"].as_str().unwrap_or_default()
    );
    Ok(created(&location, wants_records(&query).then_some(record)))
}

async fn block_patch(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = parse_body(&body, BLOCK_PATCH)?;
    state.model().0.patch_block(san, &who, &uuid, &body)?;
    Ok(ok_empty())
}

async fn block_delete(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Response> {
    state
        .model()
        .0
        .delete_block(san, &who, &uuid, allow_mapped(&query))?;
    Ok(ok_empty())
}

// ------------------------------------------------------------------ igroups and subsystems

async fn group_list(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        schemas(san).groups,
        paths(san).groups,
        &["uuid"],
        &["uuid", "name"],
        || Ok(state.model().0.group_records(san, &who)),
    )
}

async fn group_get(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.group_record(san, &who, &uuid);
    single(&query, schemas(san).groups, &["uuid", "name"], record)
}

async fn group_create(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let fields = match san {
        San::Iscsi => IGROUP_POST,
        San::Nvme => SUBSYSTEM_POST,
    };
    let body: Value = parse_body(&body, fields)?;
    let record = state.model().0.create_group(san, &who, &body)?;
    let location = format!(
        "{}/{}",
        paths(san).groups,
        record["uuid"].as_str().unwrap_or_default()
    );
    Ok(created(&location, wants_records(&query).then_some(record)))
}

async fn group_delete(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Response> {
    state
        .model()
        .0
        .delete_group(san, &who, &uuid, allow_mapped(&query))?;
    Ok(ok_empty())
}

async fn member_list(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let p = paths(san);
    let key = match san {
        San::Iscsi => "name",
        San::Nvme => "nqn",
    };
    listing(
        query,
        schemas(san).members,
        &format!("{}/{uuid}/{}", p.groups, p.members),
        &[key],
        &[key],
        || state.model().0.member_records(san, &who, &uuid),
    )
}

async fn member_add(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let fields = match san {
        San::Iscsi => INITIATOR_POST,
        San::Nvme => HOST_POST,
    };
    let body: Value = parse_body(&body, fields)?;
    state.model().0.add_members(san, &who, &uuid, &body)?;
    let p = paths(san);
    Ok(created(&format!("{}/{uuid}/{}", p.groups, p.members), None))
}

async fn member_remove(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((uuid, member)): Path<(String, String)>,
) -> ApiResult<Response> {
    state.model().0.remove_member(san, &who, &uuid, &member)?;
    Ok(ok_empty())
}

// ------------------------------------------------------------------ maps

async fn map_list(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let (keys, defaults): (&[&str], &[&str]) = match san {
        San::Iscsi => (
            &["lun.uuid", "igroup.uuid"],
            &[
                "svm.uuid",
                "svm.name",
                "lun.uuid",
                "lun.name",
                "igroup.uuid",
                "igroup.name",
            ],
        ),
        San::Nvme => (
            &["namespace.uuid", "subsystem.uuid"],
            &[
                "svm.uuid",
                "svm.name",
                "subsystem.uuid",
                "subsystem.name",
                "namespace.uuid",
                "namespace.name",
            ],
        ),
    };
    let query = match san {
        San::Iscsi => lun_map_field_names(query),
        San::Nvme => query,
    };
    listing(
        query,
        schemas(san).maps,
        paths(san).maps,
        keys,
        defaults,
        || Ok(state.model().0.map_records(san, &who)),
    )
}

/// Trident's `LunMapInfo` (the iSCSI publish and unpublish path) asks for
/// `fields=svm,lun,igroup,logical-unit-number` and reads `logical_unit_number`, and that path
/// works against ONTAP; NetApp's schema knows only `logical_unit_number`. The mock takes the
/// hyphenated name (ONTAP's CLI spelling) as the REST one, on this field of LUN maps only.
fn lun_map_field_names(query: Pairs) -> Pairs {
    query
        .into_iter()
        .map(|(key, value)| {
            if key != "fields" {
                return (key, value);
            }
            let names: Vec<&str> = value
                .split(',')
                .map(|f| match f.trim() {
                    "logical-unit-number" => "logical_unit_number",
                    _ => f,
                })
                .collect();
            (key, names.join(","))
        })
        .collect()
}

/// The block object's and the group's uuids from a map's path, whose order differs.
fn map_ids(san: San, ids: (String, String)) -> (String, String) {
    match san {
        San::Iscsi => ids,
        San::Nvme => (ids.1, ids.0),
    }
}

async fn map_get(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(ids): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let (block, group) = map_ids(san, ids);
    let query = match san {
        San::Iscsi => lun_map_field_names(query),
        San::Nvme => query,
    };
    let record = state.model().0.map_record(san, &who, &block, &group);
    let keys: &[&str] = match san {
        San::Iscsi => &["lun.uuid", "igroup.uuid"],
        San::Nvme => &["subsystem.uuid", "namespace.uuid"],
    };
    single(&query, schemas(san).maps, keys, record)
}

async fn map_create(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let fields = match san {
        San::Iscsi => LUN_MAP_POST,
        San::Nvme => NAMESPACE_MAP_POST,
    };
    let body: Value = parse_body(&body, fields)?;
    let record = state.model().0.create_map(san, &who, &body)?;
    let location = record["_links"]["self"]["href"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(created(&location, wants_records(&query).then_some(record)))
}

async fn map_delete(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(ids): Path<(String, String)>,
) -> ApiResult<Response> {
    let (block, group) = map_ids(san, ids);
    state.model().0.delete_map(san, &who, &block, &group)?;
    Ok(ok_empty())
}

// ------------------------------------------------------------------ LUN attributes

async fn lun_attributes(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(lun): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::LUN_ATTRIBUTES,
        &format!("/api/storage/luns/{lun}/attributes"),
        &["name"],
        &["name"],
        || state.model().0.lun_attribute_records(&who, &lun),
    )
}

async fn lun_attribute(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, name)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.lun_attribute_record(&who, &lun, &name);
    single(&query, &schema::LUN_ATTRIBUTES, &["name"], record)
}

async fn lun_attribute_create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(lun): Path<String>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = parse_body(&body, LUN_ATTRIBUTE_POST)?;
    let record = state.model().0.create_lun_attribute(&who, &lun, &body)?;
    let location = record["_links"]["self"]["href"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(created(&location, wants_records(&query).then_some(record)))
}

async fn lun_attribute_patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, name)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let body: Value = parse_body(&body, LUN_ATTRIBUTE_PATCH)?;
    state
        .model()
        .0
        .patch_lun_attribute(&who, &lun, &name, &body)?;
    Ok(ok_empty())
}

async fn lun_attribute_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    state.model().0.delete_lun_attribute(&who, &lun, &name)?;
    Ok(ok_empty())
}

// ------------------------------------------------------------------ LUN map reporting nodes

async fn reporting_nodes(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, igroup)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::LUN_MAP_REPORTING_NODES,
        &format!("/api/protocols/san/lun-maps/{lun}/{igroup}/reporting-nodes"),
        &["uuid"],
        &["uuid", "name"],
        || state.model().0.reporting_node_records(&who, &lun, &igroup),
    )
}

async fn reporting_node(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, igroup, node)): Path<(String, String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state
        .model()
        .0
        .reporting_node_record(&who, &lun, &igroup, &node);
    single(
        &query,
        &schema::LUN_MAP_REPORTING_NODES,
        &["uuid", "name"],
        record,
    )
}
