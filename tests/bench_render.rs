//! `make bench`: many HelmComponents rendering into namespaces of their own (issue 22, item 6).
//!
//! A binary of its own, so a control plane of its own: its operator watches every namespace, as
//! does the one of `bench_kyma`. In one binary the two benchmarks ran side by side (cargo runs a
//! binary's tests in parallel), each operator reconciled the other's objects too, and neither's
//! figures were its own: a 4,000-Kyma run beside this one made 116.9 writes per Kyma instead of
//! 113.0 and peaked 22 MiB higher. Run in turn they would still have met each other's leftovers.
//!
//! Ignored by `make test`; run with
//! `cargo test --release --test bench_render -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::PostParams;
use kyma_inventory::STANDARD_COMPONENTS;
use support::kyma::{component_state, helm, helm_component, kyma_identity};
use support::metrics::metric_sum;
use support::operator::OperatorProcess;
use support::{env, env_or, tail, try_poll};
use test_support::process::tree_rss_kb;

/// Issue 22, item 6: `BENCH_RENDER_COMPONENTS` (default 300) HelmComponents, each rendering into
/// a namespace of its own (`spec.namespace`), created at once. Before the render cache ignored
/// the namespace and helm processes were bounded, this ran one helm per component, 24 at once,
/// and the operator with its children peaked at 906 MiB. Prints the helm runs, the most helm
/// processes seen at once, and the peak RSS of the operator with its children.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: make bench"]
async fn bench_renders_into_distinct_namespaces() {
    let count: usize = env_or("BENCH_RENDER_COMPONENTS", 300);
    let env = env().await;
    let kubeconfig = kyma_identity(&env.client).await;
    let helm = format!("--helm={}", helm().display());
    let args = ["--controllers=kyma", "--kyma-time-scale=100", helm.as_str()];
    let operator = OperatorProcess::spawn(&kubeconfig, &args, &[]);
    operator.wait_readyz(200, Duration::from_secs(120)).await;
    let pid = operator.pid();
    let peaks: Arc<Mutex<(u64, usize)>> = Arc::default();
    let sampler = tokio::spawn({
        let peaks = peaks.clone();
        async move {
            loop {
                let (rss, children) = tree_rss_kb(pid);
                {
                    let mut peaks = peaks.lock().unwrap();
                    peaks.0 = peaks.0.max(rss);
                    peaks.1 = peaks.1.max(children);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    let api: kube::Api<kyma_inventory::api::HelmComponent> =
        kube::Api::namespaced(env.client.clone(), &env.namespace);
    let start = Instant::now();
    for i in 0..count {
        let chart = STANDARD_COMPONENTS[i % STANDARD_COMPONENTS.len()];
        let mut component = helm_component(&format!("render-{i}"), chart);
        component.spec.namespace = Some(format!("target-{i}"));
        api.create(&PostParams::default(), &component)
            .await
            .unwrap();
    }
    try_poll(Duration::from_secs(600), async || {
        let list = api.list(&Default::default()).await.ok()?;
        (list.items.len() == count && list.items.iter().all(|c| component_state(c).is_some()))
            .then_some(())
    })
    .await
    .unwrap_or_else(|_| panic!("not all rendered\n{}", tail(&operator.logs(), 40)));
    let elapsed = start.elapsed();
    sampler.abort();
    let (rss_kb, children) = *peaks.lock().unwrap();
    let metrics = operator.metrics_text().await;
    let helm_runs = metric_sum(&metrics, "kyma_render_duration_seconds_count", &[]);
    let text = format!(
        "render bench: {count} HelmComponents rendering into {count} namespaces\n  all rendered after {:.1} s\n  helm runs {helm_runs}, at most {children} child processes at once\n  peak RSS of the operator with its children {:.1} MiB",
        elapsed.as_secs_f64(),
        rss_kb as f64 / 1024.0
    );
    println!("{text}");
    if let Ok(path) = std::env::var("BENCH_REPORT") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(file, "{text}").unwrap();
    }
}
