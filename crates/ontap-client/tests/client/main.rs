//! The ONTAP client (this crate): its behaviour against mock-ontap, and its HTTP layer
//! against a tiny stub. The no-secrets-in-logs test is `tests/no_secrets.rs`, a binary of its
//! own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
mod http_layer;
mod limits;
mod network;
mod roles;
