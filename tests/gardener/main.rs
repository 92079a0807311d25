//! The Gardener extension (`src/extension/`) against a real API server as the seed,
//! a second control plane as the shoot and the real gardener-resource-manager between them:
//! shoot delivery, the Extension lifecycle as gardenlet drives it, the heartbeat, and the
//! registration manifests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod admission;
mod backend_health;
mod delivery;
mod drift;
mod failures;
mod gardenlet;
mod heartbeat;
mod images;
mod lifecycle;
mod metal_stack_switch;
mod migration_order;
mod monitoring;
mod placement;
mod project_sharing;
mod registration;
mod regressions;
mod restart;
mod rotation;
mod trident_backend;
mod trident_replay;
