//! `make bench`: what one tenant can make the operator spend (issue 38, item 6).
//!
//! - **Another tenant's SVM behind a batch.** The time a tenant's one SVM takes to turn Ready,
//!   alone, then created right after `BENCH_BATCH_SVMS` (default 25 and 100) SVMs of another
//!   namespace, with ONTAP's jobs taking `BENCH_JOB_MS` (default 500 ms).
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

use operator_test_support as support;

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

/// The object `namespace/name` with LIF addresses of its own, numbered `n`.
fn numbered(world: &SvmWorld, namespace: &str, name: &str, n: u32) -> StorageVirtualMachine {
    let lif = |net: u32| json!({"ip": format!("10.{net}.{}.{}", n / 250, n % 250 + 1), "prefixLength": 16});
    let mut object = world.svm_with(
        name,
        0,
        &json!({"managementLif": lif(1), "dataLifs": [lif(2)]}),
    );
    object["metadata"]["namespace"] = json!(namespace);
    serde_json::from_value(object).unwrap()
}

/// How long the object `namespace/name` (numbered `n`) takes from its creation to Ready.
async fn time_to_ready(world: &SvmWorld, namespace: &str, name: &str, n: u32) -> Duration {
    let object = numbered(world, namespace, name, n);
    let started = Instant::now();
    world
        .svms_in(namespace)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let svms = world.svms_in(namespace);
    support::poll(name, Duration::from_secs(600), async || {
        let svm = svms.get(name).await.map_err(|e| e.to_string())?;
        (svm.status.and_then(|s| s.phase) == Some(ontap_operator::api::SvmPhase::Ready))
            .then_some(())
            .ok_or_else(|| "not Ready".to_owned())
    })
    .await;
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: make bench"]
async fn bench_tenant_fair_share() {
    let job_ms: u64 = env_or("BENCH_JOB_MS", 500);
    let mut mock = fast_mock();
    mock.settings.job_duration_ms = job_ms;
    let world = SvmWorld::tenanted(mock, &[]).await;
    world.wait_cluster_ready(Duration::from_secs(60)).await;
    support::create_namespace(&world.env.client, "bulk", json!({})).await;
    let alone = time_to_ready(&world, &world.env.namespace, "alone", 0).await;
    println!(
        "another tenant's SVM alone: {:.1} s (jobs of {job_ms} ms)",
        alone.as_secs_f64()
    );
    let mut n = 1;
    for batch in [25u32, 100] {
        for i in 0..batch {
            let object = numbered(&world, "bulk", &format!("bulk-{batch}-{i}"), n);
            n += 1;
            world
                .svms_in("bulk")
                .create(&PostParams::default(), &object)
                .await
                .unwrap();
        }
        let behind =
            time_to_ready(&world, &world.env.namespace, &format!("behind-{batch}"), n).await;
        n += 1;
        println!(
            "another tenant's SVM behind {batch} of one tenant: {:.1} s ({:.1} x alone)",
            behind.as_secs_f64(),
            behind.as_secs_f64() / alone.as_secs_f64()
        );
    }
}

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
