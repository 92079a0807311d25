//! Fault rules registered through `/_mock/faults`: what makes matching `/api` requests fail,
//! slow down, lose their answer, come back mangled or oversized, or break their connection, and
//! which requests they fire on.
//!
//! Data and matching only: `middleware::inject` applies the action that fires, so the rules
//! import neither axum nor the state that holds them.

use hyper::{Method, StatusCode, header::HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::error::codes;

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
