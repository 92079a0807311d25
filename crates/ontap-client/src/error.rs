//! Errors of the ONTAP client and how a caller should react to them.
//!
//! Two questions matter to a reconciler, and both are answered here rather than by matching on
//! strings: *what kind* of failure it was ([`ErrorClass`]) and whether the request *may have been
//! applied* anyway ([`OntapError::is_ambiguous`]). An ambiguous failure of a create means the
//! object may exist: look it up by name before creating it again.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::Deserialize;

/// How a failure should be handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Try again later: server overload, internal errors, timeouts, lost connections.
    Transient,
    /// The request itself is wrong; repeating it will fail the same way.
    Invalid,
    /// The object (or its name, IP, ...) already exists or clashes with another.
    Conflict,
    /// The addressed object does not exist.
    NotFound,
    /// The credentials were refused or lack the rights for the request.
    Unauthenticated,
}

/// The `error` object of an ONTAP error response.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ApiError {
    /// ONTAP's error code; a string in the API (e.g. `"13434908"`).
    #[serde(default, deserialize_with = "crate::model::de_code")]
    pub code: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub arguments: Vec<ApiErrorArgument>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ApiErrorArgument {
    #[serde(default, deserialize_with = "crate::model::de_code")]
    pub code: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiError,
}

impl ApiError {
    /// Parses an ONTAP error body. `None` when the body is not ONTAP's error shape (a proxy's
    /// HTML page, an empty body): the caller then only has the status to go on.
    pub fn parse(body: &[u8]) -> Option<Self> {
        serde_json::from_slice::<ErrorEnvelope>(body)
            .ok()
            .map(|e| e.error)
    }

    /// Replaces every occurrence of `secret` in the message, target and arguments. ONTAP does
    /// not echo passwords, but a proxy or a future version might, and the message ends up in
    /// logs and Kubernetes events.
    pub(crate) fn redact(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let scrub = |s: &mut String| {
            if s.contains(secret) {
                *s = s.replace(secret, "[REDACTED]");
            }
        };
        scrub(&mut self.message);
        scrub(&mut self.code);
        if let Some(t) = self.target.as_mut() {
            scrub(t);
        }
        for a in &mut self.arguments {
            scrub(&mut a.message);
            scrub(&mut a.code);
        }
    }
}

/// ONTAP error codes with a meaning the client acts on.
pub mod codes {
    pub const DUPLICATE_ENTRY: &str = "1";
    pub const INVALID_FIELD: &str = "2";
    pub const ENTRY_NOT_FOUND: &str = "4";
    pub const INTERNAL_ERROR: &str = "13434889";
    pub const TOO_MANY_JOBS: &str = "13434894";
    pub const SVM_NAME_IN_USE: &str = "13434908";
    pub const SVM_BEING_CREATED: &str = "13434916";
    pub const DUPLICATE_IP: &str = "1376963";
    pub const LIF_NAME_EXISTS: &str = "1966140";
    /// `POST`/`PATCH /storage/qos/policies`: the name is taken (NetApp's REST reference).
    pub const QOS_POLICY_NAME_IN_USE: &str = "8454154";
    /// `POST /network/ip/routes`: the SVM has this route already.
    pub const DUPLICATE_ROUTE: &str = "1966345";
    /// `DELETE /network/ethernet/ports/{uuid}`: an interface is homed on the port.
    pub const PORT_HOSTS_INTERFACE: &str = "1966189";
    /// `DELETE /network/ethernet/ports/{uuid}`: "Port already has an interface bound" (NetApp's
    /// REST reference lists it beside 1966189).
    pub const PORT_HAS_INTERFACE_BOUND: &str = "1376858";
    /// `DELETE /network/ethernet/broadcast-domains/{uuid}`: the domain still has ports.
    pub const BROADCAST_DOMAIN_HAS_PORTS: &str = "1967103";
    /// Interface POST/PATCH: the named home port does not exist on the home node.
    pub const HOME_PORT_NOT_FOUND: &str = "1967130";
    /// Interface POST/PATCH: ONTAP must pick a port and the node (or domain) has none.
    pub const NO_SUITABLE_PORT: &str = "1967153";
    /// Interface POST: `location.broadcast_domain` names no broadcast domain (by name, by uuid).
    pub const BROADCAST_DOMAIN_NOT_FOUND: &str = "1967136";
    pub const BROADCAST_DOMAIN_UUID_NOT_FOUND: &str = "1967135";
    /// Interface POST/PATCH: the home port is not in the named broadcast domain, or in none.
    pub const HOME_PORT_NOT_IN_DOMAIN: &str = "1966987";
    /// Interface POST/PATCH: the SVM has no service policy of that name.
    pub const SERVICE_POLICY_NOT_FOUND: &str = "53281065";
}

/// Whether an ONTAP message says a resource ran out: space in an aggregate, a limit of objects.
/// ONTAP has no single code for it; its messages say so in these words.
pub fn mentions_depletion(message: &str) -> bool {
    let lower = message.to_lowercase();
    [
        "insufficient",
        "no space",
        "not enough space",
        "out of space",
        "limit reached",
        "maximum number",
    ]
    .iter()
    .any(|phrase| lower.contains(phrase))
}

/// Classification by ONTAP error code alone; `None` when the code says nothing beyond the
/// HTTP status.
pub fn classify_code(code: &str) -> Option<ErrorClass> {
    match code {
        codes::INTERNAL_ERROR | codes::TOO_MANY_JOBS | codes::SVM_BEING_CREATED => {
            Some(ErrorClass::Transient)
        }
        codes::DUPLICATE_ENTRY
        | codes::SVM_NAME_IN_USE
        | codes::DUPLICATE_IP
        | codes::LIF_NAME_EXISTS
        | codes::QOS_POLICY_NAME_IN_USE
        | codes::DUPLICATE_ROUTE
        | codes::PORT_HOSTS_INTERFACE
        | codes::PORT_HAS_INTERFACE_BOUND
        | codes::BROADCAST_DOMAIN_HAS_PORTS => Some(ErrorClass::Conflict),
        codes::ENTRY_NOT_FOUND => Some(ErrorClass::NotFound),
        _ => None,
    }
}

/// Classification of an HTTP status without a (known) ONTAP code.
pub fn classify_status(status: StatusCode) -> ErrorClass {
    match status.as_u16() {
        401 | 403 => ErrorClass::Unauthenticated,
        404 => ErrorClass::NotFound,
        409 => ErrorClass::Conflict,
        408 | 429 => ErrorClass::Transient,
        s if s >= 500 => ErrorClass::Transient,
        _ => ErrorClass::Invalid,
    }
}

/// Why a transport-level failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportFailure {
    /// No connection could be made: the request was never sent.
    Connect,
    /// The connection broke after the request was (possibly) sent.
    ConnectionLost,
    /// Reading the response body failed midway.
    Body,
}

impl std::fmt::Display for TransportFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Connect => "could not connect",
            Self::ConnectionLost => "connection lost before an answer",
            Self::Body => "connection lost while reading the answer",
        })
    }
}

/// Every failure of the ONTAP client.
///
/// No variant carries a request body, and ONTAP messages are scrubbed of the password a request
/// carried, so `Display` and `Debug` are safe to log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OntapError {
    /// ONTAP answered with an error status and (usually) an error body.
    #[error("ONTAP {method} {endpoint}: HTTP {status}{}", fmt_api(.error))]
    Api {
        method: Method,
        endpoint: &'static str,
        status: StatusCode,
        /// `None` when the body was not ONTAP's error shape.
        error: Option<Box<ApiError>>,
    },
    /// No answer within the request timeout. For a request that changes state, it may have been
    /// applied.
    #[error("ONTAP {method} {endpoint}: no answer within {timeout:?}")]
    Timeout {
        method: Method,
        endpoint: &'static str,
        timeout: Duration,
    },
    #[error("ONTAP {method} {endpoint}: {failure}: {source}")]
    Transport {
        method: Method,
        endpoint: &'static str,
        failure: TransportFailure,
        #[source]
        source: reqwest::Error,
    },
    /// The answer was larger than the configured limit; it was not read to the end.
    #[error("ONTAP {method} {endpoint}: response larger than {limit} bytes")]
    ResponseTooLarge {
        method: Method,
        endpoint: &'static str,
        limit: usize,
    },
    /// A successful answer that does not have the expected shape. The body is not quoted: it may
    /// hold anything.
    #[error("ONTAP {method} {endpoint}: unexpected answer (HTTP {status}): {reason}")]
    Decode {
        method: Method,
        endpoint: &'static str,
        status: StatusCode,
        reason: String,
    },
    /// A lookup by name matched more than one object.
    #[error("ONTAP {endpoint}: {count} records named {name:?}, expected at most one")]
    MultipleRecords {
        endpoint: &'static str,
        name: String,
        count: usize,
    },
    /// The job ended in `failure`.
    #[error("ONTAP job {job_uuid} failed: {message} (code {code})")]
    JobFailed {
        job_uuid: String,
        /// ONTAP's job code, as a string like the error codes of synchronous answers.
        code: String,
        message: String,
    },
    /// The job vanished (ONTAP deletes finished jobs after some minutes): whether the operation
    /// succeeded is unknown; look the object up.
    #[error("ONTAP job {job_uuid} no longer exists; its outcome is unknown")]
    JobExpired { job_uuid: String },
    /// The job did not finish in time. It may still succeed; look the object up later.
    #[error("ONTAP job {job_uuid} still {state} after {waited:?}")]
    JobTimeout {
        job_uuid: String,
        state: String,
        waited: Duration,
    },
    /// Polling a job failed for a reason other than a transient one (e.g. the credentials were
    /// revoked meanwhile): the job's outcome is unknown.
    #[error("ONTAP job {job_uuid}: outcome unknown, polling failed: {source}")]
    JobPollFailed {
        job_uuid: String,
        #[source]
        source: Box<OntapError>,
    },
    /// ONTAP contradicted itself, e.g. a create job succeeded but the object cannot be found.
    #[error("ONTAP answered inconsistently: {0}")]
    Inconsistent(String),
    /// Something the client needs was missing or invalid before any request was sent.
    #[error("invalid ONTAP client request: {0}")]
    InvalidInput(String),
    /// The client configuration cannot be used (bad URL, unreadable CA bundle, ...).
    #[error("invalid ONTAP client configuration: {0}")]
    Config(String),
}

fn fmt_api(error: &Option<Box<ApiError>>) -> String {
    match error {
        Some(e) => {
            let mut s = format!(": {} (code {}", e.message, e.code);
            if let Some(t) = e.target.as_deref().filter(|t| !t.is_empty()) {
                s.push_str(", target ");
                s.push_str(t);
            }
            s.push(')');
            s
        }
        None => String::new(),
    }
}

impl OntapError {
    /// What kind of failure this is. See [`ErrorClass`].
    pub fn class(&self) -> ErrorClass {
        match self {
            // A 404 without ONTAP's error body is a proxy's page or a wrong path, not ONTAP
            // saying the object does not exist: taken for "gone", it would let a delete pass
            // while the SVM stays.
            Self::Api { status, error, .. }
                if error.is_none() && *status == StatusCode::NOT_FOUND =>
            {
                ErrorClass::Transient
            }
            Self::Api { status, error, .. } => error
                .as_ref()
                .and_then(|e| classify_code(&e.code))
                .unwrap_or_else(|| classify_status(*status)),
            Self::Timeout { .. } | Self::Transport { .. } => ErrorClass::Transient,
            Self::JobExpired { .. } | Self::JobTimeout { .. } => ErrorClass::Transient,
            // Out of space or at a limit, the world has to change, not the spec: retried with
            // backoff rather than left until the spec changes.
            Self::JobFailed { code, message, .. } => {
                classify_code(code).unwrap_or(if mentions_depletion(message) {
                    ErrorClass::Transient
                } else {
                    ErrorClass::Invalid
                })
            }
            Self::JobPollFailed { source, .. } => source.class(),
            // A proxy's HTML page or a runaway answer says nothing about the request: it is the
            // way to the cluster that failed, not the spec.
            Self::Inconsistent(_) | Self::ResponseTooLarge { .. } | Self::Decode { .. } => {
                ErrorClass::Transient
            }
            Self::MultipleRecords { .. } => ErrorClass::Conflict,
            Self::InvalidInput(_) | Self::Config(_) => ErrorClass::Invalid,
        }
    }

    /// True when the request may have been applied although it failed: the answer was lost
    /// (timeout, connection closed after sending) for a request that changes state, or a job's
    /// outcome is unknown. The caller must look the object up instead of assuming either way.
    pub fn is_ambiguous(&self) -> bool {
        match self {
            Self::Timeout { method, .. } => changes_state(method),
            Self::Transport {
                method, failure, ..
            } => changes_state(method) && *failure != TransportFailure::Connect,
            // An answer that could not be read may be a successful one mangled on the way.
            Self::ResponseTooLarge { method, .. } | Self::Decode { method, .. } => {
                changes_state(method)
            }
            Self::JobExpired { .. } | Self::JobTimeout { .. } | Self::JobPollFailed { .. } => true,
            _ => false,
        }
    }

    pub fn is_transient(&self) -> bool {
        self.class() == ErrorClass::Transient
    }

    pub fn is_not_found(&self) -> bool {
        self.class() == ErrorClass::NotFound
    }

    /// The HTTP status ONTAP answered with, if it answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Api { status, .. } | Self::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// ONTAP's error code, from an error body or a failed job.
    pub fn ontap_code(&self) -> Option<&str> {
        match self {
            Self::Api { error, .. } => error.as_ref().map(|e| e.code.as_str()),
            Self::JobFailed { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The ONTAP error body, if there was one.
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            Self::Api { error, .. } => error.as_deref(),
            _ => None,
        }
    }

    /// A short, bounded label for metrics and span fields.
    pub(crate) fn kind_label(&self) -> &'static str {
        match self {
            Self::Api { .. } => "api",
            Self::Timeout { .. } => "timeout",
            Self::Transport { failure, .. } => match failure {
                TransportFailure::Connect => "connect",
                TransportFailure::ConnectionLost => "connection_lost",
                TransportFailure::Body => "body",
            },
            Self::ResponseTooLarge { .. } => "too_large",
            Self::Decode { .. } => "decode",
            Self::MultipleRecords { .. } => "multiple_records",
            Self::JobFailed { .. } => "job_failed",
            Self::JobExpired { .. } => "job_expired",
            Self::JobTimeout { .. } => "job_timeout",
            Self::JobPollFailed { .. } => "job_poll_failed",
            Self::Inconsistent(_) => "inconsistent",
            Self::InvalidInput(_) => "invalid_input",
            Self::Config(_) => "config",
        }
    }
}

/// Methods whose effect is lost knowledge when the answer is lost.
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

pub type Result<T, E = OntapError> = std::result::Result<T, E>;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn api(status: u16, body: &str) -> OntapError {
        OntapError::Api {
            method: Method::POST,
            endpoint: "/api/svm/svms",
            status: StatusCode::from_u16(status).unwrap(),
            error: ApiError::parse(body.as_bytes()).map(Box::new),
        }
    }

    #[test]
    fn only_ontap_says_an_object_does_not_exist() {
        let ontap = api(
            404,
            r#"{"error":{"message":"entry doesn't exist","code":"4","target":"uuid"}}"#,
        );
        assert!(ontap.is_not_found());
        let proxy = api(404, "<html><body><h1>404 Not Found</h1></body></html>");
        assert!(!proxy.is_not_found());
        assert_eq!(proxy.class(), ErrorClass::Transient);
    }

    #[test]
    fn parses_ontap_error_body() {
        let e = ApiError::parse(
            br#"{"error":{"message":"Duplicate entry","code":"1","target":"name",
                "arguments":[{"code":"7","message":"x"}]}}"#,
        )
        .unwrap();
        assert_eq!(e.code, "1");
        assert_eq!(e.message, "Duplicate entry");
        assert_eq!(e.target.as_deref(), Some("name"));
        assert_eq!(e.arguments.len(), 1);
    }

    #[test]
    fn numeric_code_is_accepted() {
        let e = ApiError::parse(br#"{"error":{"message":"m","code":13434894}}"#).unwrap();
        assert_eq!(e.code, "13434894");
    }

    #[test]
    fn non_ontap_bodies_are_none() {
        assert!(ApiError::parse(b"").is_none());
        assert!(ApiError::parse(b"<html>bad gateway</html>").is_none());
        assert!(ApiError::parse(br#"{"records":[]}"#).is_none());
        assert!(ApiError::parse(br#"{"error":"text"}"#).is_none());
    }

    #[test]
    fn classification_by_code_and_status() {
        let e = |s, c: &str| api(s, &format!(r#"{{"error":{{"message":"m","code":"{c}"}}}}"#));
        assert_eq!(e(500, "13434889").class(), ErrorClass::Transient);
        assert_eq!(e(400, "13434894").class(), ErrorClass::Transient);
        assert_eq!(e(400, "13434916").class(), ErrorClass::Transient);
        assert_eq!(e(409, "1").class(), ErrorClass::Conflict);
        assert_eq!(e(400, "13434908").class(), ErrorClass::Conflict);
        assert_eq!(e(400, "1376963").class(), ErrorClass::Conflict);
        assert_eq!(e(400, "1966140").class(), ErrorClass::Conflict);
        assert_eq!(e(404, "4").class(), ErrorClass::NotFound);
        assert_eq!(e(400, "4").class(), ErrorClass::NotFound);
        assert_eq!(e(400, "2").class(), ErrorClass::Invalid);
        assert_eq!(e(401, "6691623").class(), ErrorClass::Unauthenticated);
        assert_eq!(e(403, "6").class(), ErrorClass::Unauthenticated);
        assert_eq!(api(502, "<html/>").class(), ErrorClass::Transient);
        assert_eq!(api(429, "").class(), ErrorClass::Transient);
        assert_eq!(api(409, "").class(), ErrorClass::Conflict);
        // ONTAP's 404 always carries its error body; a bare one did not come from ONTAP.
        assert_eq!(api(404, "").class(), ErrorClass::Transient);
        assert_eq!(api(422, "").class(), ErrorClass::Invalid);
    }

    #[test]
    fn api_errors_are_not_ambiguous_but_lost_answers_are() {
        assert!(!api(500, "").is_ambiguous());
        let timeout = |method| OntapError::Timeout {
            method,
            endpoint: "/api/svm/svms",
            timeout: Duration::from_secs(1),
        };
        assert!(timeout(Method::POST).is_ambiguous());
        assert!(timeout(Method::PATCH).is_ambiguous());
        assert!(timeout(Method::DELETE).is_ambiguous());
        assert!(!timeout(Method::GET).is_ambiguous());
        assert!(timeout(Method::GET).is_transient());
        assert!(
            OntapError::JobExpired {
                job_uuid: "j".into()
            }
            .is_ambiguous()
        );
    }

    #[test]
    fn unreadable_answers_are_transient_and_ambiguous_for_changes() {
        let decode = |method| OntapError::Decode {
            method,
            endpoint: "/api/svm/svms",
            status: StatusCode::OK,
            reason: "not JSON".into(),
        };
        let huge = |method| OntapError::ResponseTooLarge {
            method,
            endpoint: "/api/svm/svms",
            limit: 1,
        };
        for e in [decode(Method::GET), huge(Method::GET)] {
            assert_eq!(e.class(), ErrorClass::Transient, "{e}");
            assert!(!e.is_ambiguous(), "{e}");
        }
        for e in [decode(Method::POST), huge(Method::PATCH)] {
            assert_eq!(e.class(), ErrorClass::Transient, "{e}");
            assert!(e.is_ambiguous(), "{e}");
        }
    }

    #[test]
    fn job_failure_is_classified_by_its_code() {
        let f = |code: &str| OntapError::JobFailed {
            job_uuid: "j".into(),
            code: code.into(),
            message: "m".into(),
        };
        assert_eq!(f("13434894").class(), ErrorClass::Transient);
        assert_eq!(f("13434908").class(), ErrorClass::Conflict);
        assert_eq!(f("123").class(), ErrorClass::Invalid);
        assert!(!f("123").is_ambiguous());
        let out_of_space = OntapError::JobFailed {
            job_uuid: "j".into(),
            code: "123".into(),
            message: "Failed to create the root volume: Insufficient space in aggregate".into(),
        };
        assert_eq!(out_of_space.class(), ErrorClass::Transient);
    }

    #[test]
    fn display_includes_code_message_target() {
        let e = api(
            409,
            r#"{"error":{"message":"already exists","code":"1","target":"name"}}"#,
        );
        let s = e.to_string();
        assert!(s.contains("409"), "{s}");
        assert!(s.contains("already exists"), "{s}");
        assert!(s.contains("code 1"), "{s}");
        assert!(s.contains("target name"), "{s}");
        assert_eq!(e.ontap_code(), Some("1"));
        assert_eq!(e.status(), Some(StatusCode::CONFLICT));
    }

    #[test]
    fn redaction_scrubs_every_field() {
        let mut e = ApiError::parse(
            br#"{"error":{"message":"bad pw hunter2hunter2","code":"7077919","target":"hunter2hunter2",
                "arguments":[{"code":"1","message":"hunter2hunter2"}]}}"#,
        )
        .unwrap();
        e.redact("hunter2hunter2");
        let s = format!("{e:?}");
        assert!(!s.contains("hunter2hunter2"), "{s}");
        assert!(s.contains("[REDACTED]"));
    }
}
