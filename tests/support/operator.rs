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

/// How long controllers stay idle before [`OperatorProcess::wait_passes_ended`] counts their
/// passes as ended: far beyond the watch event of a pass's own write, which queues the pass it
/// causes at once.
pub const PASSES_QUIET: Duration = Duration::from_secs(2);

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
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let (Some(metrics), Some(health)) = (
            bound_address(&text, "metrics"),
            bound_address(&text, "health probe"),
        ) {
            return (metrics, health);
        }
        if child.try_wait().unwrap().is_some() {
            let nowhere = SocketAddr::from(([127, 0, 0, 1], 9));
            return (nowhere, nowhere);
        }
        assert!(
            Instant::now() < deadline,
            "the operator did not bind its servers within 60 s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
        // Worktrees sharing one CARGO_TARGET_DIR overwrite each other's uplifted binary, so a
        // run may point at its own build explicitly.
        let binary = std::env::var_os("ONTAP_OPERATOR_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_ontap-operator").into());
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

    /// Waits until the passes of `controllers` have ended: none runs, is queued (or still to be
    /// swept in) or waits for a slot, and none has finished for [`PASSES_QUIET`]. A requeue due
    /// later is not waited for. Returns how long that took.
    pub async fn wait_passes_ended(&self, controllers: &[&str], timeout: Duration) -> Duration {
        use super::metrics::metric_sum;
        let start = Instant::now();
        // The pass count at which the controllers were last seen idle, and since when.
        let mut idle: Option<(f64, Instant)> = None;
        loop {
            let text = self.metrics_text().await;
            let sum = |name: &str, label: &str| -> f64 {
                controllers
                    .iter()
                    .map(|c| metric_sum(&text, name, &[(label, c)]))
                    .sum()
            };
            let passes = sum("controller_runtime_reconcile_total", "controller");
            let busy = sum("controller_runtime_active_workers", "controller")
                + sum("workqueue_depth", "name")
                + sum("ontap_operator_reconciles_awaiting_slot", "controller")
                + sum("ontap_operator_workqueue_unswept", "name");
            idle = match idle {
                _ if busy > 0.0 => None,
                Some((seen, since)) if seen == passes => {
                    if since.elapsed() >= PASSES_QUIET {
                        return start.elapsed();
                    }
                    Some((seen, since))
                }
                _ => Some((passes, Instant::now())),
            };
            assert!(
                start.elapsed() < timeout,
                "the passes of {controllers:?} did not end within {timeout:?}\n--- operator log ---\n{}",
                super::tail(&self.logs(), 60)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls `/readyz` until its status is `want`; returns how long that took.
    pub async fn wait_readyz(&self, want: u16, timeout: Duration) -> Duration {
        let start = Instant::now();
        loop {
            if let Some((status, _)) = self.readyz().await
                && status == want
            {
                return start.elapsed();
            }
            if start.elapsed() > timeout {
                panic!(
                    "/readyz did not answer {want} within {timeout:?}; last: {:?}\n--- operator log ---\n{}",
                    self.readyz().await,
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
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
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < timeout,
                "operator did not exit within {timeout:?} of SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
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
