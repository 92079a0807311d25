//! Controller wiring: triggers and the cache's changes → work queue → bounded workers, each
//! running one pass over one object (lifecycle, status, Events, metrics) → the next schedule.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, ObjectRefExtra};
use kube::{Client, Resource, ResourceExt};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::cache::{Change, SharedCache, SharedRef, lean_ref, until_listed};
use super::config::{EngineConfig, Identity};
use super::inflight::InFlight;
use super::metrics::Metrics;
use super::own_writes::OwnWrites;
use super::pass::{ControllerState, Memory, fingerprint};
use super::queue::{Next, QueueMetrics, WorkQueue};
use super::remote::RemoteSystems;
use super::requeue::{Backoff, TokenBucket};
use super::worker::{Requeue, WaitingRoom, Worker};

use super::object::Object;
use super::reconciler::Reconciler;

/// A stream of objects to reconcile besides the changes of the controller's own cache.
pub(crate) type Trigger<K> = BoxStream<'static, ObjectRef<K>>;

/// Resolves once something the controller reads is ready: a cache's initial list is in, or
/// has been handled.
pub(crate) type Ready = BoxFuture<'static, ()>;

/// Runs a [`Reconciler`] for every object of its kind. Usually built and run by the
/// [`Manager`](crate::Manager) from a [`Registration`](crate::Registration).
pub struct Controller<R: Reconciler> {
    name: &'static str,
    reconciler: Arc<R>,
    cache: SharedCache<R::Resource>,
    client: Client,
    config: EngineConfig,
    identity: Identity,
    metrics: Arc<Metrics>,
    triggers: Vec<Trigger<R::Resource>>,
    /// The other caches this controller reads, which must hold their initial lists before the
    /// first reconcile: a parent that looked at an empty child cache would create every child
    /// again (or report them all missing).
    waits: Vec<Ready>,
    in_flight: InFlight,
}

impl<R: Reconciler> Controller<R> {
    /// A controller named `name` (the `controller` label of its metrics, its queue's `name` and
    /// its Events' reporting controller) reconciling the objects of `cache`.
    ///
    /// `client` is used for status writes, finalizers and Events; build it with
    /// [`build_client`](super::build_client) so those count against the client rate limit.
    pub fn new(
        name: &'static str,
        reconciler: R,
        cache: &SharedCache<R::Resource>,
        client: Client,
        config: EngineConfig,
        identity: Identity,
        metrics: Arc<Metrics>,
    ) -> Self {
        Controller {
            name,
            reconciler: Arc::new(reconciler),
            cache: cache.clone(),
            client,
            config,
            identity,
            metrics,
            triggers: Vec::new(),
            waits: Vec::new(),
            in_flight: InFlight::default(),
        }
    }

    /// Reconciles start only after `ready` resolved too (besides this controller's own cache):
    /// the readiness of another cache the reconciler reads.
    pub fn waits_for(mut self, ready: BoxFuture<'static, ()>) -> Self {
        self.waits.push(ready);
        self
    }

    /// The reconciles of this controller running at a given moment, for a liveness check.
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.clone()
    }

    /// Also reconcile the objects this stream names (for relations ownership does not cover).
    pub fn triggers(
        mut self,
        stream: impl futures::Stream<Item = ObjectRef<R::Resource>> + Send + 'static,
    ) -> Self {
        self.triggers.push(stream.boxed());
        self
    }
    /// Runs until `shutdown` resolves, then lets running reconciles finish.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        let Parts {
            state,
            triggers,
            waits,
        } = self.into_parts();
        let (name, config, metrics) = (state.name, &state.config, &state.metrics);
        let workers = usize::from(config.max_concurrent_reconciles.max(1));
        metrics
            .max_concurrent_reconciles(name)
            .set(i64::try_from(workers).unwrap_or(i64::MAX));

        let queue = Arc::new(WorkQueue::new(
            Backoff::new(config.backoff_base, config.backoff_max),
            QueueMetrics::of(metrics, name),
        ));
        // Weak: the metrics outlive a controller that stopped, and must not keep its queue.
        let weak = Arc::downgrade(&queue);
        metrics.watch_queue_age(name, move || weak.upgrade().map(|q| q.oldest_age()));
        let (mut background, fed) = start_feeds(&state, &queue, triggers);

        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            _ = futures::future::join(fed, futures::future::join_all(waits)) => {}
            () = &mut shutdown => return,
        }
        tracing::info!(controller = name, workers, "controller started");

        let mut running = dispatch(&state, &queue, workers, shutdown).await;

        tracing::info!(
            controller = name,
            "controller stopping; waiting for running reconciles"
        );
        background.abort_all();
        while running.join_next().await.is_some() {}
    }

    /// What every pass shares, and what feeds and gates the queue.
    fn into_parts(self) -> Parts<R> {
        let Controller {
            name,
            reconciler,
            cache,
            client,
            config,
            identity,
            metrics,
            triggers,
            waits,
            in_flight,
        } = self;
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: format!("{}/{name}", identity.reporter_domain),
                instance: identity.instance.clone(),
            },
        );
        let state = ControllerState {
            name,
            reconciler,
            cache,
            client,
            config,
            identity,
            metrics,
            recorder,
            in_flight,
            memory: Memory::default(),
            remote_systems: RemoteSystems::default(),
        };
        Parts {
            state: Arc::new(state),
            triggers,
            waits,
        }
    }
}

/// A controller taken apart to run.
struct Parts<R: Reconciler> {
    /// What every pass shares.
    state: Arc<ControllerState<R>>,
    /// What feeds the queue besides the controller's own cache.
    triggers: Vec<Trigger<R::Resource>>,
    /// What must be ready before the first pass.
    waits: Vec<Ready>,
}

/// Starts the queue's timers and the feeds into it: the controller's own cache and its
/// triggers. Returns the tasks, and a future that resolves once the cache's feed has queued
/// the initial list: workers start only then, because an object picked before a late feed
/// queued it too would be passed over twice.
fn start_feeds<R: Reconciler>(
    state: &Arc<ControllerState<R>>,
    queue: &Arc<WorkQueue<QueueKey<R::Resource>>>,
    triggers: Vec<Trigger<R::Resource>>,
) -> (JoinSet<()>, Ready) {
    let mut background = JoinSet::new();
    background.spawn({
        let queue = queue.clone();
        async move { queue.run_timers().await }
    });
    let (changes, fed) = until_listed(state.cache.subscribe());
    background.spawn(feed_from_cache(changes, queue.clone(), state.clone()));
    for trigger in triggers {
        let queue = queue.clone();
        let cache = state.cache.clone();
        background.spawn(trigger.for_each(move |r| {
            queue.add(queue_key(&cache, r));
            std::future::ready(())
        }));
    }
    (background, fed)
}

/// Hands each object the queue releases to a pass, as workers, the reconcile rate and the
/// queue allow, until `shutdown` resolves. Returns the passes still running. Passes run as
/// tasks of this set, so that stopping can abandon the ones still running past the shutdown
/// bound instead of leaving them to act on the world.
async fn dispatch<R: Reconciler>(
    state: &Arc<ControllerState<R>>,
    queue: &Arc<WorkQueue<QueueKey<R::Resource>>>,
    workers: usize,
    mut shutdown: Pin<&mut (impl Future<Output = ()> + Send)>,
) -> JoinSet<()> {
    let config = &state.config;
    let bucket = TokenBucket::new(config.reconcile_rate, config.reconcile_burst);
    // The initial list is admitted as fast as the bucket lets passes start: no faster, so the
    // queue stays within the burst; no slower, so no pass waits for the sweep.
    queue.start(match &bucket {
        Some(_) => usize::try_from(config.reconcile_burst).unwrap_or(usize::MAX),
        None => usize::MAX,
    });
    let semaphore = Arc::new(Semaphore::new(workers));
    let room = Arc::new(WaitingRoom::new(
        usize::try_from(config.max_parked_reconciles).unwrap_or(usize::MAX),
    ));
    let mut running = JoinSet::new();
    loop {
        while running.try_join_next().is_some() {}
        // A worker is taken only once there is work for it: one held while the queue is empty
        // would be missing to every pass that gave its worker back and waits to take one again,
        // and with a single worker those passes would wait for ever.
        tokio::select! {
            () = queue.wait_ready() => {}
            () = &mut shutdown => break,
        }
        let permit = tokio::select! {
            permit = semaphore.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        // MaxOf(per-object backoff, global bucket): the backoff already delayed the item's
        // entry into the queue; the bucket now delays its start.
        if let Some(bucket) = &bucket {
            let at = bucket.reserve();
            tokio::select! {
                () = tokio::time::sleep_until(at) => {}
                () = &mut shutdown => break,
            }
        }
        let Some(obj_ref) = queue.pop() else {
            continue;
        };
        let requeue: Requeue = {
            let queue = queue.clone();
            let obj_ref = obj_ref.clone();
            Box::new(move || queue.add(obj_ref))
        };
        let worker = Worker::new(
            semaphore.clone(),
            room.clone(),
            permit,
            obj_ref.namespace.clone(),
            requeue,
        );
        running.spawn(run_pass(state.clone(), queue.clone(), obj_ref, worker));
    }
    running
}

/// One pass over `obj_ref`, then its next schedule; a panicking pass counts as a failed one.
async fn run_pass<R: Reconciler>(
    state: Arc<ControllerState<R>>,
    queue: Arc<WorkQueue<QueueKey<R::Resource>>>,
    obj_ref: QueueKey<R::Resource>,
    worker: Worker,
) {
    // The worker is held until the pass is scheduled again, not only while it runs.
    let _held = worker.clone();
    let next = AssertUnwindSafe(state.reconcile(&obj_ref, worker))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            tracing::error!(controller = state.name, object = %obj_ref, "reconcile panicked");
            state.metrics.reconcile_total(state.name, "error").inc();
            state.metrics.reconcile_errors_total(state.name).inc();
            Next::Backoff
        });
    let delay = queue.finish(obj_ref.clone(), next);
    tracing::debug!(controller = state.name, object = %obj_ref, ?next, ?delay, "scheduled");
}

/// An object's place in the work queue. Shared rather than cloned: an object sits in up to four
/// of the queue's maps at once (queued, due, a timer, processing), and at tens of thousands of
/// objects a full reference per place was most of the queue's memory. Without
/// [`ObjectRef::extra`] (resourceVersion, uid), which identity ignores anyway.
type QueueKey<K> = SharedRef<K>;

/// The cache's own reference to the object, or (not cached: gone, or not seen yet) a lean copy.
fn queue_key<K: Object>(cache: &SharedCache<K>, mut obj_ref: ObjectRef<K>) -> QueueKey<K> {
    cache.store().shared_ref(&obj_ref).unwrap_or_else(|| {
        obj_ref.extra = ObjectRefExtra::default();
        Arc::new(obj_ref)
    })
}

/// Turns cache changes into queue adds, skipping updates that only touched the status: the
/// engine's own status writes must not trigger another reconcile, or every write would cost a
/// second pass (and a failing object would skip its backoff).
async fn feed_from_cache<R: Reconciler>(
    changes: impl futures::Stream<Item = Change<R::Resource>>,
    queue: Arc<WorkQueue<QueueKey<R::Resource>>>,
    state: Arc<ControllerState<R>>,
) {
    let mut changes = std::pin::pin!(changes);
    while let Some(change) = changes.next().await {
        match change {
            Change::Applied(_) | Change::Present(_) => {
                let Some(obj) = state.cache.object_of(&change) else {
                    continue;
                };
                let r = lean_ref(&*obj);
                state
                    .memory
                    .observed(&r, obj.meta().resource_version.as_deref());
                if state.memory.saw(&r, fingerprint(&*obj)) {
                    tracing::debug!(object = %r, "the object changed");
                    match change {
                        Change::Present(key) => queue.sweep_in(key),
                        _ => queue.add(queue_key(&state.cache, r)),
                    }
                }
            }
            // Taken out by `until_listed`.
            Change::Listed => {}
            Change::Deleted(obj) => {
                let r = lean_ref(&*obj);
                state.memory.unsee(&r);
                queue.forget(&r);
                state.memory.forget(&r);
                state.reconciler.forget(&obj);
            }
        }
    }
}

/// Which created or updated children wake their owner ([`Registration::owns_when`]); a child's
/// deletion always does.
///
/// [`Registration::owns_when`]: crate::Registration::owns_when
pub(crate) type WakesOwner<C> = Arc<dyn Fn(&C) -> bool + Send + Sync>;

/// Every change of a child wakes its owner.
pub(crate) fn wakes_always<C>() -> WakesOwner<C> {
    Arc::new(|_| true)
}

/// The owners (of kind `P`, cached in `parents`) to reconcile whenever an object in `children`
/// changes in a way `wakes` says matters to its owner, and when the children's initial list
/// has been handled that way.
pub(crate) fn owner_triggers<P: Object, C: Object>(
    children: &SharedCache<C>,
    parents: &SharedCache<P>,
    own_writes: Option<OwnWrites>,
    wakes: WakesOwner<C>,
) -> (Trigger<P>, Ready) {
    let parents = parents.clone();
    let (changes, listed) = until_listed(children.subscribe());
    let children = children.clone();
    let owners = changes
        .then(move |change| {
            let parents = parents.clone();
            let children = children.clone();
            let own_writes = own_writes.clone();
            let wakes = wakes.clone();
            async move {
                owners_to_reconcile::<P, C>(
                    &change,
                    &children,
                    &parents,
                    own_writes.as_ref(),
                    wakes.as_ref(),
                )
                .await
            }
        })
        .flat_map(futures::stream::iter);
    (owners.boxed(), listed)
}

/// The owners a child's change reconciles: none when the change is the reconciler's own write,
/// or one `wakes` says its owner has no use for.
async fn owners_to_reconcile<P: Object, C: Object>(
    change: &Change<C>,
    children: &SharedCache<C>,
    parents: &SharedCache<P>,
    own_writes: Option<&OwnWrites>,
    wakes: &(dyn Fn(&C) -> bool + Send + Sync),
) -> Vec<ObjectRef<P>> {
    let Some(child) = children.object_of(change) else {
        return Vec::new();
    };
    let deleted = matches!(change, Change::Deleted(_));
    if let Some(w) = own_writes {
        if deleted {
            w.forget(&*child);
        } else if w.is_own(&*child).await {
            return Vec::new();
        }
    }
    if !deleted && !wakes(&*child) {
        return Vec::new();
    }
    let owners = owner_refs::<P, C>(&*child, parents);
    if !owners.is_empty() {
        tracing::debug!(
            kind = %C::kind(&()),
            name = %child.name_any(),
            "an owned object changed"
        );
    }
    owners
}

pub(crate) fn owner_refs<P: Object, C: Resource>(
    child: &C,
    parents: &SharedCache<P>,
) -> Vec<ObjectRef<P>> {
    let kind = P::kind(&());
    let api_version = P::api_version(&());
    child
        .owner_references()
        .iter()
        .filter(|o| o.kind == kind && o.api_version == api_version)
        .map(|o| {
            // The scope of P is not known at run time: prefer the child's namespace, fall back
            // to cluster scope when that is where the parent is cached.
            let namespaced = match child.namespace() {
                Some(ns) => ObjectRef::new(&o.name).within(&ns),
                None => ObjectRef::new(&o.name),
            };
            if !parents.contains(&namespaced) {
                let cluster = ObjectRef::new(&o.name);
                if parents.contains(&cluster) {
                    return cluster;
                }
            }
            namespaced
        })
        .collect()
}
