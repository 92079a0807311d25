//! `SystemComponentsHealthy` says what Trident in the shoot says about the delivered backend: the
//! test plays Trident, writing the TridentBackendConfig's status in the shoot as Trident does,
//! and the operator reads it through gardenlet's shoot access Secret.

use crate::support::gardener::Gardener;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use ontap_operator::extension::api::GardenerCondition;
use serde_json::{Value, json};

use super::gardenlet::*;

/// What Trident writes when the driver cannot initialize.
const TRIDENT_FAILURE: &str =
    "Failed to create backend: problem initializing storage driver 'ontap-nas': no data LIFs found";

#[tokio::test]
async fn a_backend_trident_cannot_bind_fails_the_condition_with_tridents_message() {
    let g = Gardener::start().await;
    // Trident's reports are looked at again every 2 s rather than Gardener's 30 s.
    let mut args = operator_args(&g.namespace);
    args.push("--extension-health-period=2s".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = crate::support::svm::SvmWorld::with(crate::support::mock::fast_mock(), &args).await;
    bind_extension_rules(&w.env.client).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = nfs_config(&w.cluster, "192.0.2.80", "192.0.2.81");
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    // The shoot has no nodes: the Trident operator's Deployment is made available by hand, so
    // the resource manager finds the delivery healthy and the backends are what is judged.
    operator_available(&g).await;
    let backends = backend_configs(&g).list(&Default::default()).await.unwrap();
    assert_eq!(backends.items.len(), 1, "one backend per protocol");
    let backend = backends.items[0].name_any();

    // Trident has not reported yet: within the grace, Progressing.
    let silent = wait_health(&g, &w, &ns, "Progressing").await;
    assert!(
        silent.message.contains(&format!(
            "Trident has not reported on backend kube-system/{backend}"
        )),
        "{silent:?}"
    );

    report_as_trident(
        &g,
        &backend,
        json!({"phase": "Unbound", "lastOperationStatus": "Failed", "message": TRIDENT_FAILURE}),
    )
    .await;
    let failed = wait_health(&g, &w, &ns, "False").await;
    assert_eq!(failed.reason, "BackendNotBound", "{failed:?}");
    assert!(failed.message.contains(&backend), "{failed:?}");
    assert!(failed.message.ends_with(TRIDENT_FAILURE), "{failed:?}");
    assert!(failed.codes.is_empty(), "{failed:?}");

    report_as_trident(
        &g,
        &backend,
        json!({"phase": "Bound", "lastOperationStatus": "Success",
               "message": format!("Backend '{backend}' created")}),
    )
    .await;
    let healthy = wait_health(&g, &w, &ns, "True").await;
    assert_eq!(healthy.reason, "HealthCheckSuccessful", "{healthy:?}");
}

/// The status of a ready Deployment, as the shoot's kube-controller-manager would write it.
async fn operator_available(g: &Gardener) {
    let deployments = Api::<Deployment>::namespaced(g.shoot.clone(), "kube-system");
    let generation = deployments
        .get("trident-operator")
        .await
        .unwrap()
        .metadata
        .generation;
    let now = now();
    deployments
        .patch_status(
            "trident-operator",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "observedGeneration": generation,
                "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                     "lastTransitionTime": now, "lastUpdateTime": now},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                     "lastTransitionTime": now, "lastUpdateTime": now},
                ],
            }})),
        )
        .await
        .unwrap();
}

/// Trident's report on `backend`: its status subresource.
async fn report_as_trident(g: &Gardener, backend: &str, status: Value) {
    Api::<DynamicObject>::namespaced_with(
        g.shoot.clone(),
        "kube-system",
        &backend_config_resource(),
    )
    .patch_status(
        backend,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

/// The Extension's `SystemComponentsHealthy` condition once its status is `status`.
async fn wait_health(
    g: &Gardener,
    w: &crate::support::svm::SvmWorld,
    ns: &str,
    status: &str,
) -> GardenerCondition {
    let mut found = None;
    wait_for(
        w,
        &format!("SystemComponentsHealthy {status}"),
        async || {
            let ext = extensions(g, ns).get("ontap").await.ok()?;
            let condition = ext
                .status?
                .conditions
                .into_iter()
                .find(|c| c.type_ == "SystemComponentsHealthy" && c.status == status)?;
            found = Some(condition);
            Some(())
        },
    )
    .await;
    found.unwrap()
}
