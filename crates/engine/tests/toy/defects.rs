//! One test per engine defect of issue 10, point 4. Each would fail on the engine before the
//! issue (commit db1d46e, `src/engine/`); the comment above each says why.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use reconcile_engine::text::MAX_MESSAGE_BYTES;
use reconcile_engine::{EngineConfig, StepName};
use serde_json::json;

use super::{create_ready, fast_backoff, poke, started, started_gated, unlimited};
use crate::toy::toy;
use crate::toy::{
    GateMode, ToyController, ToyStep, condition, create, get, toys, wait_condition, wait_gone,
};
use test_support::admission::{self, probe_create, wait_enforced};
use test_support::metrics::samples;
use test_support::{TestEnv, env, poll};

const READY: &str = "Ready";
/// The longest backoff of the conflict test.
const CAP: Duration = Duration::from_millis(800);

/// Rust `Debug` syntax that must never reach a person reading conditions and Events.
fn assert_plain(text: &str, message: &str) {
    for debug in [
        "Status {",
        "Some(",
        "ErrorResponse",
        "StatusDetails",
        "code: ",
    ] {
        assert!(!text.contains(debug), "{debug:?} in {text:?}");
    }
    assert_eq!(
        text.matches(message).count(),
        1,
        "the policy's message once in {text:?}"
    );
}

// The old engine retried a conflict after a fixed `conflict_delay` (1 s) for ever
// (`ErrorCategory::Conflict => Next::Retry(conflict_delay)`): its gaps are all about 1 s, so the
// first (expected 200 ms) is already too long and none of them grows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_conflict_backs_off_growing_and_capped() {
    let env = env().await;
    let config = EngineConfig {
        backoff_base: Duration::from_millis(200),
        backoff_max: CAP,
        ..EngineConfig::default()
    };
    let ctl = ToyController::new(config)
        .limits(unlimited())
        .start(&env)
        .await;
    ctl.world.set_conflict("k", true);
    create(&env, toy("k").value(1).build()).await;

    let starts = poll("8 attempts", Duration::from_secs(30), async || {
        let s = ctl.world.starts("k");
        (s.len() >= 8).then_some(s)
    })
    .await;
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    for (i, gap) in gaps.iter().take(7).enumerate() {
        // 200, 400, 800 ms, then capped at 800 ms.
        let expected = (Duration::from_millis(200) * 2u32.pow(i as u32)).min(CAP);
        assert!(
            *gap >= expected.mul_f64(0.95) && *gap < expected + Duration::from_millis(700),
            "retry {i}: waited {gap:?}, expected about {expected:?} (all gaps {gaps:?})"
        );
    }
    let toy = poll(
        "attempts counted in the status",
        Duration::from_secs(10),
        async || {
            let toy = get(&env, "k").await;
            let halted = toy.status.as_ref()?.halted.clone()?;
            (halted.attempts >= 7).then_some(toy)
        },
    )
    .await;
    let halted = toy.status.unwrap().halted.unwrap();
    assert_eq!(halted.step, ToyStep::BackendReady.as_str());
    assert_eq!(halted.reason, "BackendConflict");
    ctl.stop().await;
}

// The old engine copied the step's message into the condition unbounded: a 2 MiB message made
// the status patch larger than etcd accepts (1.5 MiB), the write failed on every pass, and the
// `Ready=True` of the last good pass stayed — the wait for `Ready=False` times out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_message_is_bounded_and_the_failure_still_written() {
    let env = env().await;
    let ctl = started(&env).await;
    create_ready(&env, "huge", 1).await;

    *ctl.world.down_message.lock().unwrap() = Some("x".repeat(2 << 20));
    ctl.world.set_down("huge", true);
    poke(&env, "huge", "1").await;
    let toy = wait_condition(&env, "huge", READY, "False", Some("BackendDown")).await;
    for type_ in [READY, ToyStep::BackendReady.as_str()] {
        let c = condition(&toy, type_).unwrap();
        assert!(
            c.message.len() <= MAX_MESSAGE_BYTES && c.message.len() > 100,
            "{type_}: {} bytes",
            c.message.len()
        );
    }
    assert_eq!(
        toy.status.unwrap().halted.unwrap().step,
        ToyStep::BackendReady.as_str()
    );
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let warning = poll("the Warning Event", Duration::from_secs(10), async || {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("BackendDown"))
    })
    .await;
    assert!(warning.note.unwrap_or_default().len() <= MAX_MESSAGE_BYTES);
    ctl.stop().await;
}

/// A dry-run status write of `value` to toy `name`: goes through admission, stores nothing.
async fn probe_status_write(env: &TestEnv, name: &str, value: i64) -> Result<(), String> {
    let params = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    toys(env)
        .patch_status(
            name,
            &params,
            &Patch::Merge(json!({"status": {"value": value}})),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

// The old engine, when a status write failed, only logged it: the API server kept the status of
// the last successful write, `Ready=True`, for a pass that could not even record its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_status_write_never_leaves_ready_true_standing() {
    let env = env().await;
    let ctl = started(&env).await;
    create_ready(&env, "w", 1).await;

    // Every status write that sets value 13 is refused.
    let message = format!(
        "status.value 13 is refused in {} by a test policy",
        env.namespace
    );
    let policy = admission::deny(
        &env.client,
        &env.namespace,
        ("enginetest.ontap.storage.dev", "toys/status"),
        &["UPDATE"],
        "!has(object.status) || !has(object.status.value) || object.status.value != 13",
        &message,
    )
    .await;
    wait_enforced(&message, async || probe_status_write(&env, "w", 13).await).await;

    toys(&env)
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 13}})),
        )
        .await
        .unwrap();
    let toy = wait_condition(&env, "w", READY, "False", Some("StatusWriteFailed")).await;
    let ready = condition(&toy, READY).unwrap();
    assert_plain(&ready.message, &message);
    // The minimal write replaced the conditions only; the refused value never landed.
    assert_eq!(toy.status.as_ref().unwrap().value, Some(1));

    policy
        .lift(async || probe_status_write(&env, "w", 13).await)
        .await;
    let toy = poll(
        "the full status once writes pass",
        Duration::from_secs(30),
        async || {
            let toy = get(&env, "w").await;
            let ready = condition(&toy, READY)?.status == "True";
            (ready && toy.status.as_ref()?.value == Some(13)).then_some(toy)
        },
    )
    .await;
    assert_eq!(toy.status.unwrap().observed_generation, Some(2));
    ctl.stop().await;
}

// The old cache swapped in the relisted store at `InitDone` without announcing what the list no
// longer had: an object deleted while no watch ran vanished from the store silently, and no
// controller (here: the reconciler's `forget`) ever heard of the deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_deleted_during_a_watch_gap_are_reported_deleted_after_the_relist() {
    let env = env().await;
    let ctl = started_gated(&env).await;
    let gate = ctl.gate.as_ref().unwrap();
    create(&env, toy("stays").value(1).build()).await;
    create(&env, toy("goes").value(2).build()).await;
    wait_condition(&env, "stays", READY, "True", None).await;
    wait_condition(&env, "goes", READY, "True", None).await;

    // A watch gap: the deletion happens while no watch runs.
    gate.freeze().await;
    toys(&env)
        .delete("goes", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&env, "goes").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ctl.world.forgotten("goes"), 0, "the cache saw the deletion");
    let lists = gate.lists();

    // The watch resumes from a version long gone: 410, and the watcher lists again.
    gate.set(GateMode::Expire);
    poll("goes forgotten", Duration::from_secs(30), async || {
        (ctl.world.forgotten("goes") == 1).then_some(())
    })
    .await;
    assert!(gate.lists() > lists, "the cache listed again");
    assert_eq!(ctl.world.forgotten("stays"), 0);
    assert!(
        ctl.toys
            .get(&kube::runtime::reflector::ObjectRef::new("goes").within(&env.namespace))
            .is_none()
    );
    // The survivor is still served.
    let n = ctl.world.starts("stays").len();
    poke(&env, "stays", "after-relist").await;
    poll(
        "stays reconciled after the relist",
        Duration::from_secs(10),
        async || (ctl.world.starts("stays").len() > n).then_some(()),
    )
    .await;
    ctl.stop().await;
}

// The old engine diffed the computed status against the cached object's: a pass that computed
// the status the cache still showed (A) wrote nothing, though the API server already held the
// previous pass's B — and since a status-only change triggers no pass, B stayed for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_equal_to_a_stale_cache_is_still_written() {
    let env = env().await;
    let ctl = started_gated(&env).await;
    let gate = ctl.gate.as_ref().unwrap();
    let name = "stale";
    let key = kube::runtime::reflector::ObjectRef::new(name).within(&env.namespace);
    create(&env, toy(name).value(1).build()).await;
    wait_condition(&env, name, READY, "True", None).await;
    let cached = poll(
        "the cache holds status A",
        Duration::from_secs(10),
        async || {
            ctl.toys
                .get(&key)
                .filter(|t| t.status.as_ref().and_then(|s| s.value) == Some(1))
        },
    )
    .await;

    gate.freeze().await;
    let passes = ctl.reconciles();
    // Pass 1: the backend reports 2, the engine writes B.
    ctl.world.report(name, 2);
    ctl.trigger(name);
    poll("B on the server", Duration::from_secs(10), async || {
        (get(&env, name).await.status?.value == Some(2)).then_some(())
    })
    .await;
    poll("pass 1 done", Duration::from_secs(10), async || {
        (ctl.reconciles() > passes).then_some(())
    })
    .await;
    // Pass 2: the backend reports 1 again: the computed status is A, what the cache shows.
    ctl.world.report(name, 1);
    ctl.trigger(name);
    poll("pass 2 done", Duration::from_secs(10), async || {
        (ctl.reconciles() > passes + 1.0).then_some(())
    })
    .await;
    assert_eq!(
        ctl.toys.get(&key).unwrap().resource_version(),
        cached.resource_version(),
        "the cache was stale during both passes"
    );
    assert_eq!(
        get(&env, name).await.status.unwrap().value,
        Some(1),
        "the server holds what the last pass computed"
    );
    gate.set(GateMode::Open);
    ctl.stop().await;
}

// The old engine put kube's `Display` of the error into conditions and Events: for an API
// error that is the message followed by a `Debug` dump of the whole `Status` (`Status { status:
// Some(Failure), … }`), which repeats the admission policy's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_api_errors_read_plainly_in_conditions_and_events() {
    let env = env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .owns_config_maps()
        .start(&env)
        .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let message = format!(
        "config maps are frozen in {} by a test policy",
        env.namespace
    );
    let policy = admission::deny(
        &env.client,
        &env.namespace,
        ("", "configmaps"),
        &["CREATE"],
        "false",
        &message,
    )
    .await;
    wait_enforced(&message, async || probe_create(&config_maps).await).await;

    create(&env, toy("plain").value(1).child().build()).await;
    let toy = wait_condition(
        &env,
        "plain",
        ToyStep::ConfigMapReady.as_str(),
        "False",
        None,
    )
    .await;
    let step = condition(&toy, ToyStep::ConfigMapReady.as_str()).unwrap();
    assert_plain(&step.message, &message);
    assert!(step.message.contains("422"), "{}", step.message);
    assert_plain(&condition(&toy, READY).unwrap().message, &message);

    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let warning = poll("the Warning Event", Duration::from_secs(10), async || {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.type_.as_deref() == Some("Warning")
                    && e.reason.as_deref() == Some(step.reason.as_str())
            })
    })
    .await;
    assert_plain(&warning.note.unwrap_or_default(), &message);

    policy.lift(async || probe_create(&config_maps).await).await;
    wait_condition(&env, "plain", READY, "True", None).await;
    ctl.stop().await;
}

// The old engine had neither histogram: its metrics stopped at `workqueue_depth`,
// `workqueue_adds_total` and `workqueue_retries_total`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workqueue_durations_are_histograms_with_controller_runtime_buckets() {
    let env = env().await;
    let ctl = started(&env).await;
    create_ready(&env, "q", 1).await;
    // controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s.
    let expected: Vec<f64> = (0..12).map(|i| 1e-8 * 10f64.powi(i)).collect();
    for metric in [
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
    ] {
        let all = poll(
            &format!("{metric} observed"),
            Duration::from_secs(10),
            async || {
                let all = samples(&ctl.metrics_text());
                let count = all
                    .iter()
                    .find(|s| {
                        s.name == format!("{metric}_count") && s.label("name") == Some("toy")
                    })?
                    .value;
                (count >= 1.0).then_some(all)
            },
        )
        .await;
        let bounds: Vec<f64> = all
            .iter()
            .filter(|s| s.name == format!("{metric}_bucket") && s.label("name") == Some("toy"))
            .map(|s| s.label("le").unwrap().parse::<f64>().unwrap())
            .collect();
        assert_eq!(bounds.len(), 13, "{metric}: {bounds:?}");
        for (bound, want) in bounds.iter().zip(&expected) {
            assert!((bound / want - 1.0).abs() < 1e-9, "{metric}: {bounds:?}");
        }
        assert!(bounds[12].is_infinite(), "{metric}: {bounds:?}");
    }
    ctl.stop().await;
}
