//! Delete, and force-delete: the delivery leaves the shoot, then the StorageVirtualMachine
//! object goes (with it, per its policy, the SVM), then a project's SVM no shoot here uses.

use reconcile_engine::{Halt, StepRunner};

use crate::extension::api::Extension;

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
            .step(ExtensionStep::SvmDeleted, || {
                self.remove_svm(ext, false, force)
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
