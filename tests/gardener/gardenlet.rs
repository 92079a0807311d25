//! The test as gardenlet (the parts every binary shares are in [`crate::support::gardenlet`],
//! re-exported here): the seed operator as a process, and waits that show its log. The scenarios in the sibling files drive it: the real operator binary
//! (running as the ServiceAccount of `deploy/rbac.yaml` plus the chart's generated extension rules)
//! against mock ONTAP, Gardener's own CRDs in the seed, and the real gardener-resource-manager
//! delivering into a second control plane playing the shoot.

use std::time::{Duration, Instant};

use crate::support::gardener::Gardener;
pub(crate) use crate::support::gardenlet::*;
use crate::support::mock::fast_mock;
use crate::support::operator::{OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, OperatorProcess};
use crate::support::repo_root;
use crate::support::svm::SvmWorld;
use crate::support::{tail, try_poll_every};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::extension::api::{ErrorCode, LastOperationState, LastOperationType};
use serde_json::{Value, json};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(90);

/// Binds the operator's ServiceAccount to the chart's generated extension rules.
pub(crate) async fn bind_extension_rules(client: &kube::Client) {
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

pub(crate) fn operator_args(namespace: &str) -> Vec<String> {
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
pub(crate) async fn world(g: &Gardener) -> SvmWorld {
    world_with_env(g, &[]).await
}

/// [`world`] with environment variables for the operator (a landscape's image vector
/// overwrite, say).
pub(crate) async fn world_with_env(g: &Gardener, envs: &[(&str, &str)]) -> SvmWorld {
    let args = operator_args(&g.namespace);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = SvmWorld::with_env(fast_mock(), &args, envs).await;
    bind_extension_rules(&w.env.client).await;
    w
}

/// Restarts the operator for another namespace: a migration moves the shoot to a new seed, with
/// an extension of its own.
pub(crate) fn respawn_operator(w: &mut SvmWorld, namespace: &str) {
    w.operator.kill();
    w.operator = seed_operator(w, namespace);
}

/// An operator for `namespace` beside whatever else runs: a seed's extension, scoped to its own
/// namespace, on `w`'s ONTAP.
pub(crate) fn seed_operator(w: &SvmWorld, namespace: &str) -> OperatorProcess {
    seed_operator_with(w, namespace, &[], &[])
}

/// [`seed_operator`] with `extra` flags and environment variables (another release's defaults,
/// another image vector overwrite).
pub(crate) fn seed_operator_with(
    w: &SvmWorld,
    namespace: &str,
    extra: &[String],
    envs: &[(&str, &str)],
) -> OperatorProcess {
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
    args.extend(extra.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    OperatorProcess::spawn(&kubeconfig, &args, envs)
}

/// gardenlet's `WaitUntilExtensionObjectReady` ([`wait_ready_within`]) on the operator process.
pub(crate) async fn wait_ready(
    g: &Gardener,
    w: &SvmWorld,
    namespace: &str,
    timestamp: &str,
) -> Duration {
    wait_ready_within(g, namespace, timestamp, TIMEOUT, async || {
        format!("--- operator log ---\n{}", tail(&w.operator.logs(), 80))
    })
    .await
}

pub(crate) async fn wait_for(
    w: &SvmWorld,
    what: &str,
    check: impl AsyncFnMut() -> Option<()>,
) -> Duration {
    let start = Instant::now();
    let outcome = try_poll_every(TIMEOUT, Duration::from_millis(200), check).await;
    if let Err(why) = outcome {
        panic!(
            "{what}: {why}\n--- operator log ---\n{}",
            tail(&w.operator.logs(), 80)
        );
    }
    start.elapsed()
}

/// The image of the Trident operator's Deployment in the shoot, if the resource manager put
/// it there.
pub(crate) async fn trident_operator_image_in_shoot(g: &Gardener) -> Option<String> {
    let deployment =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(g.shoot.clone(), "kube-system")
            .get_opt("trident-operator")
            .await
            .ok()??;
    deployment
        .spec?
        .template
        .spec?
        .containers
        .first()?
        .image
        .clone()
}

pub(crate) fn svms_in_ontap(w: &SvmWorld) -> Vec<Value> {
    w.state()["svms"].as_array().cloned().unwrap_or_default()
}

pub(crate) async fn set_admin_password(w: &SvmWorld, password: &str) {
    w.secrets()
        .patch(
            "ontap-admin",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": password}})),
        )
        .await
        .unwrap();
}

/// The SVM named `name` in the mock, as ONTAP shows it.
pub(crate) fn ontap_svm(w: &SvmWorld, name: &str) -> Option<Value> {
    svms_in_ontap(w).into_iter().find(|s| s["name"] == name)
}

/// uuids of the interfaces ONTAP holds on the SVM with `uuid`, sorted.
pub(crate) fn interfaces_of(w: &SvmWorld, uuid: &Value) -> Vec<String> {
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
pub(crate) async fn metal_stack_svm(
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
/// seed holds metal-stack's credentials Secret in `kube-system`. Once the first shoot declared the
/// project object, an administrator annotates it to adopt the SVM (a shoot's annotation alone
/// adopts nothing). The shoot manifest, unchanged, reaches `Succeeded` with the same SVM (same uuid, now marked as the project object's) and its
/// LIFs untouched. The account's password is kept, in ONTAP and in the shoot — unless
/// metal-stack's Secret no longer holds it (`stale_secret`): then it is replaced the usual way,
/// Secret first, and the shoot gets the new one. Returns the project object.
pub(crate) async fn switch_from_metal_stack(
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
    // The switch is an administrator's act: the shoot's annotation alone adopts nothing. The
    // project object, declared by the first shoot, is told which SVM to adopt, where only
    // administrators (and the operator) write.
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    let name = format!("ontap-project-{project}");
    wait_for(w, "the project object declared", async || {
        objects.get_opt(&name).await.unwrap().map(|_| ())
    })
    .await;
    adopt_as_admin(&objects, &name, &uuid).await;
    let took = wait_ready(g, w, &ns, &ts).await;
    println!("switch from metal-stack (VIP LIFs: {vip}) → Succeeded: {took:?}");

    let svms = svms_in_ontap(w);
    assert_eq!(svms.len(), 1, "one SVM in ONTAP: {svms:#?}");
    assert_eq!(svms[0]["uuid"], uuid, "the same SVM, not a new one");
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

/// An administrator's explicit adoption: the object `name` (in the project namespace) is told to
/// take over the SVM with `uuid`.
pub(crate) async fn adopt_as_admin(objects: &Api<StorageVirtualMachine>, name: &str, uuid: &Value) {
    objects
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                ontap_operator::api::ADOPT_SVM_UUID_ANNOTATION: uuid,
            }}})),
        )
        .await
        .unwrap();
}

/// Waits until the StorageVirtualMachine `name` is Ready.
pub(crate) async fn poll_svm_ready(w: &SvmWorld, objects: &Api<StorageVirtualMachine>, name: &str) {
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

/// gardenlet's migrate: the operation asked for, and waited for until it succeeded.
pub(crate) async fn migrate_as_gardenlet(g: &Gardener, w: &SvmWorld, ns: &str) {
    request(g, ns, "migrate").await;
    wait_for(w, "Migrate Succeeded", async || {
        let ext = extensions(g, ns).get("ontap").await.unwrap();
        let last = ext.status.as_ref()?.last_operation.clone()?;
        (last.type_ == LastOperationType::Migrate && last.state == LastOperationState::Succeeded)
            .then_some(())
    })
    .await;
}

/// gardenlet's deletion: confirms it with the annotation, deletes the Extension and waits until
/// it is gone. Returns how long that took.
pub(crate) async fn delete_as_gardenlet(g: &Gardener, w: &SvmWorld, ns: &str) -> Duration {
    confirm_and_delete(g, ns).await;
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
pub(crate) async fn wait_error_code(
    g: &Gardener,
    w: &SvmWorld,
    ns: &str,
    code: ErrorCode,
) -> Duration {
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
pub(crate) async fn extension_events(g: &Gardener, ns: &str, type_: &str) -> Vec<(String, i32)> {
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

pub(crate) async fn set_endpoint(w: &SvmWorld, endpoint: &str) {
    w.clusters()
        .patch(
            &w.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"endpoint": endpoint}})),
        )
        .await
        .unwrap();
}

/// StorageVirtualMachines of `namespace` that report a failure: phase `Failed`, or a condition
/// whose reason says the SVM is someone else's.
pub(crate) async fn failing_svms(seed: &kube::Client, namespace: &str) -> Vec<String> {
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
