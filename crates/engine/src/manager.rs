//! The manager: one shared cache per kind, controllers registered with one call each, and the
//! readiness, liveness, RBAC and CRDs that follow from their declarations.
//!
//! A controller module declares everything about itself in a [`Registration`] — its kind, the
//! kinds it owns and watches, its triggers, its CRD and the RBAC rules it needs beyond those —
//! and the manager derives the rest: caches are created (once per kind) and report readiness,
//! each controller gets a stuck-reconcile liveness check, the operator's ClusterRole is the union
//! of every registration's rules, and the CRDs carry the engine's printer columns.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};

use super::cache::{SharedCache, until_listed};
use super::config::{EngineConfig, Identity};
use super::controller::{Controller, Ready, Trigger, WakesOwner, owner_triggers, wakes_always};
pub use super::manifest::{merge_rules, rule, with_engine_columns};
use super::manifest::{own_rules, with_read};
use super::metrics::Metrics;
use super::object::{Object, ScopedApi};
use super::reconciler::Reconciler;

/// A health check: `Ok` when healthy, else why not.
pub type Check = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// Where the manager reports its readiness and liveness checks: the embedding program's health
/// endpoints.
pub trait Probes: Send + Sync {
    /// Adds a check that must pass for the process to be ready (`/readyz`).
    fn add_readiness(&self, name: String, check: Check);
    /// Adds a check that must pass for the process to be alive (`/healthz`).
    fn add_liveness(&self, name: String, check: Check);
}

/// Probes that are dropped: for generating manifests and for tests that do not look.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProbes;

impl Probes for NoProbes {
    fn add_readiness(&self, _name: String, _check: Check) {}
    fn add_liveness(&self, _name: String, _check: Check) {}
}

/// Settings of a [`Manager`].
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// Only this namespace's objects of namespaced kinds are watched; `None` for all.
    pub namespace: Option<String>,
    /// Scheduling of every controller.
    pub engine: EngineConfig,
    /// Names written into the cluster, and the trace hook.
    pub identity: Identity,
    /// A reconcile running longer than this fails the liveness check of its controller.
    pub stuck_reconcile_after: Duration,
}

/// What went wrong wiring controllers together; a programming error, reported at start.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// Two registrations asked for different watches of one kind: there is one store per kind.
    #[error(
        "the cache of {kind} is already watched with {existing}; a second registration asked for {requested}"
    )]
    ConflictingWatch {
        /// The kind.
        kind: String,
        /// The selectors of the existing cache.
        existing: String,
        /// The selectors asked for.
        requested: String,
    },
    /// Two controllers with one name.
    #[error("a controller named {0} is already registered")]
    DuplicateController(&'static str),
    /// No runtime could be made to read registrations offline.
    #[error("starting a runtime to read the controllers' declarations: {0}")]
    Runtime(std::io::Error),
}

struct CacheEntry {
    cache: Box<dyn Any + Send + Sync>,
    selectors: String,
    start: Box<dyn Fn() + Send + Sync>,
}

type RunController =
    Box<dyn FnOnce(tokio::sync::watch::Receiver<bool>) -> BoxFuture<'static, ()> + Send>;

/// Runs the registered controllers on shared caches. See the [crate documentation](crate).
pub struct Manager {
    client: Client,
    config: ManagerConfig,
    metrics: Arc<Metrics>,
    probes: Arc<dyn Probes>,
    caches: HashMap<TypeId, CacheEntry>,
    cache_order: Vec<TypeId>,
    controllers: Vec<(&'static str, RunController)>,
    rules: Vec<PolicyRule>,
    crds: Vec<CustomResourceDefinition>,
}

impl Manager {
    /// A manager whose controllers talk through `client` and record into `metrics`, reporting
    /// their health checks to `probes`.
    pub fn new(
        client: Client,
        config: ManagerConfig,
        metrics: Arc<Metrics>,
        probes: Arc<dyn Probes>,
    ) -> Self {
        Manager {
            client,
            config,
            metrics,
            probes,
            caches: HashMap::new(),
            cache_order: Vec::new(),
            controllers: Vec::new(),
            rules: Vec::new(),
            crds: Vec::new(),
        }
    }

    /// The client the controllers use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The settings.
    pub fn config(&self) -> &ManagerConfig {
        &self.config
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The shared cache of `K`, however a registration restricted it, or — when there is none
    /// yet — a new one of every `K` in scope.
    pub fn cache<K: Object>(&mut self) -> Result<SharedCache<K>, ManagerError> {
        if let Some(cache) = self
            .caches
            .get(&TypeId::of::<K>())
            .and_then(|entry| entry.cache.downcast_ref::<SharedCache<K>>())
        {
            return Ok(cache.clone());
        }
        self.cache_with(watcher::Config::default())
    }

    /// The shared cache of `K` restricted by `config`'s label and field selectors (to cache only
    /// the Secrets a controller manages, say). There is one store per kind: asking again with
    /// other selectors is an error, so that no controller silently sees less than it asked for.
    pub fn cache_with<K: Object>(
        &mut self,
        config: watcher::Config,
    ) -> Result<SharedCache<K>, ManagerError> {
        let selectors = format!(
            "labels {:?}, fields {:?}",
            config.label_selector, config.field_selector
        );
        let id = TypeId::of::<K>();
        if let Some(entry) = self.caches.get(&id) {
            if entry.selectors != selectors {
                return Err(ManagerError::ConflictingWatch {
                    kind: K::kind(&()).into_owned(),
                    existing: entry.selectors.clone(),
                    requested: selectors,
                });
            }
            if let Some(cache) = entry.cache.downcast_ref::<SharedCache<K>>() {
                return Ok(cache.clone());
            }
        }
        let api = <K::Scope as ScopedApi>::api::<K>(
            self.client.clone(),
            self.config.namespace.as_deref(),
        );
        let cache = SharedCache::new(api, config);
        let name = format!("cache/{}", K::plural(&()));
        self.probes.add_readiness(name.clone(), {
            let cache = cache.clone();
            Box::new(move || {
                if cache.is_ready() {
                    Ok(())
                } else {
                    Err(format!("{name}: the initial list has not arrived yet"))
                }
            })
        });
        self.caches.insert(
            id,
            CacheEntry {
                cache: Box::new(cache.clone()),
                selectors,
                start: Box::new({
                    let cache = cache.clone();
                    move || cache.start()
                }),
            },
        );
        self.cache_order.push(id);
        Ok(cache)
    }

    /// Adds a controller: its caches are created, its checks reported, its rules and CRDs
    /// collected. It starts with [`run`](Self::run).
    pub fn register<R: Reconciler>(
        &mut self,
        registration: Registration<R>,
    ) -> Result<(), ManagerError>
    where
        R::Resource: Object,
    {
        let Registration {
            name,
            reconciler,
            watch,
            wiring,
            rules,
            crds,
            packed,
        } = registration;
        if self.controllers.iter().any(|(n, _)| *n == name) {
            return Err(ManagerError::DuplicateController(name));
        }
        let cache = self.cache_with::<R::Resource>(watch)?;
        if packed {
            cache.pack_objects();
        }
        let mut controller = Controller::new(
            name,
            reconciler,
            &cache,
            self.client.clone(),
            self.config.engine.clone(),
            self.config.identity.clone(),
            self.metrics.clone(),
        );
        for wire in wiring {
            let (stream, ready) = wire(self, &cache)?;
            controller = controller.triggers(stream);
            if let Some(ready) = ready {
                controller = controller.waits_for(ready);
            }
        }
        let in_flight = controller.in_flight();
        let limit = self.config.stuck_reconcile_after;
        self.probes.add_liveness(
            format!("reconcile-{name}"),
            Box::new(move || match in_flight.oldest() {
                Some(age) if age > limit => Err(format!(
                    "a {name} reconcile has been running for {}s (limit {}s)",
                    age.as_secs(),
                    limit.as_secs()
                )),
                _ => Ok(()),
            }),
        );

        let mut rules = rules;
        rules.extend(own_rules::<R::Resource>(R::FINALIZER.is_some()));
        self.rules.extend(rules);
        self.crds.extend(crds);
        self.controllers.push((
            name,
            Box::new(move |mut stop| {
                Box::pin(controller.run(async move {
                    let _ = stop.wait_for(|stop| *stop).await;
                }))
            }),
        ));
        Ok(())
    }

    /// Names of the registered controllers, in registration order.
    pub fn controller_names(&self) -> Vec<&'static str> {
        self.controllers.iter().map(|(n, _)| *n).collect()
    }

    /// Every RBAC rule the registered controllers need, merged: one rule per API group and verb
    /// set, sorted, so that generated manifests are stable.
    pub fn rbac_rules(&self) -> Vec<PolicyRule> {
        merge_rules(&self.rules)
    }

    /// The CRDs of the registered controllers, with the engine's printer columns.
    pub fn crds(&self) -> Vec<CustomResourceDefinition> {
        self.crds.clone()
    }

    /// Starts every cache's watch. Call it early — before leadership is known — so that a
    /// standby taking over has warm caches; [`run`](Self::run) calls it too.
    pub fn start_caches(&self) {
        for id in &self.cache_order {
            if let Some(entry) = self.caches.get(id) {
                (entry.start)();
            }
        }
    }

    /// Runs every registered controller until `shutdown` resolves, then lets running reconciles
    /// finish. Dropping the returned future instead (aborting its task) stops every controller
    /// and every reconcile in flight at once: what a leader that lost its Lease must do, as
    /// controller-runtime does, rather than act on for a grace period.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        self.start_caches();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        // A JoinSet aborts its tasks when dropped; detached spawns would outlive an abort.
        let mut running = tokio::task::JoinSet::new();
        for (_, run) in self.controllers {
            running.spawn(run(stop_rx.clone()));
        }
        shutdown.await;
        let _ = stop_tx.send(true);
        while let Some(joined) = running.join_next().await {
            if let Err(err) = joined {
                tracing::error!(error = %err, "a controller task failed");
            }
        }
    }
}

/// What one declaration wires into a controller: a stream of objects to reconcile, and the
/// readiness of the cache it reads, which the controller waits for before its first reconcile.
type Wired<K> = (Trigger<K>, Option<Ready>);

type Wire<K> =
    Box<dyn FnOnce(&mut Manager, &SharedCache<K>) -> Result<Wired<K>, ManagerError> + Send>;

/// Everything about one controller: built by its module, handed to [`Manager::register`]. See
/// the [crate documentation](crate) for an example.
pub struct Registration<R: Reconciler> {
    name: &'static str,
    reconciler: R,
    watch: watcher::Config,
    wiring: Vec<Wire<R::Resource>>,
    rules: Vec<PolicyRule>,
    crds: Vec<CustomResourceDefinition>,
    packed: bool,
}

impl<R: Reconciler> Registration<R>
where
    R::Resource: Object,
{
    /// The controller `name` (metrics label, queue name, Events' reporter) running `reconciler`.
    pub fn new(name: &'static str, reconciler: R) -> Self {
        Registration {
            name,
            reconciler,
            watch: watcher::Config::default(),
            wiring: Vec::new(),
            rules: Vec::new(),
            crds: Vec::new(),
            packed: false,
        }
    }

    /// Watches only the objects of the reconciled kind that `config`'s selectors match.
    pub fn watching(mut self, config: watcher::Config) -> Self {
        self.watch = config;
        self
    }

    /// The reconciled kind's cache keeps its objects packed ([`SharedCache::pack_objects`]): for
    /// a kind with tens of thousands of objects, read one at a time.
    pub fn packed(mut self) -> Self {
        self.packed = true;
        self
    }

    /// The CRD of the reconciled kind (or another this controller serves), given the engine's
    /// printer columns.
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(with_engine_columns(crd));
        self
    }

    /// The controller creates and manages objects of kind `C` (with an owner reference to their
    /// parent): they are cached (restricted by `config`), a change to one reconciles its owner,
    /// and the controller may use `verbs` on them besides reading.
    pub fn owns<C: Object>(self, config: watcher::Config, verbs: &[&str]) -> Self {
        self.wire_owned(config, verbs, wakes_always::<C>())
    }

    /// As [`owns`](Self::owns), but a created or updated child wakes its owner only when
    /// `wakes` says so; a deleted one always does. For a parent that depends on little of a
    /// child that changes often: a Kyma needs to hear of a HelmComponent's `success`, not of
    /// every state before it. What `wakes` filters out is seen at the owner's next pass anyway
    /// (a sibling's change, its own timer, the periodic resync), so a filter may only drop
    /// changes that cannot change what the owner does or reports.
    pub fn owns_when<C: Object>(
        self,
        config: watcher::Config,
        verbs: &[&str],
        wakes: impl Fn(&C) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.wire_owned(config, verbs, Arc::new(wakes))
    }

    fn wire_owned<C: Object>(
        mut self,
        config: watcher::Config,
        verbs: &[&str],
        wakes: WakesOwner<C>,
    ) -> Self {
        self.rules.push(rule::<C>(&with_read(verbs)));
        let own_writes = self.reconciler.own_writes();
        self.wiring.push(Box::new(move |manager, parents| {
            let children = manager.cache_with::<C>(config)?;
            let (owners, listed) = owner_triggers(&children, parents, own_writes, wakes);
            Ok((owners, Some(listed)))
        }));
        self
    }

    /// The controller reads objects of kind `W`; whenever one changes, the objects `map` names
    /// are reconciled (`map` is given the changed object and this controller's cache).
    pub fn watches<W: Object>(
        mut self,
        map: impl Fn(&W, &SharedCache<R::Resource>) -> Vec<ObjectRef<R::Resource>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.rules.push(rule::<W>(&with_read(&[])));
        self.wiring.push(Box::new(move |manager, own| {
            let watched = manager.cache::<W>()?;
            let own = own.clone();
            let (changes, listed) = until_listed(watched.subscribe());
            let stream = changes.flat_map(move |change| {
                let Some(obj) = watched.object_of(&change) else {
                    return futures::stream::iter(Vec::new());
                };
                let queued = map(&obj, &own);
                if !queued.is_empty() {
                    tracing::debug!(
                        kind = %W::kind(&()),
                        name = %obj.name_any(),
                        queued = queued.len(),
                        "a watched object changed"
                    );
                }
                futures::stream::iter(queued)
            });
            Ok((stream.boxed(), Some(listed)))
        }));
        self
    }

    /// Every cached object of the reconciled kind is looked at again every `period`, for what
    /// no watch event announces (a remote system's state).
    pub fn every(mut self, period: Duration) -> Self {
        self.wiring.push(Box::new(move |_, own| {
            let own = own.clone();
            // The interval is made on the first poll: registering needs no timer, so that
            // declarations can be read without a runtime's clock.
            let ticks = futures::stream::unfold(None, move |interval| async move {
                let mut interval = interval.unwrap_or_else(|| {
                    tokio::time::interval_at(tokio::time::Instant::now() + period, period)
                });
                interval.tick().await;
                Some(((), Some(interval)))
            });
            Ok((
                ticks
                    .flat_map(move |()| {
                        futures::stream::iter(
                            own.store()
                                .keys()
                                .iter()
                                .map(|key| (**key).clone())
                                .collect::<Vec<_>>(),
                        )
                    })
                    .boxed(),
                None,
            ))
        }));
        self
    }

    /// Any other stream of objects to reconcile.
    pub fn triggers(
        mut self,
        stream: impl futures::Stream<Item = ObjectRef<R::Resource>> + Send + 'static,
    ) -> Self {
        let stream = stream.boxed();
        self.wiring.push(Box::new(move |_, _| Ok((stream, None))));
        self
    }

    /// A permission the controller needs beyond what its declarations imply (reading a Secret
    /// that a spec names, say).
    pub fn rule(mut self, rule: PolicyRule) -> Self {
        self.rules.push(rule);
        self
    }
}

/// A client that answers every request with an error without connecting anywhere: for building
/// registrations to read their declarations (CRDs, RBAC) when there is no cluster.
pub fn offline_client() -> Client {
    let service = tower::service_fn(|_request: http::Request<kube::client::Body>| async {
        Err::<http::Response<kube::client::Body>, tower::BoxError>(
            "offline client: no API server".into(),
        )
    });
    Client::new(service, "default")
}
