//! What the mock's own tests add to the workspace harness ([`test_support`]), whose [`Mock`] and
//! poller they use: requests to the mock's REST and control APIs that give the status back,
//! since those answers are what these tests check, and the ONTAP steps most tests begin with.
#![allow(clippy::unwrap_used, dead_code, unused_imports)]

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub use test_support::mock::{Mock, fast_mock, read};
pub use test_support::{poll, try_poll_every};

/// A reqwest builder with ring as rustls' provider: the workspace builds reqwest without a
/// provider of its own so that ring, which kube also uses, is the only one.
pub fn http() -> reqwest::ClientBuilder {
    test_support::install_crypto_provider();
    reqwest::Client::builder()
}

/// The mock's REST and control APIs as these tests call them. A trait, since [`Mock`] is the
/// harness's; implemented for it alone.
#[allow(async_fn_in_trait)]
pub trait MockApi {
    async fn get(&self, path: &str) -> (StatusCode, Value);
    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value);
    async fn as_user(&self, user: &str, password: &str, path: &str) -> (StatusCode, Value);
    /// A request to `/_mock/…` (no authentication).
    async fn control(&self, method: Method, path: &str, body: Option<Value>)
    -> (StatusCode, Value);
    /// Registers a fault through `POST /_mock/faults`; returns its id.
    async fn add_fault(&self, fault: Value) -> String;
    /// Polls a job until it is terminal.
    async fn wait_job(&self, uuid: &str) -> Value;
    /// Creates an SVM and waits for its job to succeed; returns its uuid.
    async fn create_svm(&self, name: &str) -> String;
    async fn create_account(&self, svm_uuid: &str, name: &str, password: &str);
}

impl MockApi for Mock {
    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    async fn as_user(&self, user: &str, password: &str, path: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(self.url(path))
            .basic_auth(user, Some(password))
            .send()
            .await
            .unwrap();
        read(response).await
    }

    async fn control(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.http.request(method, self.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        read(request.send().await.unwrap()).await
    }

    async fn add_fault(&self, fault: Value) -> String {
        let (status, body) = self
            .control(Method::POST, "/_mock/faults", Some(fault))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    async fn wait_job(&self, uuid: &str) -> Value {
        let path = format!("/api/cluster/jobs/{uuid}");
        // Jobs here last tens of milliseconds: a tight look keeps the suite fast.
        try_poll_every(
            Duration::from_secs(10),
            Duration::from_millis(10),
            async || {
                let (status, job) = self.get(&path).await;
                assert_eq!(status, StatusCode::OK, "{job}");
                matches!(job["state"].as_str(), Some("success" | "failure")).then_some(job)
            },
        )
        .await
        .unwrap_or_else(|why| panic!("job {uuid} terminal: {why}"))
    }

    async fn create_svm(&self, name: &str) -> String {
        let (status, body) = self
            .post("/api/svm/svms?return_records=true", json!({ "name": name }))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let job = self.wait_job(body["job"]["uuid"].as_str().unwrap()).await;
        assert_eq!(job["state"], "success", "{job}");
        body["records"][0]["uuid"].as_str().unwrap().to_owned()
    }

    async fn create_account(&self, svm_uuid: &str, name: &str, password: &str) {
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

pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}
