//! Answers that follow NetApp's own material (netapp-ontap 9.19.1.0's schemas, ONTAP's REST
//! documentation, Trident's ONTAP driver); each test names its source. README.md, "Errors and
//! codes", lists what NetApp's material leaves open.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Mock, MockApi, error_code, fast_mock};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn lif(svm: &str, name: &str, ip: &str, policy: &str) -> Value {
    json!({
        "name": name,
        "svm": { "uuid": svm },
        "ip": { "address": ip, "netmask": "24" },
        "location": { "home_node": { "name": "node-01" }, "home_port": { "name": "e0d" } },
        "service_policy": { "name": policy },
    })
}

/// netapp-ontap `SvmNfs`/`SvmIscsi`/`SvmNvme`: `enabled` is postable, not patchable; ONTAP's
/// generic code for such a field is 262196 "Field cannot be set in this operation".
#[tokio::test]
async fn svm_protocol_enabled_is_not_patchable() {
    let mock = Mock::start(fast_mock()).await;
    let uuid = mock.create_svm("noproto").await;
    for protocol in ["nfs", "iscsi", "nvme"] {
        let (status, body) = mock
            .call(
                Method::PATCH,
                &format!("/api/svm/svms/{uuid}"),
                Some(json!({ protocol: { "enabled": true } })),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error_code(&body), "262196");
        let target = format!("{protocol}.enabled");
        assert_eq!(body["error"]["target"], target.as_str());
        assert_eq!(
            body["error"]["message"],
            format!("Field \"{target}\" cannot be set in this operation.")
        );
    }
    let state = mock.snapshot();
    assert!(state["jobs"].as_array().unwrap().len() == 1, "no PATCH job");
}

/// `/api/protocols/{nfs,san/iscsi,nvme}/services`: POST with `svm.uuid`/`svm.name` (201), PATCH
/// `{"enabled"}` (200), GET collection and instance; the SVM's `<protocol>.enabled` follows.
#[tokio::test]
async fn protocols_are_switched_on_their_services() {
    let mock = Mock::start(fast_mock()).await;
    let uuid = mock.create_svm("proto").await;
    for (collection, svm_field) in [
        ("/api/protocols/nfs/services", "nfs"),
        ("/api/protocols/san/iscsi/services", "iscsi"),
        ("/api/protocols/nvme/services", "nvme"),
    ] {
        let instance = format!("{collection}/{uuid}");
        let (status, body) = mock.get(&instance).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "no service yet: {body}");
        let (status, body) = mock
            .call(Method::PATCH, &instance, Some(json!({ "enabled": true })))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

        let (status, body) = mock
            .post(
                collection,
                json!({ "svm": { "name": "proto" }, "enabled": true }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (_, svm) = mock
            .get(&format!("/api/svm/svms/{uuid}?fields={svm_field}"))
            .await;
        assert_eq!(svm[svm_field]["enabled"], true);
        let (status, body) = mock
            .post(collection, json!({ "svm": { "uuid": uuid } }))
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");

        let (status, body) = mock
            .call(Method::PATCH, &instance, Some(json!({ "enabled": false })))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (_, one) = mock.get(&instance).await;
        assert_eq!(one["enabled"], false);
        assert_eq!(one["svm"]["uuid"], uuid.as_str());
        let (_, svm) = mock.get(&format!("/api/svm/svms/{uuid}")).await;
        assert_eq!(svm[svm_field]["enabled"], false);

        let (_, list) = mock
            .get(&format!("{collection}?svm.uuid={uuid}&fields=enabled"))
            .await;
        assert_eq!(list["num_records"], 1);
        assert_eq!(list["records"][0]["enabled"], false);
        assert_eq!(list["records"][0]["svm"]["name"], "proto");
    }
}

/// An SVM created with `nfs.enabled: true` has its NFS service, enabled.
#[tokio::test]
async fn svm_create_with_a_protocol_creates_its_service() {
    let mock = Mock::start(fast_mock()).await;
    let (_, body) = mock
        .post(
            "/api/svm/svms?return_records=true",
            json!({ "name": "withnfs", "nfs": { "enabled": true },
                    "dns": { "domains": ["example.com"], "servers": ["192.0.2.53"] } }),
        )
        .await;
    let uuid = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    let (status, nfs) = mock
        .get(&format!("/api/protocols/nfs/services/{uuid}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(nfs["enabled"], true);
    let (status, _) = mock
        .get(&format!("/api/protocols/san/iscsi/services/{uuid}"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, svm) = mock
        .get(&format!("/api/svm/svms/{uuid}?fields=dns,iscsi"))
        .await;
    assert_eq!(
        svm["dns"],
        json!({ "domains": ["example.com"], "servers": ["192.0.2.53"] })
    );
    assert_eq!(svm["iscsi"]["enabled"], false);
}

/// netapp-ontap `IpInterface.services` (read-only), derived from the service policy; Trident
/// lists `?services=data_nvme_tcp|data_nfs|data_iscsi&svm.uuid=…` and fails on an empty answer.
#[tokio::test]
async fn interfaces_report_and_filter_by_their_services() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("svc").await;
    for (name, ip, policy) in [
        ("nas", "10.9.0.1", "default-data-files"),
        ("san", "10.9.0.2", "default-data-blocks"),
        ("nvme", "10.9.0.3", "default-data-nvme-tcp"),
    ] {
        let (status, body) = mock
            .post("/api/network/ip/interfaces", lif(&svm, name, ip, policy))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (_, nas) = mock
        .get(&format!(
            "/api/network/ip/interfaces?svm.uuid={svm}&name=nas&fields=services"
        ))
        .await;
    assert_eq!(
        nas["records"][0]["services"],
        json!(["data_core", "data_nfs", "data_cifs", "data_flexcache"])
    );
    for (service, expected) in [
        ("data_nfs", "nas"),
        ("data_iscsi", "san"),
        ("data_nvme_tcp", "nvme"),
    ] {
        let (status, list) = mock
            .get(&format!(
                "/api/network/ip/interfaces?services={service}&svm.uuid={svm}&fields=ip.address"
            ))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(list["num_records"], 1, "{service}: {list}");
        assert_eq!(list["records"][0]["name"], expected);
    }
    let (_, all) = mock
        .get(&format!(
            "/api/network/ip/interfaces?services=data_core&svm.uuid={svm}"
        ))
        .await;
    assert_eq!(all["num_records"], 3);
}

/// ONTAP's generic codes: 262197 for an unknown `fields=` name, 262179 `Unexpected argument`
/// for an unknown query parameter. Real ONTAP fields the mock does not model are accepted.
#[tokio::test]
async fn unknown_fields_and_filters_are_refused() {
    let mock = Mock::start(fast_mock()).await;
    mock.create_svm("q").await;
    let (status, body) = mock.get("/api/svm/svms?fields=name,bogus").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "262197");
    assert_eq!(body["error"]["target"], "fields");
    let (status, body) = mock.get("/api/svm/svms?fields=ipspace.nmae").await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a typo below a modelled field"
    );
    assert_eq!(error_code(&body), "262197");

    let (status, body) = mock.get("/api/svm/svms?nmae=q").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "262179");
    assert_eq!(body["error"]["message"], "Unexpected argument \"nmae\".");

    let (status, body) = mock.get("/api/svm/svms?fields=max_volumes").await;
    assert_eq!(status, StatusCode::OK, "real ONTAP field: {body}");
    let (status, body) = mock
        .get("/api/storage/aggregates?fields=block_storage.primary.disk_type")
        .await;
    assert_eq!(status, StatusCode::OK, "Trident asks for it: {body}");

    let (status, body) = mock.get("/api/cluster?fields=versoin").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = mock.get("/api/cluster?name=x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no filters on an instance");
    assert_eq!(error_code(&body), "262179");
}

/// netapp-ontap `Aggregate.volume_count` has `data_key="volume-count"`.
#[tokio::test]
async fn aggregates_spell_volume_count_with_a_hyphen() {
    let mock = Mock::start(fast_mock()).await;
    let (status, body) = mock
        .get("/api/storage/aggregates?fields=volume-count")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["records"][0]["volume-count"], 0);
    let (status, _) = mock
        .get("/api/storage/aggregates?fields=volume_count")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// ONTAP's interface codes: 1967146/1967147 for an unknown `svm.name`/`svm.uuid` (the codes
/// NetApp documents for them), 1966269 for a prefix length out of range.
#[tokio::test]
async fn interface_create_codes() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("codes").await;
    let mut body = lif(&svm, "x", "10.8.0.1", "default-data-files");
    body["svm"] = json!({ "name": "nosuch" });
    let (status, answer) = mock.post("/api/network/ip/interfaces", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(error_code(&answer), "1967146");
    let mut body = lif(&svm, "x", "10.8.0.1", "default-data-files");
    body["svm"] = json!({ "uuid": "00000000-0000-4000-8000-000000000000" });
    let (_, answer) = mock.post("/api/network/ip/interfaces", body).await;
    assert_eq!(error_code(&answer), "1967147");
    let mut body = lif(&svm, "x", "10.8.0.1", "default-data-files");
    body["ip"]["netmask"] = json!("33");
    let (status, answer) = mock.post("/api/network/ip/interfaces", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&answer), "1966269");
    assert_eq!(answer["error"]["target"], "ip.netmask");
}

/// `location.broadcast_domain` on POST (ONTAP then picks the port); PATCH of `enabled`, `ip`,
/// `location`, `service_policy` and `name` (netapp-ontap's patchable fields); `svm` and `vip`
/// are readable, not patchable (262196).
#[tokio::test]
async fn interfaces_are_placed_by_broadcast_domain_and_patched() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("lifs").await;
    let (status, body) = mock
        .post(
            "/api/network/ip/interfaces?return_records=true",
            json!({ "name": "bd", "svm": { "name": "lifs" },
                    "ip": { "address": "10.7.0.1", "netmask": "24" },
                    "location": { "broadcast_domain": { "name": "Default" },
                                  "home_node": { "name": "node-02" } } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let uuid = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    let path = format!("/api/network/ip/interfaces/{uuid}");
    let (_, one) = mock.get(&path).await;
    assert_eq!(one["location"]["home_node"]["name"], "node-02");
    assert_eq!(one["location"]["home_port"]["name"], "e0c");
    assert_eq!(one["location"]["broadcast_domain"]["name"], "Default");

    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({
                "name": "bd2", "enabled": false,
                "ip": { "address": "10.7.0.2", "netmask": "16" },
                "location": { "home_node": { "name": "node-01" }, "home_port": { "name": "e0d" } },
                "service_policy": { "name": "default-data-blocks" },
            })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, one) = mock.get(&path).await;
    assert_eq!(one["name"], "bd2");
    assert_eq!(one["enabled"], false);
    assert_eq!(one["state"], "down");
    assert_eq!(one["ip"]["address"], "10.7.0.2");
    assert_eq!(one["ip"]["netmask"], "16");
    assert_eq!(one["location"]["home_port"]["name"], "e0d");
    assert_eq!(one["services"], json!(["data_core", "data_iscsi"]));
    let (_, by_ip) = mock
        .get("/api/network/ip/interfaces?ip.address=10.7.0.2")
        .await;
    assert_eq!(by_ip["num_records"], 1, "the address index follows");

    mock.post(
        "/api/network/ip/interfaces",
        lif(&svm, "other", "10.7.0.9", "default-data-files"),
    )
    .await;
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "ip": { "address": "10.7.0.9" } })),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "1376963");
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "location": { "home_port": { "name": "e7x" } } })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "1967130");
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "svm": { "name": "x" } })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "262196");
}

/// Setting the current password again is 7077925; one of the recent ones 7077924.
#[tokio::test]
async fn current_and_recent_passwords() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("pwd").await;
    mock.create_account(&svm, "ops", "First1234x").await;
    let path = format!("/api/security/accounts/{svm}/ops");
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "password": "First1234x" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "7077925");
    mock.call(
        Method::PATCH,
        &path,
        Some(json!({ "password": "Second1234x" })),
    )
    .await;
    let (_, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "password": "First1234x" })),
        )
        .await;
    assert_eq!(error_code(&body), "7077924");
}

/// Trident at backend start-up: `GET /api/svm/peers?svm.uuid=…&fields=peer.svm.name`
/// (`IsSVMDRCapable`) and `POST /api/support/ems/application-logs` (its heartbeat).
#[tokio::test]
async fn svm_peers_and_ems_application_logs() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("peers").await;
    let (status, body) = mock
        .get(&format!(
            "/api/svm/peers?svm.uuid={svm}&fields=peer.svm.name"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["num_records"], 0);
    assert_eq!(body["records"], json!([]));

    let log = json!({
        "computer_name": "node-a", "event_source": "trident", "app_version": "25.06",
        "event_id": 1, "category": "heartbeat", "event_description": "{}",
        "severity": "notice", "autosupport_required": false,
    });
    let (status, body) = mock
        .post("/api/support/ems/application-logs", log.clone())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let state = mock.snapshot();
    assert_eq!(state["ems_application_logs"], json!([log]));
    let (status, body) = mock
        .post(
            "/api/support/ems/application-logs",
            json!({ "severity": "loud" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}
