//! The operator as it ships: its image (`make image`) and its chart pushed to a registry on
//! loopback, installed with `helm install oci://…` into a cluster with a real node
//! (`hack/node.sh`): containerd, kubelet, kube-proxy, the controller-manager and the scheduler.
//! Everything here happens through the kubelet — probes, limits, restarts, the runtime's security
//! context — and the operator acts only with the ServiceAccount and RBAC the chart ships.
//!
//! The image must have been built (`make test` runs `make image` first). One node runs per machine:
//! the suite waits for the machine's node lock, and its scenarios take turns (one release at a time,
//! as cluster-scoped RBAC names are the chart's).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod chart;
mod gardenlet;
mod kymas;
mod network;
mod release;
mod runtime;
