//! The worker a pass runs on, and how a pass waits without holding it.
//!
//! A controller runs at most `max_concurrent_reconciles` passes at once. A pass that has to wait
//! for something outside the engine — a slot under a remote system's limit of concurrent jobs,
//! say — would hold one of those workers for the whole wait, and enough such passes would leave
//! none for other objects. Requeueing instead is no better at scale: every object would cost a
//! pass (and a start from the token bucket) only to find the slot still taken, and a second one
//! once it is free. [`Worker::park`] is the third way: the pass hands its worker back while it
//! waits, stays marked as being reconciled (so it is never run twice at once), and takes a worker
//! again when the wait is over. The number of parked passes is bounded
//! ([`EngineConfig::max_parked_reconciles`](crate::EngineConfig::max_parked_reconciles)): beyond
//! it, `park` declines and the caller requeues. A declined pass's object is also remembered, and
//! queued again as soon as a parked pass leaves: with ten thousand objects waiting for a few job
//! slots, requeueing on a timer alone would cost a pass per object and second for nothing.
//!
//! Some waits need no seat, because something else bounds them already, and must not be declined:
//! [`Worker::released_while`]. A request that starts a job on a remote system (an ONTAP job) is
//! answered when the job ends, seconds later; the pass sends it holding one of the system's few
//! job slots ([`Jobs`](crate::remote::Jobs)), so the passes waiting that way are no more than the
//! slots. Without this, ten clusters' 50 job slots would hold all 50 workers.
//!
//! A pass waiting for one of a remote system's pass slots
//! ([`RemoteSystem::passes_at_once`](crate::RemoteSystem::passes_at_once)) parks in a waiting
//! room of that system's own, with as many seats as it has slots, and a pass that finds none
//! waits in that room's line,
//! without a pass, queued again as a seat or a slot comes free: one slow system's objects then
//! take neither the workers nor the seats that the objects of the others need, and ten thousand
//! objects created at once are not ten thousand waiting tasks.
//!
//! The objects waiting in a line are queued again namespace by namespace in turn, not first come
//! first served: one tenant's hundred objects created at once must not queue every other
//! tenant's next object behind all of them.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::inflight::{InFlight, Running};

/// The worker of one pass; see the [module documentation](self). Cheap to clone. The default
/// is a worker of no controller (a unit test's runner): `park` then simply waits.
#[derive(Clone, Default)]
pub(crate) struct Worker {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    workers: Arc<Semaphore>,
    room: Arc<WaitingRoom>,
    /// The namespace of the pass's object: whose turn it waits for in a line.
    namespace: Option<String>,
    held: Mutex<Held>,
    /// Queues this pass's object again; handed to `room` when `park` declines.
    requeue: Mutex<Option<Requeue>>,
}

/// Queues one object again.
pub(crate) type Requeue = Box<dyn FnOnce() + Send>;

/// Seats for parked passes, and the line of objects whose passes found none: a controller's, or
/// one remote system's for its pass slots.
pub(crate) struct WaitingRoom {
    seats: Arc<Semaphore>,
    /// The pass slots the seats are for; `None` for a controller's own seats.
    slots: Option<Arc<Semaphore>>,
    declined: Mutex<TakingTurns>,
}

/// The objects whose passes found no room, in one line per namespace, served in turn.
#[derive(Default)]
struct TakingTurns {
    lines: HashMap<Option<String>, VecDeque<Requeue>>,
    /// The namespaces with objects waiting, in the order they are served.
    turn: VecDeque<Option<String>>,
}

impl TakingTurns {
    fn push(&mut self, namespace: Option<String>, requeue: Requeue) {
        let line = self.lines.entry(namespace.clone()).or_default();
        if line.is_empty() {
            self.turn.push_back(namespace);
        }
        line.push_back(requeue);
    }

    /// The first object of the namespace whose turn it is; that namespace goes to the back.
    fn pop(&mut self) -> Option<Requeue> {
        let namespace = self.turn.pop_front()?;
        let line = self.lines.get_mut(&namespace)?;
        let next = line.pop_front();
        if line.is_empty() {
            self.lines.remove(&namespace);
        } else {
            self.turn.push_back(namespace);
        }
        next
    }
}

impl WaitingRoom {
    pub(crate) fn new(seats: usize) -> Self {
        Self {
            seats: Arc::new(Semaphore::new(seats)),
            slots: None,
            declined: Mutex::default(),
        }
    }

    /// The room of the pass slots `slots`: as many seats as it has free slots now, which is all
    /// of them while none is taken.
    pub(crate) fn for_slots(slots: &Arc<Semaphore>) -> Self {
        Self {
            slots: Some(slots.clone()),
            ..Self::new(slots.available_permits().max(1))
        }
    }

    fn decline(&self, namespace: Option<String>, requeue: Requeue) {
        self.lock_declined().push(namespace, requeue);
        // The seat or slot this pass found taken may have come free before the object joined
        // the line, with no one left to queue the object again when it did.
        if self.has_room() {
            self.room_freed();
        }
    }

    /// Whether a pass coming now would find a seat or a slot.
    fn has_room(&self) -> bool {
        self.seats.available_permits() > 0 || self.slot_free()
    }

    /// Whether one of the pass slots the seats are for is free.
    fn slot_free(&self) -> bool {
        self.slots
            .as_ref()
            .is_some_and(|s| s.available_permits() > 0)
    }

    /// A seat or slot came free: the next object in turn is queued again.
    fn room_freed(&self) {
        let next = self.lock_declined().pop();
        if let Some(requeue) = next {
            requeue();
        }
    }

    fn lock_declined(&self) -> std::sync::MutexGuard<'_, TakingTurns> {
        self.declined.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A pass slot a pass holds. Its line is woken when it is released to no waiting pass as well as
/// when a seat comes free: otherwise a line whose seats had emptied (their passes got slots
/// before the objects queued for those seats came) would wait for its timer while slots stood
/// free.
pub(crate) struct HeldSlot {
    permit: Option<OwnedSemaphorePermit>,
    line: Arc<WaitingRoom>,
}

impl HeldSlot {
    pub(crate) fn new(permit: OwnedSemaphorePermit, line: Arc<WaitingRoom>) -> Self {
        Self {
            permit: Some(permit),
            line,
        }
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        // Released first: a waiting pass takes the slot at once, and then needs no one woken.
        drop(self.permit.take());
        if self.line.slot_free() {
            self.line.room_freed();
        }
    }
}

/// What a pass holds while it runs, and gives up while parked: a worker, and its entry among
/// the running reconciles (a parked pass waits by design; it must not look stuck to liveness).
#[derive(Default)]
struct Held {
    permit: Option<OwnedSemaphorePermit>,
    in_flight: Option<InFlight>,
    running: Option<Running>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("attached", &self.inner.is_some())
            .finish()
    }
}

impl Worker {
    /// The worker holding `permit` of `workers`; `room` bounds the passes parked at once,
    /// and `requeue` queues the pass's object, of `namespace`, again once a seat is free (in
    /// the namespace's turn), should it find none.
    pub(crate) fn new(
        workers: Arc<Semaphore>,
        room: Arc<WaitingRoom>,
        permit: OwnedSemaphorePermit,
        namespace: Option<String>,
        requeue: Requeue,
    ) -> Self {
        Worker {
            inner: Some(Arc::new(Inner {
                workers,
                room,
                namespace,
                held: Mutex::new(Held {
                    permit: Some(permit),
                    ..Held::default()
                }),
                requeue: Mutex::new(Some(requeue)),
            })),
        }
    }

    /// The namespace of the pass's object (`None`: cluster-scoped, or a worker of no controller).
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.inner.as_ref()?.namespace.as_deref()
    }

    /// Counts the pass among `in_flight`'s running reconciles while it is not parked.
    pub(crate) fn run_in(&self, in_flight: &InFlight) {
        if let Some(inner) = &self.inner {
            let mut held = inner.lock();
            held.running = Some(in_flight.start());
            held.in_flight = Some(in_flight.clone());
        }
    }

    /// Awaits `wait`. If it is not ready at once, the worker is handed back to the controller
    /// meanwhile and taken again (waiting in line with the controller's other starts) when
    /// `wait` is done. `None` when `wait` is not ready and as many passes are parked as
    /// allowed: the caller should requeue the object instead of waiting (a fallback: the
    /// object is queued again as soon as a parked pass leaves).
    pub(crate) async fn park<T>(&self, wait: impl Future<Output = T>) -> Option<T> {
        match &self.inner {
            Some(inner) => self.park_in(&inner.room, wait).await,
            None => Some(wait.await),
        }
    }

    /// [`park`](Self::park) in the seats of `room` rather than the controller's.
    pub(crate) async fn park_in<T>(
        &self,
        room: &WaitingRoom,
        wait: impl Future<Output = T>,
    ) -> Option<T> {
        let mut wait = pin!(wait);
        if let Poll::Ready(value) = futures::poll!(wait.as_mut()) {
            return Some(value);
        }
        let Some(inner) = &self.inner else {
            return Some(wait.await);
        };
        let Ok(seat) = room.seats.clone().try_acquire_owned() else {
            let requeue = inner
                .requeue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(requeue) = requeue {
                room.decline(inner.namespace.clone(), requeue);
            }
            return None;
        };
        let value = inner
            .without_worker(wait, || {
                drop(seat);
                room.room_freed();
            })
            .await;
        Some(value)
    }

    /// Awaits `wait` with the worker handed back meanwhile, as [`park`](Self::park) does, but
    /// needing no seat and never declining. For waits the caller has bounded already, where
    /// declining would lose work: an ONTAP job's request sent under a job slot the pass holds
    /// (its answer comes when the job ends, seconds later, and dropping it would drop the
    /// request).
    pub(crate) async fn released_while<T>(&self, wait: impl Future<Output = T>) -> T {
        let mut wait = pin!(wait);
        if let Poll::Ready(value) = futures::poll!(wait.as_mut()) {
            return value;
        }
        match &self.inner {
            Some(inner) => inner.without_worker(wait, || {}).await,
            None => wait.await,
        }
    }
}

impl Inner {
    /// Hands the worker back (and leaves the running reconciles) until `wait` is done, calls
    /// `waited`, then takes a worker again, in line with the controller's other starts.
    async fn without_worker<T>(
        &self,
        wait: Pin<&mut impl Future<Output = T>>,
        waited: impl FnOnce(),
    ) -> T {
        let (had_worker, in_flight) = {
            let mut held = self.lock();
            held.running = None;
            (held.permit.take().is_some(), held.in_flight.clone())
        };
        let value = wait.await;
        waited();
        // Closed only when the controller stops; then the pass finishes without a worker.
        let permit = if had_worker {
            self.workers.clone().acquire_owned().await.ok()
        } else {
            None
        };
        let mut held = self.lock();
        held.permit = permit;
        held.running = in_flight.map(|f| f.start());
        value
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_parked_pass_frees_its_worker_and_takes_one_again() {
        let workers = Arc::new(Semaphore::new(1));
        let room = Arc::new(WaitingRoom::new(1));
        let permit = workers.clone().acquire_owned().await.unwrap();
        let (requeued_tx, mut requeued) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker::new(
            workers.clone(),
            room.clone(),
            permit,
            None,
            Box::new(move || {
                let _ = requeued_tx.send(());
            }),
        );
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let pass = tokio::spawn({
            let worker = worker.clone();
            async move { worker.park(rx).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            workers.available_permits(),
            1,
            "the worker is free while parked"
        );
        // A second pass cannot park: the bound is one. Its object waits for the seat.
        assert!(worker.park(std::future::pending::<()>()).await.is_none());
        assert!(
            requeued.try_recv().is_err(),
            "not queued before a seat is free"
        );
        // Ready futures never park.
        assert_eq!(worker.park(async { 7 }).await, Some(7));
        let _ = tx.send(3);
        assert_eq!(pass.await.unwrap().unwrap().unwrap(), 3);
        assert_eq!(workers.available_permits(), 0, "the worker was taken again");
        assert_eq!(room.seats.available_permits(), 1);
        assert!(
            requeued.try_recv().is_ok(),
            "the declined object is queued again once the seat is free"
        );
    }

    #[tokio::test]
    async fn a_slot_released_to_no_waiting_pass_wakes_the_line() {
        let workers = Arc::new(Semaphore::new(3));
        let slots = Arc::new(Semaphore::new(1));
        let line = Arc::new(WaitingRoom::for_slots(&slots));
        let (requeued_tx, mut requeued) = tokio::sync::mpsc::unbounded_channel();
        let worker_of = |name: &'static str| {
            let permit = workers.clone().try_acquire_owned().unwrap();
            let requeued_tx = requeued_tx.clone();
            let requeue: Requeue = Box::new(move || {
                let _ = requeued_tx.send(name);
            });
            Worker::new(workers.clone(), line.clone(), permit, None, requeue)
        };
        let first = HeldSlot::new(slots.clone().try_acquire_owned().unwrap(), line.clone());
        let seated = tokio::spawn({
            let (worker, slots, line) = (worker_of("seated"), slots.clone(), line.clone());
            async move { worker.park_in(&line, slots.acquire_owned()).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        for name in ["c", "d"] {
            let declined = worker_of(name)
                .park_in(&line, slots.clone().acquire_owned())
                .await;
            assert!(declined.is_none(), "{name} finds the one seat taken");
        }
        assert!(requeued.try_recv().is_err());
        // The seated pass takes the slot; its seat is c's.
        drop(first);
        let slot = seated.await.unwrap().unwrap().unwrap();
        assert_eq!(requeued.try_recv(), Ok("c"));
        assert!(requeued.try_recv().is_err());
        // Its pass ends before c's begins: the slot goes to no one, so d is queued for it
        // rather than left to its timer.
        drop(HeldSlot::new(slot, line.clone()));
        assert_eq!(requeued.try_recv(), Ok("d"));
        // With the line empty, a released slot queues nothing.
        drop(HeldSlot::new(
            slots.clone().try_acquire_owned().unwrap(),
            line.clone(),
        ));
        assert!(requeued.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_pass_released_while_a_job_runs_needs_no_seat() {
        let workers = Arc::new(Semaphore::new(1));
        // No seat at all: `park` would decline.
        let room = Arc::new(WaitingRoom::new(0));
        let permit = workers.clone().acquire_owned().await.unwrap();
        let worker = Worker::new(workers.clone(), room, permit, None, Box::new(|| {}));
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let pass = tokio::spawn({
            let worker = worker.clone();
            async move { worker.released_while(rx).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            workers.available_permits(),
            1,
            "the worker is free meanwhile"
        );
        // Another pass takes the free worker; the first waits for it once its job is done.
        let other = workers.clone().acquire_owned().await.unwrap();
        let _ = tx.send(5);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!pass.is_finished(), "no worker to come back to yet");
        drop(other);
        assert_eq!(pass.await.unwrap().unwrap(), 5);
        assert_eq!(workers.available_permits(), 0, "the worker was taken again");
        assert_eq!(worker.released_while(async { 9 }).await, 9);
        assert_eq!(
            workers.available_permits(),
            0,
            "a ready future keeps its worker"
        );
    }

    /// One namespace's many objects waiting in a line do not keep another's next object behind
    /// all of them: room goes to the namespaces in turn.
    #[tokio::test]
    async fn a_line_serves_namespaces_in_turn() {
        let workers = Arc::new(Semaphore::new(8));
        let slots = Arc::new(Semaphore::new(1));
        let line = Arc::new(WaitingRoom::for_slots(&slots));
        let (requeued_tx, mut requeued) = tokio::sync::mpsc::unbounded_channel();
        let held = HeldSlot::new(slots.clone().try_acquire_owned().unwrap(), line.clone());
        let seated = tokio::spawn({
            let permit = workers.clone().try_acquire_owned().unwrap();
            let worker = Worker::new(workers.clone(), line.clone(), permit, None, Box::new(|| {}));
            let (slots, line) = (slots.clone(), line.clone());
            async move { worker.park_in(&line, slots.acquire_owned()).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        for (namespace, name) in [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")] {
            let permit = workers.clone().try_acquire_owned().unwrap();
            let requeued_tx = requeued_tx.clone();
            let requeue: Requeue = Box::new(move || {
                let _ = requeued_tx.send(name);
            });
            let worker = Worker::new(
                workers.clone(),
                line.clone(),
                permit,
                Some(namespace.to_owned()),
                requeue,
            );
            assert!(
                worker
                    .park_in(&line, slots.clone().acquire_owned())
                    .await
                    .is_none()
            );
        }
        // The seated pass takes the slot and its seat goes to the first in turn; then each
        // slot released to no waiting pass queues the next.
        drop(held);
        let mut slot = HeldSlot::new(seated.await.unwrap().unwrap().unwrap(), line.clone());
        let mut order = vec![requeued.try_recv().unwrap()];
        for _ in 0..3 {
            drop(slot);
            order.push(requeued.try_recv().unwrap());
            slot = HeldSlot::new(slots.clone().try_acquire_owned().unwrap(), line.clone());
        }
        drop(slot);
        assert_eq!(order, ["a1", "b1", "a2", "a3"]);
    }
}
