//! One StorageVirtualMachine test world: a real API server namespace, a mock ONTAP of its own
//! (over TLS), an OntapCluster pointing at it, and a real operator process scoped to both and
//! running as the ServiceAccount identity of deploy/rbac.yaml.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use mock_ontap::MockConfig;
use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use serde_json::{Value, json};

use super::fixtures::{SvmFixture, ontap_cluster, svm};
use super::mock::{Mock, fast_mock};
use super::operator::{OperatorProcess, operator_identity};
use super::{TestEnv, env, poll, tail};

pub struct SvmWorld {
    pub env: TestEnv,
    /// The mock ONTAP (over TLS); its `http` client also authenticates as SVM accounts.
    pub mock: Mock,
    pub operator: OperatorProcess,
    pub cluster: String,
    operator_args: Vec<String>,
    operator_envs: Vec<(String, String)>,
    operator_kubeconfig: PathBuf,
    /// The control plane of a world with one of its own ([`SvmWorld::tenanted`]).
    pub plane_dir: Option<PathBuf>,
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
        Self::build(env, kubeconfig, mock, extra, envs, false, None).await
    }

    /// A world on a control plane of its own, whose operator watches every namespace: tenants
    /// in several namespaces ([`super::operator::tenant_client`]) meet one operator there, as
    /// in a real cluster. `env.namespace` is `victim`, which also holds the cluster's Secrets.
    pub async fn tenanted(mock: MockConfig, extra: &[&str]) -> Self {
        super::install_crypto_provider();
        let dir = tokio::task::spawn_blocking(|| super::start_owned_control_plane("tenants"))
            .await
            .unwrap();
        let kubeconfig = dir.join("kubeconfig");
        let client = super::client_for(&kubeconfig).await;
        for crd in super::project_crds() {
            super::install_crd(&client, crd).await;
        }
        let namespace = "victim".to_owned();
        super::create_namespace(&client, &namespace, json!({})).await;
        let env = TestEnv {
            client,
            namespace,
            kubeconfig,
        };
        let operator_kubeconfig = super::operator::operator_identity_on(&dir, &env.client).await;
        Self::build(env, operator_kubeconfig, mock, extra, &[], true, Some(dir)).await
    }

    async fn build(
        env: TestEnv,
        kubeconfig: PathBuf,
        mock: MockConfig,
        extra: &[&str],
        envs: &[(&str, &str)],
        all_namespaces: bool,
        plane_dir: Option<PathBuf>,
    ) -> Self {
        let mock = Mock::start_tls(mock).await;
        let ns = env.namespace.clone();
        let cluster = format!("c-{ns}");
        install_cluster(&env, &cluster, &mock, "").await;

        let defaults = [
            format!("--namespace={ns}"),
            format!("--credentials-namespace={ns}"),
            format!("--ontap-cluster-selector=ontap-test={ns}"),
            "--ontap-request-timeout=2s".to_string(),
            "--backoff-max=5s".to_string(),
        ];
        // clap refuses a flag given twice, so a flag in `extra` replaces the default.
        let flag = |arg: &str| arg.split('=').next().unwrap_or(arg).to_string();
        let mut operator_args: Vec<String> = defaults
            .into_iter()
            .filter(|d| !extra.iter().any(|e| flag(e) == flag(d)))
            .filter(|d| !(all_namespaces && flag(d) == "--namespace"))
            .collect();
        operator_args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = operator_args.iter().map(String::as_str).collect();
        let operator_envs: Vec<(String, String)> = envs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let operator = OperatorProcess::spawn(&kubeconfig, &args, envs);
        Self {
            env,
            mock,
            operator,
            cluster,
            operator_args,
            operator_envs,
            operator_kubeconfig: kubeconfig,
            plane_dir,
        }
    }

    /// Stops the operator abruptly and starts a new one with the same flags.
    pub fn restart_operator(&mut self) {
        self.operator.kill();
        let args: Vec<&str> = self.operator_args.iter().map(String::as_str).collect();
        let kubeconfig = self.operator_kubeconfig.clone();
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

    pub fn svms_in(&self, namespace: &str) -> Api<StorageVirtualMachine> {
        Api::namespaced(self.env.client.clone(), namespace)
    }

    pub fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.env.client.clone(), &self.env.namespace)
    }

    pub fn clusters(&self) -> Api<OntapCluster> {
        Api::all(self.env.client.clone())
    }

    /// An SVM of this world's cluster with LIF addresses derived from `index`, so that
    /// several SVMs of one test never share an address.
    pub fn svm(&self, name: &str, index: u8) -> SvmFixture {
        svm(name).cluster(&self.cluster).nfs().index(index)
    }

    /// [`SvmWorld::svm`] with the fields of `spec` (a JSON object) set over its spec.
    pub fn svm_with(&self, name: &str, index: u8, spec: &Value) -> Value {
        let mut object = self.svm(name, index).json();
        for (key, value) in spec.as_object().unwrap() {
            object["spec"][key] = value.clone();
        }
        object
    }

    /// Waits until the object `name` of `namespace` has condition `type_` False with `reason`,
    /// and gives its message.
    pub async fn refused_in(
        &self,
        namespace: &str,
        name: &str,
        type_: &str,
        reason: &str,
    ) -> String {
        let svms = self.svms_in(namespace);
        poll(
            &format!("{name}: {type_} {reason}"),
            Duration::from_secs(60),
            async || {
                let svm = svms.get(name).await.map_err(|e| e.to_string())?;
                let conditions = svm.status.map(|s| s.conditions).unwrap_or_default();
                conditions
                    .iter()
                    .find(|c| c.type_ == type_ && c.status == "False" && c.reason == reason)
                    .map(|c| c.message.clone())
                    .ok_or_else(|| format!("{conditions:?}"))
            },
        )
        .await
    }

    pub async fn create_svm(&self, name: &str, index: u8) -> StorageVirtualMachine {
        self.svms()
            .create(&PostParams::default(), &self.svm(name, index).build())
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
    /// Waits until the world's OntapCluster reports `Ready=True`.
    pub async fn wait_cluster_ready(&self, timeout: Duration) {
        poll("the OntapCluster Ready", timeout, async || {
            let cluster = self.clusters().get_opt(&self.cluster).await.ok()??;
            cluster
                .status?
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
                .then_some(())
        })
        .await;
    }

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
        let found = super::try_poll(timeout, async || {
            let svm = self.svms().get_opt(name).await.unwrap()?;
            let s = svm.status.clone().unwrap_or_default();
            let current = s.observed_generation == svm.metadata.generation;
            let met = s
                .conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == status);
            (current && met).then_some(svm)
        })
        .await;
        match found {
            Ok(svm) => svm,
            Err(_) => panic!(
                "{name}: condition {type_} not {status} within {timeout:?}; status: {:?}\nmock state: {}\n--- operator log (tail) ---\n{}",
                self.svms()
                    .get_opt(name)
                    .await
                    .unwrap()
                    .and_then(|s| s.status),
                self.mock.snapshot(),
                tail(&self.operator.logs(), 60)
            ),
        }
    }

    pub async fn wait_gone(&self, name: &str, timeout: Duration) {
        if super::gone(&self.svms(), name, timeout).await.is_err() {
            panic!(
                "{name} still exists after {timeout:?}: {:?}\n{}",
                self.svms()
                    .get_opt(name)
                    .await
                    .unwrap()
                    .and_then(|s| s.status),
                tail(&self.operator.logs(), 60)
            );
        }
    }

    /// The mock's state: `svms`, `accounts`, `interfaces`, `jobs`, in ONTAP's shapes.
    pub fn state(&self) -> Value {
        self.mock.snapshot()
    }

    /// What ONTAP holds of the SVM named `svm_name` (`Null` when none): its record, its LIFs and
    /// its accounts, sorted, for comparing before and after something that must change nothing.
    pub fn holdings(&self, svm_name: &str) -> Value {
        let state = self.state();
        let svm = records(&state, "svms")
            .iter()
            .find(|s| s["name"] == svm_name)
            .cloned()
            .unwrap_or(Value::Null);
        let of_svm = |kind: &str, key: &str| -> Vec<Value> {
            let mut items: Vec<Value> = records(&state, kind)
                .iter()
                .filter(|item| item[key]["uuid"] == svm["uuid"])
                .cloned()
                .collect();
            items.sort_by_key(|i| i["name"].to_string());
            items
        };
        json!({"svm": svm, "interfaces": of_svm("interfaces", "svm"), "accounts": of_svm("accounts", "owner")})
    }

    /// Creates the StorageVirtualMachine `object` (a manifest), or gives the API server's
    /// refusal.
    pub async fn create_manifest(&self, object: Value) -> Result<(), String> {
        self.svms()
            .create(
                &PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// What an administrator makes in ONTAP by hand: the broadcast domain `domain` and in it the
    /// VLAN port `<base_port>-<tag>` of `node`.
    pub async fn admin_vlan(&self, domain: &str, node: &str, base_port: &str, tag: u16) {
        self.mock
            .as_admin(
                reqwest::Method::POST,
                "/api/network/ethernet/broadcast-domains",
                json!({ "name": domain, "mtu": 1500 }),
            )
            .await;
        self.mock
            .as_admin(
                reqwest::Method::POST,
                "/api/network/ethernet/ports",
                json!({
                    "type": "vlan", "node": { "name": node },
                    "vlan": { "tag": tag, "base_port": { "name": base_port, "node": { "name": node } } },
                    "broadcast_domain": { "name": domain },
                }),
            )
            .await;
    }

    /// The interface with `address` of the SVM named `svm_name`, as ONTAP shows it.
    pub fn interface(&self, svm_name: &str, address: &str) -> Value {
        let state = self.state();
        records(&state, "interfaces")
            .iter()
            .find(|i| i["svm"]["name"] == svm_name && i["ip"]["address"] == address)
            .cloned()
            .unwrap_or_else(|| panic!("no interface {address} in {svm_name}: {state}"))
    }

    /// The routes of the SVM named `svm_name` as ONTAP lists them: `destination/prefix via
    /// gateway`, sorted.
    pub async fn routes(&self, svm_name: &str) -> Vec<String> {
        let listed = self
            .mock
            .as_admin(
                reqwest::Method::GET,
                &format!(
                    "/api/network/ip/routes?svm.name={svm_name}&fields=uuid,destination,gateway"
                ),
                Value::Null,
            )
            .await;
        let mut routes: Vec<String> = records(&listed, "records")
            .iter()
            .map(|r| {
                format!(
                    "{}/{} via {}",
                    r["destination"]["address"].as_str().unwrap_or_default(),
                    r["destination"]["netmask"].as_str().unwrap_or_default(),
                    r["gateway"].as_str().unwrap_or_default()
                )
            })
            .collect();
        routes.sort();
        routes
    }

    /// The mock's request log.
    pub async fn requests(&self) -> Vec<Value> {
        self.mock.requests(&[]).await
    }

    /// The sequence number the mock's request log will give its next request: its log is a ring
    /// of 10,000, but the numbers keep counting past evictions.
    pub async fn next_seq(&self) -> u64 {
        self.requests()
            .await
            .last()
            .and_then(|r| r["seq"].as_u64())
            .map_or(0, |s| s + 1)
    }

    /// Whether `username`/`password` authenticate against the mock and see `svm`, as a
    /// workload using the seed Secret would.
    pub async fn authenticates(&self, username: &str, password: &str, svm: &str) -> bool {
        authenticates_on(&self.mock, username, password, svm).await
    }

    /// The seed Secret's credentials, decoded.
    pub async fn seed_credentials(&self, secret: &str) -> Option<(String, String, String)> {
        seed_credentials(&self.secrets(), secret).await
    }
}

/// Another OntapCluster of a world, with its own mock ONTAP ([`SvmWorld::add_cluster`]).
pub struct ExtraCluster {
    pub name: String,
    pub mock: Mock,
}

impl SvmWorld {
    /// One more mock ONTAP (over TLS) and an OntapCluster pointing at it, in this world's
    /// namespace and selected by its operator like the first; `index` (from 1) names the
    /// cluster and its Secrets apart from the first's.
    pub async fn add_cluster(&self, index: usize, mock: MockConfig) -> ExtraCluster {
        let mock = Mock::start_tls(mock).await;
        let name = format!("{}-{index}", self.cluster);
        install_cluster(&self.env, &name, &mock, &format!("-{index}")).await;
        ExtraCluster { name, mock }
    }
}

impl SvmWorld {
    /// A second OntapCluster `name` on this world's ONTAP (same endpoint, same Secrets), as an
    /// administrator makes one to admit other namespaces to the same cluster.
    pub async fn alias_cluster(&self, name: &str) {
        let ns = &self.env.namespace;
        let object = ontap_cluster(name)
            .endpoint(&self.mock.base_url())
            .credentials(ns, "ontap-admin")
            .ca(ns, "ontap-ca")
            .label("ontap-test", ns)
            .build();
        self.clusters()
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
}

/// The credentials and CA Secrets (`ontap-admin{suffix}`, `ontap-ca{suffix}`) of `mock` in the
/// world's namespace, and the OntapCluster `name` pointing at it with the label the world's
/// operator selects.
async fn install_cluster(env: &TestEnv, name: &str, mock: &Mock, suffix: &str) {
    let ns = &env.namespace;
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), ns);
    let admin = mock.server.admin();
    let (credentials, ca) = (format!("ontap-admin{suffix}"), format!("ontap-ca{suffix}"));
    secrets
        .create(
            &PostParams::default(),
            &secret(
                &credentials,
                json!({"username": admin.user, "password": admin.password}),
            ),
        )
        .await
        .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &secret(&ca, json!({"ca.crt": mock.server.cert_pem().unwrap()})),
        )
        .await
        .unwrap();
    let clusters: Api<OntapCluster> = Api::all(env.client.clone());
    let object = ontap_cluster(name)
        .endpoint(&mock.base_url())
        .credentials(ns, &credentials)
        .ca(ns, &ca)
        .label("ontap-test", ns)
        .build();
    clusters
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

/// Whether `username`/`password` authenticate against `mock` and see `svm`, as a workload
/// using the seed Secret would.
pub async fn authenticates_on(mock: &Mock, username: &str, password: &str, svm: &str) -> bool {
    authenticates_at(&mock.http, &mock.base_url(), username, password, svm).await
}

/// [`authenticates_on`] through `http` at the mock's `base_url`, for a task that outlives a
/// borrow of the mock.
pub async fn authenticates_at(
    http: &reqwest::Client,
    base_url: &str,
    username: &str,
    password: &str,
    svm: &str,
) -> bool {
    let response = http
        .get(format!("{base_url}/api/svm/svms?name={svm}&fields=name"))
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

fn records<'a>(state: &'a Value, kind: &str) -> &'a [Value] {
    state[kind]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Where a tenant's StorageVirtualMachines, their seed Secrets and their ONTAP are, whoever runs
/// the operator (a process of the test, or Pods on a node).
pub struct Tenant<'a> {
    pub svms: Api<StorageVirtualMachine>,
    pub secrets: Api<Secret>,
    pub mock: &'a Mock,
}

/// Whether the object `name`, made from `fixture`, has converged: Ready for its current
/// generation, exactly one SVM of its name in ONTAP and running, exactly its two LIFs with the
/// spec's addresses, exactly our account besides the built-in vsadmin, nothing orphaned, and a
/// seed Secret whose credentials authenticate now.
pub async fn converged(
    tenant: &Tenant<'_>,
    name: &str,
    fixture: &SvmFixture,
) -> Result<(), String> {
    let svm = tenant
        .svms
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
    let state = tenant.mock.snapshot();
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
    let mut wanted = fixture.addresses().to_vec();
    wanted.sort_unstable();
    if ips != wanted {
        return Err(format!("LIFs {ips:?}, wanted {wanted:?}"));
    }
    let (username, password, secret_svm) = seed_credentials(
        &tenant.secrets,
        status.secret_ref.as_deref().ok_or("no status.secretRef")?,
    )
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
    if !authenticates_on(tenant.mock, &username, &password, &svm_name).await {
        return Err(format!(
            "the seed Secret's credentials for {username} do not work"
        ));
    }
    Ok(())
}

/// The seed Secret's credentials, decoded: username, password, SVM.
pub async fn seed_credentials(
    secrets: &Api<Secret>,
    name: &str,
) -> Option<(String, String, String)> {
    let secret = secrets.get_opt(name).await.unwrap()?;
    let data = secret.data?;
    let get = |k: &str| data.get(k).map(|v| String::from_utf8(v.0.clone()).unwrap());
    Some((get("username")?, get("password")?, get("svm")?))
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
    /// Whether `name` (created by [`create_svm`](Self::create_svm) with `index`) has
    /// [`converged`].
    pub async fn converged(&self, name: &str, index: u8) -> Result<(), String> {
        let tenant = Tenant {
            svms: self.svms(),
            secrets: self.secrets(),
            mock: &self.mock,
        };
        converged(&tenant, name, &self.svm(name, index)).await
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
