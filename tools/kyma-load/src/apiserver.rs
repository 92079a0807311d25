//! The API server's own request counters, summed by label.

use std::collections::BTreeMap;

use anyhow::Context;
use kube::Client;
use test_support::metrics::samples;

/// The API server's `apiserver_request_total`, summed by the labels named in `by`
/// (`verb`, `resource`, `subresource`, `code`), joined with a space.
pub async fn apiserver_requests(
    client: &Client,
    by: &[&str],
) -> anyhow::Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .context("building the /metrics request")?;
    let text = client
        .request_text(request)
        .await
        .context("reading the API server's /metrics")?;
    Ok(sum_by(&text, "apiserver_request_total", by))
}

/// Sums the samples of `metric` in a Prometheus text exposition by the labels in `by`.
pub fn sum_by(text: &str, metric: &str, by: &[&str]) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    for sample in samples(text).iter().filter(|s| s.name == metric) {
        let key = by
            .iter()
            .map(|label| sample.label(label).unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        *sums.entry(key.trim().to_owned()).or_default() += sample.value;
    }
    sums
}

/// `after - before`, per key, dropping zeros.
pub fn difference(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let mut diff = after.clone();
    for (k, v) in before {
        *diff.entry(k.clone()).or_default() -= v;
    }
    diff.retain(|_, v| *v != 0.0);
    diff
}

/// Writes among API server requests: the verbs that change objects.
pub const WRITE_VERBS: [&str; 5] = ["POST", "PUT", "PATCH", "DELETE", "APPLY"];
