//! `/api/network/ip/bgp/peer-groups`: cluster-scoped, so for the cluster admin only.

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::{Value, json};

use super::{Pairs, created, ok_empty, parse_body, require_admin, wants_records};
use crate::{
    error::ApiResult,
    model::{PeerGroupCreate, Principal, Row},
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const PATH: &str = "/api/network/ip/bgp/peer-groups";
const KEYS: &[&str] = &["uuid"];
const DEFAULT_FIELDS: &[&str] = &["uuid", "name"];

pub async fn list(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    let q = ListQuery::parse(query, &schema::BGP_PEER_GROUPS)?;
    let rows = state.model().0.peer_group_rows(&q);
    Ok(Json(q.collection(
        PATH,
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
    require_admin(&who)?;
    check_single(&query, &schema::BGP_PEER_GROUPS)?;
    let group = state.model().0.peer_group_json(&uuid)?;
    Ok(Json(project_single(&query, &group, DEFAULT_FIELDS)))
}

pub async fn create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let req: PeerGroupCreate = parse_body(&body, PeerGroupCreate::FIELDS)?;
    let (uuid, name) = state.model().0.create_peer_group(req)?;
    let record = wants_records(&query).then(|| json!({ "uuid": uuid, "name": name }));
    Ok(created(&format!("{PATH}/{uuid}"), record))
}

pub async fn delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_peer_group(&uuid)?;
    Ok(ok_empty())
}
