//! One pass over one object: lifecycle (finalizer, then `reconcile` or `cleanup`) → status,
//! Events and metrics → when to look again.
//!
//! The parts, each building only on those before it: `memory` (what the controller remembers of
//! each object between passes), `controller_state` (what every pass shares, and what one pass
//! works on),
//! `write` (the status write and the Events that close a pass), and this file (the pipeline of
//! a pass and how it ends).

mod controller_state;
mod memory;
mod write;

use kube::core::object::HasStatus;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use tokio::time::Instant;
use tracing::Instrument;

use crate::error::{ErrorCategory, StepError};
use crate::lifecycle::{self, FinalizerState};
use crate::object::StatusOf;
use crate::queue::Next;
use crate::reconciler::{Lifecycle, Reconciler};
use crate::remote::{Jobs, SystemSlots};
use crate::requeue::jittered;
use crate::status::StatusWrite;
use crate::step::{StepRecord, StepRunner, StepState, Summary};
use crate::worker::{HeldSlot, Worker};

pub(crate) use controller_state::ControllerState;
use controller_state::Pass;
use memory::Written;
pub(crate) use memory::{Memory, fingerprint};

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

/// An object read for a pass.
struct Read<K: Resource + HasStatus> {
    obj: std::sync::Arc<K>,
    /// Our last status write, which the object as read does not show yet.
    unconfirmed: Option<Written<K::Status>>,
}

/// Our finalizer (if the reconciler has one) and where the object stands with it.
type Finalizer = Option<(&'static str, FinalizerState)>;

impl<R: Reconciler> ControllerState<R> {
    /// Runs one pass over the object at `obj_ref` on `worker`; when to look at it again.
    pub(crate) async fn reconcile(&self, obj_ref: &ObjectRef<R::Resource>, worker: Worker) -> Next {
        let Some(read) = self.read(obj_ref) else {
            return Next::Forget;
        };
        let Some(system) = self.reconciler.remote_system(&read.obj) else {
            return Box::pin(self.run(obj_ref, read, worker, None)).await;
        };
        let system = self.remote_systems.of(&system);
        let awaiting = Counted::enter(self.metrics.reconciles_awaiting_slot(self.name));
        let slot = worker
            .park_in(&system.pass_room, system.passes.clone().acquire_owned())
            .await;
        drop(awaiting);
        // No seat: the object waits in the system's line, queued again as a seat or a slot
        // comes free; the timer is a net should that never happen.
        let Some(slot) = slot else {
            return Next::Deferred(self.config.sync_period);
        };
        // Closed never: the engine keeps every system's slots for the controller's life.
        let _slot = slot
            .ok()
            .map(|permit| HeldSlot::new(permit, system.pass_room.clone()));
        // The wait may have been long: the pass works on the object as it is now.
        let Some(read) = self.read(obj_ref) else {
            return Next::Forget;
        };
        // Boxed: passes waiting for a slot above are tasks the size of this future, which
        // without the box would be the size of the deepest reconcile.
        Box::pin(self.run(obj_ref, read, worker, Some(system))).await
    }

    /// The object as the cache holds it, with our last status write that it does not show yet.
    fn read(&self, obj_ref: &ObjectRef<R::Resource>) -> Option<Read<R::Resource>> {
        // The memory first, then the cache: see `Memory::last_write`.
        let last_write = self.memory.last_write(obj_ref);
        let obj = self.cache.get(obj_ref)?;
        let unconfirmed = last_write.filter(|w| w.ahead_of(obj.meta().resource_version.as_deref()));
        Some(Read { obj, unconfirmed })
    }

    /// The pass proper, on `obj` as the cache holds it, talking to `system`.
    async fn run(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        read: Read<R::Resource>,
        worker: Worker,
        system: Option<std::sync::Arc<SystemSlots>>,
    ) -> Next {
        let span = tracing::info_span!(
            "reconcile",
            controller = self.name,
            object = %obj_ref,
            trace_id = tracing::field::Empty
        );
        let trace_id = self.identity.trace_id(&span);
        worker.run_in(&self.in_flight);
        let jobs = Jobs::of_pass(worker, system);
        // A guard, so that a panicking reconcile does not leave the gauge counting it forever.
        let _active = Counted::enter(self.metrics.active_workers(self.name));
        let start = Instant::now();
        let next = self
            .reconcile_object(obj_ref, read, trace_id, jobs)
            .instrument(span)
            .await;
        self.metrics
            .observe_reconcile_time(self.name, start.elapsed());
        next
    }

    async fn reconcile_object(
        &self,
        obj_ref: &ObjectRef<R::Resource>,
        read: Read<R::Resource>,
        trace_id: Option<String>,
        jobs: Jobs,
    ) -> Next {
        let obj = &*read.obj;
        if !self.reconciler.admits(obj) {
            return self.end(PassEnd::NotAdmitted);
        }
        // What the API server holds as far as we know: our own last write while the cache does
        // not show it, else the object as cached. A pass that started from an older cached status
        // would redo (and rewrite) what the previous pass did.
        let no_status_yet = read.unconfirmed.is_none() && obj.status().is_none();
        let (before, resource_version) = match read.unconfirmed {
            Some(written) => (written.status, Some(written.to)),
            None => (
                obj.status().cloned().unwrap_or_default(),
                obj.resource_version(),
            ),
        };
        let mut pass = Pass {
            obj_ref,
            obj,
            before: &before,
            no_status_yet,
            resource_version,
            trace_id,
        };
        let finalizer = R::FINALIZER.map(|f| (f, lifecycle::finalizer_state(obj, f)));
        let lifecycle = match self.enter(&mut pass, finalizer).await {
            Ok(lifecycle) => lifecycle,
            Err(next) => return next,
        };

        let mut status = before.clone();
        let mut steps = StepRunner::with_metrics(self.name, self.metrics.clone()).for_pass(jobs);
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
            return self.remove_finalizer(&pass, status, steps, f).await;
        }

        let records = steps.into_records();
        match self.finish_status(&pass, status, &records).await {
            StatusWrite::Gone => {
                self.memory.forget(obj_ref);
                self.end(PassEnd::Gone)
            }
            StatusWrite::Failed(category) => self.end(PassEnd::Engine(category)),
            StatusWrite::Written | StatusWrite::Unchanged => self.end(PassEnd::Steps(summary)),
        }
    }

    /// Where the object is in its life for this pass — with our finalizer added first if it
    /// was missing — or, when this pass has nothing to run, how it ends.
    async fn enter(
        &self,
        pass: &mut Pass<'_, R::Resource>,
        finalizer: Finalizer,
    ) -> Result<Lifecycle, Next> {
        let (obj_ref, obj) = (pass.obj_ref, pass.obj);
        match finalizer {
            Some((_, FinalizerState::Released)) => {
                // Being deleted, and our finalizer is gone: another controller's finalizer keeps
                // it; there is nothing left for us to do.
                self.memory.forget(obj_ref);
                Err(self.end(PassEnd::Gone))
            }
            None if obj.meta().deletion_timestamp.is_some() => {
                self.memory.forget(obj_ref);
                Err(self.end(PassEnd::Gone))
            }
            Some((_, FinalizerState::Deleting)) if self.memory.already_released(obj_ref, obj) => {
                Err(self.end(PassEnd::Gone))
            }
            Some((_, FinalizerState::Deleting)) => Ok(Lifecycle::Deleting),
            Some((f, FinalizerState::Missing)) => {
                self.add_finalizer(pass, f).await?;
                Ok(Lifecycle::Live)
            }
            Some((_, FinalizerState::Present)) | None => Ok(Lifecycle::Live),
        }
    }

    /// Adds our finalizer `f` before the first `reconcile`; on failure, how the pass ends.
    async fn add_finalizer(
        &self,
        pass: &mut Pass<'_, R::Resource>,
        f: &'static str,
    ) -> Result<(), Next> {
        let (obj_ref, obj) = (pass.obj_ref, pass.obj);
        // Our own write must not cost a second pass when its event arrives, and the event can
        // arrive before the write's answer: the object as the write will leave it is known
        // beforehand.
        let mut expected = obj.clone();
        expected
            .meta_mut()
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(f.to_owned());
        self.memory.saw(obj_ref, fingerprint(&expected));
        match lifecycle::add_finalizer(&self.client, obj, f, self.name).await {
            Ok(written) => {
                self.memory.saw(obj_ref, fingerprint(&written));
                pass.resource_version = written.resource_version();
                Ok(())
            }
            Err(err) => {
                self.memory.saw(obj_ref, fingerprint(obj));
                let status = pass.before.clone();
                Err(self
                    .finalizer_failed(pass, status, Vec::new(), "FinalizerAddFailed", err)
                    .await)
            }
        }
    }

    /// Removes our finalizer `f` after a cleanup that completed every step: the object may go.
    async fn remove_finalizer(
        &self,
        pass: &Pass<'_, R::Resource>,
        status: StatusOf<R::Resource>,
        steps: StepRunner<R::Step>,
        f: &'static str,
    ) -> Next {
        match lifecycle::remove_finalizer(&self.client, pass.obj, f, self.name).await {
            Ok(()) => {
                self.publish_events(pass, &[], steps.records()).await;
                // After the Events: they must not leave a memory of an object that is gone.
                self.memory.forget(pass.obj_ref);
                self.memory.release(pass.obj_ref, pass.obj);
                self.end(PassEnd::Gone)
            }
            Err(err) => {
                let records = steps.into_records();
                self.finalizer_failed(pass, status, records, "FinalizerRemoveFailed", err)
                    .await
            }
        }
    }

    /// Ends a pass whose finalizer write failed: the failure is recorded as the engine's own
    /// step after `records`, so that conditions and Events say what is stuck.
    async fn finalizer_failed(
        &self,
        pass: &Pass<'_, R::Resource>,
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
        self.finish_status(pass, status, &records).await;
        self.end(PassEnd::Engine(category))
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

/// One counted in a gauge until dropped: also when the pass panics or its future is dropped.
struct Counted(prometheus_client::metrics::gauge::Gauge);

impl Counted {
    fn enter(gauge: prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        Counted(gauge)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}
