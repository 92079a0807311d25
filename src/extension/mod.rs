//! The Gardener `Extension` controller's engine-independent parts: Gardener's resources
//! ([`api`]), providerConfig ([`config`]), error codes ([`errors`]), the event filter and the
//! operation annotation ([`filter`]), what lands in the shoot ([`shoot`]), the status contract
//! and gardenlet's health check ([`status`]), the `SystemComponentsHealthy` condition
//! ([`health`]), the shoot's access Secret ([`shoot_access`]), what the Shoot must say for its configuration ([`shoot_rules`]), the migrate/restore state ([`state`]), metal-stack's naming ([`naming`]),
//! the images delivered into shoots ([`imagevector`]) and the heartbeat Lease ([`heartbeat`]).
//!
//! The controller on the engine that uses them: [`controller`]; the garden's validating webhook
//! that refuses a Shoot's configuration before the seed sees it: [`admission`].
//!
//! Facts about the contract: `shared/reference/gardener-extension-facts.md`.

pub mod admission;
pub mod api;
pub mod config;
pub mod controller;
pub mod errors;
pub mod feature;
pub mod filter;
pub mod health;
pub mod heartbeat;
pub mod imagevector;
pub mod metrics;
pub mod naming;
pub mod shoot;
pub mod shoot_access;
pub mod shoot_rules;
pub mod state;
pub mod status;

/// The extension type this controller serves by default (`--extension-type`).
pub const EXTENSION_TYPE: &str = "ontap";
/// The finalizer Gardener's library would put on an Extension of type `ontap`.
pub const FINALIZER: &str = "extensions.gardener.cloud/ontap";
