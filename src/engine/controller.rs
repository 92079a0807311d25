//! Controller wiring: triggers → work queue → bounded workers → reconcile → status, Events,
//! metrics, next schedule.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::fmt::Debug;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::core::object::HasStatus;
use kube::runtime::events::{Event, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use tracing::Instrument;

use super::cache::{Change, SharedCache};
use super::conditions::compute_conditions;
use super::config::EngineConfig;
use super::error::{ErrorCategory, StepError};
use super::events::plan_events;
use super::inflight::InFlight;
use super::metrics::Metrics;
use super::queue::{Next, QueueMetrics, WorkQueue};
use super::requeue::{Backoff, TokenBucket, jittered};
use super::status::{ConditionedStatus, patch_status, status_patch};
use super::step::{Halt, StepRunner, Summary};

/// A Kubernetes kind the engine can reconcile: a typed resource whose status implements
/// [`ConditionedStatus`]. Implemented automatically for every `#[derive(CustomResource)]` type
/// with such a status.
pub trait EngineResource:
    Resource<DynamicType = ()>
    + HasStatus<Status: ConditionedStatus>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> EngineResource for K where
    K: Resource<DynamicType = ()>
        + HasStatus<Status: ConditionedStatus>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// The status type of `K`.
pub type StatusOf<K> = <K as HasStatus>::Status;

/// What a controller does for one object. See the [module documentation](super) for an example.
///
/// `reconcile` runs its steps through `steps` and may set the non-condition fields of `status`
/// (which starts as a copy of the object's current status). The engine then computes the
/// conditions, writes the status if — and only if — it changed, emits Events and schedules the
/// next look. A reconcile must be safe to run at any time, also after a crash half-way: every
/// step observes before it acts.
pub trait Reconciler: Send + Sync + 'static {
    /// The kind reconciled.
    type Resource: EngineResource;

    /// Reconciles `obj`. Return the [`Halt`] of a failed or waiting step with `?`.
    fn reconcile(
        &self,
        obj: &Self::Resource,
        status: &mut StatusOf<Self::Resource>,
        steps: &mut StepRunner,
    ) -> impl Future<Output = Result<(), Halt>> + Send;
}

/// Runs a [`Reconciler`] for every object of its kind.
pub struct Controller<R: Reconciler> {
    name: &'static str,
    reconciler: Arc<R>,
    cache: SharedCache<R::Resource>,
    client: Client,
    config: EngineConfig,
    metrics: Arc<Metrics>,
    triggers: Vec<BoxStream<'static, ObjectRef<R::Resource>>>,
    in_flight: InFlight,
}

impl<R: Reconciler> Controller<R> {
    /// A controller named `name` (the `controller` label of its metrics, its queue's `name` and
    /// its Events' reporting controller) reconciling the objects of `cache`.
    ///
    /// `client` is used for status writes and Events; build it with
    /// [`build_client`](super::build_client) so those count against the client rate limit.
    pub fn new(
        name: &'static str,
        reconciler: R,
        cache: &SharedCache<R::Resource>,
        client: Client,
        config: EngineConfig,
        metrics: Arc<Metrics>,
    ) -> Self {
        Controller {
            name,
            reconciler: Arc::new(reconciler),
            cache: cache.clone(),
            client,
            config,
            metrics,
            triggers: Vec::new(),
            in_flight: InFlight::default(),
        }
    }

    /// The reconciles of this controller running at a given moment, for a liveness check.
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.clone()
    }

    /// Also reconcile the owner (of this controller's kind) whenever an object in `children`
    /// changes — how a parent learns that a child became ready.
    pub fn owns<C>(mut self, children: &SharedCache<C>) -> Self
    where
        C: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    {
        let parents = self.cache.clone();
        let rx = children.subscribe();
        let stream = receiver_stream(rx).flat_map(move |change| {
            let child = match &change {
                Change::Applied(c) | Change::Deleted(c) => c.clone(),
            };
            let refs = owner_refs::<R::Resource, C>(&child, &parents);
            futures::stream::iter(refs)
        });
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
            metrics,
            triggers,
            in_flight,
        } = self;
        let workers = usize::from(config.max_concurrent_reconciles.max(1));
        metrics
            .max_concurrent_reconciles(name)
            .set(i64::try_from(workers).unwrap_or(i64::MAX));

        let queue = Arc::new(WorkQueue::new(
            Backoff::new(config.backoff_base, config.backoff_max),
            QueueMetrics {
                depth: metrics.workqueue_depth(name),
                adds: metrics.workqueue_adds_total(name),
                retries: metrics.workqueue_retries_total(name),
            },
        ));
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: format!("ontap.storage.dev/{name}"),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        let shared = Arc::new(Shared {
            name,
            reconciler,
            cache: cache.clone(),
            client,
            config: config.clone(),
            metrics: metrics.clone(),
            recorder,
            in_flight,
        });

        let mut background = tokio::task::JoinSet::new();
        background.spawn({
            let queue = queue.clone();
            async move { queue.run_timers().await }
        });
        background.spawn(feed_from_cache(cache.subscribe(), queue.clone()));
        for trigger in triggers {
            let queue = queue.clone();
            background.spawn(trigger.for_each(move |r| {
                queue.add(r);
                std::future::ready(())
            }));
        }

        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            () = cache.wait_until_ready() => {}
            () = &mut shutdown => return,
        }
        tracing::info!(controller = name, workers, "controller started");

        let bucket = TokenBucket::new(config.reconcile_rate, config.reconcile_burst);
        let semaphore = Arc::new(Semaphore::new(workers));
        loop {
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
            tokio::spawn(async move {
                let next = AssertUnwindSafe(shared.reconcile(&obj_ref))
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
                drop(permit);
            });
        }

        tracing::info!(
            controller = name,
            "controller stopping; waiting for running reconciles"
        );
        background.abort_all();
        let all = u32::try_from(workers).unwrap_or(u32::MAX);
        let _ = semaphore.acquire_many(all).await;
    }
}

struct Shared<R: Reconciler> {
    name: &'static str,
    reconciler: Arc<R>,
    cache: SharedCache<R::Resource>,
    client: Client,
    config: EngineConfig,
    metrics: Arc<Metrics>,
    recorder: Recorder,
    in_flight: InFlight,
}

impl<R: Reconciler> Shared<R> {
    async fn reconcile(&self, obj_ref: &ObjectRef<R::Resource>) -> Next {
        let Some(obj) = self.cache.get(obj_ref) else {
            return Next::Forget;
        };
        let span = tracing::info_span!(
            "reconcile",
            controller = self.name,
            object = %obj_ref,
            trace_id = tracing::field::Empty
        );
        crate::runtime::telemetry::record_trace_id(&span);
        let _running = self.in_flight.start();
        // A guard, so that a panicking reconcile does not leave the gauge counting it forever.
        let _active = ActiveWorker::enter(self.metrics.active_workers(self.name));
        let start = Instant::now();
        let next = self.reconcile_object(&obj).instrument(span).await;
        self.metrics
            .observe_reconcile_time(self.name, start.elapsed());
        next
    }

    async fn reconcile_object(&self, obj: &R::Resource) -> Next {
        let current = obj.status();
        let before = current.cloned().unwrap_or_default();
        let mut status = before.clone();
        let mut steps = StepRunner::with_metrics(self.name, self.metrics.clone());
        // The runner has recorded why it halted; the records, not this value, drive what follows.
        let _ = self
            .reconciler
            .reconcile(obj, &mut status, &mut steps)
            .await;

        let generation = obj.meta().generation;
        let now = Time(Timestamp::now());
        status.set_conditions(compute_conditions(
            before.conditions(),
            steps.records(),
            generation,
            &now,
        ));
        status.set_observed_generation(generation);

        let mut summary = steps.summary();
        match status_patch(current, &status) {
            Ok(None) => {}
            Ok(Some(patch)) => {
                if let Err(err) = patch_status(&self.client, obj, &patch, self.name).await {
                    // The reconcile itself may have ended the object's life (its last finalizer
                    // removed): nothing is left to write to or to look at again.
                    if matches!(&err, kube::Error::Api(status) if status.code == 404) {
                        tracing::debug!("object gone before its status could be written");
                        self.metrics.reconcile_total(self.name, "success").inc();
                        return Next::Forget;
                    }
                    let err = StepError::from_kube("StatusWriteFailed", err);
                    tracing::warn!(error = %err, "writing status failed");
                    summary = Summary::Failed {
                        step: "Status",
                        category: err.category(),
                    };
                }
            }
            Err(err) => {
                tracing::error!(error = %err, "status does not serialize");
                summary = Summary::Failed {
                    step: "Status",
                    category: ErrorCategory::Transient,
                };
            }
        }

        for planned in plan_events(before.conditions(), steps.records()) {
            let event = Event {
                type_: planned.type_,
                reason: planned.reason,
                note: Some(truncate(planned.note, 1000)),
                action: planned.action,
                secondary: None,
            };
            if let Err(err) = self.recorder.publish(&event, &obj.object_ref(&())).await {
                tracing::warn!(error = %err, "publishing Event failed");
            }
        }

        let sync = jittered(self.config.sync_period, self.config.sync_jitter);
        let (result, next) = match &summary {
            Summary::Done { .. } => ("success", Next::After(sync)),
            Summary::Waiting { wait, .. } => ("requeue_after", Next::After(wait.after.min(sync))),
            Summary::Failed { category, .. } => (
                "error",
                match category {
                    ErrorCategory::Transient => Next::Backoff,
                    ErrorCategory::Conflict => Next::Retry(self.config.conflict_delay),
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

/// Turns cache changes into queue adds, skipping updates that only touched the status: the
/// engine's own status writes must not trigger another reconcile, or every write would cost a
/// second pass (and a failing object would skip its backoff).
async fn feed_from_cache<K>(
    rx: mpsc::UnboundedReceiver<Change<K>>,
    queue: Arc<WorkQueue<ObjectRef<K>>>,
) where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    let mut seen: HashMap<ObjectRef<K>, u64> = HashMap::new();
    let mut changes = std::pin::pin!(receiver_stream(rx));
    while let Some(change) = changes.next().await {
        match change {
            Change::Applied(obj) => {
                let r = ObjectRef::from_obj(&*obj);
                let fp = fingerprint(&*obj);
                if seen.insert(r.clone(), fp) != Some(fp) {
                    queue.add(r);
                }
            }
            Change::Deleted(obj) => {
                let r = ObjectRef::from_obj(&*obj);
                seen.remove(&r);
                queue.forget(&r);
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

fn owner_refs<P, C>(child: &C, parents: &SharedCache<P>) -> Vec<ObjectRef<P>>
where
    P: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    C: Resource<DynamicType = ()>,
{
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

fn receiver_stream<T: Send + 'static>(
    rx: mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
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

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("äää".into(), 3), "ä");
        assert_eq!(truncate("abc".into(), 10), "abc");
    }
}
