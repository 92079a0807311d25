//! ONTAP clients per OntapCluster, built from the cluster's Secrets and rebuilt when they change.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, ResourceExt};
use secrecy::{ExposeSecret, SecretString};

use crate::api::{OntapCluster, SecretReference};
use crate::engine::{Outcome, StepError, Wait};
use crate::ontap::{
    Credentials, OntapClient, OntapConfig, OntapError, OntapMetrics, TlsVerification,
};

/// How long to wait before looking again for something the user has to create (a Secret, an
/// OntapCluster). Creating it does not trigger a reconcile, so this bounds the delay.
pub const MISSING_REFERENCE_RECHECK: Duration = Duration::from_secs(30);

/// Settings every ONTAP client of this process shares.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    pub request_timeout: Duration,
    pub metrics: Option<OntapMetrics>,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            request_timeout: OntapConfig::DEFAULT_REQUEST_TIMEOUT,
            metrics: None,
        }
    }
}

#[derive(Clone)]
pub struct ClusterConnections {
    kube: Client,
    settings: ClientSettings,
    clients: Arc<Mutex<HashMap<String, (u64, OntapClient)>>>,
}

/// Why no client could be had: something the user has to create, or a step error.
pub enum ConnectError {
    Wait(Wait),
    Error(StepError),
}

impl ConnectError {
    /// What the step that needed the client reports.
    pub fn into_step_result<T>(self) -> Result<Outcome<T>, StepError> {
        match self {
            Self::Wait(wait) => Ok(Outcome::Waiting(wait)),
            Self::Error(error) => Err(error),
        }
    }
}

impl From<StepError> for ConnectError {
    fn from(e: StepError) -> Self {
        Self::Error(e)
    }
}

/// Something the user has to create: look again after [`MISSING_REFERENCE_RECHECK`].
pub fn missing(reason: &'static str, message: String) -> Wait {
    Wait {
        reason: reason.into(),
        message,
        after: MISSING_REFERENCE_RECHECK,
    }
}

fn secret_key(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()?
        .get(key)
        .map(|v| v.0.clone())
        .filter(|v| !v.is_empty())
}

impl ClusterConnections {
    pub fn new(kube: Client, settings: ClientSettings) -> Self {
        Self {
            kube,
            settings,
            clients: Arc::default(),
        }
    }

    /// The timeout of one ONTAP request.
    pub fn request_timeout(&self) -> Duration {
        self.settings.request_timeout
    }

    async fn read_secret(
        &self,
        reference: &SecretReference,
        what: &str,
    ) -> Result<Secret, ConnectError> {
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &reference.namespace);
        match api.get_opt(&reference.name).await {
            Ok(Some(secret)) => Ok(secret),
            Ok(None) => Err(ConnectError::Wait(missing(
                "SecretNotFound",
                format!(
                    "the {what} Secret {}/{} does not exist",
                    reference.namespace, reference.name
                ),
            ))),
            Err(e) => Err(StepError::from_kube("SecretReadFailed", e).into()),
        }
    }

    /// The client for `cluster`, built from its Secrets as they are now. The client (and its
    /// connection pool) is reused while endpoint, credentials and CA stay the same.
    pub async fn connect(&self, cluster: &OntapCluster) -> Result<OntapClient, ConnectError> {
        let spec = &cluster.spec;
        let credentials = self
            .read_secret(&spec.credentials_secret_ref, "credentials")
            .await?;
        let (Some(username), Some(password)) = (
            secret_key(&credentials, "username"),
            secret_key(&credentials, "password"),
        ) else {
            return Err(ConnectError::Error(StepError::invalid(
                "CredentialsIncomplete",
                format!(
                    "the credentials Secret {}/{} needs the keys username and password",
                    spec.credentials_secret_ref.namespace, spec.credentials_secret_ref.name
                ),
            )));
        };
        let ca = match &spec.ca_secret_ref {
            None => None,
            Some(reference) => {
                let secret = self.read_secret(reference, "CA").await?;
                Some(secret_key(&secret, "ca.crt").ok_or_else(|| {
                    StepError::invalid(
                        "CAIncomplete",
                        format!(
                            "the CA Secret {}/{} needs the key ca.crt",
                            reference.namespace, reference.name
                        ),
                    )
                })?)
            }
        };
        let username = String::from_utf8(username).map_err(|_| {
            StepError::invalid("CredentialsIncomplete", "the username is not UTF-8")
        })?;
        let password = SecretString::from(String::from_utf8(password).map_err(|_| {
            StepError::invalid("CredentialsIncomplete", "the password is not UTF-8")
        })?);
        let endpoint = reqwest::Url::parse(&spec.endpoint)
            .map_err(|e| StepError::invalid("InvalidEndpoint", format!("spec.endpoint: {e}")))?;

        let mut hasher = DefaultHasher::new();
        (
            spec.endpoint.as_str(),
            username.as_str(),
            password.expose_secret(),
            &ca,
            spec.insecure_skip_tls_verify,
        )
            .hash(&mut hasher);
        let fingerprint = hasher.finish();
        let key = cluster.name_any();
        if let Some((fp, client)) = self.lock().get(&key)
            && *fp == fingerprint
        {
            return Ok(client.clone());
        }
        let mut config = OntapConfig::new(endpoint, Credentials::new(username, password));
        config.tls = TlsVerification::from_spec(ca, spec.insecure_skip_tls_verify);
        config.request_timeout = self.settings.request_timeout;
        config.metrics = self.settings.metrics.clone();
        let client = OntapClient::new(config).map_err(|e| ontap_error("ClientConfigInvalid", e))?;
        self.lock().insert(key, (fingerprint, client.clone()));
        Ok(client)
    }

    /// Drops the cached client of a deleted cluster.
    pub fn forget(&self, cluster_name: &str) {
        self.lock().remove(cluster_name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, OntapClient)>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An ONTAP error as a step error, classified the way the engine schedules it. `reason` names
/// the operation; where ONTAP's answer says more (an address or name held by someone else,
/// several records where one was expected) that typed reason replaces it, so a condition says
/// what to fix rather than what failed.
pub fn ontap_error(reason: &'static str, error: OntapError) -> StepError {
    use crate::ontap::{ErrorClass, codes};
    let reason = match (&error, error.ontap_code()) {
        (OntapError::MultipleRecords { .. }, _) => "DuplicateRecords",
        (_, Some(codes::DUPLICATE_IP)) => "AddressInUse",
        (_, Some(codes::SVM_NAME_IN_USE)) => "SVMNameInUse",
        (_, Some(codes::LIF_NAME_EXISTS)) => "LIFNameInUse",
        _ => reason,
    };
    match error.class() {
        ErrorClass::Invalid => StepError::invalid(reason, error.to_string()),
        ErrorClass::Conflict => StepError::conflict(reason, error.to_string()),
        // Wrong admin credentials or a missing object: retrying with backoff is right, as both
        // can be repaired from outside (a new Secret, a recreated object) without a spec change.
        ErrorClass::Transient | ErrorClass::NotFound | ErrorClass::Unauthenticated => {
            StepError::transient(reason, error)
        }
    }
}

/// How long to wait when ONTAP refuses a job because too many run (its back-pressure, not a
/// failure): about one job's duration.
pub const ONTAP_BUSY_RECHECK: Duration = Duration::from_secs(1);
/// How long to wait when the SVM itself is busy with a create or delete job: those take longer.
pub const SVM_BUSY_RECHECK: Duration = Duration::from_secs(5);

/// ONTAP's "too many jobs" (13434894) or "the SVM is busy with another job" (13434916) as a
/// wait: the request was refused, nothing happened, and it will work once the job ends.
pub fn ontap_busy(error: &OntapError) -> Option<Wait> {
    use crate::ontap::codes;
    let (reason, message, after) = match error.ontap_code()? {
        codes::TOO_MANY_JOBS => (
            "ONTAPBusy",
            "ONTAP runs as many jobs as it allows",
            ONTAP_BUSY_RECHECK,
        ),
        codes::SVM_BEING_CREATED => (
            "SVMBusy",
            "ONTAP is still creating or deleting the SVM",
            SVM_BUSY_RECHECK,
        ),
        _ => return None,
    };
    Some(Wait {
        reason: reason.into(),
        message: format!("{message}; trying again when its job has ended"),
        after,
    })
}
