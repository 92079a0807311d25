//! `make bench`: what one tenant can make the operator spend (issue 38, item 6).
//!
//! - **Waiting consumers.** `BENCH_WAITING_CONSUMERS` `AccountOnly` objects (default 100) name a
//!   provider whose SVM never comes (its aggregate does not exist). Prints the ONTAP SVM lookups
//!   per second they cause over `BENCH_WAITING_SECONDS` (default 120) after a minute's start,
//!   against what a fixed 5 s recheck costs (one lookup per object every 5 s).
//! - **Labelled Secrets.** `BENCH_LABELLED_SECRETS` Secrets (default 40) of 900 KiB each, carrying
//!   the seed Secrets' label, created by a tenant in its namespace. Prints the operator's RSS
//!   before and after they are cached.
//!
//! A binary of its own, so a control plane of its own. Ignored by `make test`; run with
//! `cargo test --release --test bench_tenancy -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::api::seed_secret::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use serde_json::json;
use support::env_or;
use support::mock::fast_mock;
use support::process::proc_status_kb;
use support::svm::SvmWorld;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: make bench"]
async fn bench_tenant_costs() {
    let consumers: u8 = env_or("BENCH_WAITING_CONSUMERS", 100);
    let window: u64 = env_or("BENCH_WAITING_SECONDS", 120);
    let secrets: usize = env_or("BENCH_LABELLED_SECRETS", 40);
    let world = SvmWorld::with(fast_mock(), &[]).await;
    world.wait_cluster_ready(Duration::from_secs(60)).await;

    let create = |name: String, index: u8, spec: serde_json::Value| {
        let object: StorageVirtualMachine =
            serde_json::from_value(world.svm_with(&name, index, &spec)).unwrap();
        let svms = world.svms();
        async move {
            svms.create(&PostParams::default(), &object).await.unwrap();
        }
    };
    create(
        "provider".into(),
        0,
        json!({"svmName": "never", "aggregates": ["absent"]}),
    )
    .await;
    for i in 0..consumers {
        create(
            format!("consumer-{i}"),
            i.saturating_add(1),
            json!({"mode": "AccountOnly", "svmName": "never", "account": {"name": format!("user{i}")},
                   "provider": {"name": "provider"}}),
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    let before = world.mock.sent("GET", "/api/svm/svms").await;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(window)).await;
    let lookups = world.mock.sent("GET", "/api/svm/svms").await - before;
    let per_second = lookups as f64 / started.elapsed().as_secs_f64();
    println!(
        "waiting consumers: {consumers} objects, {lookups} SVM lookups in {window} s after the first minute = {per_second:.2} per second (a fixed 5 s recheck: {:.1} per second)",
        f64::from(consumers) / 5.0
    );

    let pid = world.operator.pid();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss_before = proc_status_kb(pid, "VmRSS").unwrap();
    let api: Api<Secret> = Api::namespaced(world.env.client.clone(), &world.env.namespace);
    for i in 0..secrets {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(format!("bulk-{i}")),
                labels: Some(BTreeMap::from([(
                    MANAGED_BY_LABEL.to_owned(),
                    MANAGED_BY_VALUE.to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                "blob".to_owned(),
                ByteString(vec![b'x'; 900 * 1024]),
            )])),
            ..Secret::default()
        };
        api.create(&PostParams::default(), &secret).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(15)).await;
    let rss_after = proc_status_kb(pid, "VmRSS").unwrap();
    println!(
        "labelled Secrets: {secrets} of 900 KiB; operator RSS {:.1} MiB before, {:.1} MiB after ({:+.1} MiB)",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / 1024.0
    );
}
