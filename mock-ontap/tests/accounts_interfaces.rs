//! Contract tests for accounts, SVM-scoped authentication and IP interfaces.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Mock, MockApi, error_code, fast_mock};
use reqwest::{Method, StatusCode};
use serde_json::json;

fn account(svm_uuid: &str, name: &str, password: &str) -> serde_json::Value {
    json!({
        "name": name,
        "owner": { "uuid": svm_uuid },
        "role": { "name": "vsadmin" },
        "applications": [{ "application": "http", "authentication_methods": ["password"] }],
        "password": password,
    })
}

#[tokio::test]
async fn account_lifecycle_and_shapes() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("acc").await;
    let resp = mock
        .admin(Method::POST, "/api/security/accounts")
        .json(&account(&svm, "ops", "Password123"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(
        resp.headers()["location"],
        format!("/api/security/accounts/{svm}/ops").as_str()
    );

    let (status, body) = mock
        .post(
            "/api/security/accounts",
            account(&svm, "ops", "Password456"),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "1");

    let (_, list) = mock
        .get(&format!("/api/security/accounts?owner.uuid={svm}&name=ops"))
        .await;
    assert_eq!(list["num_records"], 1);
    assert_eq!(list["records"][0]["owner"]["uuid"], svm.as_str());
    assert_eq!(list["records"][0]["owner"]["name"], "acc");

    let path = format!("/api/security/accounts/{svm}/ops");
    let (status, one) = mock.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["role"]["name"], "vsadmin");
    assert_eq!(one["applications"][0]["application"], "http");
    assert_eq!(one["locked"], false);
    assert!(one.get("password").is_none());

    let (status, _) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "password": "Changed789x" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = mock.as_user("ops", "Password123", "/api/cluster").await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "old password no longer works"
    );
    let (status, _) = mock.as_user("ops", "Changed789x", "/api/cluster").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "password": "Password123" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "recently used");
    assert_eq!(error_code(&body), "7077924");

    let (status, _) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = mock.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "4");
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "password": "Another123x" })),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "1261218");
    let (status, body) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "4");
}

#[tokio::test]
async fn new_svms_have_a_locked_vsadmin_account() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("builtin").await;
    let (status, vsadmin) = mock
        .get(&format!("/api/security/accounts/{svm}/vsadmin"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        vsadmin.get("locked").is_none(),
        "ONTAP omits `locked` for an account without a password: {vsadmin}"
    );
    let (status, body) = mock
        .post(
            "/api/security/accounts",
            account(&svm, "vsadmin", "Password123"),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "1");
    let path = format!("/api/security/accounts/{svm}/vsadmin");
    // The lock state of an account without a password cannot change, not even in the PATCH
    // that sets the password: first the password, then the lock state.
    for body in [
        json!({ "locked": false }),
        json!({ "password": "Unlocked123", "locked": false }),
    ] {
        let (status, refused) = mock.call(Method::PATCH, &path, Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(refused["error"]["target"], "locked");
    }
    let (status, _) = mock
        .as_user("vsadmin", "Unlocked123", "/api/svm/svms")
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "nothing was applied");
    let (status, _) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "password": "Unlocked123" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, vsadmin) = mock.get(&path).await;
    assert_eq!(
        vsadmin["locked"], true,
        "a password makes the lock state visible"
    );
    let (status, _) = mock
        .as_user("vsadmin", "Unlocked123", "/api/svm/svms")
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "still locked");
    let (status, _) = mock
        .call(Method::PATCH, &path, Some(json!({ "locked": false })))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = mock
        .as_user("vsadmin", "Unlocked123", "/api/svm/svms")
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn password_rules() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("pw").await;
    let too_long = format!("a1{}", "b".repeat(127));
    let cases = [
        ("short1", "7077919"),
        ("lettersonly", "7077920"),
        ("123456789", "7077920"),
        ("xxbobuser1xx", "7077918"),
        (too_long.as_str(), "7077940"),
    ];
    for (password, code) in cases {
        let (status, body) = mock
            .post("/api/security/accounts", account(&svm, "bobuser", password))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{password}: {body}");
        assert_eq!(error_code(&body), code, "{password}");
    }
    let (status, body) = mock
        .post(
            "/api/security/accounts",
            account(&svm, "bobuser", &format!("a1{}", "b".repeat(126))),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "128 characters are fine: {body}"
    );

    let (status, body) = mock
        .post(
            "/api/security/accounts",
            account(&svm, "bad name!", "Password123"),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "7077897");
    let (status, body) = mock
        .post(
            "/api/security/accounts",
            account("no-such-svm", "someone", "Password123"),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = mock
        .post(
            "/api/security/accounts",
            json!({ "name": "x1x", "owner": { "uuid": svm }, "password": "Password123", "shell": "bash" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "262179");
}

#[tokio::test]
async fn svm_account_sees_only_its_own_svm() {
    let mock = Mock::start(fast_mock()).await;
    let mine = mock.create_svm("mine").await;
    let other = mock.create_svm("other").await;
    mock.create_account(&mine, "tenant", "Mine12345abc").await;
    mock.create_account(&other, "tenant", "Other12345x").await;

    let (status, list) = mock
        .as_user("tenant", "Mine12345abc", "/api/svm/svms")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["num_records"], 1);
    assert_eq!(list["records"][0]["uuid"], mine.as_str());
    let (status, list) = mock
        .as_user("tenant", "Mine12345abc", "/api/svm/svms?name=mine")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["num_records"], 1);
    let (_, list) = mock
        .as_user("tenant", "Mine12345abc", "/api/svm/svms?name=other")
        .await;
    assert_eq!(list["num_records"], 0);
    let (status, body) = mock
        .as_user("tenant", "Mine12345abc", &format!("/api/svm/svms/{other}"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "4");

    // The same user name in the other SVM is a different account with its own password.
    let (_, list) = mock.as_user("tenant", "Other12345x", "/api/svm/svms").await;
    assert_eq!(list["records"][0]["uuid"], other.as_str());

    let (_, accounts) = mock
        .as_user(
            "tenant",
            "Mine12345abc",
            "/api/security/accounts?fields=owner",
        )
        .await;
    assert!(
        accounts["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["owner"]["uuid"] == mine.as_str())
    );
    let (status, _) = mock.as_user("tenant", "Mine12345abc", "/api/cluster").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = mock
        .as_user("tenant", "Mine12345abc", "/api/cluster/nodes")
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let (status, body) = mock.as_user("tenant", "wrong-pass1", "/api/svm/svms").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"].is_string());

    let resp = mock
        .http
        .post(mock.url("/api/svm/svms"))
        .basic_auth("tenant", Some("Mine12345abc"))
        .json(&json!({ "name": "sneaky" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn locked_accounts_cannot_log_in() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("lk").await;
    mock.create_account(&svm, "locky", "Locked12345").await;
    let path = format!("/api/security/accounts/{svm}/locky");
    mock.call(Method::PATCH, &path, Some(json!({ "locked": true })))
        .await;
    let (status, _) = mock.as_user("locky", "Locked12345", "/api/cluster").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

fn lif(svm: &str, name: &str, ip: &str) -> serde_json::Value {
    json!({
        "name": name,
        "svm": { "uuid": svm },
        "ip": { "address": ip, "netmask": "24" },
        "location": { "home_node": { "name": "node-01" }, "home_port": { "name": "e0d" } },
        "service_policy": { "name": "default-data-nvme-tcp" },
    })
}

#[tokio::test]
async fn interface_lifecycle_and_errors() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("net").await;
    let other = mock.create_svm("net2").await;
    let resp = mock
        .admin(
            Method::POST,
            "/api/network/ip/interfaces?return_records=true",
        )
        .json(&lif(&svm, "lif1", "10.0.0.1"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    let (_, body) = common::read(resp).await;
    let uuid = body["records"][0]["uuid"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/api/network/ip/interfaces/{uuid}"));

    let (status, body) = mock
        .post(
            "/api/network/ip/interfaces",
            lif(&other, "lif9", "10.0.0.1"),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "1376963");
    let (status, body) = mock
        .post("/api/network/ip/interfaces", lif(&svm, "lif1", "10.0.0.2"))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "1966140");

    // By SVM name and node uuid, default port and policy.
    let (_, nodes) = mock.get("/api/cluster/nodes?name=node-02").await;
    let node2 = nodes["records"][0]["uuid"].as_str().unwrap();
    let (status, body) = mock
        .post(
            "/api/network/ip/interfaces",
            json!({ "name": "lif1", "svm": { "name": "net2" }, "ip": { "address": "10.0.0.3", "netmask": "255.255.255.0" },
                    "location": { "home_node": { "uuid": node2 } } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let (_, list) = mock
        .get(&format!(
            "/api/network/ip/interfaces?svm.uuid={svm}&fields=name,ip.address,ip.netmask,location"
        ))
        .await;
    assert_eq!(list["num_records"], 1);
    let rec = &list["records"][0];
    assert_eq!(rec["ip"]["address"], "10.0.0.1");
    assert_eq!(rec["ip"]["netmask"], "24");
    assert_eq!(rec["location"]["home_node"]["name"], "node-01");
    assert_eq!(rec["location"]["home_port"]["name"], "e0d");
    assert!(rec.get("service_policy").is_none());
    let (_, list) = mock
        .get("/api/network/ip/interfaces?svm.name=net2&fields=**")
        .await;
    assert_eq!(
        list["records"][0]["location"]["home_node"]["name"],
        "node-02"
    );
    assert_eq!(
        list["records"][0]["service_policy"]["name"],
        "default-data-files"
    );
    assert_eq!(list["records"][0]["svm"]["uuid"], other.as_str());
    let (_, list) = mock
        .get("/api/network/ip/interfaces?ip.address=10.0.0.3")
        .await;
    assert_eq!(list["num_records"], 1);

    let (status, body) = mock
        .post(
            "/api/network/ip/interfaces",
            json!({ "name": "bad", "svm": { "uuid": svm }, "ip": { "address": "10.0.0.9", "netmask": "24" },
                    "location": { "home_node": { "name": "node-01" }, "home_port": { "name": "e9z" } } }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_code(&body),
        "1967130",
        "a named home port that does not exist"
    );

    let path = format!("/api/network/ip/interfaces/{uuid}");
    let (status, one) = mock.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["service_policy"]["name"], "default-data-nvme-tcp");
    let (status, _) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = mock.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "4");
    let (status, _) = mock
        .post("/api/network/ip/interfaces", lif(&svm, "lif1", "10.0.0.1"))
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "name and address are free again"
    );
}

#[tokio::test]
async fn deleting_an_svm_removes_its_accounts_and_interfaces() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("gone").await;
    mock.create_account(&svm, "ops", "Password123").await;
    mock.post("/api/network/ip/interfaces", lif(&svm, "lif1", "10.1.0.1"))
        .await;
    let (_, body) = mock
        .call(Method::DELETE, &format!("/api/svm/svms/{svm}"), None)
        .await;
    mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    let state = mock.snapshot();
    assert_eq!(state["svms"], json!([]));
    assert_eq!(state["accounts"], json!([]));
    assert_eq!(state["interfaces"], json!([]));
}

#[tokio::test]
async fn an_account_cannot_be_renamed() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("ren").await;
    mock.create_account(&svm, "ops", "Password123").await;
    let path = format!("/api/security/accounts/{svm}/ops");
    let (status, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "name": "ops2" })))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "262179");
    assert_eq!(body["error"]["target"], "name");
    let (status, _) = mock.get(&path).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn passwords_never_reach_the_request_log_or_the_state() {
    use base64::Engine;
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("sec").await;
    let (first, second) = ("Zq9first8Wx", "Zq9second8Wx");
    mock.create_account(&svm, "ops", first).await;
    let (status, _) = mock.as_user("ops", first, "/api/cluster").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = mock
        .call(
            Method::PATCH,
            &format!("/api/security/accounts/{svm}/ops"),
            Some(json!({ "password": second })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = mock.as_user("ops", "wrong9Password", "/api/cluster").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let log = serde_json::to_string(&mock.requests(&[]).await).unwrap();
    let state = mock.snapshot().to_string();
    let admin = mock.server.admin();
    let basic = |user: &str, pw: &str| {
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    };
    for secret in [
        first.to_owned(),
        second.to_owned(),
        "wrong9Password".to_owned(),
        admin.password.clone(),
        basic("ops", first),
        basic(&admin.user, &admin.password),
    ] {
        assert!(!log.contains(&secret), "request log leaks {secret}");
        assert!(!state.contains(&secret), "state leaks {secret}");
    }
    assert!(log.contains("\"user\":\"ops\""), "{log}");
}

/// A BGP peer group as an admin makes one: a new BGP interface on a node's port, peering with
/// a router.
fn peer_group(name: &str, local_ip: &str) -> serde_json::Value {
    json!({
        "name": name,
        "ipspace": { "name": "Default" },
        "local": {
            "interface": { "name": format!("{name}_lif") },
            "ip": { "address": local_ip, "netmask": "24" },
            "port": { "name": "e0c", "node": { "name": "node-01" } },
        },
        "peer": { "address": "198.51.100.1", "asn": 65000 },
    })
}

#[tokio::test]
async fn bgp_peer_groups_are_listed_like_every_collection() {
    let mock = Mock::start(fast_mock()).await;
    let (status, empty) = mock.get("/api/network/ip/bgp/peer-groups").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(empty["num_records"], 0);
    assert_eq!(empty["records"], json!([]));

    let (status, _) = mock
        .post(
            "/api/network/ip/bgp/peer-groups",
            peer_group("pg1", "198.51.100.10"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = mock
        .post(
            "/api/network/ip/bgp/peer-groups",
            peer_group("pg1", "198.51.100.11"),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    mock.post(
        "/api/network/ip/bgp/peer-groups",
        peer_group("pg2", "198.51.100.12"),
    )
    .await;

    let (_, all) = mock
        .get("/api/network/ip/bgp/peer-groups?fields=name,peer,local,state")
        .await;
    assert_eq!(all["num_records"], 2);
    let first = &all["records"][0];
    assert_eq!(first["peer"]["address"], "198.51.100.1");
    assert_eq!(first["peer"]["asn"], 65000);
    assert_eq!(first["state"], "up");
    assert_eq!(first["local"]["port"]["node"]["name"], "node-01");
    let (_, page) = mock
        .get("/api/network/ip/bgp/peer-groups?max_records=1")
        .await;
    assert_eq!(page["num_records"], 1);
    assert!(page["_links"]["next"]["href"].is_string(), "{page}");

    let uuid = first["uuid"].as_str().unwrap();
    let path = format!("/api/network/ip/bgp/peer-groups/{uuid}");
    let (status, one) = mock.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["uuid"], uuid);
    let (status, _) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = mock.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = mock
        .post(
            "/api/network/ip/bgp/peer-groups",
            json!({ "name": "pg3", "peer": { "address": "198.51.100.1" } }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["target"], "local.ip.address");
}

#[tokio::test]
async fn vip_interfaces_need_bgp_a_host_mask_and_a_home_node() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("vips").await;
    let vip = |netmask: &str, location: serde_json::Value| {
        json!({
            "name": "vip1", "svm": { "uuid": svm },
            "ip": { "address": "203.0.113.5", "netmask": netmask },
            "location": location,
            "service_policy": { "name": "default-data-nvme-tcp" },
            "vip": true,
        })
    };
    let on_node = json!({ "home_node": { "name": "node-02" } });

    let (status, body) = mock
        .post("/api/network/ip/interfaces", vip("32", on_node.clone()))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no BGP peer group yet");
    assert_eq!(error_code(&body), "1967384");

    mock.post(
        "/api/network/ip/bgp/peer-groups",
        peer_group("pg1", "198.51.100.10"),
    )
    .await;
    let (status, body) = mock
        .post("/api/network/ip/interfaces", vip("24", on_node.clone()))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["target"], "ip.netmask");
    assert_eq!(error_code(&body), "1967385");
    let (status, body) = mock
        .post("/api/network/ip/interfaces", vip("32", json!({})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["target"], "location.home_node");
    let (status, body) = mock
        .post(
            "/api/network/ip/interfaces",
            vip(
                "32",
                json!({ "home_node": { "name": "node-02" }, "home_port": { "name": "e0c" } }),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["target"], "location.home_port");
    assert_eq!(error_code(&body), "1967383");

    let (status, body) = mock
        .post("/api/network/ip/interfaces", vip("32", on_node))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, list) = mock
        .get(&format!(
            "/api/network/ip/interfaces?svm.uuid={svm}&fields=vip,ip,location.home_node"
        ))
        .await;
    let record = &list["records"][0];
    assert_eq!(record["vip"], true);
    assert_eq!(record["ip"]["netmask"], "32");
    assert_eq!(record["location"]["home_node"]["name"], "node-02");

    let (status, _) = mock
        .post(
            "/api/network/ip/interfaces",
            json!({
                "name": "plain", "svm": { "uuid": svm },
                "ip": { "address": "192.0.2.9", "netmask": "24" },
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, plain) = mock
        .get(&format!(
            "/api/network/ip/interfaces?svm.uuid={svm}&name=plain&fields=vip"
        ))
        .await;
    assert_eq!(plain["records"][0]["vip"], false);
}
