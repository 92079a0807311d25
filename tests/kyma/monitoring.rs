//! The Kyma row of the shipped Grafana dashboard against a real Prometheus scraping a real Kyma
//! operator: every query must find series once a Kyma went through its lifecycle. The ONTAP rows
//! and the alerts are checked by `tests/operations/monitoring.rs`.

use crate::support::kyma::{KymaWorld, SUCCESS_WITHIN};
use crate::support::prometheus::{Prometheus, is_kyma_query, unix_now};

#[tokio::test]
async fn every_kyma_dashboard_query_finds_series_in_a_real_prometheus() {
    let started = unix_now();
    let world = KymaWorld::start(&[]).await;
    let prometheus = Prometheus::with_shipped_rules(&world.operator.metrics.to_string());
    prometheus.wait_scraped().await;
    world
        .create_kyma("watched", &[("istio", None), ("serverless", None)])
        .await;
    world.wait_success("watched").await;
    // One more scrape after the last pass.
    world.operator.quiesce(SUCCESS_WITHIN).await;
    prometheus.wait_scraped_after(unix_now()).await;
    let empty = prometheus
        .dashboard_queries_without_series(started, is_kyma_query)
        .await;
    assert!(
        empty.is_empty(),
        "Kyma dashboard queries without series: {empty:#?}"
    );
}
