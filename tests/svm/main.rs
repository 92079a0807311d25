//! The StorageVirtualMachine controller (`src/ontap/svm/`) with a real operator process, a
//! mock ONTAP and a real API server: provisioning, the failure-injection matrix and faults on
//! the Kubernetes side. The crash test is `tests/svm_crash.rs`, a binary of its own: its kills
//! must land while ONTAP jobs run, which parallel tests' load makes unlikely.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod cost;
mod faults;
mod hardening;
mod kube_faults;
mod least_privilege;
mod limits;
mod network;
mod provisioning;
mod qos;
mod role_cost;
mod rotation;
mod sharing;
mod tenancy;
