//! Contract tests for the cluster, SVM and job endpoints.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Mock, MockApi, error_code, fast_mock, poll, try_poll_every};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test]
async fn cluster_inventory_has_ontap_shapes() {
    let mock = Mock::start(fast_mock()).await;
    let (status, cluster) = mock.get("/api/cluster").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cluster["version"]["generation"], 9);
    assert_eq!(cluster["version"]["major"], 16);
    assert_eq!(cluster["version"]["minor"], 1);
    assert!(cluster["uuid"].is_string());

    let (_, nodes) = mock.get("/api/cluster/nodes?fields=uuid,name").await;
    assert_eq!(nodes["num_records"], 2);
    let mut names: Vec<&str> = nodes["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["node-01", "node-02"]);

    let (_, aggrs) = mock
        .get("/api/storage/aggregates?fields=name,space,node.name")
        .await;
    assert_eq!(aggrs["num_records"], 2);
    assert!(aggrs["records"][0]["space"]["block_storage"]["size"].is_u64());
    assert!(aggrs["records"][0].get("state").is_none(), "not asked for");

    let (_, ports) = mock
        .get("/api/network/ethernet/ports?node.name=node-01")
        .await;
    assert_eq!(ports["num_records"], 2);
}

#[tokio::test]
async fn missing_or_wrong_credentials_get_401_with_ontap_error() {
    let mock = Mock::start(fast_mock()).await;
    let resp = mock
        .http
        .get(mock.url("/api/cluster"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(resp.headers().contains_key("www-authenticate"));
    let (status, body) = mock.as_user("admin", "wrong", "/api/svm/svms").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"].is_string());
    assert!(body["error"]["code"].is_string());
}

#[tokio::test]
async fn unknown_api_path_and_method_use_the_error_body() {
    let mock = Mock::start(fast_mock()).await;
    let (status, body) = mock.get("/api/storage/qtrees").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "3");
    let (status, body) = mock.call(Method::PUT, "/api/svm/svms", None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(error_code(&body), "3");
}

#[tokio::test]
async fn svm_create_is_a_job_that_ends_in_success() {
    let mock = Mock::start(fast_mock()).await;
    let (status, body) = mock
        .post(
            "/api/svm/svms",
            json!({
                "name": "svm1", "comment": "hello", "language": "c.utf_8",
                "ipspace": { "name": "Default" },
                "aggregates": [{ "name": "aggr1_node01" }],
                "nfs": { "enabled": true }, "iscsi": { "enabled": false }, "nvme": { "enabled": true },
            }),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let job_uuid = body["job"]["uuid"].as_str().unwrap();
    assert_eq!(
        body["job"]["_links"]["self"]["href"],
        format!("/api/cluster/jobs/{job_uuid}")
    );
    assert!(
        body.get("records").is_none(),
        "return_records defaults to false"
    );

    let job = mock.wait_job(job_uuid).await;
    assert_eq!(job["state"], "success");
    assert_eq!(job["description"], "POST /api/svm/svms");
    assert_eq!(job["code"], 0);
    assert_eq!(job["svm"]["name"], "svm1");
    assert!(job["start_time"].is_string() && job["end_time"].is_string());

    let (_, list) = mock.get("/api/svm/svms?name=svm1&fields=**").await;
    assert_eq!(list["num_records"], 1);
    let svm = &list["records"][0];
    assert_eq!(svm["state"], "running");
    assert_eq!(svm["comment"], "hello");
    assert_eq!(svm["nfs"]["enabled"], true);
    assert_eq!(svm["nvme"]["enabled"], true);
    assert_eq!(svm["iscsi"]["enabled"], false);
    assert_eq!(svm["aggregates"][0]["name"], "aggr1_node01");
    assert_eq!(svm["ipspace"]["name"], "Default");
    assert_eq!(svm["uuid"], job["svm"]["uuid"]);

    let (status, by_uuid) = mock
        .get(&format!("/api/svm/svms/{}", svm["uuid"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_uuid["name"], "svm1");
    assert_eq!(by_uuid["subtype"], "default");
}

#[tokio::test]
async fn job_passes_through_queued_and_running_and_svm_is_initializing_meanwhile() {
    let mut config = fast_mock();
    config.settings.job_duration_ms = 1_500;
    let mock = Mock::start(config).await;
    let (_, body) = mock.post("/api/svm/svms", json!({ "name": "slow" })).await;
    let path = format!(
        "/api/cluster/jobs/{}",
        body["job"]["uuid"].as_str().unwrap()
    );

    let (_, job) = mock.get(&path).await;
    assert_eq!(job["state"], "queued", "{job}");
    assert!(job.get("end_time").is_none());
    let (_, list) = mock.get("/api/svm/svms?name=slow&fields=state").await;
    assert_eq!(list["records"][0]["state"], "initializing");

    let mut seen: Vec<String> = Vec::new();
    // Looks often enough to see each state of a 1.5 s job.
    try_poll_every(
        Duration::from_secs(5),
        Duration::from_millis(20),
        async || {
            let (_, job) = mock.get(&path).await;
            let state = job["state"].as_str().unwrap().to_owned();
            if seen.last() != Some(&state) {
                seen.push(state);
            }
            (seen.last().map(String::as_str) == Some("success"))
                .then_some(())
                .ok_or_else(|| format!("{seen:?}"))
        },
    )
    .await
    .unwrap();
    assert_eq!(seen, ["queued", "running", "success"]);
    let (_, list) = mock.get("/api/svm/svms?name=slow&fields=state").await;
    assert_eq!(list["records"][0]["state"], "running");
}

#[tokio::test]
async fn finished_jobs_expire_into_404() {
    let mut config = fast_mock();
    config.settings.job_expiry_ms = 300;
    let mock = Mock::start(config).await;
    let (_, body) = mock.post("/api/svm/svms", json!({ "name": "exp" })).await;
    let uuid = body["job"]["uuid"].as_str().unwrap();
    mock.wait_job(uuid).await;
    let path = format!("/api/cluster/jobs/{uuid}");
    let body = poll("the expired job 404", Duration::from_secs(5), async || {
        let (status, body) = mock.get(&path).await;
        (status == StatusCode::NOT_FOUND).then_some(body)
    })
    .await;
    assert_eq!(error_code(&body), "4");
    let (status, _) = mock.get("/api/cluster/jobs/not-a-job").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn job_duration_changes_at_runtime() {
    let mock = Mock::start(fast_mock()).await;
    let (status, settings) = mock
        .control(
            Method::PUT,
            "/_mock/config",
            Some(json!({ "job_duration_ms": 60_000 })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(settings["job_duration_ms"], 60_000);
    let (_, body) = mock.post("/api/svm/svms", json!({ "name": "long" })).await;
    // Absence of progress can only be shown by waiting: six of the fast mock's job durations.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, job) = mock
        .get(&format!(
            "/api/cluster/jobs/{}",
            body["job"]["uuid"].as_str().unwrap()
        ))
        .await;
    assert!(
        matches!(job["state"].as_str(), Some("queued" | "running")),
        "a 60 s job has not finished: {job}"
    );
    let (status, body) = mock
        .control(
            Method::PUT,
            "/_mock/config",
            Some(json!({ "job_duration": 1 })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn duplicate_long_and_unknown_fields_are_rejected() {
    let mock = Mock::start(fast_mock()).await;
    mock.create_svm("dup").await;
    let (status, body) = mock.post("/api/svm/svms", json!({ "name": "dup" })).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "13434908");

    let (status, body) = mock
        .post("/api/svm/svms", json!({ "name": "x".repeat(48) }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "13434911");
    let (status, _) = mock
        .post("/api/svm/svms", json!({ "name": "y".repeat(47) }))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (status, body) = mock
        .post(
            "/api/svm/svms",
            json!({ "name": "z", "nfs": { "enabled": true, "colour": 1 } }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "262179");
    assert_eq!(body["error"]["target"], "nfs.colour");

    let (status, body) = mock
        .post("/api/svm/svms", json!({ "comment": "no name" }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["target"], "name");

    let (status, _) = mock
        .post(
            "/api/svm/svms",
            json!({ "name": "w", "aggregates": [{ "name": "nope" }] }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_sixth_concurrent_svm_job_is_refused() {
    let mut config = fast_mock();
    config.settings.job_duration_ms = 1_000;
    let mock = Mock::start(config).await;
    for i in 0..5 {
        let (status, body) = mock
            .post("/api/svm/svms", json!({ "name": format!("c{i}") }))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let (status, body) = mock.post("/api/svm/svms", json!({ "name": "c5" })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "13434894");
    let (_, list) = mock.get("/api/svm/svms?name=c5").await;
    assert_eq!(list["num_records"], 0, "the refused SVM does not exist");

    // Once the running jobs end, their slots are free again.
    poll(
        "a job slot free again",
        Duration::from_secs(5),
        async || {
            let (status, _) = mock.post("/api/svm/svms", json!({ "name": "c5" })).await;
            (status == StatusCode::ACCEPTED).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn pagination_follows_next_links() {
    let mut config = fast_mock();
    config.settings.max_concurrent_svm_jobs = 0;
    let mock = Mock::start(config).await;
    let mut jobs = Vec::new();
    for i in 0..7 {
        let (_, body) = mock
            .post("/api/svm/svms", json!({ "name": format!("page{i}") }))
            .await;
        jobs.push(body["job"]["uuid"].as_str().unwrap().to_owned());
    }
    for job in &jobs {
        mock.wait_job(job).await;
    }
    let mut names = Vec::new();
    let mut next = Some("/api/svm/svms?max_records=3&fields=name".to_owned());
    let mut pages = 0;
    while let Some(path) = next {
        let (status, page) = mock.get(&path).await;
        assert_eq!(status, StatusCode::OK);
        assert!(page["num_records"].as_u64().unwrap() <= 3);
        assert!(page["_links"]["self"]["href"].is_string());
        for r in page["records"].as_array().unwrap() {
            names.push(r["name"].as_str().unwrap().to_owned());
        }
        next = page["_links"]["next"]["href"].as_str().map(str::to_owned);
        pages += 1;
    }
    assert_eq!(pages, 3);
    names.sort();
    let expected: Vec<String> = (0..7).map(|i| format!("page{i}")).collect();
    assert_eq!(names, expected);
}

#[tokio::test]
async fn fields_and_filters() {
    let mock = Mock::start(fast_mock()).await;
    mock.create_svm("alpha1").await;
    mock.create_svm("alpha2").await;
    mock.create_svm("beta").await;

    let (_, list) = mock.get("/api/svm/svms").await;
    let first = &list["records"][0];
    let mut keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["_links", "name", "uuid"],
        "default fields are name and uuid"
    );

    let (_, list) = mock.get("/api/svm/svms?name=alpha*").await;
    assert_eq!(list["num_records"], 2);
    let (_, list) = mock.get("/api/svm/svms?name=alpha1|beta").await;
    assert_eq!(list["num_records"], 2);
    let (_, list) = mock.get("/api/svm/svms?name=!beta").await;
    assert_eq!(list["num_records"], 2);

    let uuid = list["records"][0]["uuid"].as_str().unwrap().to_owned();
    let (_, list) = mock
        .get(&format!(
            "/api/svm/svms?uuid={uuid}&fields=state,ipspace.name"
        ))
        .await;
    assert_eq!(list["num_records"], 1);
    assert_eq!(list["records"][0]["state"], "running");
    assert_eq!(list["records"][0]["ipspace"], json!({ "name": "Default" }));
    assert!(list["records"][0].get("comment").is_none());

    let (_, one) = mock
        .get(&format!("/api/svm/svms/{uuid}?fields=state"))
        .await;
    assert_eq!(one["state"], "running");
    assert!(one.get("language").is_none());
}

#[tokio::test]
async fn patch_and_delete_are_jobs() {
    let mock = Mock::start(fast_mock()).await;
    let uuid = mock.create_svm("pd").await;
    let path = format!("/api/svm/svms/{uuid}");
    let (status, body) = mock
        .call(
            Method::PATCH,
            &path,
            Some(json!({ "state": "stopped", "comment": "c", "nfs": { "allowed": false } })),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let job = mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    assert_eq!(job["state"], "success");
    let (_, svm) = mock.get(&path).await;
    assert_eq!(svm["state"], "stopped");
    assert_eq!(svm["comment"], "c");
    assert_eq!(svm["nfs"], json!({ "enabled": false, "allowed": false }));

    let (status, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "state": "exploded" })))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let (status, body) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    let (status, body) = mock.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&body), "4");
    let (status, _) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn changing_an_svm_still_being_created_is_refused() {
    let mut config = fast_mock();
    config.settings.job_duration_ms = 30_000;
    let mock = Mock::start(config).await;
    let (_, body) = mock
        .post(
            "/api/svm/svms?return_records=true",
            json!({ "name": "young" }),
        )
        .await;
    let uuid = body["records"][0]["uuid"].as_str().unwrap();
    let (status, body) = mock
        .call(Method::DELETE, &format!("/api/svm/svms/{uuid}"), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error_code(&body), "13434916");
}

#[tokio::test]
async fn mock_state_shows_records_in_full_shape_and_reset_clears() {
    let mock = Mock::start(fast_mock()).await;
    let uuid = mock.create_svm("st").await;
    mock.create_account(&uuid, "ops", "Secret123abc").await;
    let state = mock.snapshot();
    assert_eq!(state["svms"][0]["name"], "st");
    assert_eq!(state["svms"][0]["ipspace"]["name"], "Default");
    let accounts = state["accounts"].as_array().unwrap();
    assert!(
        accounts
            .iter()
            .any(|a| a["name"] == "ops" && a["owner"]["uuid"] == uuid.as_str())
    );
    assert!(
        !state.to_string().contains("Secret123abc"),
        "never a password"
    );
    assert_eq!(state["jobs"][0]["state"], "success");

    let (status, _) = mock.control(Method::POST, "/_mock/reset", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let state = mock.snapshot();
    assert_eq!(
        state,
        json!({
            "svms": [], "accounts": [], "interfaces": [], "bgp_peer_groups": [], "jobs": [],
            "job_stats": {"peak_in_flight": 0, "refused": 0}, "ems_application_logs": []
        })
    );
    assert!(mock.requests(&[]).await.is_empty());
}

#[tokio::test]
async fn thousand_svms_created_at_once_are_served() {
    let mut config = fast_mock();
    config.settings.max_concurrent_svm_jobs = 0;
    config.settings.job_duration_ms = 500;
    let mock = Mock::start(config).await;
    let started = std::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let client = mock.http.clone();
        let url = mock.url("/api/svm/svms");
        let admin = mock.server.admin().clone();
        tasks.spawn(async move {
            let resp = client
                .post(url)
                .basic_auth(&admin.user, Some(&admin.password))
                .json(&json!({ "name": format!("bulk{i:04}") }))
                .send()
                .await
                .unwrap();
            resp.status()
        });
    }
    while let Some(status) = tasks.join_next().await {
        assert_eq!(status.unwrap(), StatusCode::ACCEPTED);
    }
    let count = poll("every SVM running", Duration::from_secs(20), async || {
        let (_, list) = mock
            .get("/api/svm/svms?state=running&max_records=2000")
            .await;
        let n = list["num_records"].as_u64().unwrap();
        (n == 1000).then_some(n)
    })
    .await;
    assert_eq!(count, 1000);
    let (_, one) = mock.get("/api/svm/svms?name=bulk0500").await;
    assert_eq!(one["num_records"], 1);
    assert!(started.elapsed() < Duration::from_secs(20));
    let state: Value = mock.snapshot();
    assert_eq!(state["svms"].as_array().unwrap().len(), 1000);
}

#[tokio::test]
async fn rename_is_a_job_and_the_new_name_is_reserved_until_it_lands() {
    let mut config = fast_mock();
    config.settings.job_duration_ms = 1_000;
    let mock = Mock::start(config).await;
    let uuid = mock.create_svm("before").await;
    mock.create_svm("taken").await;
    let path = format!("/api/svm/svms/{uuid}");

    let (status, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "name": "taken" })))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "13434908");
    let long = "x".repeat(48);
    let (status, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "name": long })))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "13434911");

    let (status, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "name": "after" })))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let job = body["job"]["uuid"].as_str().unwrap().to_owned();
    let (_, svm) = mock.get(&path).await;
    assert_eq!(svm["name"], "before", "the rename lands with its job");
    let (status, body) = mock.post("/api/svm/svms", json!({ "name": "after" })).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "13434908");

    assert_eq!(mock.wait_job(&job).await["state"], "success");
    let (_, svm) = mock.get(&path).await;
    assert_eq!(svm["name"], "after");
    let (_, list) = mock.get("/api/svm/svms?name=after").await;
    assert_eq!(list["records"][0]["uuid"], uuid.as_str());
    let (_, list) = mock.get("/api/svm/svms?name=before").await;
    assert_eq!(list["num_records"], 0);
    // The old name is free again.
    mock.create_svm("before").await;
}

#[tokio::test]
async fn a_failed_rename_keeps_the_old_name() {
    let mock = Mock::start(fast_mock()).await;
    let uuid = mock.create_svm("keep").await;
    mock.add_fault(json!({
        "method": "PATCH", "path": "/api/svm/svms/*", "times": 1,
        "action": { "type": "job_failure" },
    }))
    .await;
    let path = format!("/api/svm/svms/{uuid}");
    let (_, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "name": "lost" })))
        .await;
    let job = mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    assert_eq!(job["state"], "failure");
    let (_, svm) = mock.get(&path).await;
    assert_eq!(svm["name"], "keep");
    mock.create_svm("lost").await;
}

#[tokio::test]
async fn changing_an_svm_being_deleted_is_a_conflict() {
    let mut config = fast_mock();
    config.settings.job_duration_ms = 30_000;
    let mock = Mock::start(config).await;
    mock.server
        .state()
        .update_settings(|s| s.job_duration_ms = 50);
    let uuid = mock.create_svm("doomed").await;
    mock.server
        .state()
        .update_settings(|s| s.job_duration_ms = 30_000);
    let path = format!("/api/svm/svms/{uuid}");
    let (status, body) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = mock.call(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "13434916");
    let (status, body) = mock
        .call(Method::PATCH, &path, Some(json!({ "comment": "late" })))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "13434916");
}
