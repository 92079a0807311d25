//! The ONTAP client (`src/ontap/`): its behaviour against mock-ontap, and its HTTP layer
//! against a tiny stub. The no-secrets-in-logs test is `tests/ontap_secrets.rs`, a binary of its
//! own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod client;
mod http_layer;
