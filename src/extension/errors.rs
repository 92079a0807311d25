//! Why an Extension could not be reconciled, and the Gardener error codes that says.
//!
//! gardenlet acts on codes, never on text: a non-retryable code fails the shoot's operation
//! and makes every extension skip that shoot until a user retries it. So a code is only given
//! where it is true; a failure that heals by itself carries none, or a retryable one.

use super::api::ErrorCode;
use super::config::ConfigError;

/// A failed reconcile, as the controller learns it from its own steps and from the status and
/// conditions of the StorageVirtualMachine it waits for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExtensionFailure {
    /// The providerConfig cannot be used; waiting for the shoot owner to change it.
    #[error(transparent)]
    Configuration(#[from] ConfigError),
    /// The shoot lacks what its configuration needs (e.g. the metal-stack project annotation for
    /// a per-project SVM).
    #[error("{0}")]
    Shoot(String),
    /// ONTAP refused the operator's administrator credentials for the cluster.
    #[error("ONTAP cluster {cluster} rejected the administrator credentials: {detail}")]
    OntapUnauthenticated { cluster: String, detail: String },
    /// ONTAP refused the administrator credentials, but that is not confirmed yet: retryable.
    #[error(
        "ONTAP cluster {cluster} rejected the administrator credentials; retrying until the rejection is confirmed: {detail}"
    )]
    OntapRejectionUnconfirmed { cluster: String, detail: String },
    /// ONTAP cannot be reached (network, TLS, 5xx, timeouts).
    #[error("ONTAP cluster {cluster} is unreachable: {detail}")]
    OntapUnreachable { cluster: String, detail: String },
    /// No aggregate has room, or the cluster's limits are reached.
    #[error("ONTAP cluster {cluster} has no capacity for the SVM: {detail}")]
    ResourcesDepleted { cluster: String, detail: String },
    /// Everything else that a later pass may fix (an SVM still being provisioned that failed a
    /// step, a ManagedResource the shoot's resource manager has not applied yet).
    #[error("{0}")]
    Other(String),
}

/// The codes for `lastError.codes` (and a condition's `codes`).
pub fn error_codes(failure: &ExtensionFailure) -> Vec<ErrorCode> {
    match failure {
        ExtensionFailure::Configuration(_) | ExtensionFailure::Shoot(_) => {
            vec![ErrorCode::ConfigurationProblem]
        }
        ExtensionFailure::OntapUnauthenticated { .. } => vec![ErrorCode::InfraUnauthenticated],
        ExtensionFailure::OntapRejectionUnconfirmed { .. }
        | ExtensionFailure::OntapUnreachable { .. } => vec![ErrorCode::RetryableInfraDependencies],
        ExtensionFailure::ResourcesDepleted { .. } => vec![ErrorCode::InfraResourcesDepleted],
        ExtensionFailure::Other(_) => Vec::new(),
    }
}

/// How the controller retries after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Retry with backoff: the world may change by itself.
    Backoff,
    /// Only a change of the Extension (or the Cluster) can help: no retry storm.
    WaitForChange,
}

impl ExtensionFailure {
    pub fn codes(&self) -> Vec<ErrorCode> {
        error_codes(self)
    }

    pub fn retry(&self) -> Retry {
        match self {
            ExtensionFailure::Configuration(_) | ExtensionFailure::Shoot(_) => Retry::WaitForChange,
            // Credentials are fixed by an administrator in the OntapCluster's Secret, which
            // no Extension event announces: keep trying, the backoff bounds the rate.
            ExtensionFailure::OntapUnauthenticated { .. }
            | ExtensionFailure::OntapRejectionUnconfirmed { .. }
            | ExtensionFailure::OntapUnreachable { .. }
            | ExtensionFailure::ResourcesDepleted { .. }
            | ExtensionFailure::Other(_) => Retry::Backoff,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn failure(kind: &str) -> ExtensionFailure {
        let (cluster, detail) = ("lab".to_string(), "d".to_string());
        match kind {
            "config" => ExtensionFailure::Configuration(ConfigError::Missing),
            "shoot" => ExtensionFailure::Shoot("no project".into()),
            "auth" => ExtensionFailure::OntapUnauthenticated { cluster, detail },
            "unreachable" => ExtensionFailure::OntapUnreachable { cluster, detail },
            "depleted" => ExtensionFailure::ResourcesDepleted { cluster, detail },
            _ => ExtensionFailure::Other(detail),
        }
    }

    #[test]
    fn codes_are_the_issue_s_mapping() {
        use ErrorCode::*;
        let table = [
            ("config", vec![ConfigurationProblem], Retry::WaitForChange),
            ("shoot", vec![ConfigurationProblem], Retry::WaitForChange),
            ("auth", vec![InfraUnauthenticated], Retry::Backoff),
            (
                "unreachable",
                vec![RetryableInfraDependencies],
                Retry::Backoff,
            ),
            ("depleted", vec![InfraResourcesDepleted], Retry::Backoff),
            ("other", vec![], Retry::Backoff),
        ];
        for (kind, codes, retry) in table {
            assert_eq!(failure(kind).codes(), codes, "{kind}");
            assert_eq!(failure(kind).retry(), retry, "{kind}");
        }
    }

    #[test]
    fn unreachable_and_depleted_do_not_fail_the_shoot() {
        // gardenlet retries the shoot only when no code is non-retryable.
        for kind in ["unreachable", "depleted", "other"] {
            assert!(
                failure(kind).codes().iter().all(|c| !c.is_non_retryable()),
                "{kind}"
            );
        }
        for kind in ["config", "auth"] {
            assert!(
                failure(kind).codes().iter().any(|c| c.is_non_retryable()),
                "{kind}"
            );
        }
    }

    #[test]
    fn messages_say_what_failed() {
        assert_eq!(
            failure("auth").to_string(),
            "ONTAP cluster lab rejected the administrator credentials: d"
        );
        assert!(
            failure("config")
                .to_string()
                .starts_with("providerConfig is missing")
        );
    }
}
