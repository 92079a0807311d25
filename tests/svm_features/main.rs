//! The StorageVirtualMachine's optional controls a platform team sets before it hands an SVM to
//! a tenant (issue 41): limits, network placement and routes, credential rotation, least
//! privilege, with a real operator process, a mock ONTAP and a real API server. A binary of its
//! own beside `svm`, so that neither is the longest lane of `hack/test.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod least_privilege;
mod limits;
mod network;
mod qos;
mod role_cost;
mod rotation;
mod tenant_network;
