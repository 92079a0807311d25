//! What provisioning costs ONTAP (issue 11): requests per SVM from the mock's request log, one
//! pass per SVM (the seed Secret the pass writes does not cause a second), and the operator's
//! own limit of concurrent ONTAP jobs per cluster, read from the mock's job statistics.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::support::mock::fast_mock;
use crate::support::resync::{inventory_read, requests_since, resync_window, resync_world};
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

/// Waits until the operator's passes have ended, those that the events of their own writes
/// cause included.
async fn passes_ended(world: &SvmWorld) {
    world.operator.quiesce(READY_WITHIN).await;
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
    passes_ended(&world).await;
    let log = requests_since(&world, from).await;
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

/// A create job runs for seconds; its pass gives the worker back meanwhile, under the job slot
/// it holds. With one worker, the cluster's slots still fill: a pass holding its worker through
/// the job would have run one job at a time.
#[tokio::test]
async fn create_jobs_run_at_once_on_a_single_worker() {
    let mut mock = fast_mock();
    mock.settings.job_duration_ms = 1500;
    mock.settings.max_concurrent_svm_jobs = 5;
    let world = SvmWorld::with(mock, &["--max-concurrent-reconciles=1"]).await;
    world.wait_cluster_ready(READY_WITHIN).await;
    create_all_ready(&world, 4).await;
    let stats = world.state()["job_stats"].clone();
    eprintln!("mock job statistics: {stats}");
    let peak = stats["peak_in_flight"].as_u64().unwrap_or_default();
    assert!(peak >= 2, "one job at a time on one worker: {stats}");
}

/// A pass over a Ready SVM, in a cluster read as an inventory, costs ONTAP one request: the
/// login that proves the seed Secret. Its SVM and LIFs come from the cluster's paged reads.
#[tokio::test]
async fn a_resync_of_ready_svms_costs_ontap_one_login_each_plus_paged_reads() {
    const SVMS: u8 = 4;
    let world = resync_world().await;
    create_all_ready(&world, SVMS).await;
    // Past the passes the seed Secrets' events and the first inventory read cause.
    passes_ended(&world).await;
    inventory_read(&world, "/api/network/ip/interfaces").await;
    let from = world.next_seq().await;
    resync_window(&world, from)
        .await
        .costs_a_login_per_svm(SVMS, 2);
}

/// The snapshot a pass confirms from may be older than a change made behind the operator's
/// back: the inventory's refresher finds a deleted LIF within one sync period all the same. The
/// bound is the refresher's own, three quarters of a sync period: the object's next periodic
/// pass comes later than that, so only the refresher can be the one that finds it in time.
#[tokio::test]
async fn a_lif_deleted_behind_the_operators_back_is_found_within_a_sync_period_from_the_inventory()
{
    const SYNC: Duration = Duration::from_secs(20);
    const FOUND_WITHIN: Duration = Duration::from_secs(15);
    let world = SvmWorld::with(
        fast_mock(),
        &["--sync-period=20s", "--ontap-inventory-min-svms=2"],
    )
    .await;
    world.wait_cluster_ready(READY_WITHIN).await;
    create_all_ready(&world, 3).await;
    let svm = world.wait_ready("cost-1", READY_WITHIN).await;
    let uuid = svm.status.unwrap().uuid.unwrap();
    // Past the passes the seed Secrets' events cause, so that only the sync and the
    // inventory's refresher look at the SVM next.
    passes_ended(&world).await;
    let interfaces = world.state()["interfaces"].clone();
    let lif = interfaces
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["svm"]["uuid"] == uuid.as_str())
        .unwrap();
    let lif_name = lif["name"].as_str().unwrap().to_owned();
    world
        .mock
        .as_admin(
            reqwest::Method::DELETE,
            &format!(
                "/api/network/ip/interfaces/{}",
                lif["uuid"].as_str().unwrap()
            ),
            Value::Null,
        )
        .await;
    let deleted = std::time::Instant::now();
    let restored = crate::support::try_poll(FOUND_WITHIN, async || {
        world.state()["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["svm"]["uuid"] == uuid.as_str() && i["name"] == lif_name.as_str())
            .then_some(())
    })
    .await;
    assert!(
        restored.is_ok(),
        "the LIF {lif_name} was not restored within {FOUND_WITHIN:?} (sync period {SYNC:?}); {:?} since the delete\n{}",
        deleted.elapsed(),
        crate::support::tail(&world.operator.logs(), 40)
    );
}
