//! One SVM shared by several objects (issue 12, metal-stack's layout of one SVM per project and
//! one account per shoot): an `Owned` object provisions the SVM, `AccountOnly` objects make an
//! account each on it, and deleting one takes only its account.

use std::time::Duration;

use kube::api::PostParams;
use ontap_operator::api::StorageVirtualMachine;
use serde_json::{Value, json};

use crate::support::svm::SvmWorld;

const WITHIN: Duration = Duration::from_secs(60);
const SHARED: &str = "project_p1";

async fn create(world: &SvmWorld, name: &str, index: u8, spec: Value) {
    let svm: StorageVirtualMachine =
        serde_json::from_value(world.svm_with(name, index, &spec)).unwrap();
    world
        .svms()
        .create(&PostParams::default(), &svm)
        .await
        .unwrap();
}

fn account_only(account: &str) -> Value {
    json!({"mode": "AccountOnly", "svmName": SHARED, "account": {"name": account},
        "provider": {"name": "project"}})
}

/// The accounts ONTAP holds on the SVM named `svm`, sorted.
fn accounts_of(world: &SvmWorld, svm: &str) -> Vec<String> {
    let state = world.state();
    let uuid = state["svms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == svm)
        .map(|s| s["uuid"].clone())
        .unwrap();
    let mut names: Vec<String> = state["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["owner"]["uuid"] == uuid)
        .filter_map(|a| a["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

async fn working_credentials(world: &SvmWorld, object: &str, account: &str) {
    let (user, password, svm) = world
        .seed_credentials(&format!("{object}-svm-credentials"))
        .await
        .unwrap();
    assert_eq!((user.as_str(), svm.as_str()), (account, SHARED));
    assert!(
        world.authenticates(&user, &password, SHARED).await,
        "{object}'s credentials do not work"
    );
}

#[tokio::test]
async fn accounts_share_one_svm_and_leave_with_their_objects() {
    let world = SvmWorld::start().await;
    // Declared before anything provisions the SVM: it waits, it does not create one.
    create(&world, "shoot-a", 1, account_only("shoot_a")).await;
    let waiting = world
        .wait_condition("shoot-a", "SVMReady", "False", WITHIN)
        .await;
    let reason = waiting.status.unwrap().conditions;
    assert!(
        reason.iter().any(|c| c.reason == "ProviderAwaited"),
        "{reason:?}"
    );
    assert!(world.state()["svms"].as_array().unwrap().is_empty());

    create(&world, "project", 0, json!({"svmName": SHARED})).await;
    create(&world, "shoot-b", 2, account_only("shoot_b")).await;
    for name in ["project", "shoot-a", "shoot-b"] {
        world.wait_ready(name, WITHIN).await;
    }
    let state = world.state();
    let svms: Vec<&Value> = state["svms"].as_array().unwrap().iter().collect();
    assert_eq!(svms.len(), 1, "{state}");
    // Only the provisioning object's LIFs: an AccountOnly object's are not managed.
    assert_eq!(state["interfaces"].as_array().unwrap().len(), 2, "{state}");
    let project_account = world
        .seed_credentials("project-svm-credentials")
        .await
        .unwrap()
        .0;
    let mut expected = vec![
        project_account.clone(),
        "shoot_a".to_owned(),
        "shoot_b".to_owned(),
        "vsadmin".to_owned(),
    ];
    expected.sort();
    assert_eq!(accounts_of(&world, SHARED), expected);
    working_credentials(&world, "shoot-a", "shoot_a").await;
    working_credentials(&world, "shoot-b", "shoot_b").await;

    // A third object asking for an account another holds is refused, and ONTAP is not asked.
    create(&world, "shoot-c", 3, account_only("shoot_b")).await;
    let refused = world
        .wait_condition("shoot-c", "Ready", "False", WITHIN)
        .await;
    let conditions = refused.status.unwrap().conditions;
    assert!(
        conditions.iter().any(|c| c.reason == "ClaimedByAnother"),
        "{conditions:?}"
    );
    working_credentials(&world, "shoot-b", "shoot_b").await;

    // Deleting a shoot's object takes its account and Secret, and leaves the SVM and the others.
    world
        .svms()
        .delete("shoot-a", &Default::default())
        .await
        .unwrap();
    world.wait_gone("shoot-a", WITHIN).await;
    expected.retain(|a| a != "shoot_a");
    assert_eq!(accounts_of(&world, SHARED), expected);
    assert!(
        world
            .seed_credentials("shoot-a-svm-credentials")
            .await
            .is_none()
    );
    working_credentials(&world, "shoot-b", "shoot_b").await;
    assert_eq!(world.state()["interfaces"].as_array().unwrap().len(), 2);

    // The provisioning object does not delete an SVM that still holds others' accounts.
    world
        .svms()
        .delete("project", &Default::default())
        .await
        .unwrap();
    let held = world
        .wait_condition("project", "SVMDeleted", "False", WITHIN)
        .await;
    let conditions = held.status.unwrap().conditions;
    assert!(
        conditions
            .iter()
            .any(|c| c.reason == "SVMShared" && c.message.contains("shoot-b")),
        "{conditions:?}"
    );
    working_credentials(&world, "shoot-b", "shoot_b").await;
    for name in ["shoot-b", "shoot-c"] {
        world
            .svms()
            .delete(name, &Default::default())
            .await
            .unwrap();
    }
    world.wait_gone("project", WITHIN).await;
    world.gone_from_ontap(SHARED).unwrap();
}

/// The way an Extension's per-shoot object of an older release becomes a sharer: an Owned
/// object with `Retain` turns AccountOnly, a new Owned object provisions the SVM from then on,
/// and nothing in ONTAP is recreated or rotated.
#[tokio::test]
async fn an_svm_handed_over_to_sharing_is_kept_by_its_new_provider() {
    const HANDED: &str = "handed_over";
    let world = SvmWorld::start().await;
    create(
        &world,
        "first",
        5,
        json!({"svmName": HANDED, "deletionPolicy": "Retain"}),
    )
    .await;
    world.wait_ready("first", WITHIN).await;
    let (user, password, _) = world
        .seed_credentials("first-svm-credentials")
        .await
        .unwrap();
    let uuid = world.state()["svms"][0]["uuid"].clone();

    world
        .svms()
        .patch(
            "first",
            &kube::api::PatchParams::default(),
            // As the Extension's desired spec does: its own account goes with it from now on.
            &kube::api::Patch::Merge(
                json!({"spec": {"mode": "AccountOnly", "deletionPolicy": "Delete",
                    "provider": {"name": "provider"}}}),
            ),
        )
        .await
        .unwrap();
    create(&world, "provider", 5, json!({"svmName": HANDED})).await;
    world.wait_ready("provider", WITHIN).await;
    world.wait_ready("first", WITHIN).await;

    let state = world.state();
    let svms = state["svms"].as_array().unwrap();
    assert_eq!(svms.len(), 1, "{state}");
    assert_eq!(svms[0]["uuid"], uuid, "the same SVM");
    let provider_uid = world
        .svms()
        .get("provider")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    assert!(
        svms[0]["comment"]
            .as_str()
            .is_some_and(|c| c.contains(&provider_uid)),
        "marked for its new provider: {state}"
    );
    assert_eq!(state["interfaces"].as_array().unwrap().len(), 2, "{state}");
    // The first object's account and password stay as they were.
    assert_eq!(
        world
            .seed_credentials("first-svm-credentials")
            .await
            .unwrap(),
        (user.clone(), password.clone(), HANDED.to_owned())
    );
    assert!(world.authenticates(&user, &password, HANDED).await);

    world
        .svms()
        .delete("first", &Default::default())
        .await
        .unwrap();
    world.wait_gone("first", WITHIN).await;
    assert!(!accounts_of(&world, HANDED).contains(&user));
    assert_eq!(world.state()["svms"].as_array().unwrap().len(), 1);
}
