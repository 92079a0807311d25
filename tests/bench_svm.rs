//! `make bench`: many StorageVirtualMachines created at once against a mock ONTAP that, like
//! ONTAP, runs at most 5 SVM jobs at a time. Prints the time until all are Ready next to the
//! floor that limit sets, the operator's peak memory and the ONTAP requests per SVM.
//!
//! Ignored by `make test`; run with
//! `cargo test --release --test bench_svm -- --ignored --nocapture` (the release profile also
//! builds the operator binary the test starts). `BENCH_SVMS` changes the count (default 1000).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, ListParams, PostParams};
use mock_ontap::MockConfig;
use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use support::fixtures::svm;
use support::metrics::metric_sums;
use support::svm::SvmWorld;
use support::{tail, try_poll};
use test_support::process::{loadavg, proc_cpu, proc_status_kb};

const JOB_DURATION_MS: u64 = 200;
const JOB_LIMIT: usize = 5;
const ALL_READY_WITHIN: Duration = Duration::from_secs(30 * 60);

fn manifest(cluster: &str, i: usize) -> StorageVirtualMachine {
    // Two addresses per SVM, unique across 65,536 SVMs.
    let (hi, lo) = (i / 256, i % 256);
    svm(&format!("bench-{i:05}"))
        .cluster(cluster)
        .nfs()
        .lifs(&format!("10.1.{hi}.{lo}"), &format!("10.2.{hi}.{lo}"), 16)
        .build()
}

fn is_ready(svm: &StorageVirtualMachine) -> bool {
    let Some(status) = &svm.status else {
        return false;
    };
    status.observed_generation == svm.metadata.generation
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// User plus system CPU seconds of a process.
fn cpu_seconds(pid: u32) -> Option<f64> {
    proc_cpu(pid).map(|used| used.as_secs_f64())
}

async fn wait_cluster_ready(world: &SvmWorld) {
    let clusters: Api<OntapCluster> = Api::all(world.env.client.clone());
    let ready = try_poll(Duration::from_secs(60), async || {
        let cluster = clusters.get(&world.cluster).await.unwrap();
        cluster
            .status
            .as_ref()
            .is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
            .then_some(())
    })
    .await;
    if let Err(why) = ready {
        panic!(
            "OntapCluster not Ready: {why}\n{}",
            tail(&world.operator.logs(), 40)
        );
    }
}

/// Restarts the operator, which then looks at every SVM once: what a resync of a Ready SVM
/// costs. Returns the ONTAP GETs (without the OntapCluster's probe) and writes of those passes,
/// and the Kubernetes writes of the new process.
async fn measure_resync(world: &mut SvmWorld, count: usize) -> (usize, usize, f64) {
    let from = world.next_seq().await;
    world.restart_operator();
    let passes = |log: &[serde_json::Value]| {
        log.iter()
            .filter(|r| r["seq"].as_u64().is_some_and(|s| s >= from))
            .filter(|r| r["user"] != world.mock.server.admin().user.as_str())
            .count()
    };
    let done = try_poll(Duration::from_secs(600), async || {
        let n = passes(&world.requests().await);
        (n >= count)
            .then_some(())
            .ok_or(format!("{n}/{count} passes"))
    })
    .await;
    if let Err(why) = done {
        println!("bench: resync incomplete: {why}");
    }
    // The last passes' status diffs (none expected) and anything that follows.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log: Vec<serde_json::Value> = world
        .requests()
        .await
        .into_iter()
        .filter(|r| r["seq"].as_u64().is_some_and(|s| s >= from))
        .filter(|r| r["path"] != "/api/cluster")
        .collect();
    let gets = log.iter().filter(|r| r["method"] == "GET").count();
    let kube_writes = support::metrics::kube_writes(&world.operator.metrics_text().await);
    (gets, log.len() - gets, kube_writes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: make bench"]
async fn bench_many_svms_created_at_once() {
    let count: usize = std::env::var("BENCH_SVMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    // What a user runs: the operator's own defaults, unless the environment asks otherwise.
    let extra_flags: Vec<String> = std::env::var("BENCH_OPERATOR_FLAGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut mock = MockConfig::default();
    mock.settings.job_duration_ms = JOB_DURATION_MS;
    mock.settings.max_concurrent_svm_jobs = JOB_LIMIT;
    // The world's test defaults (short backoff cap, 2 s ONTAP timeout) would flatter the
    // operator; the benchmark runs with the operator's own defaults.
    let mut flags = vec!["--backoff-max=1000s", "--ontap-request-timeout=30s"];
    flags.extend(extra_flags.iter().map(String::as_str));
    let flags: Vec<&str> = {
        // Flags from BENCH_OPERATOR_FLAGS win over the two above.
        let name = |f: &str| f.split('=').next().unwrap_or(f).to_string();
        let mut kept: Vec<&str> = Vec::new();
        for f in flags.iter().rev() {
            if !kept.iter().any(|k| name(k) == name(f)) {
                kept.push(f);
            }
        }
        kept.reverse();
        kept
    };
    let mut world = SvmWorld::with(mock, &flags).await;
    let pid = world.operator.pid();
    wait_cluster_ready(&world).await;
    let seq_before = world.next_seq().await;
    let metrics_before = world.operator.metrics_text().await;
    let cpu_before = cpu_seconds(pid).unwrap_or_default();
    let own_cpu_before = cpu_seconds(std::process::id()).unwrap_or_default();
    let load_before = loadavg();

    let svms: Api<StorageVirtualMachine> = world.svms();
    let start = Instant::now();
    let created: Vec<Result<(), kube::Error>> = futures::stream::iter(0..count)
        .map(|i| {
            let svms = svms.clone();
            let object = manifest(&world.cluster, i);
            async move {
                svms.create(&PostParams::default(), &object)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let creating = start.elapsed();
    let failed: Vec<_> = created.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "creating SVMs failed: {:?}",
        &failed[..1]
    );

    let mut progress = Vec::new();
    let mut last_report = Instant::now();
    let all_ready = loop {
        let list = svms.list(&ListParams::default()).await.unwrap();
        let ready = list.items.iter().filter(|s| is_ready(s)).count();
        if ready == count {
            break start.elapsed();
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            let t = start.elapsed().as_secs();
            progress.push(format!("{t:>5}s {ready:>5}"));
            println!("bench: {t:>5}s: {ready}/{count} Ready");
        }
        assert!(
            start.elapsed() < ALL_READY_WITHIN,
            "only {ready}/{count} Ready after {ALL_READY_WITHIN:?}\n{}",
            tail(&world.operator.logs(), 40)
        );
        // Listing every SVM costs the API server and this machine's CPU the operator needs.
        tokio::time::sleep(Duration::from_secs(1)).await;
    };

    let peak_rss_kb = proc_status_kb(pid, "VmHWM").unwrap_or_default();
    let rss_kb = proc_status_kb(pid, "VmRSS").unwrap_or_default();
    let cpu = cpu_seconds(pid).unwrap_or_default() - cpu_before;
    let seq_after = world.next_seq().await;
    let ontap_requests = seq_after - seq_before;
    let metrics = world.operator.metrics_text().await;
    let diff = |metric: &str, label: &str| {
        let before = metric_sums(&metrics_before, metric, label);
        let mut after = metric_sums(&metrics, metric, label);
        for (k, v) in before {
            *after.entry(k).or_default() -= v;
        }
        after.retain(|_, v| *v != 0.0);
        after
    };
    let by_request = diff("ontap_client_requests_total", "method+endpoint+status+code");
    let client_requests: f64 = by_request.values().sum();
    let reconciles = diff("controller_runtime_reconcile_total", "controller+result");
    let retries = diff("ontap_client_retries_total", "");
    let jobs = diff("ontap_client_jobs_total", "outcome");
    // Means of histograms: `_sum` over `_count`, per label set.
    let mean = |metric: &str, label: &str| -> BTreeMap<String, String> {
        let sums = diff(&format!("{metric}_sum"), label);
        let counts = diff(&format!("{metric}_count"), label);
        sums.iter()
            .filter_map(|(k, sum)| {
                let n = counts.get(k)?;
                Some((k.clone(), format!("{:.0} ms x {n}", sum / n * 1000.0)))
            })
            .collect()
    };
    let request_latency = mean("ontap_client_request_duration_seconds", "method+endpoint");
    let reconcile_time = mean("controller_runtime_reconcile_time_seconds", "controller");
    let step_time = mean("ontap_operator_step_duration_seconds", "step+outcome");
    let queue_retries = diff("workqueue_retries_total", "name");
    // Watches are long requests and counted once; everything else is one call.
    let kube_calls = diff("rest_client_requests_total", "method+code");
    let kube_limiter = mean("rest_client_rate_limiter_duration_seconds", "verb");
    let floor = Duration::from_millis(JOB_DURATION_MS) * (count.div_ceil(JOB_LIMIT) as u32);
    let state = world.state();

    let mut report = String::new();
    let mut line = |s: String| {
        report.push_str(&s);
        report.push('\n');
    };
    line("==================== bench: SVMs created at once ====================".into());
    line(format!(
        "SVMs                     {count} (mock: {JOB_DURATION_MS} ms jobs, {JOB_LIMIT} at a time)"
    ));
    line(format!("operator flags           {}", flags.join(" ")));
    line(format!(
        "created in               {:.1} s",
        creating.as_secs_f64()
    ));
    line(format!(
        "all Ready after          {:.1} s   (floor {:.1} s: {count} / {JOB_LIMIT} x {JOB_DURATION_MS} ms; {:.2}x the floor)",
        all_ready.as_secs_f64(),
        floor.as_secs_f64(),
        all_ready.as_secs_f64() / floor.as_secs_f64()
    ));
    line(format!(
        "operator peak RSS        {:.1} MiB (VmHWM; {:.1} MiB at the end)",
        peak_rss_kb as f64 / 1024.0,
        rss_kb as f64 / 1024.0
    ));
    line(format!(
        "operator CPU             {cpu:.1} s (user + system, during the run); this process (mock ONTAP, kube client) {:.1} s",
        cpu_seconds(std::process::id()).unwrap_or_default() - own_cpu_before
    ));
    line(format!(
        "machine load average     {} at the start, {} at the end ({} CPUs)",
        load_before.trim(),
        loadavg().trim(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    line(format!(
        "ONTAP requests           {ontap_requests} seen by the mock = {:.1} per SVM ({client_requests} sent per the operator's metrics)",
        ontap_requests as f64 / count as f64
    ));
    for (labels, n) in &by_request {
        line(format!("  {n:>8} {labels}"));
    }
    line("ONTAP request time, mean (from the operator: includes waiting for one of the client's 20 slots)".into());
    for (labels, m) in &request_latency {
        line(format!("  {m:>18} {labels}"));
    }
    line(format!("reconcile time, mean     {reconcile_time:?}"));
    line("step time, mean".into());
    for (labels, m) in &step_time {
        line(format!("  {m:>18} {labels}"));
    }
    line(format!("work queue retries       {queue_retries:?}"));
    line(format!(
        "Kubernetes API calls     {:.1} per SVM: {kube_calls:?}",
        kube_calls.values().sum::<f64>() / count as f64
    ));
    line(format!("client rate limit wait   {kube_limiter:?}"));
    line(format!("ONTAP jobs waited for    {jobs:?}"));
    line(format!("ONTAP client retries     {retries:?}"));
    line(format!("reconciles               {reconciles:?}"));
    line(format!(
        "mock state               {} svms, {} interfaces, {} jobs kept",
        state["svms"].as_array().map_or(0, Vec::len),
        state["interfaces"].as_array().map_or(0, Vec::len),
        state["jobs"].as_array().map_or(0, Vec::len)
    ));
    line(format!("Ready over time          {}", progress.join(" |")));
    let (resync_gets, resync_writes, resync_kube_writes) = measure_resync(&mut world, count).await;
    line(format!(
        "resync of every Ready SVM (operator restarted): {:.2} ONTAP GETs per SVM (target ≤ 3), {resync_writes} ONTAP writes, {resync_kube_writes} Kubernetes writes",
        resync_gets as f64 / count as f64
    ));
    line("=====================================================================".into());
    print!("{report}");
    if let Ok(path) = std::env::var("BENCH_REPORT") {
        std::fs::write(path, &report).unwrap();
    }
}
