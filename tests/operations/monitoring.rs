//! The alerts and the dashboard against a real Prometheus (Debian's `/usr/bin/prometheus`)
//! scraping a real operator: faults injected through mock ONTAP must make the right alert fire,
//! and removing them must clear it; every dashboard query must find series. Prometheus is asked
//! through its own HTTP API, as Alertmanager and Grafana would.
//!
//! The rule file is loaded after one templating step ([`for_the_test`]): every `for:` becomes
//! `2s` and every range `[…]` becomes `[20s]`, so an alert fires within seconds; expressions and
//! thresholds stay as shipped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;
use crate::support::{poll, repo_root};

const RULES: &str = "deploy/chart/files/monitoring/ontap-operator.rules.yaml";
const DASHBOARD: &str = "deploy/chart/files/monitoring/ontap-operator-dashboard.json";
const WITHIN: Duration = Duration::from_secs(120);

/// The shipped rules with short `for:` and ranges: the documented test-run templating step.
fn for_the_test(rules: &str) -> String {
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

struct Prometheus {
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
    fn start(target: &str, rules: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("prometheus-{}-{port}", std::process::id()));
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
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yaml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus (Debian's package `prometheus`, installed by hack/deps.sh)");
        Prometheus {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
            http: reqwest::Client::new(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    async fn api(&self, path: &str, query: &[(&str, String)]) -> Result<Value, String> {
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
    async fn alerts(&self) -> Result<Vec<Value>, String> {
        let data = self.api("/api/v1/alerts", &[]).await?;
        Ok(data["alerts"].as_array().cloned().unwrap_or_default())
    }

    /// Waits until `alert` with `labels` is in `state` (`firing`), or — `None` — not active.
    async fn wait_alert(&self, alert: &str, labels: &[(&str, &str)], state: Option<&str>) {
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

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Asks the mock's own admin API to change the seed account's password, as an administrator
/// would from the CLI, once the operator has repaired the last change.
async fn change_password_behind_our_back(world: &SvmWorld, name: &str, round: usize) {
    let secret = format!("{name}-svm-credentials");
    let (user, svm_name) = poll(
        "the seed Secret authenticates",
        WITHIN,
        async || match world.seed_credentials(&secret).await {
            Some((user, password, svm)) if world.authenticates(&user, &password, &svm).await => {
                Ok((user, svm))
            }
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    let uuid = world
        .svms()
        .get(name)
        .await
        .unwrap()
        .status
        .and_then(|s| s.uuid)
        .unwrap();
    world
        .mock
        .as_admin(
            reqwest::Method::PATCH,
            &format!("/api/security/accounts/{uuid}/{user}"),
            json!({ "password": format!("Behind0urBack{round}x") }),
        )
        .await;
    poll("the change is noticed", WITHIN, async || {
        let (user, password, _) = world.seed_credentials(&secret).await.ok_or("no Secret")?;
        world
            .authenticates(&user, &password, &svm_name)
            .await
            .then_some(())
            .ok_or_else(|| "not repaired yet".to_string())
    })
    .await;
}

/// Makes the OntapCluster controller look again now rather than at its next re-verification.
async fn nudge_cluster(world: &SvmWorld, round: usize) {
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"test/nudge": round.to_string()}}})),
        )
        .await
        .unwrap();
}

/// Dashboard queries that need controllers this run does not start (the Extension controller
/// needs Gardener's CRDs, the Kyma ones their own process); they must still evaluate.
fn needs_other_controllers(expr: &str) -> bool {
    ["extension_last_operation", "kyma", "helmcomponent"]
        .iter()
        .any(|marker| expr.contains(marker))
}

#[tokio::test]
async fn alerts_fire_and_clear_in_a_real_prometheus_and_every_dashboard_query_finds_series() {
    let started = unix_now();
    let world = SvmWorld::with(fast_mock(), &["--sync-period=2s"]).await;
    world.create_svm("watched", 0).await;
    world.wait_ready("watched", WITHIN).await;
    let rules = for_the_test(&std::fs::read_to_string(repo_root().join(RULES)).unwrap());
    let prometheus = Prometheus::start(&world.operator.metrics.to_string(), &rules);
    let cluster = world.cluster.as_str();

    poll("Prometheus scrapes the operator", WITHIN, async || {
        let data = prometheus
            .api("/api/v1/query", &[("query", "up".into())])
            .await?;
        match data["result"][0]["value"][1].as_str() {
            Some("1") => Ok(()),
            _ => Err(format!("{data}; log: {}", prometheus.log())),
        }
    })
    .await;
    // A healthy world for a while: none of the three alerts under test is active.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let quiet = prometheus.alerts().await.unwrap();
    for alert in [
        "OntapClusterCredentialsRejected",
        "OntapClusterUnreachable",
        "OntapOperatorSeedSecretVerificationFailing",
        "OntapOperatorNoLeader",
        "OntapOperatorNotReady",
    ] {
        assert!(
            !quiet.iter().any(|a| a["labels"]["alertname"] == alert),
            "{alert} is active in a healthy world: {quiet:?}"
        );
    }

    // The cluster rejects the operator's administrator credentials.
    world
        .mock
        .fault_json(json!({"method": "GET", "path": "/api/cluster",
        "action": {"type": "error", "status": 401, "code": "6",
                   "message": "User is not authorized."}}));
    nudge_cluster(&world, 1).await;
    let labels = [("cluster", cluster)];
    prometheus
        .wait_alert("OntapClusterCredentialsRejected", &labels, Some("firing"))
        .await;
    world.mock.clear_faults();
    nudge_cluster(&world, 2).await;
    prometheus
        .wait_alert("OntapClusterCredentialsRejected", &labels, None)
        .await;

    // The cluster stops answering: every connection is reset.
    world
        .mock
        .fault_json(json!({"method": "GET", "path": "/api/cluster",
        "action": {"type": "reset"}}));
    nudge_cluster(&world, 3).await;
    let labels = [("cluster", cluster), ("reason", "ClusterUnreachable")];
    prometheus
        .wait_alert("OntapClusterUnreachable", &labels, Some("firing"))
        .await;
    world.mock.clear_faults();
    nudge_cluster(&world, 4).await;
    prometheus
        .wait_alert("OntapClusterUnreachable", &[("cluster", cluster)], None)
        .await;

    // A seed Secret's password changed behind the operator's back, again and again: each change
    // is repaired, but the repetition alerts; once it stops, the alert clears.
    for round in 1..=3 {
        change_password_behind_our_back(&world, "watched", round).await;
    }
    let labels = [("cluster", cluster)];
    prometheus
        .wait_alert(
            "OntapOperatorSeedSecretVerificationFailing",
            &labels,
            Some("firing"),
        )
        .await;
    prometheus
        .wait_alert("OntapOperatorSeedSecretVerificationFailing", &labels, None)
        .await;

    // Every dashboard query, over this run, as Grafana asks it.
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join(DASHBOARD)).unwrap())
            .unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| t["expr"].as_str().unwrap().to_owned())
        .collect();
    assert!(exprs.len() > 20, "{exprs:?}");
    let end = unix_now();
    let mut empty = Vec::new();
    for expr in &exprs {
        let data = prometheus
            .api(
                "/api/v1/query_range",
                &[
                    ("query", expr.clone()),
                    ("start", format!("{started:.3}")),
                    ("end", format!("{end:.3}")),
                    ("step", "2".into()),
                ],
            )
            .await
            .unwrap_or_else(|e| panic!("the dashboard query {expr} fails: {e}"));
        let series = data["result"].as_array().map_or(0, Vec::len);
        if series == 0 && !needs_other_controllers(expr) {
            empty.push(expr.clone());
        }
    }
    assert!(
        empty.is_empty(),
        "dashboard queries without series: {empty:#?}"
    );
}
