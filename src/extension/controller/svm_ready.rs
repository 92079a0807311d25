//! Step `SvmReady`: what the OntapCluster and StorageVirtualMachine controllers report, read as
//! the failures gardenlet reads codes from.

use kube::runtime::reflector::ObjectRef;
use reconcile_engine::{Outcome, StepError, StepFlow, StepName};

use crate::api::{StorageVirtualMachine, SvmPhase};
use crate::ontap::conditions::{
    CLUSTER_UNAUTHENTICATED, ClusterStep, FALSE, READY, SvmInvalid, SvmStep, SvmWaiting, TRUE,
};

use super::ExtensionReconciler;
use super::plan::Plan;
use super::reasons::{ErrorCodeReason, Transient, Waiting};

/// How many consecutive probes of the OntapCluster (each after the engine's backoff) must have
/// been rejected before the Extension reports ERR_INFRA_UNAUTHENTICATED: gardenlet fails the
/// shoot on that code and every extension then leaves it alone until a user retries it, so one
/// rejection (an authentication server restarting, a password being rotated) must not say it.
const REJECTIONS_CONFIRMING: u32 = 3;

impl ExtensionReconciler {
    /// Step `SvmReady`: the SVM's controller verified its Secret at the current generation.
    /// Failures of the OntapCluster or the SVM become the failures gardenlet reads codes from.
    pub(super) async fn svm_ready(&self, namespace: &str, plan: &Plan) -> StepFlow<Outcome> {
        self.cluster_connected(plan)?;
        let Some(svm) = self
            .svms
            .get(&ObjectRef::new(&plan.object).within(namespace))
        else {
            return Err(Waiting::SvmNotCached
                .wait("the StorageVirtualMachine was just created")
                .into());
        };
        svm_verified(&svm, plan)
    }

    /// The plan's OntapCluster exists and has not lost its connection to ONTAP.
    fn cluster_connected(&self, plan: &Plan) -> Result<(), StepError> {
        let Some(cluster) = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster)) else {
            return Err(ErrorCodeReason::Configuration
                .invalid(format!("the OntapCluster {} does not exist", plan.cluster)));
        };
        let conditions = cluster
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        let connected = conditions
            .iter()
            .find(|c| c.type_ == ClusterStep::Connected.as_str());
        if let Some(c) = connected.filter(|c| c.status == FALSE) {
            let detail = format!("ONTAP cluster {}: {}", plan.cluster, c.message);
            if c.reason != CLUSTER_UNAUTHENTICATED {
                return Err(ErrorCodeReason::OntapUnreachable.transient(detail));
            }
            // Either way retried with backoff: an administrator fixes the Secret, and nothing
            // on the Extension announces it.
            let attempts = cluster
                .status
                .as_ref()
                .and_then(|s| s.halted.as_ref())
                .filter(|h| h.reason == CLUSTER_UNAUTHENTICATED)
                .map_or(0, |h| h.attempts);
            return Err(if attempts >= REJECTIONS_CONFIRMING {
                ErrorCodeReason::OntapUnauthenticated.transient(detail)
            } else {
                ErrorCodeReason::OntapRejectionUnconfirmed.transient(detail)
            });
        }
        Ok(())
    }
}

/// Done when `svm` is Ready with a verified Secret at its generation; a failure when its
/// controller keeps failing or gave up; else a wait.
fn svm_verified(svm: &StorageVirtualMachine, plan: &Plan) -> StepFlow<Outcome> {
    let generation = svm.metadata.generation;
    let status = svm.status.clone().unwrap_or_default();
    let condition = |type_: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == type_ && c.observed_generation == generation)
            .cloned()
    };
    let ready = condition(READY);
    let secret_ready = condition(SvmStep::SecretReady.as_str());
    if status.observed_generation == generation
        && ready.as_ref().is_some_and(|c| c.status == TRUE)
        && secret_ready.as_ref().is_some_and(|c| c.status == TRUE)
    {
        return Ok(Outcome::unchanged());
    }
    // A new password waits out the window in which an older password request could still
    // land; every step before it is done. `CredentialsVerified` authenticates with it right
    // after, so the shoot gets it now instead of keeping a password that certainly fails until
    // the window closes. Should an old request land, the SVM's controller heals it again.
    if status.observed_generation == generation
        && secret_ready
            .as_ref()
            .is_some_and(|c| c.reason == SvmWaiting::CredentialsSettling.as_str())
    {
        return Ok(Outcome::unchanged());
    }
    let why = ready
        .map(|c| format!("{}: {}", c.reason, c.message))
        .unwrap_or_else(|| "not reconciled at its generation yet".to_string());
    let message = format!("StorageVirtualMachine {}: {why}", plan.object);
    if let Some(halted) = status.halted.as_ref().filter(|h| h.attempts > 0) {
        return Err(classify_svm_failure(&halted.reason, &message).into());
    }
    if status.phase == Some(SvmPhase::Failed) {
        return Err(ErrorCodeReason::Configuration.invalid(message).into());
    }
    Err(Waiting::SvmNotReady.wait(message).into())
}

/// What an SVM that keeps failing says, as the failure gardenlet reads codes from.
fn classify_svm_failure(svm_reason: &str, message: &str) -> StepError {
    if ontap_client::mentions_depletion(message) {
        return ErrorCodeReason::ResourcesDepleted.transient(message);
    }
    if CONFIGURATION_REASONS.contains(&svm_reason) {
        return ErrorCodeReason::Configuration.invalid(message);
    }
    Transient::SvmFailing.error(message)
}

/// The SVM's reasons that only a change of the shoot's configuration fixes, named through the
/// SVM controller's typed reasons so a renamed one cannot silently fall through to
/// `SVMFailing`. ONTAP refusing a name (`SVMNameConflict`) is not among them: the SVM
/// controller retries it.
const CONFIGURATION_REASONS: [&str; 11] = [
    SvmInvalid::Spec.as_str(),
    SvmInvalid::AccountNotOurs.as_str(),
    SvmInvalid::SvmNotShared.as_str(),
    SvmInvalid::ProviderMismatch.as_str(),
    SvmInvalid::NotAllowedByCluster.as_str(),
    SvmInvalid::SvmNameInUse.as_str(),
    SvmInvalid::AdoptionNotAllowed.as_str(),
    SvmInvalid::SecretNameInUse.as_str(),
    SvmInvalid::AccountRoleMismatch.as_str(),
    SvmInvalid::SvmNameChanged.as_str(),
    SvmWaiting::AggregateNotFound.as_str(),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_svms_map_to_gardener_codes() {
        let code = |reason: &str, message: &str| {
            classify_svm_failure(reason, message).reason().to_string()
        };
        assert_eq!(
            code("SVMCreateFailed", "aggregate aggr1: insufficient space"),
            ErrorCodeReason::ResourcesDepleted.as_str()
        );
        assert_eq!(
            code("SVMNameInUse", "taken"),
            ErrorCodeReason::Configuration.as_str()
        );
        assert_eq!(code("SVMNameConflict", "duplicate"), "SVMFailing");
        assert_eq!(code("LIFsFailed", "port down"), "SVMFailing");
    }
}
