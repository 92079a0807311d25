//! Controller wiring: triggers → work queue → bounded workers → lifecycle (finalizer, reconcile or
//! cleanup) → status, Events, metrics, next schedule.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::core::object::HasStatus;
use kube::runtime::events::{Event, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, ObjectRefExtra};
use kube::{Client, Resource, ResourceExt};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::Instrument;

use super::cache::{Change, SharedCache, SharedRef, lean_ref, until_listed};
use super::conditions::{FALSE, READY, compute_conditions, transition};
use super::config::{EngineConfig, Identity};
use super::error::{ErrorCategory, StepError};
use super::events::{EventMemory, plan_events, plan_own_events};
use super::inflight::InFlight;
use super::lifecycle::{self, FinalizerState};
use super::metrics::Metrics;
use super::queue::{Next, QueueMetrics, WorkQueue};
use super::requeue::{Backoff, TokenBucket, jittered};
use super::status::{ConditionedStatus, Halted, StatusWrite, patch_status, status_patch};
use super::step::{StepRecord, StepRunner, StepState, Summary};
use super::text::bounded;
use super::worker::Worker;

pub use super::object::{EngineResource, Object, StatusOf};
pub use super::reconciler::{Lifecycle, Reconciler};

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
    triggers: Vec<BoxStream<'static, ObjectRef<R::Resource>>>,
    /// The other caches this controller reads, which must hold their initial lists before the
    /// first reconcile: a parent that looked at an empty child cache would create every child
    /// again (or report them all missing).
    waits: Vec<BoxFuture<'static, ()>>,
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

    /// Also reconcile the owner (of this controller's kind) whenever an object in `children`
    /// changes — how a parent learns that a child became ready.
    pub fn owns<C: Object>(mut self, children: &SharedCache<C>) -> Self {
        let parents = self.cache.clone();
        let (changes, listed) = until_listed(children.subscribe());
        self.waits.push(listed);
        let own_writes = self.reconciler.own_writes();
        let children = children.clone();
        let stream = changes
            .then(move |change| {
                let parents = parents.clone();
                let children = children.clone();
                let own_writes = own_writes.clone();
                async move {
                    owners_to_reconcile::<R::Resource, C>(
                        &change,
                        &children,
                        &parents,
                        own_writes.as_ref(),
                    )
                    .await
                }
            })
            .flat_map(futures::stream::iter);
        self.triggers.push(stream.boxed());
        self
    }

    /// Also reconcile the objects this stream names (for relations `owns` does not cover).
    pub fn triggers(
        mut self,
        stream: impl futures::Stream<Item = ObjectRef<R::Resource>> + Send + 'static,
    ) -> Self {
        self.triggers.push(stream.boxed());
        self
    }

    /// Runs until `shutdown` resolves, then lets running reconciles finish.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
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
        let workers = usize::from(config.max_concurrent_reconciles.max(1));
        metrics
            .max_concurrent_reconciles(name)
            .set(i64::try_from(workers).unwrap_or(i64::MAX));

        let queue = Arc::new(WorkQueue::new(
            Backoff::new(config.backoff_base, config.backoff_max),
            QueueMetrics::of(&metrics, name),
        ));
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: format!("{}/{name}", identity.reporter_domain),
                instance: identity.instance.clone(),
            },
        );
        let shared = Arc::new(Shared {
            name,
            reconciler,
            cache: cache.clone(),
            client,
            config: config.clone(),
            identity,
            metrics: metrics.clone(),
            recorder,
            in_flight,
            written: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            released: Mutex::new(HashMap::new()),
            event_memory: Mutex::new(HashMap::new()),
        });

        let mut background = tokio::task::JoinSet::new();
        background.spawn({
            let queue = queue.clone();
            async move { queue.run_timers().await }
        });
        // Workers start once every feed has queued its initial list: an object picked before a
        // late feed queued it too would be passed over twice.
        let (changes, fed) = until_listed(cache.subscribe());
        background.spawn(feed_from_cache(changes, queue.clone(), shared.clone()));
        for trigger in triggers {
            let queue = queue.clone();
            let cache = cache.clone();
            background.spawn(trigger.for_each(move |r| {
                queue.add(queue_key(&cache, r));
                std::future::ready(())
            }));
        }

        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            _ = futures::future::join(fed, futures::future::join_all(waits)) => {}
            () = &mut shutdown => return,
        }
        tracing::info!(controller = name, workers, "controller started");

        let bucket = TokenBucket::new(config.reconcile_rate, config.reconcile_burst);
        let semaphore = Arc::new(Semaphore::new(workers));
        let parked = Arc::new(Semaphore::new(
            usize::try_from(config.max_parked_reconciles).unwrap_or(usize::MAX),
        ));
        // Reconciles run as tasks of this set, so that stopping can abandon the ones still
        // running past the shutdown bound instead of leaving them to act on the world.
        let mut running = tokio::task::JoinSet::new();
        loop {
            while running.try_join_next().is_some() {}
            let permit = tokio::select! {
                permit = semaphore.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                () = &mut shutdown => break,
            };
            tokio::select! {
                () = queue.wait_ready() => {}
                () = &mut shutdown => break,
            }
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
            let shared = shared.clone();
            let queue = queue.clone();
            let worker = Worker::new(semaphore.clone(), parked.clone(), permit);
            running.spawn(async move {
                // The worker is held until the pass is scheduled again, not only while it runs.
                let _held = worker.clone();
                let next = AssertUnwindSafe(shared.reconcile(&obj_ref, worker))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        tracing::error!(controller = shared.name, object = %obj_ref, "reconcile panicked");
                        shared.metrics.reconcile_total(shared.name, "error").inc();
                        shared.metrics.reconcile_errors_total(shared.name).inc();
                        Next::Backoff
                    });
                let delay = queue.finish(obj_ref.clone(), next);
                tracing::debug!(controller = shared.name, object = %obj_ref, ?next, ?delay, "scheduled");
            });
        }

        tracing::info!(
            controller = name,
            "controller stopping; waiting for running reconciles"
        );
        background.abort_all();
        while running.join_next().await.is_some() {}
    }
}

/// What the engine last wrote to an object's status: until the cache shows the object at
/// `to`, the cache's status may be older than the API server's. Dropped as soon as the cache
/// has caught up, so it exists only for objects with a write in flight.
struct Written<S> {
    /// The resourceVersion the write produced.
    to: String,
    /// The status as written.
    status: S,
}

/// Per-object bookkeeping is keyed by a 64-bit hash of the object's namespace and name rather
/// than by its reference: 8 bytes instead of a reference with its strings, for every one of
/// tens of thousands of objects. A collision of two live objects' hashes (about 1 in 10^11 at
/// 76,000 objects) costs a missed status-only shortcut, not a wrong write: the write path
/// compares resourceVersions.
type Key = u64;

fn key_of<K: Resource<DynamicType = ()>>(obj_ref: &ObjectRef<K>) -> Key {
    let mut h = DefaultHasher::new();
    obj_ref.namespace.hash(&mut h);
    obj_ref.name.hash(&mut h);
    h.finish()
}

/// Whether a cache that shows `seen` has not yet caught up with a write that produced `to`.
/// resourceVersions are opaque by contract; every API server in use derives them from etcd's
/// revision, a number, so a larger one proves the cache went past our write (another write
/// followed it). Unparsable versions only count as caught up when equal.
fn lags(to: &str, seen: Option<&str>) -> bool {
    let Some(seen) = seen else {
        return true;
    };
    if seen == to {
        return false;
    }
    match (to.parse::<u64>(), seen.parse::<u64>()) {
        (Ok(to), Ok(seen)) => seen < to,
        _ => true,
    }
}

struct Shared<R: Reconciler> {
    name: &'static str,
    reconciler: Arc<R>,
    cache: SharedCache<R::Resource>,
    client: Client,
    config: EngineConfig,
    identity: Identity,
    metrics: Arc<Metrics>,
    recorder: Recorder,
    in_flight: InFlight,
    written: Mutex<HashMap<Key, Written<StatusOf<R::Resource>>>>,
    /// The fingerprint of each object as last seen or written by this controller: a change
    /// that leaves it as it is (a status write, our own finalizer) triggers no reconcile.
    seen: Mutex<HashMap<Key, u64>>,
    /// The uid of each object whose cleanup completed and whose finalizer this controller
    /// removed, until the cache shows it gone. A trigger queued during that last pass (the
    /// deletion of a child it cleaned up, say) would otherwise run the cleanup once more on the
    /// cached copy that still carries the finalizer: every request of it for nothing, and a
    /// pass that only happens when the cache is slow.
    released: Mutex<HashMap<Key, String>>,
    /// For a reconciler that keeps no engine status: what its last pass reported, per object,
    /// so its Events are deduplicated like everyone else's.
    event_memory: Mutex<HashMap<Key, EventMemory>>,
}

/// What a pass works on besides the status it computes.
struct Pass<'a, K: Resource<DynamicType = ()> + HasStatus> {
    obj_ref: &'a ObjectRef<K>,
    obj: &'a K,
    before: &'a K::Status,
    resource_version: Option<String>,
    trace_id: Option<String>,
}

/// How a pass ended, for the requeue policy and the metrics.
enum PassEnd<S> {
    Steps(Summary<S>),
    /// The engine's own work (finalizer, status) failed.
    Engine(ErrorCategory),
    /// The object is gone, or going without us: nothing to look at again.
    Gone,
    /// The reconciler does not act on the object now ([`Reconciler::admits`]).
    NotAdmitted,
}

impl<R: Reconciler> Shared<R> {
    /// Records `fingerprint` for `obj_ref`; whether it differs from the one known before.
    fn saw(&self, obj_ref: &ObjectRef<R::Resource>, fingerprint: u64) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key_of(obj_ref), fingerprint)
            != Some(fingerprint)
    }

    fn unsee(&self, obj_ref: &ObjectRef<R::Resource>) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key_of(obj_ref));
        self.released
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key_of(obj_ref));
    }

    fn release(&self, obj_ref: &ObjectRef<R::Resource>, obj: &R::Resource) {
        if let Some(uid) = obj.uid() {
            self.released
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key_of(obj_ref), uid);
        }
    }

    /// Whether `obj` is a cached copy, from before our finalizer removal, of an object whose
    /// cleanup already completed: nobody else puts our finalizer back on the same object.
    fn already_released(&self, obj_ref: &ObjectRef<R::Resource>, obj: &R::Resource) -> bool {
        let released = self.released.lock().unwrap_or_else(PoisonError::into_inner);
        released
            .get(&key_of(obj_ref))
            .is_some_and(|uid| obj.meta().uid.as_ref() == Some(uid))
    }

    /// The cache shows the object at `resource_version`: our last write, if it has caught up
    /// with it, need not be remembered any longer.
    fn observed(&self, obj_ref: &ObjectRef<R::Resource>, resource_version: Option<&str>) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        let key = key_of(obj_ref);
        if written
            .get(&key)
            .is_some_and(|w| !lags(&w.to, resource_version))
        {
            written.remove(&key);
        }
    }

    /// The status the API server holds as far as we know: our own last write while the cache
    /// has not caught up with it, else the cached one. A pass that started from an older cached
    /// status would redo (and rewrite) what the previous pass did.
    fn current_status(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        obj: &R::Resource,
    ) -> StatusOf<R::Resource> {
        let written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match written.get(&key_of(obj_ref)) {
            Some(w) if lags(&w.to, obj.meta().resource_version.as_deref()) => w.status.clone(),
            _ => obj.status().cloned().unwrap_or_default(),
        }
    }

    async fn reconcile(&self, obj_ref: &ObjectRef<R::Resource>, worker: Worker) -> Next {
        let Some(obj) = self.cache.get(obj_ref) else {
            return Next::Forget;
        };
        let span = tracing::info_span!(
            "reconcile",
            controller = self.name,
            object = %obj_ref,
            trace_id = tracing::field::Empty
        );
        let trace_id = self.identity.trace_id(&span);
        worker.run_in(&self.in_flight);
        // A guard, so that a panicking reconcile does not leave the gauge counting it forever.
        let _active = ActiveWorker::enter(self.metrics.active_workers(self.name));
        let start = Instant::now();
        let next = self
            .reconcile_object(obj_ref, &obj, trace_id, worker)
            .instrument(span)
            .await;
        self.metrics
            .observe_reconcile_time(self.name, start.elapsed());
        next
    }

    async fn reconcile_object(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        obj: &R::Resource,
        trace_id: Option<String>,
        worker: Worker,
    ) -> Next {
        if !self.reconciler.admits(obj) {
            return self.end(PassEnd::NotAdmitted);
        }
        let before = self.current_status(obj_ref, obj);
        let mut status = before.clone();
        let mut steps = StepRunner::with_metrics(self.name, self.metrics.clone()).on_worker(worker);
        let mut resource_version = obj.resource_version();

        let finalizer = R::FINALIZER.map(|f| (f, lifecycle::finalizer_state(obj, f)));
        let lifecycle = match finalizer {
            Some((_, FinalizerState::Released)) => {
                // Being deleted, and our finalizer is gone: another controller's finalizer keeps
                // it; there is nothing left for us to do.
                self.forget(obj_ref);
                return self.end(PassEnd::Gone);
            }
            None if obj.meta().deletion_timestamp.is_some() => {
                self.forget(obj_ref);
                return self.end(PassEnd::Gone);
            }
            Some((_, FinalizerState::Deleting)) if self.already_released(obj_ref, obj) => {
                return self.end(PassEnd::Gone);
            }
            Some((_, FinalizerState::Deleting)) => Lifecycle::Deleting,
            Some((f, FinalizerState::Missing)) => {
                // Our own write must not cost a second pass when its event arrives, and the
                // event can arrive before the write's answer: the object as the write will leave
                // it is known beforehand.
                let mut expected = obj.clone();
                expected
                    .meta_mut()
                    .finalizers
                    .get_or_insert_with(Vec::new)
                    .push(f.to_owned());
                self.saw(obj_ref, fingerprint(&expected));
                match lifecycle::add_finalizer(&self.client, obj, f, self.name).await {
                    Ok(written) => {
                        self.saw(obj_ref, fingerprint(&written));
                        resource_version = written.resource_version();
                    }
                    Err(err) => {
                        self.saw(obj_ref, fingerprint(obj));
                        let pass = Pass {
                            obj_ref,
                            obj,
                            before: &before,
                            resource_version,
                            trace_id,
                        };
                        return self
                            .finalizer_failed(pass, status, Vec::new(), "FinalizerAddFailed", err)
                            .await;
                    }
                }
                Lifecycle::Live
            }
            Some((_, FinalizerState::Present)) | None => Lifecycle::Live,
        };

        // The runner has recorded why it halted; the records, not this value, drive what follows.
        let _ = match lifecycle {
            Lifecycle::Live => {
                self.reconciler
                    .reconcile(obj, &mut status, &mut steps)
                    .await
            }
            Lifecycle::Deleting => self.reconciler.cleanup(obj, &mut status, &mut steps).await,
        };
        let summary = steps.summary();
        self.reconciler.conclude(&mut status, lifecycle, &summary);

        if let (Lifecycle::Deleting, Summary::Done { .. }, Some((f, _))) =
            (lifecycle, &summary, finalizer)
        {
            match lifecycle::remove_finalizer(&self.client, obj, f, self.name).await {
                Ok(()) => {
                    self.publish_events(
                        obj_ref,
                        obj,
                        &before,
                        &[],
                        steps.records(),
                        trace_id.as_deref(),
                    )
                    .await;
                    // After the Events: they must not leave a memory of an object that is gone.
                    self.forget(obj_ref);
                    self.release(obj_ref, obj);
                    return self.end(PassEnd::Gone);
                }
                Err(err) => {
                    let pass = Pass {
                        obj_ref,
                        obj,
                        before: &before,
                        resource_version,
                        trace_id,
                    };
                    let records = steps.into_records();
                    return self
                        .finalizer_failed(pass, status, records, "FinalizerRemoveFailed", err)
                        .await;
                }
            }
        }

        let records = steps.into_records();
        let written = self
            .finish_status(
                obj_ref,
                obj,
                &before,
                status,
                &records,
                resource_version,
                trace_id,
            )
            .await;
        match written {
            StatusWrite::Gone => {
                self.forget(obj_ref);
                self.end(PassEnd::Gone)
            }
            StatusWrite::Failed(category) => self.end(PassEnd::Engine(category)),
            StatusWrite::Written | StatusWrite::Unchanged => self.end(PassEnd::Steps(summary)),
        }
    }

    /// Ends a pass whose finalizer write failed: the failure is recorded as the engine's own
    /// step after `records`, so that conditions and Events say what is stuck.
    async fn finalizer_failed(
        &self,
        pass: Pass<'_, R::Resource>,
        status: StatusOf<R::Resource>,
        mut records: Vec<StepRecord>,
        reason: &'static str,
        err: kube::Error,
    ) -> Next {
        let err = StepError::from_kube(reason, err);
        let category = err.category();
        records.push(StepRecord {
            name: lifecycle::FINALIZER_STEP,
            state: StepState::Failed(err),
            duration: std::time::Duration::ZERO,
        });
        self.finish_status(
            pass.obj_ref,
            pass.obj,
            pass.before,
            status,
            &records,
            pass.resource_version,
            pass.trace_id,
        )
        .await;
        self.end(PassEnd::Engine(category))
    }

    /// Computes conditions and the halt summary, writes the status if the API server's differs,
    /// and publishes the Events of this pass.
    #[allow(clippy::too_many_arguments)]
    async fn finish_status(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        obj: &R::Resource,
        before: &StatusOf<R::Resource>,
        mut status: StatusOf<R::Resource>,
        records: &[StepRecord],
        resource_version: Option<String>,
        trace_id: Option<String>,
    ) -> StatusWrite {
        if !R::MANAGES_STATUS {
            self.publish_events(obj_ref, obj, before, &[], records, trace_id.as_deref())
                .await;
            return StatusWrite::Unchanged;
        }
        let generation = obj.meta().generation;
        let now = Time(Timestamp::now());
        let mut conditions = compute_conditions(before.conditions(), records, generation, &now);
        conditions.retain(|c| !R::OWN_CONDITIONS.contains(&c.type_.as_str()));
        conditions.extend(
            status
                .conditions()
                .iter()
                .filter(|c| R::OWN_CONDITIONS.contains(&c.type_.as_str()))
                .cloned(),
        );
        status.set_conditions(conditions);
        status.set_observed_generation(generation);
        status.set_halted(Halted::after(before.halted(), records, trace_id.as_deref()));

        let result = self
            .write_status(obj_ref, obj, &status, resource_version)
            .await;
        if !matches!(result, StatusWrite::Gone) {
            self.publish_events(
                obj_ref,
                obj,
                before,
                status.conditions(),
                records,
                trace_id.as_deref(),
            )
            .await;
        }
        result
    }

    async fn write_status(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        obj: &R::Resource,
        status: &StatusOf<R::Resource>,
        resource_version: Option<String>,
    ) -> StatusWrite {
        let cached = match obj.status().map(serde_json::to_value).transpose() {
            Ok(v) => v.unwrap_or(Value::Null),
            Err(err) => {
                tracing::error!(error = %err, "status does not serialize");
                return StatusWrite::Failed(ErrorCategory::Transient);
            }
        };
        // Diff against what the API server holds: our own last write, until the cache has seen
        // it. A stale cache would otherwise hide that the server still holds an older pass's
        // status.
        let (baseline, base_version) = {
            let written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
            match written.get(&key_of(obj_ref)) {
                Some(w) if lags(&w.to, obj.meta().resource_version.as_deref()) => (
                    serde_json::to_value(&w.status).unwrap_or(Value::Null),
                    Some(w.to.clone()),
                ),
                _ => (cached, resource_version),
            }
        };
        let patch = match status_patch(&baseline, status) {
            Ok(None) => return StatusWrite::Unchanged,
            Ok(Some(patch)) => patch,
            Err(err) => {
                tracing::error!(error = %err, "status does not serialize");
                return StatusWrite::Failed(ErrorCategory::Transient);
            }
        };
        match patch_status(
            &self.client,
            obj,
            &patch,
            base_version.as_deref(),
            self.name,
        )
        .await
        {
            Ok(to) => {
                let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
                match to {
                    Some(to) => {
                        written.insert(
                            key_of(obj_ref),
                            Written {
                                to,
                                status: status.clone(),
                            },
                        );
                    }
                    None => {
                        written.remove(&key_of(obj_ref));
                    }
                }
                StatusWrite::Written
            }
            // The pass may itself have ended the object's life: nothing is left to write to.
            Err(kube::Error::Api(s)) if s.code == 404 => StatusWrite::Gone,
            Err(err) => {
                // Whatever we remembered writing is no longer known to be what the server holds.
                self.forget(obj_ref);
                let err = StepError::from_kube("StatusWriteFailed", err);
                tracing::warn!(error = %err, "writing status failed");
                if err.category() != ErrorCategory::Conflict {
                    self.write_minimal_status(obj, status, &err).await;
                }
                StatusWrite::Failed(err.category())
            }
        }
    }

    /// After a failed status write, the status the API server holds may still say
    /// `Ready=True` while this pass found otherwise (or could not even say what it found). A
    /// small write that only replaces the conditions with `Ready=False` keeps that claim from
    /// standing; the next pass writes the full status again.
    async fn write_minimal_status(
        &self,
        obj: &R::Resource,
        status: &StatusOf<R::Resource>,
        err: &StepError,
    ) {
        let ready = status
            .conditions()
            .iter()
            .find(|c| c.type_ == READY)
            .filter(|c| c.status == FALSE)
            .cloned()
            .unwrap_or_else(|| {
                transition(
                    status.conditions(),
                    READY,
                    FALSE,
                    "StatusWriteFailed".to_owned(),
                    bounded(err.message()),
                    obj.meta().generation,
                    &Time(Timestamp::now()),
                )
            });
        let minimal: Vec<Condition> = vec![Condition {
            message: bounded(&ready.message),
            ..ready
        }];
        let patch = serde_json::json!({ "status": { "conditions": minimal } });
        if let Err(err) = patch_status(&self.client, obj, &patch, None, self.name).await {
            tracing::warn!(error = %StepError::from_kube("StatusWriteFailed", err), "writing the minimal status failed too");
        }
    }

    /// Publishes the Events of this pass: what changed since the status `before` said, or,
    /// for a reconciler that keeps no engine status, since the pass it remembers.
    async fn publish_events(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        obj: &R::Resource,
        before: &StatusOf<R::Resource>,
        after: &[Condition],
        records: &[StepRecord],
        trace_id: Option<&str>,
    ) {
        let planned = if R::MANAGES_STATUS {
            plan_events(before.conditions(), before.halted(), records)
        } else {
            let mut memory = self
                .event_memory
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let entry = memory.entry(key_of(obj_ref)).or_default();
            let planned = entry.plan(records);
            *entry = entry.after(records, obj.meta().generation, &Time(Timestamp::now()));
            planned
        };
        let own = plan_own_events(before.conditions(), after, R::OWN_CONDITIONS);
        for planned in planned.into_iter().chain(own) {
            let note = match trace_id {
                Some(id) if planned.type_ == kube::runtime::events::EventType::Warning => {
                    format!("{} (trace {id})", planned.note)
                }
                _ => planned.note,
            };
            let event = Event {
                type_: planned.type_,
                reason: planned.reason,
                note: Some(bounded(&note)),
                action: planned.action,
                secondary: None,
            };
            if let Err(err) = self.recorder.publish(&event, &obj.object_ref(&())).await {
                tracing::warn!(error = %StepError::from_kube("EventFailed", err), "publishing Event failed");
            }
        }
    }

    fn forget(&self, obj_ref: &ObjectRef<R::Resource>) {
        self.written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key_of(obj_ref));
        self.event_memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key_of(obj_ref));
    }

    fn end(&self, end: PassEnd<R::Step>) -> Next {
        let sync = jittered(self.config.sync_period, self.config.sync_jitter);
        let (result, next) = match end {
            PassEnd::Gone | PassEnd::NotAdmitted => ("success", Next::Forget),
            PassEnd::Steps(Summary::Done { .. }) => ("success", Next::After(sync)),
            PassEnd::Steps(Summary::Waiting { wait, .. }) => {
                ("requeue_after", Next::After(wait.after.min(sync)))
            }
            PassEnd::Steps(Summary::Failed {
                category: ErrorCategory::Invalid,
                rejected: true,
                ..
            }) => (
                "error",
                Next::Rejected {
                    cap: sync.min(self.config.backoff_max),
                },
            ),
            PassEnd::Steps(Summary::Failed { category, .. }) | PassEnd::Engine(category) => (
                "error",
                match category {
                    // A conflict usually clears on the next try, but one that does not must not
                    // become a request storm: it backs off like any other failure.
                    ErrorCategory::Transient | ErrorCategory::Conflict => Next::Backoff,
                    // Retrying cannot fix the spec; the spec's next change triggers a reconcile,
                    // the sync period covers the rest.
                    ErrorCategory::Invalid => Next::After(sync),
                },
            ),
        };
        self.metrics.reconcile_total(self.name, result).inc();
        if result == "error" {
            self.metrics.reconcile_errors_total(self.name).inc();
        }
        next
    }
}

struct ActiveWorker(prometheus_client::metrics::gauge::Gauge);

impl ActiveWorker {
    fn enter(gauge: prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        ActiveWorker(gauge)
    }
}

impl Drop for ActiveWorker {
    fn drop(&mut self) {
        self.0.dec();
    }
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
    shared: Arc<Shared<R>>,
) {
    let mut changes = std::pin::pin!(changes);
    while let Some(change) = changes.next().await {
        match change {
            Change::Applied(_) | Change::Present(_) => {
                let Some(obj) = change.object(&shared.cache) else {
                    continue;
                };
                let r = lean_ref(&*obj);
                shared.observed(&r, obj.meta().resource_version.as_deref());
                if shared.saw(&r, fingerprint(&*obj)) {
                    tracing::debug!(object = %r, "the object changed");
                    let key = match change {
                        Change::Present(key) => key,
                        _ => queue_key(&shared.cache, r),
                    };
                    queue.add(key);
                }
            }
            // Taken out by `until_listed`.
            Change::Listed => {}
            Change::Deleted(obj) => {
                let r = lean_ref(&*obj);
                shared.unsee(&r);
                queue.forget(&r);
                shared.forget(&r);
                shared.reconciler.forget(&obj);
            }
        }
    }
}

/// What, besides the spec (via `generation`), a reconcile may depend on. Objects without a
/// generation fall back to the resourceVersion, i.e. every change counts.
fn fingerprint<K: Resource>(obj: &K) -> u64 {
    let meta = obj.meta();
    let mut h = DefaultHasher::new();
    meta.uid.hash(&mut h);
    match meta.generation {
        Some(g) => g.hash(&mut h),
        None => meta.resource_version.hash(&mut h),
    }
    meta.labels.hash(&mut h);
    meta.annotations.hash(&mut h);
    meta.finalizers.hash(&mut h);
    meta.deletion_timestamp.is_some().hash(&mut h);
    h.finish()
}

/// The owners a child's change reconciles: none when the change is the reconciler's own write.
pub(crate) async fn owners_to_reconcile<P: Object, C: Object>(
    change: &Change<C>,
    children: &SharedCache<C>,
    parents: &SharedCache<P>,
    own_writes: Option<&crate::OwnWrites>,
) -> Vec<ObjectRef<P>> {
    let Some(child) = change.object(children) else {
        return Vec::new();
    };
    if let Some(w) = own_writes {
        if matches!(change, Change::Deleted(_)) {
            w.forget(&*child);
        } else if w.is_own(&*child).await {
            return Vec::new();
        }
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
            if parents.get(&namespaced).is_none() {
                let cluster = ObjectRef::new(&o.name);
                if parents.get(&cluster).is_some() {
                    return cluster;
                }
            }
            namespaced
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(generation: Option<i64>, rv: &str, labels: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                generation,
                resource_version: Some(rv.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_write_is_remembered_until_the_cache_shows_it_or_a_later_version() {
        assert!(lags("10", None));
        assert!(lags("10", Some("9")), "older cache");
        assert!(!lags("10", Some("10")), "caught up");
        assert!(!lags("10", Some("11")), "went past our write");
        assert!(
            lags("abc", Some("abd")),
            "opaque versions count only when equal"
        );
        assert!(!lags("abc", Some("abc")));
    }

    #[test]
    fn status_only_updates_do_not_change_the_fingerprint() {
        // Same generation, new resourceVersion: a status write.
        assert_eq!(
            fingerprint(&cm(Some(1), "10", &[])),
            fingerprint(&cm(Some(1), "11", &[]))
        );
        assert_ne!(
            fingerprint(&cm(Some(1), "10", &[])),
            fingerprint(&cm(Some(2), "11", &[]))
        );
        assert_ne!(
            fingerprint(&cm(Some(1), "10", &[])),
            fingerprint(&cm(Some(1), "11", &[("l", "v")]))
        );
        assert_ne!(
            fingerprint(&cm(None, "10", &[])),
            fingerprint(&cm(None, "11", &[]))
        );
    }
}
