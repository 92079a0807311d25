//! A Kyma's lifecycle: its children appear, move through the simulated installation and report
//! back; the list of components changes; children are deleted by hand; the Kyma is deleted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use kyma_inventory::api::{HelmComponentState, KymaState};
use kyma_inventory::kyma::FINALIZER;
use kyma_inventory::{STANDARD_COMPONENTS, standard_namespace};
use kyma_load::single_kyma_time;

use crate::support::kyma::{KymaWorld, StatusLog, TIME_SCALE, component_state};
use crate::support::{poll, tail, try_poll};

const ORDER: [HelmComponentState; 5] = [
    HelmComponentState::Pending,
    HelmComponentState::Started,
    HelmComponentState::Failing,
    HelmComponentState::Retrying,
    HelmComponentState::Success,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standard_kyma_reaches_success_with_exactly_its_children() {
    let world = KymaWorld::start(&[]).await;
    let kymas = StatusLog::start(world.kymas(), |k: &kyma_inventory::api::Kyma| {
        k.status.clone()
    });
    let states = StatusLog::start(world.components(), component_state);
    let components: Vec<(&str, Option<&str>)> = STANDARD_COMPONENTS
        .iter()
        .map(|c| (*c, standard_namespace(c)))
        .collect();
    let created_at = Instant::now();
    let kyma = world.create_kyma("kyma-sample-1", &components).await;
    let kyma = world.wait_success(&kyma.name_any()).await;
    let took = created_at.elapsed();

    // The lifecycle's durations are honoured: not even the whole Kyma is faster than its longest
    // component (less a little for clock granularity).
    let longest = single_kyma_time(TIME_SCALE);
    assert!(
        took + Duration::from_millis(200) >= longest,
        "success after {took:?}, but service-catalog-addons alone takes {longest:?}"
    );

    let uid = kyma.uid().unwrap();
    let children = world.children().await;
    let names: Vec<String> = children.iter().map(|c| c.name_any()).collect();
    let mut want: Vec<String> = STANDARD_COMPONENTS
        .iter()
        .map(|c| format!("kyma-sample-1-{c}"))
        .collect();
    want.sort();
    assert_eq!(names, want, "exactly one child per component");
    for child in &children {
        let component = child.spec.component_name.as_str();
        assert_eq!(
            child.name_any(),
            format!("kyma-sample-1-{component}"),
            "name of the child of {component}"
        );
        let owners: Vec<_> = child
            .owner_references()
            .iter()
            .filter(|o| o.controller == Some(true))
            .collect();
        assert_eq!(
            owners.len(),
            1,
            "{}: one controller owner",
            child.name_any()
        );
        assert_eq!(owners[0].uid, uid);
        assert_eq!(owners[0].kind, "Kyma");
        assert_eq!(owners[0].name, "kyma-sample-1");
        assert_eq!(
            child.spec.namespace.as_deref(),
            standard_namespace(component),
            "{}: the component's namespace is kept",
            child.name_any()
        );
        // Each write names who made it: the Kyma controller the child, the HelmComponent
        // controller its status (a write without a field manager would show as "unknown").
        let managers: Vec<(&str, Option<&str>)> = child
            .managed_fields()
            .iter()
            .map(|f| (f.manager.as_deref().unwrap_or(""), f.subresource.as_deref()))
            .collect();
        assert_eq!(
            managers,
            [("kyma", None), ("helmcomponent", Some("status"))],
            "{}: managedFields",
            child.name_any()
        );
        let status = child.status.as_ref().expect("a status");
        assert_eq!(status.status, Some(HelmComponentState::Success));
        assert!(
            status.last_reconciliation.is_some(),
            "{}: lastReconciliation set",
            child.name_any()
        );
        // Every state was written, in order (repeats are other changes to the same state).
        let seen = states.of(&child.name_any());
        let mut distinct = seen.clone();
        distinct.dedup();
        assert_eq!(
            distinct,
            ORDER.to_vec(),
            "{}: states as the watch delivered them",
            child.name_any()
        );
    }
    assert!(kyma.finalizers().iter().any(|f| f == FINALIZER));
    let status = kyma.status.as_ref().unwrap();
    assert!(status.waiting_for.is_empty(), "{status:?}");

    // Along the way the Kyma said what it waited for.
    let log = kymas.of("kyma-sample-1");
    let reconciling: Vec<_> = log
        .iter()
        .filter(|s| s.status == Some(KymaState::Reconciling))
        .collect();
    assert!(!reconciling.is_empty(), "never seen reconciling: {log:?}");
    assert!(
        reconciling.iter().all(|s| !s.waiting_for.is_empty()),
        "reconciling with an empty waitingFor: {log:?}"
    );
    let first = &reconciling[0].waiting_for;
    assert!(
        first.iter().any(|c| c == "service-catalog-addons"),
        "the slowest component is waited for at first: {first:?}"
    );
    for s in &reconciling {
        for c in &s.waiting_for {
            assert!(
                STANDARD_COMPONENTS.contains(&c.as_str()),
                "waitingFor names a component: {c}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kyma_writes_its_status_three_times_however_long_it_waits() {
    // A progress interval of 8 s / 20 = 0.4 s: a standard Kyma waits through eight of them,
    // its components reaching success at eighteen different times.
    let world = KymaWorld::start(&["--kyma-progress-interval=8s"]).await;
    let kymas = StatusLog::start(world.kymas(), |k: &kyma_inventory::api::Kyma| {
        k.status.clone()
    });
    let components: Vec<(&str, Option<&str>)> = STANDARD_COMPONENTS
        .iter()
        .map(|c| (*c, standard_namespace(c)))
        .collect();
    world.create_kyma("patient", &components).await;
    world.wait_success("patient").await;
    // The watch delivers the last write a moment after a GET sees it.
    let delivered = try_poll(Duration::from_secs(10), async || {
        kymas
            .of("patient")
            .last()
            .is_some_and(|s| s.status == Some(KymaState::Success))
            .then_some(())
    })
    .await;
    assert!(delivered.is_ok(), "the watch never delivered Success");

    // The engine writes a status only when it differs, so each change the watch delivered is
    // one write.
    let mut writes = kymas.of("patient");
    writes.dedup();
    let states: Vec<_> = writes
        .iter()
        .map(|s| (s.status, s.waiting_for.len()))
        .collect();
    assert!(writes.len() <= 3, "status writes: {states:?}");
    let first = writes.first().unwrap();
    assert_eq!(first.status, Some(KymaState::Reconciling), "{states:?}");
    assert_eq!(
        first.waiting_for.len(),
        STANDARD_COMPONENTS.len(),
        "{states:?}"
    );
    assert_eq!(writes.last().unwrap().status, Some(KymaState::Success));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_removed_from_the_list_loses_its_child() {
    let world = KymaWorld::start(&[]).await;
    world
        .create_kyma(
            "k",
            &[("ory", None), ("kiali", Some("mesh")), ("rafter", None)],
        )
        .await;
    world.wait_success("k").await;
    assert_eq!(world.children().await.len(), 3);

    let patch = serde_json::json!({"spec": {"components": [{"name": "ory"}, {"name": "rafter"}]}});
    world
        .kymas()
        .patch("k", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    world
        .wait_gone(&world.components(), "k-kiali", Duration::from_secs(30))
        .await;
    let names: Vec<String> = world
        .children()
        .await
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(names, ["k-ory", "k-rafter"]);
    let kyma = world.wait_success("k").await;
    assert!(kyma.status.unwrap().waiting_for.is_empty());

    // And a component added later gets its child, which the Kyma then waits for.
    let patch = serde_json::json!({"spec": {"components": [
        {"name": "ory"}, {"name": "rafter"}, {"name": "logging", "namespace": "logs"}
    ]}});
    world
        .kymas()
        .patch("k", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let child = poll("k-logging created", Duration::from_secs(30), async || {
        world.components().get_opt("k-logging").await.unwrap()
    })
    .await;
    assert_eq!(child.spec.namespace.as_deref(), Some("logs"));
    world.wait_component_success("k-logging").await;
    world.wait_success("k").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_deleted_by_hand_comes_back() {
    let world = KymaWorld::start(&[]).await;
    world
        .create_kyma("k", &[("ory", None), ("tracing", Some("obs"))])
        .await;
    world.wait_success("k").await;
    let before = world.components().get("k-tracing").await.unwrap();
    let kymas = StatusLog::start(world.kymas(), |k: &kyma_inventory::api::Kyma| {
        k.status.clone()
    });

    world
        .components()
        .delete("k-tracing", &DeleteParams::default())
        .await
        .unwrap();
    let after = poll("k-tracing recreated", Duration::from_secs(30), async || {
        let c = world.components().get_opt("k-tracing").await.unwrap()?;
        (c.uid() != before.uid()).then_some(c)
    })
    .await;
    assert_eq!(after.spec, before.spec, "recreated as the Kyma implies");
    assert_eq!(
        after.owner_references(),
        before.owner_references(),
        "owned again"
    );
    world.wait_component_success("k-tracing").await;
    world.wait_success("k").await;
    // Meanwhile the Kyma waited for it again.
    let log = kymas.of("k");
    assert!(
        log.iter()
            .any(|s| s.status == Some(KymaState::Reconciling) && s.waiting_for == ["tracing"]),
        "the Kyma never waited for the recreated child: {log:?}"
    );
    assert_eq!(world.children().await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_kyma_deletes_its_children() {
    let world = KymaWorld::start(&[]).await;
    let components: Vec<(&str, Option<&str>)> = STANDARD_COMPONENTS
        .iter()
        .take(6)
        .map(|c| (*c, standard_namespace(c)))
        .collect();
    world.create_kyma("doomed", &components).await;
    // A neighbour whose children must stay.
    world.create_kyma("kept", &[("ory", None)]).await;
    poll("6 + 1 children", Duration::from_secs(30), async || {
        (world.children().await.len() == 7).then_some(())
    })
    .await;

    world
        .kymas()
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    // No garbage collector runs in the test control plane: only the controller deletes them.
    world
        .wait_gone(&world.kymas(), "doomed", Duration::from_secs(30))
        .await;
    let left: Vec<String> = world
        .children()
        .await
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(
        left,
        ["kept-ory"],
        "the children of the deleted Kyma are gone"
    );
    world.wait_success("kept").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_of_the_same_name_that_the_kyma_does_not_own_is_left_alone() {
    let world = KymaWorld::start(&[]).await;
    // Someone else's HelmComponent holds the name the Kyma's child would get.
    let squatter = crate::support::kyma::helm_component("k-ory", "ory");
    world
        .components()
        .create(&Default::default(), &squatter)
        .await
        .unwrap();
    let squatter = world.components().get("k-ory").await.unwrap();
    world
        .create_kyma("k", &[("ory", None), ("rafter", None)])
        .await;
    // The other child is made; the Kyma keeps waiting for ory, which it does not own.
    let found = try_poll(Duration::from_secs(60), async || {
        let kyma = world.kymas().get("k").await.unwrap();
        let rafter = world.components().get_opt("k-rafter").await.unwrap();
        let done = rafter
            .as_ref()
            .is_some_and(|r| component_state(r) == Some(HelmComponentState::Success))
            && kyma
                .status
                .as_ref()
                .is_some_and(|s| s.waiting_for == ["ory"]);
        if done {
            Ok(kyma)
        } else {
            Err(format!(
                "k-rafter {:?}, Kyma status {:?}",
                rafter.and_then(|r| r.status),
                kyma.status
            ))
        }
    })
    .await;
    let kyma = found.unwrap_or_else(|why| {
        panic!(
            "rafter at success, ory waited for: {why}\n--- operator log ---\n{}",
            tail(&world.operator.logs(), 30)
        )
    });
    assert_eq!(kyma.status.unwrap().status, Some(KymaState::Reconciling));
    let still = world.components().get("k-ory").await.unwrap();
    assert_eq!(still.uid(), squatter.uid(), "not replaced");
    assert!(still.owner_references().is_empty(), "not adopted");

    // Deleting the Kyma leaves the object it never owned.
    world
        .kymas()
        .delete("k", &DeleteParams::default())
        .await
        .unwrap();
    world
        .wait_gone(&world.kymas(), "k", Duration::from_secs(30))
        .await;
    let left: BTreeMap<String, Option<String>> = world
        .children()
        .await
        .iter()
        .map(|c| (c.name_any(), c.uid()))
        .collect();
    assert_eq!(left, BTreeMap::from([("k-ory".to_owned(), squatter.uid())]));
}
