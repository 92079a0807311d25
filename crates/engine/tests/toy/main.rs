//! The reconcile engine against a real kube-apiserver, with the test-only `Toy` resource and a
//! toy controller built on the engine's public API (`toy.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod toy;

mod basics;
mod defects;
mod diagnosis;
mod lifecycle;
mod registration;

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use reconcile_engine::{ClientLimits, EngineConfig};
use serde_json::json;

use test_support::TestEnv;
use toy::toy;
use toy::{Running, ToyController, create, toys, wait_condition};

fn unlimited() -> ClientLimits {
    ClientLimits {
        qps: 0.0,
        burst: 0,
        max_mutating_in_flight: 0,
    }
}

fn fast_backoff() -> EngineConfig {
    EngineConfig {
        backoff_base: Duration::from_millis(200),
        backoff_max: Duration::from_secs(30),
        ..EngineConfig::default()
    }
}

/// Touches an annotation: a metadata change that triggers a reconcile without a spec change.
async fn poke(env: &TestEnv, name: &str, value: &str) {
    toys(env)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"test/poke": value}}})),
        )
        .await
        .unwrap();
}

/// A toy controller with [`fast_backoff`] and an unlimited client.
async fn started(env: &TestEnv) -> Running {
    ToyController::new(fast_backoff())
        .limits(unlimited())
        .start(env)
        .await
}

/// Like [`started`], with the toys' watch behind a gate.
async fn started_gated(env: &TestEnv) -> Running {
    ToyController::new(fast_backoff())
        .limits(unlimited())
        .gated()
        .start(env)
        .await
}

/// Creates toy `name` with `value` and waits until it is Ready.
async fn create_ready(env: &TestEnv, name: &str, value: i64) {
    create(env, toy(name).value(value).build()).await;
    wait_condition(env, name, "Ready", "True", None).await;
}
