//! The reasons the SVM controller's conditions can carry, and how its failed requests become
//! step errors: every ONTAP or API server failure goes through here with a typed [`Failed`]
//! reason, every wait and every invalid, conflicting or transient state of its own with a
//! [`Waiting`], [`Invalid`], [`Conflict`] or [`Transient`] one. The strings are written once,
//! here; a step cannot misspell one or give it the wrong kind.

use std::time::Duration;

use crate::ontap::connections;
use ontap_client::OntapError;
use reconcile_engine::{StepError, StepFlow, Wait};

pub use crate::ontap::connections::wait_if_busy;

use reconcile_engine::reasons;

reasons! {
    /// The request that failed: the reason of the condition it leaves. ONTAP's answer may replace
    /// it with a more telling one ([`connections::ontap_error`]).
    pub enum Failed {
        SvmLookup => "SVMLookupFailed",
        AggregateLookup => "AggregateLookupFailed",
        SvmCreate => "SVMCreateFailed",
        SvmAdopt => "SVMAdoptFailed",
        SvmStart => "SVMStartFailed",
        SvmProtocols => "SVMProtocolsFailed",
        SvmLimitsLookup => "SVMLimitsLookupFailed",
        SvmLimits => "SVMLimitsFailed",
        QosPolicyLookup => "QoSPolicyLookupFailed",
        QosPolicyCreate => "QoSPolicyCreateFailed",
        QosPolicyLimits => "QoSPolicyLimitsFailed",
        QosPolicyApply => "QoSPolicyApplyFailed",
        QosPolicyDelete => "QoSPolicyDeleteFailed",
        SvmDelete => "SVMDeleteFailed",
        LifLookup => "LIFLookupFailed",
        LifCreate => "LIFCreateFailed",
        LifDelete => "LIFDeleteFailed",
        LifUpdate => "LIFUpdateFailed",
        RouteLookup => "RouteLookupFailed",
        RouteCreate => "RouteCreateFailed",
        RouteDelete => "RouteDeleteFailed",
        NodeLookup => "NodeLookupFailed",
        TenantNetworkLookup => "TenantNetworkLookupFailed",
        BroadcastDomainCreate => "BroadcastDomainCreateFailed",
        BroadcastDomainDelete => "BroadcastDomainDeleteFailed",
        VlanCreate => "VLANCreateFailed",
        VlanDelete => "VLANDeleteFailed",
        AccountLookup => "AccountLookupFailed",
        AccountCreate => "AccountCreateFailed",
        AccountUnlock => "AccountUnlockFailed",
        AccountMark => "AccountMarkFailed",
        AccountLock => "AccountLockFailed",
        AccountApplications => "AccountApplicationsFailed",
        AccountDelete => "AccountDeleteFailed",
        AccountRole => "AccountRoleFailed",
        RoleLookup => "RoleLookupFailed",
        RoleCreate => "RoleCreateFailed",
        RolePrivileges => "RolePrivilegesFailed",
        CredentialCheck => "CredentialCheckFailed",
        PasswordSet => "PasswordSetFailed",
        SecretRead => "SecretReadFailed",
        SecretWrite => "SecretWriteFailed",
        SecretDelete => "SecretDeleteFailed",
    }
}

reasons! {
    /// Why a step waits: nothing is wrong, something has yet to happen.
    pub enum Waiting {
        ClusterNotFound => "ClusterNotFound",
        ClusterNotReady => "ClusterNotReady",
        AggregateNotFound => "AggregateNotFound",
        SvmAwaited => "SVMAwaited",
        ProviderAwaited => "ProviderAwaited",
        SvmNotRunning => "SVMNotRunning",
        SvmSettling => "SVMSettling",
        SvmStarting => "SVMStarting",
        SvmDeleting => "SVMDeleting",
        SvmShared => "SVMShared",
        SvmServedElsewhere => "SVMServedElsewhere",
        AdoptionAwaitsSecret => "AdoptionAwaitsSecret",
        CredentialsSettling => "CredentialsSettling",
    }
}

reasons! {
    /// Why the spec cannot work as written: phase `Failed` until it (or ONTAP) changes.
    pub enum Invalid {
        Spec => "InvalidSpec",
        Lifs => "InvalidLIFs",
        /// A rotation period admission would refuse (an object stored before the rule).
        RotationPeriod => "InvalidRotationPeriod",
        /// ONTAP has no port, broadcast domain or service policy of a name a LIF gives.
        LifPlacement => "LIFPlacementRefused",
        Routes => "InvalidRoutes",
        ShareWith => "InvalidShareWith",
        NamespaceSelector => "InvalidNamespaceSelector",
        NamespaceNotAllowed => "NamespaceNotAllowed",
        /// The object asks for an IPspace, aggregate, node, address or policy its OntapCluster's
        /// `allowed` does not include.
        NotAllowedByCluster => "NotAllowedByCluster",
        SvmNameChanged => "SVMNameChanged",
        /// An SVM of the name exists and is not this object's to take: another spec.svmName.
        SvmNameInUse => "SVMNameInUse",
        /// `spec.svmName` has the form of another namespace's default names.
        SvmNameReserved => "SVMNameReserved",
        SvmRenamedInOntap => "SVMRenamedInONTAP",
        SvmNotShared => "SVMNotShared",
        /// `spec.provider` names an object that does not provision `spec.svmName`.
        ProviderMismatch => "ProviderMismatch",
        SvmOwnershipChanged => "SVMOwnershipChanged",
        AdoptionNotAllowed => "AdoptionNotAllowed",
        AccountRoleMismatch => "AccountRoleMismatch",
        /// An account of the name exists that the operator did not create for this object.
        AccountNotOurs => "AccountNotOurs",
        SecretNameInUse => "SecretNameInUse",
        /// A capacity limit on a cluster before ONTAP 9.13.1, which has none.
        StorageLimitUnsupported => "StorageLimitUnsupported",
    }
}

reasons! {
    /// Who else holds what this object needs: retried with backoff while it lasts.
    pub enum Conflict {
        ClaimedByAnother => "ClaimedByAnother",
        AddressInUse => "AddressInUse",
        SvmOwnedByAnother => "SVMOwnedByAnother",
        SecretChangedMeanwhile => "SecretChangedMeanwhile",
        TenantNetworkForeign => "TenantNetworkConflict",
        /// The name the operator gives an SVM's QoS policy is a policy of another SVM.
        QosPolicyNameTaken => "QoSPolicyNameTaken",
    }
}

reasons! {
    /// A passing state the operator meets on its own side (a cache not filled yet, a new
    /// password ONTAP did not take at once): retried with backoff.
    pub enum Transient {
        NamespaceUnknown => "NamespaceUnknown",
        NotStored => "NotStored",
        SecretBuildFailed => "SecretBuildFailed",
        CredentialsRejected => "CredentialsRejected",
        /// The OntapCluster's version, which says which limits ONTAP knows, is not known yet.
        ClusterVersionUnknown => "ClusterVersionUnknown",
    }
}

impl Waiting {
    /// The step waits for this reason, and is looked at again after `after`.
    pub fn wait(self, message: impl Into<String>, after: Duration) -> Wait {
        Wait::new(self.as_str(), message, after)
    }

    /// A wait for something the user has to create or repair: looked at again after
    /// [`connections::MISSING_REFERENCE_RECHECK`].
    pub fn missing(self, message: String) -> Wait {
        connections::missing(self.as_str(), message)
    }
}

impl Invalid {
    pub fn error(self, message: impl Into<String>) -> StepError {
        StepError::invalid(self.as_str(), message)
    }
}

impl Conflict {
    pub fn error(self, message: impl Into<String>) -> StepError {
        StepError::conflict(self.as_str(), message)
    }
}

impl Transient {
    pub fn error(self, message: impl Into<String>) -> StepError {
        StepError::transient_msg(self.as_str(), message)
    }
}

/// An ONTAP error as a step error ([`connections::ontap_error`], shared with the cluster
/// controller, classifies it).
pub fn ontap_error(reason: Failed, error: OntapError) -> StepError {
    connections::ontap_error(reason.as_str(), error)
}

/// An API server error as a step error.
pub fn kube_error(reason: Failed) -> impl FnOnce(kube::Error) -> StepError {
    move |e| StepError::from_kube(reason.as_str(), e)
}

/// The answer to a request that starts an ONTAP job as the step goes on: done, a wait while
/// ONTAP is busy ([`wait_if_busy`]), or the step error.
pub fn job<T>(answer: Result<T, OntapError>, reason: Failed) -> StepFlow<T> {
    answer.or_else(|e| {
        wait_if_busy(&e)?;
        Err(ontap_error(reason, e).into())
    })
}

/// ONTAP's own answer that the addressed object does not exist (code 4), not just any 404.
pub fn is_entry_not_found(e: &OntapError) -> bool {
    e.is_not_found() && e.ontap_code() == Some(ontap_client::codes::ENTRY_NOT_FOUND)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ontap::connections::OntapAnswer;

    /// What an ONTAP answer's reason leaves the step: a wait when ONTAP is busy, otherwise the
    /// conflict its error class makes it ([`connections::ontap_error`]).
    fn answer_kind(answer: OntapAnswer) -> &'static str {
        match answer {
            OntapAnswer::OntapBusy | OntapAnswer::SvmBusy => "waiting",
            OntapAnswer::DuplicateRecords
            | OntapAnswer::AddressInUse
            | OntapAnswer::SvmNameConflict
            | OntapAnswer::LifNameInUse => "conflict",
        }
    }

    /// ONTAP's answers replace this controller's reasons in its conditions, so they count too.
    #[test]
    fn every_reason_is_pascal_case_and_of_one_kind() {
        reconcile_engine::reasons::assert_distinct(
            Failed::ALL
                .iter()
                .map(|r| ("failed", r.as_str()))
                .chain(Waiting::ALL.iter().map(|r| ("waiting", r.as_str())))
                .chain(Invalid::ALL.iter().map(|r| ("invalid", r.as_str())))
                .chain(Conflict::ALL.iter().map(|r| ("conflict", r.as_str())))
                .chain(Transient::ALL.iter().map(|r| ("transient", r.as_str())))
                .chain(
                    OntapAnswer::ALL
                        .iter()
                        .map(|&a| (answer_kind(a), a.as_str())),
                ),
        );
    }
}
