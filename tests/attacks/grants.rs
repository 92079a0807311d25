//! Issue 38: attacks on rights that used to be inferred — from being first, from a name, from
//! one OntapCluster object's view — mounted by a tenant bound only to `edit` in `team-a`. Every
//! right now comes from a grant given on both sides (a consumer's `spec.provider` and the
//! provider's `shareWith`) or from what an administrator wrote.

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ontap_operator::api::{StorageVirtualMachine, SvmPhase};
use serde_json::{Value, json};

use crate::support::gone;
use crate::support::svm::SvmWorld;
use crate::tenant::{ATTACKER, attack, world};

const WITHIN: Duration = Duration::from_secs(60);

/// The victim's object `name` (`spec` over the world's defaults), created as the admin.
async fn victim_object(world: &SvmWorld, name: &str, index: u8, spec: Value) {
    let svm: StorageVirtualMachine =
        serde_json::from_value(world.svm_with(name, index, &spec)).unwrap();
    world
        .svms()
        .create(&PostParams::default(), &svm)
        .await
        .unwrap();
}

/// The attacker's object `name` (`spec` over the world's defaults), as the attacker.
async fn attacker_object(attacker: &Client, world: &SvmWorld, name: &str, index: u8, spec: Value) {
    attack(attacker, world, name, index, json!({ "spec": spec })).await;
}

/// Waits until the object `namespace/name` is Ready.
async fn ready_in(world: &SvmWorld, namespace: &str, name: &str) {
    let svms = world.svms_in(namespace);
    crate::support::poll(&format!("{namespace}/{name} Ready"), WITHIN, async || {
        let svm = svms.get(name).await.map_err(|e| e.to_string())?;
        let phase = svm.status.as_ref().and_then(|s| s.phase);
        (phase == Some(SvmPhase::Ready))
            .then_some(())
            .ok_or_else(|| format!("{:?}", svm.status))
    })
    .await
}

/// The working credentials of the object whose seed Secret is `secret` in `namespace`.
async fn credentials(world: &SvmWorld, namespace: &str, secret: &str) -> (String, String, String) {
    let secret =
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(world.env.client.clone(), namespace)
            .get(secret)
            .await
            .unwrap();
    let data = secret.data.unwrap();
    let get = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
    (get("username"), get("password"), get("svm"))
}

/// Attack 1: a consumer trusted whoever provisioned its SVM's name first. The victim's consumer
/// names its provider; the attacker provisions the shared name first and shares it with
/// everyone. No account of the victim's lands on the attacker's SVM, whose LIFs and vsadmin the
/// attacker holds; the victim is told its provider is awaited, and nothing names the attacker.
/// (Fix switched off — the provider taken as any `Owned` object of the name — the consumer's
/// account is made on the attacker's SVM.)
#[tokio::test]
async fn a_consumer_gets_no_account_from_whoever_provisions_its_svm_name_first() {
    let (world, attacker) = world(true).await;
    attacker_object(
        &attacker,
        &world,
        "bait",
        2,
        json!({"svmName": "shared_data", "shareWith": {}}),
    )
    .await;
    ready_in(&world, ATTACKER, "bait").await;
    let before = world.holdings("shared_data");

    victim_object(
        &world,
        "consumer",
        3,
        json!({"mode": "AccountOnly", "svmName": "shared_data",
               "account": {"name": "victim_user"}, "provider": {"name": "project"}}),
    )
    .await;
    let why = world
        .refused_in(
            &world.env.namespace,
            "consumer",
            "SVMReady",
            "ProviderAwaited",
        )
        .await;
    assert!(!why.contains(ATTACKER) && !why.contains("bait"), "{why}");
    // The refusal is reported; what the passes after it do is in ONTAP once they have ended.
    world.operator.quiesce(WITHIN).await;
    assert_eq!(
        world.holdings("shared_data"),
        before,
        "no account of the victim's on the attacker's SVM"
    );

    // The victim's own provider arrives: the name is the older object's, and the victim is
    // told so without being told whose.
    victim_object(&world, "project", 4, json!({"svmName": "shared_data"})).await;
    let why = world
        .refused_in(
            &world.env.namespace,
            "project",
            "ClusterReady",
            "ClaimedByAnother",
        )
        .await;
    assert!(!why.contains(ATTACKER) && !why.contains("bait"), "{why}");
    world.operator.quiesce(WITHIN).await;
    assert_eq!(world.holdings("shared_data"), before);
}

/// Attack "revocation does not revoke": the victim shares its SVM with `team-a`, the attacker's
/// consumer gets an account, then the victim narrows `shareWith`. The attacker's login stops
/// working at once, and its refused object does not hold the victim's delete. (Fix switched
/// off — no lock on refusal, locked accounts counted as users — the login keeps working and the
/// delete waits for ever.)
#[tokio::test]
async fn narrowing_share_with_revokes_the_excluded_consumer() {
    let (world, attacker) = world(true).await;
    victim_object(
        &world,
        "db",
        1,
        json!({"svmName": "victim_db", "shareWith": {"matchLabels": {"team": "a"}}}),
    )
    .await;
    world.wait_ready("db", WITHIN).await;
    attacker_object(
        &attacker,
        &world,
        "user",
        2,
        json!({"mode": "AccountOnly", "svmName": "victim_db", "account": {"name": "mallory"},
               "provider": {"namespace": world.env.namespace, "name": "db"}}),
    )
    .await;
    ready_in(&world, ATTACKER, "user").await;
    let (user, password, svm_name) = credentials(&world, ATTACKER, "user-svm-credentials").await;
    assert!(world.authenticates(&user, &password, &svm_name).await);

    world
        .svms()
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"shareWith": {"matchLabels": {"team": "b"}}}})),
        )
        .await
        .unwrap();
    world
        .refused_in(ATTACKER, "user", "SVMReady", "SVMNotShared")
        .await;
    crate::support::poll("the revoked login fails", WITHIN, async || {
        (!world.authenticates(&user, &password, &svm_name).await)
            .then_some(())
            .ok_or_else(|| "still authenticates".to_owned())
    })
    .await;

    world
        .svms()
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    world.wait_gone("db", WITHIN).await;
    world.gone_from_ontap("victim_db").unwrap();
}

/// Revocation when the administrator withdraws admission: the tenant's namespace loses the
/// OntapCluster's `namespaceSelector`, and the account it made on its SVM is locked (the SVM and
/// its data stay); admitted again, the account works again. (Fix switched off — a refused
/// namespace is only told so — the tenant's login keeps working.)
#[tokio::test]
async fn a_namespace_no_longer_admitted_loses_its_accounts_access() {
    let (world, attacker) = world(true).await;
    attacker_object(
        &attacker,
        &world,
        "own",
        2,
        json!({"svmName": "tenant_own"}),
    )
    .await;
    ready_in(&world, ATTACKER, "own").await;
    let (user, password, svm_name) = credentials(&world, ATTACKER, "own-svm-credentials").await;
    assert!(world.authenticates(&user, &password, &svm_name).await);

    let relabel = |granted: bool| {
        let labels = if granted {
            json!({crate::tenant::GRANTED: "granted"})
        } else {
            json!({crate::tenant::GRANTED: null})
        };
        let client = world.env.client.clone();
        async move {
            Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
                .patch(
                    ATTACKER,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": labels}})),
                )
                .await
                .unwrap();
        }
    };
    relabel(false).await;
    world
        .refused_in(ATTACKER, "own", "ClusterReady", "NamespaceNotAllowed")
        .await;
    crate::support::poll("the excluded namespace's login fails", WITHIN, async || {
        (!world.authenticates(&user, &password, &svm_name).await)
            .then_some(())
            .ok_or_else(|| "still authenticates".to_owned())
    })
    .await;
    assert!(
        world.state()["svms"]
            .as_array()
            .is_some_and(|svms| svms.iter().any(|s| s["name"] == "tenant_own")),
        "the SVM and its data stay"
    );

    relabel(true).await;
    ready_in(&world, ATTACKER, "own").await;
    let (user, password, svm_name) = credentials(&world, ATTACKER, "own-svm-credentials").await;
    crate::support::poll(
        "the re-admitted namespace's login works",
        WITHIN,
        async || {
            world
                .authenticates(&user, &password, &svm_name)
                .await
                .then_some(())
                .ok_or_else(|| "refused".to_owned())
        },
    )
    .await;
}

/// Attack "refused objects still hold claims": from a namespace the cluster does not admit, the
/// attacker asks first for the SVM name and LIF address the victim will use, and names the
/// cluster so that its deletion would wait. The victim's later object gets both, and the
/// cluster's deletion does not wait for the refused object. (Fix switched off — claims from every
/// object — the victim is refused `ClaimedByAnother` and the cluster stays.)
#[tokio::test]
async fn a_refused_object_holds_no_claim_and_no_cluster() {
    let (world, attacker) = world(false).await;
    attacker_object(
        &attacker,
        &world,
        "early",
        1,
        json!({"svmName": "victim_db"}),
    )
    .await;
    world
        .refused_in(ATTACKER, "early", "ClusterReady", "NamespaceNotAllowed")
        .await;
    // Index 1: the attacker's object asked for the very addresses the victim's now asks for.
    victim_object(&world, "db", 1, json!({"svmName": "victim_db"})).await;
    world.wait_ready("db", WITHIN).await;

    world
        .svms()
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    world.wait_gone("db", WITHIN).await;
    world
        .clusters()
        .delete(&world.cluster, &DeleteParams::default())
        .await
        .unwrap();
    gone(&world.clusters(), &world.cluster, WITHIN)
        .await
        .unwrap_or_else(|e| panic!("the refused object kept the cluster: {e}"));
}

/// Attack "a conflict message names the victim's SVM through a second OntapCluster": an
/// administrator made a second OntapCluster on the same ONTAP. The attacker, through it, asks
/// for the victim's SVM name: refused before ONTAP is asked, and told nothing of whose it is.
/// (Fix switched off — claims keyed by the OntapCluster object — the attacker's request reaches
/// ONTAP and learns the SVM is another's.)
#[tokio::test]
async fn claims_hold_across_two_ontap_clusters_on_one_ontap() {
    let (world, attacker) = world(true).await;
    victim_object(&world, "db", 1, json!({"svmName": "victim_db"})).await;
    world.wait_ready("db", WITHIN).await;
    world.alias_cluster("alias").await;
    let posts = world.mock.sent("POST", "/api/svm/svms").await;

    let mut object = world.svm_with("probe", 2, &json!({"svmName": "victim_db"}));
    object["spec"]["clusterRef"] = json!({"name": "alias"});
    object["metadata"]["namespace"] = json!(ATTACKER);
    Api::<StorageVirtualMachine>::namespaced(attacker.clone(), ATTACKER)
        .create(
            &PostParams::default(),
            &serde_json::from_value(object).unwrap(),
        )
        .await
        .unwrap();
    let why = world
        .refused_in(ATTACKER, "probe", "ClusterReady", "ClaimedByAnother")
        .await;
    assert!(
        !why.contains(&world.cluster) && !why.contains("StorageVirtualMachine db"),
        "names neither the holder nor its cluster: {why}"
    );
    assert_eq!(world.mock.sent("POST", "/api/svm/svms").await, posts);
}

/// Attack "administrators cannot restrict what tenants choose": the administrator bounds the
/// cluster to the addresses 192.0.2.0/28 and the IPspace `Default`, and forbids tenants
/// `Retain`, and to one SVM per namespace. The attacker's objects asking for anything else are
/// refused naming the field, and ONTAP sees none of their requests; within the bounds one object
/// is provisioned, and a second refused. (Fix switched off — no `allowed` check — each request
/// reaches ONTAP.)
#[tokio::test]
async fn an_administrators_bounds_hold_before_ontap_sees_a_request() {
    let (world, attacker) = world(true).await;
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"allowed": {
                "addressRanges": ["192.0.2.0/28"], "ipspaces": ["Default"], "tenantRetain": false,
                "svmsPerNamespace": 1
            }}})),
        )
        .await
        .unwrap();
    let posts = world.mock.sent("POST", "/api/svm/svms").await;
    // Index 3's addresses are 192.0.2.16 and .17; 1 and 2 lie inside the range.
    for (name, index, spec, field) in [
        ("outside", 3, json!({}), "spec.managementLif.ip: 192.0.2.16"),
        (
            "ipspace",
            1,
            json!({"ipspace": "Cluster"}),
            "spec.ipspace: ",
        ),
        (
            "kept",
            2,
            json!({"deletionPolicy": "Retain"}),
            "spec.deletionPolicy: ",
        ),
    ] {
        attacker_object(&attacker, &world, name, index, spec).await;
        let why = world
            .refused_in(ATTACKER, name, "ClusterReady", "NotAllowedByCluster")
            .await;
        assert!(why.starts_with(field), "{why}");
    }
    world.operator.quiesce(WITHIN).await;
    assert_eq!(world.mock.sent("POST", "/api/svm/svms").await, posts);
    assert_eq!(
        world.mock.sent("POST", "/api/network/ip/interfaces").await,
        0
    );

    // Refused, they hold no claim: an object within the bounds gets index 1's addresses.
    attacker_object(&attacker, &world, "inside", 1, json!({})).await;
    ready_in(&world, ATTACKER, "inside").await;

    // One SVM per namespace: the next is refused, however well it stays within the rest.
    attacker_object(&attacker, &world, "second", 2, json!({})).await;
    let why = world
        .refused_in(ATTACKER, "second", "ClusterReady", "NotAllowedByCluster")
        .await;
    assert!(why.contains("1 SVMs per namespace"), "{why}");
    assert_eq!(world.mock.sent("POST", "/api/svm/svms").await, posts + 1);
}
