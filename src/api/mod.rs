//! The custom resources this operator owns, group `ontap.storage.dev`, version `v1alpha1`.
//!
//! The Rust types are the single source of the CRDs: `crds/` is generated from them by
//! `make crds` (`ontap-operator crds`), and `make test` fails when the two drift.

mod cluster;
pub mod rules;
mod svm;

pub use cluster::{OntapCluster, OntapClusterSpec, OntapClusterStatus, SecretReference};
pub use svm::{
    ClusterReference, DeletionPolicy, LifSpec, StorageVirtualMachine, StorageVirtualMachineSpec,
    StorageVirtualMachineStatus, SvmAccountSpec, SvmPhase, SvmProtocols,
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

crate::conditioned_status!(OntapClusterStatus, StorageVirtualMachineStatus);

pub const GROUP: &str = "ontap.storage.dev";
pub const VERSION: &str = "v1alpha1";

/// Every CRD this project owns, in a stable order (the order of `crds/` and of `ontap-operator crds`).
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    vec![OntapCluster::crd(), StorageVirtualMachine::crd()]
}

/// The CRDs as one multi-document YAML stream, as `kubectl apply -f -` takes it.
pub fn crds_yaml() -> Result<String, serde_yaml::Error> {
    let mut out = String::new();
    for (_, yaml) in crd_files()? {
        out.push_str("---\n");
        out.push_str(&yaml);
    }
    Ok(out)
}

/// Each CRD as (`<plural>.<group>.yaml`, its YAML): the contents of `crds/`.
pub fn crd_files() -> Result<Vec<(String, String)>, serde_yaml::Error> {
    all_crds()
        .into_iter()
        .map(|crd| {
            let name = format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default());
            Ok((name, serde_yaml::to_string(&crd)?))
        })
        .collect()
}
