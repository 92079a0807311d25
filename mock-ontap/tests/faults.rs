//! Every fault action over real TCP (and TLS), plus fault matching and the request log.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Mock, MockApi, error_code, fast_mock, poll};
use reqwest::{Method, StatusCode};
use serde_json::json;

async fn post_svm(mock: &Mock, name: &str) -> Result<reqwest::Response, reqwest::Error> {
    mock.admin(Method::POST, "/api/svm/svms")
        .json(&json!({ "name": name }))
        .send()
        .await
}

async fn svm_names(mock: &Mock) -> Vec<String> {
    // Jobs may still run; the state shows initializing SVMs too.
    mock.snapshot()["svms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A connection reset without an answer: not a timeout, not an HTTP status, but a TCP RST.
fn assert_connection_dropped(err: &reqwest::Error, elapsed: Duration) {
    assert!(
        !err.is_timeout(),
        "expected a reset, got a timeout: {err:?}"
    );
    assert!(err.status().is_none(), "{err:?}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    let mut source = std::error::Error::source(err);
    let mut reset = false;
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            reset |= io.kind() == std::io::ErrorKind::ConnectionReset;
        }
        source = e.source();
    }
    assert!(reset, "expected ECONNRESET somewhere in {err:?}");
}

#[tokio::test]
async fn error_action_answers_with_the_given_ontap_error_and_applies_nothing() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms", "times": 1,
        "action": { "type": "error", "status": 500, "code": "13434889", "message": "try again" },
    }))
    .await;
    let resp = post_svm(&mock, "e1").await.unwrap();
    assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let (_, body) = common::read(resp).await;
    assert_eq!(error_code(&body), "13434889");
    assert_eq!(body["error"]["message"], "try again");
    assert!(svm_names(&mock).await.is_empty());

    let resp = post_svm(&mock, "e1").await.unwrap();
    assert_eq!(
        resp.status(),
        StatusCode::ACCEPTED,
        "times=1: the second call goes through"
    );
}

#[tokio::test]
async fn delay_action_waits_then_proceeds() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({ "path": "/api/cluster", "action": { "type": "delay", "ms": 400 } }))
        .await;
    let started = Instant::now();
    let (status, body) = mock.get("/api/cluster").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["version"].is_object());
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn a_delayed_request_is_applied_even_when_the_client_gave_up() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(
        json!({ "method": "POST", "path": "/api/svm/svms", "times": 1,
        "action": { "type": "delay", "ms": 400 } }),
    )
    .await;
    let err = mock
        .admin(Method::POST, "/api/svm/svms")
        .json(&json!({ "name": "late" }))
        .timeout(Duration::from_millis(100))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    poll(
        "the delayed POST applied",
        Duration::from_secs(5),
        async || (!svm_names(&mock).await.is_empty()).then_some(()),
    )
    .await;
    assert_eq!(svm_names(&mock).await, ["late"]);
    let log = mock.requests(&[("method", "POST")]).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["fault"]["action"], "delay");
    assert_eq!(log[0]["status"], 202, "the answer nobody received");
}

#[tokio::test]
async fn reset_closes_the_connection_and_does_not_apply() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({ "method": "POST", "path": "/api/svm/svms", "times": 1, "action": { "type": "reset" } }))
        .await;
    let started = Instant::now();
    let err = post_svm(&mock, "r1").await.unwrap_err();
    assert_connection_dropped(&err, started.elapsed());
    assert!(svm_names(&mock).await.is_empty(), "reset: not applied");

    let log = mock.requests(&[("method", "POST")]).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["fault"]["action"], "reset");
    assert!(log[0]["status"].is_null());

    // The server and the client's pool recover.
    let resp = post_svm(&mock, "r1").await.unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn apply_then_reset_applies_but_loses_the_answer() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({ "method": "POST", "path": "/api/svm/svms", "action": { "type": "apply_then_reset" } }))
        .await;
    let started = Instant::now();
    let err = post_svm(&mock, "atr").await.unwrap_err();
    assert_connection_dropped(&err, started.elapsed());
    assert_eq!(
        svm_names(&mock).await,
        ["atr"],
        "applied although unanswered"
    );
    let log = mock.requests(&[("path", "/api/svm/svms")]).await;
    assert_eq!(log[0]["status"], 202, "the log records the lost answer");

    // A retry sees what a real client would: the name is taken.
    mock.control(Method::DELETE, "/_mock/faults", None).await;
    let resp = post_svm(&mock, "atr").await.unwrap();
    assert_eq!(resp.status(), StatusCode::CONFLICT);
}

#[tokio::test]
async fn apply_then_reset_on_synchronous_creation() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("sync").await;
    mock.add_fault(json!({ "method": "POST", "path": "/api/security/accounts", "action": { "type": "apply_then_reset" } }))
        .await;
    let err = mock
        .admin(Method::POST, "/api/security/accounts")
        .json(&json!({ "name": "seed", "owner": { "uuid": svm }, "password": "Password123" }))
        .send()
        .await
        .unwrap_err();
    assert!(err.status().is_none());
    let state = mock.snapshot();
    assert!(
        state["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "seed"),
        "{state}"
    );
}

#[tokio::test]
async fn job_failure_ends_the_job_in_failure_and_applies_nothing() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms",
        "action": { "type": "job_failure", "code": "13434889", "message": "injected" },
    }))
    .await;
    let resp = post_svm(&mock, "jf").await.unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let (_, body) = common::read(resp).await;
    let job = mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    assert_eq!(job["state"], "failure");
    assert_eq!(job["message"], "injected");
    assert_eq!(job["code"], 13434889);
    assert_eq!(job["error"]["code"], "13434889");
    assert!(job["end_time"].is_string());
    assert!(svm_names(&mock).await.is_empty(), "nothing applied");
    let (_, list) = mock.get("/api/svm/svms?name=jf").await;
    assert_eq!(list["num_records"], 0);
}

#[tokio::test]
async fn job_failure_on_delete_keeps_the_svm() {
    let mock = Mock::start(fast_mock()).await;
    let uuid = mock.create_svm("keep").await;
    mock.add_fault(json!({ "method": "DELETE", "path": "/api/svm/svms/*", "action": { "type": "job_failure" } }))
        .await;
    let (status, body) = mock
        .call(Method::DELETE, &format!("/api/svm/svms/{uuid}"), None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let job = mock.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
    assert_eq!(job["state"], "failure");
    let (status, svm) = mock.get(&format!("/api/svm/svms/{uuid}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(svm["state"], "running");
}

#[tokio::test]
async fn hang_never_answers_so_the_client_timeout_fires() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({ "path": "/api/cluster", "times": 1, "action": { "type": "hang" } }))
        .await;
    let admin = mock.server.admin();
    let started = Instant::now();
    let err = mock
        .http
        .get(mock.url("/api/cluster"))
        .basic_auth(&admin.user, Some(&admin.password))
        .timeout(Duration::from_millis(300))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    let (status, _) = mock.get("/api/cluster").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn after_times_prefix_and_method_matching_with_hit_counts() {
    let mock = Mock::start(fast_mock()).await;
    let id = mock
        .add_fault(json!({
            "method": "GET", "path": "/api/svm/*", "after": 2, "times": 2,
            "action": { "type": "error", "status": 503, "code": "9", "message": "busy" },
        }))
        .await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(mock.get("/api/svm/svms").await.0.as_u16());
    }
    assert_eq!(statuses, [200, 200, 503, 503, 200, 200]);
    assert_eq!(
        mock.get("/api/cluster").await.0,
        StatusCode::OK,
        "other paths untouched"
    );
    assert_eq!(
        post_svm(&mock, "m").await.unwrap().status(),
        StatusCode::ACCEPTED,
        "other methods untouched"
    );

    let (_, faults) = mock.control(Method::GET, "/_mock/faults", None).await;
    assert_eq!(faults["num_records"], 1);
    let fault = &faults["records"][0];
    assert_eq!(fault["id"], id.as_str());
    assert_eq!(fault["hits"], 2);
    assert_eq!(fault["matched"], 6);
    assert_eq!(fault["action"]["type"], "error");

    let (status, _) = mock
        .control(Method::DELETE, &format!("/_mock/faults/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = mock
        .control(Method::DELETE, &format!("/_mock/faults/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, faults) = mock.control(Method::GET, "/_mock/faults", None).await;
    assert_eq!(faults["num_records"], 0);
}

#[tokio::test]
async fn exact_path_does_not_match_longer_paths_and_probability_zero_never_fires() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({ "path": "/api/cluster", "action": { "type": "error", "status": 500 } }))
        .await;
    mock.add_fault(json!({ "path": "/api/svm/svms", "probability": 0.0, "action": { "type": "error", "status": 500 } }))
        .await;
    assert_eq!(mock.get("/api/cluster/nodes").await.0, StatusCode::OK);
    assert_eq!(
        mock.get("/api/cluster").await.0,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    for _ in 0..5 {
        assert_eq!(mock.get("/api/svm/svms").await.0, StatusCode::OK);
    }
    let (status, _) = mock.control(Method::DELETE, "/_mock/faults", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(mock.get("/api/cluster").await.0, StatusCode::OK);
}

#[tokio::test]
async fn invalid_faults_are_rejected() {
    let mock = Mock::start(fast_mock()).await;
    for bad in [
        json!({ "path": "/api/cluster", "action": { "type": "explode" } }),
        json!({ "path": "/api/cluster", "probability": 1.5, "action": { "type": "hang" } }),
        json!({ "path": "/api/cluster", "action": { "type": "error", "status": 1000 } }),
        json!({ "action": { "type": "hang" } }),
        json!({ "path": "/x", "colour": "red", "action": { "type": "hang" } }),
        json!({ "path": "/x", "action": { "type": "malformed", "status": 99 } }),
        json!({ "path": "/x", "action": { "type": "malformed", "content_type": "a\nb" } }),
        json!({ "path": "/x", "action": { "type": "malformed", "shape": "odd" } }),
        json!({ "path": "/x", "action": { "type": "huge", "bytes": 0 } }),
        json!({ "path": "/x", "action": { "type": "huge", "bytes": 2_000_000_000u64 } }),
        json!({ "path": "/x", "action": { "type": "huge", "status": 1000 } }),
    ] {
        let (status, _) = mock
            .control(Method::POST, "/_mock/faults", Some(bad.clone()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn request_log_counts_calls_with_user_and_status() {
    let mock = Mock::start(fast_mock()).await;
    mock.get("/api/svm/svms?name=a").await;
    mock.get("/api/svm/svms?name=b").await;
    mock.as_user("nobody", "Nothing123", "/api/cluster").await;
    let log = mock.requests(&[("path", "/api/svm/svms")]).await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["method"], "GET");
    assert_eq!(log[0]["query"], "name=a");
    assert_eq!(log[0]["status"], 200);
    assert_eq!(log[0]["user"], "admin");
    assert!(log[0]["at"].is_string());
    let log = mock.requests(&[("user", "nobody")]).await;
    assert_eq!(log[0]["status"], 401);
    let (status, _) = mock.control(Method::DELETE, "/_mock/requests", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(mock.requests(&[]).await.is_empty());
}

#[tokio::test]
async fn faults_work_over_tls_with_the_generated_certificate() {
    let mock = Mock::start_tls(fast_mock()).await;
    assert!(mock.server.base_url().starts_with("https://127.0.0.1:"));
    let (status, _) = mock.get("/api/cluster").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the certificate verifies for 127.0.0.1"
    );

    mock.add_fault(json!({ "method": "POST", "path": "/api/svm/svms", "times": 1, "action": { "type": "reset" } }))
        .await;
    let started = Instant::now();
    let err = post_svm(&mock, "tls1").await.unwrap_err();
    assert_connection_dropped(&err, started.elapsed());
    assert!(svm_names(&mock).await.is_empty());

    mock.add_fault(json!({ "method": "POST", "path": "/api/svm/svms", "times": 1, "action": { "type": "apply_then_reset" } }))
        .await;
    let err = post_svm(&mock, "tls2").await.unwrap_err();
    assert!(err.status().is_none());
    assert_eq!(svm_names(&mock).await, ["tls2"]);

    // Clients that do not trust the certificate fail the handshake.
    let untrusting = common::http().tls_certs_only([]).build().unwrap();
    assert!(
        untrusting
            .get(mock.url("/api/cluster"))
            .send()
            .await
            .is_err()
    );
}

#[tokio::test]
async fn faults_and_settings_can_be_set_through_the_rust_api() {
    let mock = Mock::start(fast_mock()).await;
    let state = mock.server.state();
    state.update_settings(|s| s.max_concurrent_svm_jobs = 1);
    let spec: mock_ontap::FaultSpec = serde_json::from_value(json!({
        "path": "/api/cluster", "times": 1, "action": { "type": "error", "status": 502 },
    }))
    .unwrap();
    state.add_fault(spec).unwrap();
    assert_eq!(mock.get("/api/cluster").await.0, StatusCode::BAD_GATEWAY);
    assert_eq!(mock.get("/api/cluster").await.0, StatusCode::OK);
    assert_eq!(
        post_svm(&mock, "one").await.unwrap().status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        post_svm(&mock, "two").await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(state.snapshot()["svms"][0]["name"], "one");
}

#[tokio::test]
async fn error_action_produces_auth_failures_not_found_and_unknown_codes() {
    let mock = Mock::start(fast_mock()).await;
    let cases = [
        (401, "6", Some("Basic")),
        (403, "6", None),
        (404, "4", None),
        (400, "987654321", None),
    ];
    for (status, code, challenge) in cases {
        mock.add_fault(json!({
            "path": "/api/cluster", "times": 1,
            "action": { "type": "error", "status": status, "code": code, "message": "injected" },
        }))
        .await;
        let resp = mock
            .admin(Method::GET, "/api/cluster")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), status);
        let www = resp
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(
            www.as_deref().map(|v| v.split(' ').next().unwrap()),
            challenge,
            "{status}"
        );
        let (_, body) = common::read(resp).await;
        assert_eq!(error_code(&body), code);
        assert_eq!(body["error"]["message"], "injected");
    }
    assert_eq!(mock.get("/api/cluster").await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_error_with_times_repeats_exactly_that_often() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms", "times": 3,
        "action": { "type": "error", "status": 503 },
    }))
    .await;
    for i in 0..3 {
        let resp = post_svm(&mock, "rep").await.unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "attempt {i}"
        );
    }
    assert!(svm_names(&mock).await.is_empty());
    assert_eq!(
        post_svm(&mock, "rep").await.unwrap().status(),
        StatusCode::ACCEPTED
    );
    let (_, faults) = mock.control(Method::GET, "/_mock/faults", None).await;
    assert_eq!(faults["records"][0]["hits"], 3);
    assert_eq!(faults["records"][0]["matched"], 4);
}

#[tokio::test]
async fn malformed_answers_html_and_applies_nothing_by_default() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms", "times": 1,
        "action": { "type": "malformed" },
    }))
    .await;
    let resp = post_svm(&mock, "m1").await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let text = resp.text().await.unwrap();
    assert!(text.contains("<html>"), "{text}");
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_err());
    assert!(svm_names(&mock).await.is_empty());
    let log = mock.requests(&[("method", "POST")]).await;
    assert_eq!(log[0]["fault"]["action"], "malformed");
    assert_eq!(log[0]["status"], 200);
}

#[tokio::test]
async fn malformed_with_apply_mangles_the_answer_of_an_applied_request() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms", "times": 1,
        "action": { "type": "malformed", "apply": true, "status": 502,
                    "body": "upstream sent garbage", "content_type": "text/plain" },
    }))
    .await;
    let resp = post_svm(&mock, "m2").await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(resp.headers()["content-type"], "text/plain");
    assert_eq!(resp.text().await.unwrap(), "upstream sent garbage");
    assert_eq!(svm_names(&mock).await, ["m2"]);
}

#[tokio::test]
async fn huge_pads_the_real_answer_when_applied() {
    let mock = Mock::start(fast_mock()).await;
    let bytes = 3 * 1024 * 1024 + 17;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms", "times": 1,
        "action": { "type": "huge", "bytes": bytes, "apply": true },
    }))
    .await;
    let resp = mock
        .admin(Method::POST, "/api/svm/svms?return_records=true")
        .json(&json!({ "name": "big" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(
        resp.headers().get("content-length").is_none(),
        "the size shows only while reading"
    );
    let body = resp.bytes().await.unwrap();
    assert_eq!(body.len(), bytes);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["records"][0]["name"], "big");
    assert_eq!(svm_names(&mock).await, ["big"]);
}

#[tokio::test]
async fn huge_error_fills_the_body_with_its_message_and_applies_nothing() {
    let mock = Mock::start(fast_mock()).await;
    mock.add_fault(json!({
        "method": "POST", "path": "/api/svm/svms", "times": 1,
        "action": { "type": "huge" },
    }))
    .await;
    let resp = post_svm(&mock, "nope").await.unwrap();
    assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = resp.bytes().await.unwrap();
    assert_eq!(body.len(), 8 << 20, "8 MiB by default");
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error_code(&error), "13434889");
    assert!(svm_names(&mock).await.is_empty());
}

#[tokio::test]
async fn request_log_keeps_trace_context_and_user_agent_and_reads_from_a_seq() {
    let mock = Mock::start(fast_mock()).await;
    mock.get("/api/cluster").await;
    let (_, body) = mock.control(Method::GET, "/_mock/requests", None).await;
    let mark = body["next_seq"].as_u64().unwrap();
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (status, _) = common::read(
        mock.admin(Method::GET, "/api/svm/svms")
            .header("traceparent", traceparent)
            .header("user-agent", "ontap-operator/test")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    post_svm(&mock, "after").await.unwrap();

    let log = mock.requests(&[("since", mark.to_string().as_str())]).await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0]["seq"], mark);
    assert_eq!(log[0]["traceparent"], traceparent);
    assert_eq!(log[0]["user_agent"], "ontap-operator/test");
    assert_eq!(log[1]["method"], "POST");
    assert!(log[1]["traceparent"].is_null());
    let log = mock
        .requests(&[("since", mark.to_string().as_str()), ("method", "POST")])
        .await;
    assert_eq!(log.len(), 1);
    let (status, _) = mock
        .control(Method::GET, "/_mock/requests?since=soon", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn request_counts_per_method_and_path() {
    let mock = Mock::start(fast_mock()).await;
    for name in ["c1", "c2"] {
        post_svm(&mock, name).await.unwrap();
    }
    mock.get("/api/svm/svms").await;
    let (status, body) = mock
        .control(Method::GET, "/_mock/requests/counts", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["counts"]["POST /api/svm/svms"], 2);
    assert_eq!(body["counts"]["GET /api/svm/svms"], 1);
    let state = mock.server.state();
    assert_eq!(state.request_count("post", "/api/svm/svms"), 2);
    assert_eq!(state.request_count("DELETE", "/api/svm/svms"), 0);
    mock.control(Method::DELETE, "/_mock/requests", None).await;
    assert_eq!(state.request_count("POST", "/api/svm/svms"), 0);
}
