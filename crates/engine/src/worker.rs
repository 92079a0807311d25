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
//! it, `park` declines and the caller requeues.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::inflight::{InFlight, Running};

/// The worker of one pass; see the [module documentation](self). Cheap to clone. The default
/// is a worker of no controller (a unit test's runner): `park` then simply waits.
#[derive(Clone, Default)]
pub struct Worker {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    workers: Arc<Semaphore>,
    parked: Arc<Semaphore>,
    held: Mutex<Held>,
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
    /// The worker holding `permit` of `workers`; `parked` bounds the passes parked at once.
    pub(crate) fn new(
        workers: Arc<Semaphore>,
        parked: Arc<Semaphore>,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        Worker {
            inner: Some(Arc::new(Inner {
                workers,
                parked,
                held: Mutex::new(Held {
                    permit: Some(permit),
                    ..Held::default()
                }),
            })),
        }
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
    /// allowed: the caller should requeue the object instead of waiting.
    pub async fn park<T>(&self, wait: impl Future<Output = T>) -> Option<T> {
        let mut wait = pin!(wait);
        if let Poll::Ready(value) = futures::poll!(wait.as_mut()) {
            return Some(value);
        }
        let Some(inner) = &self.inner else {
            return Some(wait.await);
        };
        let Ok(_parked) = inner.parked.clone().try_acquire_owned() else {
            return None;
        };
        let (had_worker, in_flight) = {
            let mut held = inner.lock();
            held.running = None;
            (held.permit.take().is_some(), held.in_flight.clone())
        };
        let value = wait.await;
        // Closed only when the controller stops; then the pass finishes without a worker.
        let permit = if had_worker {
            inner.workers.clone().acquire_owned().await.ok()
        } else {
            None
        };
        let mut held = inner.lock();
        held.permit = permit;
        held.running = in_flight.map(|f| f.start());
        Some(value)
    }
}

impl Inner {
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
        let parked = Arc::new(Semaphore::new(1));
        let permit = workers.clone().acquire_owned().await.unwrap();
        let worker = Worker::new(workers.clone(), parked.clone(), permit);
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
        // A second pass cannot park: the bound is one.
        assert!(worker.park(std::future::pending::<()>()).await.is_none());
        // Ready futures never park.
        assert_eq!(worker.park(async { 7 }).await, Some(7));
        let _ = tx.send(3);
        assert_eq!(pass.await.unwrap().unwrap().unwrap(), 3);
        assert_eq!(workers.available_permits(), 0, "the worker was taken again");
        assert_eq!(parked.available_permits(), 1);
    }
}
