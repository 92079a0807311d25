//! gardenlet's migrate flow persists the ShootState on a branch that does not wait for the
//! `Extension`s' migrations (`reconciler_migrate.go`: `persistShootState` depends only on the
//! workers' migration), and its periodic backup takes the ShootState at any time. So the state a
//! restore gets may be the one of the last successful reconcile, or none at all. Either way the
//! restore on the new seed ends with the shoot's own account, working credentials in the shoot,
//! and a later delete leaves nothing in ONTAP or the shoot.
//!
//! The layout is the one the failure was seen in: a shoot on its Gardener project's SVM
//! (per-project sharing), migrated to another seed whose operator runs beside the old one.

use crate::support::gardener::Gardener;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::extension::controller::STATE_SECRET;
use ontap_operator::extension::naming;
use serde_json::{Value, json};

use super::gardenlet::*;

const PROJECT: &str = "5e0c9a7b-1d2f-4a3b-9c8d-7e6f5a4b3c2d";

/// What gardenlet's ShootState holds of the Extension: `status.state`, `status.resources` and
/// the Secrets they name (name and data).
struct ShootState {
    state: Option<Value>,
    resources: Value,
    secrets: Vec<(String, Value)>,
}

/// The ShootState as gardenlet's backup takes it now.
async fn take_shoot_state(g: &Gardener, ns: &str) -> ShootState {
    let ext = extensions(g, ns).get("ontap").await.unwrap();
    let status = ext.status.unwrap_or_default();
    let mut secrets = Vec::new();
    for reference in &status.resources {
        let secret = Api::<Secret>::namespaced(g.seed.clone(), ns)
            .get(&reference.resource_ref.name)
            .await
            .unwrap();
        secrets.push((
            reference.resource_ref.name.clone(),
            serde_json::to_value(secret.data.unwrap_or_default()).unwrap(),
        ));
    }
    ShootState {
        state: status.state,
        resources: serde_json::to_value(&status.resources).unwrap(),
        secrets,
    }
}

/// The shoot migrates from `g` to `g2` with gardenlet's `shoot_state` (taken before our
/// Migrate, or empty), is restored there, then deleted: the account is the shoot's throughout
/// and nothing is left behind.
async fn migrate_with(shoot_state: impl AsyncFnOnce(&Gardener, &str) -> Option<ShootState>) {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let svm_name = naming::project_svm_name(PROJECT);
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {
            "sharing": "PerProject",
            "managementLif": {"ip": "192.0.2.80", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.81", "prefixLength": 24}],
            "protocols": ["nfs"]
        }
    });
    let annotations = json!({"cluster.metal-stack.io/project": PROJECT});
    create_cluster(&g, &ns, annotations.clone()).await;
    let ts = create_extension(&g, &ns, config.clone(), "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let secret = naming::credentials_secret_name(&svm_name, &ns).unwrap();
    let (user, password) = shoot_credentials(&g, &secret).await.unwrap();

    // Gardener's contract: the state is there at the end of every successful reconcile.
    let saved = take_shoot_state(&g, &ns).await;
    assert!(saved.state.is_some(), "status.state after a reconcile");
    let [(name, data)] = &saved.secrets[..] else {
        panic!("one Secret in status.resources: {:?}", saved.resources);
    };
    assert_eq!(name, STATE_SECRET);
    assert_eq!(
        data["password"],
        json!(k8s_openapi::ByteString(password.clone().into_bytes())),
        "the state carries the working password"
    );
    let shoot_state = shoot_state(&g, &ns).await;

    // Migrate on the old seed: the delivery and the object go, ONTAP and the shoot stay.
    migrate_as_gardenlet(&g, &w, &ns).await;
    extensions(&g, &ns)
        .delete("ontap", &DeleteParams::default())
        .await
        .unwrap();

    // Restore on the new seed, whose operator runs beside the old one, with what gardenlet
    // carried over. gardenlet names the shoot namespace alike on every seed; seeds here share
    // one API server, so the new one differs in its project part only, which no name of the
    // shoot's account is made from.
    let ns2 = ns.replacen("shoot--test--", "shoot--tst--", 1);
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": {"name": ns2, "labels": {"gardener.cloud/role": "shoot"}}
    }))
    .unwrap();
    Api::<Namespace>::all(g.seed.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    create_cluster_of_shoot(&g, &ns2, annotations, &shoot_uid(&ns)).await;
    let _grm = g.extra_resource_manager(&ns2);
    let mut new_seed = seed_operator(&w, &ns2);
    create_extension(&g, &ns2, config, "wait-for-state").await;
    if let Some(carried) = &shoot_state {
        for (name, data) in &carried.secrets {
            let secret: Secret =
                serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap();
            Api::<Secret>::namespaced(g.seed.clone(), &ns2)
                .create(&PostParams::default(), &secret)
                .await
                .unwrap();
        }
        extensions(&g, &ns2)
            .patch_status(
                "ontap",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {
                    "state": carried.state, "resources": carried.resources,
                }})),
            )
            .await
            .unwrap();
    }
    let ts = request(&g, &ns2, "restore").await;
    let restored = wait_ready(&g, &w, &ns2, &ts).await;
    println!("restore → Succeeded: {restored:?}");
    let svms = svms_in_ontap(&w);
    assert_eq!(svms.len(), 1, "no second SVM: {svms:#?}");
    let secret2 = naming::credentials_secret_name(&svm_name, &ns2).unwrap();
    let (user2, password2) = shoot_credentials(&g, &secret2).await.unwrap();
    assert_eq!(user2, user, "the shoot's own account");
    assert!(w.authenticates(&user2, &password2, &svm_name).await);
    if shoot_state.is_some() {
        assert_eq!(password2, password, "a carried password is kept");
    } else {
        assert!(
            !w.authenticates(&user, &password, &svm_name).await,
            "without a state the password is replaced: the old seed's copy no longer works"
        );
    }
    let object = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns2)
        .get("ontap")
        .await
        .unwrap();
    let account = accounts_named(&w, &user);
    assert_eq!(account.len(), 1, "{account:#?}");
    assert!(
        account[0]["comment"]
            .as_str()
            .is_some_and(|c| c.contains(object.uid().unwrap().as_str())),
        "the account is marked for the new seed's object: {}",
        account[0]["comment"]
    );

    // Delete on the new seed: the account goes from ONTAP, the delivery from the shoot.
    let gc = garbage_collector_stand_in(g.shoot.clone());
    delete_as_gardenlet(&g, &w, &ns2).await;
    gc.abort();
    wait_for(&w, "the shoot's account gone from ONTAP", async || {
        accounts_named(&w, &user).is_empty().then_some(())
    })
    .await;
    assert!(
        !w.authenticates(&user2, &password2, &svm_name).await,
        "no login is left"
    );
    assert!(
        shoot_credentials(&g, &secret2).await.is_none(),
        "credentials gone from the shoot"
    );
    assert!(
        backend_configs(&g)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "backends gone from the shoot"
    );
    assert!(
        Api::<Secret>::namespaced(g.seed.clone(), &ns2)
            .get_opt(STATE_SECRET)
            .await
            .unwrap()
            .is_none(),
        "the saved state's password goes with the account"
    );
    wait_for(
        &w,
        "the project's SVM gone with its last shoot",
        async || svms_in_ontap(&w).is_empty().then_some(()),
    )
    .await;
    new_seed.kill();
}

fn accounts_named(w: &crate::support::svm::SvmWorld, name: &str) -> Vec<Value> {
    w.state()["accounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a["name"] == name)
        .collect()
}

/// gardenlet's backup took the ShootState after the last reconcile, before our Migrate.
#[tokio::test]
async fn restore_with_the_state_of_the_last_reconcile() {
    migrate_with(async |g, ns| Some(take_shoot_state(g, ns).await)).await;
}

/// The ShootState holds nothing of the Extension.
#[tokio::test]
async fn restore_without_any_state() {
    migrate_with(async |_, _| None).await;
}
