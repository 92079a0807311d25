//! Prometheus metrics of the ONTAP client.
//!
//! Labels are bounded: the endpoint is the path *template* (`/api/svm/svms/{uuid}`), never the
//! concrete path, the outcome is an HTTP status, a short failure kind, or an ONTAP code, and the
//! cluster is the name of the OntapCluster object (administrators create those, a handful).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub cluster: String,
    pub method: String,
    pub endpoint: &'static str,
    /// HTTP status, or a failure kind (`timeout`, `connect`, …) when there was no answer.
    pub status: String,
    /// ONTAP error code, empty when none.
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub cluster: String,
    pub method: String,
    pub endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    /// `success`, `failure`, `expired`, `timeout`, `error`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerificationLabels {
    pub cluster: String,
    /// `valid`, `rejected` (401), `not_authorized` (403) or `error` (no verdict).
    pub outcome: &'static str,
}

type HistogramFamily = Family<EndpointLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 10 ms … ~40 s: ONTAP answers GETs in milliseconds and slow POSTs in tens of seconds.
    Histogram::new(exponential_buckets(0.01, 2.0, 13))
}

/// Request and job metrics. Cheap to clone; clones share the same series.
#[derive(Clone, Debug)]
pub struct OntapMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: HistogramFamily,
    retries: Family<EndpointLabels, Counter>,
    jobs: Family<JobLabels, Counter>,
    verifications: Family<VerificationLabels, Counter>,
    /// The `cluster` label of what this clone records; empty for the shared original.
    cluster: String,
}

impl Default for OntapMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl OntapMetrics {
    pub fn new() -> Self {
        Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            retries: Family::default(),
            jobs: Family::default(),
            verifications: Family::default(),
            cluster: String::new(),
        }
    }

    /// A clone sharing the series, whose requests are labelled `cluster`.
    pub fn for_cluster(&self, cluster: &str) -> Self {
        Self {
            cluster: cluster.to_owned(),
            ..self.clone()
        }
    }

    /// Registers the series under the `ontap_client_` prefix.
    pub fn register(&self, registry: &mut Registry) {
        let sub = registry.sub_registry_with_prefix("ontap_client");
        sub.register(
            "requests",
            "ONTAP REST requests (attempts) by method, endpoint template, status and ONTAP code",
            self.requests.clone(),
        );
        sub.register(
            "request_duration_seconds",
            "Duration of ONTAP REST request attempts, including reading the answer",
            self.duration.clone(),
        );
        sub.register(
            "retries",
            "Retries of idempotent ONTAP requests after transient failures",
            self.retries.clone(),
        );
        sub.register(
            "jobs",
            "ONTAP asynchronous jobs waited for, by outcome",
            self.jobs.clone(),
        );
        sub.register(
            "account_verifications",
            "Verifications of an SVM account's credentials (a seed Secret's) by cluster and outcome",
            self.verifications.clone(),
        );
    }

    pub(crate) fn observe_request(
        &self,
        method: &str,
        endpoint: &'static str,
        status: String,
        code: String,
        seconds: f64,
    ) {
        self.requests
            .get_or_create(&RequestLabels {
                cluster: self.cluster.clone(),
                method: method.to_owned(),
                endpoint,
                status,
                code,
            })
            .inc();
        self.duration
            .get_or_create(&EndpointLabels {
                cluster: self.cluster.clone(),
                method: method.to_owned(),
                endpoint,
            })
            .observe(seconds);
    }

    pub(crate) fn observe_retry(&self, method: &str, endpoint: &'static str) {
        self.retries
            .get_or_create(&EndpointLabels {
                cluster: self.cluster.clone(),
                method: method.to_owned(),
                endpoint,
            })
            .inc();
    }

    pub(crate) fn observe_job(&self, outcome: &'static str) {
        self.jobs.get_or_create(&JobLabels { outcome }).inc();
    }

    pub(crate) fn observe_verification(&self, outcome: &'static str) {
        self.verifications
            .get_or_create(&VerificationLabels {
                cluster: self.cluster.clone(),
                outcome,
            })
            .inc();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn registers_and_encodes_with_template_labels() {
        let m = OntapMetrics::new();
        let mut reg = Registry::default();
        m.register(&mut reg);
        m.observe_request(
            "GET",
            "/api/svm/svms/{uuid}",
            "200".into(),
            String::new(),
            0.02,
        );
        m.observe_retry("GET", "/api/svm/svms/{uuid}");
        m.observe_job("success");
        m.for_cluster("lab").observe_verification("rejected");
        let mut out = String::new();
        encode(&mut out, &reg).unwrap();
        assert!(out.contains("ontap_client_requests_total{"), "{out}");
        assert!(out.contains(r#"endpoint="/api/svm/svms/{uuid}""#), "{out}");
        assert!(
            out.contains("ontap_client_request_duration_seconds_bucket"),
            "{out}"
        );
        assert!(out.contains("ontap_client_retries_total"), "{out}");
        assert!(
            out.contains(r#"ontap_client_jobs_total{outcome="success"} 1"#),
            "{out}"
        );
        // A clone for one cluster records into the same series, under its name.
        assert!(
            out.contains(
                r#"ontap_client_account_verifications_total{cluster="lab",outcome="rejected"} 1"#
            ),
            "{out}"
        );
    }
}
