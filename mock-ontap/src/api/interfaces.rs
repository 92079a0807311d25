use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::{Value, json};

use super::{
    Pairs, created, ok_empty, parse_body, refuse_unsettable, require_admin, wants_records,
};
use crate::{
    error::ApiResult,
    model::{InterfaceCreate, InterfacePatch, Principal, Row},
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const KEYS: &[&str] = &["uuid"];
const DEFAULT_FIELDS: &[&str] = &["uuid", "name"];

pub async fn list(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::INTERFACES)?;
    let rows = state.model().0.interface_rows(&who, &q);
    Ok(Json(q.collection(
        "/api/network/ip/interfaces",
        KEYS,
        DEFAULT_FIELDS,
        rows.iter().map(Row::to_json),
    )))
}

pub async fn get(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::INTERFACES)?;
    let (model, _) = state.model();
    let interface = model.interface_json(&who, &uuid)?;
    Ok(Json(project_single(&query, &interface, DEFAULT_FIELDS)))
}

pub async fn create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let req: InterfaceCreate = parse_body(&body, InterfaceCreate::FIELDS)?;
    let (mut model, _) = state.model();
    let (uuid, name) = model.create_interface(req)?;
    let record = wants_records(&query).then(|| json!({ "uuid": uuid, "name": name }));
    Ok(created(
        &format!("/api/network/ip/interfaces/{uuid}"),
        record,
    ))
}

pub async fn delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let (mut model, _) = state.model();
    model.delete_interface(&who, &uuid)?;
    Ok(ok_empty())
}

pub async fn patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    refuse_unsettable(&body, InterfacePatch::NOT_PATCHABLE)?;
    let patch: InterfacePatch = parse_body(&body, InterfacePatch::FIELDS)?;
    state.model().0.patch_interface(&uuid, patch)?;
    Ok(ok_empty())
}
