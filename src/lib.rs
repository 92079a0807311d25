//! ontap-operator: provisions NetApp ONTAP Storage Virtual Machines for Kubernetes and publishes
//! their verified credentials as seed Secrets; with the Gardener Extension and the Kyma
//! inventory controllers as further features on the same engine.
//!
//! Layers, from the ground up: [`deploy`] (how the operator is known), [`api`] (its kinds),
//! [`ontap`] and [`extension`] (the features' controllers), [`features`] (the one list),
//! [`manifests`] and [`runtime`] (what iterates the list), [`cli`].

pub mod api;
pub mod cli;
pub mod deploy;
pub mod extension;
pub mod features;
pub mod manifests;
pub mod ontap;
pub mod runtime;
