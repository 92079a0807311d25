//! The custom resources of the ONTAP feature: group `ontap.storage.dev`, version `v1alpha1`.
//!
//! The Rust types are the single source of the CRDs: each controller's registration declares
//! the CRD of its kind, `crds/` is generated from those declarations by `make manifests`
//! (`ontap-operator crds`, see [`crate::manifests`]), and `make test` fails when the two drift.

mod cluster;
mod protocol;
pub mod rules;
pub mod seed_secret;
mod svm;

pub use cluster::{
    ClusterAllowances, ClusterDefaults, OntapCluster, OntapClusterSpec, OntapClusterStatus,
    SecretReference, TenantNetworks, TenantVlan,
};
pub use protocol::Protocol;
pub use svm::{
    AccountRole, ClusterReference, DeletionPolicy, LifSpec, MAX_DATA_LIFS, MAX_ROUTES,
    ProviderReference, ROTATE_CREDENTIALS_ANNOTATION, RouteSpec, StorageVirtualMachine,
    StorageVirtualMachineSpec, StorageVirtualMachineStatus, SvmAccountSpec, SvmLimitsSpec, SvmMode,
    SvmPhase, SvmProtocols, SvmUsage,
};

pub const GROUP: &str = "ontap.storage.dev";

/// Annotation on a StorageVirtualMachine naming the UUID of an SVM in ONTAP that this object
/// takes over: one another StorageVirtualMachine object created and that object is gone (a
/// Gardener restore on another seed: the object is new, the SVM is not), or one the operator did
/// not create, which only objects of `--extension-project-namespace` may adopt (switching from
/// metal-stack's extension). The controller adopts that SVM, and only that one; an account that
/// exists on it keeps its password: the object waits for its seed Secret, which carries it,
/// instead of rotating it.
pub const ADOPT_SVM_UUID_ANNOTATION: &str = "ontap.storage.dev/adopt-svm-uuid";

/// Whether `name` has the shape of a metal-stack project's SVM: `p` and a project UUID's 32
/// lowercase hex digits. The only SVMs an object of `--extension-project-namespace` takes over
/// from another party, and the names the Gardener Extension gives its project SVMs.
pub fn is_metal_stack_svm_name(name: &str) -> bool {
    name.strip_prefix('p').is_some_and(|hex| {
        hex.len() == 32
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

/// On a StorageVirtualMachine the Gardener extension declares (in its project namespace, or in
/// a shoot namespace gardenlet labelled — where only the operator and gardenlet write): the
/// Gardener project, as its namespace in the garden, the object serves. The SVM controller
/// records it in ONTAP's mark, which is what lets another seed's objects of the same project —
/// and only those — serve or take over the SVM.
pub const GARDENER_PROJECT_ANNOTATION: &str = "ontap.storage.dev/gardener-project";
/// The uid of the Shoot in the garden a shoot's object serves, recorded by the extension from
/// the shoot's `Cluster` (gardenlet's): the same on every seed the shoot moves to. The SVM
/// controller records it in ONTAP's marks of the shoot's SVM and account, so that the shoot's
/// object on its next seed takes them back with or without a state carried over. Read only on
/// objects the extension owns in namespaces gardenlet labelled.
pub const GARDENER_SHOOT_UID_ANNOTATION: &str = "ontap.storage.dev/gardener-shoot-uid";
pub const VERSION: &str = "v1alpha1";
