use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::Value;

use super::{
    Pairs, job_answer, parse_body, refuse_absent, refuse_unsettable, require_admin, return_timeout,
    wants_records, with_location,
};
use crate::{
    error::ApiResult,
    model::{InjectedFailure, Principal, Row, SvmCreate, SvmPatch},
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const KEYS: &[&str] = &["uuid"];

/// The SVM fields of the release the mock claims to be.
fn release_schema(state: &MockState) -> &'static schema::Schema {
    schema::svms_at(state.model().0.cluster.version.triple())
}
const DEFAULT_FIELDS: &[&str] = &["uuid", "name"];

pub async fn list(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, release_schema(&state))?;
    let rows = {
        let (model, now) = state.model();
        model.svm_rows(&who, &q, now)
    };
    Ok(Json(q.collection(
        "/api/svm/svms",
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
    check_single(&query, release_schema(&state))?;
    let (model, now) = state.model();
    let svm = model.svm_json(&who, &uuid, now)?;
    Ok(Json(project_single(&query, &svm, DEFAULT_FIELDS)))
}

pub async fn create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Option<Extension<InjectedFailure>>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let wait = return_timeout(&query)?;
    refuse_absent(&body, release_schema(&state))?;
    refuse_unsettable(&body, SvmCreate::NOT_POSTABLE)?;
    let req: SvmCreate = parse_body(&body, SvmCreate::FIELDS)?;
    let (job, uuid) = {
        let (mut model, now) = state.model();
        model.create_svm(req, failure.map(|Extension(f)| f), now)?
    };
    let record =
        wants_records(&query).then(|| serde_json::json!({ "uuid": uuid, "name": job.svm_name }));
    Ok(with_location(
        job_answer(&job, record, wait).await,
        &format!("/api/svm/svms/{uuid}"),
    ))
}

pub async fn patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Option<Extension<InjectedFailure>>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let wait = return_timeout(&query)?;
    refuse_absent(&body, release_schema(&state))?;
    refuse_unsettable(&body, SvmPatch::NOT_PATCHABLE)?;
    let patch: SvmPatch = parse_body(&body, SvmPatch::FIELDS)?;
    let job = {
        let (mut model, now) = state.model();
        model.patch_svm(&uuid, patch, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}

pub async fn delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Option<Extension<InjectedFailure>>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let wait = return_timeout(&query)?;
    let job = {
        let (mut model, now) = state.model();
        model.delete_svm(&uuid, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}
