//! `/_mock`: the test-control API. No authentication, never faulted, never logged.

use std::collections::HashMap;

use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{delete, get, post},
};
use serde_json::{Value, json};

use crate::{config::SettingsPatch, faults::FaultSpec, requests::RequestRecord, state::MockState};

pub fn routes() -> Router<MockState> {
    Router::new()
        .route(
            "/_mock/faults",
            post(add_fault).get(list_faults).delete(clear_faults),
        )
        .route("/_mock/faults/{id}", delete(remove_fault))
        .route("/_mock/state", get(snapshot))
        .route("/_mock/reset", post(reset))
        .route("/_mock/requests", get(requests).delete(clear_requests))
        .route("/_mock/requests/counts", get(request_counts))
        .route("/_mock/config", get(config).put(update_config))
        .route("/_mock/schema", get(schema))
}

/// The field names each collection accepts in `fields=` and as filters.
async fn schema() -> Json<Value> {
    let collections: Vec<Value> = crate::schema::ALL.iter().map(|s| s.to_json()).collect();
    Json(json!({ "collections": collections }))
}

fn bad_request(message: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({ "error": { "message": message.into() } })),
    )
        .into_response()
}

async fn add_fault(State(state): State<MockState>, body: axum::body::Bytes) -> Response {
    let spec: FaultSpec = match serde_json::from_slice(&body) {
        Ok(spec) => spec,
        Err(e) => return bad_request(format!("invalid fault: {e}")),
    };
    match state.faults().add(spec) {
        Ok(id) => (StatusCode::CREATED, Json(json!({ "id": id }))).into_response(),
        Err(e) => bad_request(e),
    }
}

async fn list_faults(State(state): State<MockState>) -> Json<Value> {
    Json(state.faults().list())
}

async fn clear_faults(State(state): State<MockState>) -> StatusCode {
    state.faults().clear();
    StatusCode::NO_CONTENT
}

async fn remove_fault(State(state): State<MockState>, Path(id): Path<String>) -> Response {
    if state.faults().remove(&id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": { "message": format!("no fault {id}") } })),
        )
            .into_response()
    }
}

async fn snapshot(State(state): State<MockState>) -> Json<Value> {
    Json(state.snapshot())
}

async fn reset(State(state): State<MockState>) -> Response {
    match state.reset() {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": { "message": e.to_string() } })),
        )
            .into_response(),
    }
}

/// The request log, optionally narrowed by exact `method`, `path` or `user` and to the
/// requests from `since` (a `seq`) on; `next_seq` is where a later `since=` should start.
async fn requests(
    State(state): State<MockState>,
    Query(filter): Query<HashMap<String, String>>,
) -> Response {
    let since: u64 = match filter.get("since").map(|s| s.parse()) {
        None => 0,
        Some(Ok(since)) => since,
        Some(Err(_)) => return bad_request("since must be a request seq (an integer)"),
    };
    let wanted = |key: &str, value: &str| filter.get(key).is_none_or(|w| w == value);
    let (records, next_seq) = {
        let log = state.requests();
        let records: Vec<RequestRecord> = log
            .iter()
            .filter(|r| {
                r.seq >= since
                    && wanted("method", &r.method)
                    && wanted("path", &r.path)
                    && wanted("user", r.user.as_deref().unwrap_or_default())
            })
            .cloned()
            .collect();
        (records, log.next_seq())
    };
    Json(json!({ "records": records, "num_records": records.len(), "next_seq": next_seq }))
        .into_response()
}

/// Requests per `"METHOD path"` since the start or the last clear, however many the log
/// still holds.
async fn request_counts(State(state): State<MockState>) -> Json<Value> {
    let counts: serde_json::Map<String, Value> = state
        .requests()
        .counts()
        .map(|(method, path, n)| (format!("{method} {path}"), json!(n)))
        .collect();
    Json(json!({ "counts": counts }))
}

async fn clear_requests(State(state): State<MockState>) -> StatusCode {
    state.requests().clear();
    StatusCode::NO_CONTENT
}

async fn config(State(state): State<MockState>) -> Json<Value> {
    let (model, _) = state.model();
    Json(serde_json::to_value(&model.settings).unwrap_or_default())
}

async fn update_config(State(state): State<MockState>, body: axum::body::Bytes) -> Response {
    let patch: SettingsPatch = match serde_json::from_slice(&body) {
        Ok(patch) => patch,
        Err(e) => return bad_request(format!("invalid settings: {e}")),
    };
    let (mut model, _) = state.model();
    model.settings.apply(patch);
    Json(serde_json::to_value(&model.settings).unwrap_or_default()).into_response()
}
