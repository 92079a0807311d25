//! What the Kyma controller remembers between passes, in memory only: each Kyma's reconciling
//! episode (so `waitingFor` is refreshed once), and the child writes it expects to see back.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::api::{KymaState, KymaStatus};
use reconcile_engine::Sparse;

use super::*;

/// When each reconciling Kyma's `waitingFor` may be refreshed, by a hash of its UID.
pub(super) struct Progress {
    /// The least time between `reconciling` and the refresh of its `waitingFor`.
    interval: Duration,
    episodes: Mutex<HashMap<u64, Episode>>,
}

/// A Kyma's time in `reconciling`, as far as this process has seen it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Episode {
    /// When its `waitingFor` was last written.
    written: Instant,
    /// Whether the one refresh of `waitingFor` has been written.
    refreshed: bool,
}

impl Progress {
    pub(super) fn new(interval: Duration) -> Self {
        Progress {
            interval,
            episodes: Mutex::new(HashMap::new()),
        }
    }

    /// The `waitingFor` to show at `now`: `computed`, unless the status stays `reconciling`
    /// with components only reaching success and the refresh is not due — then `current`, and
    /// when the refresh is due (`None`: not before `success`). `listed` are the components the
    /// spec lists.
    pub(super) fn show(
        &self,
        kyma_key: u64,
        current: &KymaStatus,
        computed: Vec<String>,
        listed: &[&str],
        now: Instant,
    ) -> (Vec<String>, Option<Duration>) {
        let mut episodes = self.episodes.lock().unwrap_or_else(PoisonError::into_inner);
        if computed.is_empty() {
            episodes.remove(&kyma_key);
            return (computed, None);
        }
        let started = Episode {
            written: now,
            refreshed: false,
        };
        if current.status != Some(KymaState::Reconciling) {
            episodes.insert(kyma_key, started);
            return (computed, None);
        }
        if current.waiting_for == computed {
            return (computed, None);
        }
        // The spec changed: a component the list does not show yet, or one it shows that is no
        // longer listed, is news, written at once.
        if computed.iter().any(|c| !current.waiting_for.contains(c))
            || current
                .waiting_for
                .iter()
                .any(|c| !listed.contains(&c.as_str()))
        {
            episodes.insert(kyma_key, started);
            return (computed, None);
        }
        match episodes.get_mut(&kyma_key) {
            Some(episode) if episode.refreshed => (current.waiting_for.clone(), None),
            Some(episode) => {
                let since = now.saturating_duration_since(episode.written);
                if since < self.interval {
                    (current.waiting_for.clone(), Some(self.interval - since))
                } else {
                    episode.written = now;
                    episode.refreshed = true;
                    (computed, None)
                }
            }
            // Reconciling since before this process started: its one refresh is now.
            None => {
                episodes.insert(
                    kyma_key,
                    Episode {
                        written: now,
                        refreshed: true,
                    },
                );
                (computed, None)
            }
        }
    }

    /// A `waitingFor` written at once, not held back (a failing pass writes its status anyway).
    pub(super) fn written_now(&self, kyma_key: u64, now: Instant) {
        let mut episodes = self.episodes.lock().unwrap_or_else(PoisonError::into_inner);
        let episode = episodes.entry(kyma_key).or_insert(Episode {
            written: now,
            refreshed: false,
        });
        episode.written = now;
    }

    pub(super) fn forget(&self, kyma_key: u64) {
        self.episodes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&kyma_key);
    }
}

pub(super) fn key(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// Creates and deletes sent but not yet seen in the cache, by a hash of the child's
/// `namespace/name` — client-go's "expectations", so that a pass woken by one child's event does
/// not post the siblings created a moment ago once more.
#[derive(Default)]
pub(super) struct Expectations {
    pending: Mutex<HashMap<u64, (Expected, Instant)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expected {
    Created,
    Deleted,
}

impl Expectations {
    pub(super) fn expect(&self, child: &str, what: Expected) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(child), (what, Instant::now()));
    }

    /// Whether `what` was done to `child` recently and the cache (which shows `cached`) has
    /// not caught up yet; drops expectations that are met or expired.
    pub(super) fn pending(&self, child: &str, what: Expected, cached: bool) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let k = key(child);
        let Some((expected, at)) = pending.get(&k).copied() else {
            return false;
        };
        let met = match expected {
            Expected::Created => cached,
            Expected::Deleted => !cached,
        };
        if met || at.elapsed() > EXPECTATION_TTL {
            pending.remove(&k);
            // A creation wave fills the map (72,000 children at 4,000 Kymas) and the passes
            // after it empty it again.
            pending.give_back_room();
            return false;
        }
        expected == what
    }

    pub(super) fn forget(&self, child: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.remove(&key(child)).is_some() {
            pending.give_back_room();
        }
    }

    /// The room the map keeps.
    #[cfg(test)]
    fn room(&self) -> usize {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_creation_waves_expectations_give_their_room_back_when_met() {
        let expectations = Expectations::default();
        let children: Vec<String> = (0..20_000).map(|i| format!("ns/kyma-{i}")).collect();
        for child in &children {
            expectations.expect(child, Expected::Created);
        }
        let wave = expectations.room();
        for child in &children[..10_000] {
            expectations.forget(child);
        }
        for child in &children[10_000..19_990] {
            assert!(!expectations.pending(child, Expected::Created, true), "met");
        }
        assert!(
            expectations.room() < wave / 8,
            "{} of {wave} kept",
            expectations.room()
        );
        assert!(
            children[19_990..]
                .iter()
                .all(|c| expectations.pending(c, Expected::Created, false)),
            "the unmet ones are still expected"
        );
    }
}
