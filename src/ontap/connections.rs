//! ONTAP clients per OntapCluster, built from the cluster's Secrets and rebuilt when they change.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, ResourceExt};
use secrecy::{ExposeSecret, SecretString};

use crate::api::{OntapCluster, SecretReference};

use ontap_client::{
    Aggregate, CertificateFingerprint, Credentials, OntapClient, OntapConfig, OntapError,
    OntapMetrics, TlsVerification,
};
use reconcile_engine::reasons;
use reconcile_engine::{RemoteSystem, StepError, StepFlow, Wait};

/// How long to wait before looking again for something the user has to create (a Secret, an
/// OntapCluster). Creating it does not trigger a reconcile, so this bounds the delay.
pub const MISSING_REFERENCE_RECHECK: Duration = Duration::from_secs(30);

/// Settings every ONTAP client of this process shares.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    pub request_timeout: Duration,
    pub metrics: Option<OntapMetrics>,
    /// The one namespace whose Secrets an OntapCluster may name for its credentials and CA.
    pub credentials_namespace: String,
    /// The proxy ONTAP requests go through; `None`: none, whatever the environment says.
    pub proxy: Option<reqwest::Url>,
    /// Requests one cluster's client sends at once, and so passes over its objects run at once:
    /// a pass sends one request at a time.
    pub requests_per_cluster: usize,
    /// ONTAP jobs (SVM create, change, delete) the operator runs at once per cluster.
    pub svm_jobs_per_cluster: usize,
    /// Of those, the most one namespace holds at once (`None`: all of them).
    pub svm_jobs_per_namespace: Option<usize>,
    /// How long a cluster's aggregate list is used for SVM creates before it is listed again.
    pub aggregates_max_age: Duration,
    /// Steady StorageVirtualMachines a cluster needs before their passes confirm their SVM and
    /// LIFs from the cluster's inventory instead of looking each up.
    pub inventory_min_svms: u32,
}

/// Below this many steady objects per cluster, an inventory read every half sync period (two
/// requests and more) saves little over the two lookups per object and sync period.
pub const DEFAULT_INVENTORY_MIN_SVMS: u32 = 8;

/// ONTAP runs at most 5 SVM jobs at once and refuses a 6th (13434894).
pub const DEFAULT_SVM_JOBS_PER_CLUSTER: usize = 5;

/// Requests a cluster's client sends at once by default: enough to keep a cluster that answers in
/// ~50 ms busy, few enough that one answering slowly holds no more of the controller's workers.
pub const DEFAULT_REQUESTS_PER_CLUSTER: u16 = 20;

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            request_timeout: OntapConfig::DEFAULT_REQUEST_TIMEOUT,
            metrics: None,
            credentials_namespace: crate::deploy::NAMESPACE.to_owned(),
            proxy: None,
            requests_per_cluster: usize::from(DEFAULT_REQUESTS_PER_CLUSTER),
            svm_jobs_per_cluster: DEFAULT_SVM_JOBS_PER_CLUSTER,
            svm_jobs_per_namespace: None,
            aggregates_max_age: AGGREGATES_MAX_AGE,
            inventory_min_svms: DEFAULT_INVENTORY_MIN_SVMS,
        }
    }
}

/// `Connected` reason: an OntapCluster names a Secret outside the credentials namespace.
pub const SECRET_NAMESPACE_NOT_ALLOWED: &str = Connect::SecretNamespaceNotAllowed.as_str();

reasons! {
    /// Why a cluster's client cannot be built: shared by every controller that talks to ONTAP.
    pub enum Connect {
        SecretNamespaceNotAllowed => "SecretNamespaceNotAllowed",
        SecretNotFound => "SecretNotFound",
        SecretReadFailed => "SecretReadFailed",
        CredentialsIncomplete => "CredentialsIncomplete",
        CaIncomplete => "CAIncomplete",
        InvalidEndpoint => "InvalidEndpoint",
        InvalidFingerprint => "InvalidFingerprint",
        ClientConfigInvalid => "ClientConfigInvalid",
    }
}

reasons! {
    /// What ONTAP's answer says when it says more than which operation failed: it replaces
    /// the operation's reason ([`ontap_error`]), or makes a refusal a wait ([`wait_if_busy`]).
    pub enum OntapAnswer {
        DuplicateRecords => "DuplicateRecords",
        AddressInUse => "AddressInUse",
        /// ONTAP refused a create because the SVM name is taken: the next pass looks the
        /// name up and decides (its own, adopted, or `SVMNameInUse`), so it is retried.
        SvmNameConflict => "SVMNameConflict",
        LifNameInUse => "LIFNameInUse",
        OntapBusy => "ONTAPBusy",
        SvmBusy => "SVMBusy",
    }
}

#[derive(Clone)]
pub struct ClusterConnections {
    kube: Client,
    settings: ClientSettings,
    clients: Arc<Mutex<HashMap<String, (u64, OntapClient)>>>,
    /// Each cluster's aggregates as last listed, and when.
    aggregates: Arc<Mutex<HashMap<String, Listed>>>,
}

/// A cluster's aggregates and when they were listed.
type Listed = (Instant, Vec<Aggregate>);

/// How long a cluster's aggregate list is used for SVM creates before it is listed again, by
/// default: aggregates come and go in hours, SVMs are created by the thousand in minutes.
pub const AGGREGATES_MAX_AGE: Duration = Duration::from_secs(30);

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
            aggregates: Arc::default(),
        }
    }

    /// The aggregates of `cluster`, listed through `client` at most every
    /// [`ClientSettings::aggregates_max_age`]; only what an SVM create body names, so a list that is a little
    /// old costs at worst a refused create (after which [`forget_aggregates`](Self::forget_aggregates)).
    pub async fn aggregates(
        &self,
        cluster: &str,
        client: &OntapClient,
    ) -> Result<Vec<Aggregate>, OntapError> {
        if let Some((at, list)) = self.lock_aggregates().get(cluster)
            && at.elapsed() < self.settings.aggregates_max_age
        {
            return Ok(list.clone());
        }
        let list = client.aggregates().await?;
        self.lock_aggregates()
            .insert(cluster.to_owned(), (Instant::now(), list.clone()));
        Ok(list)
    }

    /// Lists `cluster`'s aggregates afresh next time.
    pub fn forget_aggregates(&self, cluster: &str) {
        self.lock_aggregates().remove(cluster);
    }

    fn lock_aggregates(&self) -> std::sync::MutexGuard<'_, HashMap<String, Listed>> {
        self.aggregates.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The OntapCluster `cluster` as the remote system its objects' passes talk to: as many
    /// passes at once as its client sends requests at once (a pass sends one at a time, so more
    /// would only wait for the client, holding workers), and as many ONTAP jobs at once as the
    /// operator may run there (more would only be refused as "too many jobs", each refusal a
    /// request and a pass spent for nothing).
    pub fn remote_system(&self, cluster: &str) -> RemoteSystem {
        let jobs = self.settings.svm_jobs_per_cluster;
        RemoteSystem::new(
            format!("the OntapCluster {cluster}"),
            self.settings.requests_per_cluster,
            jobs,
        )
        .jobs_per_namespace(self.settings.svm_jobs_per_namespace.unwrap_or(jobs))
    }

    /// Steady StorageVirtualMachines a cluster needs for its inventory to be read.
    pub fn inventory_min_svms(&self) -> usize {
        usize::try_from(self.settings.inventory_min_svms).unwrap_or(usize::MAX)
    }

    /// The timeout of one ONTAP request.
    pub fn request_timeout(&self) -> Duration {
        self.settings.request_timeout
    }

    /// The namespace whose Secrets OntapClusters may name.
    pub fn credentials_namespace(&self) -> &str {
        &self.settings.credentials_namespace
    }

    async fn read_secret(&self, reference: &SecretReference, what: &str) -> StepFlow<Secret> {
        // Checked before reading: otherwise whoever may create an OntapCluster could have any
        // Secret of the cluster sent, as Basic credentials, to an endpoint of their choosing.
        let allowed = &self.settings.credentials_namespace;
        if reference.namespace != *allowed {
            return Err(StepError::invalid(
                SECRET_NAMESPACE_NOT_ALLOWED,
                format!(
                    "the {what} Secret {}/{} is outside the namespace {allowed}, the only one whose Secrets the operator reads for OntapClusters (--credentials-namespace); move the Secret there",
                    reference.namespace, reference.name
                ),
            )
            .into());
        }
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &reference.namespace);
        match api.get_opt(&reference.name).await {
            Ok(Some(secret)) => Ok(secret),
            Ok(None) => Err(missing(
                Connect::SecretNotFound.as_str(),
                format!(
                    "the {what} Secret {}/{} does not exist",
                    reference.namespace, reference.name
                ),
            )
            .into()),
            Err(e) => Err(StepError::from_kube(Connect::SecretReadFailed.as_str(), e).into()),
        }
    }

    /// The client for `cluster`, built from its Secrets as they are now; a wait while a Secret
    /// it names does not exist. The client (and its connection pool) is reused while endpoint,
    /// credentials and CA stay the same.
    pub async fn connect(&self, cluster: &OntapCluster) -> StepFlow<OntapClient> {
        let spec = &cluster.spec;
        let (username, password) = self.credentials(cluster).await?;
        let ca = match &spec.ca_secret_ref {
            None => None,
            Some(reference) => {
                let secret = self.read_secret(reference, "CA").await?;
                Some(secret_key(&secret, "ca.crt").ok_or_else(|| {
                    StepError::invalid(
                        Connect::CaIncomplete.as_str(),
                        format!(
                            "the CA Secret {}/{} needs the key ca.crt",
                            reference.namespace, reference.name
                        ),
                    )
                })?)
            }
        };
        let endpoint = reqwest::Url::parse(&spec.endpoint).map_err(|e| {
            StepError::invalid(
                Connect::InvalidEndpoint.as_str(),
                format!("spec.endpoint: {e}"),
            )
        })?;
        let pin = spec
            .ca_fingerprint
            .as_deref()
            .map(str::parse::<CertificateFingerprint>)
            .transpose()
            .map_err(|e| {
                StepError::invalid(
                    Connect::InvalidFingerprint.as_str(),
                    format!("spec.caFingerprint: {e}"),
                )
            })?;
        let mut hasher = DefaultHasher::new();
        (
            spec.endpoint.as_str(),
            username.as_str(),
            password.expose_secret(),
            &ca,
            pin.map(|p| p.0),
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
        config.tls = TlsVerification::from_spec(ca, pin, spec.insecure_skip_tls_verify);
        config.request_timeout = self.settings.request_timeout;
        config.max_concurrent_requests = self.settings.requests_per_cluster;
        config.proxy = self.settings.proxy.clone();
        config.metrics = self.settings.metrics.as_ref().map(|m| m.for_cluster(&key));
        let client = OntapClient::new(config)
            .map_err(|e| ontap_error(Connect::ClientConfigInvalid.as_str(), e))?;
        self.lock().insert(key, (fingerprint, client.clone()));
        Ok(client)
    }

    /// The admin username and password of `cluster`, from its credentials Secret.
    async fn credentials(&self, cluster: &OntapCluster) -> StepFlow<(String, SecretString)> {
        let reference = &cluster.spec.credentials_secret_ref;
        let credentials = self.read_secret(reference, "credentials").await?;
        let (Some(username), Some(password)) = (
            secret_key(&credentials, "username"),
            secret_key(&credentials, "password"),
        ) else {
            return Err(StepError::invalid(
                Connect::CredentialsIncomplete.as_str(),
                format!(
                    "the credentials Secret {}/{} needs the keys username and password",
                    reference.namespace, reference.name
                ),
            )
            .into());
        };
        let username = String::from_utf8(username).map_err(|_| {
            StepError::invalid(
                Connect::CredentialsIncomplete.as_str(),
                "the username is not UTF-8",
            )
        })?;
        let password = SecretString::from(String::from_utf8(password).map_err(|_| {
            StepError::invalid(
                Connect::CredentialsIncomplete.as_str(),
                "the password is not UTF-8",
            )
        })?);
        Ok((username, password))
    }

    /// Drops the cached client of a deleted cluster.
    pub fn forget(&self, cluster_name: &str) {
        self.lock().remove(cluster_name);
        self.forget_aggregates(cluster_name);
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
    use ontap_client::{ErrorClass, codes};
    let reason = match (&error, error.ontap_code()) {
        (OntapError::MultipleRecords { .. }, _) => OntapAnswer::DuplicateRecords.as_str(),
        (_, Some(codes::DUPLICATE_IP)) => OntapAnswer::AddressInUse.as_str(),
        (_, Some(codes::SVM_NAME_IN_USE)) => OntapAnswer::SvmNameConflict.as_str(),
        (_, Some(codes::LIF_NAME_EXISTS)) => OntapAnswer::LifNameInUse.as_str(),
        _ => reason,
    };
    match error.class() {
        // Checked before any request was sent: the same input fails the same way.
        ErrorClass::Invalid
            if matches!(error, OntapError::InvalidInput(_) | OntapError::Config(_)) =>
        {
            StepError::invalid(reason, error.to_string())
        }
        // ONTAP refused the request with a code we do not know: most likely a request this
        // ONTAP version does not take, which only an upgrade fixes, but possibly a state of
        // the cluster that passes. Failed in the status, and tried again on a slow backoff.
        ErrorClass::Invalid => StepError::rejected(reason, error.to_string()),
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
/// wait: the request was refused, nothing happened, and it will work once the job ends. Any
/// other error goes on (`Ok`) to be told apart by the caller.
pub fn wait_if_busy(error: &OntapError) -> StepFlow<()> {
    use ontap_client::codes;
    let (reason, message, after) = match error.ontap_code() {
        Some(codes::TOO_MANY_JOBS) => (
            OntapAnswer::OntapBusy.as_str(),
            "ONTAP runs as many jobs as it allows",
            ONTAP_BUSY_RECHECK,
        ),
        Some(codes::SVM_BEING_CREATED) => (
            OntapAnswer::SvmBusy.as_str(),
            "ONTAP is still creating or deleting the SVM",
            SVM_BUSY_RECHECK,
        ),
        _ => return Ok(()),
    };
    Err(Wait::new(
        reason,
        format!("{message}; trying again when its job has ended"),
        after,
    )
    .into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn connection_reasons_are_pascal_case_and_distinct() {
        reconcile_engine::reasons::assert_distinct(
            Connect::ALL
                .iter()
                .map(|r| ("connect", r.as_str()))
                .chain(OntapAnswer::ALL.iter().map(|r| ("answer", r.as_str()))),
        );
    }
    use ontap_client::ApiError;
    use reconcile_engine::ErrorCategory;

    #[test]
    fn a_refusal_ontap_explains_no_further_is_invalid_but_tried_again() {
        let unknown_400 = OntapError::Api {
            method: reqwest::Method::POST,
            endpoint: "/api/svm/svms",
            status: reqwest::StatusCode::BAD_REQUEST,
            error: ApiError::parse(
                br#"{"error":{"message":"Unexpected argument \"x\"","code":"262179"}}"#,
            )
            .map(Box::new),
        };
        let err = ontap_error("SVMCreateFailed", unknown_400);
        assert_eq!(err.category(), ErrorCategory::Invalid);
        assert!(err.is_rejection(), "retried on a slow backoff");
        assert_eq!(err.reason(), "SVMCreateFailed");

        // Refused before sending: nothing outside can change the answer.
        let local = ontap_error("ClientConfigInvalid", OntapError::Config("no host".into()));
        assert_eq!(local.category(), ErrorCategory::Invalid);
        assert!(!local.is_rejection());
    }
}
