//! Delete, and force-delete: the delivery leaves the shoot, then the StorageVirtualMachine
//! object goes (with it, per its policy, the SVM), then a project's SVM no shoot here uses.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use reconcile_engine::{Halt, StepRunner};

use crate::extension::api::Extension;

use super::migrate::STATE_SECRET;
use super::reasons::delete_ignoring_missing;
use super::{ExtensionReconciler, ExtensionStep, namespace_of};

impl ExtensionReconciler {
    /// `DeliveryDeleted` → `SvmDeleted` → `ProjectSvmReleased`. `force` (the Shoot's
    /// force-deletion annotation) waits for nothing outside the seed: the ManagedResources and
    /// the StorageVirtualMachine object go without waiting, orphaning what ONTAP holds.
    pub(super) async fn delete(
        &self,
        ext: &Extension,
        force: bool,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let namespace = namespace_of(ext);
        steps
            .step(ExtensionStep::DeliveryDeleted, || {
                self.remove_delivery(&namespace, false, !force)
            })
            .await?;
        steps
            .step(ExtensionStep::SvmDeleted, || async {
                let outcome = self.remove_svm(ext, false, force).await?;
                // The state saved for a restore holds the account's password; with the account
                // gone it is worth nothing, and nothing should hold it.
                let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
                delete_ignoring_missing(&secrets, STATE_SECRET).await?;
                Ok(outcome)
            })
            .await?;
        steps
            .step(ExtensionStep::ProjectSvmReleased, || {
                self.release_project_svm(ext)
            })
            .await?;
        Ok(())
    }
}
