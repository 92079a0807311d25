//! Holes a review of the StorageVirtualMachine controller found (issue 11), each closed with a
//! test that failed before the fix: real API server, mock ONTAP, real operator.

use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::fixtures::ontap_cluster;
use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::svm::SvmWorld;

const WITHIN: Duration = Duration::from_secs(60);

fn svms_in_ontap(world: &SvmWorld) -> Vec<Value> {
    world.state()["svms"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until ONTAP holds an SVM for which `matches` is true.
async fn wait_for_ontap_svm(world: &SvmWorld, what: &str, matches: impl Fn(&Value) -> bool) {
    poll(what, WITHIN, async || {
        let svms = svms_in_ontap(world);
        svms.iter()
            .any(&matches)
            .then_some(())
            .ok_or_else(|| format!("{svms:?}"))
    })
    .await;
}

/// Renames the SVM in ONTAP (a job) and waits until the new name shows.
async fn rename_in_ontap(world: &SvmWorld, uuid: &str, new_name: &str) {
    world
        .mock
        .as_admin(
            reqwest::Method::PATCH,
            &format!("/api/svm/svms/{uuid}"),
            json!({ "name": new_name }),
        )
        .await;
    wait_for_ontap_svm(world, "the rename lands", |s| {
        s["uuid"] == uuid && s["name"] == new_name
    })
    .await;
}

/// Deletes the object and waits until it is gone; then ONTAP must hold no SVM, LIF or account
/// of it.
async fn delete_and_expect_nothing_left(world: &SvmWorld, name: &str) {
    world
        .svms()
        .delete(name, &Default::default())
        .await
        .unwrap();
    world.wait_gone(name, WITHIN).await;
    let state = world.state();
    for kind in ["svms", "interfaces", "accounts"] {
        assert_eq!(
            state[kind].as_array().unwrap().len(),
            0,
            "{kind} leaked after the object was deleted: {state}"
        );
    }
}

#[tokio::test]
async fn an_svm_renamed_in_ontap_is_still_deleted_by_its_uuid() {
    let world = SvmWorld::start().await;
    world.create_svm("renamed", 0).await;
    let svm = world.wait_ready("renamed", WITHIN).await;
    let uuid = svm.status.unwrap().uuid.unwrap();
    rename_in_ontap(&world, &uuid, "renamed_by_admin").await;
    delete_and_expect_nothing_left(&world, "renamed").await;
}

#[tokio::test]
async fn a_late_spec_svm_name_does_not_make_deletion_skip_ontap() {
    let world = SvmWorld::start().await;
    world.create_svm("late", 0).await;
    world.wait_ready("late", WITHIN).await;
    world
        .svms()
        .patch(
            "late",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "svmName": "set_later" } })),
        )
        .await
        .unwrap();
    world
        .wait_condition("late", "SVMReady", "False", WITHIN)
        .await;
    let reason = condition(&world, "late", "SVMReady").await.unwrap().reason;
    assert_eq!(reason, "SVMNameChanged");
    delete_and_expect_nothing_left(&world, "late").await;
}

#[tokio::test]
async fn a_recorded_svm_that_is_no_longer_ours_keeps_the_finalizer_with_a_condition() {
    let world = SvmWorld::start().await;
    world.create_svm("taken", 0).await;
    let svm = world.wait_ready("taken", WITHIN).await;
    let uuid = svm.status.unwrap().uuid.unwrap();
    // An admin re-labels the SVM for something else: the operator must not delete it, and must
    // not pretend it is gone either.
    world
        .mock
        .as_admin(
            reqwest::Method::PATCH,
            &format!("/api/svm/svms/{uuid}"),
            json!({ "comment": "handed over to the database team" }),
        )
        .await;
    wait_for_ontap_svm(&world, "the comment lands", |s| {
        s["comment"] == "handed over to the database team"
    })
    .await;
    world
        .svms()
        .delete("taken", &Default::default())
        .await
        .unwrap();
    world
        .wait_condition("taken", "SVMFound", "False", WITHIN)
        .await;
    let condition = condition(&world, "taken", "SVMFound").await.unwrap();
    assert_eq!(condition.reason, "SVMOwnershipChanged", "{condition:?}");
    assert!(condition.message.contains(&uuid), "{}", condition.message);
    assert_eq!(svms_in_ontap(&world).len(), 1, "the SVM must stay");
    // Retain lets the object go and leaves ONTAP alone.
    world
        .svms()
        .patch(
            "taken",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "deletionPolicy": "Retain" } })),
        )
        .await
        .unwrap();
    world.wait_gone("taken", WITHIN).await;
    assert_eq!(svms_in_ontap(&world).len(), 1);
}

/// Replaces the password in the seed Secret, as a careless admin would.
async fn overwrite_password(world: &SvmWorld, secret: &str, password: &str) {
    world
        .secrets()
        .patch(
            secret,
            &PatchParams::default(),
            &Patch::Merge(json!({ "stringData": { "password": password } })),
        )
        .await
        .unwrap();
}

/// Whether `name` is Ready (with its resourceVersion).
async fn ready(world: &SvmWorld, name: &str) -> (bool, Option<String>) {
    let svm = world.svms().get(name).await.unwrap();
    let ready = svm.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    });
    (ready, svm.metadata.resource_version)
}

/// Samples for `during`: whenever `name` is Ready (unchanged across the check), the seed
/// Secret's credentials must authenticate. Returns the violations seen.
async fn sample_ready_implies_working_credentials(
    world: &SvmWorld,
    name: &str,
    secret: &str,
    during: Duration,
) -> Vec<String> {
    let start = std::time::Instant::now();
    let mut violations = Vec::new();
    while start.elapsed() < during {
        let before = ready(world, name).await;
        if before.0
            && let Some((user, password, svm)) = world.seed_credentials(secret).await
            && !world.authenticates(&user, &password, &svm).await
            && ready(world, name).await == before
        {
            violations.push(format!(
                "Ready=True at {:?} while the Secret's credentials fail",
                start.elapsed()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    violations
}

#[tokio::test]
async fn a_password_request_landing_late_never_leaves_ready_with_failing_credentials() {
    let world = SvmWorld::start().await;
    world.create_svm("late-patch", 0).await;
    world.wait_ready("late-patch", WITHIN).await;
    let secret = "late-patch-svm-credentials";
    // The first password request is answered after the operator gave up (2 s) and still lands.
    let delayed = world.mock.fault_json(
        json!({"method": "PATCH", "path": "/api/security/accounts/*", "times": 1,
               "action": {"type": "delay", "ms": 4000}}),
    );
    overwrite_password(&world, secret, "Wr0ngPasswordWr0ngPassword").await;
    poll("the operator notices", WITHIN, async || {
        match ready(&world, "late-patch").await.0 {
            false => Ok(()),
            true => Err("still Ready".to_string()),
        }
    })
    .await;
    let violations =
        sample_ready_implies_working_credentials(&world, "late-patch", secret, WITHIN / 3).await;
    assert_eq!(world.mock.hits(&delayed).await, 1, "the delay must fire");
    assert!(violations.is_empty(), "{violations:#?}");
    world.wait_ready("late-patch", WITHIN).await;
    let (user, password, svm) = world.seed_credentials(secret).await.unwrap();
    assert!(world.authenticates(&user, &password, &svm).await);
}

#[tokio::test]
async fn a_single_spurious_rejection_does_not_mint_a_new_password() {
    let world = SvmWorld::with(fast_mock(), &["--sync-period=2s"]).await;
    world.create_svm("spurious", 0).await;
    world.wait_ready("spurious", WITHIN).await;
    let secret = "spurious-svm-credentials";
    let before = world.seed_credentials(secret).await.unwrap();
    let patches = world.mock.sent("PATCH", "/api/security/accounts/").await;
    for status in [401, 403] {
        let id = world.mock.fault_json(
            json!({"method": "GET", "path": "/api/security/accounts/*", "times": 1,
                   "action": {"type": "error", "status": status, "code": "6",
                              "message": "User is not authorized."}}),
        );
        poll("the rejection is seen", WITHIN, async || {
            match world.mock.hits(&id).await {
                1 => Ok(()),
                n => Err(format!("{n} hits")),
            }
        })
        .await;
    }
    // Another full pass after the second fault: the pass it hit may not have finished yet, so
    // two must finish.
    let hit = world.operator.passes("storagevirtualmachine").await;
    poll("another pass after the second fault", WITHIN, async || {
        let passes = world.operator.passes("storagevirtualmachine").await;
        if passes >= hit + 2.0 {
            Ok(())
        } else {
            Err(format!("{} passes since", passes - hit))
        }
    })
    .await;
    world.wait_ready("spurious", WITHIN).await;
    assert_eq!(
        world.seed_credentials(secret).await.unwrap(),
        before,
        "the password changed on a single rejection"
    );
    assert_eq!(
        world.mock.sent("PATCH", "/api/security/accounts/").await,
        patches,
        "a password request was sent on a single rejection"
    );
}

/// The condition `type_` of `name`, if set.
async fn condition(
    world: &SvmWorld,
    name: &str,
    type_: &str,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    world
        .svms()
        .get(name)
        .await
        .unwrap()
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
}

#[tokio::test]
async fn a_lif_address_held_by_another_svm_backs_off_and_names_the_holder() {
    let world = SvmWorld::start().await;
    // An SVM made by hand holds the address the object's management LIF wants.
    world
        .mock
        .as_admin(
            reqwest::Method::POST,
            "/api/svm/svms",
            json!({ "name": "by_hand" }),
        )
        .await;
    wait_for_ontap_svm(&world, "the SVM made by hand runs", |s| {
        s["name"] == "by_hand" && s["state"] == "running"
    })
    .await;
    world
        .mock
        .as_admin(
            reqwest::Method::POST,
            "/api/network/ip/interfaces",
            json!({ "name": "squat", "svm": { "name": "by_hand" },
                "ip": { "address": "192.0.2.10", "netmask": "24" } }),
        )
        .await;
    world.create_svm("clash", 0).await;
    world
        .wait_condition("clash", "LIFsReady", "False", WITHIN)
        .await;
    let lifs = condition(&world, "clash", "LIFsReady").await.unwrap();
    assert_eq!(lifs.reason, "AddressInUse", "{lifs:?}");
    assert!(lifs.message.contains("by_hand"), "{}", lifs.message);
    // Backing off (1, 2, 4, 5, 5 s with --backoff-max=5s), not once a second: the window
    // measured is the point.
    let before = world.mock.sent("POST", "/api/network/ip/interfaces").await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let during = world.mock.sent("POST", "/api/network/ip/interfaces").await - before;
    assert!(during <= 5, "{during} LIF creates in 12 s");
}

#[tokio::test]
async fn deleting_an_svm_ontap_already_deletes_waits_instead_of_retrying() {
    let world = SvmWorld::start().await;
    world.create_svm("twice", 0).await;
    let svm = world.wait_ready("twice", WITHIN).await;
    let uuid = svm.status.unwrap().uuid.unwrap();
    // A slow delete started by an admin.
    world
        .mock
        .state()
        .update_settings(|s| s.job_duration_ms = 15_000);
    world
        .mock
        .as_admin(
            reqwest::Method::DELETE,
            &format!("/api/svm/svms/{uuid}"),
            Value::Null,
        )
        .await;
    wait_for_ontap_svm(&world, "ONTAP reports the SVM deleting", |s| {
        s["state"] == "deleting"
    })
    .await;
    world
        .svms()
        .delete("twice", &Default::default())
        .await
        .unwrap();
    poll(
        "the cleanup waits for ONTAP",
        WITHIN,
        async || match condition(&world, "twice", "SVMDeleted").await {
            Some(c) if c.reason == "SVMDeleting" => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    // A window of the admin's delete job (it runs 15 s) in which the operator's passes
    // keep looking: nothing may be sent meanwhile, and the time passing is the point.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let deletes: Vec<Value> = world
        .requests()
        .await
        .into_iter()
        .filter(|r| r["method"] == "DELETE")
        .collect();
    assert_eq!(
        world.mock.sent("DELETE", "/api/svm/svms/").await,
        1,
        "only the admin's DELETE may reach ONTAP while its delete job runs: {deletes:#?}"
    );
    world.wait_gone("twice", WITHIN).await;
}

#[tokio::test]
async fn too_many_jobs_is_a_wait_not_an_error() {
    let world = SvmWorld::start().await;
    world.mock.state().update_settings(|s| {
        s.max_concurrent_svm_jobs = 1;
        s.job_duration_ms = 8_000;
    });
    // An admin's create holds the only job slot for 8 s.
    world
        .mock
        .as_admin(
            reqwest::Method::POST,
            "/api/svm/svms",
            json!({ "name": "slot_holder" }),
        )
        .await;
    world.create_svm("queued", 0).await;
    poll(
        "the SVM step waits for ONTAP",
        WITHIN,
        async || match condition(&world, "queued", "SVMReady").await {
            Some(c) if c.reason == "ONTAPBusy" => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    world
        .mock
        .state()
        .update_settings(|s| s.job_duration_ms = 100);
    world.wait_ready("queued", WITHIN).await;
}

#[tokio::test]
async fn malformed_and_huge_answers_are_transient_never_failed() {
    let world = SvmWorld::start().await;
    for spec in [
        json!({"method": "GET", "path": "/api/svm/svms", "times": 3,
               "action": {"type": "malformed"}}),
        json!({"method": "GET", "path": "/api/network/ip/interfaces", "times": 2,
               "action": {"type": "huge", "apply": true}}),
        json!({"method": "POST", "path": "/api/security/accounts", "times": 1,
               "action": {"type": "malformed", "apply": true}}),
    ] {
        world.mock.fault_json(spec);
    }
    world.create_svm("mangled", 0).await;
    poll("the mangled SVM Ready", WITHIN, async || {
        let (ready, why, phase) = world.readiness("mangled").await;
        assert_ne!(
            phase.as_deref(),
            Some("Failed"),
            "a mangled answer made the SVM Failed: {why}"
        );
        (ready == "True").then_some(()).ok_or(why)
    })
    .await;
    world.converged("mangled", 0).await.unwrap();
}

#[tokio::test]
async fn renaming_the_account_retires_the_old_one_and_its_password() {
    let world = SvmWorld::start().await;
    world.create_svm("rename-account", 0).await;
    world.wait_ready("rename-account", WITHIN).await;
    let secret = "rename-account-svm-credentials";
    let (old_user, old_password, svm_name) = world.seed_credentials(secret).await.unwrap();
    world
        .svms()
        .patch(
            "rename-account",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "account": { "name": "team_admin" } } })),
        )
        .await
        .unwrap();
    poll(
        "the Secret names the new account",
        WITHIN,
        async || match world.seed_credentials(secret).await {
            Some((user, _, _)) if user == "team_admin" => Ok(()),
            other => Err(format!("{:?}", other.map(|c| c.0))),
        },
    )
    .await;
    world.wait_ready("rename-account", WITHIN).await;
    let (user, password, _) = world.seed_credentials(secret).await.unwrap();
    assert!(world.authenticates(&user, &password, &svm_name).await);
    assert!(
        !world
            .authenticates(&old_user, &old_password, &svm_name)
            .await,
        "the old account's published password still works"
    );
    let accounts = world.state()["accounts"].clone();
    assert!(
        !accounts
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == old_user.as_str()),
        "the old account {old_user} is still in ONTAP: {accounts}"
    );
}

#[tokio::test]
async fn a_seed_secret_that_lost_its_label_is_repaired() {
    let world = SvmWorld::with(fast_mock(), &["--sync-period=2s"]).await;
    world.create_svm("unlabelled", 0).await;
    world.wait_ready("unlabelled", WITHIN).await;
    let secret = "unlabelled-svm-credentials";
    world
        .secrets()
        .patch(
            secret,
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1managed-by"}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    poll("the label is back", WITHIN, async || {
        let labels = world
            .secrets()
            .get(secret)
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap_or_default();
        match labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str)
        {
            Some("ontap-operator") => Ok(()),
            other => Err(format!(
                "label {other:?}; SecretReady: {:?}",
                condition(&world, "unlabelled", "SecretReady").await
            )),
        }
    })
    .await;
    world.wait_ready("unlabelled", WITHIN).await;
    world.converged("unlabelled", 0).await.unwrap();
}

/// Makes `name` Ready, then deletes the world's OntapCluster under it.
async fn delete_the_cluster_of_a_ready_svm(
    world: &SvmWorld,
    name: &str,
) -> kube::Api<ontap_operator::api::OntapCluster> {
    world.create_svm(name, 0).await;
    world.wait_ready(name, WITHIN).await;
    let clusters = world.clusters();
    clusters
        .delete(&world.cluster, &Default::default())
        .await
        .unwrap();
    clusters
}

#[tokio::test]
async fn an_ontap_cluster_in_use_stays_until_its_svms_are_gone() {
    let world = SvmWorld::start().await;
    let clusters = delete_the_cluster_of_a_ready_svm(&world, "user").await;
    let user = format!("{}/user", world.env.namespace);
    poll("the cluster says who uses it", WITHIN, async || {
        let cluster = clusters
            .get(&world.cluster)
            .await
            .map_err(|e| e.to_string())?;
        let unused = cluster
            .status
            .unwrap_or_default()
            .conditions
            .into_iter()
            .find(|c| c.type_ == "Unused");
        match unused {
            Some(c) if c.reason == "ClusterInUse" && c.message.contains(&user) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // The SVM still reaches ONTAP and cleans up; then the cluster goes.
    delete_and_expect_nothing_left(&world, "user").await;
    poll("the cluster goes", WITHIN, async || {
        match clusters.get_opt(&world.cluster).await.unwrap() {
            None => Ok(()),
            Some(_) => Err("still there".to_string()),
        }
    })
    .await;
}

#[tokio::test]
async fn an_svm_whose_cluster_vanished_says_how_to_let_it_go() {
    let world = SvmWorld::start().await;
    let clusters = delete_the_cluster_of_a_ready_svm(&world, "orphan").await;
    // Someone forces the cluster away despite its finalizer.
    clusters
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
        )
        .await
        .unwrap();
    world
        .svms()
        .delete("orphan", &Default::default())
        .await
        .unwrap();
    poll(
        "the condition says what to do",
        WITHIN,
        async || match condition(&world, "orphan", "ClusterReady").await {
            Some(c) if c.reason == "ClusterNotFound" && c.message.contains("Retain") => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    world
        .svms()
        .patch(
            "orphan",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "deletionPolicy": "Retain" } })),
        )
        .await
        .unwrap();
    world.wait_gone("orphan", WITHIN).await;
}

#[tokio::test]
async fn an_unreachable_ontap_cluster_is_reported_but_leaves_the_operator_ready() {
    let world = SvmWorld::start().await;
    world.operator.wait_readyz(200, WITHIN).await;
    // A second cluster of this operator, where nothing listens: every connection is refused.
    let ns = &world.env.namespace;
    let broken = format!("{}-unreachable", world.cluster);
    let object = ontap_cluster(&broken)
        .endpoint("https://127.0.0.1:1")
        .credentials(ns, "ontap-admin")
        .label("ontap-test", ns)
        .build();
    world
        .clusters()
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    poll(
        "the cluster reports itself unreachable",
        WITHIN,
        async || {
            let conditions = world
                .clusters()
                .get(&broken)
                .await
                .unwrap()
                .status
                .unwrap_or_default()
                .conditions;
            let not_ready = conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "False");
            let unreachable = conditions
                .iter()
                .any(|c| c.status == "False" && c.reason == "ClusterUnreachable");
            (not_ready && unreachable)
                .then_some(())
                .ok_or_else(|| format!("{conditions:?}"))
        },
    )
    .await;
    let reported = format!("[-]ontap-cluster/{broken} failed (informational)");
    poll(
        "/readyz stays 200 and names the cluster",
        WITHIN,
        async || match world.operator.readyz().await {
            Some((200, body)) if body.contains(&reported) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    // The SVMs of the other cluster are served as before.
    world.create_svm("unaffected", 0).await;
    world.wait_ready("unaffected", WITHIN).await;
    assert_eq!(world.operator.readyz().await.map(|r| r.0), Some(200));
}
