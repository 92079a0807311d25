//! The SVM boundary on the volume path: an SVM account sees and changes only its own SVM's
//! volumes, export policies, namespaces, LUNs and their SAN objects; another SVM's answer 404
//! as if absent. Plus the error codes of the path and the cluster probe Trident sends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Mock, MockApi, error_code, fast_mock, read};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PW: &str = "Tenant123x";

async fn as_user(
    mock: &Mock,
    user: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = mock
        .http
        .request(method, mock.url(path))
        .basic_auth(user, Some(PW));
    if let Some(body) = body {
        req = req.json(&body);
    }
    read(req.send().await.unwrap()).await
}

/// Two SVMs with iSCSI, each with its account (`a-admin`, `b-admin`) and one volume holding a
/// LUN; returns (svm A, svm B, B's volume uuid, B's LUN uuid).
async fn two_tenants(mock: &Mock) -> (String, String, String, String) {
    let mut svms = Vec::new();
    for (name, user) in [("svm_a", "a-admin"), ("svm_b", "b-admin")] {
        let (status, body) = mock
            .post(
                "/api/svm/svms?return_records=true",
                json!({ "name": name, "iscsi": { "enabled": true } }),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
        let uuid = body["records"][0]["uuid"].as_str().unwrap().to_owned();
        mock.create_account(&uuid, user, PW).await;
        svms.push(uuid);
    }
    let (status, body) = as_user(
        mock,
        "b-admin",
        Method::POST,
        "/api/storage/volumes?return_records=true",
        Some(json!({ "name": "vol_b", "svm": { "uuid": svms[1] },
            "aggregates": [{ "name": "aggr1_node01" }], "size": 1_073_741_824u64 })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let job = mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    assert_eq!(job["state"], "success", "{job}");
    let volume = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    let (status, body) = as_user(
        mock,
        "b-admin",
        Method::POST,
        "/api/storage/luns?return_records=true",
        Some(json!({ "name": "/vol/vol_b/lun0", "os_type": "linux",
            "space": { "size": 1_048_576 } })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let lun = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    (svms.remove(0), svms.remove(0), volume, lun)
}

#[tokio::test]
async fn an_svm_account_cannot_see_or_touch_another_svms_storage() {
    let mock = Mock::start(fast_mock()).await;
    let (svm_a, svm_b, volume_b, lun_b) = two_tenants(&mock).await;

    for path in [
        "/api/storage/volumes",
        "/api/storage/luns",
        "/api/protocols/san/iscsi/credentials",
    ] {
        let (_, own) = as_user(&mock, "a-admin", Method::GET, path, None).await;
        assert!(
            own["records"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["svm"]["uuid"].as_str().is_none_or(|u| u == svm_a)),
            "{path}: {own}"
        );
    }
    let (_, volumes) = as_user(&mock, "a-admin", Method::GET, "/api/storage/volumes", None).await;
    assert_eq!(volumes["num_records"], 0);
    let (_, policies) = as_user(
        &mock,
        "a-admin",
        Method::GET,
        "/api/protocols/nfs/export-policies?fields=svm",
        None,
    )
    .await;
    assert_eq!(
        policies["num_records"], 1,
        "only its own default: {policies}"
    );
    assert_eq!(policies["records"][0]["svm"]["uuid"], svm_a.as_str());

    let volume_path = format!("/api/storage/volumes/{volume_b}");
    let lun_path = format!("/api/storage/luns/{lun_b}");
    for (method, path, body) in [
        (Method::GET, volume_path.clone(), None),
        (
            Method::PATCH,
            volume_path.clone(),
            Some(json!({ "size": 2_147_483_648u64 })),
        ),
        (Method::DELETE, volume_path.clone(), None),
        (Method::GET, format!("{volume_path}/snapshots"), None),
        (
            Method::POST,
            format!("{volume_path}/snapshots"),
            Some(json!({ "name": "s" })),
        ),
        (Method::GET, lun_path.clone(), None),
        (
            Method::PATCH,
            lun_path.clone(),
            Some(json!({ "space": { "size": 2_097_152 } })),
        ),
        (Method::DELETE, lun_path.clone(), None),
    ] {
        let (status, body) = as_user(&mock, "a-admin", method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert_eq!(error_code(&body), "4", "{body}");
    }

    // Creating in the other SVM: it does not exist for this account.
    let (status, body) = as_user(
        &mock,
        "a-admin",
        Method::POST,
        "/api/storage/volumes",
        Some(json!({ "name": "intruder", "svm": { "uuid": svm_b },
            "aggregates": [{ "name": "aggr1_node01" }] })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "2621462");
    let (status, body) = as_user(
        &mock,
        "a-admin",
        Method::POST,
        "/api/protocols/nfs/export-policies",
        Some(json!({ "name": "p", "svm": { "name": "svm_b" } })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "2621462");
    // A LUN path names a volume of the account's own SVM only.
    let (status, body) = as_user(
        &mock,
        "a-admin",
        Method::POST,
        "/api/storage/luns",
        Some(json!({ "name": "/vol/vol_b/lun1", "os_type": "linux",
            "space": { "size": 1_048_576 } })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // Nothing of B changed.
    let (status, volume) = mock.get(&format!("{volume_path}?fields=size")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(volume["size"], 1_073_741_824u64);
}

#[tokio::test]
async fn error_codes_of_the_volume_path() {
    let mock = Mock::start(fast_mock()).await;
    let (_, svm_b, volume_b, lun_b) = two_tenants(&mock).await;

    let (status, body) = as_user(
        &mock,
        "b-admin",
        Method::POST,
        "/api/storage/volumes",
        Some(json!({ "name": "vol_b", "aggregates": [{ "name": "aggr1_node01" }] })),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "1"),
        "{body}"
    );
    let (status, body) = as_user(
        &mock,
        "b-admin",
        Method::POST,
        "/api/storage/volumes",
        Some(json!({ "name": "no_aggr" })),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "2"),
        "{body}"
    );

    // An SVM with volumes cannot be deleted.
    let (status, body) = mock
        .call(Method::DELETE, &format!("/api/svm/svms/{svm_b}"), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "2621525");

    // LUN maps: NetApp's documented codes for deleting an absent map.
    let (status, body) = as_user(
        &mock,
        "b-admin",
        Method::POST,
        "/api/protocols/san/igroups?return_records=true",
        Some(json!({ "name": "ig", "os_type": "linux", "protocol": "iscsi" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let igroup = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    let map = format!("/api/protocols/san/lun-maps/{lun_b}/{igroup}");
    let (status, body) = as_user(&mock, "b-admin", Method::DELETE, &map, None).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "5374922"),
        "{body}"
    );
    let (status, body) = as_user(
        &mock,
        "b-admin",
        Method::POST,
        "/api/protocols/san/lun-maps",
        Some(json!({ "lun": { "uuid": lun_b }, "igroup": { "name": "ig" } })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // A mapped LUN is not deleted unless the caller allows it.
    let lun_path = format!("/api/storage/luns/{lun_b}");
    let (status, _) = as_user(&mock, "b-admin", Method::DELETE, &lun_path, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = as_user(&mock, "b-admin", Method::DELETE, &map, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = as_user(&mock, "b-admin", Method::DELETE, &lun_path, None).await;
    assert_eq!(status, StatusCode::OK);

    // The volume goes with a job; then the SVM may go.
    let (status, body) = as_user(
        &mock,
        "b-admin",
        Method::DELETE,
        &format!("/api/storage/volumes/{volume_b}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    let (status, body) = mock
        .call(Method::DELETE, &format!("/api/svm/svms/{svm_b}"), None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

#[tokio::test]
async fn cluster_probe_with_ignore_unknown_fields_as_an_svm_account() {
    let mock = Mock::start(fast_mock()).await;
    two_tenants(&mock).await;
    let (status, body) = as_user(
        &mock,
        "a-admin",
        Method::GET,
        "/api/cluster?fields=san_optimized,disaggregated&ignore_unknown_fields=true",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = as_user(
        &mock,
        "a-admin",
        Method::GET,
        "/api/storage/volumes?fields=nonsense&ignore_unknown_fields=true",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = mock.get("/api/cluster?fields=nonsense").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "262197")
    );
}

/// B maps its LUN to its igroup `ig_b`; returns the igroup's uuid.
async fn map_b(mock: &Mock, lun_b: &str) -> String {
    let (status, body) = as_user(
        mock,
        "b-admin",
        Method::POST,
        "/api/protocols/san/igroups?return_records=true",
        Some(json!({ "name": "ig_b", "os_type": "linux", "protocol": "iscsi" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let igroup = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    let (status, body) = as_user(
        mock,
        "b-admin",
        Method::POST,
        "/api/protocols/san/lun-maps?return_records=true",
        Some(json!({ "lun": { "uuid": lun_b }, "igroup": { "uuid": igroup } })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["num_records"], 1);
    assert_eq!(body["records"][0]["logical_unit_number"], 0);
    igroup
}

#[tokio::test]
async fn lun_attributes_and_reporting_nodes_stop_at_the_svm_boundary() {
    let mock = Mock::start(fast_mock()).await;
    let (_, _, _, lun_b) = two_tenants(&mock).await;
    let igroup_b = map_b(&mock, &lun_b).await;

    // B's own account: attributes and reporting nodes of its own LUN and map.
    let attributes = format!("/api/storage/luns/{lun_b}/attributes");
    let (status, body) = as_user(
        &mock,
        "b-admin",
        Method::POST,
        &attributes,
        Some(json!({ "name": "com.netapp.ndvp.fstype", "value": "ext4" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let one = format!("{attributes}/com.netapp.ndvp.fstype");
    let nodes = format!("/api/protocols/san/lun-maps/{lun_b}/{igroup_b}/reporting-nodes");
    let (status, body) = as_user(&mock, "b-admin", Method::GET, &nodes, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["num_records"], 2,
        "the owner of aggr1_node01 and its partner: {body}"
    );

    // A's account: B's LUN does not exist for it, with the codes NetApp documents.
    for (method, path, body) in [
        (Method::GET, attributes.clone(), None),
        (
            Method::POST,
            attributes.clone(),
            Some(json!({ "name": "x", "value": "y" })),
        ),
        (Method::GET, one.clone(), None),
        (Method::PATCH, one.clone(), Some(json!({ "value": "xfs" }))),
        (Method::DELETE, one.clone(), None),
        (Method::GET, nodes.clone(), None),
    ] {
        let (status, answer) = as_user(&mock, "a-admin", method.clone(), &path, body).await;
        assert_eq!(
            (status, error_code(&answer)),
            (StatusCode::NOT_FOUND, "5374875"),
            "{method} {path}: {answer}"
        );
    }
    // Nothing of B changed.
    let (status, body) = mock.get(&one).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["value"], "ext4");

    // A's own LUN with B's igroup: the igroup is not A's (5374878); an unmapped pair of its
    // own is 5374922, which Trident reads as "no reporting nodes".
    let (status, body) = as_user(
        &mock,
        "a-admin",
        Method::POST,
        "/api/storage/volumes?return_records=true",
        Some(json!({ "name": "vol_a", "aggregates": [{ "name": "aggr1_node02" }] })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    let (_, body) = as_user(
        &mock,
        "a-admin",
        Method::POST,
        "/api/storage/luns?return_records=true",
        Some(json!({ "name": "/vol/vol_a/lun0", "os_type": "linux",
            "space": { "size": 1_048_576 } })),
    )
    .await;
    let lun_a = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    let crossed = format!("/api/protocols/san/lun-maps/{lun_a}/{igroup_b}/reporting-nodes");
    let (status, body) = as_user(&mock, "a-admin", Method::GET, &crossed, None).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "5374878"),
        "{body}"
    );
    let (_, body) = as_user(
        &mock,
        "a-admin",
        Method::POST,
        "/api/protocols/san/igroups?return_records=true",
        Some(json!({ "name": "ig_a", "os_type": "linux", "protocol": "iscsi" })),
    )
    .await;
    let igroup_a = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    let unmapped = format!("/api/protocols/san/lun-maps/{lun_a}/{igroup_a}/reporting-nodes");
    let (status, body) = as_user(&mock, "a-admin", Method::GET, &unmapped, None).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "5374922"),
        "{body}"
    );
}

#[tokio::test]
async fn snapmirror_relationships_are_an_empty_list_for_every_account() {
    let mock = Mock::start(fast_mock()).await;
    two_tenants(&mock).await;
    for user in ["a-admin", "b-admin"] {
        for query in [
            "fields=source.path,destination.path&list_destinations_only=true",
            "fields=destination.path,source.path",
        ] {
            let path = format!("/api/snapmirror/relationships?{query}");
            let (status, body) = as_user(&mock, user, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{user} {path}: {body}");
            assert_eq!(body["num_records"], 0, "{body}");
        }
    }
    let (status, body) = mock
        .get("/api/snapmirror/relationships?list_destinations_only=maybe")
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "262197")
    );
    let (status, body) = mock.get("/api/snapmirror/relationships?bogus=1").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "262179")
    );
}
