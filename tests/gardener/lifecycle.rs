//! An Extension's whole life as gardenlet drives it, with the real resource manager.

use crate::support::gardener::Gardener;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ontap_operator::extension::api::{ErrorCode, LastOperationState, LastOperationType};
use serde_json::json;

use super::gardenlet::*;

/// create → Succeeded; reconcile again; broken admin credentials → ERR_INFRA_UNAUTHENTICATED and
/// back; a deleted seed Secret repaired and re-delivered; migrate → restore on another namespace
/// with one SVM throughout and the same password; delete → nothing left in ONTAP or the shoot.
#[tokio::test]
async fn extension_lifecycle_on_gardener_with_the_real_resource_manager() {
    let g = Gardener::start().await;
    let mut w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = nfs_config(&w.cluster, "192.0.2.20", "192.0.2.21");

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
    create_cluster_of_shoot(&g, &ns2, json!({}), &shoot_uid(&ns)).await;
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
    let _grm = g.extra_resource_manager(&ns2);
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
