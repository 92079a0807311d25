//! LUNs and NVMe namespaces, igroups and subsystems, maps, LUN attributes and reporting nodes.

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::Value;

use super::{
    BLOCK_PATCH, HOST_POST, IGROUP_POST, INITIATOR_POST, LUN_ATTRIBUTE_PATCH, LUN_ATTRIBUTE_POST,
    LUN_MAP_POST, LUN_POST, NAMESPACE_MAP_POST, NAMESPACE_POST, SUBSYSTEM_POST, allow_mapped,
    listing, paths, schemas, single,
};
use crate::api::{Pairs, created, ok_empty, parse_body, wants_records};
use crate::error::ApiResult;
use crate::model::{Principal, San};
use crate::schema;
use crate::state::MockState;

// ------------------------------------------------------------------ LUNs and namespaces

pub(super) async fn block_list(
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
pub(super) fn attributes_asked(query: &Pairs) -> bool {
    query
        .iter()
        .filter(|(k, _)| k == "fields")
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .any(|f| f == "**" || f == "attributes" || f.starts_with("attributes."))
}

pub(super) fn drop_attributes(record: &mut Value) {
    if let Some(obj) = record.as_object_mut() {
        obj.remove("attributes");
    }
}

pub(super) async fn block_get(
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

pub(super) async fn block_create(
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

pub(super) async fn block_patch(
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

pub(super) async fn block_delete(
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

pub(super) async fn group_list(
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

pub(super) async fn group_get(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.group_record(san, &who, &uuid);
    single(&query, schemas(san).groups, &["uuid", "name"], record)
}

pub(super) async fn group_create(
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

pub(super) async fn group_delete(
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

pub(super) async fn member_list(
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

pub(super) async fn member_add(
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

pub(super) async fn member_remove(
    san: San,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((uuid, member)): Path<(String, String)>,
) -> ApiResult<Response> {
    state.model().0.remove_member(san, &who, &uuid, &member)?;
    Ok(ok_empty())
}

// ------------------------------------------------------------------ maps

pub(super) async fn map_list(
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
pub(super) fn lun_map_field_names(query: Pairs) -> Pairs {
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
pub(super) fn map_ids(san: San, ids: (String, String)) -> (String, String) {
    match san {
        San::Iscsi => ids,
        San::Nvme => (ids.1, ids.0),
    }
}

pub(super) async fn map_get(
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

pub(super) async fn map_create(
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

pub(super) async fn map_delete(
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

pub(super) async fn lun_attributes(
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

pub(super) async fn lun_attribute(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, name)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.lun_attribute_record(&who, &lun, &name);
    single(&query, &schema::LUN_ATTRIBUTES, &["name"], record)
}

pub(super) async fn lun_attribute_create(
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

pub(super) async fn lun_attribute_patch(
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

pub(super) async fn lun_attribute_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((lun, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    state.model().0.delete_lun_attribute(&who, &lun, &name)?;
    Ok(ok_empty())
}

// ------------------------------------------------------------------ LUN map reporting nodes

pub(super) async fn reporting_nodes(
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

pub(super) async fn reporting_node(
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
