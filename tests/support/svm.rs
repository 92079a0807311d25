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
