//! The `/api` routes, with ONTAP's shapes: HAL collections, 202 + job for SVM changes, 201 +
//! `Location` for synchronous creation, and ONTAP's error body for every failure.

mod accounts;
mod bgp;
mod cluster;
mod interfaces;
mod jobs;
mod network;
mod protocols;
mod roles;
mod storage;
mod support;
mod svms;

use axum::{
    Json, Router,
    body::Bytes,
    http::{HeaderValue, StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::{any, get, post},
};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{
    error::{ApiError, ApiResult, codes},
    middleware::{auth, inject},
    model::{Job, Principal, Protocol},
    state::MockState,
};

pub fn routes(state: MockState) -> Router<MockState> {
    Router::new()
        .route("/api/cluster", get(cluster::cluster))
        .route("/api/cluster/nodes", get(cluster::nodes))
        .route("/api/cluster/nodes/{uuid}", get(cluster::node))
        .route("/api/storage/aggregates", get(cluster::aggregates))
        .route("/api/storage/aggregates/{uuid}", get(cluster::aggregate))
        .merge(network::routes())
        .route("/api/cluster/jobs", get(jobs::list))
        .route("/api/cluster/jobs/{uuid}", get(jobs::get))
        .route("/api/svm/svms", get(svms::list).post(svms::create))
        .route(
            "/api/svm/svms/{uuid}",
            get(svms::get).patch(svms::patch).delete(svms::delete),
        )
        .route(
            "/api/network/ip/interfaces",
            get(interfaces::list).post(interfaces::create),
        )
        .route(
            "/api/network/ip/interfaces/{uuid}",
            get(interfaces::get)
                .patch(interfaces::patch)
                .delete(interfaces::delete),
        )
        .route(
            "/api/network/ip/bgp/peer-groups",
            get(bgp::list).post(bgp::create),
        )
        .route(
            "/api/network/ip/bgp/peer-groups/{uuid}",
            get(bgp::get).delete(bgp::delete),
        )
        .route(
            "/api/security/accounts",
            get(accounts::list).post(accounts::create),
        )
        .route(
            "/api/security/accounts/{owner}/{name}",
            get(accounts::get)
                .patch(accounts::patch)
                .delete(accounts::delete),
        )
        .route("/api/security/roles", get(roles::list).post(roles::create))
        .route(
            "/api/security/roles/{owner}/{name}",
            get(roles::get).delete(roles::delete),
        )
        .route(
            "/api/security/roles/{owner}/{name}/privileges",
            get(roles::privileges).post(roles::privilege_add),
        )
        .route(
            "/api/security/roles/{owner}/{name}/privileges/{path}",
            get(roles::privilege)
                .patch(roles::privilege_patch)
                .delete(roles::privilege_delete),
        )
        .route("/api/svm/peers", get(support::svm_peers))
        .route(
            "/api/snapmirror/relationships",
            get(support::snapmirror_relationships),
        )
        .route(
            "/api/snapmirror/relationships/{uuid}",
            get(support::snapmirror_relationship),
        )
        .route(
            "/api/support/ems/application-logs",
            post(support::ems_application_log),
        )
        .merge(protocols::routes(Protocol::Nfs))
        .merge(protocols::routes(Protocol::Iscsi))
        .merge(protocols::routes(Protocol::Nvme))
        .merge(storage::routes())
        .route("/api", any(api_not_found))
        .route("/api/{*rest}", any(api_not_found))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
        .layer(middleware::from_fn_with_state(state, inject::inject))
}

async fn api_not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, codes::NOT_SUPPORTED, "API not found")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::NOT_SUPPORTED,
        "The method is not allowed on this resource",
    )
}

/// Query pairs as sent, in order; `Query<Vec<_>>` keeps repeated keys.
type Pairs = Vec<(String, String)>;

fn require_admin(who: &Principal) -> ApiResult<()> {
    match who {
        Principal::Admin { .. } => Ok(()),
        Principal::Svm { .. } => Err(ApiError::forbidden()),
    }
}

/// Parses a request body, refusing fields ONTAP does not know here (`allowed` lists dotted
/// leaf paths; a listed object path admits everything below it).
fn parse_body<T: DeserializeOwned>(body: &Bytes, allowed: &[&str]) -> ApiResult<T> {
    let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(codes::INVALID_FIELD, format!("Invalid JSON input: {e}"))
        })?
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            codes::INVALID_FIELD,
            "The request body must be a JSON object",
        ));
    }
    check_fields(&value, "", allowed)?;
    serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(codes::INVALID_FIELD_VALUE, format!("Invalid value: {e}"))
    })
}

/// Refuses a body that sets a field ONTAP reads but does not let this operation set: 400
/// `262196` `Field "x" cannot be set in this operation.` (ONTAP's generic code for it).
fn refuse_unsettable(body: &Bytes, unsettable: &[&str]) -> ApiResult<()> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Ok(()); // parse_body reports the malformed JSON
    };
    match unsettable.iter().find(|path| {
        path.split('.')
            .try_fold(&value, |v, key| v.get(key))
            .is_some()
    }) {
        Some(path) => Err(ApiError::cannot_set(path)),
        None => Ok(()),
    }
}

/// Refuses a body that sets a field the configured ONTAP release does not have yet, as ONTAP
/// refuses any field it does not know: 400 `262179` `Unexpected argument "x".`
fn refuse_absent(body: &Bytes, schema: &crate::schema::Schema) -> ApiResult<()> {
    let Ok(Value::Object(value)) = serde_json::from_slice::<Value>(body) else {
        return Ok(()); // parse_body reports the malformed JSON
    };
    match schema
        .absent
        .iter()
        .find(|field| value.contains_key(**field))
    {
        Some(field) => Err(ApiError::unexpected_argument(field)),
        None => Ok(()),
    }
}

fn check_fields(value: &Value, prefix: &str, allowed: &[&str]) -> ApiResult<()> {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                if allowed.contains(&path.as_str()) {
                    continue;
                }
                let nested = format!("{path}.");
                if (child.is_object() || child.is_array())
                    && allowed.iter().any(|a| a.starts_with(&nested))
                {
                    check_fields(child, &path, allowed)?;
                } else {
                    return Err(ApiError::unexpected_argument(&path));
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| check_fields(item, prefix, allowed)),
        _ => Ok(()),
    }
}

fn wants_records(query: &Pairs) -> bool {
    query
        .iter()
        .any(|(k, v)| k == "return_records" && v == "true")
}

fn with_location(mut response: Response, location: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// The longest `return_timeout` ONTAP accepts, in seconds.
const MAX_RETURN_TIMEOUT: u64 = 120;

/// The request's `return_timeout`: how long a change that starts a job may wait for it before
/// answering. ONTAP's default is 0 (answer 202 at once).
fn return_timeout(query: &Pairs) -> ApiResult<Duration> {
    let Some((_, value)) = query.iter().find(|(k, _)| k == "return_timeout") else {
        return Ok(Duration::ZERO);
    };
    match value.parse::<u64>() {
        Ok(seconds) if seconds <= MAX_RETURN_TIMEOUT => Ok(Duration::from_secs(seconds)),
        _ => Err(ApiError::invalid_value(
            "return_timeout",
            format!("{value} is not a number of seconds from 0 to {MAX_RETURN_TIMEOUT}"),
        )),
    }
}

/// The answer to a change carried by `job`, as ONTAP gives it: 202 with the job at once, or,
/// when the request asked to wait (`return_timeout`) and the job succeeded within that time,
/// 200 with the job (NetApp: "Asynchronous processing with the ONTAP REST API"). Called with
/// no lock on the model held: it may sleep.
async fn job_answer(job: &Job, record: Option<Value>, wait: Duration) -> Response {
    let mut body = json!({ "job": Job::link(&job.uuid) });
    if let (Some(record), Some(obj)) = (record, body.as_object_mut()) {
        obj.insert("num_records".into(), json!(1));
        obj.insert("records".into(), json!([record]));
    }
    let until_end = job.end_at.saturating_duration_since(Instant::now());
    if wait.is_zero() || until_end > wait {
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        return (StatusCode::ACCEPTED, Json(body)).into_response();
    }
    tokio::time::sleep(until_end).await;
    // NetApp documents the answer of a job that succeeds within the time only; one that fails
    // is answered as if the time had run out, and the client learns the failure from the job.
    let status = if job.failure.is_none() {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    (status, Json(body)).into_response()
}

/// 201 for synchronous creation; the body is empty unless `return_records=true`.
fn created(location: &str, record: Option<Value>) -> Response {
    let body = match record {
        Some(record) => json!({ "num_records": 1, "records": [record] }),
        None => json!({}),
    };
    with_location((StatusCode::CREATED, Json(body)).into_response(), location)
}

fn ok_empty() -> Response {
    (StatusCode::OK, Json(json!({}))).into_response()
}
