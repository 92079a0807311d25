//! One StorageVirtualMachine test world: a real API server namespace, a mock ONTAP of its own
//! (over TLS), an OntapCluster pointing at it, and a real operator process scoped to both and
//! running as the ServiceAccount identity of deploy/rbac.yaml.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use mock_ontap::{MockConfig, MockServer};
use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use serde_json::{Value, json};

use super::operator::{OperatorProcess, operator_identity};
use super::{TestEnv, env};

pub struct SvmWorld {
    pub env: TestEnv,
    pub mock: MockServer,
    pub operator: OperatorProcess,
    pub cluster: String,
    /// For `/_mock` and for authenticating as SVM accounts.
    pub http: reqwest::Client,
    operator_args: Vec<String>,
    operator_envs: Vec<(String, String)>,
}

/// Mock settings tests usually want: short jobs.
pub fn fast_mock() -> MockConfig {
    let mut config = MockConfig::default();
    config.settings.job_duration_ms = 100;
    config
}

impl SvmWorld {
    pub async fn start() -> Self {
        Self::with(fast_mock(), &[]).await
    }

    /// `extra` are more `ontap-operator run` flags (`--flag=value`); they replace the world's
    /// defaults of the same name.
    pub async fn with(mock: MockConfig, extra: &[&str]) -> Self {
        Self::with_env(mock, extra, &[]).await
    }

    /// Like [`SvmWorld::with`], with environment variables for the operator process (kept
    /// across [`SvmWorld::restart_operator`]).
    pub async fn with_env(mock: MockConfig, extra: &[&str], envs: &[(&str, &str)]) -> Self {
        let env = env().await;
        let kubeconfig = operator_identity(&env.client).await;
        let mock = MockServer::start_tls(mock).await.unwrap();
        let ns = env.namespace.clone();
        let cluster = format!("c-{ns}");
        let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &ns);
        let admin = mock.admin();
        secrets
            .create(
                &PostParams::default(),
                &secret(
                    "ontap-admin",
                    json!({"username": admin.user, "password": admin.password}),
                ),
            )
            .await
            .unwrap();
        secrets
            .create(
                &PostParams::default(),
                &secret("ontap-ca", json!({"ca.crt": mock.cert_pem().unwrap()})),
            )
            .await
            .unwrap();
        let clusters: Api<OntapCluster> = Api::all(env.client.clone());
        let object: OntapCluster = serde_json::from_value(json!({
            "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "OntapCluster",
            "metadata": { "name": cluster, "labels": { "ontap-test": ns } },
            "spec": {
                "endpoint": mock.base_url(),
                "credentialsSecretRef": { "namespace": ns, "name": "ontap-admin" },
                "caSecretRef": { "namespace": ns, "name": "ontap-ca" }
            }
        }))
        .unwrap();
        clusters
            .create(&PostParams::default(), &object)
            .await
            .unwrap();

        let defaults = [
            format!("--namespace={ns}"),
            format!("--ontap-cluster-selector=ontap-test={ns}"),
            "--ontap-request-timeout=2s".to_string(),
            "--backoff-max=5s".to_string(),
        ];
        // clap refuses a flag given twice, so a flag in `extra` replaces the default.
        let flag = |arg: &str| arg.split('=').next().unwrap_or(arg).to_string();
        let mut operator_args: Vec<String> = defaults
            .into_iter()
            .filter(|d| !extra.iter().any(|e| flag(e) == flag(d)))
            .collect();
        operator_args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = operator_args.iter().map(String::as_str).collect();
        let operator_envs: Vec<(String, String)> = envs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let operator = OperatorProcess::spawn(&kubeconfig, &args, envs);
        super::install_crypto_provider();
        let http = reqwest::Client::builder()
            .tls_certs_only([
                reqwest::Certificate::from_pem(mock.cert_pem().unwrap().as_bytes()).unwrap(),
            ])
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        Self {
            env,
            mock,
            operator,
            cluster,
            http,
            operator_args,
            operator_envs,
        }
    }

    /// Stops the operator abruptly and starts a new one with the same flags.
    pub fn restart_operator(&mut self) {
        self.operator.kill();
        let args: Vec<&str> = self.operator_args.iter().map(String::as_str).collect();
        let kubeconfig = super::control_plane()
            .dir
            .as_ref()
            .unwrap()
            .join("operator.kubeconfig");
        let envs: Vec<(&str, &str)> = self
            .operator_envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.operator = OperatorProcess::spawn(&kubeconfig, &args, &envs);
    }

    pub fn svms(&self) -> Api<StorageVirtualMachine> {
        Api::namespaced(self.env.client.clone(), &self.env.namespace)
    }

    pub fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.env.client.clone(), &self.env.namespace)
    }

    /// A StorageVirtualMachine manifest with LIF addresses derived from `index` so that
    /// several SVMs of one test never share an address.
    pub fn manifest(&self, name: &str, index: u8) -> Value {
        json!({
            "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "StorageVirtualMachine",
            "metadata": { "name": name },
            "spec": {
                "clusterRef": { "name": self.cluster },
                "protocols": { "nfs": true },
                "managementLif": { "ip": format!("192.0.2.{}", 2 * index + 10), "prefixLength": 24 },
                "dataLifs": [ { "ip": format!("192.0.2.{}", 2 * index + 11), "prefixLength": 24 } ]
            }
        })
    }

    pub async fn create_svm(&self, name: &str, index: u8) -> StorageVirtualMachine {
        let svm: StorageVirtualMachine =
            serde_json::from_value(self.manifest(name, index)).unwrap();
        self.svms()
            .create(&PostParams::default(), &svm)
            .await
            .unwrap()
    }

    /// The `Ready` condition's status and reason, and the phase.
    pub async fn readiness(&self, name: &str) -> (String, String, Option<String>) {
        let svm = self.svms().get(name).await.unwrap();
        let status = svm.status.unwrap_or_default();
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
        (
            ready.map(|c| c.status.clone()).unwrap_or_default(),
            ready
                .map(|c| format!("{}: {}", c.reason, c.message))
                .unwrap_or_default(),
            status.phase.map(|p| format!("{p:?}")),
        )
    }

    /// Waits until the SVM is Ready with `observedGeneration` current.
    pub async fn wait_ready(&self, name: &str, timeout: Duration) -> StorageVirtualMachine {
        self.wait_condition(name, "Ready", "True", timeout).await
    }

    pub async fn wait_condition(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        timeout: Duration,
    ) -> StorageVirtualMachine {
        let start = Instant::now();
        loop {
            if let Some(svm) = self.svms().get_opt(name).await.unwrap() {
                let s = svm.status.clone().unwrap_or_default();
                let current = s.observed_generation == svm.metadata.generation;
                if current
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == type_ && c.status == status)
                {
                    return svm;
                }
            }
            if start.elapsed() > timeout {
                panic!(
                    "{name}: condition {type_} not {status} within {timeout:?}; status: {:?}\nmock state: {}\n--- operator log (tail) ---\n{}",
                    self.svms()
                        .get_opt(name)
                        .await
                        .unwrap()
                        .and_then(|s| s.status),
                    self.mock.state().snapshot(),
                    tail(&self.operator.logs(), 60)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn wait_gone(&self, name: &str, timeout: Duration) {
        let start = Instant::now();
        while self.svms().get_opt(name).await.unwrap().is_some() {
            assert!(
                start.elapsed() < timeout,
                "{name} still exists after {timeout:?}: {:?}\n{}",
                self.svms()
                    .get_opt(name)
                    .await
                    .unwrap()
                    .and_then(|s| s.status),
                tail(&self.operator.logs(), 60)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The mock's state: `svms`, `accounts`, `interfaces`, `jobs`, in ONTAP's shapes.
    pub fn state(&self) -> Value {
        self.mock.state().snapshot()
    }

    /// The mock's request log.
    pub async fn requests(&self) -> Vec<Value> {
        let log: Value = self
            .http
            .get(format!("{}/_mock/requests", self.mock.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        log.get("records")
            .or(Some(&log))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether `username`/`password` authenticate against the mock and see `svm`, as a
    /// workload using the seed Secret would.
    pub async fn authenticates(&self, username: &str, password: &str, svm: &str) -> bool {
        let response = self
            .http
            .get(format!(
                "{}/api/svm/svms?name={svm}&fields=name",
                self.mock.base_url()
            ))
            .basic_auth(username, Some(password))
            .send()
            .await
            .unwrap();
        if !response.status().is_success() {
            return false;
        }
        let body: Value = response.json().await.unwrap();
        body["num_records"] == 1
    }

    /// The seed Secret's credentials, decoded.
    pub async fn seed_credentials(&self, secret: &str) -> Option<(String, String, String)> {
        let secret = self.secrets().get_opt(secret).await.unwrap()?;
        let data = secret.data?;
        let get = |k: &str| data.get(k).map(|v| String::from_utf8(v.0.clone()).unwrap());
        Some((get("username")?, get("password")?, get("svm")?))
    }
}

fn secret(name: &str, string_data: Value) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        string_data: Some(serde_json::from_value(string_data).unwrap()),
        ..Default::default()
    }
}

pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Polls `probe` every 100 ms until it returns `Ok`; after `timeout`, panics with `what` and the
/// last reason it gave for not being there yet.
pub async fn poll<T>(
    what: &str,
    timeout: Duration,
    mut probe: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let start = Instant::now();
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(why) if start.elapsed() > timeout => {
                panic!("{what}: not reached within {timeout:?}; last: {why}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The sum of the samples of metric `name` (Prometheus text format) whose labels include every
/// pair of `labels`.
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            let wanted = metric == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            wanted.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

/// Kubernetes writes the operator has sent so far, by its own client metrics.
pub fn kube_writes(metrics: &str) -> f64 {
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|m| metric_sum(metrics, "rest_client_requests_total", &[("method", m)]))
        .sum()
}

fn records<'a>(state: &'a Value, kind: &str) -> &'a [Value] {
    state[kind]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Every interface and account in the mock belongs to an SVM that exists.
pub fn no_orphans(state: &Value) -> Result<(), String> {
    let svms: Vec<&Value> = records(state, "svms").iter().map(|s| &s["uuid"]).collect();
    for interface in records(state, "interfaces") {
        if !svms.contains(&&interface["svm"]["uuid"]) {
            return Err(format!("orphan interface {interface}"));
        }
    }
    for account in records(state, "accounts") {
        if !svms.contains(&&account["owner"]["uuid"]) {
            return Err(format!("orphan account {account}"));
        }
    }
    Ok(())
}

impl SvmWorld {
    /// Whether `name` (created by [`create_svm`](Self::create_svm) with `index`) has converged:
    /// Ready for its current generation, exactly one SVM of its name in ONTAP and running,
    /// exactly its two LIFs with the spec's addresses, exactly our account besides the built-in
    /// vsadmin, nothing orphaned, and a seed Secret whose credentials authenticate now.
    pub async fn converged(&self, name: &str, index: u8) -> Result<(), String> {
        let svm = self
            .svms()
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the StorageVirtualMachine is gone")?;
        let status = svm.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready || status.observed_generation != svm.metadata.generation {
            return Err(format!("not Ready: {:?}", status.conditions));
        }
        let svm_name = status.svm_name.clone().ok_or("no status.svmName")?;
        let state = self.state();
        let same_name: Vec<&Value> = records(&state, "svms")
            .iter()
            .filter(|s| s["name"] == svm_name.as_str())
            .collect();
        let [ontap_svm] = same_name.as_slice() else {
            return Err(format!(
                "{} SVMs named {svm_name}: {state}",
                same_name.len()
            ));
        };
        if ontap_svm["state"] != "running" {
            return Err(format!("SVM not running: {ontap_svm}"));
        }
        let uuid = &ontap_svm["uuid"];
        no_orphans(&state)?;
        let mut ips: Vec<&str> = records(&state, "interfaces")
            .iter()
            .filter(|i| &i["svm"]["uuid"] == uuid)
            .filter_map(|i| i["ip"]["address"].as_str())
            .collect();
        ips.sort_unstable();
        let manifest = self.manifest(name, index);
        let mut wanted = vec![
            manifest["spec"]["managementLif"]["ip"]
                .as_str()
                .unwrap_or_default(),
            manifest["spec"]["dataLifs"][0]["ip"]
                .as_str()
                .unwrap_or_default(),
        ];
        wanted.sort_unstable();
        if ips != wanted {
            return Err(format!("LIFs {ips:?}, wanted {wanted:?}"));
        }
        let (username, password, secret_svm) = self
            .seed_credentials(status.secret_ref.as_deref().ok_or("no status.secretRef")?)
            .await
            .ok_or("seed Secret missing or incomplete")?;
        if secret_svm != svm_name {
            return Err(format!("the Secret names SVM {secret_svm}, not {svm_name}"));
        }
        let mut accounts: Vec<&str> = records(&state, "accounts")
            .iter()
            .filter(|a| &a["owner"]["uuid"] == uuid)
            .filter_map(|a| a["name"].as_str())
            .collect();
        accounts.sort_unstable();
        let mut wanted = vec![username.as_str(), "vsadmin"];
        wanted.sort_unstable();
        if accounts != wanted {
            return Err(format!("accounts {accounts:?}, wanted {wanted:?}"));
        }
        if !self.authenticates(&username, &password, &svm_name).await {
            return Err(format!(
                "the seed Secret's credentials for {username} do not work"
            ));
        }
        Ok(())
    }

    /// Whether ONTAP holds nothing of the SVM named `svm_name` any more.
    pub fn gone_from_ontap(&self, svm_name: &str) -> Result<(), String> {
        let state = self.state();
        if records(&state, "svms")
            .iter()
            .any(|s| s["name"] == svm_name)
        {
            return Err(format!("SVM {svm_name} still in ONTAP: {state}"));
        }
        no_orphans(&state)
    }
}
