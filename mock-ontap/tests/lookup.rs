//! Equality filters on key fields are answered from indexes. Each indexed query is compared
//! with the same query spelled so that it cannot use an index (`x|x` is an alternative, which
//! forces a scan), across creates, renames and deletes that must keep the indexes in step.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Mock, MockApi, fast_mock};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The records of a collection GET, as their `_links.self` (unique per record).
async fn hrefs(mock: &Mock, path: &str) -> Vec<String> {
    let (status, body) = mock.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["_links"]["self"]["href"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts that `base?field=value` (indexed) and `base?field=value|value` (scanned) agree, and
/// returns how many records they found.
async fn same_as_scan(mock: &Mock, base: &str, filters: &[(&str, &str)]) -> usize {
    let query = |scan: bool| {
        filters
            .iter()
            .map(|(k, v)| {
                if scan {
                    format!("{k}={v}|{v}")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join("&")
    };
    let indexed = hrefs(mock, &format!("{base}?{}", query(false))).await;
    let scanned = hrefs(mock, &format!("{base}?{}", query(true))).await;
    assert_eq!(indexed, scanned, "{base} {filters:?}");
    indexed.len()
}

async fn interface(mock: &Mock, svm: &str, name: &str, ip: &str) -> String {
    let (status, body) = mock
        .post(
            "/api/network/ip/interfaces?return_records=true",
            json!({ "name": name, "svm": { "name": svm }, "ip": { "address": ip, "netmask": "24" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["records"][0]["uuid"].as_str().unwrap().to_owned()
}

async fn wait(mock: &Mock, answer: (StatusCode, Value)) {
    let (status, body) = answer;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let job = mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    assert_eq!(job["state"], "success", "{job}");
}

#[tokio::test]
async fn indexed_filters_agree_with_scans_through_renames_and_deletes() {
    let mock = Mock::start(fast_mock()).await;
    let a1 = mock.create_svm("a1").await;
    let a2 = mock.create_svm("a2").await;
    let b1 = mock.create_svm("b1").await;
    for (svm, password) in [
        (&a1, "Secret111x"),
        (&a2, "Secret222x"),
        (&b1, "Secret333x"),
    ] {
        mock.create_account(svm, "ops", password).await;
    }
    let lif_a1 = interface(&mock, "a1", "lif1", "10.0.0.1").await;
    interface(&mock, "a1", "lif2", "10.0.0.2").await;
    interface(&mock, "a2", "lif1", "10.0.0.3").await;

    let svms = "/api/svm/svms";
    let accounts = "/api/security/accounts";
    let lifs = "/api/network/ip/interfaces";
    assert_eq!(same_as_scan(&mock, svms, &[("name", "a1")]).await, 1);
    assert_eq!(same_as_scan(&mock, svms, &[("uuid", &a2)]).await, 1);
    assert_eq!(
        same_as_scan(&mock, svms, &[("name", "a1"), ("uuid", &a2)]).await,
        0
    );
    assert_eq!(same_as_scan(&mock, svms, &[("name", "nope")]).await, 0);
    assert_eq!(same_as_scan(&mock, accounts, &[("name", "ops")]).await, 3);
    assert_eq!(
        same_as_scan(&mock, accounts, &[("name", "vsadmin")]).await,
        3
    );
    assert_eq!(
        same_as_scan(&mock, accounts, &[("owner.uuid", &a1)]).await,
        2
    );
    assert_eq!(
        same_as_scan(&mock, accounts, &[("owner.name", "a2")]).await,
        2
    );
    assert_eq!(
        same_as_scan(&mock, accounts, &[("owner.uuid", &a1), ("name", "ops")]).await,
        1
    );
    assert_eq!(
        same_as_scan(
            &mock,
            accounts,
            &[("owner.name", "a2"), ("owner.uuid", &a1)]
        )
        .await,
        0
    );
    assert_eq!(same_as_scan(&mock, lifs, &[("svm.uuid", &a1)]).await, 2);
    assert_eq!(same_as_scan(&mock, lifs, &[("svm.name", "a2")]).await, 1);
    assert_eq!(same_as_scan(&mock, lifs, &[("name", "lif1")]).await, 2);
    assert_eq!(
        same_as_scan(&mock, lifs, &[("ip.address", "10.0.0.2")]).await,
        1
    );
    assert_eq!(same_as_scan(&mock, lifs, &[("uuid", &lif_a1)]).await, 1);
    assert_eq!(
        same_as_scan(&mock, lifs, &[("name", "lif1"), ("svm.name", "a1")]).await,
        1
    );

    // A rename moves the SVM in the name index, and what refers to it by name follows.
    wait(
        &mock,
        mock.call(
            Method::PATCH,
            &format!("/api/svm/svms/{a1}"),
            Some(json!({ "name": "z1" })),
        )
        .await,
    )
    .await;
    assert_eq!(same_as_scan(&mock, svms, &[("name", "a1")]).await, 0);
    assert_eq!(same_as_scan(&mock, svms, &[("name", "z1")]).await, 1);
    assert_eq!(
        same_as_scan(&mock, accounts, &[("owner.name", "z1")]).await,
        2
    );
    assert_eq!(same_as_scan(&mock, lifs, &[("svm.name", "z1")]).await, 2);
    assert_eq!(same_as_scan(&mock, lifs, &[("svm.name", "a1")]).await, 0);

    // Deleting an interface and an SVM leaves nothing behind in any index.
    let (status, _) = mock
        .call(Method::DELETE, &format!("{lifs}/{lif_a1}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        same_as_scan(&mock, lifs, &[("ip.address", "10.0.0.1")]).await,
        0
    );
    assert_eq!(same_as_scan(&mock, lifs, &[("name", "lif1")]).await, 1);
    wait(
        &mock,
        mock.call(Method::DELETE, &format!("/api/svm/svms/{a2}"), None)
            .await,
    )
    .await;
    assert_eq!(same_as_scan(&mock, svms, &[("name", "a2")]).await, 0);
    assert_eq!(
        same_as_scan(&mock, accounts, &[("owner.uuid", &a2)]).await,
        0
    );
    assert_eq!(same_as_scan(&mock, accounts, &[("name", "ops")]).await, 2);
    assert_eq!(same_as_scan(&mock, lifs, &[("svm.uuid", &a2)]).await, 0);
    assert_eq!(
        same_as_scan(&mock, lifs, &[("ip.address", "10.0.0.3")]).await,
        0
    );
    // The deleted SVM's name and address are free again.
    mock.create_svm("a2").await;
    interface(&mock, "a2", "lif1", "10.0.0.3").await;
    assert_eq!(
        same_as_scan(&mock, lifs, &[("ip.address", "10.0.0.3")]).await,
        1
    );
}

#[tokio::test]
async fn an_svm_account_finds_only_its_own_records_through_the_indexes() {
    let mock = Mock::start(fast_mock()).await;
    let own = mock.create_svm("own").await;
    let other = mock.create_svm("other").await;
    mock.create_account(&own, "ops", "Secret111x").await;
    mock.create_account(&other, "ops", "Secret222x").await;
    let as_ops = |path: &'static str| mock.as_user("ops", "Secret111x", path);
    let (status, body) = as_ops("/api/security/accounts?name=ops").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["num_records"], 1);
    assert_eq!(body["records"][0]["owner"]["uuid"], own.as_str());
    let (_, body) = as_ops("/api/svm/svms?name=other").await;
    assert_eq!(body["num_records"], 0);
    let path = format!("/api/security/accounts?owner.uuid={other}");
    let (_, body) = mock.as_user("ops", "Secret111x", &path).await;
    assert_eq!(body["num_records"], 0);
    // The same user name with the other SVM's password logs in to the other SVM.
    let (_, body) = mock
        .as_user("ops", "Secret222x", "/api/security/accounts?name=ops")
        .await;
    assert_eq!(body["records"][0]["owner"]["uuid"], other.as_str());
}

#[tokio::test]
async fn paging_a_scanned_collection_visits_every_record_once() {
    let mock = Mock::start(fast_mock()).await;
    for name in ["p1", "p2", "p3"] {
        let uuid = mock.create_svm(name).await;
        mock.create_account(&uuid, "ops", "Secret123x").await;
    }
    let all = hrefs(&mock, "/api/security/accounts").await;
    assert_eq!(all.len(), 6);
    let mut paged = Vec::new();
    let mut next = Some("/api/security/accounts?max_records=4".to_owned());
    while let Some(path) = next {
        let (_, body) = mock.get(&path).await;
        paged.extend(
            body["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["_links"]["self"]["href"].as_str().unwrap().to_owned()),
        );
        next = body["_links"]["next"]["href"].as_str().map(str::to_owned);
    }
    assert_eq!(paged, all);
}
