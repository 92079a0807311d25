//! The one test harness: a real kube-apiserver + etcd per test binary (envtest style), the
//! project's CRDs installed, a fresh namespace per test, and exactly one of each helper the
//! test binaries share — the poller ([`poll`]), the Prometheus text parser ([`metrics`]), the
//! mock ONTAP control client ([`mock`]) and the ONTAP client harness ([`ontap`]).
//!
//! The control plane is started once per test binary by `hack/control-plane.sh` with this
//! process as its owner, so a watchdog stops it when the binary exits, also after a panic or a
//! kill. With `USE_EXISTING_CLUSTER=true` the cluster from `KUBECONFIG` is used instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub mod admission;
pub mod blackhole;
pub mod jaeger;
pub mod metrics;
pub mod mock;
pub mod node;
pub mod ontap;
pub mod process;
pub mod prometheus;

pub struct ControlPlane {
    /// Folder of the control plane this binary started; `None` for an existing cluster.
    pub dir: Option<PathBuf>,
    pub kubeconfig: PathBuf,
}

static CONTROL_PLANE: OnceLock<ControlPlane> = OnceLock::new();

/// reqwest is built without a rustls provider of its own: ring, kube's, is the one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The repository's root: this crate lives in `crates/test-support`.
pub fn repo_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .expect("crates/test-support sits two folders below the repository root")
            .to_path_buf()
    })
}

/// The control plane of this test binary, started on first use.
pub fn control_plane() -> &'static ControlPlane {
    CONTROL_PLANE.get_or_init(|| {
        // The CRDs are installed from a thread with its own runtime: the caller is usually a
        // test's runtime, which must not be blocked on itself and is gone after that test.
        std::thread::spawn(|| {
            let plane = start_or_attach();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let client = client_for(&plane.kubeconfig).await;
                for crd in project_crds() {
                    install_crd(&client, crd).await;
                }
            });
            plane
        })
        .join()
        .expect("starting the test control plane")
    })
}

fn start_or_attach() -> ControlPlane {
    if std::env::var("USE_EXISTING_CLUSTER").is_ok_and(|v| v == "true") {
        let kubeconfig = std::env::var_os("KUBECONFIG")
            .map(PathBuf::from)
            .expect("USE_EXISTING_CLUSTER=true needs KUBECONFIG");
        return ControlPlane {
            dir: None,
            kubeconfig,
        };
    }
    let dir = start_owned_control_plane("test");
    ControlPlane {
        kubeconfig: dir.join("kubeconfig"),
        dir: Some(dir),
    }
}

/// Starts a control plane in a fresh temporary folder owned by this process (its watchdog stops
/// it when the process is gone) and returns that folder, which holds `kubeconfig`.
pub fn start_owned_control_plane(label: &str) -> PathBuf {
    start_owned_control_plane_on(label, None)
}

/// [`start_owned_control_plane`] listening on `address` (an address of this machine, see
/// `hack/node.sh address`) instead of loopback: for a control plane Pods must reach, which
/// loopback is not to them.
pub fn start_owned_control_plane_on(label: &str, address: Option<std::net::IpAddr>) -> PathBuf {
    let dir = owned_dir(label);
    let status = Command::new(repo_root().join("hack/control-plane.sh"))
        .args(["up", "--dir"])
        .arg(&dir)
        .args(["--owner-pid", &std::process::id().to_string()])
        .args(
            address
                .map(|a| ["--address".to_owned(), a.to_string()])
                .into_iter()
                .flatten(),
        )
        .status()
        .expect("running hack/control-plane.sh");
    assert!(
        status.success(),
        "hack/control-plane.sh up failed: {status}"
    );
    dir
}

/// A fresh temporary folder name for what this process starts, `ontap-operator-<label>-<pid>-…`:
/// the process id tells whose it is when one is left behind.
pub fn owned_dir(label: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    std::env::temp_dir().join(format!(
        "ontap-operator-{label}-{}-{nanos}",
        std::process::id()
    ))
}

pub async fn client_for(kubeconfig: &Path) -> Client {
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    Client::try_from(config).unwrap()
}

/// The CRDs under `crds/`, the files `make manifests` generates and users apply.
pub fn project_crds() -> Vec<CustomResourceDefinition> {
    crds_in(&repo_root().join("crds"))
}

/// The CRDs of every `.yaml` file in `dir`, one per file, in file-name order.
pub fn crds_in(dir: &Path) -> Vec<CustomResourceDefinition> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| serde_yaml::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect()
}

/// Applies a CRD and waits until the API server serves it.
pub async fn install_crd(client: &Client, crd: CustomResourceDefinition) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap();
    api.patch(
        &name,
        &PatchParams::apply("ontap-operator-tests").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap();
    poll(
        &format!("CRD {name} Established"),
        Duration::from_secs(30),
        async || {
            let current = api.get(&name).await.map_err(|e| e.to_string())?;
            let established = current
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            established
                .then_some(())
                .ok_or_else(|| "not Established".to_owned())
        },
    )
    .await;
    // Established is set before every handler of the API server serves the new resource: a
    // request right after it may still be answered 404, so the resource is listed until it is
    // served, in each version the CRD serves.
    for version in crd.spec.versions.iter().filter(|v| v.served) {
        let resource = ApiResource {
            group: crd.spec.group.clone(),
            version: version.name.clone(),
            api_version: format!("{}/{}", crd.spec.group, version.name),
            kind: crd.spec.names.kind.clone(),
            plural: crd.spec.names.plural.clone(),
        };
        let objects: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        poll(
            &format!("{} {} served", name, version.name),
            Duration::from_secs(30),
            async || {
                objects
                    .list(&ListParams::default().limit(1))
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        )
        .await;
    }
}

/// What one test gets: an admin client and a namespace of its own.
pub struct TestEnv {
    pub client: Client,
    pub namespace: String,
    pub kubeconfig: PathBuf,
}

pub async fn env() -> TestEnv {
    install_crypto_provider();
    let plane = tokio::task::spawn_blocking(control_plane).await.unwrap();
    let client = client_for(&plane.kubeconfig).await;
    let namespace = format!("test-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let ns = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(namespace.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    TestEnv {
        client,
        namespace,
        kubeconfig: plane.kubeconfig.clone(),
    }
}

/// Creates the namespace `name` with `labels` (a JSON object).
pub async fn create_namespace(client: &Client, name: &str, labels: serde_json::Value) {
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": labels},
    }))
    .unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// What `kubectl get -o wide` asks for: the objects at `path` (an API collection URL) as a
/// `meta.k8s.io/v1` Table, with every printer column and its priority.
pub async fn table(client: &Client, path: &str) -> serde_json::Value {
    let request = http::Request::get(format!("{path}?includeObject=None"))
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    client.request(request).await.unwrap()
}

/// Polls `probe` every 100 ms until it gives a value (`Some` or `Ok`); after `timeout`, panics
/// with `what` and the last reason it gave for not being there yet.
pub async fn poll<T, P: Attempt<T>>(
    what: &str,
    timeout: Duration,
    probe: impl AsyncFnMut() -> P,
) -> T {
    try_poll(timeout, probe)
        .await
        .unwrap_or_else(|why| panic!("{what}: {why}"))
}

/// Like [`poll`], but gives up with an error instead of panicking: for tests that collect
/// outcomes rather than stop at the first failure, or that add their own context to the failure.
pub async fn try_poll<T, P: Attempt<T>>(
    timeout: Duration,
    probe: impl AsyncFnMut() -> P,
) -> Result<T, String> {
    try_poll_every(timeout, Duration::from_millis(100), probe).await
}

/// Like [`try_poll`], looking every `interval`: for what arrives in batches (exported spans).
pub async fn try_poll_every<T, P: Attempt<T>>(
    timeout: Duration,
    interval: Duration,
    mut probe: impl AsyncFnMut() -> P,
) -> Result<T, String> {
    let start = Instant::now();
    loop {
        match probe().await.attempt() {
            Ok(value) => return Ok(value),
            Err(why) if start.elapsed() > timeout => {
                return Err(format!("not reached within {timeout:?}; last: {why}"));
            }
            Err(_) => tokio::time::sleep(interval).await,
        }
    }
}

/// [`try_poll_every`] for code outside an async context (a process's start-up in a constructor
/// that is not async): the thread sleeps between looks.
pub fn try_poll_blocking<T, P: Attempt<T>>(
    timeout: Duration,
    interval: Duration,
    mut probe: impl FnMut() -> P,
) -> Result<T, String> {
    let start = Instant::now();
    loop {
        match probe().attempt() {
            Ok(value) => return Ok(value),
            Err(why) if start.elapsed() > timeout => {
                return Err(format!("not reached within {timeout:?}; last: {why}"));
            }
            Err(_) => std::thread::sleep(interval),
        }
    }
}

/// Waits until `api` has no object named `name`: the one "wait until gone". The error says what
/// still exists (or why it could not be read), for the caller to add its context.
pub async fn gone<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<(), String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    try_poll(timeout, async || match api.get_opt(name).await {
        Ok(None) => Ok(()),
        Ok(Some(_)) => Err(format!("{name} still exists")),
        Err(error) => Err(format!("reading {name}: {error}")),
    })
    .await
}

/// What one look of a [`poll`] found: a value, or why not yet.
pub trait Attempt<T> {
    fn attempt(self) -> Result<T, String>;
}

impl<T> Attempt<T> for Option<T> {
    fn attempt(self) -> Result<T, String> {
        self.ok_or_else(|| "not yet".to_owned())
    }
}

impl<T> Attempt<T> for Result<T, String> {
    fn attempt(self) -> Result<T, String> {
        self
    }
}

/// The path `hack/tools.sh <name>` prints for a tool it builds once and caches (`helm`,
/// `jaeger`, …).
pub fn tool(name: &str) -> PathBuf {
    let out = stdout_of(Command::new(repo_root().join("hack/tools.sh")).arg(name));
    PathBuf::from(String::from_utf8(out).unwrap().trim())
}

/// What `command` prints on stdout; fails the test with its stderr when it fails.
pub fn stdout_of(command: &mut Command) -> Vec<u8> {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The last `lines` lines of `text`, for failure messages.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
