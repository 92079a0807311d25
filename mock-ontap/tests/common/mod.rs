//! Shared helpers: a mock on an ephemeral port plus a reqwest client speaking to it.
#![allow(clippy::unwrap_used, dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

use mock_ontap::{MockConfig, MockServer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A reqwest builder with ring as rustls' provider: the workspace builds reqwest without a
/// provider of its own so that ring, which kube also uses, is the only one.
pub fn http() -> reqwest::ClientBuilder {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

pub struct Mock {
    pub server: MockServer,
    pub client: reqwest::Client,
}

/// Short jobs keep the suite fast; tests that watch phases set their own duration.
pub fn fast_config() -> MockConfig {
    let mut config = MockConfig::default();
    config.settings.job_duration_ms = 50;
    config
}

impl Mock {
    pub async fn start() -> Self {
        Self::with(fast_config()).await
    }

    pub async fn with(config: MockConfig) -> Self {
        let server = MockServer::start(config).await.unwrap();
        let client = http().timeout(Duration::from_secs(10)).build().unwrap();
        Self { server, client }
    }

    pub async fn with_tls(config: MockConfig) -> Self {
        let server = MockServer::start_tls(config).await.unwrap();
        let cert = reqwest::Certificate::from_pem(server.cert_pem().unwrap().as_bytes()).unwrap();
        let client = http()
            .tls_certs_only([cert])
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        Self { server, client }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    /// A request as the cluster admin.
    pub fn admin(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let admin = self.server.admin();
        self.client
            .request(method, self.url(path))
            .basic_auth(&admin.user, Some(&admin.password))
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.admin(method, path);
        if let Some(body) = body {
            req = req.json(&body);
        }
        read(req.send().await.unwrap()).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn as_user(&self, user: &str, password: &str, path: &str) -> (StatusCode, Value) {
        let resp = self
            .client
            .get(self.url(path))
            .basic_auth(user, Some(password))
            .send()
            .await
            .unwrap();
        read(resp).await
    }

    /// `POST /_mock/…` (no auth).
    pub async fn control(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.client.request(method, self.url(path));
        if let Some(body) = body {
            req = req.json(&body);
        }
        read(req.send().await.unwrap()).await
    }

    pub async fn add_fault(&self, fault: Value) -> String {
        let (status, body) = self
            .control(Method::POST, "/_mock/faults", Some(fault))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    pub async fn state(&self) -> Value {
        self.control(Method::GET, "/_mock/state", None).await.1
    }

    pub async fn requests(&self, query: &str) -> Vec<Value> {
        let body = self
            .control(Method::GET, &format!("/_mock/requests{query}"), None)
            .await
            .1;
        body["records"].as_array().unwrap().clone()
    }

    /// Polls a job until it is terminal.
    pub async fn wait_job(&self, uuid: &str) -> Value {
        let path = format!("/api/cluster/jobs/{uuid}");
        eventually(Duration::from_secs(10), || async {
            let (status, job) = self.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{job}");
            matches!(job["state"].as_str(), Some("success" | "failure")).then_some(job)
        })
        .await
    }

    /// Creates an SVM and waits for its job to succeed; returns its uuid.
    pub async fn create_svm(&self, name: &str) -> String {
        let (status, body) = self
            .post("/api/svm/svms?return_records=true", json!({ "name": name }))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let job = self.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
        assert_eq!(job["state"], "success", "{job}");
        body["records"][0]["uuid"].as_str().unwrap().to_owned()
    }

    pub async fn create_account(&self, svm_uuid: &str, name: &str, password: &str) {
        let (status, body) = self
            .post(
                "/api/security/accounts",
                json!({
                    "name": name,
                    "owner": { "uuid": svm_uuid },
                    "role": { "name": "vsadmin" },
                    "applications": [{ "application": "http", "authentication_methods": ["password"] }],
                    "password": password,
                }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
}

pub async fn read(resp: reqwest::Response) -> (StatusCode, Value) {
    let status = resp.status();
    let text = resp.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// Retries `probe` until it yields a value or the deadline passes (then panics).
pub async fn eventually<F, Fut, T>(deadline: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let end = Instant::now() + deadline;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < end,
            "condition not met within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}
