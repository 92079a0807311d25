//! SVM limits and usage, the cluster-wide inventory reads, and QoS policies against
//! mock-ontap; each new call failed through the mock's faults.

use ontap_client::{
    DeleteOutcome, ErrorClass, MaxVolumes, ObjectRef, QosFixed, QosPolicyCreate, QosPolicyPatch,
    SvmLimitsPatch, SvmStorageLimit,
};
use serde_json::json;
use test_support::ontap::*;

const MIB: u64 = 1 << 20;

fn gold(svm_uuid: &str) -> QosPolicyCreate {
    QosPolicyCreate {
        name: "gold".into(),
        svm: ObjectRef::by_uuid(svm_uuid),
        fixed: QosFixed {
            max_throughput_iops: Some(5000),
            ..QosFixed::default()
        },
    }
}

#[tokio::test]
async fn limits_are_set_and_read_cluster_wide_in_one_page_each() {
    let env = Env::start().await;
    let c = &env.client;
    let version = c.cluster().await.unwrap().version;
    let a = env.create_svm("lim_a").await;
    let b = env.create_svm("lim_b").await;
    c.patch_svm_limits(
        &a.uuid,
        &SvmLimitsPatch {
            max_volumes: Some(MaxVolumes::Limit(20)),
            storage: Some(SvmStorageLimit {
                limit: Some(1024 * MIB),
                limit_threshold_alert: Some(80),
            }),
            qos_policy: None,
        },
    )
    .await
    .unwrap();
    env.mock
        .as_admin(
            reqwest::Method::POST,
            // Waits for the job (200 once it succeeded), so the volume is listed afterwards.
            "/api/storage/volumes?return_timeout=30",
            json!({ "name": "v1", "svm": { "uuid": a.uuid }, "size": 100 * MIB,
                    "aggregates": [{ "name": "aggr1_node01" }] }),
        )
        .await;

    let mut svm_pages = c.svm_limit_pages(100, &version).unwrap();
    let svms = svm_pages.next_page().await.unwrap().unwrap();
    assert!(!svm_pages.has_next(), "two SVMs fit one page");
    let limited = svms.iter().find(|s| s.uuid == a.uuid).unwrap();
    assert_eq!(limited.max_volumes, Some(MaxVolumes::Limit(20)));
    let storage = limited.storage.unwrap();
    assert_eq!(storage.limit, Some(1024 * MIB));
    assert_eq!(storage.limit_threshold_alert, Some(80));
    let open = svms.iter().find(|s| s.uuid == b.uuid).unwrap();
    assert_eq!(open.max_volumes, Some(MaxVolumes::Unlimited));
    assert_eq!(open.storage.and_then(|s| s.limit), None);

    let mut volume_pages = c.volume_usage_pages(100).unwrap();
    let volumes = volume_pages.next_page().await.unwrap().unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(
        volumes[0].svm.as_ref().and_then(|s| s.uuid.as_deref()),
        Some(a.uuid.as_str())
    );
    assert_eq!(volumes[0].size, Some(100 * MIB));
    let one = c.svm_limits(&a.uuid, &version).await.unwrap();
    assert_eq!(one.storage.and_then(|s| s.allocated), Some(100 * MIB));
}

#[tokio::test]
async fn qos_policy_lifecycle_and_the_svm_policy() {
    let env = Env::start().await;
    let c = &env.client;
    let version = c.cluster().await.unwrap().version;
    let svm = env.create_svm("qos").await;
    let created = c.create_qos_policy(&gold(&svm.uuid)).await.unwrap();
    assert_eq!(created.name, "gold");
    assert_eq!(
        env.requests("GET", "/api/storage/qos/policies").await.len(),
        0,
        "the created record needs no lookup"
    );
    let dup = c.create_qos_policy(&gold(&svm.uuid)).await.unwrap_err();
    assert_eq!(dup.class(), ErrorClass::Conflict, "{dup}");
    assert_eq!(dup.ontap_code(), Some("8454154"));

    c.patch_svm_limits(
        &svm.uuid,
        &SvmLimitsPatch {
            qos_policy: Some(ObjectRef::by_name("gold")),
            ..SvmLimitsPatch::default()
        },
    )
    .await
    .unwrap();
    let limits = c.svm_limits(&svm.uuid, &version).await.unwrap();
    assert_eq!(
        limits.qos_policy.and_then(|p| p.uuid),
        Some(created.uuid.clone())
    );
    c.patch_qos_policy(
        &created.uuid,
        &QosPolicyPatch {
            fixed: Some(QosFixed {
                max_throughput_iops: Some(8000),
                ..QosFixed::default()
            }),
            ..QosPolicyPatch::default()
        },
    )
    .await
    .unwrap();
    let listed = c.qos_policies(&svm.uuid).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].fixed.and_then(|f| f.max_throughput_iops),
        Some(8000)
    );
    assert_eq!(listed[0].object_count, Some(1));
    let mut pages = c.qos_policy_pages(10).unwrap();
    assert_eq!(pages.next_page().await.unwrap().unwrap().len(), 1);
    assert_eq!(
        c.delete_qos_policy(&created.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        c.delete_qos_policy(&created.uuid).await.unwrap(),
        DeleteOutcome::AlreadyAbsent
    );
    assert_eq!(c.qos_policy_by_name("gold").await.unwrap(), None);
    let cleared = c.svm_limits(&svm.uuid, &version).await.unwrap();
    assert_eq!(cleared.qos_policy, None);
}

#[tokio::test]
async fn each_new_call_fails_through_the_mock_faults() {
    let env = Env::start().await;
    let c = &env.client;
    let version = c.cluster().await.unwrap().version;
    let svm = env.create_svm("faulty").await;

    env.mock.fault_json(
        json!({"method": "POST", "path": "/api/storage/qos/policies",
        "times": 1, "action": {"type": "job_failure", "code": "8454147",
        "message": "The maximum limit for QoS policies has been reached."}}),
    );
    let failed = c.create_qos_policy(&gold(&svm.uuid)).await.unwrap_err();
    assert_eq!(failed.ontap_code(), Some("8454147"));
    assert_eq!(
        c.qos_policy_by_name("gold").await.unwrap(),
        None,
        "a failed job creates nothing"
    );

    env.mock.fault_json(
        json!({"method": "PATCH", "path": "/api/svm/svms/*", "times": 1,
        "action": {"type": "error", "status": 400, "code": "262197", "message": "Invalid value"}}),
    );
    let refused = c
        .patch_svm_limits(
            &svm.uuid,
            &SvmLimitsPatch {
                max_volumes: Some(MaxVolumes::Limit(5)),
                ..SvmLimitsPatch::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(refused.class(), ErrorClass::Invalid, "{refused}");

    for path in [
        "/api/svm/svms",
        "/api/storage/volumes",
        "/api/storage/qos/policies",
    ] {
        env.mock
            .fault_json(json!({"method": "GET", "path": path, "times": 1,
            "action": {"type": "error", "status": 403, "code": "6", "message": "not authorized"}}));
    }
    let mut svms = c.svm_limit_pages(10, &version).unwrap();
    assert!(svms.next_page().await.is_err());
    let mut volumes = c.volume_usage_pages(10).unwrap();
    assert!(volumes.next_page().await.is_err());
    assert!(c.qos_policies(&svm.uuid).await.is_err());
}
