//! Create, reconcile and restore: the operation that provisions the shoot's storage, its steps
//! ending with the shoot's Trident delivered and working against a verified SVM.

use crate::extension::api::{Extension, LastOperationType, ShootView};
use crate::extension::state::restored_state;
use kube::runtime::reflector::ObjectRef;
use reconcile_engine::{Halt, Outcome, StepFlow, StepRunner};
use secrecy::ExposeSecret;

use super::reasons::Waiting;
use super::report::PassReport;
use super::{ExtensionReconciler, ExtensionStep, namespace_of};

impl ExtensionReconciler {
    /// `ShootRead` → `ConfigValid` → (`SvmAdopted` on a restore) → (`ProjectSvmDeclared` →
    /// `AccountImported` for a per-project SVM) → `SvmDeclared` → `SvmReady` →
    /// `CredentialsVerified` → `DeliveryApplied` → `DeliveryHealthy` → `StateSaved`.
    pub(super) async fn provision(
        &self,
        ext: &Extension,
        op: LastOperationType,
        report: &mut PassReport,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let namespace = namespace_of(ext);
        // Gardener's reconcilers act when gardenlet asks (the operation annotation, a new
        // generation, an unfinished operation); a restart, a leader change, a watch event or
        // the sync period only verify. Those passes write nothing that exists already, but
        // for the repair of what is proven broken: a missing object, and credentials that
        // the SVM controller healed, which must reach the shoot at once.
        let repairs_only = !report.operation;
        let shoot = steps
            .step(ExtensionStep::ShootRead, || self.read_shoot(ext))
            .await?;
        let state = restored_state(ext)
            .map_err(|e| e.to_string())
            .and_then(|s| s.ok_or_else(String::new));
        let (config, plan) = steps
            .step(ExtensionStep::ConfigValid, || {
                self.resolve(ext, &shoot, state.as_ref().ok())
            })
            .await?;
        report.cluster = Some(plan.cluster.clone());
        if op == LastOperationType::Restore
            && let Ok(state) = &state
        {
            steps
                .step(ExtensionStep::SvmAdopted, || {
                    self.adopt(ext, &config, &plan, state)
                })
                .await?;
        }
        let project_object = match &plan.project_object {
            // Unasked, the project's object is declared only when it is missing.
            Some(object) if repairs_only => self
                .svm_object(&self.settings.project_namespace, object)
                .await
                .ok()
                .and_then(|found| found.is_none().then_some(object)),
            other => other.as_ref(),
        };
        if let Some(project_object) = project_object {
            steps
                .step(ExtensionStep::ProjectSvmDeclared, || {
                    self.declare_project_svm(&config, &plan, project_object)
                })
                .await?;
            steps
                .step(ExtensionStep::AccountImported, || {
                    self.import_account(ext, &config, &plan)
                })
                .await?;
        }
        steps
            .step(ExtensionStep::SvmDeclared, || {
                self.declare_svm(ext, &config, &plan, None, repairs_only)
            })
            .await?;
        steps
            .step(ExtensionStep::SvmReady, || {
                self.svm_ready(&namespace, &plan)
            })
            .await?;
        let credentials = steps
            .step(ExtensionStep::CredentialsVerified, || {
                self.verify_credentials(&namespace, &plan)
            })
            .await?;
        steps
            .step(ExtensionStep::DeliveryApplied, || {
                self.apply_delivery(
                    &namespace,
                    &config,
                    &plan,
                    &credentials,
                    &shoot,
                    repairs_only,
                )
            })
            .await?;
        let hibernated = report.hibernated;
        steps
            .step(ExtensionStep::DeliveryHealthy, || async {
                // A hibernated shoot's resource manager cannot apply: waiting for it would keep
                // the operation from finishing until the shoot wakes up.
                if hibernated {
                    return Ok(Outcome::unchanged());
                }
                self.delivery_applied(&namespace)
            })
            .await?;
        steps
            .step(ExtensionStep::StateSaved, || async {
                let Some(svm) = self
                    .svms
                    .get(&ObjectRef::new(&plan.object).within(&namespace))
                else {
                    return Ok(Outcome::unchanged());
                };
                self.record_state(
                    ext,
                    &svm,
                    &credentials.username,
                    credentials.password.expose_secret(),
                )
                .await
            })
            .await?;
        Ok(())
    }

    /// Step `ShootRead`: the shoot as the `Cluster` of its namespace describes it.
    async fn read_shoot(&self, ext: &Extension) -> StepFlow<Outcome<ShootView>> {
        match self.shoot(ext) {
            Some(shoot) => Ok(Outcome::Unchanged(shoot)),
            None => Err(Waiting::ClusterNotFound
                .wait(format!(
                    "the Cluster {} is not readable yet",
                    namespace_of(ext)
                ))
                .into()),
        }
    }
}
