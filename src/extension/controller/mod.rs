//! The `Extension` controller on the reconcile engine: a Gardener `Extension` of our type
//! becomes a StorageVirtualMachine in the shoot namespace and, once its credentials are verified
//! against ONTAP, the ManagedResources that install Trident in the shoot.
//!
//! Gardener's generic Extension reconciler, mapped onto the engine:
//!
//! - **Which objects**: [`Reconciler::admits`] is the predicate chain — the type, class `shoot`
//!   (also when unset), not `wait-for-state`, not already migrated (`ShouldSkipOperation`), and
//!   not a shoot whose last operation failed (read from the `Cluster`). Nothing is written for
//!   an object that is not admitted, not even the finalizer.
//! - **Operations**: a pass runs an *operation* when gardenlet asked for one (the operation
//!   annotation, removed first when it is `reconcile`) or the last one has not succeeded yet —
//!   the events Gardener's default filter lets through. Only operation passes write
//!   `lastOperation`/`lastError`/`observedGeneration`, with the texts Gardener's library writes
//!   (module [`super::status`]). Every other pass (an SVM, Secret or ManagedResource changed, the
//!   sync period) runs the same idempotent steps — so a rotated password still reaches the shoot
//!   at once — and reports what it found only in the `SystemComponentsHealthy` condition,
//!   which gardenlet copies into the Shoot.
//! - **Status**: the engine does not manage it ([`Reconciler::MANAGES_STATUS`] is `false`); each
//!   write is a JSON merge patch on `/status`, as Gardener's `statusUpdater` sends.
//! - **Create/Reconcile**: `ShootRead` → `ConfigValid` → `SvmDeclared` → `SvmReady` →
//!   `CredentialsVerified` → `DeliveryApplied` → `DeliveryHealthy`. `Succeeded` means the seed
//!   Secret's credentials authenticated against ONTAP in this very pass and the shoot delivery is
//!   applied. Waits are requeues, never a blocked worker.
//! - **Migrate**: the state (SVM, account, a Secret with the credentials) goes into
//!   `status.state`/`status.resources`; the ManagedResources are deleted with `keepObjects`;
//!   the StorageVirtualMachine object is deleted with `deletionPolicy: Retain` (ONTAP untouched);
//!   a project object no shoot here uses any more goes (`Delete` policy); then all finalizers go,
//!   before `Succeeded` is written, and the annotation after it, as Gardener's `migrate()` does.
//! - **Restore**: from `status.state`, a new StorageVirtualMachine object adopts the SVM in ONTAP
//!   by UUID ([`crate::api::ADOPT_SVM_UUID_ANNOTATION`]) with its seed Secret pre-filled from the
//!   restored credentials: no second SVM, no password rotation. Then it reconciles.
//! - **Delete**: the delivery goes (objects removed from the shoot), then the
//!   StorageVirtualMachine object, whose controller deletes the account and the SVM unless the
//!   policy retains them. **ForceDelete** (the Shoot's force-deletion annotation) waits for
//!   nothing outside the seed: it deletes the ManagedResources and the StorageVirtualMachine
//!   object and removes the latter's finalizer, orphaning what ONTAP holds.
//!
//! One file per concern: [`reconciler`] registers the controller and dispatches a pass to an
//! operation ([`deliver`] for create, reconcile and restore, [`migrate`], [`delete`]); the steps
//! those run live with what they bring about ([`plan`], [`svm_object`], [`svm_ready`],
//! [`credentials`], [`delivery`], [`restore`], [`metal_stack`], [`account_import`]); [`report`]
//! turns a pass into the Extension's status, [`shoot_health`] reads what Trident in the shoot
//! reports on the delivered backends for it, and [`reasons`] declares the reasons a step fails
//! or waits with, and which of them gardenlet reads an error code from.

mod account_import;
mod credentials;
mod delete;
mod deliver;
mod delivery;
mod metal_stack;
mod migrate;
mod plan;
mod reasons;
mod reconciler;
mod report;
mod restore;
mod shoot_health;
mod svm_object;
mod svm_ready;

use std::time::Duration;

use kube::ResourceExt;

use super::api::Extension;

pub use migrate::STATE_SECRET;
pub use reconciler::{CONTROLLER, ExtensionReconciler, ExtensionSettings, ExtensionStep, register};

/// How soon to look again at something converging in the seed or the shoot.
const CONVERGING: Duration = Duration::from_secs(2);

fn namespace_of(ext: &Extension) -> String {
    ext.namespace().unwrap_or_default()
}
