//! A remote system's limits kept to; told on [`Jobs`], which the crate exports.

mod fair_slots;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::flow::{StepFlow, Wait};
use crate::worker::{WaitingRoom, Worker};
use fair_slots::{FairPermit, FairSlots};

/// The reason of a step waiting for one of its remote system's job slots because as many passes
/// wait for one already as the controller lets wait.
pub const JOB_SLOT_BUSY: &str = "JobSlotBusy";

/// How long a step that found no free job slot, and no room to wait for one, waits at the latest:
/// its object is queued again as soon as a waiting pass leaves, so this only bounds the wait
/// should that never happen.
pub const JOB_SLOT_RECHECK: Duration = Duration::from_secs(30);

/// A remote system an object's passes talk to, and what it lets the controller run on it at
/// once. Objects that name the same system (by [`name`](Self::name)) share its limits; the limits
/// are those of the first object the engine meets naming it, for as long as the controller runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSystem {
    /// Which system: the same for every object on it, and how waits name it.
    pub name: String,
    /// How many passes over its objects run at once: as many requests as it answers at once.
    pub passes_at_once: usize,
    /// How many jobs ([`Jobs`]) the controller runs on it at once.
    pub jobs_at_once: usize,
    /// Of those, how many the objects of one namespace hold at once.
    pub jobs_per_namespace: usize,
}

impl RemoteSystem {
    /// The system `name`, running `passes_at_once` passes and `jobs_at_once` jobs at once, any
    /// namespace's objects holding all of the job slots if no one else waits.
    pub fn new(name: impl Into<String>, passes_at_once: usize, jobs_at_once: usize) -> Self {
        RemoteSystem {
            name: name.into(),
            passes_at_once,
            jobs_at_once,
            jobs_per_namespace: jobs_at_once,
        }
    }

    /// The same system, one namespace's objects holding at most `jobs` of its job slots at once.
    pub fn jobs_per_namespace(mut self, jobs: usize) -> Self {
        self.jobs_per_namespace = jobs;
        self
    }
}

/// One remote system's slots as the engine keeps them.
pub(crate) struct SystemSlots {
    name: String,
    jobs_at_once: usize,
    /// Passes at once.
    pub(crate) passes: Arc<Semaphore>,
    /// Where passes wait for a pass slot.
    pub(crate) pass_room: Arc<WaitingRoom>,
    /// Jobs at once, shared among namespaces in turn.
    jobs: FairSlots,
}

/// The remote systems of one controller, by name.
#[derive(Default)]
pub(crate) struct RemoteSystems(Mutex<HashMap<String, Arc<SystemSlots>>>);

impl RemoteSystems {
    /// The slots of `system`, made with its limits when it is first met.
    pub(crate) fn of(&self, system: &RemoteSystem) -> Arc<SystemSlots> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(system.name.clone())
            .or_insert_with(|| {
                let passes = Arc::new(Semaphore::new(system.passes_at_once.max(1)));
                Arc::new(SystemSlots {
                    name: system.name.clone(),
                    jobs_at_once: system.jobs_at_once.max(1),
                    pass_room: Arc::new(WaitingRoom::for_slots(&passes)),
                    passes,
                    jobs: FairSlots::new(system.jobs_at_once, system.jobs_per_namespace),
                })
            })
            .clone()
    }
}

/// The jobs the steps of one pass start on the pass's remote system; take it from the runner
/// before a step ([`StepRunner::jobs`](crate::StepRunner::jobs)): a step's closure cannot
/// borrow the runner. Cheap to clone.
///
/// The remote systems a controller's passes talk to besides the API server — the ONTAP
/// clusters of the StorageVirtualMachine controller — and what each lets the controller run on
/// it at once.
///
/// A controller says which [`RemoteSystem`] an object's passes talk to, with its limits
/// ([`Reconciler::remote_system`](crate::Reconciler::remote_system)), and a step that starts a
/// job there sends its request through the pass's [`Jobs`]
/// ([`StepRunner::jobs`](crate::StepRunner::jobs)). That is all a controller sees. The engine
/// keeps to the limits, and makes sure that waiting for them holds none of the controller's
/// workers, so that one slow system does not hold back the objects of the others:
///
/// - **Passes at once.** A pass takes one of its system's pass slots before it begins and holds
///   it to its end. A pass sends one request at a time, so more passes than the system answers
///   requests at once would only wait, holding workers; a system that answers slowly would then
///   hold every worker of the controller. As many passes as there are slots wait for one without
///   holding a worker; the objects of further passes wait in the system's own line, without a
///   pass, and are queued again as waiting passes get their slots.
/// - **Jobs at once.** A job is work the system runs on its own after a request, answering the
///   request when it has ended (an ONTAP job: an SVM created, changed or deleted), and the system
///   runs only so many at once, refusing more. A step's first job takes one of the system's job
///   slots and the step holds it until it ends, so that a job refused for being one too many
///   never costs a request and a pass. Freed slots go to the namespaces waiting in turn, each
///   holding at most [`RemoteSystem::jobs_per_namespace`]: one tenant's batch does not queue
///   another's first object behind all of it. A pass waits for a slot without holding a worker
///   (among the controller's parked passes; when those are as many as allowed the step waits,
///   and its object is queued again as soon as one leaves), and waits for the job's answer
///   without one too: the slots bound those passes.
#[derive(Clone, Default)]
pub struct Jobs(Arc<PassJobs>);

#[derive(Default)]
struct PassJobs {
    worker: Worker,
    /// `None`: the pass talks to no remote system, and its jobs are plain requests.
    system: Option<Arc<SystemSlots>>,
    /// The job slot the running step holds, from its first job to its end.
    held: Mutex<Option<FairPermit>>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("system", &self.0.system.as_ref().map(|s| &s.name))
            .finish_non_exhaustive()
    }
}

impl Jobs {
    /// The jobs of a pass on `worker` talking to `system`.
    pub(crate) fn of_pass(worker: Worker, system: Option<Arc<SystemSlots>>) -> Self {
        Jobs(Arc::new(PassJobs {
            worker,
            system,
            held: Mutex::default(),
        }))
    }

    /// Sends `request`, which starts a job on the remote system and is answered when the job has
    /// ended, under one of the system's job slots: the step's, taken here at its first job, or a
    /// wait while none can be had. Returns the request's answer.
    pub async fn run<T>(&self, request: impl Future<Output = T>) -> StepFlow<T> {
        self.reserve().await?;
        if self.0.system.is_none() {
            return Ok(request.await);
        }
        // The slot held bounds the passes waiting for their job's answer this way.
        Ok(self.0.worker.released_while(request).await)
    }

    /// Takes the step's job slot now, ahead of its first job: for a step about to start one
    /// that reads what the job depends on first, so that what it read is fresh however long it
    /// waited for the slot, and a step that waits has cost the system nothing.
    pub async fn reserve(&self) -> StepFlow<()> {
        let Some(system) = &self.0.system else {
            return Ok(());
        };
        if self.lock().is_some() {
            return Ok(());
        }
        let namespace = self.0.worker.namespace().unwrap_or_default();
        match self.0.worker.park(system.jobs.acquire(namespace)).await {
            Some(Ok(permit)) => {
                *self.lock() = Some(permit);
                Ok(())
            }
            // Closed never: the engine keeps every system's slots for the controller's life.
            Some(Err(_)) | None => Err(Wait::new(
                JOB_SLOT_BUSY,
                format!(
                    "as many jobs run on {} as it allows ({}), and as many passes wait for one to end as the controller lets wait",
                    system.name, system.jobs_at_once
                ),
                JOB_SLOT_RECHECK,
            )
            .into()),
        }
    }

    /// The step ended: its job slot, if it took one, goes to the next in turn.
    pub(crate) fn step_ended(&self) {
        drop(self.lock().take());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<FairPermit>> {
        self.0.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::flow::Unfinished;
    use crate::step::{Outcome, StepRunner};

    crate::steps! {
        enum T { Create }
    }

    /// A pass of an object in `namespace` on a worker of `workers`, parking in `room`.
    fn pass(
        workers: &Arc<Semaphore>,
        room: &Arc<WaitingRoom>,
        namespace: &str,
        system: &Arc<SystemSlots>,
    ) -> Jobs {
        let permit = workers.clone().try_acquire_owned().unwrap();
        let worker = Worker::new(
            workers.clone(),
            room.clone(),
            permit,
            Some(namespace.to_owned()),
            Box::new(|| {}),
        );
        Jobs::of_pass(worker, Some(system.clone()))
    }

    #[tokio::test]
    async fn a_steps_job_slot_is_held_to_the_steps_end_and_waited_for_without_a_worker() {
        let systems = RemoteSystems::default();
        let system = systems.of(&RemoteSystem::new("ontap-1", 4, 1));
        let workers = Arc::new(Semaphore::new(2));
        let room = Arc::new(WaitingRoom::new(4));
        let first = pass(&workers, &room, "a", &system);
        let mut steps = StepRunner::new("t").for_pass(first.clone());
        let (ended_tx, ended) = tokio::sync::oneshot::channel::<()>();
        let stepping = tokio::spawn(async move {
            steps
                .step(T::Create, || async {
                    let answer = first.run(async { 7 }).await?;
                    // A second job of the step runs under the slot it holds.
                    let again = first.run(async { 8 }).await?;
                    let _ = ended.await;
                    Ok(Outcome::Changed(answer + again))
                })
                .await
        });
        let second = pass(&workers, &room, "b", &system);
        let waiting = tokio::spawn({
            let second = second.clone();
            async move { second.reserve().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the only slot is the first step's");
        assert_eq!(
            workers.available_permits(),
            1,
            "the second pass waits without its worker"
        );
        let _ = ended_tx.send(());
        assert_eq!(stepping.await.unwrap(), Ok(15));
        assert!(matches!(waiting.await.unwrap(), Ok(())));
    }

    #[tokio::test]
    async fn a_step_with_no_room_to_wait_for_a_job_slot_waits_naming_the_system() {
        let systems = RemoteSystems::default();
        let system = systems.of(&RemoteSystem::new("ontap-1", 4, 1));
        let workers = Arc::new(Semaphore::new(2));
        let room = Arc::new(WaitingRoom::new(0));
        let holder = pass(&workers, &room, "a", &system);
        holder.reserve().await.unwrap();
        let refused = pass(&workers, &room, "b", &system)
            .run(async { unreachable!("no job is sent without a slot") })
            .await;
        let Err(Unfinished::Waiting(wait)) = refused else {
            panic!("not a wait: {refused:?}");
        };
        assert_eq!(wait.reason, JOB_SLOT_BUSY);
        assert!(
            wait.message.contains("ontap-1 as it allows (1)"),
            "{wait:?}"
        );
        holder.step_ended();
        assert!(
            pass(&workers, &room, "b", &system).reserve().await.is_ok(),
            "the slot is free once the holding step ended"
        );
    }

    #[tokio::test]
    async fn jobs_of_a_pass_on_no_remote_system_are_plain_requests() {
        let jobs = Jobs::default();
        assert!(matches!(jobs.run(async { 3 }).await, Ok(3)));
    }

    #[test]
    fn a_systems_limits_are_those_it_was_first_met_with() {
        let systems = RemoteSystems::default();
        let first = systems.of(&RemoteSystem::new("ontap-1", 2, 5).jobs_per_namespace(1));
        let again = systems.of(&RemoteSystem::new("ontap-1", 9, 9));
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(again.passes.available_permits(), 2);
        let other = systems.of(&RemoteSystem::new("ontap-2", 3, 5));
        assert_eq!(other.passes.available_permits(), 3);
    }
}
