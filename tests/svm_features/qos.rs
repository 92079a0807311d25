//! The SVM's throughput ceiling (issue 41, item 1's QoS policy): a fixed QoS policy the
//! operator makes for the SVM and applies to it, from the object, the OntapCluster's default
//! and its bound; drift repaired (the policy deleted, its limits changed, the SVM applying
//! another); the policy removed with the ceiling, and with the object, while a policy the
//! operator did not make stays; a fault during each new ONTAP call; and a resync that reads it
//! all from the inventory.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use mock_ontap::FaultAction;
use ontap_operator::api::StorageVirtualMachine;
use reqwest::Method;
use serde_json::{Value, json};

use crate::limits::{self, fail_once, fired};
use crate::support::poll;
use crate::support::resync::{inventory_read, requests_between, resync_window, resync_world};
use crate::support::svm::SvmWorld;

const READY_WITHIN: Duration = Duration::from_secs(90);

/// Creates `name` with `limits` and waits until it is Ready; its SVM's uuid.
async fn create_ready(world: &SvmWorld, name: &str, index: u8, limits: Value) -> String {
    svm_uuid(&limits::create_ready(world, name, index, limits).await)
}

fn svm_uuid(svm: &StorageVirtualMachine) -> String {
    svm.status.clone().unwrap_or_default().uuid.unwrap()
}

/// The name the operator gives the SVM's policy.
fn policy_name(svm_uuid: &str) -> String {
    format!("ontap-operator-ceiling-{svm_uuid}")
}

/// The QoS policy of `name`, as ONTAP shows it.
async fn policy(world: &SvmWorld, name: &str) -> Option<Value> {
    let answer = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/storage/qos/policies?name={name}&fields=uuid,name,svm,fixed"),
            Value::Null,
        )
        .await;
    answer["records"].as_array()?.first().cloned()
}

/// The uuid of the policy the SVM applies, if any.
async fn applied(world: &SvmWorld, svm_uuid: &str) -> Option<String> {
    let svm = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/svm/svms/{svm_uuid}?fields=qos_policy"),
            Value::Null,
        )
        .await;
    svm["qos_policy"]["uuid"].as_str().map(str::to_owned)
}

/// The ceiling ONTAP holds the SVM to: its operator policy's (IOPS, MB/s) where the SVM
/// applies it; `None` where the operator's policy is absent.
async fn ontap_ceiling(world: &SvmWorld, svm_uuid: &str) -> Option<(u64, u64)> {
    let policy = policy(world, &policy_name(svm_uuid)).await?;
    let applied = applied(world, svm_uuid).await;
    assert_eq!(
        policy["svm"]["uuid"], svm_uuid,
        "the policy is the SVM's own: {policy}"
    );
    (applied.as_deref() == policy["uuid"].as_str()).then(|| {
        (
            policy["fixed"]["max_throughput_iops"].as_u64().unwrap_or(0),
            policy["fixed"]["max_throughput_mbps"].as_u64().unwrap_or(0),
        )
    })
}

/// Waits until ONTAP holds the SVM to `wanted` (`None`: the operator's policy is gone).
async fn ceiling_becomes(world: &SvmWorld, svm_uuid: &str, wanted: Option<(u64, u64)>, what: &str) {
    poll(what, READY_WITHIN, async || {
        let found = ontap_ceiling(world, svm_uuid).await;
        let gone = policy(world, &policy_name(svm_uuid)).await.is_none();
        let reached = match wanted {
            Some(_) => found == wanted,
            None => gone,
        };
        reached.then_some(())
    })
    .await;
}

/// Sets `name`'s `spec.limits.maxThroughputIops` (`None`: removes it).
async fn set_iops(world: &SvmWorld, name: &str, iops: Option<u64>) {
    world
        .svms()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "limits": { "maxThroughputIops": iops } } })),
        )
        .await
        .unwrap();
}

/// Sends `body` as the cluster admin, behind the operator's back, and waits until ONTAP's job
/// for it succeeded: the change was made, whether or not the operator has undone it since.
async fn change_by_hand(world: &SvmWorld, method: Method, path: &str, body: Value) {
    let answer = world.mock.as_admin(method, path, body).await;
    let job = answer["job"]["uuid"].as_str().expect("a job").to_owned();
    poll(&format!("{path}: its job"), READY_WITHIN, async || {
        let job = world
            .mock
            .as_admin(
                Method::GET,
                &format!("/api/cluster/jobs/{job}?fields=state"),
                Value::Null,
            )
            .await;
        (job["state"] == "success").then_some(())
    })
    .await;
}

/// Creates a policy in the SVM as an administrator would by hand; its uuid.
async fn hand_made_policy(world: &SvmWorld, svm_uuid: &str, name: &str, iops: u64) -> String {
    world
        .mock
        .as_admin(
            Method::POST,
            "/api/storage/qos/policies",
            json!({ "name": name, "svm": { "uuid": svm_uuid }, "fixed": { "max_throughput_iops": iops } }),
        )
        .await;
    poll("the hand-made policy", READY_WITHIN, async || {
        policy(world, name).await?["uuid"]
            .as_str()
            .map(str::to_owned)
    })
    .await
}

#[tokio::test]
async fn a_ceiling_is_the_svms_own_policy_kept_against_drift_and_removed_with_it() {
    let world = limits::steady_world().await;
    let uuid = create_ready(&world, "throttled", 1, json!({ "maxThroughputIops": 5000 })).await;
    ceiling_becomes(&world, &uuid, Some((5000, 0)), "the ceiling").await;
    let ours = policy(&world, &policy_name(&uuid)).await.unwrap();
    assert_eq!(ours["fixed"]["capacity_shared"], true, "{ours}");
    assert_eq!(ours["fixed"]["min_throughput_iops"], 0, "no floor: {ours}");
    let svm = world.svms().get("throttled").await.unwrap();
    let usage = svm.status.unwrap().usage.unwrap();
    assert_eq!(usage.max_throughput_iops, Some(5000));
    assert!(
        usage.summary.ends_with(", qos 5000iops"),
        "{}",
        usage.summary
    );
    let metrics = world.operator.metrics_text().await;
    let line = format!(
        "ontap_operator_svm_max_throughput_iops{{namespace=\"{}\",name=\"throttled\"}} 5000",
        world.env.namespace
    );
    assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");

    // Its limits changed in ONTAP: set back.
    let ours_uuid = ours["uuid"].as_str().unwrap().to_owned();
    change_by_hand(
        &world,
        Method::PATCH,
        &format!("/api/storage/qos/policies/{ours_uuid}"),
        json!({ "fixed": { "max_throughput_iops": 9999, "max_throughput_mbps": 50 } }),
    )
    .await;
    ceiling_becomes(&world, &uuid, Some((5000, 0)), "the limits set back").await;

    // The SVM made to apply a policy someone made by hand: ours applied again, theirs kept.
    let theirs = hand_made_policy(&world, &uuid, "gold", 100).await;
    change_by_hand(
        &world,
        Method::PATCH,
        &format!("/api/svm/svms/{uuid}"),
        json!({ "qos_policy": { "name": "gold" } }),
    )
    .await;
    ceiling_becomes(&world, &uuid, Some((5000, 0)), "ours applied again").await;

    // The policy deleted (which takes it off the SVM): made and applied anew.
    change_by_hand(
        &world,
        Method::DELETE,
        &format!("/api/storage/qos/policies/{ours_uuid}"),
        Value::Null,
    )
    .await;
    ceiling_becomes(&world, &uuid, Some((5000, 0)), "the policy made anew").await;
    let anew = policy(&world, &policy_name(&uuid)).await.unwrap();
    assert_ne!(anew["uuid"], ours_uuid.as_str(), "a new policy: {anew}");
    assert_eq!(
        applied(&world, &uuid).await.as_deref(),
        anew["uuid"].as_str(),
        "and the SVM applies it"
    );
    let gold = policy(&world, "gold").await.unwrap();
    assert_eq!(
        gold["uuid"],
        theirs.as_str(),
        "the hand-made policy is untouched"
    );

    // The ceiling removed from the object: the operator's policy goes, the hand-made one stays
    // as it was.
    set_iops(&world, "throttled", None).await;
    ceiling_becomes(&world, &uuid, None, "the operator's policy removed").await;
    let gold = policy(&world, "gold")
        .await
        .expect("the hand-made policy stays");
    assert_eq!(gold["fixed"]["max_throughput_iops"], 100, "{gold}");
    poll("the status without a ceiling", READY_WITHIN, async || {
        let svm = world.svms().get("throttled").await.ok()?;
        svm.status?.usage.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_clusters_default_and_bound_give_the_ceiling_and_refuse_beyond_it() {
    let world = SvmWorld::start().await;
    world.wait_cluster_ready(READY_WITHIN).await;
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": {
                "defaults": { "limits": { "maxThroughputMbps": 100 } },
                "allowed": { "maxThroughputIops": 1000 },
            } })),
        )
        .await
        .unwrap();
    for (name, index, iops) in [("greedy", 1, 2000), ("unthrottled", 2, 0)] {
        let message =
            limits::refused_by_cluster(&world, name, index, json!({ "maxThroughputIops": iops }))
                .await;
        assert!(
            message.starts_with("spec.limits.maxThroughputIops:"),
            "{message}"
        );
    }
    // Asking for nothing: the bound in IOPS and the default in MB/s.
    let uuid = create_ready(&world, "bounded", 3, json!({})).await;
    ceiling_becomes(&world, &uuid, Some((1000, 100)), "bound and default").await;
    let own = create_ready(&world, "modest", 4, json!({ "maxThroughputIops": 300 })).await;
    ceiling_becomes(&world, &own, Some((300, 100)), "the object's own").await;

    // Deleting the object deletes its SVM's policy first: none outlives the SVM.
    world
        .svms()
        .delete("modest", &Default::default())
        .await
        .unwrap();
    ceiling_becomes(&world, &own, None, "the deleted object's policy").await;
}

/// Before ONTAP 9.18.1 an SVM's policy and its volumes' policies exclude each other: a ceiling on
/// an SVM one of whose volumes has a policy is ONTAP's refusal in the condition, the rest of the
/// SVM converged, and the ceiling applies once that volume's policy is gone.
#[tokio::test]
async fn a_ceiling_ontap_refuses_beside_a_volumes_own_policy_is_a_condition() {
    let world = limits::steady_world().await;
    let uuid = create_ready(&world, "nested", 1, json!({ "maxVolumes": 10 })).await;
    hand_made_policy(&world, &uuid, "vol-gold", 100).await;
    change_by_hand(
        &world,
        Method::POST,
        "/api/storage/volumes",
        json!({ "name": "vol1", "svm": { "uuid": uuid }, "aggregates": [{ "name": "aggr1_node01" }],
                "size": 1u64 << 30, "qos": { "policy": { "name": "vol-gold" } } }),
    )
    .await;
    set_iops(&world, "nested", Some(5000)).await;
    let message = world
        .refused_in(
            &world.env.namespace,
            "nested",
            "LimitsReady",
            "QoSPolicyApplyFailed",
        )
        .await;
    assert!(message.contains("policy group"), "ONTAP's words: {message}");
    world
        .wait_condition("nested", "SecretReady", "True", READY_WITHIN)
        .await;
    assert_eq!(applied(&world, &uuid).await, None, "nothing applied");

    // The volume gone, the ceiling applies on a later look.
    let volumes = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/storage/volumes?name=vol1&svm.uuid={uuid}"),
            Value::Null,
        )
        .await;
    let volume = volumes["records"][0]["uuid"].as_str().unwrap().to_owned();
    change_by_hand(
        &world,
        Method::DELETE,
        &format!("/api/storage/volumes/{volume}"),
        Value::Null,
    )
    .await;
    ceiling_becomes(
        &world,
        &uuid,
        Some((5000, 0)),
        "the ceiling without nesting",
    )
    .await;
}

/// Each new request failing once in each way that matters, met by a change of the ceiling that
/// needs it: the SVM still ends up Ready with the ceiling as wanted.
#[tokio::test]
async fn a_fault_during_each_qos_request_still_converges() {
    let world = limits::steady_world().await;
    let uuid = create_ready(&world, "faulted", 1, json!({ "maxThroughputIops": 1000 })).await;
    ceiling_becomes(&world, &uuid, Some((1000, 0)), "the first ceiling").await;
    let (error, job_failure) = limits::internal_errors();
    const POLICIES: &str = "/api/storage/qos/policies";
    const POLICY: &str = "/api/storage/qos/policies/*";
    const SVM: &str = "/api/svm/svms/*";
    // Each a fault and the ceiling that then meets it: a new value patches the policy, none
    // deletes it, a value after none creates and applies it.
    let cases = [
        ("GET", POLICIES, error.clone(), Some(1100)),
        ("PATCH", POLICY, error.clone(), Some(1200)),
        ("PATCH", POLICY, job_failure.clone(), Some(1300)),
        ("PATCH", POLICY, FaultAction::ApplyThenReset, Some(1400)),
        ("DELETE", POLICY, error.clone(), None),
        ("POST", POLICIES, error.clone(), Some(1500)),
        ("DELETE", POLICY, job_failure.clone(), None),
        ("POST", POLICIES, job_failure.clone(), Some(1600)),
        ("DELETE", POLICY, FaultAction::ApplyThenReset, None),
        ("PATCH", SVM, error.clone(), Some(1700)),
        ("GET", POLICIES, FaultAction::Reset, None),
        ("PATCH", SVM, job_failure, Some(1800)),
        ("GET", POLICIES, error, None),
        ("POST", POLICIES, FaultAction::ApplyThenReset, Some(1900)),
    ];
    for (method, path, action, iops) in cases {
        let case = format!("{method} {path} {} for {iops:?}", action.name());
        let id = fail_once(&world, method, path, action);
        set_iops(&world, "faulted", iops).await;
        fired(&world, &id, &case).await;
        ceiling_becomes(&world, &uuid, iops.map(|n| (n, 0)), &case).await;
        world.wait_ready("faulted", READY_WITHIN).await;
        world.mock.clear_faults();
    }
}

/// A pass over Ready SVMs with a ceiling costs ONTAP what one without does: the login. Which
/// policy each applies comes with their limits, the policies from one more cluster-wide read.
#[tokio::test]
async fn a_resync_of_ready_svms_with_a_ceiling_reads_it_from_the_inventory() {
    const SVMS: u8 = 4;
    let world = resync_world().await;
    let created_from = world.next_seq().await;
    limits::create_ready_each(&world, SVMS, json!({ "maxThroughputIops": 5000 })).await;
    world.operator.quiesce(READY_WITHIN).await;
    inventory_read(&world, "/api/storage/qos/policies").await;
    let from = world.next_seq().await;
    let per_svm = |r: &Value| {
        r["method"] != "GET" || r["query"].as_str().is_some_and(|q| q.contains("name="))
    };
    let qos = requests_between(&world, created_from, from, "/api/storage/qos/policies").await;
    let applies = requests_between(&world, created_from, from, "/api/svm/svms/")
        .await
        .into_iter()
        .filter(|r| r["method"] == "PATCH")
        .count();
    eprintln!(
        "provisioning a ceiling: {:.2} QoS policy requests and {:.2} SVM PATCHes per SVM",
        qos.iter().filter(|r| per_svm(r)).count() as f64 / f64::from(SVMS),
        applies as f64 / f64::from(SVMS),
    );
    let qos_requests = qos.iter().filter(|r| r["method"] != "GET").count();
    assert_eq!(
        qos_requests,
        usize::from(SVMS),
        "one POST makes an SVM's policy"
    );
    let window = resync_window(&world, from).await;
    // Five collections: the SVMs, their interfaces, their limits, the volumes, the policies.
    window.costs_a_login_per_svm(SVMS, 5);
}
