//! Attacks a tenant mounts with the aggregated `edit` role in a namespace of its own (`team-a`)
//! against objects of another namespace (`victim`), on one operator watching every namespace.
//! Each names what a tenant can predict or learn: default SVM and account names, the uuid of an
//! SVM it shares.

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ontap_operator::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine};
use serde_json::{Value, json};

use crate::support::mock::fast_mock;
use crate::support::operator::tenant_client;
use crate::support::svm::SvmWorld;
use crate::support::{create_namespace, gone};

const WITHIN: Duration = Duration::from_secs(60);
pub(crate) const ATTACKER: &str = "team-a";
pub(crate) const GRANTED: &str = "ontap-tenant";

/// A world whose cluster admits namespaces labelled `ontap-tenant=granted` (the victim's
/// always; the attacker's when `admitted`), and a client for the attacker, bound only to `edit`
/// in its namespace.
pub(crate) async fn world(admitted: bool) -> (SvmWorld, Client) {
    let world = SvmWorld::tenanted(fast_mock(), &[]).await;
    let client = &world.env.client;
    Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .patch(
            &world.env.namespace,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {GRANTED: "granted"}}})),
        )
        .await
        .unwrap();
    let labels = if admitted {
        json!({GRANTED: "granted", "team": "a"})
    } else {
        json!({"team": "a"})
    };
    create_namespace(client, ATTACKER, labels).await;
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"namespaceSelector": {"matchLabels": {GRANTED: "granted"}}}}),
            ),
        )
        .await
        .unwrap();
    let dir = world.plane_dir.clone().unwrap();
    let attacker = tenant_client(&dir, client, ATTACKER, "mallory").await;
    (world, attacker)
}

/// The victim's object `name` (spec fields of `spec` over the world's defaults), Ready, and its
/// working credentials: (SVM name, account, password).
async fn victim(world: &SvmWorld, name: &str, index: u8, spec: Value) -> (String, String, String) {
    let svm: StorageVirtualMachine =
        serde_json::from_value(world.svm_with(name, index, &spec)).unwrap();
    world
        .svms()
        .create(&PostParams::default(), &svm)
        .await
        .unwrap();
    let ready = world.wait_ready(name, WITHIN).await;
    let secret = ready.status.unwrap().secret_ref.unwrap();
    let (user, password, svm_name) = world.seed_credentials(&secret).await.unwrap();
    assert!(world.authenticates(&user, &password, &svm_name).await);
    (svm_name, user, password)
}

/// The attacker's object, created with its own identity.
pub(crate) async fn attack(
    attacker: &Client,
    world: &SvmWorld,
    name: &str,
    index: u8,
    object: Value,
) {
    let mut base = world.svm_with(name, index, &object["spec"]);
    base["metadata"]["namespace"] = json!(ATTACKER);
    if let Some(annotations) = object.get("annotations") {
        base["metadata"]["annotations"] = annotations.clone();
    }
    let svm: StorageVirtualMachine = serde_json::from_value(base).unwrap();
    Api::<StorageVirtualMachine>::namespaced(attacker.clone(), ATTACKER)
        .create(&PostParams::default(), &svm)
        .await
        .expect("a tenant with edit may create StorageVirtualMachines in its namespace");
}

/// Waits until the attacker's object `name` has condition `type_` False with `reason`.
async fn refused(world: &SvmWorld, name: &str, type_: &str, reason: &str) -> String {
    world.refused_in(ATTACKER, name, type_, reason).await
}

/// Deletes the attacker's object as the attacker and waits until its cleanup is over.
async fn delete_as_attacker(attacker: &Client, world: &SvmWorld, name: &str) {
    Api::<StorageVirtualMachine>::namespaced(attacker.clone(), ATTACKER)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    gone(&world.svms_in(ATTACKER), name, WITHIN)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", world.operator.logs()));
}

/// Issue 22, item 1: a tenant in a namespace the cluster does not admit names the victim's
/// SVM and account (both default names, so predictable) in an `AccountOnly` object. The object
/// is refused, and deleting it must not delete the account it names.
#[tokio::test]
async fn deleting_a_refused_object_does_not_delete_the_account_it_names() {
    let (world, attacker) = world(false).await;
    let (svm_name, account, password) = victim(&world, "db", 1, json!({})).await;
    let before = world.holdings(&svm_name);

    attack(
        &attacker,
        &world,
        "thief",
        2,
        json!({"spec": {"mode": "AccountOnly", "svmName": svm_name, "account": {"name": account},
                        "provider": {"namespace": world.env.namespace, "name": "db"}}}),
    )
    .await;
    refused(&world, "thief", "ClusterReady", "NamespaceNotAllowed").await;
    delete_as_attacker(&attacker, &world, "thief").await;

    assert!(
        world.authenticates(&account, &password, &svm_name).await,
        "the victim's credentials stopped working"
    );
    assert_eq!(world.mock.sent("DELETE", "/api/security/accounts").await, 0);
    assert_eq!(world.holdings(&svm_name), before);
    world.wait_ready("db", WITHIN).await;
}

/// Issue 22, item 1: an admitted tenant, on an SVM shared with it, names accounts it did not
/// create: the victim's (held by an older object: refused as claimed) and one an administrator
/// made by hand that no object claims (refused as not ours). Nothing of either changes — no
/// unlock, no password, no delete — neither while its objects live nor when they are deleted.
#[tokio::test]
async fn an_admitted_object_does_not_take_over_an_account_it_did_not_create() {
    let (world, attacker) = world(true).await;
    let (svm_name, account, password) = victim(
        &world,
        "db",
        1,
        json!({"shareWith": {"matchLabels": {"team": "a"}}}),
    )
    .await;
    world
        .mock
        .as_admin(
            reqwest::Method::POST,
            "/api/security/accounts",
            json!({"name": "legacy", "owner": {"name": svm_name}, "role": {"name": "vsadmin"},
                   "applications": [{"application": "http", "authentication_methods": ["password"]}],
                   "password": "Xq7-Zt9-Wm3k-p4", "comment": "made by hand"}),
        )
        .await;
    let before = world.holdings(&svm_name);

    for (thief, named, reason) in [
        ("thief", account.as_str(), "ClaimedByAnother"),
        ("hand-thief", "legacy", "AccountNotOurs"),
    ] {
        attack(
            &attacker,
            &world,
            thief,
            2,
            json!({"spec": {"mode": "AccountOnly", "svmName": svm_name, "account": {"name": named},
                            "provider": {"namespace": world.env.namespace, "name": "db"}}}),
        )
        .await;
        let step = if reason == "AccountNotOurs" {
            "AccountReady"
        } else {
            "ClusterReady"
        };
        let why = refused(&world, thief, step, reason).await;
        assert!(why.contains(named), "{why}");
        delete_as_attacker(&attacker, &world, thief).await;
    }

    assert!(world.authenticates(&account, &password, &svm_name).await);
    assert!(
        world
            .authenticates("legacy", "Xq7-Zt9-Wm3k-p4", &svm_name)
            .await
    );
    assert_eq!(world.mock.sent("PATCH", "/api/security/accounts").await, 0);
    assert_eq!(world.mock.sent("DELETE", "/api/security/accounts").await, 0);
    assert_eq!(world.holdings(&svm_name), before);
}

/// Issue 22, item 4: the victim lets its SVM go with `deletionPolicy: Retain` (its data stay in
/// ONTAP; issue 38, item 5: its account is locked, as nothing accounts for a working login any
/// more). A tenant of another namespace who learnt the SVM's uuid asks to adopt it: refused,
/// nothing changes.
#[tokio::test]
async fn a_released_svm_is_not_taken_over_from_another_namespace() {
    let (world, attacker) = world(true).await;
    let (svm_name, account, password) = victim(
        &world,
        "data",
        1,
        json!({"svmName": "data_store", "deletionPolicy": "Retain"}),
    )
    .await;
    let uuid = world
        .svms()
        .get("data")
        .await
        .unwrap()
        .status
        .unwrap()
        .uuid
        .unwrap();
    world
        .svms()
        .delete("data", &DeleteParams::default())
        .await
        .unwrap();
    world.wait_gone("data", WITHIN).await;
    let before = world.holdings(&svm_name);
    assert!(before["svm"].is_object(), "Retain keeps the SVM");
    assert!(
        !world.authenticates(&account, &password, &svm_name).await,
        "a tenant's Retain revokes its login"
    );

    attack(
        &attacker,
        &world,
        "squatter",
        3,
        json!({
            "annotations": {ADOPT_SVM_UUID_ANNOTATION: uuid},
            "spec": {"svmName": svm_name},
        }),
    )
    .await;
    let why = refused(&world, "squatter", "SVMReady", "SVMNameInUse").await;
    assert!(why.contains("another tenant"), "{why}");
    assert_eq!(world.holdings(&svm_name), before);

    // From the namespace that released it, the same request takes it over (once the squatter,
    // older, no longer claims the name: explicit names go to the older object).
    delete_as_attacker(&attacker, &world, "squatter").await;
    assert_eq!(world.holdings(&svm_name), before);
    let mut again = world.svm("data-again", 1).json();
    again["metadata"]["annotations"] = json!({ADOPT_SVM_UUID_ANNOTATION: uuid});
    again["spec"]["svmName"] = json!(svm_name);
    world
        .svms()
        .create(
            &PostParams::default(),
            &serde_json::from_value(again).unwrap(),
        )
        .await
        .unwrap();
    world
        .wait_condition("data-again", "SVMReady", "True", WITHIN)
        .await;
}

/// Issue 22, item 11: a tenant asks for another namespace's default SVM name before that
/// namespace's object exists ("older wins" would give it the name). Refused; the victim's
/// object, created later, gets its SVM.
#[tokio::test]
async fn another_namespaces_default_svm_name_cannot_be_taken_in_advance() {
    let (world, attacker) = world(true).await;
    let default_name =
        ontap_operator::api::seed_secret::default_svm_name(&world.env.namespace, "db");
    attack(
        &attacker,
        &world,
        "early",
        2,
        json!({"spec": {"svmName": default_name}}),
    )
    .await;
    refused(&world, "early", "ClusterReady", "SVMNameReserved").await;
    let (svm_name, _, _) = victim(&world, "db", 1, json!({})).await;
    assert_eq!(svm_name, default_name);
    assert_eq!(world.mock.sent("POST", "/api/svm/svms").await, 1);
}
