//! REST roles (`/api/security/roles`) and their privileges, synchronous (201, 200). Reading is
//! open to an SVM's accounts (their SVM's roles); creating, changing and deleting roles is for
//! the cluster admin.

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
    model::Principal,
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const ROLE_POST: &[&str] = &[
    "name",
    "owner.uuid",
    "owner.name",
    "privileges.path",
    "privileges.access",
];
const PRIVILEGE_POST: &[&str] = &["path", "access"];
const PRIVILEGE_PATCH: &[&str] = &["access"];
const ROLE_DEFAULT_FIELDS: &[&str] = &["owner.uuid", "owner.name", "name"];
const PRIVILEGE_DEFAULT_FIELDS: &[&str] = &["path"];

pub async fn list(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::ROLES)?;
    let records = state.model().0.role_records(&who);
    Ok(Json(q.collection(
        "/api/security/roles",
        &["owner.uuid", "name"],
        ROLE_DEFAULT_FIELDS,
        records,
    )))
}

pub async fn get(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::ROLES)?;
    let record = state.model().0.role_record(&who, &owner, &name)?;
    Ok(Json(project_single(&query, &record, ROLE_DEFAULT_FIELDS)))
}

pub async fn create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let body: Value = parse_body(&body, ROLE_POST)?;
    let (owner, name) = state.model().0.create_role(&body)?;
    let record = wants_records(&query).then(|| json!({ "owner": { "uuid": owner }, "name": name }));
    Ok(created(
        &format!("/api/security/roles/{owner}/{name}"),
        record,
    ))
}

pub async fn delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_role(&owner, &name)?;
    Ok(ok_empty())
}

pub async fn privileges(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::ROLE_PRIVILEGES)?;
    let records = state.model().0.privilege_records(&who, &owner, &name)?;
    Ok(Json(q.collection(
        &format!("/api/security/roles/{owner}/{name}/privileges"),
        &["path"],
        PRIVILEGE_DEFAULT_FIELDS,
        records,
    )))
}

pub async fn privilege(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name, path)): Path<(String, String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::ROLE_PRIVILEGES)?;
    let record = state
        .model()
        .0
        .privilege_record(&who, &owner, &name, &path)?;
    Ok(Json(project_single(
        &query,
        &record,
        PRIVILEGE_DEFAULT_FIELDS,
    )))
}

pub async fn privilege_add(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let body: Value = parse_body(&body, PRIVILEGE_POST)?;
    let path = state.model().0.add_privilege(&owner, &name, &body)?;
    Ok(created(
        &format!(
            "/api/security/roles/{owner}/{name}/privileges/{}",
            path.replace('/', "%2F")
        ),
        None,
    ))
}

pub async fn privilege_patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name, path)): Path<(String, String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let body: Value = parse_body(&body, PRIVILEGE_PATCH)?;
    state
        .model()
        .0
        .patch_privilege(&owner, &name, &path, &body)?;
    Ok(ok_empty())
}

pub async fn privilege_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((owner, name, path)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_privilege(&owner, &name, &path)?;
    Ok(ok_empty())
}
