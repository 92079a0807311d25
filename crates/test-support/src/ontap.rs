//! For the ONTAP client tests: a mock-ontap on an ephemeral port, a client for it, and the
//! mock's control client.

use std::time::Duration;

use mock_ontap::MockConfig;
use ontap_client::{
    AccountPatch, Credentials, IpInfo, IpInterfaceCreate, ObjectRef, OntapClient, OntapConfig,
    ProtocolState, Svm, SvmCreate,
};
use reqwest::Url;
use secrecy::SecretString;

use super::mock::Mock;

pub const ADMIN_PASSWORD: &str = "AdminSecret4711x";
pub const SVM_PASSWORD: &str = "SvmSecret0815abcd";

pub struct Env {
    pub mock: Mock,
    pub client: OntapClient,
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
        let mock = Mock::start(config).await;
        let mut cfg = client_config(&mock.base_url());
        tweak(&mut cfg);
        let client = OntapClient::new(cfg).unwrap();
        Self { mock, client }
    }

    /// Requests the mock received with this method and path.
    pub async fn requests(&self, method: &str, path: &str) -> Vec<serde_json::Value> {
        self.mock
            .requests(&[("method", method), ("path", path)])
            .await
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
        vip: false,
    }
}

/// Takes over an SVM's built-in `vsadmin` as ONTAP requires: the password first (ONTAP refuses
/// to lock or unlock an account without one), then the unlock.
pub async fn take_over_vsadmin(client: &OntapClient, svm_uuid: &str, password: &SecretString) {
    client
        .set_account_password(svm_uuid, "vsadmin", password)
        .await
        .unwrap();
    let unlock = AccountPatch {
        locked: Some(false),
        ..AccountPatch::default()
    };
    client
        .patch_account(svm_uuid, "vsadmin", &unlock)
        .await
        .unwrap();
}
