//! What a controller remembers of each object between passes: the status it last wrote until
//! the cache shows it, the fingerprint it last saw, the objects it released, and — for a
//! reconciler that keeps no engine status — what its last pass reported.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde::Serialize;

use crate::events::{EventMemory, PlannedEvent};
use crate::step::StepRecord;

/// What the engine last wrote to an object's status: until the cache shows the object at
/// `to`, the cache's status may be older than the API server's. Dropped as soon as the cache
/// has caught up, so it exists only for objects with a write in flight.
#[derive(Clone)]
pub(crate) struct Written<S> {
    /// The resourceVersion the write produced.
    pub(crate) to: String,
    /// The status as written.
    pub(crate) status: S,
}

impl<S> Written<S> {
    /// Whether the server holds this write while a copy of the object at `seen` does not show
    /// it yet.
    pub(crate) fn ahead_of(&self, seen: Option<&str>) -> bool {
        lags(&self.to, seen)
    }
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

/// What, besides the spec (via `generation`), a reconcile may depend on. Objects without a
/// generation fall back to the resourceVersion, i.e. every change counts.
pub(crate) fn fingerprint<K: Resource>(obj: &K) -> u64 {
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One controller's memory of the objects of its kind, with status type `S`.
pub(crate) struct Memory<S> {
    written: Mutex<HashMap<Key, Written<S>>>,
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

impl<S> Default for Memory<S> {
    fn default() -> Self {
        Memory {
            written: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            released: Mutex::new(HashMap::new()),
            event_memory: Mutex::new(HashMap::new()),
        }
    }
}

impl<S: Clone + Default + Serialize> Memory<S> {
    /// Records `fingerprint` for `obj_ref`; whether it differs from the one known before.
    pub(crate) fn saw<K: Resource<DynamicType = ()>>(
        &self,
        obj_ref: &ObjectRef<K>,
        fingerprint: u64,
    ) -> bool {
        lock(&self.seen).insert(key_of(obj_ref), fingerprint) != Some(fingerprint)
    }

    /// The object is gone: nothing it was seen as, or released as, holds any longer.
    pub(crate) fn unsee<K: Resource<DynamicType = ()>>(&self, obj_ref: &ObjectRef<K>) {
        lock(&self.seen).remove(&key_of(obj_ref));
        lock(&self.released).remove(&key_of(obj_ref));
    }

    /// `obj`'s cleanup completed and our finalizer is off it.
    pub(crate) fn release<K: Resource<DynamicType = ()>>(&self, obj_ref: &ObjectRef<K>, obj: &K) {
        if let Some(uid) = obj.uid() {
            lock(&self.released).insert(key_of(obj_ref), uid);
        }
    }

    /// Whether `obj` is a cached copy, from before our finalizer removal, of an object whose
    /// cleanup already completed: nobody else puts our finalizer back on the same object.
    pub(crate) fn already_released<K: Resource<DynamicType = ()>>(
        &self,
        obj_ref: &ObjectRef<K>,
        obj: &K,
    ) -> bool {
        let released = lock(&self.released);
        released
            .get(&key_of(obj_ref))
            .is_some_and(|uid| obj.meta().uid.as_ref() == Some(uid))
    }

    /// The cache shows the object at `resource_version`: our last write, if it has caught up
    /// with it, need not be remembered any longer.
    pub(crate) fn observed<K: Resource<DynamicType = ()>>(
        &self,
        obj_ref: &ObjectRef<K>,
        resource_version: Option<&str>,
    ) {
        let mut written = lock(&self.written);
        let key = key_of(obj_ref);
        if written
            .get(&key)
            .is_some_and(|w| !lags(&w.to, resource_version))
        {
            written.remove(&key);
        }
    }

    /// Our last write of the object's status, if the cache has not shown it yet.
    ///
    /// Read before the object is read from the cache, never after: the record is dropped once
    /// the cache shows the write, so a copy read earlier and a record looked up later could
    /// both miss it — the copy too old to show it, the record already gone — and a status
    /// write based on that copy would be refused (409) for a version the server has left.
    pub(crate) fn last_write<K: Resource<DynamicType = ()>>(
        &self,
        obj_ref: &ObjectRef<K>,
    ) -> Option<Written<S>> {
        lock(&self.written).get(&key_of(obj_ref)).cloned()
    }

    /// We wrote `status`, which produced the resourceVersion `to` (`None`: unknown, so nothing
    /// is remembered). `cached_version` reads the version the cache shows now.
    ///
    /// The watch often shows a write before its answer arrives: that event found nothing to
    /// drop, and no later one comes to an object that stays as it is, so the record would be
    /// held for good — a whole status per object that stays as it is. The record is made
    /// first and the cache read second: an event the cache takes after that read is handled
    /// (by [`observed`](Self::observed)) after the record exists, and drops it as usual.
    pub(crate) fn wrote<K: Resource<DynamicType = ()>>(
        &self,
        obj_ref: &ObjectRef<K>,
        to: Option<String>,
        status: &S,
        cached_version: impl FnOnce() -> Option<String>,
    ) {
        let Some(to) = to else {
            lock(&self.written).remove(&key_of(obj_ref));
            return;
        };
        lock(&self.written).insert(
            key_of(obj_ref),
            Written {
                to,
                status: status.clone(),
            },
        );
        self.observed(obj_ref, cached_version().as_deref());
    }

    /// How many status writes the cache has not shown yet.
    #[cfg(test)]
    fn unconfirmed(&self) -> usize {
        lock(&self.written).len()
    }

    /// The Events of a pass with `records` that follow from what the last pass reported, for a
    /// reconciler that keeps no engine status; remembers this pass for the next.
    pub(crate) fn plan_events<K: Resource<DynamicType = ()>>(
        &self,
        obj_ref: &ObjectRef<K>,
        records: &[StepRecord],
        generation: Option<i64>,
    ) -> Vec<PlannedEvent> {
        let mut memory = lock(&self.event_memory);
        let entry = memory.entry(key_of(obj_ref)).or_default();
        let planned = entry.plan(records);
        *entry = entry.after(records, generation, &Time(Timestamp::now()));
        planned
    }

    /// Drops what was written and reported: no longer known to be what the server holds, or
    /// the object is gone.
    pub(crate) fn forget<K: Resource<DynamicType = ()>>(&self, obj_ref: &ObjectRef<K>) {
        lock(&self.written).remove(&key_of(obj_ref));
        lock(&self.event_memory).remove(&key_of(obj_ref));
    }
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

    fn obj_ref(name: &str) -> ObjectRef<ConfigMap> {
        ObjectRef::new(name).within("ns")
    }

    #[test]
    fn a_write_the_watch_showed_before_its_answer_is_not_remembered() {
        let memory: Memory<String> = Memory::default();
        let a = obj_ref("a");
        // The event of our write is handled first, while nothing is recorded yet...
        memory.observed(&a, Some("10"));
        // ...then the answer arrives; the cache already shows the write.
        memory.wrote(&a, Some("10".into()), &"new".into(), || Some("10".into()));
        assert_eq!(memory.unconfirmed(), 0, "nothing is left to wait for");

        // The usual order: the answer first, the cache behind it until its event.
        let b = obj_ref("b");
        memory.wrote(&b, Some("20".into()), &"new".into(), || Some("19".into()));
        assert_eq!(memory.unconfirmed(), 1);
        let last = memory.last_write(&b).expect("the write is remembered");
        assert!(
            last.ahead_of(Some("19")),
            "the stale cache is overruled by our write"
        );
        assert_eq!((last.to.as_str(), last.status.as_str()), ("20", "new"));
        memory.observed(&b, Some("20"));
        assert_eq!(memory.unconfirmed(), 0);

        // An answer without a version forgets what an earlier write left.
        memory.wrote(&b, Some("30".into()), &"x".into(), || None);
        memory.wrote(&b, None, &"y".into(), || None);
        assert_eq!(memory.unconfirmed(), 0);
    }
}
