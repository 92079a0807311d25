//! Narrow tests of the client's HTTP layer against a tiny axum stub: things a faithful ONTAP
//! fake has no reason to do (huge or malformed bodies, hostile next links) and header/limit
//! mechanics. Behaviour against ONTAP's API is tested with mock-ontap in `client.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use ontap_client::{
    CredentialCheck, Credentials, ErrorClass, OntapClient, OntapConfig, OntapError,
    is_valid_traceparent,
};
use reqwest::Url;
use secrecy::SecretString;
use tokio::sync::Mutex;

const PASSWORD: &str = "AdminPassw0rdXyz";

#[derive(Default)]
struct Stub {
    headers: Mutex<Vec<HeaderMap>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

type S = State<Arc<Stub>>;

async fn record(State(s): S, headers: HeaderMap) {
    s.headers.lock().await.push(headers);
}

async fn cluster(state: S, headers: HeaderMap) -> impl IntoResponse {
    record(state, headers).await;
    axum::Json(serde_json::json!({
        "name": "c1", "uuid": "cu",
        "version": {"full": "NetApp Release 9.16.1", "generation": 9, "major": 16, "minor": 1}
    }))
}

async fn nodes_paged(axum::extract::RawQuery(q): axum::extract::RawQuery) -> impl IntoResponse {
    let q = q.unwrap_or_default();
    let (records, next) = if q.contains("start.uuid=n2") {
        (serde_json::json!([{"uuid": "n3", "name": "node3"}]), None)
    } else if q.contains("start.uuid=n1") {
        (
            serde_json::json!([{"uuid": "n2", "name": "node2"}]),
            Some("/api/cluster/nodes?start.uuid=n2&fields=uuid,name"),
        )
    } else {
        assert!(q.contains("max_records="), "{q}");
        assert!(q.contains("fields=uuid%2Cname"), "{q}");
        (
            serde_json::json!([{"uuid": "n1", "name": "node1"}]),
            Some("/api/cluster/nodes?start.uuid=n1&fields=uuid,name"),
        )
    };
    let mut body = serde_json::json!({"records": records, "num_records": 1});
    if let Some(n) = next {
        body["_links"] = serde_json::json!({"next": {"href": n}});
    }
    axum::Json(body)
}

async fn serve(router: Router) -> Url {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    Url::parse(&format!("http://{addr}")).unwrap()
}

fn client(url: Url, tweak: impl FnOnce(&mut OntapConfig)) -> OntapClient {
    let mut cfg = OntapConfig::new(url, Credentials::new("admin", PASSWORD.to_owned()));
    cfg.retry.min_delay = Duration::from_millis(5);
    cfg.retry.max_delay = Duration::from_millis(20);
    tweak(&mut cfg);
    OntapClient::new(cfg).unwrap()
}

#[tokio::test]
async fn sends_accept_auth_and_traceparent() {
    let stub = Arc::new(Stub::default());
    let url = serve(
        Router::new()
            .route("/api/cluster", get(cluster))
            .with_state(stub.clone()),
    )
    .await;
    let c = client(url, |_| {});
    let info = c.cluster().await.unwrap();
    assert_eq!(info.name, "c1");
    assert_eq!(info.version.to_string(), "9.16.1");
    c.cluster().await.unwrap();
    let headers = stub.headers.lock().await;
    assert_eq!(headers.len(), 2);
    let mut parents = Vec::new();
    for h in headers.iter() {
        assert_eq!(h["accept"], "application/hal+json");
        assert!(h["authorization"].to_str().unwrap().starts_with("Basic "));
        let tp = h["traceparent"].to_str().unwrap().to_owned();
        assert!(is_valid_traceparent(&tp), "{tp}");
        parents.push(tp);
    }
    assert_ne!(parents[0], parents[1], "each request has its own span id");
}

#[tokio::test]
async fn follows_next_links_across_pages() {
    let url = serve(Router::new().route("/api/cluster/nodes", get(nodes_paged))).await;
    let c = client(url, |cfg| cfg.page_size = 1);
    let nodes = c.nodes().await.unwrap();
    let names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node1", "node2", "node3"]);
}

#[tokio::test]
async fn next_link_to_another_server_is_refused() {
    let url = serve(Router::new().route(
        "/api/cluster/nodes",
        get(|| async {
            axum::Json(serde_json::json!({
                "records": [], "_links": {"next": {"href": "https://attacker.example/api/cluster/nodes"}}
            }))
        }),
    ))
    .await;
    let err = client(url, |_| {}).nodes().await.unwrap_err();
    assert!(matches!(err, OntapError::Decode { .. }), "{err:?}");
}

#[tokio::test]
async fn repeating_next_link_is_an_error_not_a_loop() {
    let url = serve(Router::new().route(
        "/api/cluster/nodes",
        get(|| async {
            axum::Json(serde_json::json!({
                "records": [{"uuid": "n", "name": "n"}],
                "_links": {"next": {"href": "/api/cluster/nodes?start.uuid=n"}}
            }))
        }),
    ))
    .await;
    let err = client(url, |_| {}).nodes().await.unwrap_err();
    assert!(err.to_string().contains("repeats"), "{err}");
}

#[tokio::test]
async fn huge_body_is_a_typed_error() {
    let url = serve(Router::new().route(
        "/api/cluster",
        get(|| async { vec![b' '; 2 * 1024 * 1024] }),
    ))
    .await;
    let c = client(url, |cfg| cfg.max_response_bytes = 1024 * 1024);
    let err = c.cluster().await.unwrap_err();
    assert!(
        matches!(err, OntapError::ResponseTooLarge { limit, .. } if limit == 1024 * 1024),
        "{err:?}"
    );
    assert_eq!(err.class(), ErrorClass::Transient);
}

#[tokio::test]
async fn huge_chunked_body_without_length_is_a_typed_error() {
    let url = serve(Router::new().route(
        "/api/cluster",
        get(|| async {
            let chunks = futures::stream::iter(
                (0..64).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 64 * 1024])),
            );
            axum::body::Body::from_stream(chunks)
        }),
    ))
    .await;
    let c = client(url, |cfg| cfg.max_response_bytes = 1024 * 1024);
    let err = c.cluster().await.unwrap_err();
    assert!(
        matches!(err, OntapError::ResponseTooLarge { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn malformed_json_is_a_decode_error_without_the_body() {
    let url = serve(Router::new().route(
        "/api/cluster",
        get(|| async { r#"{"name": "c1", "uuid": "AdminPassw0rdXyz", "version": "#.to_owned() }),
    ))
    .await;
    let err = client(url, |_| {}).cluster().await.unwrap_err();
    assert!(matches!(err, OntapError::Decode { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains(PASSWORD));
}

#[tokio::test]
async fn non_json_error_page_keeps_status_and_class() {
    let url = serve(Router::new().route(
        "/api/cluster",
        get(|| async { (StatusCode::BAD_GATEWAY, "<html>proxy error</html>") }),
    ))
    .await;
    let c = client(url, |cfg| cfg.retry.max_attempts = 1);
    let err = c.cluster().await.unwrap_err();
    assert_eq!(err.status(), Some(StatusCode::BAD_GATEWAY));
    assert!(err.api_error().is_none());
    assert_eq!(err.class(), ErrorClass::Transient);
}

#[tokio::test]
async fn concurrency_is_limited() {
    let stub = Arc::new(Stub::default());
    async fn slow(State(s): S) -> impl IntoResponse {
        let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        s.max_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.in_flight.fetch_sub(1, Ordering::SeqCst);
        axum::Json(serde_json::json!({"records": []}))
    }
    let url = serve(
        Router::new()
            .route("/api/cluster/nodes", get(slow))
            .with_state(stub.clone()),
    )
    .await;
    let c = client(url, |cfg| cfg.max_concurrent_requests = 2);
    let calls = (0..8).map(|_| {
        let c = c.clone();
        async move { c.nodes().await }
    });
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    assert_eq!(stub.max_in_flight.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn timeout_on_a_get_is_transient_and_not_ambiguous() {
    let url = serve(Router::new().route(
        "/api/cluster",
        get(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "late"
        }),
    ))
    .await;
    let c = client(url, |cfg| {
        cfg.request_timeout = Duration::from_millis(100);
        cfg.retry.max_attempts = 1;
    });
    let err = c.cluster().await.unwrap_err();
    assert!(matches!(err, OntapError::Timeout { .. }), "{err:?}");
    assert!(err.is_transient());
    assert!(!err.is_ambiguous());
}

#[tokio::test]
async fn verify_credentials_never_reports_rejected_on_transport_failure() {
    // A port nobody listens on: connection refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let c = client(Url::parse(&format!("http://{addr}")).unwrap(), |cfg| {
        cfg.retry.max_attempts = 2
    });
    let pw = SecretString::from("SvmPassw0rd123".to_owned());
    let err = c
        .verify_credentials("vsadmin", &pw, "svm1")
        .await
        .unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(!err.to_string().contains("SvmPassw0rd123"));
}

#[tokio::test]
async fn verify_credentials_401_is_rejected_and_5xx_is_an_error() {
    let url = serve(
        Router::new()
            .route(
                "/api/svm/svms",
                get(|headers: HeaderMap| async move {
                    // "dnNhZG1pbjp3cm9uZw==" is vsadmin:wrong
                    if headers["authorization"] == "Basic dnNhZG1pbjp3cm9uZw==" {
                        (
                            StatusCode::UNAUTHORIZED,
                            r#"{"error":{"message":"not authorized","code":"6"}}"#,
                        )
                            .into_response()
                    } else {
                        (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response()
                    }
                }),
            )
            .route(
                "/api/cluster",
                get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "") }),
            ),
    )
    .await;
    let c = client(url, |_| {});
    let wrong = SecretString::from("wrong".to_owned());
    assert_eq!(
        c.verify_credentials("vsadmin", &wrong, "svm1")
            .await
            .unwrap(),
        CredentialCheck::Rejected
    );
    let other = SecretString::from("OtherPassw0rd".to_owned());
    let err = c
        .verify_credentials("vsadmin", &other, "svm1")
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(StatusCode::INTERNAL_SERVER_ERROR));
}

#[tokio::test]
async fn bad_configs_are_rejected_up_front() {
    let creds = || Credentials::new("admin", PASSWORD.to_owned());
    let bad = |u: &str| OntapClient::new(OntapConfig::new(Url::parse(u).unwrap(), creds()));
    assert!(matches!(bad("ftp://10.0.0.1"), Err(OntapError::Config(_))));
    let mut cfg = OntapConfig::new(Url::parse("https://10.0.0.1").unwrap(), creds());
    cfg.max_concurrent_requests = 0;
    assert!(matches!(OntapClient::new(cfg), Err(OntapError::Config(_))));
    let mut cfg = OntapConfig::new(Url::parse("https://10.0.0.1").unwrap(), creds());
    cfg.tls = ontap_client::TlsVerification::CaBundle(b"garbage".to_vec());
    assert!(matches!(OntapClient::new(cfg), Err(OntapError::Config(_))));
    let c = bad("https://10.0.0.1").unwrap();
    assert!(!format!("{c:?}").contains(PASSWORD));
}
