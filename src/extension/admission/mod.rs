//! The garden's admission: a validating webhook for Shoots that enable the extension type, so
//! that a shoot owner's mistake is refused by `kubectl apply`, not minutes later by the seed.
//!
//! One source of truth with the seed: [`review`] calls the seed's own parser and Shoot rules,
//! decoding strictly, and adds what only an update can show (changes that would orphan or move
//! storage). [`server`] serves it with certificates it keeps itself and registers it in the
//! garden, the way gardener-operator's `Extension` deploys an extension's admission.

pub mod certs;
pub mod review;
pub mod server;

pub use server::run;
