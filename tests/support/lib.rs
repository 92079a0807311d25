//! The operator's own test helpers on top of the workspace harness ([`test_support`], re-exported
//! whole so a test reads `support::poll`, `support::mock`, … from one place): fixtures of the
//! operator's kinds, the operator process, and drivers for SVMs, Gardener and Kyma.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub use test_support::*;

pub mod fixtures;
pub mod garden;
pub mod gardener;
pub mod gardenlet;
pub mod kyma;
pub mod operator;
pub mod resync;
pub mod svm;

/// The `ontap-operator` binary the tests run: `ONTAP_OPERATOR_BIN` (worktrees sharing one
/// `CARGO_TARGET_DIR` overwrite each other's, so a run may point at its own build), else the one
/// Cargo built beside the running test binary, where `CARGO_BIN_EXE_ontap-operator` points: Cargo
/// builds a package's binaries before its integration tests, and puts the tests in `deps/` below
/// them. (That variable is set only while compiling the package's own tests, not this crate.)
pub fn operator_binary() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("ONTAP_OPERATOR_BIN") {
        return path.into();
    }
    let test_binary = std::env::current_exe().expect("the running test binary's path");
    test_binary
        .parent()
        .and_then(std::path::Path::parent)
        .expect("a test binary sits in target/<profile>/deps")
        .join(format!("ontap-operator{}", std::env::consts::EXE_SUFFIX))
}

/// A benchmark's setting from the environment variable `name`, or `default` when unset or
/// unparsable.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The control plane's processes, when this binary started it (`hack/control-plane.sh` records
/// `etcd-pid apiserver-pid` in its folder); none on an existing cluster.
pub fn control_plane_processes() -> Vec<(&'static str, u32)> {
    let Some(dir) = &control_plane().dir else {
        return Vec::new();
    };
    let pids = std::fs::read_to_string(dir.join("pids")).unwrap_or_default();
    let pids: Vec<u32> = pids
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    match pids[..] {
        [etcd, apiserver] => vec![("kube-apiserver", apiserver), ("etcd", etcd)],
        _ => Vec::new(),
    }
}
