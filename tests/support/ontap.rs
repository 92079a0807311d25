//! For the ONTAP client tests: a mock-ontap on an ephemeral port, a client for it,
//! and access to the mock's control API.

use std::time::Duration;

use mock_ontap::{MockConfig, MockServer};
use ontap_operator::ontap::{
    Credentials, IpInfo, IpInterfaceCreate, ObjectRef, OntapClient, OntapConfig, ProtocolState,
    Svm, SvmCreate,
};
use reqwest::Url;
use serde_json::Value;

pub const ADMIN_PASSWORD: &str = "AdminSecret4711x";
pub const SVM_PASSWORD: &str = "SvmSecret0815abcd";

pub struct Env {
    pub server: MockServer,
    pub client: OntapClient,
    /// For `/_mock` only.
    pub ctl: reqwest::Client,
}

pub fn mock_config() -> MockConfig {
    let mut config = MockConfig::default();
    config.admin.password = ADMIN_PASSWORD.into();
    config.settings.job_duration_ms = 50;
    config
}

pub fn client_config(base: &str) -> OntapConfig {
    let mut cfg = OntapConfig::new(
        Url::parse(base).unwrap(),
        Credentials::new("admin", ADMIN_PASSWORD.to_owned()),
    );
    cfg.request_timeout = Duration::from_secs(5);
    cfg.retry.min_delay = Duration::from_millis(10);
    cfg.retry.max_delay = Duration::from_millis(50);
    cfg.job_poll.initial_interval = Duration::from_millis(20);
    cfg.job_poll.max_interval = Duration::from_millis(100);
    cfg.job_poll.deadline = Duration::from_secs(10);
    cfg
}

impl Env {
    pub async fn start() -> Self {
        Self::start_with(mock_config(), |_| {}).await
    }

    pub async fn start_with(config: MockConfig, tweak: impl FnOnce(&mut OntapConfig)) -> Self {
        let server = MockServer::start(config).await.unwrap();
        let mut cfg = client_config(&server.base_url());
        tweak(&mut cfg);
        let client = OntapClient::new(cfg).unwrap();
        Self {
            server,
            client,
            ctl: {
                super::install_crypto_provider();
                reqwest::Client::new()
            },
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    pub async fn fault(&self, spec: Value) {
        let r = self
            .ctl
            .post(self.url("/_mock/faults"))
            .json(&spec)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }

    pub async fn settings(&self, patch: Value) {
        let r = self
            .ctl
            .put(self.url("/_mock/config"))
            .json(&patch)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    /// Requests the mock received with this method and path.
    pub async fn requests(&self, method: &str, path: &str) -> Vec<Value> {
        let log: Value = self
            .ctl
            .get({
                let mut u = Url::parse(&self.url("/_mock/requests")).unwrap();
                u.query_pairs_mut()
                    .append_pair("method", method)
                    .append_pair("path", path);
                u
            })
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let records = &log["records"];
        records.as_array().cloned().unwrap_or_default()
    }

    pub async fn create_svm(&self, name: &str) -> Svm {
        self.client.create_svm(&svm_create(name)).await.unwrap()
    }
}

pub fn svm_create(name: &str) -> SvmCreate {
    SvmCreate {
        name: name.into(),
        nfs: Some(ProtocolState { enabled: true }),
        comment: Some("made by the client tests".into()),
        ..Default::default()
    }
}

pub fn lif(svm_uuid: &str, name: &str, address: &str) -> IpInterfaceCreate {
    IpInterfaceCreate {
        name: name.into(),
        enabled: true,
        svm: ObjectRef::by_uuid(svm_uuid),
        ip: IpInfo {
            address: address.into(),
            netmask: "24".into(),
        },
        location: None,
        service_policy: Some(ObjectRef::by_name("default-data-files")),
    }
}
