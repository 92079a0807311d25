//! Who may read `/metrics`: its series name every tenant's namespace and every failure reason,
//! so by default only a caller whose bearer token the API server authenticates (a TokenReview)
//! and authorizes to `get` the non-resource URL `/metrics` (a SubjectAccessReview), as
//! controller-runtime's secure metrics serving decides. Prometheus scrapes with its
//! ServiceAccount's token, bound to the chart's `ontap-operator-metrics-reader` ClusterRole.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode, header};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use ring::digest::{SHA256, digest};

/// How long a decision on one token is reused: a scrape every few seconds costs the API server
/// two reviews per minute, and a revoked permission is honoured within this time.
const DECISION_TTL: Duration = Duration::from_secs(30);
/// The most decisions kept: past it the oldest go, so random tokens cannot grow the map.
const DECISIONS_MAX: usize = 1024;

/// Each token's decision (by its SHA-256) and when it was made.
type Decisions = HashMap<Vec<u8>, (Instant, StatusCode)>;

/// Decides, with the API server, whether a request may read `/metrics`.
#[derive(Clone)]
pub struct MetricsAuthorizer {
    client: Client,
    /// Decisions by the SHA-256 of the token (the token itself is never kept).
    decisions: Arc<Mutex<Decisions>>,
}

impl MetricsAuthorizer {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            decisions: Arc::default(),
        }
    }

    /// `OK` when the request's bearer token may read `/metrics`; `UNAUTHORIZED` without a token
    /// the API server authenticates, `FORBIDDEN` for one not allowed, `SERVICE_UNAVAILABLE`
    /// while the API server cannot be asked.
    pub async fn check(&self, headers: &HeaderMap) -> StatusCode {
        let Some(token) = bearer(headers) else {
            return StatusCode::UNAUTHORIZED;
        };
        let key = digest(&SHA256, token.as_bytes()).as_ref().to_vec();
        if let Some(status) = self.cached(&key) {
            return status;
        }
        let status = match self.review(token).await {
            Ok(status) => status,
            Err(error) => {
                tracing::warn!(%error, "a /metrics request could not be reviewed");
                return StatusCode::SERVICE_UNAVAILABLE;
            }
        };
        let mut decisions = self
            .decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if decisions.len() >= DECISIONS_MAX {
            decisions.retain(|_, (at, _)| at.elapsed() < DECISION_TTL);
            if decisions.len() >= DECISIONS_MAX {
                decisions.clear();
            }
        }
        decisions.insert(key, (Instant::now(), status));
        status
    }

    fn cached(&self, key: &[u8]) -> Option<StatusCode> {
        let decisions = self
            .decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        decisions
            .get(key)
            .filter(|(at, _)| at.elapsed() < DECISION_TTL)
            .map(|(_, status)| *status)
    }

    async fn review(&self, token: &str) -> Result<StatusCode, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let Some(status) = reviewed.status.filter(|s| s.authenticated == Some(true)) else {
            return Ok(StatusCode::UNAUTHORIZED);
        };
        let user = status.user.unwrap_or_default();
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some("/metrics".to_owned()),
                    verb: Some("get".to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        Ok(if decided.status.is_some_and(|s| s.allowed) {
            StatusCode::OK
        } else {
            StatusCode::FORBIDDEN
        })
    }
}

/// The bearer token of an `Authorization` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_token_counts() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            headers
        };
        assert_eq!(bearer(&with("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&with("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(&with("Basic YTpi")), None);
        assert_eq!(bearer(&with("Bearer ")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
