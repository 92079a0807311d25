//! The reasons the Extension's steps fail or wait with, and how API server failures become step
//! errors.

use kube::api::DeleteParams;
use kube::{Api, Resource};
use reconcile_engine::StepError;

/// Step reasons the status mapping turns into Gardener error codes.
pub(super) mod reason {
    pub const CONFIGURATION: &str = "ConfigurationProblem";
    pub const SHOOT: &str = "ShootProblem";
    pub const UNAUTHENTICATED: &str = "OntapUnauthenticated";
    pub const UNREACHABLE: &str = "OntapUnreachable";
    pub const DEPLETED: &str = "ResourcesDepleted";
    pub const CLUSTER_MISSING: &str = "OntapClusterMissing";
}

pub(super) fn kube_error(reason: &'static str) -> impl FnOnce(kube::Error) -> StepError {
    move |e| StepError::from_kube(reason, e)
}

/// The SVM API's validation (immutable fields, address rules) speaks to the providerConfig's
/// author: a 422 is a configuration problem, anything else what the API server says it is.
pub(super) fn rejected(reason: &'static str, e: kube::Error) -> StepError {
    match &e {
        kube::Error::Api(s) if s.code == 422 => {
            StepError::invalid(self::reason::CONFIGURATION, s.message.clone())
        }
        _ => StepError::from_kube(reason, e),
    }
}

pub(super) fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

pub(super) async fn delete_ignoring_missing<K>(api: &Api<K>, name: &str) -> Result<(), StepError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Err(e) if !is_not_found(&e) => Err(StepError::from_kube("DeleteFailed", e)),
        _ => Ok(()),
    }
}
