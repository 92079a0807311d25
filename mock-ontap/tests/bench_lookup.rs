//! What one filtered GET costs at 1,000 SVMs (each with an account and an interface), the
//! load `make bench` puts on the mock. Prints figures, asserts only the answers' contents.
//!
//! `cargo test -p mock-ontap --test bench_lookup -- --ignored --nocapture` (add `--release` for
//! the figures `make bench` sees).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Mock, MockApi, poll};
use futures::future::join_all;
use mock_ontap::MockConfig;
use reqwest::{Method, StatusCode};
use serde_json::json;

const SVMS: usize = 1_000;
const ROUNDS: usize = 100;
const CONCURRENCY: usize = 8;

async fn populate(mock: &Mock) -> Vec<String> {
    for i in 0..SVMS {
        let (status, body) = mock
            .post("/api/svm/svms", json!({ "name": format!("bench{i}") }))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let uuids: Vec<String> = poll("every SVM running", Duration::from_secs(30), async || {
        let (_, body) = mock.get("/api/svm/svms?state=running").await;
        let records = body["records"].as_array().unwrap();
        (records.len() == SVMS).then(|| {
            records
                .iter()
                .map(|r| r["uuid"].as_str().unwrap().to_owned())
                .collect()
        })
    })
    .await;
    for (i, uuid) in uuids.iter().enumerate() {
        mock.create_account(uuid, "ops", &password(i)).await;
        let (status, body) = mock
            .post(
                "/api/network/ip/interfaces",
                json!({
                    "name": "lif1",
                    "svm": { "uuid": uuid },
                    "ip": { "address": format!("10.{}.{}.1", i / 250, i % 250), "netmask": "24" },
                }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    uuids
}

fn password(i: usize) -> String {
    format!("Secret{i:04}x")
}

/// Milliseconds per request: `ROUNDS` requests one after another, then `ROUNDS` more from
/// `CONCURRENCY` clients at once (where time under the state lock shows up as queueing).
async fn measure(mock: &Mock, label: &str, path: impl Fn(usize) -> String) {
    measure_as(label, |i| mock.admin(Method::GET, &path(i))).await;
}

async fn measure_as(label: &str, request: impl Fn(usize) -> reqwest::RequestBuilder) {
    let started = Instant::now();
    for i in 0..ROUNDS {
        let (status, body) = common::read(request(i).send().await.unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let records = body["num_records"].as_u64();
        assert!(records.is_none_or(|n| n >= 1), "{body}");
    }
    let sequential = started.elapsed().as_secs_f64() * 1000.0 / ROUNDS as f64;
    let started = Instant::now();
    let request = &request;
    join_all((0..CONCURRENCY).map(|worker| async move {
        for i in (worker..ROUNDS).step_by(CONCURRENCY) {
            let status = request(i).send().await.unwrap().status();
            assert_eq!(status, StatusCode::OK);
        }
    }))
    .await;
    let concurrent = started.elapsed().as_secs_f64() * 1000.0 / ROUNDS as f64;
    println!(
        "{label:<48} {sequential:>8.2} ms/request sequential, {concurrent:>8.2} ms/request with {CONCURRENCY} clients"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark: prints figures, run with --ignored --nocapture"]
async fn filtered_gets_at_1000_svms() {
    let mut config = MockConfig::default();
    config.settings.job_duration_ms = 1;
    config.settings.max_concurrent_svm_jobs = 0;
    let mock = Mock::start(config).await;
    let started = Instant::now();
    let uuids = populate(&mock).await;
    println!(
        "populated {SVMS} SVMs, accounts and interfaces in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let uuid = |i: usize| &uuids[(i * 7919) % SVMS];
    let svm_fields = "fields=uuid,name,state,aggregates,nfs,iscsi,nvme,comment";
    measure(&mock, "GET svms?name=<one>", |i| {
        format!("/api/svm/svms?name=bench{}&{svm_fields}", (i * 7919) % SVMS)
    })
    .await;
    measure(&mock, "GET svms?uuid=<one>", |i| {
        format!("/api/svm/svms?uuid={}&{svm_fields}", uuid(i))
    })
    .await;
    measure(&mock, "GET accounts?owner.uuid=<one>&name=ops", |i| {
        format!(
            "/api/security/accounts?owner.uuid={}&name=ops&fields=name,locked,role",
            uuid(i)
        )
    })
    .await;
    measure(&mock, "GET interfaces?svm.uuid=<one>", |i| {
        format!(
            "/api/network/ip/interfaces?svm.uuid={}&fields=name,ip,location",
            uuid(i)
        )
    })
    .await;
    measure(&mock, "GET interfaces?ip.address=<one>", |i| {
        let i = (i * 7919) % SVMS;
        format!(
            "/api/network/ip/interfaces?ip.address=10.{}.{}.1",
            i / 250,
            i % 250
        )
    })
    .await;
    measure_as("GET cluster as an SVM account (authentication)", |i| {
        let i = (i * 7919) % SVMS;
        mock.http
            .get(mock.url("/api/cluster"))
            .basic_auth("ops", Some(password(i)))
    })
    .await;
    measure(&mock, "GET svms?name=bench99* (scan)", |_| {
        "/api/svm/svms?name=bench99*".to_owned()
    })
    .await;
    measure(&mock, "GET svms?max_records=20 (first page)", |_| {
        "/api/svm/svms?max_records=20".to_owned()
    })
    .await;
}
