//! The Extension controller end to end: the real operator binary (running as the ServiceAccount
//! of `deploy/rbac.yaml` plus the chart's generated extension rules) against mock ONTAP, Gardener's
//! own CRDs in the seed, and the real gardener-resource-manager delivering into a second control
//! plane playing the shoot. The test plays gardenlet: it writes the Cluster and the Extension and
//! asks for operations with the annotations gardenlet writes, and judges readiness with
//! gardenlet's own health function ([`ready_for_gardenlet`]).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::gardener::Gardener;
use crate::support::mock::fast_mock;
use crate::support::operator::{OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, OperatorProcess};
use crate::support::repo_root;
use crate::support::svm::SvmWorld;
use crate::support::tail;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use ontap_operator::api::{DeletionPolicy, StorageVirtualMachine, SvmMode};
use ontap_operator::extension::api::{
    Cluster, ErrorCode, Extension, LastOperationState, LastOperationType,
};
use ontap_operator::extension::status::ready_for_gardenlet;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);

/// Binds the operator's ServiceAccount to the chart's generated extension rules.
async fn bind_extension_rules(client: &kube::Client) {
    let text = std::fs::read_to_string(
        repo_root().join("deploy/chart/files/clusterrole-rules-extension.yaml"),
    )
    .unwrap();
    let rules: Vec<PolicyRule> = serde_yaml::from_str(&text).unwrap();
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "ontap-operator-extension"}, "rules": rules
    }))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "ontap-operator-extension"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ontap-operator-extension"},
        "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_SERVICE_ACCOUNT, "namespace": OPERATOR_NAMESPACE}]
    }))
    .unwrap();
    let params = PatchParams::apply("gardener-extension-test").force();
    Api::<ClusterRole>::all(client.clone())
        .patch("ontap-operator-extension", &params, &Patch::Apply(&role))
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch("ontap-operator-extension", &params, &Patch::Apply(&binding))
        .await
        .unwrap();
}

fn operator_args(namespace: &str) -> Vec<String> {
    vec![
        format!("--namespace={namespace}"),
        "--extension-type=ontap".into(),
        // The operator watches one namespace here: the project's SVM object must live in it.
        format!("--extension-project-namespace={namespace}"),
        format!("--heartbeat-namespace={OPERATOR_NAMESPACE}"),
        "--heartbeat-renew-interval=5s".into(),
    ]
}

/// The world of one shoot: Gardener around it, an ONTAP, and the operator watching the shoot's
/// control-plane namespace.
async fn world(g: &Gardener) -> SvmWorld {
    let args = operator_args(&g.namespace);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = SvmWorld::with(fast_mock(), &args).await;
    bind_extension_rules(&w.env.client).await;
    w
}

/// Restarts the operator for another namespace: a migration moves the shoot to a new seed, with
/// an extension of its own.
fn respawn_operator(w: &mut SvmWorld, namespace: &str) {
    w.operator.kill();
    w.operator = seed_operator(w, namespace);
}

/// An operator for `namespace` beside whatever else runs: a seed's extension, scoped to its own
/// namespace, on `w`'s ONTAP.
fn seed_operator(w: &SvmWorld, namespace: &str) -> OperatorProcess {
    let kubeconfig = crate::support::control_plane()
        .dir
        .as_ref()
        .unwrap()
        .join("operator.kubeconfig");
    let mut args = operator_args(namespace);
    args.extend([
        format!("--ontap-cluster-selector=ontap-test={}", w.env.namespace),
        format!("--credentials-namespace={}", w.env.namespace),
        "--ontap-request-timeout=2s".into(),
        "--backoff-max=5s".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    OperatorProcess::spawn(&kubeconfig, &args, &[])
}

async fn create_cluster(g: &Gardener, namespace: &str, annotations: Value) {
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Cluster",
        "metadata": {"name": namespace},
        "spec": {
            "cloudProfile": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"},
            "seed": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"},
            "shoot": {
                "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
                "metadata": {"name": "web-a", "namespace": "garden-test", "annotations": annotations},
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

fn extensions(g: &Gardener, namespace: &str) -> Api<Extension> {
    Api::namespaced(g.seed.clone(), namespace)
}

fn now() -> String {
    Timestamp::now().to_string()
}

/// gardenlet's deploy: the Extension (created or its spec updated), annotated with an operation
/// and a timestamp. Returns the timestamp, which gardenlet's wait compares.
async fn request(g: &Gardener, namespace: &str, operation: &str) -> String {
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

async fn create_extension(g: &Gardener, namespace: &str, config: Value, operation: &str) -> String {
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

/// gardenlet's `WaitUntilExtensionObjectReady`: polls until its health function passes.
async fn wait_ready(g: &Gardener, w: &SvmWorld, namespace: &str, timestamp: &str) -> Duration {
    let start = Instant::now();
    loop {
        let ext = extensions(g, namespace).get("ontap").await.unwrap();
        match ready_for_gardenlet(&ext, Some(timestamp)) {
            Ok(()) => return start.elapsed(),
            Err(why) if start.elapsed() > TIMEOUT => panic!(
                "Extension {namespace}/ontap not ready for gardenlet: {why}\nstatus: {}\n--- operator log ---\n{}\n--- GRM log ---\n{}",
                serde_json::to_string_pretty(&ext.status).unwrap(),
                tail(&w.operator.logs(), 80),
                tail(&g.grm_log(), 20),
            ),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn wait_for(
    w: &SvmWorld,
    what: &str,
    mut check: impl AsyncFnMut() -> Option<()>,
) -> Duration {
    let start = Instant::now();
    loop {
        if check().await.is_some() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "{what}: not within {TIMEOUT:?}\n--- operator log ---\n{}",
            tail(&w.operator.logs(), 80)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn svms_in_ontap(w: &SvmWorld) -> Vec<Value> {
    w.state()["svms"].as_array().cloned().unwrap_or_default()
}

/// The credentials Secret in the shoot: username and password.
async fn shoot_credentials(g: &Gardener, name: &str) -> Option<(String, String)> {
    let secret = Api::<Secret>::namespaced(g.shoot.clone(), "kube-system")
        .get_opt(name)
        .await
        .unwrap()?;
    let data = secret.data?;
    let text = |k: &str| String::from_utf8(data.get(k)?.0.clone()).ok();
    Some((text("username")?, text("password")?))
}

fn backend_configs(g: &Gardener) -> Api<DynamicObject> {
    Api::all_with(
        g.shoot.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "trident.netapp.io",
            "v1",
            "TridentBackendConfig",
        )),
    )
}

/// A second resource manager for another namespace of the same seed, writing to the same shoot.
struct ExtraGrm(PathBuf);

impl ExtraGrm {
    fn start(g: &Gardener, namespace: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("grm-{namespace}"));
        let status = Command::new(repo_root().join("hack/gardener-resource-manager.sh"))
            .args(["up", "--dir"])
            .arg(&dir)
            .arg("--seed-kubeconfig")
            .arg(&g.seed_kubeconfig)
            .arg("--shoot-kubeconfig")
            .arg(&g.shoot_kubeconfig)
            .args(["--namespace", namespace])
            .args(["--owner-pid", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        Self(dir)
    }
}

impl Drop for ExtraGrm {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("hack/gardener-resource-manager.sh"))
            .args(["down", "--dir"])
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The shoot control plane runs no kube-controller-manager, so no garbage collector finishes the
/// foreground deletions the resource manager asks for: this plays its part for objects without
/// dependents (the GC's own shortcut), for the kinds `trident-init` delivers.
fn garbage_collector_stand_in(shoot: kube::Client) -> tokio::task::JoinHandle<()> {
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

async fn set_admin_password(w: &SvmWorld, password: &str) {
    w.secrets()
        .patch(
            "ontap-admin",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": password}})),
        )
        .await
        .unwrap();
}

/// create → Succeeded; reconcile again; broken admin credentials → ERR_INFRA_UNAUTHENTICATED and
/// back; a deleted seed Secret repaired and re-delivered; migrate → restore on another namespace
/// with one SVM throughout and the same password; delete → nothing left in ONTAP or the shoot.
#[tokio::test]
async fn extension_lifecycle_on_gardener_with_the_real_resource_manager() {
    let g = Gardener::start().await;
    let mut w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {
            "managementLif": {"ip": "192.0.2.20", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.21", "prefixLength": 24}],
            "protocols": ["nfs"]
        }
    });

    // Create.
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    let created = wait_ready(&g, &w, &ns, &ts).await;
    let ext = extensions(&g, &ns).get("ontap").await.unwrap();
    assert!(
        ext.finalizers()
            .contains(&"extensions.gardener.cloud/ontap".to_string())
    );
    let status = ext.status.clone().unwrap();
    assert_eq!(
        status.last_operation.as_ref().unwrap().type_,
        LastOperationType::Create
    );
    assert_eq!(svms_in_ontap(&w).len(), 1);
    let svm_name = svms_in_ontap(&w)[0]["name"].as_str().unwrap().to_string();
    let svm_uuid = svms_in_ontap(&w)[0]["uuid"].as_str().unwrap().to_string();
    let secret_name = "ontap-svm-credentials".to_string();
    let (user, password) = shoot_credentials(&g, &secret_name).await.unwrap();
    assert!(
        w.authenticates(&user, &password, &svm_name).await,
        "the shoot's credentials work"
    );
    assert!(
        !backend_configs(&g)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        !Api::<StorageClass>::all(g.shoot.clone())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    println!("create → Succeeded: {created:?}");

    // Reconcile on request: the annotation goes, Succeeded again.
    let ts = request(&g, &ns, "reconcile").await;
    let reconciled = wait_ready(&g, &w, &ns, &ts).await;
    println!("reconcile → Succeeded: {reconciled:?}");

    // Broken administrator credentials: Error with ERR_INFRA_UNAUTHENTICATED; fixed: Succeeded.
    let admin = w.mock.server.admin().clone();
    set_admin_password(&w, "wrong-password").await;
    // The OntapCluster notices first; meanwhile the Shoot learns it from the condition.
    wait_for(
        &w,
        "SystemComponentsHealthy False with the code",
        async || {
            let ext = extensions(&g, &ns).get("ontap").await.unwrap();
            let status = ext.status?;
            let condition = status
                .conditions
                .iter()
                .find(|c| c.type_ == "SystemComponentsHealthy")?;
            (condition.status == "False"
                && condition.codes.contains(&ErrorCode::InfraUnauthenticated))
            .then_some(())
        },
    )
    .await;
    let ts = request(&g, &ns, "reconcile").await;
    let broke = wait_for(&w, "Error with ERR_INFRA_UNAUTHENTICATED", async || {
        let ext = extensions(&g, &ns).get("ontap").await.unwrap();
        let status = ext.status?;
        let error = status.last_error?;
        (status.last_operation?.state == LastOperationState::Error
            && error.codes.contains(&ErrorCode::InfraUnauthenticated))
        .then_some(())
    })
    .await;
    println!("broken credentials → ERR_INFRA_UNAUTHENTICATED: {broke:?}");
    set_admin_password(&w, &admin.password).await;
    let fixed = wait_ready(&g, &w, &ns, &ts).await;
    println!("fixed credentials → Succeeded: {fixed:?}");

    // The seed Secret deleted in the seed: repaired, and the shoot's copy follows.
    let seed_secrets: Api<Secret> = Api::namespaced(g.seed.clone(), &ns);
    seed_secrets
        .delete(&secret_name, &DeleteParams::default())
        .await
        .unwrap();
    let repaired = wait_for(
        &w,
        "the shoot's credentials follow the repaired seed Secret",
        async || {
            let (u, p) = shoot_credentials(&g, &secret_name).await?;
            (p != password && w.authenticates(&u, &p, &svm_name).await).then_some(())
        },
    )
    .await;
    println!("seed Secret deleted → shoot updated: {repaired:?}");
    let (_, password) = shoot_credentials(&g, &secret_name).await.unwrap();

    // Migrate: the seed side goes, ONTAP and the shoot stay.
    let ts = request(&g, &ns, "migrate").await;
    let _ = ts;
    let migrated = wait_for(&w, "Migrate Succeeded", async || {
        let ext = extensions(&g, &ns).get("ontap").await.unwrap();
        let last = ext.status.as_ref()?.last_operation.clone()?;
        (last.type_ == LastOperationType::Migrate
            && last.state == LastOperationState::Succeeded
            && ext.finalizers().is_empty()
            && !ext.annotations().contains_key("gardener.cloud/operation"))
        .then_some(())
    })
    .await;
    println!("migrate → Succeeded: {migrated:?}");
    let old = extensions(&g, &ns).get("ontap").await.unwrap();
    let old_status = old.status.clone().unwrap();
    assert!(old_status.state.is_some(), "status.state saved");
    assert!(
        g.managed_resources()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(svms_in_ontap(&w).len(), 1, "ONTAP untouched by migrate");
    assert_eq!(
        shoot_credentials(&g, &secret_name).await.unwrap().1,
        password,
        "shoot kept"
    );

    // Restore on a "new seed": another namespace, another operator, gardenlet's restore dance.
    let ns2 = format!("{ns}x");
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": {"name": ns2, "labels": {"gardener.cloud/role": "shoot"}}
    }))
    .unwrap();
    Api::<Namespace>::all(g.seed.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    create_cluster(&g, &ns2, json!({})).await;
    for reference in &old_status.resources {
        let mut secret = seed_secrets
            .get(&reference.resource_ref.name)
            .await
            .unwrap();
        secret.metadata = kube::api::ObjectMeta {
            name: secret.metadata.name,
            ..Default::default()
        };
        Api::<Secret>::namespaced(g.seed.clone(), &ns2)
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let _grm = ExtraGrm::start(&g, &ns2);
    respawn_operator(&mut w, &ns2);
    let config = old.spec.provider_config.clone().unwrap();
    create_extension(&g, &ns2, config, "wait-for-state").await;
    extensions(&g, &ns2)
        .patch_status(
            "ontap",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "state": old_status.state, "resources": old_status.resources
            }})),
        )
        .await
        .unwrap();
    let ts = request(&g, &ns2, "restore").await;
    let restored = wait_ready(&g, &w, &ns2, &ts).await;
    println!("restore → Succeeded: {restored:?}");
    let ext = extensions(&g, &ns2).get("ontap").await.unwrap();
    assert_eq!(
        ext.status.unwrap().last_operation.unwrap().type_,
        LastOperationType::Restore
    );
    let after = svms_in_ontap(&w);
    assert_eq!(after.len(), 1, "no second SVM");
    assert_eq!(after[0]["uuid"], svm_uuid.as_str());
    let restored_secret = secret_name.clone();
    let (u, p) = shoot_credentials(&g, &restored_secret).await.unwrap();
    assert_eq!(p, password, "the working password was not rotated");
    assert!(w.authenticates(&u, &p, &svm_name).await);
    // gardenlet removes the migrated Extension from the old seed.
    extensions(&g, &ns)
        .delete("ontap", &DeleteParams::default())
        .await
        .unwrap();

    // Delete.
    let gc = garbage_collector_stand_in(g.shoot.clone());
    request(&g, &ns2, "reconcile").await;
    let deleted = delete_as_gardenlet(&g, &w, &ns2).await;
    println!("delete → gone: {deleted:?}");
    gc.abort();
    assert!(
        svms_in_ontap(&w).is_empty(),
        "nothing left in ONTAP: {:?}",
        w.state()
    );
    assert!(
        w.state()["accounts"]
            .as_array()
            .is_none_or(|a| a.iter().all(|x| x["name"] != u.as_str()))
    );
    assert!(
        shoot_credentials(&g, &restored_secret).await.is_none(),
        "credentials gone from the shoot"
    );
    assert!(
        backend_configs(&g)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// A shoot manifest written for metal-stack's extension, its providerConfig used verbatim: the
/// SVM and account get metal-stack's names and the shoot metal-stack's StorageClasses.
#[tokio::test]
async fn metal_stack_trident_config_works_verbatim() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";
    create_cluster(&g, &ns, json!({"cluster.metal-stack.io/project": project})).await;
    let shoot_manifest: Value = serde_yaml::from_str(
        r#"
apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: web-a
  annotations:
    cluster.metal-stack.io/project: 0b1f9c3e-aaaa-bbbb-cccc-123456789abc
spec:
  extensions:
    - type: ontap
      providerConfig:
        apiVersion: ontap.metal.extensions.gardener.cloud/v1alpha1
        kind: TridentConfig
        svmIpaddresses:
          managementLif: 192.0.2.30
          dataLifs:
            - 192.0.2.31
"#,
    )
    .unwrap();
    let config = shoot_manifest["spec"]["extensions"][0]["providerConfig"].clone();
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    let took = wait_ready(&g, &w, &ns, &ts).await;
    println!("metal-stack TridentConfig → Succeeded: {took:?}");
    let svm = "p0b1f9c3eaaaabbbbcccc123456789abc";
    assert_eq!(svms_in_ontap(&w)[0]["name"], svm);
    let shoot = ns.rsplit("--").next().unwrap();
    let (user, password) = shoot_credentials(&g, &format!("{svm}-test--{shoot}-credentials"))
        .await
        .unwrap();
    assert_eq!(
        Some(user.clone()),
        ontap_operator::extension::naming::account_name(&ns)
    );
    assert!(w.authenticates(&user, &password, svm).await);
    // The project's SVM is provisioned by an object of its own, which outlives the shoot and
    // shares the SVM with shoot namespaces; the shoot's object only makes its account on it.
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    let project_object = objects
        .get(&format!("ontap-project-{project}"))
        .await
        .unwrap();
    assert_eq!(project_object.spec.mode, SvmMode::Owned);
    assert_eq!(project_object.spec.deletion_policy, DeletionPolicy::Retain);
    assert!(project_object.owner_references().is_empty());
    assert!(project_object.spec.share_with.is_some());
    let shoot_object = objects.get("ontap").await.unwrap();
    assert_eq!(shoot_object.spec.mode, SvmMode::AccountOnly);
    assert_eq!(shoot_object.spec.svm_name.as_deref(), Some(svm));
    // A write that names no field manager is recorded under the operator's User-Agent.
    let managers: Vec<&str> = shoot_object
        .managed_fields()
        .iter()
        .filter_map(|f| f.manager.as_deref())
        .collect();
    assert!(
        managers.contains(&"ontap-operator"),
        "the operator's create names it: {managers:?}"
    );
    let classes = Api::<StorageClass>::all(g.shoot.clone());
    assert!(classes.get_opt("ontap-gold").await.unwrap().is_some());
    assert!(classes.get_opt("ontap-encrypted").await.unwrap().is_some());
}

/// The SVM named `name` in the mock, as ONTAP shows it.
fn ontap_svm(w: &SvmWorld, name: &str) -> Option<Value> {
    svms_in_ontap(w).into_iter().find(|s| s["name"] == name)
}

/// uuids of the interfaces ONTAP holds on the SVM with `uuid`, sorted.
fn interfaces_of(w: &SvmWorld, uuid: &Value) -> Vec<String> {
    let mut found: Vec<String> = w.state()["interfaces"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|i| i["svm"]["uuid"] == *uuid)
        .filter_map(|i| i["uuid"].as_str().map(str::to_owned))
        .collect();
    found.sort();
    found
}

/// What metal-stack's extension leaves in ONTAP for a project: the SVM `p<project>` (NVMe, no
/// comment), its management and data LIFs (metal-stack's names and policies; /24, or /32 VIP
/// LIFs with `vip`, as on a cluster with a BGP peer group) and, if `account` is given, that
/// shoot's account with `password`. Returns the SVM's uuid.
async fn metal_stack_svm(
    w: &SvmWorld,
    svm: &str,
    lifs: [&str; 2],
    account: Option<(&str, &str)>,
    vip: bool,
) -> Value {
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/svm/svms",
            json!({"name": svm, "nvme": {"enabled": true}}),
        )
        .await;
    wait_for(w, "metal-stack's SVM runs", async || {
        ontap_svm(w, svm)
            .filter(|s| s["state"] == "running")
            .map(|_| ())
    })
    .await;
    let [management, data] = lifs;
    for (name, ip, policy, node) in [
        ("managementlif", management, "default-management", "node-01"),
        ("datalif1", data, "default-data-nvme-tcp", "node-02"),
    ] {
        let mut lif = json!({"name": name, "svm": {"name": svm},
                             "ip": {"address": ip, "netmask": "24"},
                             "service_policy": {"name": policy},
                             "location": {"home_node": {"name": node}}});
        if vip {
            lif["ip"]["netmask"] = json!("32");
            lif["vip"] = json!(true);
        }
        w.mock
            .as_admin(reqwest::Method::POST, "/api/network/ip/interfaces", lif)
            .await;
    }
    if let Some((account, password)) = account {
        w.mock
            .as_admin(
                reqwest::Method::POST,
                "/api/security/accounts",
                json!({"name": account, "owner": {"name": svm}, "role": {"name": "vsadmin"},
                       "applications": [{"application": "http", "authentication_methods": ["password"]}],
                       "password": password}),
            )
            .await;
    }
    ontap_svm(w, svm).unwrap()["uuid"].clone()
}

/// A shoot switching from metal-stack's extension, without re-provisioning: ONTAP holds the
/// project's SVM (no mark of ours), its LIFs (VIP LIFs with `vip`) and the shoot's account; the
/// seed holds metal-stack's credentials Secret in `kube-system`. The shoot manifest, unchanged,
/// reaches `Succeeded` with the same SVM (same uuid, now marked as the project object's) and its
/// LIFs untouched. The account's password is kept, in ONTAP and in the shoot — unless
/// metal-stack's Secret no longer holds it (`stale_secret`): then it is replaced the usual way,
/// Secret first, and the shoot gets the new one. Returns the project object.
async fn switch_from_metal_stack(
    g: &Gardener,
    w: &SvmWorld,
    project: &str,
    lifs: [&str; 2],
    vip: bool,
    stale_secret: bool,
) -> StorageVirtualMachine {
    use ontap_operator::extension::naming;
    let ns = g.namespace.clone();
    let svm = naming::project_svm_name(project);
    let account = naming::account_name(&ns).unwrap();
    // metal-stack's passwords: 8 characters, letters and digits.
    let password = "mEtal4s7";
    let in_secret = if stale_secret { "oLdpass9" } else { password };
    let uuid = metal_stack_svm(w, &svm, lifs, Some((&account, password)), vip).await;
    let interfaces = interfaces_of(w, &uuid);
    assert_eq!(interfaces.len(), 2);
    let secret = naming::credentials_secret_name(&svm, &ns).unwrap();
    let metal_stack_secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": secret, "namespace": "kube-system", "labels": {
            "app.kubernetes.io/part-of": "gardener-extension-ontap",
            "app.kubernetes.io/managed-by": "gardener",
            "ontap.metal-stack.io/project-id": svm,
        }},
        "type": "Opaque",
        "stringData": {"username": account, "password": in_secret},
    }))
    .unwrap();
    Api::<Secret>::namespaced(g.seed.clone(), "kube-system")
        .create(&PostParams::default(), &metal_stack_secret)
        .await
        .unwrap();

    create_cluster(g, &ns, json!({"cluster.metal-stack.io/project": project})).await;
    let [management, data] = lifs;
    let config = json!({
        "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
        "svmIpaddresses": {"managementLif": management, "dataLifs": [data]},
    });
    let ts = create_extension(g, &ns, config, "reconcile").await;
    let took = wait_ready(g, w, &ns, &ts).await;
    println!("switch from metal-stack (VIP LIFs: {vip}) → Succeeded: {took:?}");

    let svms = svms_in_ontap(w);
    assert_eq!(svms.len(), 1, "one SVM in ONTAP: {svms:#?}");
    assert_eq!(svms[0]["uuid"], uuid, "the same SVM, not a new one");
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    let name = format!("ontap-project-{project}");
    let project_object = objects.get(&name).await.unwrap();
    let marker = format!("ontap-operator:uid={}", project_object.uid().unwrap());
    assert!(
        svms[0]["comment"]
            .as_str()
            .is_some_and(|c| c.starts_with(&marker)),
        "marked as the project object's: {}",
        svms[0]["comment"]
    );
    // The project object is Ready too: it made its own account on the adopted SVM.
    poll_svm_ready(w, &objects, &name).await;
    assert_eq!(
        interfaces_of(w, &uuid),
        interfaces,
        "metal-stack's LIFs are kept"
    );
    assert_eq!(w.mock.sent("DELETE", "/api/network/ip/interfaces").await, 0);
    let (user, delivered) = shoot_credentials(g, &secret).await.unwrap();
    assert_eq!(user, account);
    if stale_secret {
        assert!(
            delivered != password && delivered != in_secret,
            "a new password was set"
        );
        assert!(
            w.authenticates(&account, &delivered, &svm).await,
            "the shoot's new password works"
        );
        assert!(
            !w.authenticates(&account, password, &svm).await,
            "the password nobody could name any more is gone"
        );
        let left = Api::<Secret>::namespaced(g.seed.clone(), "kube-system")
            .get(&secret)
            .await
            .unwrap();
        assert_eq!(
            left.data.unwrap()["password"].0,
            in_secret.as_bytes(),
            "metal-stack's Secret is left as it was"
        );
    } else {
        assert!(
            w.authenticates(&account, password, &svm).await,
            "the password metal-stack set still works: it was not rotated"
        );
        assert!(delivered == password, "the shoot got the same password");
    }
    project_object
}

/// An installation switching from metal-stack's extension keeps the SVM, its LIFs and the
/// password ([`switch_from_metal_stack`]). A tenant's own object asking for an unmarked SVM the
/// same way is refused with `AdoptionNotAllowed`.
#[tokio::test]
async fn switching_from_metal_stack_keeps_the_svm_its_lifs_and_the_password() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "5d7e9a1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b";
    switch_from_metal_stack(&g, &w, project, ["192.0.2.50", "192.0.2.51"], false, false).await;

    // A tenant asking the same for an unmarked SVM of its own choosing: refused, ONTAP untouched.
    let tenant = SvmWorld::with(
        fast_mock(),
        &[
            "--extension-type=ontap",
            &format!("--extension-project-namespace={ns}"),
            &format!("--heartbeat-namespace={OPERATOR_NAMESPACE}"),
        ],
    )
    .await;
    let foreign = "p00000000000000000000000000000001";
    let foreign_uuid =
        metal_stack_svm(&tenant, foreign, ["192.0.2.60", "192.0.2.61"], None, false).await;
    let mut grab = tenant.svm("grab", 0).json();
    grab["spec"]["svmName"] = json!(foreign);
    grab["metadata"]["annotations"] =
        json!({ontap_operator::api::ADOPT_SVM_UUID_ANNOTATION: foreign_uuid});
    tenant
        .svms()
        .create(
            &PostParams::default(),
            &serde_json::from_value(grab).unwrap(),
        )
        .await
        .unwrap();
    tenant
        .wait_condition("grab", "SVMReady", "False", TIMEOUT)
        .await;
    let status = tenant.svms().get("grab").await.unwrap().status.unwrap();
    let refused = status
        .conditions
        .iter()
        .find(|c| c.type_ == "SVMReady")
        .unwrap();
    assert_eq!(refused.reason, "AdoptionNotAllowed", "{refused:?}");
    assert!(refused.message.contains(foreign), "{}", refused.message);
    assert_eq!(status.phase, Some(ontap_operator::api::SvmPhase::Failed));
    let untouched = ontap_svm(&tenant, foreign).unwrap();
    assert_eq!(untouched["comment"].as_str().unwrap_or_default(), "");
    assert_eq!(interfaces_of(&tenant, &foreign_uuid).len(), 2);
}

/// On a cluster routing with BGP metal-stack's extension made /32 VIP LIFs; the project object
/// asks for them in that form, so the switch keeps them (replacing them would cut every shoot of
/// the project off its volumes).
#[tokio::test]
async fn switching_from_metal_stack_on_a_bgp_cluster_keeps_its_vip_lifs() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/network/ip/bgp/peer-groups",
            json!({"name": "tor1", "ipspace": {"name": "Default"},
                   "local": {"interface": {"name": "bgp1"}, "ip": {"address": "198.51.100.10", "netmask": "24"},
                             "port": {"name": "e0c", "node": {"name": "node-01"}}},
                   "peer": {"address": "198.51.100.1", "asn": 65000}}),
        )
        .await;
    let project = "7a1c3e5f-0b2d-4f6a-8c9e-1d3f5a7b9c0e";
    let object =
        switch_from_metal_stack(&g, &w, project, ["192.0.2.80", "192.0.2.81"], true, false).await;
    let spec = object.spec;
    for lif in std::iter::once(&spec.management_lif).chain(&spec.data_lifs) {
        assert!(lif.vip && lif.prefix_length == 32, "{lif:?}");
    }
}

/// metal-stack's Secret holds a password ONTAP no longer takes (it drifted, or was rotated by
/// hand): nothing is imported, and the account gets a new password Secret-first, delivered to the
/// shoot; the old one stops working.
#[tokio::test]
async fn switching_from_metal_stack_with_a_stale_secret_rotates_the_password() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let project = "3e5a7c9d-1f2b-4c6d-8e0f-2a4b6c8d0e1f";
    switch_from_metal_stack(&g, &w, project, ["192.0.2.90", "192.0.2.91"], false, true).await;
}

/// Waits until the StorageVirtualMachine `name` is Ready.
async fn poll_svm_ready(w: &SvmWorld, objects: &Api<StorageVirtualMachine>, name: &str) {
    wait_for(w, &format!("{name} Ready"), async || {
        let svm = objects.get(name).await.ok()?;
        svm.status?
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
            .then_some(())
    })
    .await;
}

/// gardenlet's deletion: confirms it with the annotation, deletes the Extension and waits until
/// it is gone. Returns how long that took.
async fn delete_as_gardenlet(g: &Gardener, w: &SvmWorld, ns: &str) -> Duration {
    extensions(g, ns)
        .patch(
            "ontap",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "confirmation.gardener.cloud/deletion": "true"
            }}})),
        )
        .await
        .unwrap();
    extensions(g, ns)
        .delete("ontap", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(w, "Extension gone", async || {
        extensions(g, ns)
            .get_opt("ontap")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await
}

/// The Extension's `lastError` of the current operation carries `code`.
async fn wait_error_code(g: &Gardener, w: &SvmWorld, ns: &str, code: ErrorCode) -> Duration {
    wait_for(w, &format!("Error with {code:?}"), async || {
        let ext = extensions(g, ns).get("ontap").await.unwrap();
        let status = ext.status?;
        let error = status.last_error?;
        (status.last_operation?.state == LastOperationState::Error && error.codes.contains(&code))
            .then_some(())
    })
    .await
}

/// The Events of `type_` about the Extension `ontap` of `ns`, as (reason, times published),
/// sorted: one per Event object; kube's recorder folds a repeat into the Event's series.
async fn extension_events(g: &Gardener, ns: &str, type_: &str) -> Vec<(String, i32)> {
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(g.seed.clone(), ns)
        .list(&Default::default())
        .await
        .unwrap();
    let mut found: Vec<(String, i32)> = events
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some("Extension"))
                && e.type_.as_deref() == Some(type_)
        })
        .map(|e| {
            let times = e.series.map_or(1, |series| series.count);
            (e.reason.unwrap_or_default(), times)
        })
        .collect();
    found.sort();
    found
}

async fn set_endpoint(w: &SvmWorld, endpoint: &str) {
    w.clusters()
        .patch(
            &w.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"endpoint": endpoint}})),
        )
        .await
        .unwrap();
}

/// What gardenlet reads when ONTAP fails: an unreachable cluster is
/// ERR_RETRYABLE_INFRA_DEPENDENCIES, an SVM ONTAP has no space for is
/// ERR_INFRA_RESOURCES_DEPLETED, both back to Succeeded once fixed; and a shoot marked for
/// force-deletion lets its Extension go while ONTAP cannot be reached, orphaning the SVM.
#[tokio::test]
async fn ontap_failures_carry_gardeners_codes_and_force_deletion_lets_go() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {
            "managementLif": {"ip": "192.0.2.40", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.41", "prefixLength": 24}],
            "protocols": ["nfs"]
        }
    });
    let reachable = w.mock.base_url();

    // Unreachable from the start: nothing can be provisioned, and gardenlet may retry.
    set_endpoint(&w, "https://127.0.0.1:1").await;
    create_extension(&g, &ns, config, "reconcile").await;
    let unreachable = wait_error_code(&g, &w, &ns, ErrorCode::RetryableInfraDependencies).await;
    println!("unreachable → ERR_RETRYABLE_INFRA_DEPENDENCIES: {unreachable:?}");
    assert!(svms_in_ontap(&w).is_empty());
    // The retries (backoff 1, 2, 4 s) fail the same way: one Warning per reason, published
    // once (a repeat would show as a series), as the engine does for every object. (Before the
    // OntapCluster reports the endpoint unreachable, the SVM's own failure may come first.)
    tokio::time::sleep(Duration::from_secs(8)).await;
    let warnings = extension_events(&g, &ns, "Warning").await;
    assert!(
        warnings.contains(&("OntapUnreachable".to_string(), 1))
            && warnings.iter().all(|(_, times)| *times == 1),
        "one Warning per reason, sent once, for the failing passes: {warnings:?}"
    );

    // Reachable, but the SVM's creation fails for space.
    set_endpoint(&w, &reachable).await;
    w.mock
        .state()
        .add_fault(
            serde_json::from_value(json!({
                "method": "POST", "path": "/api/svm/svms",
                "action": {"type": "job_failure", "code": "13434885",
                    "message": "Failed to create the root volume: insufficient space in aggregate \"aggr1\""}
            }))
            .unwrap(),
        )
        .unwrap();
    request(&g, &ns, "reconcile").await;
    let depleted = wait_error_code(&g, &w, &ns, ErrorCode::InfraResourcesDepleted).await;
    println!("no space → ERR_INFRA_RESOURCES_DEPLETED: {depleted:?}");

    w.mock.state().clear_faults();
    let ts = request(&g, &ns, "reconcile").await;
    let recovered = wait_ready(&g, &w, &ns, &ts).await;
    println!("fixed → Succeeded: {recovered:?}");
    assert_eq!(svms_in_ontap(&w).len(), 1);
    let warnings = extension_events(&g, &ns, "Warning").await;
    assert!(
        warnings.contains(&("ResourcesDepleted".to_string(), 1)),
        "a new reason, a new Warning: {warnings:?}"
    );
    wait_for(&w, "a Normal Event: the Extension recovered", async || {
        extension_events(&g, &ns, "Normal")
            .await
            .iter()
            .any(|(reason, _)| reason == "Recovered")
            .then_some(())
    })
    .await;

    // Force-deletion while ONTAP is unreachable: the Extension and its SVM object go without
    // waiting for ONTAP; what ONTAP holds is orphaned, as the annotation asks.
    set_endpoint(&w, "https://127.0.0.1:1").await;
    Api::<Cluster>::all(g.seed.clone())
        .patch(
            &ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"shoot": {"metadata": {"annotations": {
                "confirmation.gardener.cloud/force-deletion": "true"
            }}}}})),
        )
        .await
        .unwrap();
    let forced = delete_as_gardenlet(&g, &w, &ns).await;
    println!("force-deleted with ONTAP unreachable: {forced:?}");
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    wait_for(&w, "the SVM object gone", async || {
        objects
            .get_opt("ontap")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert_eq!(svms_in_ontap(&w).len(), 1, "orphaned, not deleted");
}

/// StorageVirtualMachines of `namespace` that report a failure: phase `Failed`, or a condition
/// whose reason says the SVM is someone else's.
async fn failing_svms(seed: &kube::Client, namespace: &str) -> Vec<String> {
    const REFUSALS: [&str; 4] = [
        "SVMNameInUse",
        "SVMNotShared",
        "SVMOwnedByAnother",
        "AdoptionNotAllowed",
    ];
    Api::<StorageVirtualMachine>::namespaced(seed.clone(), namespace)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|svm| {
            let status = svm.status.clone().unwrap_or_default();
            status.phase == Some(ontap_operator::api::SvmPhase::Failed)
                || status
                    .conditions
                    .iter()
                    .any(|c| REFUSALS.contains(&c.reason.as_str()))
        })
        .map(|svm| format!("{namespace}/{}: {:?}", svm.name_any(), svm.status))
        .collect()
}

/// metal-stack's layout across seeds: one project SVM, shoots of the project on two seeds.
/// The old seed holds shoots A (an Extension) and B (its object as the extension declares it);
/// B migrates and is restored on a new seed (another namespace, another operator, running at
/// the same time). The new seed's project object stands in for the old seed's (phase
/// `ServedElsewhere`): nothing fails, no mark moves, one SVM with its uuid, B's password kept.
/// A deleted: the old seed's project object goes, but not the SVM, while B's account is on it;
/// a shoot arriving there meanwhile joins the lingering object. B deleted: everything is gone
/// from ONTAP.
#[tokio::test]
async fn a_project_svm_serves_shoots_of_two_seeds_and_goes_with_the_last() {
    use ontap_operator::extension::controller::STATE_SECRET;
    use ontap_operator::extension::naming;
    use ontap_operator::extension::state::{ExtensionState, migration_status_patch};
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "7a1c0d2e-3f4a-4b5c-8d6e-9f0a1b2c3d4e";
    let svm_name = naming::project_svm_name(project);
    let project_object = naming::project_object_name(project).unwrap();
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {
            "sharing": "PerProject",
            "managementLif": {"ip": "192.0.2.70", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.71", "prefixLength": 24}],
            "protocols": ["nfs"]
        }
    });
    let annotations = json!({"cluster.metal-stack.io/project": project});

    // The old seed: shoot A through its Extension; the project object provisions the SVM.
    create_cluster(&g, &ns, annotations.clone()).await;
    let ts = create_extension(&g, &ns, config.clone(), "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let svms = svms_in_ontap(&w);
    assert_eq!(svms.len(), 1, "{svms:#?}");
    let uuid = svms[0]["uuid"].as_str().unwrap().to_string();
    let old_objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    let p1 = old_objects.get(&project_object).await.unwrap();
    assert_eq!(p1.spec.deletion_policy, DeletionPolicy::Delete);

    // Shoot B of the same project on the old seed: its object as the extension declares it.
    let b: StorageVirtualMachine = serde_json::from_value(json!({
        "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "StorageVirtualMachine",
        "metadata": {"name": "shoot-b", "namespace": ns},
        "spec": {
            "mode": "AccountOnly", "clusterRef": {"name": w.cluster}, "svmName": svm_name,
            "managementLif": {"ip": "192.0.2.70", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.71", "prefixLength": 24}],
            "protocols": {"nfs": true},
            "account": {"name": "web-b"}, "secretName": "shoot-b-credentials"
        }
    }))
    .unwrap();
    old_objects
        .create(&PostParams::default(), &b)
        .await
        .unwrap();
    poll_svm_ready(&w, &old_objects, "shoot-b").await;
    let seed_b = Api::<Secret>::namespaced(g.seed.clone(), &ns)
        .get("shoot-b-credentials")
        .await
        .unwrap();
    let b_password =
        String::from_utf8(seed_b.data.as_ref().unwrap()["password"].0.clone()).unwrap();
    assert!(w.authenticates("web-b", &b_password, &svm_name).await);

    // Migrate B as the extension does: its state saved, its object deleted with Retain.
    let state = ExtensionState {
        cluster: w.cluster.clone(),
        svm_name: svm_name.clone(),
        svm_uuid: Some(uuid.clone()),
        account: "web-b".into(),
        credentials_secret: STATE_SECRET.into(),
    };
    old_objects
        .patch(
            "shoot-b",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deletionPolicy": "Retain"}})),
        )
        .await
        .unwrap();
    old_objects
        .delete("shoot-b", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&w, "B's old object gone", async || {
        old_objects
            .get_opt("shoot-b")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(w.authenticates("web-b", &b_password, &svm_name).await);

    // The new seed, with B restored there, while the old seed's operator keeps running.
    let g2 = Gardener::start().await;
    let ns2 = g2.namespace.clone();
    create_cluster(&g2, &ns2, annotations.clone()).await;
    let state_secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": STATE_SECRET},
        "stringData": {"username": "web-b", "password": b_password},
    }))
    .unwrap();
    Api::<Secret>::namespaced(g2.seed.clone(), &ns2)
        .create(&PostParams::default(), &state_secret)
        .await
        .unwrap();
    let mut new_seed = seed_operator(&w, &ns2);
    create_extension(&g2, &ns2, config.clone(), "wait-for-state").await;
    extensions(&g2, &ns2)
        .patch_status(
            "ontap",
            &PatchParams::default(),
            &Patch::Merge(migration_status_patch(&state)),
        )
        .await
        .unwrap();
    let ts = request(&g2, &ns2, "restore").await;
    let restored = wait_ready(&g2, &w, &ns2, &ts).await;
    println!("restore on the new seed → Succeeded: {restored:?}");
    let after = svms_in_ontap(&w);
    assert_eq!(after.len(), 1, "no second SVM: {after:#?}");
    assert_eq!(after[0]["uuid"], uuid.as_str(), "the same SVM");
    let secret_b = naming::credentials_secret_name(&svm_name, &ns2).unwrap();
    let (user, delivered) = shoot_credentials(&g2, &secret_b).await.unwrap();
    assert_eq!(user, "web-b");
    assert_eq!(
        delivered, b_password,
        "the working password was not rotated"
    );
    assert!(w.authenticates("web-b", &delivered, &svm_name).await);
    assert!(
        after[0]["comment"]
            .as_str()
            .is_some_and(|c| c.contains(p1.uid().unwrap().as_str())),
        "the mark stays with the old seed's project object: {}",
        after[0]["comment"]
    );
    let new_objects = Api::<StorageVirtualMachine>::namespaced(g2.seed.clone(), &ns2);
    let start = Instant::now();
    loop {
        let p2 = new_objects.get(&project_object).await.unwrap();
        let status = p2.status.clone().unwrap_or_default();
        if status.phase == Some(ontap_operator::api::SvmPhase::ServedElsewhere) {
            break;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "the new seed's project object does not serve from afar: {status:#?}\n--- new seed's operator log ---\n{}",
            tail(&new_seed.logs(), 40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Both seeds settled: nothing reports a failure on either, and the mark has not moved.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut failing = failing_svms(&g.seed, &ns).await;
    failing.extend(failing_svms(&g2.seed, &ns2).await);
    assert!(failing.is_empty(), "failing objects: {failing:#?}");
    assert_eq!(svms_in_ontap(&w)[0]["comment"], after[0]["comment"]);

    // The old seed's last shoot of the project goes: its project object is deleted, but the
    // SVM stays while B's account is on it, and the object says why.
    let gc = garbage_collector_stand_in(g.shoot.clone());
    delete_as_gardenlet(&g, &w, &ns).await;
    gc.abort();
    wait_for(
        &w,
        "the old project object waits for B's account",
        async || {
            let p1 = old_objects.get_opt(&project_object).await.unwrap()?;
            p1.metadata.deletion_timestamp.as_ref()?;
            p1.status?
                .conditions
                .iter()
                .any(|c| c.reason == "SVMShared" && c.message.contains("web-b"))
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let kept = svms_in_ontap(&w);
    assert_eq!(kept.len(), 1, "the SVM stays while B uses it");
    assert_eq!(kept[0]["uuid"], uuid.as_str());
    assert!(
        w.authenticates("web-b", &b_password, &svm_name).await,
        "B's account still works"
    );

    // A shoot of the project arrives on the old seed again while its project object waits
    // there: it joins the lingering object instead of waiting for a deletion that lasts as
    // long as B does, and leaving again leaves the wait as it was.
    let ts = create_extension(&g, &ns, config.clone(), "reconcile").await;
    let rejoined = wait_ready(&g, &w, &ns, &ts).await;
    println!("a shoot arrives beside the deleting project object → Succeeded: {rejoined:?}");
    let secret_a = naming::credentials_secret_name(&svm_name, &ns).unwrap();
    let (user_a, password_a) = shoot_credentials(&g, &secret_a).await.unwrap();
    assert!(w.authenticates(&user_a, &password_a, &svm_name).await);
    let still = svms_in_ontap(&w);
    assert_eq!(still.len(), 1, "no second SVM: {still:#?}");
    assert_eq!(still[0]["uuid"], uuid.as_str());
    let lingering = old_objects.get(&project_object).await.unwrap();
    assert_eq!(
        lingering.uid(),
        p1.uid(),
        "the same project object serves it"
    );
    let gc = garbage_collector_stand_in(g.shoot.clone());
    delete_as_gardenlet(&g, &w, &ns).await;
    gc.abort();
    assert!(
        !w.authenticates(&user_a, &password_a, &svm_name).await,
        "the returning shoot's account went with it"
    );
    assert_eq!(svms_in_ontap(&w).len(), 1, "the SVM stays while B uses it");

    // B goes on the new seed: then everything goes from ONTAP.
    let gc = garbage_collector_stand_in(g2.shoot.clone());
    delete_as_gardenlet(&g2, &w, &ns2).await;
    gc.abort();
    wait_for(&w, "nothing left in ONTAP", async || {
        let state = w.state();
        let accounts = state["accounts"].as_array().cloned().unwrap_or_default();
        (svms_in_ontap(&w).is_empty()
            && !accounts
                .iter()
                .any(|a| a["owner"]["uuid"] == uuid.as_str() || a["name"] == "web-b"))
        .then_some(())
    })
    .await;
    wait_for(&w, "both project objects gone", async || {
        (old_objects
            .get_opt(&project_object)
            .await
            .unwrap()
            .is_none()
            && new_objects
                .get_opt(&project_object)
                .await
                .unwrap()
                .is_none())
        .then_some(())
    })
    .await;
    new_seed.kill();
}
