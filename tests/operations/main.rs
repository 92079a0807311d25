//! Running the operator: readiness, liveness, leader election, tracing to Jaeger, the deploy
//! manifests, the image and the CRDs. The API server restart test is
//! `tests/operations_restart.rs`, a binary of its own, since it takes the API server away from
//! every test beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod crd_api;
mod crd_validation;
mod crds_generated;
mod deploy;
mod image;
mod leader_election;
mod liveness;
mod metrics_auth;
mod monitoring;
mod no_secrets;
mod readiness_sync;
mod tracing_jaeger;
