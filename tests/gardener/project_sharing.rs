//! One project SVM serving the shoots of a project on two seeds.

use crate::support::gardener::Gardener;
use crate::support::{tail, try_poll};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ontap_operator::api::{DeletionPolicy, StorageVirtualMachine};
use serde_json::json;

use super::gardenlet::*;

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
            "account": {"name": "web-b"}, "secretName": "shoot-b-credentials",
            "provider": {"name": project_object}
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
    let served_elsewhere = try_poll(TIMEOUT, async || {
        let p2 = new_objects
            .get(&project_object)
            .await
            .map_err(|e| e.to_string())?;
        let status = p2.status.unwrap_or_default();
        (status.phase == Some(ontap_operator::api::SvmPhase::ServedElsewhere))
            .then_some(())
            .ok_or_else(|| format!("{status:#?}"))
    })
    .await;
    if let Err(why) = served_elsewhere {
        panic!(
            "the new seed's project object does not serve from afar: {why}\n--- new seed's operator log ---\n{}",
            tail(&new_seed.logs(), 40)
        );
    }
    // Both seeds settled: nothing reports a failure on either, and the mark has not moved.
    w.operator.quiesce(TIMEOUT).await;
    new_seed.quiesce(TIMEOUT).await;
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
    // What the passes after the deletion do is in ONTAP once both seeds' have ended.
    w.operator.quiesce(TIMEOUT).await;
    new_seed.quiesce(TIMEOUT).await;
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
