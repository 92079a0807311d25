//! The engine's lifecycle: the finalizer goes on before the first reconcile, cleanup runs on
//! deletion, and the finalizer comes off only once cleanup succeeded. The engine before issue 10
//! had no lifecycle at all: no finalizer was ever added, so each of these tests fails there at
//! its first assertion about the finalizer.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use reconcile_engine::{EngineConfig, StepName};
use serde_json::json;

use super::{fast_backoff, unlimited};
use crate::toy::toy;
use crate::toy::{
    GateMode, TOY_FINALIZER, ToyController, ToyStep, condition, create, get, toys, wait_condition,
    wait_gone,
};
use test_support::{env, poll};

const OTHER: &str = "other.example.dev/keep";

// The finalizer patch is computed from the cached object. Here the cache is stale on purpose:
// it shows no finalizers while the server already holds another writer's. A merge patch
// `finalizers: [ours]` from that view would replace the other writer's finalizer; the engine's
// JSON patch tests that the list is still absent, fails (422), and appends once the cache
// caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finalizer_goes_on_first_without_replacing_another_writers() {
    let env = env().await;
    // One reconcile start per 4 s after the first: the window in which the test makes the
    // cache stale before the engine looks at the toy.
    let config = EngineConfig {
        reconcile_rate: 0.25,
        reconcile_burst: 1,
        ..fast_backoff()
    };
    let ctl = ToyController::new(config)
        .limits(unlimited())
        .with_finalizer()
        .gated()
        .start(&env)
        .await;
    let gate = ctl.gate.as_ref().unwrap();
    // Takes the one token of the burst.
    create(&env, toy("first").value(1).build()).await;
    wait_condition(&env, "first", "Ready", "True", None).await;

    create(&env, toy("raced").value(2).build()).await;
    poll("raced in the cache", Duration::from_secs(10), async || {
        ctl.toys
            .get(&kube::runtime::reflector::ObjectRef::new("raced").within(&env.namespace))
    })
    .await;
    gate.freeze().await;
    toys(&env)
        .patch(
            "raced",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [OTHER]}})),
        )
        .await
        .unwrap();
    poll(
        "the stale attempt refused",
        Duration::from_secs(30),
        async || {
            // The test operation failed: 422, nothing replaced.
            let refused = ctl.metric(
                "rest_client_requests_total",
                &[("method", "PATCH"), ("code", "422")],
            );
            (refused >= 1.0).then_some(())
        },
    )
    .await;
    assert!(
        ctl.world.steps("raced").is_empty(),
        "no reconcile before the finalizer"
    );

    gate.set(GateMode::Open);
    let raced = wait_condition(&env, "raced", "Ready", "True", None).await;
    assert_eq!(raced.finalizers(), [OTHER, TOY_FINALIZER]);
    assert_eq!(get(&env, "first").await.finalizers(), [TOY_FINALIZER]);
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_runs_on_deletion_and_the_finalizer_stays_until_it_succeeded() {
    let env = env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .with_finalizer()
        .start(&env)
        .await;
    let released = ToyStep::BackendReleased.as_str();

    // A cleanup that succeeds: the finalizer goes, the object with it.
    create(&env, toy("clean").value(1).build()).await;
    let ready = wait_condition(&env, "clean", "Ready", "True", None).await;
    assert_eq!(ready.finalizers(), [TOY_FINALIZER]);
    assert_eq!(ctl.world.backend.lock().unwrap().get("clean"), Some(&1));
    toys(&env)
        .delete("clean", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&env, "clean").await;
    assert_eq!(ctl.world.cleanups("clean"), 1);
    assert!(!ctl.world.backend.lock().unwrap().contains_key("clean"));

    // A cleanup that fails: the finalizer stays and a condition says why.
    ctl.world.refuse_release("stuck", true);
    create(&env, toy("stuck").value(2).build()).await;
    wait_condition(&env, "stuck", "Ready", "True", None).await;
    toys(&env)
        .delete("stuck", &DeleteParams::default())
        .await
        .unwrap();
    let stuck = wait_condition(&env, "stuck", released, "False", Some("ReleaseRefused")).await;
    assert_eq!(stuck.finalizers(), [TOY_FINALIZER]);
    let ready = condition(&stuck, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ReleaseRefused")
    );
    assert!(
        ready.message.contains("refuses to release"),
        "{}",
        ready.message
    );
    poll(
        "a few cleanup attempts",
        Duration::from_secs(15),
        async || {
            let attempts = ctl
                .world
                .steps("stuck")
                .iter()
                .filter(|s| **s == released)
                .count();
            (attempts >= 3).then_some(())
        },
    )
    .await;
    let still = get(&env, "stuck").await;
    assert_eq!(
        still.finalizers(),
        [TOY_FINALIZER],
        "kept while cleanup fails"
    );
    assert_eq!(ctl.world.cleanups("stuck"), 0);

    ctl.world.refuse_release("stuck", false);
    wait_gone(&env, "stuck").await;
    assert_eq!(ctl.world.cleanups("stuck"), 1);
    poll("stuck forgotten", Duration::from_secs(10), async || {
        (ctl.world.forgotten("stuck") == 1).then_some(())
    })
    .await;
    ctl.stop().await;
}

// A trigger queued while the last cleanup pass runs (a child's deletion, typically) reaches the
// object after its finalizer went, while the cache may still show it with the finalizer. The
// engine before this test ran the whole cleanup again on that stale copy; the SVM controller's
// fault matrix saw it as a deletion flow whose length depended on the cache's timing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_object_seen_stale_is_not_cleaned_up_twice() {
    let env = env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .with_finalizer()
        .gated()
        .start(&env)
        .await;
    let gate = ctl.gate.clone().unwrap();
    let released = ToyStep::BackendReleased.as_str();
    let cleanup_steps = || {
        ctl.world
            .steps("once")
            .iter()
            .filter(|s| **s == released)
            .count()
    };

    ctl.world.refuse_release("once", true);
    create(&env, toy("once").value(1).build()).await;
    wait_condition(&env, "once", "Ready", "True", None).await;
    toys(&env)
        .delete("once", &DeleteParams::default())
        .await
        .unwrap();
    wait_condition(&env, "once", released, "False", Some("ReleaseRefused")).await;
    // The cache keeps the object as it is now: being deleted, our finalizer on it.
    gate.freeze().await;
    ctl.world.refuse_release("once", false);
    poll(
        "the cleanup completed",
        Duration::from_secs(15),
        async || (ctl.world.cleanups("once") == 1).then_some(()),
    )
    .await;
    poll(
        "the object gone from the server",
        Duration::from_secs(15),
        async || {
            toys(&env)
                .get_opt("once")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
    )
    .await;
    let steps_before = cleanup_steps();
    let passes_before = ctl.reconciles();
    ctl.trigger("once");
    poll(
        "the triggered pass ended",
        Duration::from_secs(15),
        async || (ctl.reconciles() > passes_before).then_some(()),
    )
    .await;
    assert_eq!(
        cleanup_steps(),
        steps_before,
        "the stale copy was cleaned up again"
    );
    assert_eq!(ctl.world.cleanups("once"), 1);
    gate.set(GateMode::Open);
    ctl.stop().await;
}
