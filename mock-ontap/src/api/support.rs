//! Endpoints real clients touch once at start-up that the mock answers without modelling them
//! further: SVM peers (Trident's `IsSVMDRCapable` and `GetPeeredVservers` list them), SnapMirror
//! relationships (Trident's volume delete lists them) and EMS application logs (Trident's
//! heartbeat, `EmsAutosupportLog`).

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{Query, State},
    response::Response,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Pairs, created, parse_body};
use crate::{
    error::{ApiError, ApiResult},
    model::Principal,
    query::{ListQuery, check_single},
    schema,
    state::MockState,
};

/// `GET /api/svm/peers`: the mock has no peer clusters, so no SVM has peers.
pub async fn svm_peers(
    Extension(_who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::SVM_PEERS)?;
    Ok(Json(q.collection(
        "/api/svm/peers",
        &["uuid"],
        &["uuid", "name"],
        std::iter::empty(),
    )))
}

/// `GET /api/snapmirror/relationships`: SnapMirror is not modelled, so there is no relationship
/// to list, for the cluster admin as for an SVM's account (which ONTAP shows only those whose
/// destination is in its SVM). Trident lists them before every volume delete and needs a
/// 200 with no records; `list_destinations_only` (NetApp: the destinations of relationships
/// whose source is here) is accepted as the boolean it is.
pub async fn snapmirror_relationships(
    Extension(_who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    if let Some((_, value)) = query
        .iter()
        .find(|(k, v)| k == LIST_DESTINATIONS_ONLY && v != "true" && v != "false")
    {
        return Err(ApiError::invalid_value(LIST_DESTINATIONS_ONLY, value));
    }
    let q = ListQuery::parse_with(
        query,
        &schema::SNAPMIRROR_RELATIONSHIPS,
        &[LIST_DESTINATIONS_ONLY],
    )?;
    Ok(Json(q.collection(
        "/api/snapmirror/relationships",
        &["uuid"],
        &["uuid"],
        std::iter::empty(),
    )))
}

const LIST_DESTINATIONS_ONLY: &str = "list_destinations_only";

/// `GET /api/snapmirror/relationships/{uuid}`: no relationship exists.
pub async fn snapmirror_relationship(
    Extension(_who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::SNAPMIRROR_RELATIONSHIPS)?;
    Err(ApiError::not_found("uuid"))
}

#[derive(Debug, Deserialize)]
struct ApplicationLog {
    severity: Option<String>,
}

/// The fields netapp-ontap's `EmsApplicationLog` lists as postable.
const EMS_FIELDS: &[&str] = &[
    "app_version",
    "autosupport_required",
    "category",
    "computer_name",
    "event_description",
    "event_id",
    "event_source",
    "severity",
];

/// netapp-ontap's enum for `severity`.
const SEVERITIES: &[&str] = &["emergency", "alert", "error", "notice"];

/// `POST /api/support/ems/application-logs`: 201; the log is kept for `/_mock/state`.
pub async fn ems_application_log(
    State(state): State<MockState>,
    Extension(_who): Extension<Principal>,
    body: Bytes,
) -> ApiResult<Response> {
    let log: ApplicationLog = parse_body(&body, EMS_FIELDS)?;
    if let Some(severity) = &log.severity
        && !SEVERITIES.contains(&severity.as_str())
    {
        return Err(ApiError::invalid_value("severity", severity));
    }
    let value: Value = serde_json::from_slice(&body).unwrap_or_else(|_| json!({}));
    state.model().0.log_ems(value);
    Ok(created("/api/support/ems/application-logs", None))
}
