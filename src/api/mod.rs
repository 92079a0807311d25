//! The custom resources this operator owns, group `ontap.storage.dev`, version `v1alpha1`.
//!
//! The Rust types are the single source of the CRDs: each controller's registration declares
//! the CRD of its kind, `crds/` is generated from those declarations by `make manifests`
//! (`ontap-operator crds`, see [`crate::manifests`]), and `make test` fails when the two drift.

mod cluster;
pub mod rules;
mod svm;

pub use cluster::{OntapCluster, OntapClusterSpec, OntapClusterStatus, SecretReference};
pub use svm::{
    ClusterReference, DeletionPolicy, LifSpec, StorageVirtualMachine, StorageVirtualMachineSpec,
    StorageVirtualMachineStatus, SvmAccountSpec, SvmPhase, SvmProtocols,
};

crate::engine::conditioned_status!(OntapClusterStatus, StorageVirtualMachineStatus);

pub const GROUP: &str = "ontap.storage.dev";
pub const VERSION: &str = "v1alpha1";
