//! The engine's basics: steps, conditions, backoff, an invalid spec, no-op passes, the client
//! rate limit, bounded concurrency, lean caches and the owner index.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, CustomResourceExt, ResourceExt};
use reconcile_engine::{ClientLimits, EngineConfig, StepName};
use serde_json::json;

use super::{fast_backoff, poke, unlimited};
use crate::toy::toy;
use crate::toy::{
    SLOW_PREFIX, Toy, ToyController, ToyStep, condition, create, get, toys, wait_condition,
};
use test_support::poll;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_run_in_order_and_stop_at_the_first_failure() {
    let env = test_support::env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .start(&env)
        .await;
    ctl.world.set_down("a", true);
    create(&env, toy("a").value(1).child().build()).await;

    let toy = wait_condition(
        &env,
        "a",
        ToyStep::BackendReady.as_str(),
        "False",
        Some("BackendDown"),
    )
    .await;
    assert_eq!(
        condition(&toy, ToyStep::SpecValid.as_str()).unwrap().status,
        "True"
    );
    assert!(
        condition(&toy, ToyStep::ConfigMapReady.as_str()).is_none(),
        "the step after the failure never ran"
    );
    let ready = condition(&toy, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "BackendDown")
    );
    assert_eq!(ready.message, "step BackendReady: backend unreachable");
    let steps = ctl.world.steps("a");
    assert_eq!(
        &steps[..2],
        [ToyStep::SpecValid.as_str(), ToyStep::BackendReady.as_str()]
    );
    assert!(!steps.contains(&ToyStep::ConfigMapReady.as_str()));
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    assert!(cms.get_opt("a-value").await.unwrap().is_none());

    poll("a few retries", Duration::from_secs(10), async || {
        (ctl.world.starts("a").len() >= 4).then_some(())
    })
    .await;
    ctl.world.set_down("a", false);
    let toy = wait_condition(&env, "a", "Ready", "True", None).await;
    for step in [
        ToyStep::SpecValid.as_str(),
        ToyStep::BackendReady.as_str(),
        ToyStep::ConfigMapReady.as_str(),
    ] {
        assert_eq!(condition(&toy, step).unwrap().status, "True", "{step}");
    }
    let types: Vec<_> = toy
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "Ready",
            ToyStep::SpecValid.as_str(),
            ToyStep::BackendReady.as_str(),
            ToyStep::ConfigMapReady.as_str()
        ]
    );
    assert_eq!(toy.status.as_ref().unwrap().value, Some(1));
    assert!(cms.get_opt("a-value").await.unwrap().is_some());

    // One Warning for the failure however many retries it took, one Normal on recovery.
    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let list = poll("recovery Event", Duration::from_secs(10), async || {
        let list = events.list(&ListParams::default()).await.unwrap().items;
        list.iter()
            .any(|e| e.reason.as_deref() == Some("Recovered"))
            .then_some(list)
    })
    .await;
    let warnings: Vec<_> = list
        .iter()
        .filter(|e| e.reason.as_deref() == Some("BackendDown"))
        .collect();
    assert_eq!(warnings.len(), 1, "{list:?}");
    assert_eq!(warnings[0].type_.as_deref(), Some("Warning"));
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_step_backs_off_exponentially_and_resets_after_success() {
    let env = test_support::env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .start(&env)
        .await;
    ctl.world.set_down("b", true);
    create(&env, toy("b").value(1).build()).await;

    let starts = poll("6 attempts", Duration::from_secs(30), async || {
        let s = ctl.world.starts("b");
        (s.len() >= 6).then_some(s)
    })
    .await;
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    for (i, gap) in gaps.iter().take(5).enumerate() {
        let expected = Duration::from_millis(200) * 2u32.pow(i as u32);
        assert!(
            *gap >= expected.mul_f64(0.95) && *gap < expected + Duration::from_millis(700),
            "retry {i}: waited {gap:?}, expected about {expected:?} (all gaps {gaps:?})"
        );
    }
    assert!(ctl.metric("workqueue_retries_total", &[("name", "toy")]) >= 5.0);

    // Success resets the failure count ...
    ctl.world.set_down("b", false);
    wait_condition(&env, "b", "Ready", "True", None).await;
    // ... so the next failure (triggered by a spec change) retries after the base delay again,
    // not after 6.4 s.
    ctl.world.set_down("b", true);
    let before = ctl.world.starts("b").len();
    toys(&env)
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 2}})),
        )
        .await
        .unwrap();
    let starts = poll("two more attempts", Duration::from_secs(10), async || {
        let s = ctl.world.starts("b");
        (s.len() >= before + 2).then_some(s)
    })
    .await;
    let gap = starts[before + 1] - starts[before];
    assert!(
        gap >= Duration::from_millis(190) && gap < Duration::from_millis(900),
        "first retry after a reset waited {gap:?}"
    );
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_spec_is_surfaced_and_does_not_loop() {
    let env = test_support::env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .start(&env)
        .await;
    create(&env, toy("c").value(-1).build()).await;

    let toy = wait_condition(
        &env,
        "c",
        ToyStep::SpecValid.as_str(),
        "False",
        Some("NegativeValue"),
    )
    .await;
    let ready = condition(&toy, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NegativeValue")
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        ctl.world.starts("c").len(),
        1,
        "no retry of an invalid spec"
    );
    assert_eq!(
        ctl.metric(
            "toy_step_errors_total",
            &[
                ("step", ToyStep::SpecValid.as_str()),
                ("category", "invalid")
            ]
        ),
        1.0
    );

    // A fix of the spec is picked up at once.
    toys(&env)
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 3}})),
        )
        .await
        .unwrap();
    let toy = wait_condition(&env, "c", "Ready", "True", None).await;
    assert_eq!(toy.status.unwrap().observed_generation, Some(2));
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditions_follow_kubernetes_conventions() {
    let env = test_support::env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .start(&env)
        .await;
    create(&env, toy("d").value(1).build()).await;
    let first = wait_condition(&env, "d", "Ready", "True", None).await;
    let t_ready = condition(&first, "Ready")
        .unwrap()
        .last_transition_time
        .clone();
    for c in &first.status.as_ref().unwrap().conditions {
        assert_eq!(c.observed_generation, Some(1), "{c:?}");
    }
    assert_eq!(first.status.as_ref().unwrap().observed_generation, Some(1));

    // lastTransitionTime has second resolution; make a change visible.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // A reconcile that finds the same world changes nothing, not even the times.
    let n = ctl.world.starts("d").len();
    poke(&env, "d", "1").await;
    poll(
        "a reconcile after the poke",
        Duration::from_secs(10),
        async || (ctl.world.starts("d").len() > n).then_some(()),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let same = get(&env, "d").await;
    assert_eq!(same.status, first.status);

    // A failure moves Ready and BackendReady, and only them.
    ctl.world.set_down("d", true);
    poke(&env, "d", "2").await;
    let failed = wait_condition(&env, "d", "Ready", "False", Some("BackendDown")).await;
    assert_ne!(
        condition(&failed, "Ready").unwrap().last_transition_time,
        t_ready
    );
    assert_ne!(
        condition(&failed, ToyStep::BackendReady.as_str())
            .unwrap()
            .last_transition_time,
        condition(&first, ToyStep::BackendReady.as_str())
            .unwrap()
            .last_transition_time
    );
    assert_eq!(
        condition(&failed, ToyStep::SpecValid.as_str())
            .unwrap()
            .last_transition_time,
        condition(&first, ToyStep::SpecValid.as_str())
            .unwrap()
            .last_transition_time,
        "status unchanged, time unchanged"
    );

    // A spec change: observedGeneration follows, times of unchanged statuses stay.
    ctl.world.set_down("d", false);
    toys(&env)
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 5}})),
        )
        .await
        .unwrap();
    let updated = poll(
        "generation 2 observed",
        Duration::from_secs(10),
        async || {
            let t = get(&env, "d").await;
            let ready = condition(&t, "Ready")?;
            (ready.status == "True" && ready.observed_generation == Some(2)).then_some(t)
        },
    )
    .await;
    assert_eq!(
        updated.status.as_ref().unwrap().observed_generation,
        Some(2)
    );
    assert_eq!(updated.status.as_ref().unwrap().value, Some(5));
    assert_eq!(
        condition(&updated, ToyStep::SpecValid.as_str())
            .unwrap()
            .last_transition_time,
        condition(&first, ToyStep::SpecValid.as_str())
            .unwrap()
            .last_transition_time
    );
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noop_reconcile_makes_zero_write_requests() {
    let env = test_support::env().await;
    let config = EngineConfig {
        sync_period: Duration::from_millis(300),
        sync_jitter: 0.0,
        ..fast_backoff()
    };
    let ctl = ToyController::new(config)
        .limits(unlimited())
        .start(&env)
        .await;
    create(&env, toy("e").value(1).child().build()).await;
    wait_condition(&env, "e", "Ready", "True", None).await;
    // A pass is counted when it ends. One object's passes never overlap, so once a pass has
    // ended after Ready became visible, the pass that wrote it has ended too, and its writes are
    // counted.
    let at_ready = ctl.reconciles();
    poll(
        "a pass ended after Ready",
        Duration::from_secs(15),
        async || (ctl.reconciles() > at_ready).then_some(()),
    )
    .await;

    let writes = ctl.writes();
    let reads = ctl.metric("rest_client_requests_total", &[("method", "GET")]);
    let reconciles = ctl.reconciles();
    assert!(
        writes >= 2.0,
        "the converging reconcile wrote (child + status): {writes}"
    );

    // The periodic re-verification runs, observes (GETs the child) and writes nothing. One pass
    // may have sent its GET before the counters were read and end after: of six passes counted
    // from here, at least five sent their GET after.
    poll("6 more reconciles", Duration::from_secs(15), async || {
        (ctl.reconciles() >= reconciles + 6.0).then_some(())
    })
    .await;
    let gets = ctl.metric("rest_client_requests_total", &[("method", "GET")]);
    assert!(gets >= reads + 5.0, "6 passes sent {} GETs", gets - reads);
    assert_eq!(ctl.writes(), writes, "no-op reconciles wrote something");
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_rate_limit_holds_the_configured_qps() {
    let env = test_support::env().await;
    let limits = ClientLimits {
        qps: 20.0,
        burst: 5,
        ..ClientLimits::default()
    };
    let ctl = ToyController::new(EngineConfig::default())
        .limits(limits)
        .start(&env)
        .await;
    // Let the controller's own start-up requests (list + watch) pass first.
    tokio::time::timeout(Duration::from_secs(30), ctl.toys.wait_until_ready())
        .await
        .expect("cache ready");
    tokio::time::sleep(Duration::from_millis(500)).await;

    let api: Api<Namespace> = Api::all(ctl.client.clone());
    let start = Instant::now();
    futures::stream::iter(0..65)
        .map(|_| {
            let api = api.clone();
            let ns = env.namespace.clone();
            async move { api.get(&ns).await }
        })
        .buffer_unordered(65)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    let elapsed = start.elapsed();
    // 5 from the burst, 60 more at 20/s: at least 3 s.
    assert!(
        elapsed >= Duration::from_millis(2900),
        "65 requests took only {elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "65 requests took {elapsed:?}"
    );
    let waited = ctl.metric(
        "rest_client_rate_limiter_duration_seconds_sum",
        &[("verb", "GET")],
    );
    assert!(waited > 30.0, "queued requests waited in total {waited} s");
    assert!(
        ctl.metric(
            "rest_client_rate_limiter_duration_seconds_count",
            &[("verb", "GET")]
        ) >= 65.0
    );
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_objects_is_processed_with_bounded_concurrency() {
    let env = test_support::env().await;
    let config = EngineConfig {
        max_concurrent_reconciles: 10,
        reconcile_rate: 200.0,
        reconcile_burst: 100,
        ..EngineConfig::default()
    };
    let ctl = ToyController::new(config)
        .limits(unlimited())
        .start(&env)
        .await;
    let started = Instant::now();
    futures::stream::iter(0..1000)
        .map(|i| {
            let env = &env;
            async move { create(env, toy(&format!("t{i}")).value(i).delay_ms(20).build()).await }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;

    poll(
        "1000 successful reconciles",
        Duration::from_secs(240),
        async || {
            let ok = ctl.metric(
                "controller_runtime_reconcile_total",
                &[("result", "success")],
            );
            (ok >= 1000.0).then_some(())
        },
    )
    .await;
    let elapsed = started.elapsed();
    let max = ctl
        .world
        .max_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(max <= 10, "{max} reconciles ran at once");
    assert!(max >= 5, "the workers were used in parallel: {max}");
    // 100 starts from the bucket, 900 more at 200/s.
    assert!(
        elapsed >= Duration::from_millis(4400),
        "took only {elapsed:?}"
    );
    assert_eq!(
        ctl.metric(
            "controller_runtime_max_concurrent_reconciles",
            &[("controller", "toy")]
        ),
        10.0
    );
    assert!(ctl.metric("workqueue_adds_total", &[("name", "toy")]) >= 1000.0);
    assert_eq!(ctl.metric("workqueue_depth", &[("name", "toy")]), 0.0);

    let list = toys(&env).list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1000);
    let not_ready: Vec<_> = list
        .items
        .iter()
        .filter(|t| condition(t, "Ready").is_none_or(|c| c.status != "True"))
        .map(|t| t.name_any())
        .collect();
    assert!(not_ready.is_empty(), "not ready: {not_ready:?}");
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_present_at_the_start_are_swept_in_within_the_burst_once_each() {
    let env = test_support::env().await;
    // Present before the controller starts, as after a restart.
    test_support::install_crd(&env.client, Toy::crd()).await;
    let names: Vec<String> = (0..300).map(|i| format!("s{i}")).collect();
    futures::stream::iter(&names)
        .map(|name| {
            let env = &env;
            async move { create(env, toy(name).build()).await }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    let config = EngineConfig {
        max_concurrent_reconciles: 4,
        reconcile_rate: 300.0,
        reconcile_burst: 20,
        ..EngineConfig::default()
    };
    let ctl = ToyController::new(config)
        .limits(unlimited())
        .start(&env)
        .await;
    let mut deepest = 0.0_f64;
    let mut unswept_seen = 0.0_f64;
    poll(
        "300 successful reconciles",
        Duration::from_secs(120),
        async || {
            deepest = deepest.max(ctl.metric("workqueue_depth", &[("name", "toy")]));
            unswept_seen =
                unswept_seen.max(ctl.metric("toy_workqueue_unswept", &[("name", "toy")]));
            let ok = ctl.metric(
                "controller_runtime_reconcile_total",
                &[("result", "success")],
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
            (ok >= 300.0).then_some(())
        },
    )
    .await;
    assert!(
        deepest <= 20.0,
        "the queue held {deepest} objects, beyond the burst of 20"
    );
    assert!(
        unswept_seen > 0.0,
        "the sweep was never seen: the metric does not move"
    );
    assert_eq!(ctl.metric("toy_workqueue_unswept", &[("name", "toy")]), 0.0);
    let twice: Vec<&String> = names
        .iter()
        .filter(|n| ctl.world.starts(n).len() != 1)
        .collect();
    assert!(twice.is_empty(), "not passed exactly once: {twice:?}");
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_hold_no_managed_fields_or_last_applied_configuration() {
    let env = test_support::env().await;
    let ctl = ToyController::new(EngineConfig::default())
        .limits(unlimited())
        .owns_config_maps()
        .start(&env)
        .await;
    let manifest = json!({
        "apiVersion": "enginetest.ontap.storage.dev/v1",
        "kind": "Toy",
        "metadata": {
            "name": "f",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"big\":\"blob\"}",
                "keep": "me"
            }
        },
        "spec": { "value": 1, "child": true }
    });
    toys(&env)
        .patch("f", &PatchParams::apply("tests"), &Patch::Apply(&manifest))
        .await
        .unwrap();
    let server = wait_condition(&env, "f", "Ready", "True", None).await;
    assert!(
        server.metadata.managed_fields.is_some(),
        "the server object has managedFields"
    );
    assert!(
        server
            .annotations()
            .contains_key("kubectl.kubernetes.io/last-applied-configuration")
    );

    let cached = poll(
        "cached toy with status",
        Duration::from_secs(10),
        async || {
            ctl.toys
                .store()
                .state()
                .into_iter()
                .find(|t| t.status.is_some())
        },
    )
    .await;
    assert!(cached.metadata.managed_fields.is_none());
    assert_eq!(cached.annotations().len(), 1, "{:?}", cached.annotations());
    assert_eq!(cached.annotations()["keep"], "me");
    let cms = ctl.config_maps.as_ref().unwrap();
    cms.wait_until_ready().await;
    for cm in cms.store().state() {
        assert!(cm.metadata.managed_fields.is_none(), "{}", cm.name_any());
    }
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_child_is_recreated_and_found_through_the_owner_index() {
    let env = test_support::env().await;
    let ctl = ToyController::new(EngineConfig::default())
        .limits(unlimited())
        .owns_config_maps()
        .start(&env)
        .await;
    let toy = create(&env, toy("g").value(7).child().build()).await;
    let uid = toy.uid().unwrap();
    wait_condition(&env, "g", "Ready", "True", None).await;
    let cms_cache = ctl.config_maps.as_ref().unwrap();
    let children = poll(
        "child in the owner index",
        Duration::from_secs(10),
        async || {
            let c = cms_cache.children_of(&uid);
            (!c.is_empty()).then_some(c)
        },
    )
    .await;
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].name_any(), "g-value");

    // Deleted behind the controller's back: the child's watch event reaches the owner, whose
    // reconcile looks at the world instead of trusting its earlier success.
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let old_uid = cms.get("g-value").await.unwrap().uid();
    cms.delete("g-value", &DeleteParams::default())
        .await
        .unwrap();
    poll("ConfigMap recreated", Duration::from_secs(15), async || {
        let cm = cms.get_opt("g-value").await.unwrap()?;
        (cm.uid() != old_uid).then_some(())
    })
    .await;
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_backend_holds_no_more_workers_than_its_passes_at_once() {
    let env = test_support::env().await;
    let config = EngineConfig {
        max_concurrent_reconciles: 4,
        ..fast_backoff()
    };
    let ctl = ToyController::new(config)
        .limits(unlimited())
        .slow_passes_at_once(2)
        .start(&env)
        .await;
    // Queued first: without the slots they would take all four workers, twice over.
    for i in 0..8 {
        create(
            &env,
            toy(&format!("{SLOW_PREFIX}{i}")).delay_ms(1500).build(),
        )
        .await;
    }
    for i in 0..4 {
        create(&env, toy(&format!("fast-{i}")).build()).await;
    }
    for i in 0..4 {
        wait_condition(&env, &format!("fast-{i}"), "Ready", "True", None).await;
    }
    let slow_ready = |list: &[Toy]| {
        list.iter()
            .filter(|t| t.name_any().starts_with(SLOW_PREFIX))
            .filter(|t| condition(t, "Ready").is_some_and(|c| c.status == "True"))
            .count()
    };
    let list = toys(&env).list(&ListParams::default()).await.unwrap();
    // Two at a time, 1.5 s each: the last of them is Ready six seconds in.
    assert!(
        slow_ready(&list.items) < 8,
        "the fast toys waited for every slow one"
    );
    let awaiting = || ctl.metric("toy_reconciles_awaiting_slot", &[("controller", "toy")]);
    assert!(awaiting() >= 1.0, "the slow toys' passes wait for a slot");
    poll(
        "every slow toy Ready",
        Duration::from_secs(60),
        async || {
            let list = toys(&env).list(&ListParams::default()).await.unwrap();
            (slow_ready(&list.items) == 8).then_some(())
        },
    )
    .await;
    let slow_at_once = ctl
        .world
        .max_slow_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        slow_at_once, 2,
        "at most two slow passes at once, and both slots used"
    );
    assert_eq!(awaiting(), 0.0);
    ctl.stop().await;
}
