//! Network placement as ONTAP documents it: VLAN ports and broadcast domains
//! (`/api/network/ethernet/{ports,broadcast-domains}`), interfaces placed by broadcast domain,
//! home port and service policy, and SVM routes (`/api/network/ip/routes`). Codes: NetApp's REST
//! reference tables for each endpoint (README, "Errors and codes").
#![allow(clippy::unwrap_used)]

mod common;

use common::{Mock, MockApi, error_code, fast_mock};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const PORTS: &str = "/api/network/ethernet/ports";
const DOMAINS: &str = "/api/network/ethernet/broadcast-domains";
const ROUTES: &str = "/api/network/ip/routes";
const INTERFACES: &str = "/api/network/ip/interfaces";

async fn created_uuid(mock: &Mock, path: &str, body: Value) -> String {
    let (status, answer) = mock
        .post(&format!("{path}?return_records=true"), body)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["records"][0]["uuid"].as_str().unwrap().to_owned()
}

fn vlan(node: &str, base: &str, tag: u64, domain: Option<&str>) -> Value {
    let mut body = json!({
        "type": "vlan",
        "node": { "name": node },
        "vlan": { "tag": tag, "base_port": { "name": base, "node": { "name": node } } },
    });
    if let Some(domain) = domain {
        body["broadcast_domain"] = json!({ "name": domain, "ipspace": { "name": "Default" } });
    }
    body
}

fn lif(svm: &str, name: &str, ip: &str, location: Value) -> Value {
    json!({
        "name": name,
        "svm": { "uuid": svm },
        "ip": { "address": ip, "netmask": "24" },
        "location": location,
        "service_policy": { "name": "default-data-files" },
    })
}

fn assert_refused(status: StatusCode, body: &Value, want: StatusCode, code: &str) {
    assert_eq!(status, want, "{body}");
    assert_eq!(error_code(body), code, "{body}");
}

/// A VLAN port created into a new broadcast domain hosts the interfaces placed in that domain;
/// the domain and the port cannot go while they hold something.
#[tokio::test]
async fn vlan_ports_in_a_broadcast_domain_host_interfaces() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("net1").await;
    let domain = created_uuid(
        &mock,
        DOMAINS,
        json!({ "name": "storage", "mtu": 9000, "ipspace": { "name": "Default" } }),
    )
    .await;
    let port = created_uuid(&mock, PORTS, vlan("node-02", "e0d", 100, Some("storage"))).await;

    let (_, listed) = mock
        .get(&format!(
            "{PORTS}?type=vlan&fields=name,node.name,vlan,broadcast_domain.name,mtu"
        ))
        .await;
    let records = listed["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{listed}");
    let record = &records[0];
    assert_eq!(record["uuid"], port.as_str());
    assert_eq!(
        record["name"], "e0d-100",
        "ONTAP names VLAN ports <base>-<tag>"
    );
    assert_eq!(record["vlan"]["tag"], 100);
    assert_eq!(record["vlan"]["base_port"]["name"], "e0d");
    assert_eq!(record["broadcast_domain"]["name"], "storage");
    assert_eq!(record["mtu"], 9000);
    let (_, one) = mock.get(&format!("{DOMAINS}/{domain}")).await;
    assert_eq!(one["ports"][0]["name"], "e0d-100", "{one}");

    // Placed by broadcast domain alone: ONTAP picks the domain's port.
    let by_domain = created_uuid(
        &mock,
        INTERFACES,
        lif(
            &svm,
            "d1",
            "10.1.0.1",
            json!({ "broadcast_domain": { "name": "storage" } }),
        ),
    )
    .await;
    let (_, placed) = mock
        .get(&format!("{INTERFACES}/{by_domain}?fields=location"))
        .await;
    assert_eq!(placed["location"]["home_node"]["name"], "node-02");
    assert_eq!(placed["location"]["home_port"]["name"], "e0d-100");
    assert_eq!(placed["location"]["home_port"]["uuid"], port.as_str());

    // A home port outside the named domain is 1966987; unknown names 1967136 / 1967130.
    let (status, body) = mock
        .post(
            INTERFACES,
            lif(
                &svm,
                "d2",
                "10.1.0.2",
                json!({ "home_node": { "name": "node-02" }, "home_port": { "name": "e0c" },
                        "broadcast_domain": { "name": "storage" } }),
            ),
        )
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "1966987");
    let (status, body) = mock
        .post(
            INTERFACES,
            lif(
                &svm,
                "d2",
                "10.1.0.2",
                json!({ "broadcast_domain": { "name": "nope" } }),
            ),
        )
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "1967136");
    assert_eq!(body["error"]["target"], "location.broadcast_domain.name");
    let (status, body) = mock
        .post(
            INTERFACES,
            lif(
                &svm,
                "d2",
                "10.1.0.2",
                json!({ "home_node": { "name": "node-01" }, "home_port": { "name": "e0d-100" } }),
            ),
        )
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "1967130");

    // Moving home onto the VLAN port by PATCH.
    let other = created_uuid(
        &mock,
        INTERFACES,
        lif(
            &svm,
            "d3",
            "10.1.0.3",
            json!({ "home_node": { "name": "node-01" } }),
        ),
    )
    .await;
    let (status, body) = mock
        .call(
            Method::PATCH,
            &format!("{INTERFACES}/{other}"),
            Some(json!({ "location": { "home_node": { "name": "node-02" },
                                       "home_port": { "name": "e0d-100" } } })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, moved) = mock
        .get(&format!("{INTERFACES}/{other}?fields=location.home_port"))
        .await;
    assert_eq!(moved["location"]["home_port"]["name"], "e0d-100");

    let (status, body) = mock
        .call(Method::DELETE, &format!("{DOMAINS}/{domain}"), None)
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "1967103");
    let (status, body) = mock
        .call(Method::DELETE, &format!("{PORTS}/{port}"), None)
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "1966189");

    for lif in [by_domain, other] {
        let (status, _) = mock
            .call(Method::DELETE, &format!("{INTERFACES}/{lif}"), None)
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, body) = mock
        .call(Method::DELETE, &format!("{PORTS}/{port}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = mock
        .call(Method::DELETE, &format!("{DOMAINS}/{domain}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, domains) = mock.get(&format!("{DOMAINS}?fields=name")).await;
    let names: Vec<&str> = domains["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Default"]);
}

/// `POST /network/ethernet/ports` refusals, with the codes of NetApp's table.
#[tokio::test]
async fn vlan_creation_is_checked() {
    let mock = Mock::start(fast_mock()).await;
    let cases = [
        (
            json!({ "type": "lag", "node": { "name": "node-01" } }),
            "1967083",
        ),
        (vlan("node-09", "e0c", 10, None), "1967085"),
        (vlan("node-01", "e9z", 10, None), "1967091"),
        (vlan("node-01", "e0c", 10, Some("nope")), "1967088"),
        (
            json!({ "type": "vlan", "node": { "name": "node-01" },
                    "vlan": { "tag": 10, "base_port": { "name": "e0c", "node": { "name": "node-02" } } } }),
            "1967092",
        ),
        (vlan("node-01", "e0c", 5000, None), "262197"),
    ];
    for (body, code) in cases {
        let (status, answer) = mock.post(PORTS, body.clone()).await;
        assert_refused(status, &answer, StatusCode::BAD_REQUEST, code);
    }
    created_uuid(&mock, PORTS, vlan("node-01", "e0c", 10, None)).await;
    let (status, answer) = mock.post(PORTS, vlan("node-01", "e0c", 10, None)).await;
    assert_refused(status, &answer, StatusCode::CONFLICT, "1");

    // A VLAN port in no broadcast domain hosts no interface (NetApp: until probing assigns one).
    let svm = mock.create_svm("net2").await;
    let (status, answer) = mock
        .post(
            INTERFACES,
            lif(
                &svm,
                "x",
                "10.2.0.1",
                json!({ "home_node": { "name": "node-01" }, "home_port": { "name": "e0c-10" } }),
            ),
        )
        .await;
    assert_refused(status, &answer, StatusCode::BAD_REQUEST, "1966987");

    let (_, physical) = mock
        .get(&format!("{PORTS}?name=e0c&node.name=node-01"))
        .await;
    let uuid = physical["records"][0]["uuid"].as_str().unwrap();
    let (status, answer) = mock
        .call(Method::DELETE, &format!("{PORTS}/{uuid}"), None)
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "physical ports stay: {answer}"
    );
}

/// An unknown service policy is 53281065 on POST and PATCH (ONTAP's interface tables).
#[tokio::test]
async fn unknown_service_policies_are_refused() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("net3").await;
    let mut body = lif(&svm, "p", "10.3.0.1", json!({}));
    body["service_policy"] = json!({ "name": "no-such-policy" });
    let (status, answer) = mock.post(INTERFACES, body).await;
    assert_refused(status, &answer, StatusCode::BAD_REQUEST, "53281065");
    let uuid = created_uuid(&mock, INTERFACES, lif(&svm, "p", "10.3.0.1", json!({}))).await;
    let (status, answer) = mock
        .call(
            Method::PATCH,
            &format!("{INTERFACES}/{uuid}"),
            Some(json!({ "service_policy": { "name": "no-such-policy" } })),
        )
        .await;
    assert_refused(status, &answer, StatusCode::BAD_REQUEST, "53281065");
    let (status, answer) = mock
        .call(
            Method::PATCH,
            &format!("{INTERFACES}/{uuid}"),
            Some(json!({ "service_policy": { "name": "default-data-blocks" } })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (_, record) = mock
        .get(&format!(
            "{INTERFACES}/{uuid}?fields=service_policy,services"
        ))
        .await;
    assert_eq!(record["service_policy"]["name"], "default-data-blocks");
    assert_eq!(record["services"], json!(["data_core", "data_iscsi"]));
}

/// SVM routes: defaults, duplicates, who sees them, and that they go with their SVM.
#[tokio::test]
async fn svm_routes() {
    let mock = Mock::start(fast_mock()).await;
    let a = mock.create_svm("route_a").await;
    let b = mock.create_svm("route_b").await;
    let default_route = created_uuid(
        &mock,
        ROUTES,
        json!({ "svm": { "name": "route_a" }, "gateway": "10.4.0.1" }),
    )
    .await;
    let (_, record) = mock.get(&format!("{ROUTES}/{default_route}")).await;
    assert_eq!(
        record["destination"],
        json!({ "address": "0.0.0.0", "netmask": "0", "family": "ipv4" })
    );
    assert_eq!(record["metric"], 20);
    assert_eq!(record["scope"], "svm");
    assert_eq!(record["svm"]["uuid"], a.as_str());
    created_uuid(
        &mock,
        ROUTES,
        json!({ "svm": { "uuid": b }, "gateway": "fd20::1",
                "destination": { "address": "fd30::", "netmask": "64" } }),
    )
    .await;

    let (status, body) = mock
        .post(
            ROUTES,
            json!({ "svm": { "uuid": a }, "gateway": "10.4.0.1",
                              "destination": { "address": "0.0.0.0", "netmask": "0" } }),
        )
        .await;
    assert_refused(status, &body, StatusCode::CONFLICT, "1966345");
    let (status, body) = mock
        .post(
            ROUTES,
            json!({ "svm": { "name": "nope" }, "gateway": "10.4.0.1" }),
        )
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "1967146");
    let (status, body) = mock
        .post(
            ROUTES,
            json!({ "svm": { "uuid": "00000000-0000-0000-0000-000000000000" },
                              "gateway": "10.4.0.1" }),
        )
        .await;
    assert_refused(status, &body, StatusCode::BAD_REQUEST, "2");
    assert_eq!(body["error"]["target"], "svm.uuid");

    let (_, all) = mock
        .get(&format!("{ROUTES}?fields=svm.uuid,gateway,destination"))
        .await;
    assert_eq!(
        all["num_records"], 2,
        "one listing for the whole cluster: {all}"
    );
    let (_, only_a) = mock
        .get(&format!("{ROUTES}?svm.uuid={a}&fields=gateway"))
        .await;
    assert_eq!(only_a["records"][0]["gateway"], "10.4.0.1");
    assert_eq!(only_a["num_records"], 1);

    mock.create_account(&a, "routes_a", "Routes123x").await;
    let (status, own) = mock.as_user("routes_a", "Routes123x", ROUTES).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        own["num_records"], 1,
        "an SVM account sees its SVM's routes: {own}"
    );

    let (status, _) = mock
        .call(Method::DELETE, &format!("{ROUTES}/{default_route}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = mock
        .call(Method::DELETE, &format!("{ROUTES}/{default_route}"), None)
        .await;
    assert_refused(status, &body, StatusCode::NOT_FOUND, "4");

    let (status, job) = mock
        .call(Method::DELETE, &format!("/api/svm/svms/{b}"), None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    mock.wait_job(job["job"]["uuid"].as_str().unwrap()).await;
    let (_, left) = mock.get(ROUTES).await;
    assert_eq!(left["num_records"], 0, "routes go with their SVM: {left}");
}

/// Each new endpoint can be failed through `/_mock/faults`, so operator tests can fail every
/// network call; a failed request changes nothing.
#[tokio::test]
async fn faults_reach_the_network_endpoints() {
    let mock = Mock::start(fast_mock()).await;
    mock.create_svm("net4").await;
    for (method, path, body) in [
        (
            "POST",
            ROUTES,
            json!({ "svm": { "name": "net4" }, "gateway": "10.5.0.1" }),
        ),
        ("POST", PORTS, vlan("node-01", "e0c", 20, None)),
        ("POST", DOMAINS, json!({ "name": "faulty", "mtu": 1500 })),
    ] {
        mock.add_fault(json!({ "method": method, "path": path, "times": 1,
            "action": { "type": "error", "status": 500, "code": "13434889" } }))
            .await;
        let (status, answer) = mock.post(path, body.clone()).await;
        assert_refused(
            status,
            &answer,
            StatusCode::INTERNAL_SERVER_ERROR,
            "13434889",
        );
        let (status, answer) = mock.post(path, body).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "the fault fired once: {answer}"
        );
    }
    let (_, routes) = mock.get(ROUTES).await;
    assert_eq!(routes["num_records"], 1, "the failed POST created nothing");

    mock.add_fault(json!({ "method": "DELETE", "path": format!("{ROUTES}/*"),
        "action": { "type": "error", "status": 503, "code": "13434889" } }))
        .await;
    let uuid = routes["records"][0]["uuid"].as_str().unwrap();
    let (status, _) = mock
        .call(Method::DELETE, &format!("{ROUTES}/{uuid}"), None)
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, _) = mock.get(&format!("{ROUTES}/{uuid}")).await;
    assert_eq!(status, StatusCode::OK, "still there");
}
