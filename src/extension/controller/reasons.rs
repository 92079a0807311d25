//! The reasons the Extension's steps fail or wait with, and how the API server's failures become
//! step errors. The strings are written once, here, and never change: they are the reasons of
//! `lastError`, the Extension's Events and its `SystemComponentsHealthy` condition, which
//! Gardener's users read; an [`ErrorCodeReason`] also decides gardenlet's error codes.

use kube::Api;
use kube::Resource;
use kube::api::DeleteParams;
use ontap_client::{ErrorClass, OntapError};
use reconcile_engine::{StepError, Wait, reasons};

use super::CONVERGING;
use crate::ontap::connections;

reasons! {
    /// A reason gardenlet reads an error code from (`lastError.codes`): the report turns each
    /// into the [`crate::extension::errors::ExtensionFailure`] whose codes it carries. Every
    /// other reason is a failure without a code.
    pub enum ErrorCodeReason {
        /// The providerConfig is invalid, or valid but does not fit (the SVM API refused it,
        /// its OntapCluster does not exist).
        Configuration => "ConfigurationProblem",
        /// The shoot lacks what its configuration needs.
        Shoot => "ShootProblem",
        /// ONTAP refused the operator's administrator credentials, confirmed by the
        /// OntapCluster's repeated probes.
        OntapUnauthenticated => "OntapUnauthenticated",
        /// ONTAP refused the administrator credentials, not (yet) confirmed: one rejection may
        /// be a passing fault of ONTAP's authentication, and gardenlet fails a shoot for good
        /// on ERR_INFRA_UNAUTHENTICATED.
        OntapRejectionUnconfirmed => "OntapRejectionUnconfirmed",
        /// ONTAP cannot be reached (network, TLS, 5xx, timeouts).
        OntapUnreachable => "OntapUnreachable",
        /// ONTAP has no room for the SVM.
        ResourcesDepleted => "ResourcesDepleted",
    }
}

reasons! {
    /// Why a step waits: something in the seed, the shoot or ONTAP has yet to converge.
    pub enum Waiting {
        /// The shoot's `Cluster` is not cached yet.
        ClusterNotFound => "ClusterNotFound",
        /// No OntapCluster is there yet. Also a transient failure where the plan cannot be
        /// made without one (a providerConfig that names none): that step cannot wait.
        OntapClusterMissing => "OntapClusterMissing",
        OntapClusterNotCached => "OntapClusterNotCached",
        /// The OntapCluster has not reported ONTAP's version, which decides Trident's API.
        OntapVersionUnknown => "OntapVersionUnknown",
        SvmNotCached => "SVMNotCached",
        SvmNotReady => "SVMNotReady",
        SvmCreatedMeanwhile => "SVMCreatedMeanwhile",
        SvmDeleting => "SVMDeleting",
        CredentialsNotVerified => "CredentialsNotVerified",
        SeedSecretMissing => "SeedSecretMissing",
        DeliveryPending => "DeliveryPending",
        DeliveryDeleting => "DeliveryDeleting",
    }
}

reasons! {
    /// A passing state on the operator's side, or an SVM whose controller keeps failing for a
    /// reason no change of the shoot fixes: retried with backoff.
    pub enum Transient {
        ExtensionUnstored => "ExtensionUnstored",
        StateSecretMissing => "StateSecretMissing",
        SvmFailing => "SVMFailing",
        SecretBuildFailed => "SecretBuildFailed",
        RenderFailed => "RenderFailed",
        PatchBuildFailed => "PatchBuildFailed",
    }
}

reasons! {
    /// The API server request that failed.
    pub enum Failed {
        AnnotationRemove => "AnnotationRemoveFailed",
        FinalizerRemove => "FinalizerRemoveFailed",
        SvmRead => "SVMReadFailed",
        SvmCreate => "SVMCreateFailed",
        SvmPatch => "SVMPatchFailed",
        SvmFinalizerRemove => "SVMFinalizerRemoveFailed",
        SecretRead => "SecretReadFailed",
        SecretWrite => "SecretWriteFailed",
        SecretList => "SecretListFailed",
        MetalStackSecretRead => "MetalStackSecretReadFailed",
        StateSecretRead => "StateSecretReadFailed",
        StateSecretWrite => "StateSecretWriteFailed",
        StateWrite => "StateWriteFailed",
        MrRead => "MRReadFailed",
        MrWrite => "MRWriteFailed",
        MrPatch => "MRPatchFailed",
        MrSecretWrite => "MRSecretWriteFailed",
        Delete => "DeleteFailed",
    }
}

reasons! {
    /// The ONTAP request of the Extension's own that failed, when ONTAP's answer is not one
    /// gardenlet reads a code from ([`ontap_failure`]).
    pub enum OntapRequest {
        BgpLookup => "BGPLookupFailed",
        SvmLookup => "SVMLookupFailed",
        CredentialCheck => "CredentialCheckFailed",
    }
}

impl ErrorCodeReason {
    /// Every variant, for [`Self::of`] (the macro's `ALL` exists in tests only).
    const EVERY_REASON: [Self; 6] = [
        Self::Configuration,
        Self::Shoot,
        Self::OntapUnauthenticated,
        Self::OntapRejectionUnconfirmed,
        Self::OntapUnreachable,
        Self::ResourcesDepleted,
    ];

    /// The reason of a step error, if gardenlet reads an error code from it.
    pub fn of(reason: &str) -> Option<Self> {
        Self::EVERY_REASON
            .into_iter()
            .find(|c| c.as_str() == reason)
    }

    /// A failure only a change of the Extension (or the shoot) fixes.
    pub fn invalid(self, message: impl Into<String>) -> StepError {
        StepError::invalid(self.as_str(), message)
    }

    /// A failure that may pass by itself: retried with backoff.
    pub fn transient(self, message: impl Into<String>) -> StepError {
        StepError::transient_msg(self.as_str(), message)
    }
}

impl Waiting {
    /// The step waits for this reason, and is looked at again soon.
    pub fn wait(self, message: impl Into<String>) -> Wait {
        Wait::new(self.as_str(), message, CONVERGING)
    }
}

impl Transient {
    pub fn error(self, message: impl Into<String>) -> StepError {
        StepError::transient_msg(self.as_str(), message)
    }
}

/// An ONTAP error of a request the Extension sends itself, classified as the SVM controller's
/// are ([`connections::ontap_error`]: the class decides whether it is retried, and how soon),
/// with the reason gardenlet reads a code from where there is one: refused administrator
/// credentials are `OntapRejectionUnconfirmed` (retryable: one request is no confirmation; the
/// `SvmReady` step reads the OntapCluster's repeated probes for that), a cluster that does not
/// answer as it should is `OntapUnreachable` (ERR_RETRYABLE_INFRA_DEPENDENCIES). A request ONTAP
/// refuses, a conflict or a missing object keeps the request's reason, or ONTAP's more telling
/// answer ([`connections::OntapAnswer`]): a failure without a code, retried with backoff.
pub(super) fn ontap_failure(request: OntapRequest, error: OntapError) -> StepError {
    let reason = match error.class() {
        ErrorClass::Unauthenticated => ErrorCodeReason::OntapRejectionUnconfirmed.as_str(),
        ErrorClass::Transient => ErrorCodeReason::OntapUnreachable.as_str(),
        ErrorClass::Invalid | ErrorClass::Conflict | ErrorClass::NotFound => request.as_str(),
    };
    connections::ontap_error(reason, error)
}

/// An API server error as a step error.
pub(super) fn kube_error(reason: Failed) -> impl FnOnce(kube::Error) -> StepError {
    move |e| StepError::from_kube(reason.as_str(), e)
}

/// The SVM API's validation (immutable fields, address rules) speaks to the providerConfig's
/// author: a 422 is a configuration problem, anything else what the API server says it is.
pub(super) fn rejected(reason: Failed, e: kube::Error) -> StepError {
    match &e {
        kube::Error::Api(s) if s.code == 422 => {
            ErrorCodeReason::Configuration.invalid(s.message.clone())
        }
        _ => StepError::from_kube(reason.as_str(), e),
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
        Err(e) if !is_not_found(&e) => Err(kube_error(Failed::Delete)(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_pascal_case_and_of_one_kind() {
        reconcile_engine::reasons::assert_distinct(
            ErrorCodeReason::ALL
                .iter()
                .map(|r| ("error code", r.as_str()))
                .chain(Waiting::ALL.iter().map(|r| ("waiting", r.as_str())))
                .chain(Transient::ALL.iter().map(|r| ("transient", r.as_str())))
                .chain(Failed::ALL.iter().map(|r| ("failed", r.as_str())))
                .chain(OntapRequest::ALL.iter().map(|r| ("ontap", r.as_str())))
                // ONTAP's answers replace the request's reason in the Extension's status too.
                .chain(
                    connections::OntapAnswer::ALL
                        .iter()
                        .map(|r| ("ontap", r.as_str())),
                ),
        );
    }

    fn api_error(status: u16, body: &[u8]) -> OntapError {
        OntapError::Api {
            method: reqwest::Method::GET,
            endpoint: "/api/svm/svms",
            status: reqwest::StatusCode::from_u16(status).unwrap(),
            error: ontap_client::ApiError::parse(body).map(Box::new),
        }
    }

    /// A refused credential, a refused request and a cluster that does not answer as it should
    /// are three failures: each its reason, its retry and (through the report) its codes.
    #[test]
    fn ontap_failures_keep_their_class() {
        use reconcile_engine::ErrorCategory;
        let refused = ontap_failure(OntapRequest::SvmLookup, api_error(401, b""));
        assert_eq!(refused.reason(), "OntapRejectionUnconfirmed");
        assert_eq!(refused.category(), ErrorCategory::Transient);
        assert_eq!(
            ErrorCodeReason::of(refused.reason()),
            Some(ErrorCodeReason::OntapRejectionUnconfirmed)
        );

        let unknown_400 = api_error(
            400,
            br#"{"error":{"message":"Unexpected argument \"x\"","code":"262179"}}"#,
        );
        let invalid = ontap_failure(OntapRequest::CredentialCheck, unknown_400);
        assert_eq!(invalid.reason(), "CredentialCheckFailed");
        assert_eq!(invalid.category(), ErrorCategory::Invalid);
        assert!(invalid.is_rejection(), "retried on a slow backoff");
        assert_eq!(ErrorCodeReason::of(invalid.reason()), None);

        let unreachable = ontap_failure(OntapRequest::BgpLookup, api_error(503, b""));
        assert_eq!(unreachable.reason(), "OntapUnreachable");
        assert_eq!(unreachable.category(), ErrorCategory::Transient);
        assert_eq!(
            ErrorCodeReason::of(unreachable.reason()),
            Some(ErrorCodeReason::OntapUnreachable)
        );

        let duplicate = OntapError::MultipleRecords {
            endpoint: "/api/svm/svms",
            name: "p1".into(),
            count: 2,
        };
        let conflict = ontap_failure(OntapRequest::SvmLookup, duplicate);
        assert_eq!(conflict.reason(), "DuplicateRecords");
        assert_eq!(conflict.category(), ErrorCategory::Conflict);
    }

    #[test]
    fn every_error_code_reason_is_found_by_its_string() {
        assert_eq!(
            ErrorCodeReason::ALL,
            ErrorCodeReason::EVERY_REASON.as_slice()
        );
        for reason in ErrorCodeReason::ALL {
            assert_eq!(ErrorCodeReason::of(reason.as_str()), Some(*reason));
        }
        assert_eq!(ErrorCodeReason::of("SVMFailing"), None);
    }
}
