//! SVM limits (issue 41, item 1): `max_volumes`, the capacity limit and its alert set from the
//! spec and the OntapCluster's defaults, bounds refused, drift repaired, usage in the status
//! and the metrics, a cluster before ONTAP 9.13.1, a fault during each new ONTAP call, and a
//! resync that still reads limits from the cluster's inventory rather than per SVM.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use mock_ontap::{FaultAction, FaultSpec};
use ontap_operator::api::{StorageVirtualMachine, SvmUsage};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::resync::{inventory_read, requests_between, resync_window, resync_world};
use crate::support::svm::SvmWorld;

const READY_WITHIN: Duration = Duration::from_secs(90);
const GIB: u64 = 1 << 30;

/// Creates `name` (LIF addresses from `index`) with `limits`.
async fn create(world: &SvmWorld, name: &str, index: u8, limits: Value) {
    let object = world.svm_with(name, index, &json!({ "limits": limits }));
    world.create_manifest(object).await.unwrap();
}

/// Creates `name` (LIF addresses from `index`) with `limits` and waits until it is Ready.
pub(super) async fn create_ready(
    world: &SvmWorld,
    name: &str,
    index: u8,
    limits: Value,
) -> StorageVirtualMachine {
    create(world, name, index, limits).await;
    world.wait_ready(name, READY_WITHIN).await
}

/// The SVM `svm_name`'s `max_volumes` and `storage` as ONTAP shows them.
async fn ontap_limits(world: &SvmWorld, svm_name: &str) -> Value {
    let answer = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/svm/svms?name={svm_name}&fields=uuid,max_volumes,storage"),
            Value::Null,
        )
        .await;
    answer["records"][0].clone()
}

/// The ONTAP name and uuid of the SVM of `svm`.
fn provisioned(svm: &StorageVirtualMachine) -> (String, String) {
    let status = svm.status.clone().unwrap_or_default();
    (status.svm_name.unwrap(), status.uuid.unwrap())
}

/// Sets the world's OntapCluster's `spec` fields in `spec`.
async fn patch_cluster(world: &SvmWorld, spec: Value) {
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap();
}

/// Waits until the status of `name` shows `usage`.
async fn usage_shown(world: &SvmWorld, name: &str, wanted: impl Fn(&SvmUsage) -> bool) -> SvmUsage {
    poll(
        &format!("{name}: usage in the status"),
        READY_WITHIN,
        async || {
            let svm = world.svms().get(name).await.ok()?;
            svm.status?.usage.filter(|u| wanted(u))
        },
    )
    .await
}

#[tokio::test]
async fn limits_come_from_the_object_and_the_clusters_defaults_and_usage_shows_in_status_and_metrics()
 {
    let world = steady_world().await;
    patch_cluster(
        &world,
        json!({ "defaults": { "limits": { "maxVolumes": 50, "storageLimitThresholdAlert": 80 } } }),
    )
    .await;
    let svm = create_ready(&world, "capped", 1, json!({ "storageLimit": "10Gi" })).await;
    let (svm_name, svm_uuid) = provisioned(&svm);
    let limits = ontap_limits(&world, &svm_name).await;
    assert_eq!(
        limits["max_volumes"], "50",
        "the cluster's default: {limits}"
    );
    assert_eq!(
        limits["storage"]["limit"],
        10 * GIB,
        "the object's own: {limits}"
    );
    assert_eq!(limits["storage"]["limit_threshold_alert"], 80, "{limits}");

    // A volume made in ONTAP shows in the status once the cluster's inventory counted it.
    world
        .mock
        .as_admin(
            Method::POST,
            "/api/storage/volumes",
            json!({ "name": "vol1", "svm": { "uuid": svm_uuid }, "aggregates": [{ "name": "aggr1_node01" }], "size": GIB }),
        )
        .await;
    let usage = usage_shown(&world, "capped", |u| u.volumes == Some(1)).await;
    assert_eq!(
        usage,
        SvmUsage {
            volumes: Some(1),
            max_volumes: Some(50),
            storage_used_bytes: Some(GIB),
            storage_limit_bytes: Some(10 * GIB),
            summary: "volumes 1/50, storage 1Gi/10Gi".into(),
            ..SvmUsage::default()
        }
    );
    let metrics = world.operator.metrics_text().await;
    let namespace = &world.env.namespace;
    for line in [
        format!("ontap_operator_svm_volumes{{namespace=\"{namespace}\",name=\"capped\"}} 1"),
        format!("ontap_operator_svm_max_volumes{{namespace=\"{namespace}\",name=\"capped\"}} 50"),
        format!(
            "ontap_operator_svm_storage_limit_bytes{{namespace=\"{namespace}\",name=\"capped\"}} {}",
            10 * GIB
        ),
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }

    // Someone changes the limit in ONTAP: the next look repairs it.
    world
        .mock
        .as_admin(
            Method::PATCH,
            &format!("/api/svm/svms/{svm_uuid}"),
            json!({ "max_volumes": "7" }),
        )
        .await;
    poll("max_volumes repaired", READY_WITHIN, async || {
        (ontap_limits(&world, &svm_name).await["max_volumes"] == "50").then_some(())
    })
    .await;

    // The object's own value overrides the default.
    world
        .svms()
        .patch(
            "capped",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "limits": { "maxVolumes": 5 } } })),
        )
        .await
        .unwrap();
    poll("the object's maxVolumes", READY_WITHIN, async || {
        (ontap_limits(&world, &svm_name).await["max_volumes"] == "5").then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_clusters_bounds_refuse_an_object_asking_beyond_them() {
    let world = SvmWorld::start().await;
    world.wait_cluster_ready(READY_WITHIN).await;
    patch_cluster(
        &world,
        json!({ "allowed": { "maxVolumes": 100, "maxStorageLimit": "1Ti" } }),
    )
    .await;
    for (name, index, limits, field) in [
        (
            "many",
            1,
            json!({ "maxVolumes": 101 }),
            "spec.limits.maxVolumes:",
        ),
        (
            "unlimited",
            2,
            json!({ "storageLimit": "0" }),
            "spec.limits.storageLimit:",
        ),
    ] {
        let message = refused_by_cluster(&world, name, index, limits).await;
        assert!(message.starts_with(field), "{message}");
    }
    // One asking for nothing gets the bounds as its limits.
    let svm = create_ready(
        &world,
        "bounded",
        3,
        json!({ "storageLimitThresholdAlert": 70 }),
    )
    .await;
    let limits = ontap_limits(&world, &provisioned(&svm).0).await;
    assert_eq!(limits["max_volumes"], "100", "{limits}");
    assert_eq!(limits["storage"]["limit"], 1u64 << 40, "{limits}");
}

#[tokio::test]
async fn before_9_13_1_a_capacity_limit_is_a_condition_and_the_rest_converges() {
    let mut mock = fast_mock();
    mock.cluster.version = "9.12.1".into();
    let world = SvmWorld::with(mock, &[]).await;
    world.wait_cluster_ready(READY_WITHIN).await;
    create(
        &world,
        "old",
        1,
        json!({ "maxVolumes": 20, "storageLimit": "100Gi" }),
    )
    .await;
    let message = world
        .refused_in(
            &world.env.namespace,
            "old",
            "LimitsReady",
            "StorageLimitUnsupported",
        )
        .await;
    assert!(message.contains("9.12.1"), "{message}");
    let svm = world
        .wait_condition("old", "SecretReady", "True", READY_WITHIN)
        .await;
    let answer = world
        .mock
        .as_admin(
            Method::GET,
            &format!(
                "/api/svm/svms?name={}&fields=max_volumes",
                provisioned(&svm).0
            ),
            Value::Null,
        )
        .await;
    assert_eq!(answer["records"][0]["max_volumes"], "20", "{answer}");
}

/// Each request the limits add, failing once in each way that matters: the SVM still ends up
/// Ready with its limits. The faults are armed on a Ready SVM whose limits then change, so that
/// they meet the limits' own requests rather than the create's.
#[tokio::test]
async fn a_fault_during_each_limits_request_still_converges() {
    let world = steady_world().await;
    let svm = create_ready(&world, "faulted", 1, json!({ "maxVolumes": 10 })).await;
    let svm_name = provisioned(&svm).0;
    let (error, job_failure) = internal_errors();
    let cases = [
        ("GET", "/api/svm/svms/*", error.clone()),
        ("GET", "/api/svm/svms/*", FaultAction::Reset),
        ("PATCH", "/api/svm/svms/*", error.clone()),
        ("PATCH", "/api/svm/svms/*", job_failure),
        ("PATCH", "/api/svm/svms/*", FaultAction::ApplyThenReset),
        // The inventory's cluster-wide volume count, read by the steady passes.
        ("GET", "/api/storage/volumes", error),
    ];
    for (i, (method, path, action)) in cases.into_iter().enumerate() {
        let case = format!("{method} {path} {}", action.name());
        let id = fail_once(&world, method, path, action);
        let wanted = 11 + i;
        world
            .svms()
            .patch(
                "faulted",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "limits": { "maxVolumes": wanted } } })),
            )
            .await
            .unwrap();
        fired(&world, &id, &case).await;
        world.wait_ready("faulted", READY_WITHIN).await;
        // ONTAP answers `max_volumes` as a string.
        let expected = json!(wanted.to_string());
        poll(
            &format!("{case}: max_volumes {wanted}"),
            READY_WITHIN,
            async || {
                (ontap_limits(&world, &svm_name).await["max_volumes"] == expected).then_some(())
            },
        )
        .await;
        world.mock.clear_faults();
    }
}

/// A world whose objects are confirmed from the cluster's inventory from the first steady one
/// on, and looked at every 3 s, its OntapCluster Ready.
pub(super) async fn steady_world() -> SvmWorld {
    let world = SvmWorld::with(
        fast_mock(),
        &["--sync-period=3s", "--ontap-inventory-min-svms=1"],
    )
    .await;
    world.wait_cluster_ready(READY_WITHIN).await;
    world
}

/// ONTAP's internal error as a request's answer, and as its job's failure.
pub(super) fn internal_errors() -> (FaultAction, FaultAction) {
    let error = FaultAction::Error {
        status: 500,
        code: "1".into(),
        message: "Internal error".into(),
        target: None,
    };
    let job_failure = FaultAction::JobFailure {
        code: "1".into(),
        message: "Internal error".into(),
    };
    (error, job_failure)
}

/// Creates `name` with `limits` and waits until its cluster's bounds refuse it; the message.
pub(super) async fn refused_by_cluster(
    world: &SvmWorld,
    name: &str,
    index: u8,
    limits: Value,
) -> String {
    create(world, name, index, limits).await;
    world
        .refused_in(
            &world.env.namespace,
            name,
            "ClusterReady",
            "NotAllowedByCluster",
        )
        .await
}

/// Creates `count` objects `cost-<i>` with `limits`, one after another, each Ready before the
/// next.
pub(super) async fn create_ready_each(world: &SvmWorld, count: u8, limits: Value) {
    for i in 0..count {
        create_ready(world, &format!("cost-{i}"), i + 1, limits.clone()).await;
    }
}

/// Arms a fault that meets the next `method` request to `path` once, as `action` says; its id.
pub(super) fn fail_once(world: &SvmWorld, method: &str, path: &str, action: FaultAction) -> String {
    world.mock.fault(FaultSpec {
        method: Some(method.into()),
        path: path.into(),
        after: 0,
        times: Some(1),
        probability: None,
        action,
    })
}

/// Waits until the fault `id`, armed for `case`, fired.
pub(super) async fn fired(world: &SvmWorld, id: &str, case: &str) {
    poll(
        &format!("{case}: the fault fired"),
        READY_WITHIN,
        async || (world.mock.hits(id).await > 0).then_some(()),
    )
    .await;
}

/// A pass over Ready SVMs with limits costs ONTAP what one without does: the login. Their
/// limits and volumes come from two more cluster-wide paged reads, not a request per SVM.
#[tokio::test]
async fn a_resync_of_ready_svms_with_limits_reads_them_from_the_inventory() {
    const SVMS: u8 = 4;
    let world = resync_world().await;
    let created_from = world.next_seq().await;
    create_ready_each(
        &world,
        SVMS,
        json!({ "maxVolumes": 20, "storageLimit": "100Gi" }),
    )
    .await;
    // Past the passes the seed Secrets' events and the first inventory read cause.
    world.operator.quiesce(READY_WITHIN).await;
    inventory_read(&world, "/api/network/ip/interfaces").await;
    let from = world.next_seq().await;
    let provisioning = requests_between(&world, created_from, from, "/api/svm/svms/").await;
    let patches = provisioning
        .iter()
        .filter(|r| r["method"] == "PATCH")
        .count();
    eprintln!(
        "provisioning with limits: {:.2} limit requests per SVM ({patches} PATCHes)",
        provisioning.len() as f64 / f64::from(SVMS)
    );
    assert_eq!(
        patches,
        usize::from(SVMS),
        "one PATCH sets an SVM's limits: {provisioning:#?}"
    );
    let window = resync_window(&world, from).await;
    // Four collections: the SVMs, their interfaces, their limits and the cluster's volumes.
    window.costs_a_login_per_svm(SVMS, 4);
}
