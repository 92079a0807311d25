//! Controllers: the reconcile logic of each custom resource.

pub mod svm;
