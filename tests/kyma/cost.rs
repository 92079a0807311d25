//! What passes that find nothing to do cost: no write at all — neither on the periodic resync
//! nor after a restart, when every object is looked at again (the experiment's "simulate the
//! time-based resync by restarting").

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::ListParams;
use kyma_inventory::component::CONTROLLER as COMPONENT_CONTROLLER;
use kyma_inventory::kyma::CONTROLLER as KYMA_CONTROLLER;

use crate::support::kyma::{KymaWorld, SUCCESS_WITHIN};
use crate::support::metrics::{kube_writes, metric_sum};
use crate::support::{tail, try_poll};

/// Every Kyma and HelmComponent of the namespace by name, with its resourceVersion.
async fn versions(world: &KymaWorld) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    for kyma in world.kymas().list(&ListParams::default()).await.unwrap() {
        all.insert(
            format!("kyma/{}", kyma.name_any()),
            kyma.resource_version().unwrap(),
        );
    }
    for c in world
        .components()
        .list(&ListParams::default())
        .await
        .unwrap()
    {
        all.insert(
            format!("helmcomponent/{}", c.name_any()),
            c.resource_version().unwrap(),
        );
    }
    all
}

fn passes(metrics: &str, controller: &str) -> f64 {
    metric_sum(
        metrics,
        "controller_runtime_reconcile_total",
        &[("controller", controller)],
    )
}

/// Waits until each controller has made at least `more` passes beyond `before`.
async fn wait_passes(world: &KymaWorld, before: &str, more: [(&str, f64); 2]) {
    let done = try_poll(Duration::from_secs(60), async || {
        let now = world.metrics().await;
        for (controller, n) in more {
            let made = passes(&now, controller) - passes(before, controller);
            if made < n {
                return Err(format!("{controller}: {made} of {n} passes"));
            }
        }
        Ok(())
    })
    .await;
    if let Err(why) = done {
        panic!(
            "{why}\n--- operator log ---\n{}",
            tail(&world.operator.logs(), 40)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_that_find_nothing_to_do_write_nothing() {
    // A resync every 2 s (plus up to 10 % jitter): several no-op passes per object in seconds.
    let mut world = KymaWorld::start(&["--sync-period=2s"]).await;
    world
        .create_kyma("a", &[("ory", None), ("kiali", Some("mesh"))])
        .await;
    world
        .create_kyma("b", &[("rafter", None), ("ory", None), ("logging", None)])
        .await;
    world.wait_success("a").await;
    world.wait_success("b").await;
    // The passes that the last status writes cause end before the baseline is taken.
    world.operator.quiesce(SUCCESS_WITHIN).await;

    let before = versions(&world).await;
    assert_eq!(before.len(), 2 + 5);
    let metrics = world.metrics().await;
    let writes = kube_writes(&metrics);
    // Three resyncs of every object.
    wait_passes(
        &world,
        &metrics,
        [
            (KYMA_CONTROLLER, 3.0 * 2.0),
            (COMPONENT_CONTROLLER, 3.0 * 5.0),
        ],
    )
    .await;
    let after_metrics = world.metrics().await;
    assert_eq!(
        kube_writes(&after_metrics) - writes,
        0.0,
        "writes during passes that had nothing to do\n--- operator log ---\n{}",
        tail(&world.operator.logs(), 40)
    );
    assert_eq!(
        versions(&world).await,
        before,
        "objects changed by no-op passes"
    );

    // A new process looks at everything once more: still nothing to write.
    world.restart_operator();
    let fresh = "";
    wait_passes(
        &world,
        fresh,
        [(KYMA_CONTROLLER, 2.0), (COMPONENT_CONTROLLER, 5.0)],
    )
    .await;
    let metrics = world.metrics().await;
    assert_eq!(
        kube_writes(&metrics),
        0.0,
        "writes after a restart with everything done\n--- operator log ---\n{}",
        tail(&world.operator.logs(), 40)
    );
    assert_eq!(
        versions(&world).await,
        before,
        "objects changed after a restart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kyma_is_woken_by_its_childs_success_not_by_each_state_before_it() {
    // The longest standard name: its states are 21 / 20 = 1.05 s apart, far more than a pass
    // takes, so a Kyma woken by every state could not fold them into fewer passes.
    let world = KymaWorld::start(&[]).await;
    let fresh = world.metrics().await;
    world
        .create_kyma("quiet", &[("application-connector", None)])
        .await;
    world.wait_success("quiet").await;
    // The Kyma's success write is its own: it wakes nothing, but every pass is counted once
    // they have all ended.
    world.operator.quiesce(SUCCESS_WITHIN).await;
    let kyma_passes =
        passes(&world.metrics().await, KYMA_CONTROLLER) - passes(&fresh, KYMA_CONTROLLER);
    // Its creation, the child's creation, the child's success. Woken by each of the child's
    // five states as well, it would make at least three more: `failing`, `retrying` and
    // `success` come a second apart.
    assert!(
        kyma_passes <= 3.0,
        "{kyma_passes} Kyma passes for one child\n--- operator log ---\n{}",
        tail(&world.operator.logs(), 40)
    );
}
