//! A real Jaeger (v2, in-memory) started by `hack/jaeger.sh` for one test, owned by the test
//! process so its watchdog stops it even when the test binary is killed.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{install_crypto_provider, repo_root};

pub struct Jaeger {
    /// For the operator's `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub otlp_endpoint: String,
    pub query_url: String,
    dir: PathBuf,
    http: reqwest::Client,
}

impl Jaeger {
    pub fn start() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "ontap-operator-jaeger-{}-{nanos}",
            std::process::id()
        ));
        let status = Command::new(repo_root().join("hack/jaeger.sh"))
            .args(["up", "--dir"])
            .arg(&dir)
            .args(["--owner-pid", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "hack/jaeger.sh up failed");
        let env = std::fs::read_to_string(dir.join("env")).unwrap();
        let var = |name: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("{name} missing from {}", dir.join("env").display()))
                .to_string()
        };
        install_crypto_provider();
        Self {
            otlp_endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            query_url: var("JAEGER_QUERY_URL"),
            dir,
            http: reqwest::Client::new(),
        }
    }

    /// Traces of `service` (Jaeger's query API: `data`, each with `traceID` and `spans`).
    pub async fn traces(&self, service: &str, operation: Option<&str>, limit: u32) -> Vec<Value> {
        let mut url = format!(
            "{}/api/traces?service={service}&limit={limit}&lookback=1h",
            self.query_url
        );
        if let Some(op) = operation {
            url.push_str(&format!("&operation={op}"));
        }
        let response = self
            .http
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        let Ok(response) = response else {
            return Vec::new();
        };
        let body: Value = response.json().await.unwrap_or_default();
        body["data"].as_array().cloned().unwrap_or_default()
    }

    /// Polls until `found` picks something out of the service's traces; spans are exported in
    /// batches, so they arrive a while after they end.
    pub async fn wait_for<T>(
        &self,
        service: &str,
        operation: Option<&str>,
        timeout: Duration,
        mut found: impl FnMut(&[Value]) -> Option<T>,
    ) -> T {
        let seen = crate::try_poll_every(timeout, Duration::from_millis(500), async || {
            let traces = self.traces(service, operation, 1000).await;
            found(&traces).ok_or_else(|| {
                format!(
                    "{} traces of {service}: {}",
                    traces.len(),
                    summarize(&traces)
                )
            })
        })
        .await;
        seen.unwrap_or_else(|why| {
            panic!(
                "Jaeger at {} did not have the expected trace: {why}",
                self.query_url
            )
        })
    }

    /// Jaeger's own log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("jaeger.log")).unwrap_or_default()
    }
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("hack/jaeger.sh"))
            .args(["down", "--dir"])
            .arg(&self.dir)
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The operation names of each trace, for failure messages.
pub fn summarize(traces: &[Value]) -> String {
    traces
        .iter()
        .take(20)
        .map(|t| {
            let ops: Vec<&str> = t["spans"]
                .as_array()
                .map(|s| {
                    s.iter()
                        .filter_map(|s| s["operationName"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            format!("{}: {}", t["traceID"], ops.join(","))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A span's tag value as text.
pub fn tag(span: &Value, key: &str) -> Option<String> {
    span["tags"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .map(|t| match &t["value"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
}

/// The span id of a span's `CHILD_OF` parent, if any.
pub fn parent_id(span: &Value) -> Option<String> {
    span["references"]
        .as_array()?
        .iter()
        .find(|r| r["refType"] == "CHILD_OF")
        .and_then(|r| r["spanID"].as_str())
        .map(str::to_string)
}

/// Trace ids compare equal whether or not leading zeros were kept.
pub fn same_trace_id(a: &str, b: &str) -> bool {
    a.trim_start_matches('0') == b.trim_start_matches('0')
}
