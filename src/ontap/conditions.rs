//! The SVM contract other controllers read: the conditions the OntapCluster and
//! StorageVirtualMachine controllers write — one per step, its `type` the step's name, with
//! [`READY`] summing them up — and the reasons in them a reader acts on. They are declared where
//! they are written; a reader (the Gardener Extension) names them through here, typed, so a
//! renamed step or reason breaks its build instead of its behaviour. The ONTAP feature publishes
//! them rather than `crate::api`: the API types sit below the controllers and import none of them.

pub use super::cluster::ClusterStep;
/// `Connected` reason: ONTAP refused the operator's administrator credentials for the cluster.
pub use super::cluster::UNAUTHENTICATED as CLUSTER_UNAUTHENTICATED;
/// The StorageVirtualMachine controller's reasons: why a spec cannot work as written, and why
/// a step waits.
pub use super::svm::errors::{Invalid as SvmInvalid, Waiting as SvmWaiting};
pub use super::svm::reconcile::SvmStep;
pub use reconcile_engine::conditions::{FALSE, READY, TRUE};
