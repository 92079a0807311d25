//! The `mock-ontap` binary as scripts use it: ephemeral port, ready file, certificate file.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::try_poll_every;
use reqwest::StatusCode;
use serde_json::Value;

/// Kills the child when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mock-ontap-{tag}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn wait_for_file(path: &Path, child: &mut Running) -> String {
    try_poll_every(
        Duration::from_secs(20),
        Duration::from_millis(20),
        async || {
            assert!(
                child.0.try_wait().unwrap().is_none(),
                "mock-ontap exited early"
            );
            std::fs::read_to_string(path).map_err(|e| format!("no ready file: {e}"))
        },
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn https_on_an_ephemeral_port_with_ready_and_cert_files() {
    let dir = temp_dir("tls");
    let ready = dir.join("addr");
    let cert = dir.join("cert.pem");
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_mock-ontap"))
            .args(["--listen", "127.0.0.1:0", "--job-duration-ms", "20"])
            .arg("--ready-file")
            .arg(&ready)
            .arg("--tls-cert-out")
            .arg(&cert)
            .env_remove("MOCK_ONTAP_ADMIN_USER")
            .env("MOCK_ONTAP_ADMIN_PASSWORD", "Env-Secret1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = wait_for_file(&ready, &mut child).await;
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    let pem = std::fs::read(&cert).unwrap();
    let client = common::http()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .build()
        .unwrap();
    let url = format!("https://{addr}/api/cluster");
    let resp = client
        .get(&url)
        .basic_auth("admin", Some("Env-Secret1"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = client
        .get(&url)
        .basic_auth("admin", Some(mock_ontap::DEFAULT_ADMIN_PASSWORD))
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        StatusCode::UNAUTHORIZED,
        "the env password replaced the default"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn plain_http_with_a_config_file() {
    let dir = temp_dir("http");
    let ready = dir.join("addr");
    let config = dir.join("cluster.yaml");
    std::fs::write(
        &config,
        "admin: { user: root, password: Root12345 }\n\
         cluster:\n  name: lab\n  version: 9.14.1\n  nodes:\n    - { name: n1, ports: [e0a] }\n  \
         aggregates:\n    - { name: aggr_n1, node: n1 }\n",
    )
    .unwrap();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_mock-ontap"))
            .args(["--listen", "127.0.0.1:0", "--insecure-http"])
            .arg("--ready-file")
            .arg(&ready)
            .arg("--config")
            .arg(&config)
            .env_remove("MOCK_ONTAP_ADMIN_USER")
            .env_remove("MOCK_ONTAP_ADMIN_PASSWORD")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = wait_for_file(&ready, &mut child).await;
    let client = common::http().build().unwrap();
    let get = |path: &str| {
        client
            .get(format!("http://{addr}{path}"))
            .basic_auth("root", Some("Root12345"))
            .send()
    };
    let cluster: Value = get("/api/cluster").await.unwrap().json().await.unwrap();
    assert_eq!(cluster["name"], "lab");
    assert_eq!(cluster["version"]["major"], 14);
    let aggrs: Value = get("/api/storage/aggregates?fields=node.name")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(aggrs["num_records"], 1);
    assert_eq!(aggrs["records"][0]["name"], "aggr_n1");
    assert_eq!(aggrs["records"][0]["node"]["name"], "n1");
    let _ = std::fs::remove_dir_all(dir);
}
