//! How the SVM controller's failed requests become step errors: every ONTAP or API server
//! failure of a step goes through here with a typed [`Failed`] reason, so the reasons a
//! condition can carry are listed in one place rather than spelled out at each call.

use crate::controllers::connections;
use crate::engine::{StepError, Wait};
use crate::ontap::OntapError;

pub use crate::controllers::connections::ontap_busy;

/// The request that failed: the reason of the condition it leaves. ONTAP's answer may replace
/// it with a more telling one ([`connections::ontap_error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    SvmLookup,
    AggregateLookup,
    SvmCreate,
    SvmAdopt,
    SvmStart,
    SvmProtocols,
    SvmDelete,
    LifLookup,
    LifCreate,
    LifDelete,
    AccountLookup,
    AccountCreate,
    AccountUnlock,
    AccountDelete,
    CredentialCheck,
    PasswordSet,
    SecretRead,
    SecretWrite,
    SecretDelete,
}

impl Failed {
    /// The reason as conditions and Events carry it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Failed::SvmLookup => "SVMLookupFailed",
            Failed::AggregateLookup => "AggregateLookupFailed",
            Failed::SvmCreate => "SVMCreateFailed",
            Failed::SvmAdopt => "SVMAdoptFailed",
            Failed::SvmStart => "SVMStartFailed",
            Failed::SvmProtocols => "SVMProtocolsFailed",
            Failed::SvmDelete => "SVMDeleteFailed",
            Failed::LifLookup => "LIFLookupFailed",
            Failed::LifCreate => "LIFCreateFailed",
            Failed::LifDelete => "LIFDeleteFailed",
            Failed::AccountLookup => "AccountLookupFailed",
            Failed::AccountCreate => "AccountCreateFailed",
            Failed::AccountUnlock => "AccountUnlockFailed",
            Failed::AccountDelete => "AccountDeleteFailed",
            Failed::CredentialCheck => "CredentialCheckFailed",
            Failed::PasswordSet => "PasswordSetFailed",
            Failed::SecretRead => "SecretReadFailed",
            Failed::SecretWrite => "SecretWriteFailed",
            Failed::SecretDelete => "SecretDeleteFailed",
        }
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

/// The result of a request that starts an ONTAP job: done (`None`), a wait while ONTAP is busy,
/// or the step error.
pub fn job<T>(result: Result<T, OntapError>, reason: Failed) -> Result<Option<Wait>, StepError> {
    match result {
        Ok(_) => Ok(None),
        Err(e) => match ontap_busy(&e) {
            Some(wait) => Ok(Some(wait)),
            None => Err(ontap_error(reason, e)),
        },
    }
}

/// ONTAP's own answer that the addressed object does not exist (code 4), not just any 404.
pub fn is_entry_not_found(e: &OntapError) -> bool {
    e.is_not_found() && e.ontap_code() == Some(crate::ontap::codes::ENTRY_NOT_FOUND)
}
