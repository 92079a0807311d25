//! What provisioning costs ONTAP (issue 11): requests per SVM from the mock's request log, one
//! pass per SVM (the seed Secret the pass writes does not cause a second), and the operator's
//! own limit of concurrent ONTAP jobs per cluster, read from the mock's job statistics.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;

const READY_WITHIN: Duration = Duration::from_secs(90);

/// Creates `count` SVMs at once and waits until all are Ready.
async fn create_all_ready(world: &SvmWorld, count: u8) -> Vec<String> {
    let names: Vec<String> = (0..count).map(|i| format!("cost-{i}")).collect();
    futures::future::join_all(
        names
            .iter()
            .enumerate()
            .map(|(i, name)| world.create_svm(name, i as u8)),
    )
    .await;
    for name in &names {
        world.wait_ready(name, READY_WITHIN).await;
    }
    names
}

#[tokio::test]
async fn provisioning_costs_at_most_ten_ontap_requests_per_svm_in_one_pass() {
    const SVMS: u8 = 6;
    let world = SvmWorld::start().await;
    // A cluster turning Ready re-triggers every SVM that uses it, the ones already provisioning
    // too: created before that, the SVMs would be counted with a pass the cluster caused.
    world.wait_cluster_ready(READY_WITHIN).await;
    let from = world.next_seq().await;
    create_all_ready(&world, SVMS).await;
    // The event of the seed Secret a pass wrote would start a second pass right away.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log: Vec<Value> = world
        .requests()
        .await
        .into_iter()
        .filter(|r| r["seq"].as_u64().is_some_and(|s| s >= from))
        // The OntapCluster's own probe, on its own schedule.
        .filter(|r| r["path"] != "/api/cluster")
        .collect();
    let mut by_request: BTreeMap<String, usize> = BTreeMap::new();
    let mut as_account: BTreeMap<String, usize> = BTreeMap::new();
    for r in &log {
        let user = r["user"].as_str().unwrap_or_default();
        let path = r["path"].as_str().unwrap_or_default();
        // Collapse uuids, so the breakdown reads per endpoint.
        let endpoint: Vec<&str> = path
            .split('/')
            .map(|seg| if seg.len() == 36 { "{uuid}" } else { seg })
            .collect();
        *by_request
            .entry(format!(
                "{} {}",
                r["method"].as_str().unwrap_or_default(),
                endpoint.join("/")
            ))
            .or_default() += 1;
        if user != world.mock.server.admin().user {
            *as_account.entry(user.to_owned()).or_default() += 1;
        }
    }
    let per_svm = log.len() as f64 / f64::from(SVMS);
    eprintln!("{per_svm:.1} ONTAP requests per SVM: {by_request:#?}");
    assert!(
        per_svm <= 10.0,
        "{per_svm:.1} ONTAP requests per SVM: {by_request:#?}"
    );
    assert_eq!(
        as_account.len(),
        usize::from(SVMS),
        "every SVM's credentials were checked as its account: {as_account:?}"
    );
    assert!(
        as_account.values().all(|n| *n == 1),
        "one pass per SVM (one credential check each), not a second for the Secret it wrote: {as_account:?}"
    );
    assert!(
        !by_request.contains_key("GET /api/cluster/jobs/{uuid}")
            || by_request["GET /api/cluster/jobs/{uuid}"] <= usize::from(SVMS) * 2,
        "jobs are not polled before they can have ended: {by_request:#?}"
    );
}

#[tokio::test]
async fn the_operator_runs_no_more_ontap_jobs_per_cluster_than_its_slots() {
    let mut mock = fast_mock();
    // Long enough for every create to overlap, when nothing holds them back.
    mock.settings.job_duration_ms = 600;
    mock.settings.max_concurrent_svm_jobs = 5;
    let world = SvmWorld::with(mock, &["--ontap-svm-jobs-per-cluster=2"]).await;
    create_all_ready(&world, 6).await;
    let stats = world.state()["job_stats"].clone();
    eprintln!("mock job statistics: {stats}");
    assert_eq!(
        stats["refused"], 0,
        "no job refused as one too many: {stats}"
    );
    assert_eq!(
        stats["peak_in_flight"], 2,
        "the slots were all used, never more: {stats}"
    );
}
