//! The echo of one's own writes told apart; told on [`OwnWrites`], which the crate exports.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::Resource;
use tokio::sync::Notify;

/// Kind, namespace and name of a child.
type Key = (String, Option<String>, String);

/// How long the event of a child being written waits for the write's answer; past that it
/// reconciles the owner like any other change.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

enum State {
    /// A write was sent and its answer is awaited: the watch event may overtake it.
    Pending(Arc<Notify>),
    /// The resourceVersion our last write produced.
    Written(String),
}

/// Cheap to clone; clones share.
///
/// The writes a reconciler made to the children it owns, so that their watch events do not
/// reconcile the owner again.
///
/// The engine already ignores the events of its own status and finalizer writes. A reconciler that
/// creates or updates an owned child (a Secret holding what it provisioned) causes an event on that
/// child, which [`Registration::owns`](crate::Registration::owns) turns into another pass of the
/// owner — a pass that finds nothing to do, yet costs every request a pass makes. A reconciler that
/// records each such write here ([`OwnWrites::begin`], then [`PendingWrite::done`]) and returns the
/// registry from [`Reconciler::own_writes`](crate::Reconciler::own_writes) is spared it: the event
/// that shows the child at exactly the recorded resourceVersion is dropped once. Any other version
/// of the child — someone else's change, even one made right after ours — still reconciles the
/// owner.
#[derive(Clone, Default)]
pub struct OwnWrites {
    written: Arc<Mutex<HashMap<Key, State>>>,
}

impl std::fmt::Debug for OwnWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnWrites")
            .field("children", &self.lock().len())
            .finish()
    }
}

fn key<C: Resource<DynamicType = ()>>(child: &C) -> Option<Key> {
    let meta = child.meta();
    Some((
        C::kind(&()).into_owned(),
        meta.namespace.clone(),
        meta.name.clone()?,
    ))
}

/// A write of a child in flight: [`done`](Self::done) with what the API server returned;
/// dropped without it (the write failed), nothing is recorded.
#[must_use = "a pending write is recorded only by done()"]
pub struct PendingWrite {
    writes: OwnWrites,
    key: Key,
    notify: Arc<Notify>,
}

impl PendingWrite {
    /// Records `written`, the child as the API server returned it from our write.
    pub fn done<C: Resource<DynamicType = ()>>(self, written: &C) {
        if let Some(version) = written.meta().resource_version.clone() {
            self.writes
                .lock()
                .insert(self.key.clone(), State::Written(version));
        }
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        let mut written = self.writes.lock();
        if matches!(written.get(&self.key), Some(State::Pending(n)) if Arc::ptr_eq(n, &self.notify))
        {
            written.remove(&self.key);
        }
        self.notify.notify_waiters();
    }
}

impl OwnWrites {
    /// Announces a write of the child `name` of kind `C` in `namespace`, before it is sent:
    /// its watch event may arrive before its answer, and then waits for it.
    pub fn begin<C: Resource<DynamicType = ()>>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> PendingWrite {
        let key = (
            C::kind(&()).into_owned(),
            namespace.map(str::to_owned),
            name.to_owned(),
        );
        let notify = Arc::new(Notify::new());
        self.lock()
            .insert(key.clone(), State::Pending(notify.clone()));
        PendingWrite {
            writes: self.clone(),
            key,
            notify,
        }
    }

    /// Whether `seen` is the child exactly as we wrote it last; the record is used up. While
    /// our write's answer is awaited, waits for it (at most [`ANSWER_WITHIN`]).
    pub(crate) async fn is_own<C: Resource<DynamicType = ()>>(&self, seen: &C) -> bool {
        let Some(key) = key(seen) else {
            return false;
        };
        let Some(version) = seen.meta().resource_version.as_ref() else {
            return false;
        };
        loop {
            let notified = {
                let mut written = self.lock();
                match written.get(&key) {
                    Some(State::Written(ours)) if ours == version => {
                        written.remove(&key);
                        return true;
                    }
                    Some(State::Pending(notify)) => {
                        let mut notified = Box::pin(notify.clone().notified_owned());
                        // Registered before the lock goes: the answer cannot slip past.
                        notified.as_mut().enable();
                        notified
                    }
                    _ => return false,
                }
            };
            if tokio::time::timeout(ANSWER_WITHIN, notified).await.is_err() {
                return false;
            }
        }
    }

    /// Drops the record of a child that is gone.
    pub(crate) fn forget<C: Resource<DynamicType = ()>>(&self, gone: &C) {
        if let Some(key) = key(gone) {
            let mut written = self.lock();
            if matches!(written.get(&key), Some(State::Written(_))) {
                written.remove(&key);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, State>> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::ObjectMeta;

    fn secret(version: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("s".into()),
                namespace: Some("ns".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    #[tokio::test]
    async fn only_the_version_we_wrote_is_ours_and_only_once() {
        let writes = OwnWrites::default();
        assert!(!writes.is_own(&secret("1")).await);
        writes.begin::<Secret>(Some("ns"), "s").done(&secret("2"));
        // An older event still in flight, then someone else's later change: not ours.
        assert!(!writes.is_own(&secret("1")).await);
        assert!(writes.is_own(&secret("2")).await);
        assert!(!writes.is_own(&secret("2")).await, "used up");
        writes.begin::<Secret>(Some("ns"), "s").done(&secret("3"));
        writes.forget(&secret("4"));
        assert!(!writes.is_own(&secret("3")).await);
        // A failed write records nothing.
        drop(writes.begin::<Secret>(Some("ns"), "s"));
        assert!(!writes.is_own(&secret("5")).await);
    }

    #[tokio::test]
    async fn an_event_that_overtakes_the_answer_waits_for_it() {
        let writes = OwnWrites::default();
        let pending = writes.begin::<Secret>(Some("ns"), "s");
        let event = tokio::spawn({
            let writes = writes.clone();
            async move { writes.is_own(&secret("7")).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        pending.done(&secret("7"));
        assert!(event.await.unwrap_or(false));
    }
}
