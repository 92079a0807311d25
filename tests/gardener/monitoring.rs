//! The Extension alert and the dashboard's Extension row against a real Prometheus scraping the
//! Extension controller: an Extension that cannot reach ONTAP fires
//! `OntapOperatorExtensionOperationFailing` (through its retries, which keep `lastError`), and
//! the alert clears once the endpoint is fixed and the Extension succeeds.

use crate::support::gardener::Gardener;
use crate::support::prometheus::{Prometheus, is_extension_query, unix_now};
use ontap_operator::extension::api::ErrorCode;
use serde_json::json;

use super::gardenlet::*;

#[tokio::test]
async fn a_failing_extension_alerts_in_a_real_prometheus_and_clears_once_fixed() {
    let started = unix_now();
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let prometheus = Prometheus::with_shipped_rules(&w.operator.metrics.to_string());
    prometheus.wait_scraped().await;
    let config = nfs_config(&w.cluster, "192.0.2.50", "192.0.2.51");
    let reachable = w.mock.base_url();

    set_endpoint(&w, "https://127.0.0.1:1").await;
    create_extension(&g, &ns, config, "reconcile").await;
    wait_error_code(&g, &w, &ns, ErrorCode::RetryableInfraDependencies).await;
    let labels = [("namespace", ns.as_str())];
    prometheus
        .wait_alert(
            "OntapOperatorExtensionOperationFailing",
            &labels,
            Some("firing"),
        )
        .await;

    set_endpoint(&w, &reachable).await;
    let ts = request(&g, &ns, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    prometheus
        .wait_alert("OntapOperatorExtensionOperationFailing", &labels, None)
        .await;

    let empty = prometheus
        .dashboard_queries_without_series(started, is_extension_query)
        .await;
    assert!(
        empty.is_empty(),
        "Extension dashboard queries without series: {empty:#?}"
    );
}
