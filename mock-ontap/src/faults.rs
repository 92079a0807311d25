//! Fault injection: rules registered through `/_mock/faults` that make matching `/api` requests
//! fail, slow down, lose their answer or break their connection.
//!
//! The same middleware logs every `/api` request, because it is the only layer that still sees
//! requests a fault cut short.

use std::time::Duration;

use axum::{
    extract::{Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{
    auth::basic_credentials,
    error::{ApiError, codes},
    model::InjectedFailure,
    requests::{FaultHit, RequestRecord},
    server::ConnectionControl,
    state::MockState,
};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Any method when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Exact request path, or a prefix when it ends with `*`.
    pub path: String,
    /// Let this many matching requests through before the fault fires.
    #[serde(default)]
    pub after: u64,
    /// Fire at most this many times; unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// Chance that an eligible request is hit; 1.0 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    pub action: FaultAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultAction {
    /// Answer with an ONTAP error body; the request is not applied.
    Error {
        #[serde(default = "default_status")]
        status: u16,
        #[serde(default = "default_code")]
        code: String,
        #[serde(default = "default_message")]
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
    },
    /// Wait, then handle the request normally.
    Delay { ms: u64 },
    /// Close the connection without an answer; the request is not applied.
    Reset,
    /// Apply the request, then close the connection instead of answering.
    ApplyThenReset,
    /// The job the request starts ends in failure and applies nothing.
    JobFailure {
        #[serde(default = "default_code")]
        code: String,
        #[serde(default = "default_message")]
        message: String,
    },
    /// Never answer.
    Hang,
}

fn default_status() -> u16 {
    500
}

fn default_code() -> String {
    codes::INTERNAL_RETRY.into()
}

fn default_message() -> String {
    "Internal error. Wait a few minutes, and then try the command again.".into()
}

impl FaultAction {
    pub fn name(&self) -> &'static str {
        match self {
            FaultAction::Error { .. } => "error",
            FaultAction::Delay { .. } => "delay",
            FaultAction::Reset => "reset",
            FaultAction::ApplyThenReset => "apply_then_reset",
            FaultAction::JobFailure { .. } => "job_failure",
            FaultAction::Hang => "hang",
        }
    }
}

#[derive(Debug, Clone)]
struct Fault {
    id: String,
    spec: FaultSpec,
    /// Requests that matched method and path, fired or not.
    matched: u64,
    /// Requests the action was applied to.
    hits: u64,
}

impl Fault {
    fn matches(&self, method: &Method, path: &str) -> bool {
        let method_ok = self
            .spec
            .method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(method.as_str()));
        let path_ok = match self.spec.path.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => path == self.spec.path,
        };
        method_ok && path_ok
    }

    fn exhausted(&self) -> bool {
        self.spec.times.is_some_and(|t| self.hits >= t)
    }

    fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(&self.spec).unwrap_or_default();
        if let Some(obj) = value.as_object_mut() {
            obj.insert("id".into(), json!(self.id));
            obj.insert("matched".into(), json!(self.matched));
            obj.insert("hits".into(), json!(self.hits));
        }
        value
    }
}

/// Faults in the order they were added; the first one that fires wins.
#[derive(Default)]
pub struct FaultRegistry {
    faults: Vec<Fault>,
}

impl FaultRegistry {
    pub fn add(&mut self, spec: FaultSpec) -> Result<String, String> {
        if spec.path.is_empty() {
            return Err("path must not be empty".into());
        }
        if let Some(p) = spec.probability
            && !(0.0..=1.0).contains(&p)
        {
            return Err(format!("probability {p} is not between 0 and 1"));
        }
        if let FaultAction::Error { status, .. } = &spec.action
            && StatusCode::from_u16(*status).is_err()
        {
            return Err(format!("status {status} is not an HTTP status"));
        }
        if let Some(method) = &spec.method
            && Method::from_bytes(method.as_bytes()).is_err()
        {
            return Err(format!("method {method:?} is not an HTTP method"));
        }
        let id = Uuid::new_v4().to_string();
        self.faults.push(Fault {
            id: id.clone(),
            spec,
            matched: 0,
            hits: 0,
        });
        Ok(id)
    }

    /// Counts the request against every matching fault and returns the action of the first
    /// one that fires.
    pub fn take(&mut self, method: &Method, path: &str) -> Option<(String, FaultAction)> {
        for fault in self.faults.iter_mut().filter(|f| f.matches(method, path)) {
            fault.matched += 1;
            if fault.matched <= fault.spec.after || fault.exhausted() {
                continue;
            }
            if let Some(p) = fault.spec.probability
                && rand::random::<f64>() >= p
            {
                continue;
            }
            fault.hits += 1;
            return Some((fault.id.clone(), fault.spec.action.clone()));
        }
        None
    }

    pub fn list(&self) -> Value {
        let records: Vec<Value> = self.faults.iter().map(Fault::to_json).collect();
        json!({ "records": records, "num_records": records.len() })
    }

    pub fn remove(&mut self, id: &str) -> bool {
        let before = self.faults.len();
        self.faults.retain(|f| f.id != id);
        self.faults.len() != before
    }

    pub fn clear(&mut self) {
        self.faults.clear();
    }
}

/// Middleware on every `/api` route: applies the first firing fault and logs the request.
pub async fn inject(State(state): State<MockState>, mut req: Request, next: Next) -> Response {
    let mut record = RequestRecord {
        seq: 0,
        at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        method: req.method().to_string(),
        path: req.uri().path().to_owned(),
        query: req.uri().query().map(str::to_owned),
        status: None,
        user: basic_credentials(req.headers()).map(|(user, _)| user),
        fault: None,
    };
    let fired = state.faults().take(req.method(), req.uri().path());
    let Some((id, action)) = fired else {
        let response = next.run(req).await;
        record.status = Some(response.status().as_u16());
        state.requests().push(record);
        return response;
    };
    record.fault = Some(FaultHit {
        id,
        action: action.name(),
    });
    let connection = req.extensions().get::<ConnectionControl>().cloned();
    let response = match action {
        FaultAction::Error {
            status,
            code,
            message,
            target,
        } => ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code,
            message,
            target,
        }
        .into_response(),
        FaultAction::Delay { ms } => {
            // A server that has accepted a request finishes it even when the client stops
            // waiting: on a task of its own, a client timeout (which drops this future)
            // cannot cancel it, and the log still records it.
            let handled = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let response = next.run(req).await;
                record.status = Some(response.status().as_u16());
                state.requests().push(record);
                response
            });
            return handled.await.unwrap_or_else(|_| {
                ApiError {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    code: codes::INTERNAL_RETRY.into(),
                    message: "the delayed request failed in the mock".into(),
                    target: None,
                }
                .into_response()
            });
        }
        FaultAction::JobFailure { code, message } => {
            req.extensions_mut()
                .insert(InjectedFailure { code, message });
            next.run(req).await
        }
        FaultAction::Reset => {
            state.requests().push(record);
            return drop_connection(connection).await;
        }
        FaultAction::ApplyThenReset => {
            let lost = next.run(req).await;
            record.status = Some(lost.status().as_u16());
            state.requests().push(record);
            return drop_connection(connection).await;
        }
        FaultAction::Hang => {
            state.requests().push(record);
            return std::future::pending().await;
        }
    };
    record.status = Some(response.status().as_u16());
    state.requests().push(record);
    response
}

/// Asks the connection task to drop the socket, then waits forever: the task drops this
/// future together with the connection, so no answer is ever written.
async fn drop_connection(connection: Option<ConnectionControl>) -> Response {
    match connection {
        Some(connection) => connection.reset(),
        None => tracing::warn!(
            "reset fault on a connection not served by mock_ontap::serve; hanging instead"
        ),
    }
    std::future::pending().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(path: &str, after: u64, times: Option<u64>) -> FaultSpec {
        FaultSpec {
            method: Some("post".into()),
            path: path.into(),
            after,
            times,
            probability: None,
            action: FaultAction::Reset,
        }
    }

    #[test]
    fn after_times_and_prefix() {
        let mut registry = FaultRegistry::default();
        registry.add(spec("/api/svm/*", 1, Some(2))).unwrap();
        let fire = |r: &mut FaultRegistry, m: Method, p: &str| r.take(&m, p).is_some();
        assert!(!fire(&mut registry, Method::GET, "/api/svm/svms"));
        assert!(!fire(&mut registry, Method::POST, "/api/svm/svms"));
        assert!(fire(&mut registry, Method::POST, "/api/svm/svms"));
        assert!(fire(&mut registry, Method::POST, "/api/svm/svms/x"));
        assert!(!fire(&mut registry, Method::POST, "/api/svm/svms"));
        assert!(!fire(&mut registry, Method::POST, "/api/cluster"));
        let listed = registry.list();
        assert_eq!(listed["records"][0]["hits"], 2);
        assert_eq!(listed["records"][0]["matched"], 4);
    }

    #[test]
    fn action_json_shapes() {
        let action: FaultAction =
            serde_json::from_value(json!({"type":"error","status":503})).unwrap();
        assert_eq!(action.name(), "error");
        let action: FaultAction =
            serde_json::from_value(json!({"type":"apply_then_reset"})).unwrap();
        assert_eq!(action, FaultAction::ApplyThenReset);
        assert!(serde_json::from_value::<FaultAction>(json!({"type":"explode"})).is_err());
        let mut registry = FaultRegistry::default();
        let mut bad = spec("/x", 0, None);
        bad.probability = Some(2.0);
        assert!(registry.add(bad).is_err());
    }
}
