//! The real `ontap-operator` binary as a child process of a test, under a chosen identity.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::pinned_kind;

use super::{ControlPlane, control_plane, repo_root};

pub const OPERATOR_NAMESPACE: &str = "ontap-operator-system";
pub const OPERATOR_SERVICE_ACCOUNT: &str = "ontap-operator";

/// How long the operator must stay settled — no controller has work queued, running, waiting
/// for a slot or still to be swept in, and it writes nothing to Kubernetes — before
/// [`OperatorProcess::quiesce`] calls it quiet: far beyond the watch event of a pass's own write,
/// which queues the pass that write causes at once. Twenty scrapes at the poll's 100 ms.
pub const SETTLED_FOR: Duration = Duration::from_secs(2);

/// The address the operator's `what` server bound, from its start-up log line: `address=<a>`
/// as text, `"address":"<a>"` as JSON.
pub fn bound_address(log: &str, what: &str) -> Option<SocketAddr> {
    let line = log
        .lines()
        .find(|l| l.contains(&format!("{what} server listening")))?;
    let at = ["address=", "\"address\":\""]
        .iter()
        .find_map(|key| line.find(key).map(|at| at + key.len()))?;
    line[at..]
        .split(|c: char| c.is_whitespace() || c == '"')
        .next()?
        .parse()
        .ok()
}

/// Where the operator started as `child`, logging to `log`, serves metrics and health probes:
/// it binds port 0 and says which ports it got, so no test races another process for a port
/// picked free beforehand. A child that exits before binding gets the discard port, which
/// nothing answers.
fn bound_addresses(child: &mut Child, log: &Path) -> (SocketAddr, SocketAddr) {
    let nowhere = SocketAddr::from(([127, 0, 0, 1], 9));
    super::try_poll_blocking(Duration::from_secs(60), Duration::from_millis(20), || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let (Some(metrics), Some(health)) = (
            bound_address(&text, "metrics"),
            bound_address(&text, "health probe"),
        ) {
            return Ok((metrics, health));
        }
        if child.try_wait().unwrap().is_some() {
            return Ok((nowhere, nowhere));
        }
        Err(format!("no servers bound yet:\n{text}"))
    })
    .unwrap_or_else(|why| panic!("the operator binding its servers: {why}"))
}

/// Server-side applies every object of the given files of `deploy/`.
pub async fn apply_deploy_files(client: &Client, files: &[&str]) {
    for file in files {
        let text = std::fs::read_to_string(repo_root().join("deploy").join(file)).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value: serde_json::Value = serde::Deserialize::deserialize(doc).unwrap();
            if value.is_null() {
                continue;
            }
            apply_object(
                client,
                value,
                &PatchParams::apply("ontap-operator-tests").force(),
            )
            .await
            .unwrap_or_else(|e| panic!("applying {file}: {e}"));
        }
    }
}

/// Server-side applies one object of any kind the API server serves, in its own namespace.
pub async fn apply_object(
    client: &Client,
    value: serde_json::Value,
    params: &PatchParams,
) -> Result<(), String> {
    let object: DynamicObject = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let types = object
        .types
        .clone()
        .ok_or("an object without apiVersion/kind")?;
    let gvk = GroupVersionKind::try_from(&types).map_err(|e| e.to_string())?;
    let (resource, caps) = pinned_kind(client, &gvk).await.map_err(|e| e.to_string())?;
    let name = object
        .metadata
        .name
        .clone()
        .ok_or("an object without a name")?;
    let api: Api<DynamicObject> = match (&object.metadata.namespace, caps.scope) {
        (Some(ns), kube::discovery::Scope::Namespaced) => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        _ => Api::all_with(client.clone(), &resource),
    };
    api.patch(&name, params, &Patch::Apply(&object))
        .await
        .map(|_| ())
        .map_err(|e| format!("{} {name}: {e}", gvk.kind))
}

/// A kubeconfig for the operator's ServiceAccount, bound by exactly the RBAC in `deploy/`
/// (applied here), so a permission the manifests lack fails the test that needs it.
pub async fn operator_identity(client: &Client) -> PathBuf {
    let plane: &ControlPlane = control_plane();
    let dir = plane
        .dir
        .as_ref()
        .expect("a service account identity needs the project's own control plane");
    operator_identity_on(dir, client).await
}

/// [`operator_identity`] on the control plane in `dir`.
pub async fn operator_identity_on(dir: &Path, client: &Client) -> PathBuf {
    apply_deploy_files(client, &["namespace.yaml", "rbac.yaml"]).await;
    let out = dir.join("operator.kubeconfig");
    // Tests of one binary ask at once; the certificate is minted once.
    static MINT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let minting = MINT.lock().unwrap_or_else(|p| p.into_inner());
    if !out.exists() {
        let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}");
        mint_user(
            dir,
            &user,
            &[
                "system:serviceaccounts",
                &format!("system:serviceaccounts:{OPERATOR_NAMESPACE}"),
            ],
            &out,
        );
    }
    drop(minting);
    Api::<Namespace>::all(client.clone())
        .get(OPERATOR_NAMESPACE)
        .await
        .unwrap();
    out
}

/// Writes `out`, a kubeconfig of the control plane in `dir` for `user` in `groups`.
pub fn mint_user(dir: &Path, user: &str, groups: &[&str], out: &Path) {
    let mut command = Command::new(repo_root().join("hack/control-plane.sh"));
    command
        .args(["user", "--dir"])
        .arg(dir)
        .args(["--name", user]);
    for group in groups {
        command.args(["--group", group]);
    }
    let status = command.arg("--out").arg(out).status().unwrap();
    assert!(status.success(), "minting a kubeconfig for {user}");
}

/// A client for a tenant of `namespace`: a user bound there to the aggregated `edit` role and
/// nothing else. The clusterrole-aggregation controller (kube-controller-manager) does not run
/// here, so the roles `deploy/rbac.yaml` aggregates into `edit` are bound beside it, which is
/// what aggregation would give.
pub async fn tenant_client(dir: &Path, admin: &Client, namespace: &str, user: &str) -> Client {
    use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
    let aggregated: Vec<String> = Api::<ClusterRole>::all(admin.clone())
        .list(
            &kube::api::ListParams::default()
                .labels("rbac.authorization.k8s.io/aggregate-to-edit=true"),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|role| role.metadata.name)
        .collect();
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), namespace);
    for role in std::iter::once("edit".to_owned()).chain(aggregated) {
        let binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{user}-{role}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }))
        .unwrap();
        bindings
            .create(&kube::api::PostParams::default(), &binding)
            .await
            .unwrap();
    }
    let out = dir.join(format!("{user}.kubeconfig"));
    mint_user(dir, user, &[], &out);
    super::client_for(&out).await
}

pub struct OperatorProcess {
    child: Child,
    pub metrics: SocketAddr,
    pub health: SocketAddr,
    pub log: PathBuf,
    http: reqwest::Client,
}

impl OperatorProcess {
    /// Starts `ontap-operator run` with its admin servers on loopback ports it picks itself.
    pub fn spawn(kubeconfig: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let log = std::env::temp_dir().join(format!(
            "ontap-operator-{}-{}.log",
            std::process::id(),
            STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let file = std::fs::File::create(&log).unwrap();
        let binary = super::operator_binary();
        let mut command = Command::new(binary);
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--metrics-bind-address=127.0.0.1:0")
            .arg("--health-probe-bind-address=127.0.0.1:0")
            // Tests read /metrics on loopback without a token, but for the one that checks
            // the authentication (tests/operations/metrics_auth.rs), which asks for it.
            .args(
                (!args.iter().any(|a| a.starts_with("--metrics-auth")))
                    .then_some("--metrics-auth=none"),
            )
            .args(args)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env(
                "RUST_LOG",
                std::env::var("OPERATOR_RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        for (k, v) in envs {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let (metrics, health) = bound_addresses(&mut child, &log);
        Self {
            child,
            metrics,
            health,
            log,
            http: reqwest::Client::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Status and body of `/readyz?verbose`; `None` while nothing answers.
    pub async fn readyz(&self) -> Option<(u16, String)> {
        let response = self
            .http
            .get(format!("http://{}/readyz?verbose", self.health))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        Some((response.status().as_u16(), response.text().await.ok()?))
    }

    /// Status and body of `/healthz?verbose`; `None` while nothing answers.
    pub async fn healthz(&self) -> Option<(u16, String)> {
        let response = self
            .http
            .get(format!("http://{}/healthz?verbose", self.health))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        Some((response.status().as_u16(), response.text().await.ok()?))
    }

    pub async fn metrics_text(&self) -> String {
        self.http
            .get(format!("http://{}/metrics", self.metrics))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// How many passes `controller` finished, from the metrics.
    pub async fn passes(&self, controller: &str) -> f64 {
        super::metrics::metric_sum(
            &self.metrics_text().await,
            "controller_runtime_reconcile_total",
            &[("controller", controller)],
        )
    }

    /// Waits until the operator has settled: no controller has anything queued (or still to be
    /// swept in), running or waiting for a slot, and no write of the operator's reached
    /// Kubernetes, for [`SETTLED_FOR`] of scrapes in a row. Every write restarts the count, so
    /// the passes that the events of the operator's own writes cause are waited for too; passes
    /// that write nothing (a periodic resync with nothing to do) do not hold it up. A requeue due
    /// later is not waited for. Returns how long that took; fails after `timeout` saying what was
    /// still busy, with the operator's log.
    pub async fn quiesce(&self, timeout: Duration) -> Duration {
        self.quiesce_for(SETTLED_FOR, timeout).await
    }

    /// [`Self::quiesce`] with a settled time of its own: for a reading that must fall between
    /// two periodic passes, which come sooner than [`SETTLED_FOR`] apart.
    pub async fn quiesce_for(&self, settled_for: Duration, timeout: Duration) -> Duration {
        use super::metrics::{kube_writes, metric_sums};
        let start = Instant::now();
        // The operator's write count when it was last seen settled, and since when.
        let mut settled: Option<(f64, Instant)> = None;
        let outcome = super::try_poll(timeout, async || {
            let text = self.metrics_text().await;
            let busy: Vec<String> = [
                "controller_runtime_active_workers",
                "workqueue_depth",
                "ontap_operator_reconciles_awaiting_slot",
                "ontap_operator_workqueue_unswept",
            ]
            .iter()
            .flat_map(|name| {
                metric_sums(&text, name, "controller+name")
                    .into_iter()
                    .filter(|(_, n)| *n > 0.0)
                    .map(move |(controller, n)| format!("{name}{{{controller}}} {n}"))
            })
            .collect();
            let writes = kube_writes(&text);
            settled = match settled {
                _ if !busy.is_empty() => None,
                Some((seen, since)) if seen == writes => Some((seen, since)),
                _ => Some((writes, Instant::now())),
            };
            match settled {
                Some((_, since)) if since.elapsed() >= settled_for => Ok(()),
                Some((_, since)) => Err(format!(
                    "settled for {:?} of {settled_for:?}, {writes} writes so far",
                    since.elapsed()
                )),
                None => Err(format!("busy: {busy:?}")),
            }
        })
        .await;
        if let Err(why) = outcome {
            panic!(
                "the operator did not settle: {why}\n--- operator log ---\n{}",
                super::tail(&self.logs(), 60)
            );
        }
        start.elapsed()
    }

    /// Polls `/readyz` until its status is `want`; returns how long that took.
    pub async fn wait_readyz(&self, want: u16, timeout: Duration) -> Duration {
        let start = Instant::now();
        let outcome =
            super::try_poll_every(timeout, Duration::from_millis(200), async || {
                match self.readyz().await {
                    Some((status, _)) if status == want => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            })
            .await;
        if let Err(why) = outcome {
            panic!(
                "/readyz did not answer {want}: {why}\n--- operator log ---\n{}",
                self.logs()
            );
        }
        start.elapsed()
    }

    fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status();
    }

    /// SIGTERM, then waits for the process to exit.
    pub async fn terminate(&mut self, timeout: Duration) -> std::process::ExitStatus {
        self.signal("TERM");
        super::try_poll(timeout, async || {
            self.child
                .try_wait()
                .unwrap()
                .ok_or_else(|| "still running".to_owned())
        })
        .await
        .unwrap_or_else(|why| panic!("the operator exiting on SIGTERM: {why}"))
    }

    /// SIGKILL: the process gets no chance to clean up, like a crashed pod.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}
