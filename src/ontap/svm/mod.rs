//! The StorageVirtualMachine controller. [`reconcile`] holds the Reconciler and runs the steps,
//! each in a module of its own (`cluster`, `svm`, `lifs`, `routes`, `account`, `secret`,
//! `delete`); what they all share (the reconciler's state) is below them in `controller_state`.
//! [`plan`] holds what an `Owned` object wants in ONTAP and what differs from it there (the SVM,
//! LIF and route plans): the `svm`, `lifs` and `routes` steps act on it, and `steady` confirms
//! from it, so a property of the SVM or a LIF is compared in `plan` alone. `credentials` is the one writer
//! of the seed Secret and the only place a password is minted: the Secret-first handoff both
//! `account` and `secret` use. `steady` decides when a pass over a Ready object may take its SVM
//! and LIFs from the cluster's inventory, and runs the refresher that re-reads it. `standing`
//! reads who an object is. The rest is pure logic: the names an object may ask for, passwords,
//! netmasks, the seed Secret's judgement, and the SVM requests a spec calls for. Nothing in those talks to Kubernetes
//! or ONTAP, so all of it is unit-tested without either.
//! The seed Secret's shape and the default names are the published contract
//! (`crate::api::seed_secret`), which the Gardener Extension reads too.

mod account;
pub mod authority;
mod cluster;
mod controller_state;
mod credentials;
mod delete;
pub(crate) mod errors;
mod lifs;
mod limits;
pub mod naming;
pub mod netmask;
pub mod password;
pub mod plan;
pub mod reconcile;
pub mod role;
mod rotation;
mod routes;
mod secret;
pub mod seed_secret;
mod standing;
mod steady;
// Each step's module is named after what it brings about; the SVM step's is the SVM.
#[allow(clippy::module_inception)]
mod svm;
pub mod tenancy;
mod verify;

pub use credentials::{PrefillError, Prefilled, SeedSecretPrefill};
pub use password::generate_password;
pub use plan::{
    DesiredError, DesiredLif, DesiredSvm, LifPlan, LifRemoval, LifRole, Mismatch, RemovalReason,
    StateAction, SvmPlan, data_service_policy, desired_lifs, desired_svm, plan_lifs, plan_svm,
    protocol_changes,
};
pub use rotation::Rotations;
pub use seed_secret::{ExpectedSeed, SeedField, SeedSecretState, inspect_seed_secret};
pub use standing::{Adopters, AdoptionGrant};
// The steps name it through `super::`, as they did when it was this module's.
use crate::api::seed_secret::without_data;
pub use verify::VerifyRequests;
