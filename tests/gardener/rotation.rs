//! Credential rotation through the Extension: `OntapConfig`'s `svm.credentialRotationPeriod`
//! reaches the shoot's StorageVirtualMachine, and a rotation's new password reaches the shoot
//! through the real resource manager, with no gardenlet request.

use kube::api::{Api, Patch, PatchParams};
use ontap_operator::api::{ROTATE_CREDENTIALS_ANNOTATION, StorageVirtualMachine};
use serde_json::json;

use crate::support::gardener::Gardener;

use super::gardenlet::*;

#[tokio::test]
async fn a_rotation_period_travels_through_ontap_config_and_a_rotation_reaches_the_shoot() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let mut config = nfs_config(&w.cluster, "192.0.2.46", "192.0.2.47");
    config["svm"]["credentialRotationPeriod"] = json!("720h");
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    let object = objects.get("ontap").await.unwrap();
    assert_eq!(
        object
            .spec
            .account
            .and_then(|a| a.rotation_period)
            .as_deref(),
        Some("720h")
    );
    let secret = "ontap-svm-credentials";
    let (user, before) = shoot_credentials(&g, secret).await.unwrap();
    let svm = svms_in_ontap(&w)[0]["name"].as_str().unwrap().to_owned();

    let patch = json!({"metadata": {"annotations": {ROTATE_CREDENTIALS_ANNOTATION: "1"}}});
    objects
        .patch("ontap", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    let redelivered = wait_for(&w, "the rotated password in the shoot", async || {
        let (u, p) = shoot_credentials(&g, secret).await?;
        (p != before && w.authenticates(&u, &p, &svm).await).then_some(())
    })
    .await;
    println!("rotation requested → the shoot has the new password: {redelivered:?}");
    assert!(
        !w.authenticates(&user, &before, &svm).await,
        "the old password is gone"
    );
}
