//! The Kyma inventory controllers (`crates/kyma-inventory/`) as a real operator process
//! (`--controllers=kyma`, a time scale that makes a standard Kyma take seconds) against a real
//! API server: a Kyma's lifecycle and its children, the writes a pass that finds nothing to do
//! makes (none), the render cache under concurrent first renders, and what `kubectl get` shows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod columns;
mod cost;
mod lifecycle;
mod monitoring;
mod render;
