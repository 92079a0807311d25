//! Volumes, snapshots and NFS export policies.

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::Value;

use super::{
    Failure, POLICY_FIELDS, RULE_FIELDS, SNAPSHOT_POST, VOLUME_NOT_PATCHABLE, VOLUME_PATCH,
    VOLUME_POST, listing, single,
};
use crate::api::{
    Pairs, created, job_answer, ok_empty, parse_body, refuse_unsettable, return_timeout,
    wants_records, with_location,
};
use crate::error::ApiResult;
use crate::model::Principal;
use crate::schema;
use crate::state::MockState;

// ------------------------------------------------------------------ volumes

pub(super) async fn volumes(
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

pub(super) async fn volume(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.volume_record(&who, &uuid);
    single(&query, &schema::VOLUMES, &["uuid", "name"], record)
}

pub(super) async fn volume_create(
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

pub(super) async fn volume_patch(
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

pub(super) async fn volume_delete(
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

pub(super) async fn snapshots(
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

pub(super) async fn snapshot(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((volume, uuid)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.snapshot_record(&who, &volume, &uuid);
    single(&query, &schema::SNAPSHOTS, &["uuid", "name"], record)
}

pub(super) async fn snapshot_create(
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

pub(super) async fn snapshot_delete(
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

pub(super) async fn policies(
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

pub(super) async fn policy(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.policy_record(&who, &id);
    single(&query, &schema::EXPORT_POLICIES, &["id", "name"], record)
}

pub(super) async fn policy_create(
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

pub(super) async fn policy_patch(
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

pub(super) async fn policy_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    state.model().0.delete_policy(&who, &id)?;
    Ok(ok_empty())
}

pub(super) async fn rules(
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

pub(super) async fn rule(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((id, index)): Path<(String, String)>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.rule_record(&who, &id, &index);
    single(&query, &schema::EXPORT_RULES, &["index"], record)
}

pub(super) async fn rule_create(
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

pub(super) async fn rule_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path((id, index)): Path<(String, String)>,
) -> ApiResult<Response> {
    state.model().0.delete_rule(&who, &id, &index)?;
    Ok(ok_empty())
}

pub(super) async fn iscsi_credentials(
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
