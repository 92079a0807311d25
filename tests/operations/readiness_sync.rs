//! `/readyz` waits for the caches: an operator that cannot list what it watches is not ready,
//! however healthy its port and its API server connection are.

use std::process::Command;
use std::time::Duration;

use crate::support::operator::OperatorProcess;
use crate::support::poll;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use serde_json::json;

#[tokio::test]
async fn readyz_is_503_until_every_cache_has_synced() {
    let env = crate::support::env().await;
    let plane = crate::support::control_plane();
    let dir = plane.dir.as_ref().unwrap();
    let user = "limited-operator";
    let kubeconfig = dir.join("limited.kubeconfig");
    let status = Command::new(crate::support::repo_root().join("hack/control-plane.sh"))
        .args(["user", "--dir"])
        .arg(dir)
        .args(["--name", user, "--out"])
        .arg(&kubeconfig)
        .status()
        .unwrap();
    assert!(status.success());

    // Everything but the permission to list and watch StorageVirtualMachines.
    let roles: Api<ClusterRole> = Api::all(env.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(env.client.clone());
    let role = |name: &str, resources: &[&str]| -> ClusterRole {
        serde_json::from_value(json!({
            "metadata": { "name": name },
            "rules": [
                { "apiGroups": ["ontap.storage.dev"], "resources": resources, "verbs": ["get", "list", "watch"] },
                { "apiGroups": [""], "resources": ["secrets", "namespaces"], "verbs": ["get", "list", "watch"] }
            ]
        }))
        .unwrap()
    };
    let binding = |name: &str| -> ClusterRoleBinding {
        serde_json::from_value(json!({
            "metadata": { "name": name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }]
        }))
        .unwrap()
    };
    roles
        .create(
            &PostParams::default(),
            &role("limited-clusters", &["ontapclusters"]),
        )
        .await
        .unwrap();
    bindings
        .create(&PostParams::default(), &binding("limited-clusters"))
        .await
        .unwrap();

    // Scoped to this test's namespace and clusters: the tests beside it have their own.
    let scope = [
        format!("--namespace={}", env.namespace),
        format!("--ontap-cluster-selector=ontap-test={}", env.namespace),
    ];
    let args: Vec<&str> = scope.iter().map(String::as_str).collect();
    let operator = OperatorProcess::spawn(&kubeconfig, &args, &[]);
    // Once the caches it may list have synced, the one it may not is what keeps it unready: a
    // shallow probe would be green by then.
    let (status, body) = poll(
        "the permitted caches synced",
        Duration::from_secs(60),
        async || {
            operator
                .readyz()
                .await
                .filter(|(_, body)| body.contains("[+]cache/ontapclusters ok"))
        },
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("[-]cache/storagevirtualmachines failed"),
        "{body}"
    );
    assert!(body.contains("[+]cache/ontapclusters ok"), "{body}");
    assert!(body.contains("[+]apiserver ok"), "{body}");

    roles
        .create(
            &PostParams::default(),
            &role("limited-svms", &["storagevirtualmachines"]),
        )
        .await
        .unwrap();
    bindings
        .create(&PostParams::default(), &binding("limited-svms"))
        .await
        .unwrap();
    // The watcher retries with backoff; once it lists, the operator is ready.
    operator.wait_readyz(200, Duration::from_secs(60)).await;
}
