//! A real Prometheus (Debian's `/usr/bin/prometheus`, or `PROMETHEUS_BIN`) for one test: it
//! scrapes an operator on loopback every second, evaluates the shipped alerting rules every
//! second, and is asked through its own HTTP API, as Alertmanager and Grafana would ask it.
//!
//! The rule file is loaded after one templating step ([`for_the_test`]): every `for:` becomes
//! `2s` and every range `[…]` becomes `[20s]`, so an alert fires within seconds; expressions and
//! thresholds stay as shipped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{poll, repo_root, try_poll_blocking};

/// The shipped rule file and dashboard, relative to the repository.
pub const RULES: &str = "deploy/chart/files/monitoring/ontap-operator.rules.yaml";
pub const DASHBOARD: &str = "deploy/chart/files/monitoring/ontap-operator-dashboard.json";
const WITHIN: Duration = Duration::from_secs(120);

/// The shipped rules with short `for:` and ranges: the documented test-run templating step.
pub fn for_the_test(rules: &str) -> String {
    let mut out = String::with_capacity(rules.len());
    for line in rules.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("for:") {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str("for: 2s");
        } else {
            out.push_str(&shorten_ranges(line));
        }
        out.push('\n');
    }
    out
}

/// `[30m]` → `[20s]`; other brackets (label matchers never use them) are kept.
fn shorten_ranges(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close)
                if close > 1
                    && after[..close - 1].chars().all(|c| c.is_ascii_digit())
                    && after[close - 1..close].chars().all(|c| "smh".contains(c)) =>
            {
                out.push_str("[20s]");
                rest = &after[close + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The address of Prometheus's web listener, from its log line
/// `msg="Listening on" address=127.0.0.1:46807` (the line before it names the configured `:0`).
fn listening_address(log: &str) -> Option<&str> {
    log.lines()
        .filter(|line| line.contains("msg=\"Listening on\""))
        .find_map(|line| line.split("address=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|address| !address.ends_with(":0"))
}

pub struct Prometheus {
    child: Child,
    base: String,
    dir: PathBuf,
    http: reqwest::Client,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Prometheus {
    /// Scrapes `target` every second and evaluates `rules` every second.
    ///
    /// Prometheus binds port 0 itself and the address it got is read from its log: a port picked
    /// here and released could be taken by anything starting beside this test before Prometheus
    /// binds it.
    pub fn start(target: &str, rules: &str) -> Self {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "prometheus-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rules.yaml"), rules).unwrap();
        std::fs::write(
            dir.join("prometheus.yaml"),
            format!(
                "global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\n\
                 rule_files: [rules.yaml]\n\
                 scrape_configs:\n  - job_name: ontap-operator\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let binary = std::env::var("PROMETHEUS_BIN").unwrap_or_else(|_| "prometheus".into());
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let mut child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yaml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg("--web.listen-address=127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus (Debian's package `prometheus`, installed by hack/deps.sh)");
        let log_path = dir.join("prometheus.log");
        let address = try_poll_blocking(WITHIN, Duration::from_millis(50), || {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            if let Ok(Some(status)) = child.try_wait() {
                panic!("prometheus exited ({status}) before listening:\n{log}");
            }
            listening_address(&log)
                .map(str::to_owned)
                .ok_or_else(|| format!("not listening yet:\n{log}"))
        })
        .unwrap_or_else(|why| panic!("prometheus listening: {why}"));
        Prometheus {
            child,
            base: format!("http://{address}"),
            dir,
            http: reqwest::Client::new(),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    pub async fn api(&self, path: &str, query: &[(&str, String)]) -> Result<Value, String> {
        let url = reqwest::Url::parse_with_params(&format!("{}{path}", self.base), query)
            .map_err(|e| e.to_string())?;
        let response = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        match body["status"].as_str() {
            Some("success") => Ok(body["data"].clone()),
            _ => Err(format!("{path} {query:?}: {body}")),
        }
    }

    /// The alerts Prometheus holds active (pending or firing).
    pub async fn alerts(&self) -> Result<Vec<Value>, String> {
        let data = self.api("/api/v1/alerts", &[]).await?;
        Ok(data["alerts"].as_array().cloned().unwrap_or_default())
    }

    /// Waits until `alert` with `labels` is in `state` (`firing`), or — `None` — not active.
    pub async fn wait_alert(&self, alert: &str, labels: &[(&str, &str)], state: Option<&str>) {
        let what = format!("{alert} {labels:?} {}", state.unwrap_or("inactive"));
        poll(&what, WITHIN, async || {
            let alerts = self.alerts().await?;
            let found = alerts.iter().find(|a| {
                a["labels"]["alertname"] == alert
                    && labels.iter().all(|(k, v)| a["labels"][k] == *v)
            });
            let now = found.map(|a| a["state"].as_str().unwrap_or("").to_owned());
            if now.as_deref() == state {
                Ok(())
            } else {
                Err(format!("{now:?}; active: {alerts:?}"))
            }
        })
        .await;
    }
}

pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

impl Prometheus {
    /// Prometheus with the shipped rules, templated for a test run.
    pub fn with_shipped_rules(target: &str) -> Self {
        let rules = std::fs::read_to_string(repo_root().join(RULES)).unwrap();
        Self::start(target, &for_the_test(&rules))
    }

    /// Waits until the target has been scraped successfully.
    pub async fn wait_scraped(&self) {
        poll("Prometheus scrapes the operator", WITHIN, async || {
            let data = self.api("/api/v1/query", &[("query", "up".into())]).await?;
            match data["result"][0]["value"][1].as_str() {
                Some("1") => Ok(()),
                _ => Err(format!("{data}; log: {}", self.log())),
            }
        })
        .await;
    }

    /// Waits until Prometheus has scraped the target after `since` (seconds since the epoch):
    /// what the target exported at `since` is then in Prometheus, and Prometheus's one-second
    /// interval is not guessed.
    pub async fn wait_scraped_after(&self, since: f64) {
        poll(
            "Prometheus scrapes the operator again",
            WITHIN,
            async || {
                let data = self
                    .api("/api/v1/query", &[("query", "timestamp(up)".into())])
                    .await?;
                let last = data["result"][0]["value"][1]
                    .as_str()
                    .and_then(|t| t.parse::<f64>().ok());
                match last {
                    Some(at) if at > since => Ok(()),
                    _ => Err(format!(
                        "last scrape {last:?}, waiting for one after {since:.3}"
                    )),
                }
            },
        )
        .await;
    }

    /// Evaluates every dashboard query `wanted` selects over `[since, now]`, as Grafana asks
    /// (a range query); returns those without series. A query Prometheus refuses fails here.
    pub async fn dashboard_queries_without_series(
        &self,
        since: f64,
        wanted: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let end = unix_now();
        let mut empty = Vec::new();
        for expr in dashboard_queries().into_iter().filter(|e| wanted(e)) {
            let data = self
                .api(
                    "/api/v1/query_range",
                    &[
                        ("query", expr.clone()),
                        ("start", format!("{since:.3}")),
                        ("end", format!("{end:.3}")),
                        ("step", "2".into()),
                    ],
                )
                .await
                .unwrap_or_else(|e| panic!("the dashboard query {expr} fails: {e}"));
            if data["result"].as_array().is_none_or(Vec::is_empty) {
                empty.push(expr);
            }
        }
        empty
    }
}

/// Every PromQL expression of the shipped dashboard.
pub fn dashboard_queries() -> Vec<String> {
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join(DASHBOARD)).unwrap())
            .unwrap();
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| t["expr"].as_str().unwrap().to_owned())
        .collect()
}

/// Dashboard queries of the Kyma row, which only the Kyma controllers' process answers.
pub fn is_kyma_query(expr: &str) -> bool {
    expr.contains(r#"controller=~"kyma|helmcomponent""#) || expr.contains("kyma_render")
}

/// Dashboard queries of the SVM limits row, which only SVMs with limits answer (their usage
/// gauges are exported for those alone).
pub fn is_limits_query(expr: &str) -> bool {
    expr.contains("ontap_operator_svm_")
}

/// Dashboard queries of the Extension row, which only the Extension controller answers.
pub fn is_extension_query(expr: &str) -> bool {
    expr.contains("extension_last_operation")
}

#[cfg(test)]
mod tests {
    use super::listening_address;

    #[test]
    fn the_listening_address_is_the_bound_one_not_the_configured_one() {
        let log = "ts=… level=info component=web msg=\"Start listening for connections\" address=127.0.0.1:0\n\
                   ts=… caller=tls_config.go:232 level=info component=web msg=\"Listening on\" address=127.0.0.1:46807\n";
        assert_eq!(listening_address(log), Some("127.0.0.1:46807"));
        assert_eq!(
            listening_address(&log[..log.find("ts=… caller").unwrap()]),
            None
        );
    }
}
