//! The StorageVirtualMachine controller end to end: real API server, mock ONTAP, real operator.

use std::time::Duration;

use crate::support::svm::SvmWorld;

const READY_WITHIN: Duration = Duration::from_secs(60);

#[tokio::test]
async fn an_svm_becomes_ready_with_working_credentials_and_deletion_leaves_nothing() {
    let world = SvmWorld::start().await;
    world.create_svm("happy", 0).await;
    let svm = world.wait_ready("happy", READY_WITHIN).await;
    let status = svm.status.unwrap();
    let svm_name = status.svm_name.clone().unwrap();
    assert_eq!(status.secret_ref.as_deref(), Some("happy-svm-credentials"));
    for condition in [
        "ClusterReady",
        "SVMReady",
        "LIFsReady",
        "AccountReady",
        "SecretReady",
        "Ready",
    ] {
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.type_ == condition && c.status == "True"),
            "{condition} not True: {:?}",
            status.conditions
        );
    }
    let (username, password, secret_svm) = world
        .seed_credentials("happy-svm-credentials")
        .await
        .unwrap();
    assert_eq!(secret_svm, svm_name);
    assert!(
        world.authenticates(&username, &password, &svm_name).await,
        "the seed Secret's credentials must work"
    );

    let state = world.state();
    assert_eq!(state["svms"].as_array().unwrap().len(), 1);
    assert_eq!(state["interfaces"].as_array().unwrap().len(), 2);

    world
        .svms()
        .delete("happy", &Default::default())
        .await
        .unwrap();
    world.wait_gone("happy", READY_WITHIN).await;
    let state = world.state();
    for kind in ["svms", "interfaces"] {
        assert_eq!(
            state[kind].as_array().unwrap().len(),
            0,
            "{kind} left behind: {state}"
        );
    }
    let accounts: Vec<_> = state["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["name"] == username.as_str())
        .collect();
    assert!(accounts.is_empty(), "account left behind: {state}");
    assert!(
        world
            .secrets()
            .get_opt("happy-svm-credentials")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn an_aggregate_ontap_does_not_have_is_a_condition_not_a_retry_storm() {
    let world = SvmWorld::start().await;
    let mut manifest = world.svm("no-aggr", 0).json();
    manifest["spec"]["aggregates"] = serde_json::json!(["aggr_missing"]);
    let svm = serde_json::from_value(manifest).unwrap();
    world
        .svms()
        .create(&Default::default(), &svm)
        .await
        .unwrap();
    let svm = world
        .wait_condition("no-aggr", "SVMReady", "False", READY_WITHIN)
        .await;
    let status = svm.status.unwrap();
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == "SVMReady")
        .unwrap();
    assert_eq!(condition.reason, "AggregateNotFound");
    assert!(
        condition.message.contains("aggr_missing"),
        "{}",
        condition.message
    );
    assert_eq!(
        world.state()["svms"].as_array().unwrap().len(),
        0,
        "nothing may be created"
    );
    assert_eq!(
        status.svm_name, None,
        "status.svmName names an SVM ONTAP does not hold"
    );
    // Waiting, not failing: the next look is scheduled far out, so ONTAP sees few requests.
    // The window measured is the point: a retry loop would fill it.
    let before = world.requests().await.len();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let during = world.requests().await.len() - before;
    assert!(
        during <= 6,
        "{during} ONTAP requests in 5 s while waiting for an aggregate"
    );
}

/// A change of `spec.protocols` reaches ONTAP through the protocol services, since ONTAP sets
/// an SVM's protocols on the SVM itself only at create: nfs, then nfs and nvme, then nvme alone.
/// Each data LIF gets the service policy of the protocol it serves, replaced when that changes.
#[tokio::test]
async fn a_protocol_change_switches_the_services_in_ontap() {
    let world = SvmWorld::start().await;
    world
        .svms()
        .create(&Default::default(), &world.svm("proto", 0).nfs().build())
        .await
        .unwrap();
    let svm = world.wait_ready("proto", READY_WITHIN).await;
    let svm_name = svm.status.unwrap().svm_name.unwrap();
    let enabled = |protocol: &str| {
        let state = world.state();
        let svm = state["svms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == svm_name.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{svm_name} not in ONTAP: {state}"));
        svm[protocol]["enabled"] == true
    };
    assert!(enabled("nfs") && !enabled("nvme"));
    let policies = || {
        let state = world.state();
        let mut by_address: Vec<(String, String)> = state["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["svm"]["name"] == svm_name.as_str())
            .map(|i| {
                (
                    i["ip"]["address"].as_str().unwrap().to_string(),
                    i["service_policy"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        by_address.sort();
        by_address
    };
    let lif = |ip: &str, protocol: Option<&str>| {
        let mut lif = serde_json::json!({"ip": ip, "prefixLength": 24});
        if let Some(protocol) = protocol {
            lif["protocols"] = serde_json::json!([protocol]);
        }
        lif
    };
    // With two protocols each LIF names its own; with NVMe alone, the unnamed LIF serves it.
    let steps = [
        (
            (true, true),
            [
                lif("192.0.2.11", Some("nfs")),
                lif("192.0.2.12", Some("nvme")),
            ],
            "default-data-files",
        ),
        (
            (false, true),
            [lif("192.0.2.11", None), lif("192.0.2.12", Some("nvme"))],
            "default-data-nvme-tcp",
        ),
    ];
    for ((nfs, nvme), data_lifs, first_policy) in steps {
        let patch = serde_json::json!({"spec": {
            "protocols": {"nfs": nfs, "nvme": nvme}, "dataLifs": data_lifs}});
        world
            .svms()
            .patch(
                "proto",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .unwrap();
        world.wait_ready("proto", READY_WITHIN).await;
        assert_eq!(
            (enabled("nfs"), enabled("nvme")),
            (nfs, nvme),
            "ONTAP's protocols after asking for nfs={nfs} nvme={nvme}"
        );
        let policies = policies();
        let data: Vec<_> = policies
            .iter()
            .filter(|(address, _)| address != "192.0.2.10")
            .map(|(address, policy)| (address.as_str(), policy.as_str()))
            .collect();
        assert_eq!(
            data,
            [
                ("192.0.2.11", first_policy),
                ("192.0.2.12", "default-data-nvme-tcp")
            ],
            "data LIFs with nfs={nfs} nvme={nvme}"
        );
    }
    let requests = world.requests().await;
    // ONTAP (and the mock) refuse protocol fields in an SVM PATCH with a 400.
    let refused: Vec<_> = requests.iter().filter(|r| r["status"] == 400).collect();
    assert!(refused.is_empty(), "refused requests: {refused:?}");
    assert!(
        requests.iter().any(|r| r["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/api/protocols/nvme/services"))),
        "the NVMe service was never asked for"
    );
}

/// An SVM taken over with other protocols than it has (here one its previous object let go with
/// `Retain`, adopted by uuid from the same namespace): the protocols are switched on their
/// services, as ONTAP wants, and nothing is refused.
#[tokio::test]
async fn an_adopted_svm_whose_protocols_differ_is_switched_through_the_services() {
    let world = SvmWorld::start().await;
    let mut old = world.svm("old", 0).nfs().build();
    old.spec.svm_name = Some("adopted_proto".into());
    old.spec.deletion_policy = ontap_operator::api::DeletionPolicy::Retain;
    world
        .svms()
        .create(&Default::default(), &old)
        .await
        .unwrap();
    let uuid = world
        .wait_ready("old", READY_WITHIN)
        .await
        .status
        .unwrap()
        .uuid
        .unwrap();
    world
        .svms()
        .delete("old", &Default::default())
        .await
        .unwrap();
    world.wait_gone("old", READY_WITHIN).await;

    let mut new = world.svm_with(
        "new",
        0,
        &serde_json::json!({"svmName": "adopted_proto", "protocols": {"nfs": false, "nvme": true}}),
    );
    new["metadata"]["annotations"] =
        serde_json::json!({ontap_operator::api::ADOPT_SVM_UUID_ANNOTATION: uuid});
    world
        .svms()
        .create(&Default::default(), &serde_json::from_value(new).unwrap())
        .await
        .unwrap();
    world.wait_ready("new", READY_WITHIN).await;
    let state = world.state();
    let svms = state["svms"].as_array().unwrap();
    assert_eq!(svms.len(), 1, "adopted, not recreated: {state}");
    assert_eq!(svms[0]["uuid"], uuid.as_str());
    assert_eq!(
        (
            svms[0]["nfs"]["enabled"].clone(),
            svms[0]["nvme"]["enabled"].clone()
        ),
        (serde_json::json!(false), serde_json::json!(true)),
        "{state}"
    );
    let refused: Vec<_> = world
        .requests()
        .await
        .into_iter()
        .filter(|r| r["status"] == 400)
        .collect();
    assert!(refused.is_empty(), "refused requests: {refused:?}");
}
