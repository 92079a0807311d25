//! The alerts and the dashboard against a real Prometheus scraping a real operator
//! (`test_support::prometheus`): faults injected through mock ONTAP must make the right alert
//! fire, and removing them must clear it; every dashboard query of the ONTAP controllers must
//! find series over the run. The Kyma row is checked by `tests/kyma/monitoring.rs`.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::prometheus::{
    Prometheus, dashboard_queries, is_extension_query, is_kyma_query, is_limits_query, unix_now,
};
use crate::support::svm::SvmWorld;

const WITHIN: Duration = Duration::from_secs(120);

/// Asks the mock's own admin API to change the seed account's password, as an administrator
/// would from the CLI, once the operator has repaired the last change.
async fn change_password_behind_our_back(world: &SvmWorld, name: &str, round: usize) {
    let secret = format!("{name}-svm-credentials");
    let (user, svm_name) = poll(
        "the seed Secret authenticates",
        WITHIN,
        async || match world.seed_credentials(&secret).await {
            Some((user, password, svm)) if world.authenticates(&user, &password, &svm).await => {
                Ok((user, svm))
            }
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    let uuid = world
        .svms()
        .get(name)
        .await
        .unwrap()
        .status
        .and_then(|s| s.uuid)
        .unwrap();
    world
        .mock
        .as_admin(
            reqwest::Method::PATCH,
            &format!("/api/security/accounts/{uuid}/{user}"),
            json!({ "password": format!("Behind0urBack{round}x") }),
        )
        .await;
    poll("the change is noticed", WITHIN, async || {
        let (user, password, _) = world.seed_credentials(&secret).await.ok_or("no Secret")?;
        world
            .authenticates(&user, &password, &svm_name)
            .await
            .then_some(())
            .ok_or_else(|| "not repaired yet".to_string())
    })
    .await;
}

/// Makes the OntapCluster controller look again now rather than at its next re-verification.
async fn nudge_cluster(world: &SvmWorld, round: usize) {
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"test/nudge": round.to_string()}}})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn alerts_fire_and_clear_in_a_real_prometheus_and_every_dashboard_query_finds_series() {
    let started = unix_now();
    let world = SvmWorld::with(fast_mock(), &["--sync-period=2s"]).await;
    world.create_svm("watched", 0).await;
    world.wait_ready("watched", WITHIN).await;
    let prometheus = Prometheus::with_shipped_rules(&world.operator.metrics.to_string());
    let cluster = world.cluster.as_str();
    prometheus.wait_scraped().await;
    // A healthy world for a while: none of the alerts under test is active. The time passing
    // is the point: the rules need several evaluations over scraped samples (their ranges are
    // 20 s here, their `for:` 2 s) before an alert that should not be there would show.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let quiet = prometheus.alerts().await.unwrap();
    for alert in [
        "OntapClusterCredentialsRejected",
        "OntapClusterUnreachable",
        "OntapOperatorSeedSecretVerificationFailing",
        "OntapOperatorSVMNotReady",
        "OntapOperatorNoLeader",
        "OntapOperatorNotReady",
    ] {
        assert!(
            !quiet.iter().any(|a| a["labels"]["alertname"] == alert),
            "{alert} is active in a healthy world: {quiet:?}"
        );
    }

    // The cluster rejects the operator's administrator credentials.
    world
        .mock
        .fault_json(json!({"method": "GET", "path": "/api/cluster",
        "action": {"type": "error", "status": 401, "code": "6",
                   "message": "User is not authorized."}}));
    nudge_cluster(&world, 1).await;
    let labels = [("cluster", cluster)];
    prometheus
        .wait_alert("OntapClusterCredentialsRejected", &labels, Some("firing"))
        .await;
    world.mock.clear_faults();
    nudge_cluster(&world, 2).await;
    prometheus
        .wait_alert("OntapClusterCredentialsRejected", &labels, None)
        .await;

    // The cluster stops answering: every connection is reset.
    world
        .mock
        .fault_json(json!({"method": "GET", "path": "/api/cluster",
        "action": {"type": "reset"}}));
    nudge_cluster(&world, 3).await;
    let labels = [("cluster", cluster), ("reason", "ClusterUnreachable")];
    prometheus
        .wait_alert("OntapClusterUnreachable", &labels, Some("firing"))
        .await;
    // Its SVM cannot be verified meanwhile: not Ready, by the reason its condition gives.
    let svm_labels = [("namespace", world.env.namespace.as_str())];
    prometheus
        .wait_alert("OntapOperatorSVMNotReady", &svm_labels, Some("firing"))
        .await;
    world.mock.clear_faults();
    nudge_cluster(&world, 4).await;
    prometheus
        .wait_alert("OntapClusterUnreachable", &[("cluster", cluster)], None)
        .await;
    prometheus
        .wait_alert("OntapOperatorSVMNotReady", &svm_labels, None)
        .await;

    // A seed Secret's password changed behind the operator's back, again and again: each change
    // is repaired, but the repetition alerts; once it stops, the alert clears.
    for round in 1..=3 {
        change_password_behind_our_back(&world, "watched", round).await;
    }
    let labels = [("cluster", cluster)];
    prometheus
        .wait_alert(
            "OntapOperatorSeedSecretVerificationFailing",
            &labels,
            Some("firing"),
        )
        .await;
    prometheus
        .wait_alert("OntapOperatorSeedSecretVerificationFailing", &labels, None)
        .await;

    // Every dashboard query of the ONTAP controllers, over this run, as Grafana asks it. The
    // Kyma and Extension rows need controllers this run does not start (tests/kyma and
    // tests/gardener find their series), the SVM limits row SVMs with limits (their gauges are
    // checked by tests/svm_features/limits.rs); here they must still evaluate, which the driver asserts
    // for every query it is given.
    let queries = dashboard_queries();
    assert!(queries.len() > 20, "{queries:?}");
    let empty = prometheus
        .dashboard_queries_without_series(started, |expr| {
            !is_kyma_query(expr) && !is_extension_query(expr) && !is_limits_query(expr)
        })
        .await;
    assert!(
        empty.is_empty(),
        "dashboard queries without series: {empty:#?}"
    );
    prometheus
        .dashboard_queries_without_series(started, |expr| {
            is_kyma_query(expr) || is_extension_query(expr) || is_limits_query(expr)
        })
        .await;
}
