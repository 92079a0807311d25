//! Slots shared among tenants in turn. A remote system's job slots (an ONTAP cluster's) went out
//! first come, first served, so one tenant creating 25 SVMs at once queued every other tenant's
//! SVM behind all of them. Here each namespace waits in a line of its own, and a freed slot goes to the next
//! namespace in rotation that holds fewer than its cap: a tenant's first request waits for one
//! slot to come free, not for another tenant's whole batch.
//!
//! tokio's `Semaphore` has one FIFO queue and no notion of whose a waiter is, so this is a small
//! queue of our own over a mutex; a granted slot is handed over through a oneshot channel, and a
//! waiter that gives up after being granted hands its slot on.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// Slots shared round-robin among namespaces, each holding at most `cap` at once.
#[derive(Clone, Debug)]
pub struct FairSlots(Arc<Mutex<State>>);

#[derive(Debug)]
struct State {
    free: usize,
    cap: usize,
    held: HashMap<String, usize>,
    /// Each namespace's waiters, first come first.
    lines: HashMap<String, VecDeque<oneshot::Sender<()>>>,
    /// The namespaces with waiters, in the order they are served.
    turn: VecDeque<String>,
}

/// The slots are gone: nothing will be granted.
#[derive(Debug)]
pub struct Closed;

impl FairSlots {
    /// `slots` slots, of which one namespace holds at most `cap` (both at least 1).
    pub fn new(slots: usize, cap: usize) -> Self {
        Self(Arc::new(Mutex::new(State {
            free: slots.max(1),
            cap: cap.max(1),
            held: HashMap::new(),
            lines: HashMap::new(),
            turn: VecDeque::new(),
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every change below leaves the counts consistent before anything can panic.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for `namespace`, once one is free and it is the namespace's turn.
    pub async fn acquire(&self, namespace: &str) -> Result<FairPermit, Closed> {
        let rx = {
            let mut state = self.lock();
            if state.free > 0 && state.held_by(namespace) < state.cap {
                state.grant(namespace);
                return Ok(self.permit(namespace));
            }
            let (tx, rx) = oneshot::channel();
            if !state.lines.contains_key(namespace) {
                state.turn.push_back(namespace.to_owned());
            }
            state
                .lines
                .entry(namespace.to_owned())
                .or_default()
                .push_back(tx);
            rx
        };
        let mut pending = Pending {
            rx,
            slots: self.clone(),
            namespace: namespace.to_owned(),
            granted: false,
        };
        let granted = (&mut pending.rx).await;
        pending.granted = granted.is_ok();
        granted.map_err(|_| Closed)?;
        Ok(self.permit(namespace))
    }

    fn permit(&self, namespace: &str) -> FairPermit {
        FairPermit {
            slots: self.clone(),
            namespace: namespace.to_owned(),
        }
    }

    /// `namespace` gives a slot back: it goes to the next namespace in turn that may hold one.
    fn release(&self, namespace: &str) {
        let mut state = self.lock();
        state.ungrant(namespace);
        while let Some((next, tx)) = state.next_waiter() {
            state.grant(&next);
            if tx.send(()).is_ok() {
                return;
            }
            // That waiter gave up meanwhile: the slot goes on.
            state.ungrant(&next);
        }
    }
}

impl State {
    fn held_by(&self, namespace: &str) -> usize {
        self.held.get(namespace).copied().unwrap_or(0)
    }

    fn grant(&mut self, namespace: &str) {
        self.free = self.free.saturating_sub(1);
        *self.held.entry(namespace.to_owned()).or_default() += 1;
    }

    fn ungrant(&mut self, namespace: &str) {
        self.free += 1;
        if let Some(held) = self.held.get_mut(namespace) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.held.remove(namespace);
            }
        }
    }

    /// The first waiter of the next namespace in turn below its cap, while a slot is free.
    fn next_waiter(&mut self) -> Option<(String, oneshot::Sender<()>)> {
        if self.free == 0 {
            return None;
        }
        for _ in 0..self.turn.len() {
            let namespace = self.turn.pop_front()?;
            if self.held_by(&namespace) >= self.cap {
                self.turn.push_back(namespace);
                continue;
            }
            let line = self.lines.get_mut(&namespace)?;
            let waiter = line.pop_front();
            if line.is_empty() {
                self.lines.remove(&namespace);
            } else {
                self.turn.push_back(namespace.clone());
            }
            if let Some(tx) = waiter {
                return Some((namespace, tx));
            }
        }
        None
    }
}

/// A held slot; dropping it gives it back.
#[derive(Debug)]
pub struct FairPermit {
    slots: FairSlots,
    namespace: String,
}

impl Drop for FairPermit {
    fn drop(&mut self) {
        self.slots.release(&self.namespace);
    }
}

/// A waiter; dropped after being granted but before taking the permit, it gives the slot back.
struct Pending {
    rx: oneshot::Receiver<()>,
    slots: FairSlots,
    namespace: String,
    granted: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.granted {
            return;
        }
        self.rx.close();
        if self.rx.try_recv().is_ok() {
            self.slots.release(&self.namespace);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn granted_soon(slots: &FairSlots, namespace: &str) -> Option<FairPermit> {
        tokio::time::timeout(Duration::from_millis(50), slots.acquire(namespace))
            .await
            .ok()
            .map(Result::unwrap)
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_next_namespace_in_turn() {
        let slots = FairSlots::new(1, 1);
        let held = slots.acquire("bulk").await.unwrap();
        // The bulk tenant queues five more, then the victim one.
        let mut bulk = Vec::new();
        for _ in 0..5 {
            let slots = slots.clone();
            bulk.push(tokio::spawn(
                async move { slots.acquire("bulk").await.unwrap() },
            ));
        }
        tokio::task::yield_now().await;
        let victim = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire("victim").await.unwrap() })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(held);
        // The slot goes to the bulk tenant's next waiter first (its line was first in turn)...
        tokio::time::sleep(Duration::from_millis(10)).await;
        let finished: Vec<usize> = (0..5).filter(|i| bulk[*i].is_finished()).collect();
        assert_eq!(finished.len(), 1, "one of the bulk waiters got the slot");
        assert!(!victim.is_finished());
        let permit = bulk.remove(finished[0]).await.unwrap();
        drop(permit);
        // ...and the next one to the victim, ahead of the four the bulk tenant still has.
        let victims = tokio::time::timeout(Duration::from_secs(1), victim)
            .await
            .unwrap()
            .unwrap();
        assert!(bulk.iter().all(|b| !b.is_finished()));
        drop(victims);
        for waiter in bulk {
            drop(
                tokio::time::timeout(Duration::from_secs(1), waiter)
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
    }

    #[tokio::test]
    async fn a_namespace_holds_at_most_its_cap() {
        let slots = FairSlots::new(3, 2);
        let a1 = granted_soon(&slots, "a").await.unwrap();
        let _a2 = granted_soon(&slots, "a").await.unwrap();
        assert!(granted_soon(&slots, "a").await.is_none(), "a is at its cap");
        let b = granted_soon(&slots, "b").await.unwrap();
        assert!(granted_soon(&slots, "b").await.is_none(), "no slot is free");
        drop(b);
        drop(a1);
        assert!(granted_soon(&slots, "a").await.is_some());
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_passes_its_slot_on() {
        let slots = FairSlots::new(1, 1);
        let held = slots.acquire("a").await.unwrap();
        assert!(
            granted_soon(&slots, "b").await.is_none(),
            "b gave up waiting"
        );
        let c = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire("c").await.unwrap() })
        };
        tokio::task::yield_now().await;
        drop(held);
        drop(
            tokio::time::timeout(Duration::from_secs(1), c)
                .await
                .unwrap()
                .unwrap(),
        );
        assert!(
            granted_soon(&slots, "d").await.is_some(),
            "no slot was lost"
        );
    }
}
