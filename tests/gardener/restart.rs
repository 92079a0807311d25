//! A restart (or a leader change) with everything healthy verifies and writes nothing: no
//! ManagedResource, no StorageVirtualMachine spec, no `lastOperation` changes outside the
//! operations gardenlet asks for, as Gardener's own reconcilers behave (issue 22 item 12).
//! The repair of what is proven broken is the exception, tested in `drift.rs`.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::support::gardener::Gardener;
use kube::ResourceExt;
use kube::api::Api;
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::extension::imagevector::OVERWRITE_ENV;
use serde_json::{Value, json};

use super::gardenlet::*;

/// What a pass of ours could have written: each ManagedResource's generation, spec and labels,
/// each StorageVirtualMachine's generation, spec and metadata, the Extension's lastOperation.
async fn written(g: &Gardener, ns: &str) -> BTreeMap<String, Value> {
    let mut seen = BTreeMap::new();
    for mr in g
        .managed_resources()
        .list(&Default::default())
        .await
        .unwrap()
        .items
    {
        seen.insert(
            format!("ManagedResource {}", mr.name_any()),
            json!({"generation": mr.metadata.generation, "spec": mr.data["spec"],
                   "labels": mr.metadata.labels}),
        );
    }
    for svm in Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), ns)
        .list(&Default::default())
        .await
        .unwrap()
        .items
    {
        seen.insert(
            format!("StorageVirtualMachine {}", svm.name_any()),
            json!({"generation": svm.metadata.generation, "spec": svm.spec,
                   "annotations": svm.metadata.annotations, "labels": svm.metadata.labels}),
        );
    }
    let ext = extensions(g, ns).get("ontap").await.unwrap();
    seen.insert(
        "Extension lastOperation".into(),
        json!(ext.status.and_then(|s| s.last_operation)),
    );
    seen
}

/// How many passes the operator's Extension controller finished, from its metrics.
async fn extension_passes(w: &crate::support::svm::SvmWorld) -> f64 {
    w.operator.passes("extension").await
}

#[tokio::test]
async fn a_restart_with_everything_healthy_writes_nothing() {
    let g = Gardener::start().await;
    let mut w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {"managementLif": {"ip": "192.0.2.80", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.81", "prefixLength": 24}], "protocols": ["nfs"]}
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    // Let the passes that our own writes and the resource manager's status updates cause end.
    w.operator.quiesce(TIMEOUT).await;
    let before = written(&g, &ns).await;

    // The new process renders the shoot differently (the landscape relocated the Trident
    // image): that too waits for gardenlet.
    let dir = tempfile::tempdir().unwrap();
    let overwrite = dir.path().join("images_overwrite.yaml");
    std::fs::write(
        &overwrite,
        format!("images:\n- name: trident-operator\n  ref: {NEW_IMAGE}\n"),
    )
    .unwrap();
    w.operator.kill();
    w.operator = seed_operator_with(
        &w,
        &ns,
        &[],
        &[(OVERWRITE_ENV, overwrite.to_str().unwrap())],
    );
    let started = Instant::now();
    w.operator.wait_readyz(200, TIMEOUT).await;
    wait_for(
        &w,
        "the restarted operator's Extension passes",
        async || (extension_passes(&w).await >= 1.0).then_some(()),
    )
    .await;
    // Passes that follow (the SVM controller's, the resource manager's status writes).
    w.operator.quiesce(TIMEOUT).await;
    let after = written(&g, &ns).await;
    println!(
        "restart: {} Extension passes in {:?}",
        extension_passes(&w).await,
        started.elapsed()
    );
    for (what, was) in &before {
        assert_eq!(
            after.get(what),
            Some(was),
            "{what} was written by a restart nobody asked for\n--- operator log ---\n{}",
            crate::support::tail(&w.operator.logs(), 60)
        );
    }
    assert_eq!(before.len(), after.len(), "{after:#?}");

    // gardenlet's next reconcile brings the new rendering.
    let ts = request(&g, &ns, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    wait_for(
        &w,
        "the new Trident image delivered on request",
        async || (trident_operator_image_in_shoot(&g).await? == NEW_IMAGE).then_some(()),
    )
    .await;
}

const NEW_IMAGE: &str = "registry.example/trident-operator:26.02.0";
