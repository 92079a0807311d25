//! Typed step errors and their classification.
//!
//! The category, not the error text, decides what happens next: the requeue policy, the metric
//! label and whether an Event is emitted. Messages go into the step's condition and must therefore
//! be stable across retries (no timestamps, attempt counters or request ids), or every retry
//! would rewrite the status.

use std::borrow::Cow;
use std::fmt;

/// A boxed error that can cross tasks.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How the engine reacts to a failed step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// The world did not cooperate (network, 5xx, timeouts): retry with per-object exponential
    /// backoff.
    Transient,
    /// The object's spec cannot be satisfied as written: surface it in the status and wait for a
    /// change; only the periodic re-verification looks again.
    Invalid,
    /// Someone else changed what we were about to change (HTTP 409), or a remote system holds
    /// what we need: retry soon, backing off like a transient failure so that a conflict that
    /// does not clear cannot become a request storm.
    Conflict,
}

impl ErrorCategory {
    /// The metric label value of this category.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Transient => "transient",
            ErrorCategory::Invalid => "invalid",
            ErrorCategory::Conflict => "conflict",
        }
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a step failed.
///
/// `reason` is a short `PascalCase` identifier (it becomes the condition's and the Event's
/// `reason`); `message` is for humans.
///
/// ```
/// use reconcile_engine::{ErrorCategory, StepError};
///
/// let err = StepError::invalid("UnknownCluster", "OntapCluster \"c1\" does not exist");
/// assert_eq!(err.category(), ErrorCategory::Invalid);
/// assert_eq!(err.reason(), "UnknownCluster");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// Retry with backoff.
    #[error("{message}")]
    Transient {
        /// Condition / Event reason.
        reason: Cow<'static, str>,
        /// Human-readable description.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// The spec is wrong; wait for a change.
    #[error("{message}")]
    Invalid {
        /// Condition / Event reason.
        reason: Cow<'static, str>,
        /// Human-readable description.
        message: String,
        /// Another system refused the request, rather than the step finding the spec wrong
        /// itself ([`StepError::rejected`]).
        rejected: bool,
    },
    /// Lost a race with another writer; retry soon.
    #[error("{message}")]
    Conflict {
        /// Condition / Event reason.
        reason: Cow<'static, str>,
        /// Human-readable description.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
}

impl StepError {
    /// A transient failure caused by `source`; the message is `source`'s text.
    pub fn transient(reason: impl Into<Cow<'static, str>>, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        StepError::Transient {
            reason: reason.into(),
            message: source.to_string(),
            source: Some(source),
        }
    }

    /// A transient failure described only by a message.
    pub fn transient_msg(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        StepError::Transient {
            reason: reason.into(),
            message: message.into(),
            source: None,
        }
    }

    /// The spec cannot be satisfied as written.
    pub fn invalid(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        StepError::Invalid {
            reason: reason.into(),
            message: message.into(),
            rejected: false,
        }
    }

    /// Another system refused the request as invalid (an HTTP 400 whose code we do not know).
    /// Shown like an invalid spec, but also tried again on a slow backoff
    /// (`REJECTED_BACKOFF_BASE` doubling up to the
    /// sync period): a refusal this side cannot explain is most likely a request the other
    /// side's version does not take, which retrying will not fix, but it may as well be a
    /// passing state of that system, and a one-off must not hold the object for a whole sync
    /// period.
    pub fn rejected(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        StepError::Invalid {
            reason: reason.into(),
            message: message.into(),
            rejected: true,
        }
    }

    /// Whether another system refused the request ([`StepError::rejected`]).
    pub fn is_rejection(&self) -> bool {
        matches!(self, StepError::Invalid { rejected: true, .. })
    }

    /// A write lost a race; retry soon.
    pub fn conflict(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        StepError::Conflict {
            reason: reason.into(),
            message: message.into(),
            source: None,
        }
    }

    /// Classifies a Kubernetes API error: 409 is a conflict, everything else is transient.
    ///
    /// A 400/422 is not mapped to [`ErrorCategory::Invalid`] here because only the step knows
    /// whether the user's spec is to blame or our own request was wrong; a step that knows should
    /// return [`StepError::invalid`] itself.
    ///
    /// The message is the API server's own, said once in plain words (see `describe_kube`).
    pub fn from_kube(reason: impl Into<Cow<'static, str>>, err: kube::Error) -> Self {
        let reason = reason.into();
        let message = describe_kube(&err);
        match &err {
            kube::Error::Api(status) if status.code == 409 => StepError::Conflict {
                reason,
                message,
                source: Some(Box::new(err)),
            },
            _ => StepError::Transient {
                reason,
                message,
                source: Some(Box::new(err)),
            },
        }
    }

    /// The category that drives the requeue policy.
    pub fn category(&self) -> ErrorCategory {
        match self {
            StepError::Transient { .. } => ErrorCategory::Transient,
            StepError::Invalid { .. } => ErrorCategory::Invalid,
            StepError::Conflict { .. } => ErrorCategory::Conflict,
        }
    }

    /// The condition / Event reason.
    pub fn reason(&self) -> &str {
        match self {
            StepError::Transient { reason, .. }
            | StepError::Invalid { reason, .. }
            | StepError::Conflict { reason, .. } => reason,
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        match self {
            StepError::Transient { message, .. }
            | StepError::Invalid { message, .. }
            | StepError::Conflict { message, .. } => message,
        }
    }
}

/// A Kubernetes client error in words a person reading `kubectl describe` can use: for an
/// answer of the API server its message, reason and code once — not kube's `Display`, which
/// appends a Rust `Debug` dump of the whole `Status` (repeating an admission policy's message
/// three times).
pub fn describe_kube(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => {
            let reason = if status.reason.is_empty() {
                String::new()
            } else {
                format!("{}, ", status.reason)
            };
            if status.message.is_empty() {
                format!("the API server answered {reason}HTTP {}", status.code)
            } else {
                format!(
                    "the API server answered: {} ({reason}HTTP {})",
                    status.message, status.code
                )
            }
        }
        kube::Error::HyperError(e) => format!("no answer from the API server: {e}"),
        kube::Error::Service(e) => format!("no answer from the API server: {e}"),
        kube::Error::SerdeError(e) => format!("the API server's answer did not parse: {e}"),
        other => other.to_string(),
    }
}

/// Kubernetes API errors inside a step are classified by [`StepError::from_kube`] with the reason
/// `KubernetesAPIError`, so `?` works on `kube` calls.
impl From<kube::Error> for StepError {
    fn from(err: kube::Error) -> Self {
        StepError::from_kube("KubernetesAPIError", err)
    }
}

/// An answer of the API server with HTTP status `code`, for tests.
#[cfg(test)]
pub(crate) fn api_error(code: u16) -> kube::Error {
    kube::Error::Api(Box::new(kube::core::Status {
        code,
        message: format!("code {code}"),
        reason: "Test".into(),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_answer_is_described_by_its_message_reason_and_code_once() {
        let err = kube::Error::Api(Box::new(kube::core::Status {
            code: 422,
            reason: "Invalid".into(),
            message: "spec.size: Invalid value: 0: must be positive".into(),
            ..Default::default()
        }));
        assert_eq!(
            describe_kube(&err),
            "the API server answered: spec.size: Invalid value: 0: must be positive (Invalid, HTTP 422)"
        );
    }

    #[test]
    fn kube_conflict_is_conflict_everything_else_transient() {
        assert_eq!(
            StepError::from(api_error(409)).category(),
            ErrorCategory::Conflict
        );
        for code in [400, 404, 429, 500, 503] {
            assert_eq!(
                StepError::from(api_error(code)).category(),
                ErrorCategory::Transient,
                "{code}"
            );
        }
    }

    #[test]
    fn message_comes_from_source() {
        let err = StepError::transient("OntapUnreachable", "connection refused");
        assert_eq!(err.message(), "connection refused");
        assert_eq!(err.to_string(), "connection refused");
        assert_eq!(err.reason(), "OntapUnreachable");
    }
}
