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
//! One file per concern: this module declares the controller, its steps and what it holds;
//! [`reconciler`] registers it and dispatches a pass to an operation ([`provision`] for create,
//! reconcile and restore, [`migrate`], [`delete`]); the steps those run live with what they bring
//! about ([`plan`], [`svm_object`], [`svm_ready`], [`credentials`], [`delivery`], [`restore`],
//! [`metal_stack`], [`account_import`]); [`report`] turns a pass into the Extension's status,
//! [`shoot_health`] reads what Trident in the shoot reports on the delivered backends for it, and
//! [`reasons`] declares the reasons a step fails or waits with, and which of them gardenlet reads
//! an error code from.

mod account_import;
mod credentials;
mod delete;
mod delivery;
mod metal_stack;
mod migrate;
mod plan;
mod provision;
mod reasons;
mod reconciler;
mod report;
mod restore;
mod shoot_health;
mod svm_object;
mod svm_ready;

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::{Client, ResourceExt};
use reconcile_engine::SharedCache;

use super::api::{Cluster, Extension, ManagedResource};
use super::shoot_access::ShootClients;
use crate::api::{OntapCluster, StorageVirtualMachine};
use crate::ontap::connections::ClusterConnections;
use crate::ontap::svm::{SeedSecretPrefill, VerifyRequests};
use shoot_health::HealthRechecks;

pub use migrate::STATE_SECRET;
pub use reconciler::{ExtensionSettings, register};

reconcile_engine::steps! {
    /// The steps of the Extension controller: reconcile, restore, migrate, delete.
    pub enum ExtensionStep {
        /// The operation annotation was acted on (a `reconcile` request is removed first).
        OperationAccepted,
        /// The shoot's `Cluster` was read.
        ShootRead,
        /// providerConfig is valid and resolved.
        ConfigValid,
        /// Restore: the SVM object adopts the SVM of `status.state`, its Secret pre-filled.
        SvmAdopted,
        /// Per-project sharing: the object that provisions the project's SVM exists.
        ProjectSvmDeclared,
        /// Per-project sharing: an account metal-stack's extension made keeps its password (its
        /// seed Secret's credentials, verified, pre-fill ours), else gets a new one.
        AccountImported,
        /// The StorageVirtualMachine object matches the configuration.
        SvmDeclared,
        /// The StorageVirtualMachine is Ready, at its generation, with a verified Secret.
        SvmReady,
        /// The seed Secret's credentials authenticate against ONTAP, now.
        CredentialsVerified,
        /// The ManagedResources (Secrets first) are written.
        DeliveryApplied,
        /// The resource manager applied them to the shoot.
        DeliveryHealthy,
        /// What a restore on another seed needs is in `status.state`, at the end of every
        /// successful reconcile and first thing on migrate.
        StateSaved,
        /// Migrate: the ManagedResources are gone, their objects kept in the shoot.
        DeliveryReleased,
        /// Migrate: the StorageVirtualMachine object is gone, ONTAP untouched.
        SvmReleased,
        /// Migrate: every finalizer of the Extension is gone, before `Succeeded` is written:
        /// afterwards the migrated Extension is left alone, so nothing would remove one.
        FinalizersReleased,
        /// Delete: the ManagedResources and what they put into the shoot are gone.
        DeliveryDeleted,
        /// Delete: the StorageVirtualMachine object is gone (with it, per its policy, the SVM).
        SvmDeleted,
        /// Delete, per-project sharing: the project's object is deleted when this was the last
        /// shoot of the project here and its policy is `Delete`; its controller deletes the SVM
        /// once no shoot's account of any seed is left on it.
        ProjectSvmReleased,
    }
}

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "extension";

/// The Extension controller: what a pass reads and whom it asks. Its methods live with the
/// steps and operations they carry out, one file each.
pub struct ExtensionReconciler {
    kube: Client,
    clusters: SharedCache<Cluster>,
    ontap_clusters: SharedCache<OntapCluster>,
    svms: SharedCache<StorageVirtualMachine>,
    secrets: SharedCache<Secret>,
    managed_resources: SharedCache<ManagedResource>,
    connections: ClusterConnections,
    /// Asks the SVM controller for a pass now when the published credentials fail.
    verify: VerifyRequests,
    /// Creates a seed Secret with credentials ONTAP already holds (a restore, an import): the
    /// SVM controller's, the seed Secrets' one writer.
    prefill: SeedSecretPrefill,
    /// Reads what Trident reports on the delivered backends.
    shoot_clients: ShootClients,
    /// Passes asked for while Trident's backends are not healthy.
    rechecks: HealthRechecks,
    settings: ExtensionSettings,
}

/// How soon to look again at something converging in the seed or the shoot.
const CONVERGING: Duration = Duration::from_secs(2);

fn namespace_of(ext: &Extension) -> String {
    ext.namespace().unwrap_or_default()
}
