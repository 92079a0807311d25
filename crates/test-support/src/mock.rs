//! The one client of a mock ONTAP's control side: faults, settings, state and counts through
//! mock-ontap's Rust API; the request log and fault hits, which that API does not expose, over
//! `/_mock`.

use mock_ontap::{FaultSpec, MockConfig, MockServer, MockState};
use serde_json::Value;

/// Mock settings tests usually want: short jobs.
pub fn fast_mock() -> MockConfig {
    let mut config = MockConfig::default();
    config.settings.job_duration_ms = 100;
    config
}

pub struct Mock {
    pub server: MockServer,
    /// Trusts the mock's certificate when it serves TLS; also for authenticating as accounts.
    pub http: reqwest::Client,
}

impl Mock {
    pub async fn start(config: MockConfig) -> Self {
        Self::new(MockServer::start(config).await.unwrap())
    }

    pub async fn start_tls(config: MockConfig) -> Self {
        Self::new(MockServer::start_tls(config).await.unwrap())
    }

    /// HTTPS on an ephemeral port of `address` (a node's, which its Pods reach), with a
    /// certificate valid for it.
    pub async fn start_tls_on(config: MockConfig, address: std::net::IpAddr) -> Self {
        let identity = mock_ontap::TlsIdentity::self_signed_for(Some(address)).unwrap();
        let state = MockState::new(config).unwrap();
        let at = std::net::SocketAddr::new(address, 0);
        Self::new(MockServer::bind(at, state, Some(identity)).await.unwrap())
    }

    fn new(server: MockServer) -> Self {
        super::install_crypto_provider();
        let mut http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10));
        if let Some(pem) = server.cert_pem() {
            http = http.tls_certs_only([reqwest::Certificate::from_pem(pem.as_bytes()).unwrap()]);
        }
        Mock {
            http: http.build().unwrap(),
            server,
        }
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The mock's URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// A request to `path` as the cluster admin.
    pub fn admin(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let admin = self.server.admin();
        self.http
            .request(method, self.url(path))
            .basic_auth(&admin.user, Some(&admin.password))
    }

    /// Sends `body`, if any, to `path` as the cluster admin; gives the status and the answer's
    /// body (`Null` when it has none, a string when it is no JSON), whatever they are.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (reqwest::StatusCode, Value) {
        let mut request = self.admin(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        read(request.send().await.unwrap()).await
    }

    pub fn state(&self) -> &MockState {
        self.server.state()
    }

    /// Registers a fault; returns its id.
    pub fn fault(&self, spec: FaultSpec) -> String {
        self.state().add_fault(spec).unwrap()
    }

    /// Registers a fault written as the JSON body of `POST /_mock/faults`.
    pub fn fault_json(&self, spec: Value) -> String {
        self.fault(serde_json::from_value(spec).unwrap())
    }

    pub fn clear_faults(&self) {
        self.state().clear_faults();
    }

    /// The mock's state: `svms`, `accounts`, `interfaces`, `jobs`, in ONTAP's shapes.
    pub fn snapshot(&self) -> Value {
        self.state().snapshot()
    }

    /// How many times the registered faults fired.
    pub async fn fault_hits(&self) -> u64 {
        self.hits_where(|_| true).await
    }

    /// How many times the fault `id` fired.
    pub async fn hits(&self, id: &str) -> u64 {
        self.hits_where(|fault| fault["id"] == id).await
    }

    async fn hits_where(&self, fault: impl Fn(&Value) -> bool) -> u64 {
        let faults = self.control_json("/_mock/faults", &[]).await;
        faults["records"]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter(|f| fault(f))
                    .filter_map(|f| f["hits"].as_u64())
                    .sum()
            })
            .unwrap_or_default()
    }

    /// How many `/api` requests with `method` and a path starting with `prefix` arrived.
    pub async fn sent(&self, method: &str, prefix: &str) -> u64 {
        let counts = self.control_json("/_mock/requests/counts", &[]).await;
        let wanted = format!("{method} {prefix}");
        counts["counts"]
            .as_object()
            .map(|all| {
                all.iter()
                    .filter(|(key, _)| key.starts_with(&wanted))
                    .filter_map(|(_, n)| n.as_u64())
                    .sum()
            })
            .unwrap_or_default()
    }

    /// Sends `body` (none when `Null`) to `/api` as the cluster admin, as someone working behind
    /// the operator's back would; panics unless ONTAP accepts it. Gives the answer's body, `Null`
    /// when it has none.
    pub async fn as_admin(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let (status, answer) = self
            .call(method, path, (!body.is_null()).then_some(body))
            .await;
        assert!(status.is_success(), "{path}: {status}: {answer}");
        answer
    }

    /// The request log (newest last), narrowed to `filter`'s exact `method`, `path`, `user`.
    pub async fn requests(&self, filter: &[(&str, &str)]) -> Vec<Value> {
        let log = self.control_json("/_mock/requests", filter).await;
        log["records"].as_array().cloned().unwrap_or_default()
    }

    async fn control_json(&self, path: &str, query: &[(&str, &str)]) -> Value {
        let mut url = reqwest::Url::parse(&format!("{}{path}", self.base_url())).unwrap();
        url.query_pairs_mut().extend_pairs(query);
        self.http
            .get(url)
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// A response's status and body: `Null` when empty, a JSON string when the body is no JSON.
pub async fn read(response: reqwest::Response) -> (reqwest::StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}
