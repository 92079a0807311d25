//! ontap-operator: provisions NetApp ONTAP Storage Virtual Machines for Kubernetes and publishes
//! their verified credentials as seed Secrets.

pub mod api;
pub mod cli;
pub mod controllers;
pub mod manifests;
pub mod measure;
pub use reconcile_engine as engine;
pub mod ontap;
pub mod runtime;
