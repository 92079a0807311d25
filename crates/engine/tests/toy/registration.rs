//! Issue 10, "prove it": a controller added with one registration line gets its caches,
//! metrics, readiness and liveness checks and RBAC rules from the manager.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResourceExt;
use kube::runtime::watcher;
use prometheus_client::registry::Registry;
use reconcile_engine::{Check, Manager, Metrics, Probes, Registration};

use super::{fast_backoff, unlimited};
use crate::toy::toy;
use crate::toy::{
    Toy, ToyReconciler, World, create, engine_client, manager_config, wait_condition,
};
use test_support::metrics::metric_sum;
use test_support::{env, install_crd, poll};

/// Probes that keep every check, as the operator's health endpoints do.
#[derive(Default)]
struct RecordingProbes {
    readiness: Mutex<BTreeMap<String, Check>>,
    liveness: Mutex<BTreeMap<String, Check>>,
}

impl Probes for RecordingProbes {
    fn add_readiness(&self, name: String, check: Check) {
        self.readiness.lock().unwrap().insert(name, check);
    }
    fn add_liveness(&self, name: String, check: Check) {
        self.liveness.lock().unwrap().insert(name, check);
    }
}

fn run(checks: &Mutex<BTreeMap<String, Check>>, name: &str) -> Option<Result<(), String>> {
    checks.lock().unwrap().get(name).map(|check| check())
}

fn grants(
    rules: &[k8s_openapi::api::rbac::v1::PolicyRule],
    group: &str,
    resource: &str,
) -> Vec<String> {
    rules
        .iter()
        .filter(|r| r.api_groups.iter().flatten().any(|g| g == group))
        .filter(|r| r.resources.iter().flatten().any(|x| x == resource))
        .flat_map(|r| r.verbs.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_registration_line_brings_caches_metrics_readiness_and_rbac() {
    let env = env().await;
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry, "toy");
    let client = engine_client(&env, unlimited(), metrics.clone()).await;
    let probes = Arc::new(RecordingProbes::default());
    let mut manager = Manager::new(
        client.clone(),
        manager_config(&env, fast_backoff()),
        metrics,
        probes.clone(),
    );
    let world = Arc::new(World::default());
    let reconciler = ToyReconciler {
        client,
        world,
        slow_backend: None,
    };

    // The one line.
    manager
        .register(
            Registration::new("toy", reconciler)
                .crd(Toy::crd())
                .owns::<ConfigMap>(watcher::Config::default(), &["create", "update"]),
        )
        .unwrap();

    assert_eq!(manager.controller_names(), ["toy"]);
    // Readiness per cache, not ready before the caches listed; liveness per controller.
    for cache in ["cache/toys", "cache/configmaps"] {
        assert!(
            run(&probes.readiness, cache).is_some_and(|r| r.is_err()),
            "{cache} registered and not yet ready"
        );
    }
    assert_eq!(run(&probes.liveness, "reconcile-toy"), Some(Ok(())));

    // RBAC: the kind itself, its status, its Events, and what it owns.
    let rules = manager.rbac_rules();
    let group = "enginetest.ontap.storage.dev";
    let toys = grants(&rules, group, "toys");
    assert!(
        ["get", "list", "watch"]
            .iter()
            .all(|v| toys.contains(&(*v).to_owned())),
        "{rules:?}"
    );
    assert_eq!(grants(&rules, group, "toys/status"), ["patch"], "{rules:?}");
    let config_maps = grants(&rules, "", "configmaps");
    for verb in ["create", "get", "list", "update", "watch"] {
        assert!(config_maps.contains(&verb.to_owned()), "{verb}: {rules:?}");
    }
    assert!(grants(&rules, "events.k8s.io", "events").contains(&"create".to_owned()));

    // The CRD comes with the engine's columns.
    let crds = manager.crds();
    assert_eq!(crds.len(), 1);
    for crd in &crds {
        install_crd(&env.client, crd.clone()).await;
    }

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    poll("the caches ready", Duration::from_secs(30), async || {
        let toys = run(&probes.readiness, "cache/toys")?;
        let config_maps = run(&probes.readiness, "cache/configmaps")?;
        (toys.is_ok() && config_maps.is_ok()).then_some(())
    })
    .await;

    create(&env, toy("registered").value(1).child().build()).await;
    wait_condition(&env, "registered", "Ready", "True", None).await;
    let text = {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    };
    for (metric, label) in [
        ("controller_runtime_reconcile_total", ("controller", "toy")),
        ("workqueue_adds_total", ("name", "toy")),
        ("toy_step_duration_seconds_count", ("controller", "toy")),
    ] {
        assert!(
            metric_sum(&text, metric, &[label]) >= 1.0,
            "{metric}:\n{text}"
        );
    }
    assert_eq!(run(&probes.liveness, "reconcile-toy"), Some(Ok(())));
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .unwrap()
        .unwrap();
}
