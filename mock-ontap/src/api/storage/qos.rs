//! QoS policies. Reading is open to the cluster admin and to an SVM's own accounts (their
//! SVM's policies); creating, changing and deleting them is for the cluster admin, as ONTAP
//! leaves policy groups to cluster administrators.

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use serde_json::Value;

use super::{Failure, listing, single};
use crate::api::{
    Pairs, job_answer, parse_body, refuse_unsettable, require_admin, return_timeout, wants_records,
    with_location,
};
use crate::error::ApiResult;
use crate::model::Principal;
use crate::schema;
use crate::state::MockState;

const QOS_POST: &[&str] = &[
    "name",
    "svm.uuid",
    "svm.name",
    "fixed.max_throughput_iops",
    "fixed.max_throughput_mbps",
    "fixed.min_throughput_iops",
    "fixed.min_throughput_mbps",
    "fixed.capacity_shared",
];
const QOS_PATCH: &[&str] = &[
    "name",
    "fixed.max_throughput_iops",
    "fixed.max_throughput_mbps",
    "fixed.min_throughput_iops",
    "fixed.min_throughput_mbps",
];
/// netapp-ontap's `QosPolicyFixed`: `capacity_shared` is postable, not patchable ("Once
/// capacity_shared is set, it cannot be modified").
const QOS_NOT_PATCHABLE: &[&str] = &["fixed.capacity_shared"];
const KEYS: &[&str] = &["uuid", "name"];

pub(super) async fn qos_policies(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    listing(
        query,
        &schema::QOS_POLICIES,
        "/api/storage/qos/policies",
        &["uuid"],
        KEYS,
        || Ok(state.model().0.qos_policy_records(&who)),
    )
}

pub(super) async fn qos_policy(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let record = state.model().0.qos_policy_record(&who, &uuid);
    single(&query, &schema::QOS_POLICIES, KEYS, record)
}

pub(super) async fn qos_policy_create(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let wait = return_timeout(&query)?;
    let body: Value = parse_body(&body, QOS_POST)?;
    let (job, record) = {
        let (mut model, now) = state.model();
        model.create_qos_policy(&who, &body, failure.map(|Extension(f)| f), now)?
    };
    let location = format!(
        "/api/storage/qos/policies/{}",
        record["uuid"].as_str().unwrap_or_default()
    );
    let record = wants_records(&query).then_some(record);
    Ok(with_location(
        job_answer(&job, record, wait).await,
        &location,
    ))
}

pub(super) async fn qos_policy_patch(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let wait = return_timeout(&query)?;
    refuse_unsettable(&body, QOS_NOT_PATCHABLE)?;
    let body: Value = parse_body(&body, QOS_PATCH)?;
    let job = {
        let (mut model, now) = state.model();
        model.patch_qos_policy(&who, &uuid, body, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}

pub(super) async fn qos_policy_delete(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    failure: Failure,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let wait = return_timeout(&query)?;
    let job = {
        let (mut model, now) = state.model();
        model.delete_qos_policy(&who, &uuid, failure.map(|Extension(f)| f), now)?
    };
    Ok(job_answer(&job, None, wait).await)
}
