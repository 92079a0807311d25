//! The StorageVirtualMachine controller (`src/ontap/svm/`) with a real operator process, a
//! mock ONTAP and a real API server: provisioning, the failure-injection matrix and faults on
//! the Kubernetes side. The crash test is `tests/svm_crash.rs`, a binary of its own: its kills
//! must land while ONTAP jobs run, which parallel tests' load makes unlikely.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod cost;
mod faults;
mod hardening;
mod kube_faults;
mod provisioning;
mod sharing;
mod tenancy;
