//! A test-only custom resource (`Toy`) and a toy controller built on the engine's public API,
//! with an in-memory "backend" the tests can break and observe, and the fixture builder of a
//! Toy. Not shipped: it lives under the engine's `tests/`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use reconcile_engine::{
    ClientLimits, EngineConfig, Halt, Identity, Manager, ManagerConfig, Metrics, NoProbes, Outcome,
    Reconciler, Registration, RemoteSystem, SharedCache, StepError, StepFlow, StepName, StepRunner,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use test_support::TestEnv;
use test_support::metrics::metric_sum;

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

// The engine's three status fields (`conditions`, `observedGeneration`, `halted`) come from the
// macro, as a status struct declares them once.
reconcile_engine::engine_status! {
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub struct ToyStatus {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub value: Option<i64>,
    }
}

reconcile_engine::steps! {
    /// The toy controller's steps; the tests name conditions through these.
    pub enum ToyStep { SpecValid, BackendReady, ConfigMapReady, BackendReleased }
}

/// The finalizer of [`FinalizingToy`].
pub const TOY_FINALIZER: &str = "enginetest.ontap.storage.dev/backend";

/// The outside world of the toy controller, shared with the test.
#[derive(Default)]
pub struct World {
    /// Objects whose backend is unreachable.
    pub down: Mutex<HashSet<String>>,
    /// The message of the backend's failure, when not the default.
    pub down_message: Mutex<Option<String>>,
    /// Objects whose backend answers every change with a conflict.
    pub conflict: Mutex<HashSet<String>>,
    /// The backend's state: value per object.
    pub backend: Mutex<HashMap<String, i64>>,
    /// What the backend reports as the value (`status.value`), when not the spec's.
    pub reported: Mutex<HashMap<String, i64>>,
    /// Objects whose backend refuses to release them (cleanup fails).
    pub release_refused: Mutex<HashSet<String>>,
    /// Completed cleanups per object.
    pub cleanups: Mutex<HashMap<String, usize>>,
    /// Calls of the reconciler's `forget` per object.
    pub forgotten: Mutex<HashMap<String, usize>>,
    /// Reconcile starts per object.
    pub starts: Mutex<HashMap<String, Vec<Instant>>>,
    /// Steps run, in order, per object.
    pub steps: Mutex<HashMap<String, Vec<&'static str>>>,
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    /// Like `in_flight`, for the toys of the slow backend ([`SLOW_PREFIX`]).
    pub slow_in_flight: AtomicUsize,
    pub max_slow_in_flight: AtomicUsize,
}

/// Toys named so share one backend, a remote system whose passes at once the controller may
/// bound ([`ToyController::slow_passes_at_once`]).
pub const SLOW_PREFIX: &str = "slow-";

fn toggle(set: &Mutex<HashSet<String>>, name: &str, on: bool) {
    let mut set = set.lock().unwrap();
    if on {
        set.insert(name.to_owned());
    } else {
        set.remove(name);
    }
}

fn count(map: &Mutex<HashMap<String, usize>>, name: &str) -> usize {
    map.lock().unwrap().get(name).copied().unwrap_or_default()
}

impl World {
    pub fn set_down(&self, name: &str, down: bool) {
        toggle(&self.down, name, down);
    }

    pub fn set_conflict(&self, name: &str, conflict: bool) {
        toggle(&self.conflict, name, conflict);
    }

    pub fn refuse_release(&self, name: &str, refuse: bool) {
        toggle(&self.release_refused, name, refuse);
    }

    pub fn report(&self, name: &str, value: i64) {
        self.reported.lock().unwrap().insert(name.to_owned(), value);
    }

    pub fn cleanups(&self, name: &str) -> usize {
        count(&self.cleanups, name)
    }

    pub fn forgotten(&self, name: &str) -> usize {
        count(&self.forgotten, name)
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

    fn log_step(&self, name: &str, step: ToyStep) {
        self.steps
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .push(step.as_str());
    }
}

struct InFlight<'a> {
    now: &'a AtomicUsize,
}

impl<'a> InFlight<'a> {
    fn enter(now: &'a AtomicUsize, max: &AtomicUsize) -> Self {
        let count = now.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(count, Ordering::SeqCst);
        InFlight { now }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

pub struct ToyReconciler {
    pub client: Client,
    pub world: Arc<World>,
    /// The slow backend the slow toys' passes talk to; `None`: they talk to none.
    pub slow_backend: Option<RemoteSystem>,
}

impl World {
    /// Step `BackendReady`: the backend holds the toy's value, unless the test broke it.
    async fn backend_ready(&self, toy: &Toy, name: &str) -> StepFlow<Outcome> {
        self.log_step(name, ToyStep::BackendReady);
        if toy.spec.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(toy.spec.delay_ms)).await;
        }
        if self.conflict.lock().unwrap().contains(name) {
            return Err(StepError::conflict(
                "BackendConflict",
                "the backend holds a newer version",
            )
            .into());
        }
        if self.down.lock().unwrap().contains(name) {
            let message = self.down_message.lock().unwrap().clone();
            return Err(StepError::transient_msg(
                "BackendDown",
                message.unwrap_or_else(|| "backend unreachable".to_owned()),
            )
            .into());
        }
        let mut backend = self.backend.lock().unwrap();
        if backend.get(name) == Some(&toy.spec.value) {
            return Ok(Outcome::unchanged());
        }
        backend.insert(name.to_owned(), toy.spec.value);
        Ok(Outcome::changed())
    }
}

impl ToyReconciler {
    /// Step `ConfigMapReady`: the toy's ConfigMap `<name>-value` holds its value.
    async fn config_map_ready(&self, toy: &Toy, name: &str) -> StepFlow<Outcome> {
        let api: Api<ConfigMap> =
            Api::namespaced(self.client.clone(), &toy.namespace().unwrap_or_default());
        let cm_name = format!("{name}-value");
        let data = BTreeMap::from([("value".to_owned(), toy.spec.value.to_string())]);
        self.world.log_step(name, ToyStep::ConfigMapReady);
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
        cm.data = Some(data);
        if cm.metadata.resource_version.is_some() {
            api.replace(&cm_name, &PostParams::default(), &cm).await?;
        } else {
            api.create(&PostParams::default(), &cm).await?;
        }
        Ok(Outcome::changed())
    }
}

impl Reconciler for ToyReconciler {
    type Resource = Toy;
    type Step = ToyStep;

    fn remote_system(&self, toy: &Toy) -> Option<RemoteSystem> {
        self.slow_backend
            .clone()
            .filter(|_| toy.name_any().starts_with(SLOW_PREFIX))
    }

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
        let _in_flight = InFlight::enter(&world.in_flight, &world.max_in_flight);
        let _slow_in_flight = name
            .starts_with(SLOW_PREFIX)
            .then(|| InFlight::enter(&world.slow_in_flight, &world.max_slow_in_flight));

        steps
            .step(ToyStep::SpecValid, || async {
                world.log_step(&name, ToyStep::SpecValid);
                if toy.spec.value < 0 {
                    return Err(StepError::invalid(
                        "NegativeValue",
                        "spec.value must not be negative",
                    )
                    .into());
                }
                Ok(Outcome::unchanged())
            })
            .await?;

        steps
            .step(ToyStep::BackendReady, || world.backend_ready(toy, &name))
            .await?;
        if toy.spec.child {
            steps
                .step(ToyStep::ConfigMapReady, || {
                    self.config_map_ready(toy, &name)
                })
                .await?;
        }

        let reported = world.reported.lock().unwrap().get(&name).copied();
        status.value = Some(reported.unwrap_or(toy.spec.value));
        Ok(())
    }

    fn forget(&self, toy: &Toy) {
        *self
            .world
            .forgotten
            .lock()
            .unwrap()
            .entry(toy.name_any())
            .or_default() += 1;
    }
}

/// The toy controller with a finalizer: deleting a toy releases its backend first.
pub struct FinalizingToy(pub ToyReconciler);

impl Reconciler for FinalizingToy {
    type Resource = Toy;
    type Step = ToyStep;
    const FINALIZER: Option<&'static str> = Some(TOY_FINALIZER);

    async fn reconcile(
        &self,
        toy: &Toy,
        status: &mut ToyStatus,
        steps: &mut StepRunner<ToyStep>,
    ) -> Result<(), Halt> {
        self.0.reconcile(toy, status, steps).await
    }

    async fn cleanup(
        &self,
        toy: &Toy,
        _status: &mut ToyStatus,
        steps: &mut StepRunner<ToyStep>,
    ) -> Result<(), Halt> {
        let name = toy.name_any();
        let world = &*self.0.world;
        steps
            .step(ToyStep::BackendReleased, || async {
                world.log_step(&name, ToyStep::BackendReleased);
                if world.release_refused.lock().unwrap().contains(&name) {
                    return Err(StepError::transient_msg(
                        "ReleaseRefused",
                        "the backend refuses to release the toy",
                    )
                    .into());
                }
                world.backend.lock().unwrap().remove(&name);
                *world
                    .cleanups
                    .lock()
                    .unwrap()
                    .entry(name.clone())
                    .or_default() += 1;
                Ok(Outcome::changed())
            })
            .await?;
        Ok(())
    }

    fn forget(&self, toy: &Toy) {
        self.0.forget(toy);
    }
}

/// What the gate does with the next watch request of toys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateMode {
    /// Let it through.
    Open,
    /// Hold it until the mode changes: the cache sees nothing new meanwhile.
    Hold,
    /// Send it once with `resourceVersion=1`, long compacted away: the real API server answers
    /// 410 Gone and the watcher lists again — a relist, as after a long watch gap.
    Expire,
}

/// Sits between the controller's client and the API server and controls the toys' watch: the
/// way a test makes the cache stale (or forces a relist) at a moment of its choosing.
pub struct WatchGate {
    mode: tokio::sync::watch::Sender<GateMode>,
    held: AtomicUsize,
    lists: AtomicUsize,
}

impl WatchGate {
    fn new() -> Self {
        WatchGate {
            mode: tokio::sync::watch::Sender::new(GateMode::Open),
            held: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
        }
    }

    /// List requests of toys so far: the initial list and every relist.
    pub fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }

    pub fn set(&self, mode: GateMode) {
        self.mode.send_replace(mode);
    }

    /// Holds the next watch request and waits until one is held: from then on the cache is
    /// frozen (the current watch ends within the watch timeout of one second).
    pub async fn freeze(&self) {
        self.set(GateMode::Hold);
        test_support::poll(
            "a toy watch held at the gate",
            Duration::from_secs(15),
            async || (self.held.load(Ordering::SeqCst) > 0).then_some(()),
        )
        .await;
    }

    async fn pass(&self, request: &mut http::Request<kube::client::Body>) {
        let mut mode = self.mode.subscribe();
        loop {
            let now = *mode.borrow_and_update();
            match now {
                GateMode::Open => return,
                GateMode::Expire => {
                    self.mode.send_replace(GateMode::Open);
                    expire(request);
                    return;
                }
                GateMode::Hold => {
                    self.held.fetch_add(1, Ordering::SeqCst);
                    let _ = mode.changed().await;
                    self.held.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }
}

fn is_toy_collection(request: &http::Request<kube::client::Body>) -> bool {
    request.method() == http::Method::GET && request.uri().path().ends_with("/toys")
}

fn is_watch(request: &http::Request<kube::client::Body>) -> bool {
    request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true"))
}

fn expire(request: &mut http::Request<kube::client::Body>) {
    let path = request.uri().path().to_owned();
    let query: Vec<&str> = request
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .map(|p| {
            if p.starts_with("resourceVersion=") {
                "resourceVersion=1"
            } else {
                p
            }
        })
        .collect();
    *request.uri_mut() = format!("{path}?{}", query.join("&")).parse().unwrap();
}

fn gated(inner: Client, gate: Arc<WatchGate>) -> Client {
    let namespace = inner.default_namespace().to_owned();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let gate = gate.clone();
        async move {
            if is_toy_collection(&request) {
                if is_watch(&request) {
                    gate.pass(&mut request).await;
                } else {
                    gate.lists.fetch_add(1, Ordering::SeqCst);
                }
            }
            inner.send(request).await
        }
    });
    Client::new(service, namespace)
}

/// A running toy controller with its own metrics registry and rate-limited client.
pub struct Running {
    pub registry: Registry,
    /// The controller's own client (counted by `metrics`).
    pub client: Client,
    pub world: Arc<World>,
    pub toys: SharedCache<Toy>,
    pub config_maps: Option<SharedCache<ConfigMap>>,
    /// Controls the toys' watch, when the controller was started [`ToyController::gated`].
    pub gate: Option<Arc<WatchGate>>,
    namespace: String,
    triggers: mpsc::UnboundedSender<ObjectRef<Toy>>,
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

    /// Reconciles toy `name` now, whatever its cache says.
    pub fn trigger(&self, name: &str) {
        self.triggers
            .send(ObjectRef::new(name).within(&self.namespace))
            .unwrap();
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
        test_support::metrics::kube_writes(&self.metrics_text())
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

/// Logs to the test output when `RUST_LOG` is set; silent otherwise.
pub fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// The engine's client for the test control plane, counted by `metrics`.
pub async fn engine_client(env: &TestEnv, limits: ClientLimits, metrics: Arc<Metrics>) -> Client {
    let kube_config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&env.kubeconfig).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    reconcile_engine::build_client(kube_config, limits, metrics).unwrap()
}

/// The engine's settings for a toy manager in `env`'s namespace.
pub fn manager_config(env: &TestEnv, engine: EngineConfig) -> ManagerConfig {
    ManagerConfig {
        namespace: Some(env.namespace.clone()),
        engine,
        identity: Identity::new("enginetest.ontap.storage.dev"),
        stuck_reconcile_after: Duration::from_secs(600),
    }
}

/// How to start a toy controller; [`ToyController::start`] runs it in `env`'s namespace.
pub struct ToyController {
    config: EngineConfig,
    limits: ClientLimits,
    owns: bool,
    finalizer: bool,
    gated: bool,
    trace_id: Option<&'static str>,
    slow_passes_at_once: Option<usize>,
}

impl ToyController {
    pub fn new(config: EngineConfig) -> Self {
        ToyController {
            config,
            limits: ClientLimits::default(),
            owns: false,
            finalizer: false,
            gated: false,
            trace_id: None,
            slow_passes_at_once: None,
        }
    }

    /// At most `passes` passes over the slow backend's toys ([`SLOW_PREFIX`]) run at once.
    pub fn slow_passes_at_once(mut self, passes: usize) -> Self {
        self.slow_passes_at_once = Some(passes);
        self
    }

    pub fn limits(mut self, limits: ClientLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The toy owns ConfigMaps (cached, and a change reconciles the owner).
    pub fn owns_config_maps(mut self) -> Self {
        self.owns = true;
        self
    }

    /// Runs [`FinalizingToy`] instead of [`ToyReconciler`].
    pub fn with_finalizer(mut self) -> Self {
        self.finalizer = true;
        self
    }

    /// The toys' watch goes through a [`WatchGate`] and times out every second.
    pub fn gated(mut self) -> Self {
        self.gated = true;
        self
    }

    /// Every pass is in the trace `id`, as a tracing layer would report it.
    pub fn trace_id(mut self, id: &'static str) -> Self {
        self.trace_id = Some(id);
        self
    }

    pub async fn start(self, env: &TestEnv) -> Running {
        init_tracing();
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry, "toy");
        let client = engine_client(env, self.limits, metrics.clone()).await;
        let gate = self.gated.then(|| Arc::new(WatchGate::new()));
        let manager_client = match &gate {
            Some(gate) => gated(client.clone(), gate.clone()),
            None => client.clone(),
        };
        let world = Arc::new(World::default());
        let reconciler = ToyReconciler {
            client: client.clone(),
            world: world.clone(),
            slow_backend: self
                .slow_passes_at_once
                .map(|passes| RemoteSystem::new("the slow backend", passes, 1)),
        };
        let mut config = manager_config(env, self.config.clone());
        if let Some(id) = self.trace_id {
            config.identity.trace_id = Some(Arc::new(move |_| Some(id.to_owned())));
        }
        let mut manager = Manager::new(manager_client, config, metrics.clone(), Arc::new(NoProbes));
        let (triggers, rx) = mpsc::unbounded_channel();
        if self.finalizer {
            manager
                .register(self.registration(FinalizingToy(reconciler), rx))
                .unwrap();
        } else {
            manager.register(self.registration(reconciler, rx)).unwrap();
        }
        for crd in manager.crds() {
            test_support::install_crd(&env.client, crd).await;
        }
        let toys = manager.cache::<Toy>().unwrap();
        let config_maps = self.owns.then(|| manager.cache::<ConfigMap>().unwrap());
        let (tx, shutdown) = oneshot::channel();
        let handle = tokio::spawn(manager.run(async move {
            let _ = shutdown.await;
        }));
        Running {
            registry,
            client,
            world,
            toys,
            config_maps,
            gate,
            namespace: env.namespace.clone(),
            triggers,
            shutdown: Some(tx),
            handle: Some(handle),
        }
    }

    fn registration<R: Reconciler<Resource = Toy>>(
        &self,
        reconciler: R,
        triggers: mpsc::UnboundedReceiver<ObjectRef<Toy>>,
    ) -> Registration<R> {
        let watch = if self.gated {
            watcher::Config::default().timeout(1)
        } else {
            watcher::Config::default()
        };
        let triggers = futures::stream::unfold(triggers, |mut rx| async move {
            rx.recv().await.map(|r| (r, rx))
        });
        let mut registration = Registration::new("toy", reconciler)
            .crd(Toy::crd())
            .watching(watch)
            .triggers(triggers);
        if self.owns {
            registration =
                registration.owns::<ConfigMap>(watcher::Config::default(), &["create", "update"]);
        }
        registration
    }
}

pub fn toys(env: &TestEnv) -> Api<Toy> {
    Api::namespaced(env.client.clone(), &env.namespace)
}

pub async fn create(env: &TestEnv, toy: Toy) -> Toy {
    toys(env)
        .create(&PostParams::default(), &toy)
        .await
        .unwrap()
}

pub async fn get(env: &TestEnv, name: &str) -> Toy {
    toys(env).get(name).await.unwrap()
}

pub fn condition<'a>(toy: &'a Toy, type_: &str) -> Option<&'a Condition> {
    toy.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// Waits until condition `type_` of toy `name` has `status` (and, if given, `reason`).
pub async fn wait_condition(
    env: &TestEnv,
    name: &str,
    type_: &str,
    status: &str,
    reason: Option<&str>,
) -> Toy {
    test_support::poll(
        &format!("{name}: {type_}={status}"),
        Duration::from_secs(30),
        async || {
            let toy = get(env, name).await;
            let c = condition(&toy, type_)?;
            (c.status == status && reason.is_none_or(|r| c.reason == r)).then_some(toy)
        },
    )
    .await
}

/// Waits until toy `name` no longer exists.
pub async fn wait_gone(env: &TestEnv, name: &str) {
    if let Err(why) = test_support::gone(&toys(env), name, Duration::from_secs(30)).await {
        panic!("toy {name} not gone: {why}");
    }
}

/// A Toy of the engine tests, with `value` and nothing else set.
#[derive(Clone, Debug)]
pub struct ToyFixture {
    name: String,
    spec: ToySpec,
}

pub fn toy(name: &str) -> ToyFixture {
    ToyFixture {
        name: name.to_owned(),
        spec: ToySpec::default(),
    }
}

impl ToyFixture {
    pub fn value(mut self, value: i64) -> Self {
        self.spec.value = value;
        self
    }

    /// The toy owns a ConfigMap holding its value.
    pub fn child(mut self) -> Self {
        self.spec.child = true;
        self
    }

    /// The backend step takes this long.
    pub fn delay_ms(mut self, delay_ms: u64) -> Self {
        self.spec.delay_ms = delay_ms;
        self
    }

    pub fn build(&self) -> Toy {
        Toy::new(&self.name, self.spec.clone())
    }
}
