//! Fault injection: rules registered through `/_mock/faults` that make matching `/api` requests
//! fail, slow down, lose their answer, come back mangled or oversized, or break their
//! connection.
//!
//! The same middleware logs every `/api` request, because it is the only layer that still sees
//! requests a fault cut short.

use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{
    connection::ConnectionControl,
    credentials::basic_credentials,
    error::{ApiError, codes},
    model::InjectedFailure,
    requests::{FaultHit, RequestRecord},
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
    /// Answer with a body that is not JSON (by default an HTML proxy error page), as a proxy or
    /// load balancer in front of the cluster may; the request is applied only with `apply`.
    Malformed {
        #[serde(default = "ok_status")]
        status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_type: Option<String>,
        #[serde(default)]
        apply: bool,
    },
    /// Answer with a body of `bytes` bytes, streamed without a `Content-Length`: with `apply`,
    /// the real answer followed by whitespace (still valid JSON); without, an ONTAP error whose
    /// message fills the body.
    Huge {
        #[serde(default = "default_huge_bytes")]
        bytes: u64,
        #[serde(default)]
        apply: bool,
        /// The status of the error answer when the request is not applied; 500 when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
    },
}

/// The largest `huge` body: enough to hurt any client that reads without a limit, small
/// enough that a typo cannot make the mock stream for minutes.
pub const MAX_HUGE_BYTES: u64 = 1 << 30;

const DEFAULT_MALFORMED_BODY: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
const DEFAULT_MALFORMED_CONTENT_TYPE: &str = "text/html";

fn ok_status() -> u16 {
    200
}

fn default_huge_bytes() -> u64 {
    8 << 20
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
            FaultAction::Malformed { .. } => "malformed",
            FaultAction::Huge { .. } => "huge",
        }
    }

    fn validate(&self) -> Result<(), String> {
        let status = |status: u16| match StatusCode::from_u16(status) {
            Ok(_) => Ok(()),
            Err(_) => Err(format!("status {status} is not an HTTP status")),
        };
        match self {
            FaultAction::Error { status: s, .. } => status(*s),
            FaultAction::Malformed {
                status: s,
                content_type,
                ..
            } => {
                if let Some(ct) = content_type
                    && HeaderValue::from_str(ct).is_err()
                {
                    return Err(format!("content_type {ct:?} is not a header value"));
                }
                status(*s)
            }
            FaultAction::Huge {
                bytes, status: s, ..
            } => {
                if !(1..=MAX_HUGE_BYTES).contains(bytes) {
                    return Err(format!(
                        "bytes {bytes} is not between 1 and {MAX_HUGE_BYTES}"
                    ));
                }
                s.map_or(Ok(()), status)
            }
            FaultAction::Delay { .. }
            | FaultAction::Reset
            | FaultAction::ApplyThenReset
            | FaultAction::JobFailure { .. }
            | FaultAction::Hang => Ok(()),
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
        spec.action.validate()?;
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
        traceparent: header_text(&req, "traceparent"),
        user_agent: header_text(&req, header::USER_AGENT.as_str()),
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
        FaultAction::Malformed {
            status,
            body,
            content_type,
            apply,
        } => {
            if apply {
                // A proxy mangled the answer of a request the cluster carried out.
                drop(next.run(req).await);
            }
            malformed(status, body, content_type)
        }
        FaultAction::Huge {
            bytes, apply: true, ..
        } => padded(next.run(req).await, bytes).await,
        FaultAction::Huge {
            bytes,
            apply: false,
            status,
        } => huge_error(status.unwrap_or(500), bytes),
    };
    record.status = Some(response.status().as_u16());
    state.requests().push(record);
    response
}

fn header_text(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn malformed(status: u16, body: Option<String>, content_type: Option<String>) -> Response {
    let content_type = content_type.unwrap_or_else(|| DEFAULT_MALFORMED_CONTENT_TYPE.into());
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        body.unwrap_or_else(|| DEFAULT_MALFORMED_BODY.into()),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// `len` bytes of `byte`, in chunks that share one buffer, so a gigabyte costs no memory.
fn filler(len: u64, byte: u8) -> impl Iterator<Item = Bytes> {
    const CHUNK: u64 = 64 * 1024;
    let chunk = Bytes::from(vec![byte; CHUNK as usize]);
    let last = chunk.slice(..(len % CHUNK) as usize);
    std::iter::repeat_n(chunk, (len / CHUNK) as usize)
        .chain(std::iter::once(last))
        .filter(|c| !c.is_empty())
}

/// A body streamed without `Content-Length`: the client learns its size only by reading it.
fn streamed(parts: impl Iterator<Item = Bytes> + Send + 'static) -> Body {
    Body::from_stream(futures::stream::iter(
        parts.map(Ok::<_, std::convert::Infallible>),
    ))
}

/// The real answer, followed by whitespace up to `bytes` bytes: still the same JSON.
async fn padded(response: Response, bytes: u64) -> Response {
    let (mut parts, body) = response.into_parts();
    // The mock's own answers are small; this limit only guards against a runaway.
    let answer = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the answer to pad");
            Bytes::new()
        }
    };
    let padding = bytes.saturating_sub(answer.len() as u64);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(
        parts,
        streamed(std::iter::once(answer).chain(filler(padding, b' '))),
    )
}

/// An ONTAP error answer of `bytes` bytes, nearly all of it the message.
fn huge_error(status: u16, bytes: u64) -> Response {
    let head = Bytes::from(format!(
        r#"{{"error":{{"code":"{}","message":""#,
        codes::INTERNAL_RETRY
    ));
    let tail = Bytes::from_static(br#""}}"#);
    let message = bytes.saturating_sub((head.len() + tail.len()) as u64);
    let body = streamed(
        std::iter::once(head)
            .chain(filler(message, b'x'))
            .chain(std::iter::once(tail)),
    );
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
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
