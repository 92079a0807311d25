//! What a pass found, as the Extension's status: `lastOperation`/`lastError` on an operation
//! pass, with the texts and codes Gardener's library writes, and the `SystemComponentsHealthy`
//! condition gardenlet copies into the Shoot.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use reconcile_engine::{StepName, StepRecord, StepRunner, StepState};
use serde_json::{Value, json};

use crate::extension::api::{
    Extension, ExtensionStatus, GardenerCondition, LastOperationState, LastOperationType,
    ManagedResource,
};
use crate::extension::config::parse_provider_config;
use crate::extension::errors::ExtensionFailure;
use crate::extension::health::{
    Judgement, SYSTEM_COMPONENTS_HEALTHY, judge_backends, judge_delivery,
    system_components_condition,
};
use crate::extension::shoot::{BACKENDS_MANAGED_RESOURCE, MANAGED_RESOURCE_NAMES};
use crate::extension::status::{error_patch, processing_patch, success_patch};

use super::reasons::ErrorCodeReason;
use super::{ExtensionReconciler, ExtensionStep, namespace_of};

/// The outcome of a pass, for the status.
pub(super) struct PassReport {
    pub op: LastOperationType,
    /// gardenlet asked for this operation, or it is unfinished: `lastOperation` is written.
    pub operation: bool,
    pub hibernated: bool,
    pub cluster: Option<String>,
}

impl ExtensionReconciler {
    /// Writes what this pass found: `lastOperation`/`lastError`/`observedGeneration` on an
    /// operation pass, the `SystemComponentsHealthy` condition always — each only when it
    /// differs from what the object shows.
    pub(super) async fn report(
        &self,
        ext: &Extension,
        pass: &PassReport,
        steps: &StepRunner<ExtensionStep>,
    ) {
        let now = Time(Timestamp::now());
        let status = ext.status.clone().unwrap_or_default();
        let halted = steps.records().iter().find(|r| !r.state.is_done());
        let mut patch = if pass.operation {
            self.operation_patch(ext, pass, &status, halted, &now)
        } else {
            json!({"status": {}})
        };
        if pass.op != LastOperationType::Delete && pass.op != LastOperationType::Migrate {
            let previous = status
                .conditions
                .iter()
                .find(|c| c.type_ == SYSTEM_COMPONENTS_HEALTHY);
            let condition = self
                .health_condition(ext, pass, halted.map(|r| &r.state), previous, &now)
                .await;
            if previous.is_none_or(|p| !same_condition(p, &condition)) {
                patch["status"]["conditions"] = json!([condition]);
            }
        }
        if patch["status"].as_object().is_some_and(|m| !m.is_empty()) {
            self.patch_status(ext, &patch).await;
        }
    }

    /// `lastOperation` (and `lastError`) for an operation pass that ended at `halted`; nothing
    /// when a wait says what `lastOperation` says already.
    fn operation_patch(
        &self,
        ext: &Extension,
        pass: &PassReport,
        status: &ExtensionStatus,
        halted: Option<&StepRecord>,
        now: &Time,
    ) -> Value {
        match halted.map(|r| &r.state) {
            None => success_patch(ext.metadata.generation, pass.op, now),
            Some(StepState::Waiting(wait)) => {
                let unchanged = status.last_operation.as_ref().is_some_and(|last| {
                    last.state == LastOperationState::Processing
                        && last.type_ == pass.op
                        && last.description.ends_with(&wait.message)
                });
                if unchanged {
                    return json!({"status": {}});
                }
                let step = halted.map(|r| r.name).unwrap_or_default();
                processing_patch(
                    pass.op,
                    Some(&format!("{step}: {}", wait.message)),
                    progress(step),
                    now,
                )
            }
            Some(StepState::Failed(err)) => {
                let failure = self.failure(ext, pass, err.reason(), err.message());
                error_patch(ext.metadata.generation, pass.op, &failure, now)
            }
            Some(_) => json!({"status": {}}),
        }
    }

    async fn patch_status(&self, ext: &Extension, patch: &Value) {
        let api = Api::<Extension>::namespaced(self.kube.clone(), &namespace_of(ext));
        if let Err(error) = api
            .patch_status(
                &ext.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
        {
            // As Gardener's library: the next pass writes the status again.
            tracing::warn!(%error, "writing the Extension's status failed");
        }
    }

    fn failure(
        &self,
        ext: &Extension,
        pass: &PassReport,
        reason: &str,
        message: &str,
    ) -> ExtensionFailure {
        let cluster = pass.cluster.clone().unwrap_or_default();
        let detail = message.to_string();
        match ErrorCodeReason::of(reason) {
            // The providerConfig's own error when it has one; else the configuration is valid
            // but does not fit (the SVM API refused it, the OntapCluster does not exist).
            Some(ErrorCodeReason::Configuration) => match parse_provider_config(
                ext.spec.provider_config.as_ref(),
                &self.settings.config_defaults,
            ) {
                Err(e) => ExtensionFailure::Configuration(e),
                Ok(_) => ExtensionFailure::Shoot(detail),
            },
            Some(ErrorCodeReason::Shoot) => ExtensionFailure::Shoot(detail),
            Some(ErrorCodeReason::OntapUnauthenticated) => {
                ExtensionFailure::OntapUnauthenticated { cluster, detail }
            }
            Some(ErrorCodeReason::OntapRejectionUnconfirmed) => {
                ExtensionFailure::OntapRejectionUnconfirmed { cluster, detail }
            }
            Some(ErrorCodeReason::OntapUnreachable) => {
                ExtensionFailure::OntapUnreachable { cluster, detail }
            }
            Some(ErrorCodeReason::ResourcesDepleted) => {
                ExtensionFailure::ResourcesDepleted { cluster, detail }
            }
            None => ExtensionFailure::Other(detail),
        }
    }

    /// The condition, as Gardener's library would judge it, with what this pass found first: a
    /// failed or waiting step says more than the ManagedResources it did not get to.
    async fn health_condition(
        &self,
        ext: &Extension,
        pass: &PassReport,
        halted: Option<&StepState>,
        previous: Option<&GardenerCondition>,
        now: &Time,
    ) -> GardenerCondition {
        let judgement = self.health_judgement(ext, pass, halted, now).await;
        system_components_condition(judgement, previous, now)
    }

    async fn health_judgement(
        &self,
        ext: &Extension,
        pass: &PassReport,
        halted: Option<&StepState>,
        now: &Time,
    ) -> Judgement {
        if pass.hibernated {
            return Judgement::hibernated();
        }
        match halted {
            Some(StepState::Failed(err)) => {
                let failure = self.failure(ext, pass, err.reason(), err.message());
                return Judgement::unsuccessful(failure.to_string(), failure.codes());
            }
            Some(StepState::Waiting(wait)) => return Judgement::progressing(wait.message.clone()),
            _ => {}
        }
        let namespace = namespace_of(ext);
        let found: Vec<(&str, Option<ManagedResource>)> = MANAGED_RESOURCE_NAMES
            .iter()
            .map(|name| {
                (
                    *name,
                    self.managed_resources
                        .get(&ObjectRef::new(name).within(&namespace))
                        .map(|m| (*m).clone()),
                )
            })
            .collect();
        let refs: Vec<(&str, Option<&ManagedResource>)> =
            found.iter().map(|(n, m)| (*n, m.as_ref())).collect();
        let delivery = judge_delivery(&refs);
        // Until the delivery is healthy Trident cannot have the backends to report on.
        let Some(backends) = refs
            .iter()
            .find(|(name, _)| *name == BACKENDS_MANAGED_RESOURCE)
            .and_then(|(_, mr)| *mr)
            .filter(|_| delivery.is_healthy())
        else {
            return delivery;
        };
        let observed = self.observe_backends(&namespace, backends).await;
        let judgement = judge_backends(&observed, now);
        if !judgement.is_healthy() {
            self.rechecks.later(ObjectRef::from_obj(ext));
        }
        judgement
    }
}

fn same_condition(a: &GardenerCondition, b: &GardenerCondition) -> bool {
    a.status == b.status && a.reason == b.reason && a.message == b.message && a.codes == b.codes
}

/// A rough share of the reconcile done when `step` waits, as `lastOperation.progress`.
fn progress(step: &str) -> i32 {
    const ORDER: [ExtensionStep; 7] = [
        ExtensionStep::ShootRead,
        ExtensionStep::ConfigValid,
        ExtensionStep::SvmDeclared,
        ExtensionStep::SvmReady,
        ExtensionStep::CredentialsVerified,
        ExtensionStep::DeliveryApplied,
        ExtensionStep::DeliveryHealthy,
    ];
    let index = ORDER.iter().position(|s| s.as_str() == step).unwrap_or(0);
    i32::try_from(1 + index * 90 / ORDER.len()).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_grows_with_the_steps() {
        assert_eq!(progress("ShootRead"), 1);
        assert!(progress("DeliveryHealthy") > progress("SvmReady"));
        assert!(progress("DeliveryHealthy") < 100);
    }
}
