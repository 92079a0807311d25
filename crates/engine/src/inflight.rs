//! The reconciles running right now and since when, so that a liveness check can tell a stuck
//! reconcile from a slow one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Start times of the running reconciles of one controller. Cheap to clone; clones share.
#[derive(Clone, Debug, Default)]
pub struct InFlight(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    next: u64,
    /// Keyed by start order: the first entry is the oldest.
    started: BTreeMap<u64, Instant>,
}

/// Marks one reconcile as running until dropped — also when its future is dropped or panics.
#[derive(Debug)]
pub struct Running {
    in_flight: InFlight,
    id: u64,
}

impl InFlight {
    /// Marks a reconcile as running from now until the returned guard is dropped.
    pub fn start(&self) -> Running {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let id = state.next;
        state.next += 1;
        state.started.insert(id, Instant::now());
        Running {
            in_flight: self.clone(),
            id,
        }
    }

    /// How long the oldest running reconcile has been running; `None` when none runs.
    pub fn oldest(&self) -> Option<Duration> {
        let state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        state.started.values().next().map(Instant::elapsed)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.in_flight
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .started
            .remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_running_reconcile_is_reported_until_it_ends() {
        let in_flight = InFlight::default();
        assert_eq!(in_flight.oldest(), None);
        let first = in_flight.start();
        std::thread::sleep(Duration::from_millis(20));
        let second = in_flight.start();
        let oldest = in_flight.oldest().unwrap_or_default();
        assert!(oldest >= Duration::from_millis(20), "{oldest:?}");
        drop(first);
        assert!(in_flight.oldest().unwrap_or_default() < oldest);
        drop(second);
        assert_eq!(in_flight.oldest(), None);
    }
}
