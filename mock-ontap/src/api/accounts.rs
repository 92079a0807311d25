//! Accounts. An SVM-scoped account may manage the accounts of its own SVM (as a vsadmin can),
//! and sees nothing of other SVMs.

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::{Value, json};

use super::{Pairs, created, ok_empty, parse_body, wants_records};
use crate::{
    error::ApiResult,
    model::{AccountCreate, AccountPatch, Principal, Row},
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const KEYS: &[&str] = &["owner.uuid", "name"];
const DEFAULT_FIELDS: &[&str] = &["owner.uuid", "owner.name", "name"];

pub async fn list(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::ACCOUNTS)?;
    let rows = state.model().0.account_rows(&who, &q);
    Ok(Json(q.collection(
        "/api/security/accounts",
        KEYS,
        DEFAULT_FIELDS,
        rows.iter().map(Row::to_json),
    )))
}

pub async fn get(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::ACCOUNTS)?;
    let (model, _) = state.model();
    let account = model.account_json(&who, &owner, &name)?;
    Ok(Json(project_single(&query, &account, DEFAULT_FIELDS)))
}

pub async fn create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    let req: AccountCreate = parse_body(&body, AccountCreate::FIELDS)?;
    let (mut model, _) = state.model();
    let (owner, name) = model.create_account(&who, req)?;
    let record = wants_records(&query).then(|| json!({ "owner": { "uuid": owner }, "name": name }));
    Ok(created(
        &format!("/api/security/accounts/{owner}/{name}"),
        record,
    ))
}

pub async fn patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let patch: AccountPatch = parse_body(&body, AccountPatch::FIELDS)?;
    let (mut model, _) = state.model();
    model.patch_account(&who, &owner, &name, patch)?;
    Ok(ok_empty())
}

pub async fn delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (mut model, _) = state.model();
    model.delete_account(&who, &owner, &name)?;
    Ok(ok_empty())
}
