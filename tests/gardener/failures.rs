//! ONTAP failing under an Extension: Gardener's error codes, and a forced deletion that lets go.

use crate::support::gardener::Gardener;
use kube::api::{Api, Patch, PatchParams};
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::extension::api::{Cluster, ErrorCode};
use serde_json::json;

use super::gardenlet::*;

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
    let config = nfs_config(&w.cluster, "192.0.2.40", "192.0.2.41");
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
    let failed = async || {
        crate::support::metrics::metric_sum(
            &w.operator.metrics_text().await,
            "controller_runtime_reconcile_errors_total",
            &[],
        )
    };
    let failed_before = failed().await;
    wait_for(&w, "three more failing passes", async || {
        (failed().await >= failed_before + 3.0).then_some(())
    })
    .await;
    w.operator.quiesce(TIMEOUT).await;
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
