//! The test as gardenlet, for every binary that plays it: the Cluster and Extension it writes,
//! the operations it asks for with gardenlet's annotations, readiness judged with gardenlet's own
//! health function ([`ready_for_gardenlet`]), what the extension delivers to the shoot, and the
//! registration's chart rendered the way gardenlet renders it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use ontap_operator::extension::api::{Cluster, Extension};
use ontap_operator::extension::status::ready_for_gardenlet;
use serde_json::{Value, json};

use super::gardener::Gardener;
use super::tail;

/// The shoot's node network in its `Cluster`: where NFS volumes are exported to.
pub const NODE_NETWORK: &str = "10.250.0.0/16";

pub async fn create_cluster(g: &Gardener, namespace: &str, annotations: Value) {
    create_cluster_of_shoot(g, namespace, annotations, &shoot_uid(namespace)).await;
}

/// The uid of the Shoot whose control plane is in `namespace` on its first seed: one shoot per
/// namespace, as in a landscape.
pub fn shoot_uid(namespace: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    namespace.hash(&mut hasher);
    format!("shoot-{:016x}", hasher.finish())
}

/// gardenlet's `Cluster` for the Shoot `uid`: on a new seed after a migration, the same Shoot in
/// another namespace.
pub async fn create_cluster_of_shoot(g: &Gardener, namespace: &str, annotations: Value, uid: &str) {
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Cluster",
        "metadata": {"name": namespace},
        "spec": {
            "cloudProfile": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"},
            "seed": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"},
            "shoot": {
                "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
                "metadata": {"name": "web-a", "namespace": "garden-test", "uid": uid,
                             "annotations": annotations},
                "spec": {"networking": {"nodes": NODE_NETWORK}},
                "status": {"lastOperation": {"type": "Reconcile", "state": "Succeeded"}}
            }
        }
    }))
    .unwrap();
    Api::<Cluster>::all(g.seed.clone())
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
}

pub fn extensions(g: &Gardener, namespace: &str) -> Api<Extension> {
    Api::namespaced(g.seed.clone(), namespace)
}

pub fn now() -> String {
    Timestamp::now().to_string()
}

/// gardenlet's deploy: the Extension (created or its spec updated), annotated with an operation
/// and a timestamp. Returns the timestamp, which gardenlet's wait compares.
pub async fn request(g: &Gardener, namespace: &str, operation: &str) -> String {
    let timestamp = now();
    extensions(g, namespace)
        .patch(
            "ontap",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "gardener.cloud/operation": operation,
                "gardener.cloud/timestamp": timestamp,
            }}})),
        )
        .await
        .unwrap();
    timestamp
}

/// The providerConfig of a shoot with an NFS SVM of its own on `cluster`, with one management
/// and one data LIF.
pub fn nfs_config(cluster: &str, management: &str, data: &str) -> Value {
    json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": cluster,
        "svm": {
            "managementLif": {"ip": management, "prefixLength": 24},
            "dataLifs": [{"ip": data, "prefixLength": 24}],
            "protocols": ["nfs"]
        }
    })
}

pub async fn create_extension(
    g: &Gardener,
    namespace: &str,
    config: Value,
    operation: &str,
) -> String {
    let timestamp = now();
    let ext: Extension = serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Extension",
        "metadata": {"name": "ontap", "namespace": namespace, "annotations": {
            "gardener.cloud/operation": operation,
            "gardener.cloud/timestamp": timestamp,
        }},
        "spec": {"type": "ontap", "providerConfig": config}
    }))
    .unwrap();
    extensions(g, namespace)
        .create(&PostParams::default(), &ext)
        .await
        .unwrap();
    timestamp
}

/// The credentials Secret in the shoot: username and password.
pub async fn shoot_credentials(g: &Gardener, name: &str) -> Option<(String, String)> {
    let secret = Api::<Secret>::namespaced(g.shoot.clone(), "kube-system")
        .get_opt(name)
        .await
        .unwrap()?;
    let data = secret.data?;
    let text = |k: &str| String::from_utf8(data.get(k)?.0.clone()).ok();
    Some((text("username")?, text("password")?))
}

pub fn backend_configs(g: &Gardener) -> Api<DynamicObject> {
    Api::all_with(g.shoot.clone(), &backend_config_resource())
}

pub fn backend_config_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "trident.netapp.io",
        "v1",
        "TridentBackendConfig",
    ))
}

/// The shoot control plane runs no kube-controller-manager, so no garbage collector finishes the
/// foreground deletions the resource manager asks for: this plays its part for objects without
/// dependents (the GC's own shortcut), for the kinds `trident-init` delivers.
pub fn garbage_collector_stand_in(shoot: kube::Client) -> tokio::task::JoinHandle<()> {
    let kinds = [
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "DaemonSet"),
        ("", "v1", "ServiceAccount"),
        ("networking.k8s.io", "v1", "NetworkPolicy"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        ("trident.netapp.io", "v1", "TridentOrchestrator"),
    ];
    tokio::spawn(async move {
        loop {
            for (group, version, kind) in kinds {
                let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
                let api: Api<DynamicObject> = Api::all_with(shoot.clone(), &resource);
                let Ok(list) = api.list(&Default::default()).await else {
                    continue;
                };
                for obj in list.items {
                    if obj.metadata.deletion_timestamp.is_none()
                        || !obj.finalizers().iter().any(|f| f == "foregroundDeletion")
                    {
                        continue;
                    }
                    let api: Api<DynamicObject> = match obj.metadata.namespace.as_deref() {
                        Some(ns) => Api::namespaced_with(shoot.clone(), ns, &resource),
                        None => Api::all_with(shoot.clone(), &resource),
                    };
                    let _ = api
                        .patch(
                            &obj.name_any(),
                            &PatchParams::default(),
                            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                        )
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// gardenlet's `WaitUntilExtensionObjectReady`: polls until its health function passes and
/// returns how long that took; on timeout fails with the Extension's status, `diagnostics` (the
/// operator's log, wherever it runs) and the resource manager's log.
pub async fn wait_ready_within(
    g: &Gardener,
    namespace: &str,
    timestamp: &str,
    timeout: Duration,
    diagnostics: impl AsyncFn() -> String,
) -> Duration {
    let start = Instant::now();
    let outcome = super::try_poll_every(timeout, Duration::from_millis(200), async || {
        let ext = extensions(g, namespace)
            .get("ontap")
            .await
            .map_err(|e| e.to_string())?;
        ready_for_gardenlet(&ext, Some(timestamp)).map_err(|why| {
            format!(
                "{why}\nstatus: {}",
                serde_json::to_string_pretty(&ext.status).unwrap()
            )
        })
    })
    .await;
    if let Err(why) = outcome {
        panic!(
            "Extension {namespace}/ontap not ready for gardenlet: {why}\n{}\n--- GRM log ---\n{}",
            diagnostics().await,
            tail(&g.grm_log(), 20),
        );
    }
    start.elapsed()
}

/// gardenlet's deletion of the Extension `ontap`: confirmed with the annotation, then deleted.
pub async fn confirm_and_delete(g: &Gardener, namespace: &str) {
    extensions(g, namespace)
        .patch(
            "ontap",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "confirmation.gardener.cloud/deletion": "true"
            }}})),
        )
        .await
        .unwrap();
    extensions(g, namespace)
        .delete("ontap", &DeleteParams::default())
        .await
        .unwrap();
}

/// The registration gardenlet installs from: its ControllerDeployment and ControllerRegistration.
pub const REGISTRATION: &str = "deploy/gardener/controller-registration.yaml";

/// gardenlet's `gardener` values for one seed, in its shapes (see the file's header).
pub const GARDENLET_VALUES: &str = "tests/fixtures/gardenlet-values.yaml";
/// The chart's name in the rawChart, as Gardener names extension charts.
pub const CHART_NAME: &str = "gardener-extension-ontap";

/// The YAML documents of `yaml`, empty ones left out.
pub fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// A fresh folder under the temporary directory, named after `label`.
pub fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ontap-operator-{label}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `command` and gives its standard output as text; panics with its error output.
pub fn run(command: &mut Command) -> String {
    String::from_utf8(super::stdout_of(command)).unwrap()
}

/// The chart archive a ControllerDeployment carries in `helm.rawChart`.
pub fn raw_chart(deployment: &Value) -> Vec<u8> {
    let raw = deployment["helm"]["rawChart"].as_str().unwrap();
    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, raw).unwrap()
}

/// Unpacks a ControllerDeployment's `helm.rawChart` into `dir`, returning the chart folder.
pub fn unpack(deployment: &Value, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let tgz = dir.join("chart.tgz");
    std::fs::write(&tgz, raw_chart(deployment)).unwrap();
    run(Command::new("tar").arg("-xzf").arg(&tgz).arg("-C").arg(dir));
    dir.join(CHART_NAME)
}

/// The helm binary `hack/tools.sh` provides.
pub fn helm() -> PathBuf {
    super::tool("helm")
}

/// The documents of a committed file of the repository.
pub fn committed(path: &str) -> Vec<Value> {
    documents(&std::fs::read_to_string(super::repo_root().join(path)).unwrap())
}

/// The committed ControllerDeployment and ControllerRegistration.
pub fn registration() -> (Value, Value) {
    let docs = committed(REGISTRATION);
    let find = |kind: &str| docs.iter().find(|d| d["kind"] == kind).unwrap().clone();
    (find("ControllerDeployment"), find("ControllerRegistration"))
}

/// gardener's `utils.MergeMaps(a, b)`, with which gardenlet lays its values over the
/// ControllerDeployment's: `b` wins, maps present in both are merged, anything else (lists too)
/// is replaced.
pub fn merge_maps(a: &Value, b: &Value) -> Value {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return b.clone();
    };
    let mut out = a.clone();
    for (key, value) in b {
        let merged = match a.get(key) {
            Some(existing @ Value::Object(_)) if value.is_object() => merge_maps(existing, value),
            _ => value.clone(),
        };
        out.insert(key.clone(), merged);
    }
    Value::Object(out)
}

/// The values gardenlet renders the chart with: the ControllerDeployment's `helm.values` (with
/// `extra` in them, as `{{ .resources… }}` substitution leaves them) under its own.
pub fn gardenlet_values(deployment: &Value, extra: Value) -> Value {
    let gardenlet: Value = serde_yaml::from_str(
        &std::fs::read_to_string(super::repo_root().join(GARDENLET_VALUES)).unwrap(),
    )
    .unwrap();
    merge_maps(
        &merge_maps(&deployment["helm"]["values"], &extra),
        &gardenlet,
    )
}

/// `helm template` of the packaged chart as gardenlet renders it: the release named after the
/// ControllerRegistration, in the installation's namespace, with `values`, the chart's
/// values.schema.json checked.
pub fn render_as_gardenlet(namespace: &str, values: &Value) -> Result<String, String> {
    let (deployment, registration) = registration();
    let dir = temp_dir("seed-chart");
    let chart = unpack(&deployment, &dir);
    let values_file = dir.join("values.json");
    std::fs::write(&values_file, values.to_string()).unwrap();
    let out = Command::new(helm())
        .arg("template")
        .arg(registration["metadata"]["name"].as_str().unwrap())
        .args(["--namespace", namespace, "-f"])
        .arg(&values_file)
        .arg(&chart)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
