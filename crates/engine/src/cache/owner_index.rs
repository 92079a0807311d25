//! The owner index: a parent's children by its uid, without scanning the store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::meta::{SharedRef, lean_ref};

/// Child references by owner UID, maintained from the watch stream.
///
/// Lets a parent's reconcile find its children in O(children) instead of scanning every cached
/// object — at 72,000 children and 4,000 parents the difference is the whole reconcile budget.
/// Each child's reference and each owner's uid are held once and shared between the two maps:
/// at that scale a copy per map was a third of the cache's memory.
pub struct OwnerIndex<K: Resource<DynamicType = ()>> {
    inner: RwLock<IndexInner<K>>,
}

struct IndexInner<K: Resource<DynamicType = ()>> {
    children: HashMap<Arc<str>, HashSet<Arc<ObjectRef<K>>>>,
    owners: HashMap<Arc<ObjectRef<K>>, Box<[Arc<str>]>>,
}

impl<K: Resource<DynamicType = ()>> Default for IndexInner<K> {
    fn default() -> Self {
        IndexInner {
            children: HashMap::new(),
            owners: HashMap::new(),
        }
    }
}

impl<K> Default for OwnerIndex<K>
where
    K: Resource<DynamicType = ()>,
{
    fn default() -> Self {
        OwnerIndex {
            inner: RwLock::new(IndexInner::default()),
        }
    }
}

impl<K: Resource<DynamicType = ()>> std::fmt::Debug for OwnerIndex<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerIndex")
            .field("owners", &self.owner_count())
            .finish()
    }
}

impl<K> OwnerIndex<K>
where
    K: Resource<DynamicType = ()>,
{
    /// References to the objects that list `owner_uid` in their `ownerReferences`.
    pub fn children(&self, owner_uid: &str) -> Vec<ObjectRef<K>> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner
            .children
            .get(owner_uid)
            .map(|set| set.iter().map(|r| (**r).clone()).collect())
            .unwrap_or_default()
    }

    /// Number of owners with at least one child.
    pub fn owner_count(&self) -> usize {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.children.len()
    }

    pub(super) fn apply(&self, key: &SharedRef<K>, obj: &K) {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        inner.apply(key, obj);
    }

    pub(super) fn delete(&self, obj: &K) {
        let key = lean_ref(obj);
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        inner.remove(&key);
    }

    /// Replaces the whole index with `fresh`, built aside from a re-list.
    ///
    /// Swapped in under one write lock: a parent's pass that reads the index meanwhile sees
    /// either the old children or the new ones, never an empty or half-filled index — which
    /// would make it create its children a second time.
    pub(super) fn install(&self, fresh: IndexBuild<K>) {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        *inner = fresh.0;
    }
}

/// An owner index being built from a re-list's objects as they arrive, to
/// [`install`](OwnerIndex::install) when it ends: a packed store would otherwise decode every
/// object once more to find its owners.
pub(super) struct IndexBuild<K: Resource<DynamicType = ()>>(IndexInner<K>);

impl<K: Resource<DynamicType = ()>> Default for IndexBuild<K> {
    fn default() -> Self {
        IndexBuild(IndexInner::default())
    }
}

impl<K: Resource<DynamicType = ()>> IndexBuild<K> {
    pub(super) fn apply(&mut self, key: &SharedRef<K>, obj: &K) {
        self.0.apply(key, obj);
    }
}

impl<K: Resource<DynamicType = ()>> IndexInner<K> {
    fn apply(&mut self, key: &SharedRef<K>, obj: &K) {
        let unchanged = self.owners.get(key).is_some_and(|uids| {
            uids.len() == obj.owner_references().len()
                && uids
                    .iter()
                    .zip(obj.owner_references())
                    .all(|(uid, o)| **uid == *o.uid)
        });
        if unchanged {
            return;
        }
        self.remove(key);
        if obj.owner_references().is_empty() {
            return;
        }
        let mut uids = Vec::with_capacity(obj.owner_references().len());
        for owner in obj.owner_references() {
            let uid: Arc<str> = match self.children.get_key_value(owner.uid.as_str()) {
                Some((uid, _)) => uid.clone(),
                None => Arc::from(owner.uid.as_str()),
            };
            self.children
                .entry(uid.clone())
                .or_default()
                .insert(key.clone());
            uids.push(uid);
        }
        self.owners.insert(key.clone(), uids.into_boxed_slice());
    }

    fn remove(&mut self, key: &ObjectRef<K>) {
        let Some(uids) = self.owners.remove(key) else {
            return;
        };
        for uid in uids.iter() {
            if let Some(set) = self.children.get_mut(uid) {
                set.remove(key);
                if set.is_empty() {
                    self.children.remove(uid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::fixtures::cm;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn entry(obj: ConfigMap) -> (SharedRef<ConfigMap>, Arc<ConfigMap>) {
        (Arc::new(lean_ref(&obj)), Arc::new(obj))
    }

    fn apply(index: &OwnerIndex<ConfigMap>, obj: ConfigMap) {
        let (key, obj) = entry(obj);
        index.apply(&key, &obj);
    }

    #[test]
    fn index_follows_applies_and_deletes() {
        let index = OwnerIndex::<ConfigMap>::default();
        apply(&index, cm("a", &["p1"]));
        apply(&index, cm("b", &["p1", "p2"]));
        let mut kids: Vec<_> = index.children("p1").into_iter().map(|r| r.name).collect();
        kids.sort();
        assert_eq!(kids, ["a", "b"]);
        // Re-parenting moves the child.
        apply(&index, cm("a", &["p2"]));
        assert_eq!(index.children("p1").len(), 1);
        assert_eq!(index.children("p2").len(), 2);
        index.delete(&cm("b", &[]));
        assert!(index.children("p1").is_empty());
        assert_eq!(index.owner_count(), 1);
        let mut fresh = IndexBuild::default();
        let (key, obj) = entry(cm("c", &["p3"]));
        fresh.apply(&key, &obj);
        index.install(fresh);
        assert!(index.children("p2").is_empty());
        assert_eq!(index.children("p3").len(), 1);
    }

    /// A parent's pass may read the index while a re-list rebuilds it; it must find its
    /// children there all along, or it creates them again.
    #[test]
    fn a_rebuild_never_shows_a_reader_an_empty_index() {
        let index = OwnerIndex::<ConfigMap>::default();
        let relisted = [entry(cm("a", &["p1"])), entry(cm("b", &["p1"]))];
        for (key, obj) in &relisted {
            index.apply(key, obj);
        }
        let mut fresh = IndexBuild::default();
        for (key, obj) in &relisted {
            assert_eq!(index.children("p1").len(), 2, "during the re-list");
            fresh.apply(key, obj);
        }
        index.install(fresh);
        assert_eq!(index.children("p1").len(), 2);
    }
}
