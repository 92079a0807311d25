//! A test-only custom resource (`Toy`) and a toy controller built on the engine, with an
//! in-memory "backend" the tests can break and observe. Not shipped: it lives under `tests/`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use reconcile_engine::{
    ClientLimits, EngineConfig, Halt, Halted, Identity, Manager, ManagerConfig, Metrics, NoProbes,
    Outcome, Reconciler, Registration, SharedCache, StepError, StepName, StepRunner,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::support::TestEnv;

#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "enginetest.ontap.storage.dev",
    version = "v1",
    kind = "Toy",
    plural = "toys",
    namespaced,
    status = "ToyStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct ToySpec {
    /// Negative values are "invalid spec".
    pub value: i64,
    /// Whether the toy owns a ConfigMap holding its value.
    #[serde(default)]
    pub child: bool,
    /// How long the backend step takes, to make reconciles overlap.
    #[serde(default)]
    pub delay_ms: u64,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToyStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<Halted>,
}

reconcile_engine::conditioned_status!(ToyStatus);

reconcile_engine::steps! {
    /// The toy controller's steps; the tests name conditions through these.
    pub enum ToyStep { SpecValid, BackendReady, ConfigMapReady }
}

/// The outside world of the toy controller, shared with the test.
#[derive(Default)]
pub struct World {
    /// Objects whose backend is unreachable.
    pub down: Mutex<HashSet<String>>,
    /// The backend's state: value per object.
    pub backend: Mutex<HashMap<String, i64>>,
    /// Reconcile starts per object.
    pub starts: Mutex<HashMap<String, Vec<Instant>>>,
    /// Steps run, in order, per object.
    pub steps: Mutex<HashMap<String, Vec<&'static str>>>,
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
}

impl World {
    pub fn set_down(&self, name: &str, down: bool) {
        let mut set = self.down.lock().unwrap();
        if down {
            set.insert(name.to_owned());
        } else {
            set.remove(name);
        }
    }

    pub fn starts(&self, name: &str) -> Vec<Instant> {
        self.starts
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    pub fn steps(&self, name: &str) -> Vec<&'static str> {
        self.steps
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    fn log_step(&self, name: &str, step: &'static str) {
        self.steps
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .push(step);
    }
}

struct InFlight<'a>(&'a World);

impl<'a> InFlight<'a> {
    fn enter(world: &'a World) -> Self {
        let now = world.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        world.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(world)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct ToyReconciler {
    pub client: Client,
    pub world: Arc<World>,
}

impl Reconciler for ToyReconciler {
    type Resource = Toy;
    type Step = ToyStep;

    async fn reconcile(
        &self,
        toy: &Toy,
        status: &mut ToyStatus,
        steps: &mut StepRunner<ToyStep>,
    ) -> Result<(), Halt> {
        let name = toy.name_any();
        let world = &*self.world;
        world
            .starts
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_default()
            .push(Instant::now());
        let _in_flight = InFlight::enter(world);

        steps
            .step(ToyStep::SpecValid, || async {
                world.log_step(&name, ToyStep::SpecValid.as_str());
                if toy.spec.value < 0 {
                    return Err(StepError::invalid(
                        "NegativeValue",
                        "spec.value must not be negative",
                    ));
                }
                Ok(Outcome::unchanged())
            })
            .await?;

        steps
            .step(ToyStep::BackendReady, || async {
                world.log_step(&name, ToyStep::BackendReady.as_str());
                if toy.spec.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(toy.spec.delay_ms)).await;
                }
                if world.down.lock().unwrap().contains(&name) {
                    return Err(StepError::transient_msg(
                        "BackendDown",
                        "backend unreachable",
                    ));
                }
                let mut backend = world.backend.lock().unwrap();
                if backend.get(&name) == Some(&toy.spec.value) {
                    return Ok(Outcome::unchanged());
                }
                backend.insert(name.clone(), toy.spec.value);
                Ok(Outcome::changed())
            })
            .await?;

        if toy.spec.child {
            let api: Api<ConfigMap> =
                Api::namespaced(self.client.clone(), &toy.namespace().unwrap_or_default());
            let cm_name = format!("{name}-value");
            let data = BTreeMap::from([("value".to_owned(), toy.spec.value.to_string())]);
            steps
                .step(ToyStep::ConfigMapReady, || async {
                    world.log_step(&name, ToyStep::ConfigMapReady.as_str());
                    // Look at the child every time: it may have been deleted behind our back.
                    let current = api.get_opt(&cm_name).await?;
                    if current.as_ref().and_then(|c| c.data.as_ref()) == Some(&data) {
                        return Ok(Outcome::unchanged());
                    }
                    let mut cm = current.unwrap_or_default();
                    cm.metadata = ObjectMeta {
                        name: Some(cm_name.clone()),
                        owner_references: toy.controller_owner_ref(&()).map(|o| vec![o]),
                        ..cm.metadata
                    };
                    cm.data = Some(data.clone());
                    if cm.metadata.resource_version.is_some() {
                        api.replace(&cm_name, &PostParams::default(), &cm).await?;
                    } else {
                        api.create(&PostParams::default(), &cm).await?;
                    }
                    Ok(Outcome::changed())
                })
                .await?;
        }

        status.value = Some(toy.spec.value);
        Ok(())
    }
}

/// A running toy controller with its own metrics registry and rate-limited client.
pub struct Running {
    pub registry: Registry,
    pub metrics: Arc<Metrics>,
    /// The controller's own client (counted by `metrics`).
    pub client: Client,
    pub world: Arc<World>,
    pub toys: SharedCache<Toy>,
    pub config_maps: Option<SharedCache<ConfigMap>>,
    shutdown: Option<oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops the controller and waits for running reconciles.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(Duration::from_secs(30), handle)
                .await
                .expect("controller stops within 30 s")
                .expect("controller task did not panic");
        }
    }

    pub fn metrics_text(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).unwrap();
        out
    }

    /// Sum of the samples of `metric` whose labels include all of `labels`.
    pub fn metric(&self, metric: &str, labels: &[(&str, &str)]) -> f64 {
        metric_sum(&self.metrics_text(), metric, labels)
    }

    /// Write requests (POST, PUT, PATCH, DELETE) the controller's client sent.
    pub fn writes(&self) -> f64 {
        ["POST", "PUT", "PATCH", "DELETE"]
            .iter()
            .map(|m| self.metric("rest_client_requests_total", &[("method", m)]))
            .sum()
    }

    pub fn reconciles(&self) -> f64 {
        self.metric(
            "controller_runtime_reconcile_total",
            &[("controller", "toy")],
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(handle) = &self.handle {
            handle.abort();
        }
    }
}

pub fn metric_sum(text: &str, metric: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

pub async fn install_toy_crd(env: &TestEnv) {
    crate::support::install_crd(&env.client, Toy::crd()).await;
}

/// Logs to the test output when `RUST_LOG` is set; silent otherwise.
pub fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Starts a toy controller watching only `env.namespace`.
pub async fn start(
    env: &TestEnv,
    config: EngineConfig,
    limits: ClientLimits,
    owns: bool,
) -> Running {
    init_tracing();
    install_toy_crd(env).await;
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry, "toy");
    let kube_config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&env.kubeconfig).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = reconcile_engine::build_client(kube_config, limits, metrics.clone()).unwrap();
    let world = Arc::new(World::default());
    let reconciler = ToyReconciler {
        client: client.clone(),
        world: world.clone(),
    };
    let mut manager = Manager::new(
        client.clone(),
        ManagerConfig {
            namespace: Some(env.namespace.clone()),
            engine: config,
            identity: Identity::new("enginetest.ontap.storage.dev"),
            stuck_reconcile_after: Duration::from_secs(600),
        },
        metrics.clone(),
        Arc::new(NoProbes),
    );
    let mut registration = Registration::new("toy", reconciler).crd(Toy::crd());
    if owns {
        registration =
            registration.owns::<ConfigMap>(watcher::Config::default(), &["create", "update"]);
    }
    manager.register(registration).unwrap();
    let toys = manager.cache::<Toy>().unwrap();
    let config_maps = owns.then(|| manager.cache::<ConfigMap>().unwrap());
    let (tx, rx) = oneshot::channel();
    let handle = tokio::spawn(manager.run(async move {
        let _ = rx.await;
    }));
    Running {
        registry,
        metrics,
        client,
        world,
        toys,
        config_maps,
        shutdown: Some(tx),
        handle: Some(handle),
    }
}

pub fn toy(name: &str, spec: ToySpec) -> Toy {
    Toy::new(name, spec)
}

pub async fn create(env: &TestEnv, name: &str, spec: ToySpec) -> Toy {
    Api::<Toy>::namespaced(env.client.clone(), &env.namespace)
        .create(&PostParams::default(), &toy(name, spec))
        .await
        .unwrap()
}

pub async fn get(env: &TestEnv, name: &str) -> Toy {
    Api::<Toy>::namespaced(env.client.clone(), &env.namespace)
        .get(name)
        .await
        .unwrap()
}

pub fn condition<'a>(toy: &'a Toy, type_: &str) -> Option<&'a Condition> {
    toy.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// Polls `check` every 50 ms until it returns `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until condition `type_` of toy `name` has `status` (and, if given, `reason`).
pub async fn wait_condition(
    env: &TestEnv,
    name: &str,
    type_: &str,
    status: &str,
    reason: Option<&str>,
) -> Toy {
    eventually(
        Duration::from_secs(30),
        &format!("{name}: {type_}={status}"),
        || async {
            let toy = get(env, name).await;
            let c = condition(&toy, type_)?;
            (c.status == status && reason.is_none_or(|r| c.reason == r)).then_some(toy)
        },
    )
    .await
}
