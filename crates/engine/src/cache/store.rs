//! The store: the cached objects of one kind, held decoded or packed.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

use super::meta::{SharedRef, lean_ref};
use super::pack::{Held, Packing};
use crate::object::Object;

/// The cached objects of one kind, by namespace and name. Cloning is cheap and shares the
/// objects; only the cache's watch task writes.
///
/// Objects are held decoded and shared, or — for a kind with tens of thousands of objects that are
/// read one at a time ([`SharedCache::pack_objects`](crate::SharedCache::pack_objects)) — packed:
/// as their JSON, compressed (LZ4) against the JSON of the kind's first cached object, which holds
/// every field name and most values the others repeat. A packed object takes a fraction of its
/// decoded form (an `ObjectMeta` of options, a string allocation per name, uid and condition
/// field); each read decodes it again, which costs microseconds.
pub struct Store<K: Resource<DynamicType = ()>> {
    objects: Arc<RwLock<StoreInner<K>>>,
}

struct StoreInner<K: Resource<DynamicType = ()>> {
    /// Each object with the re-list it was last seen in.
    objects: HashMap<SharedRef<K>, (Held<K>, u32)>,
    /// Counts re-lists: what a re-list did not stamp with the current count is gone.
    listing: u32,
    /// Set: objects are packed from now on. Shared, so that the watch task packs an object
    /// before it takes the write lock, not while every reader waits on it.
    packing: Option<Arc<Packing>>,
}

impl<K: Resource<DynamicType = ()>> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            objects: self.objects.clone(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> Default for Store<K> {
    fn default() -> Self {
        Store {
            objects: Arc::new(RwLock::new(StoreInner {
                objects: HashMap::new(),
                listing: 0,
                packing: None,
            })),
        }
    }
}

impl<K: Object> Store<K> {
    /// The object at `key` (its resourceVersion and uid, if any, are ignored).
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        let inner = self.read();
        let (held, _) = inner.objects.get(key)?;
        inner.decoded(held)
    }

    /// Whether an object is cached at `key`. Unlike [`Store::get`] it never decodes a packed
    /// object: asked once per child event to find the owner, a decode there cost a Kyma's
    /// whole JSON for every HelmComponent status write.
    pub fn contains(&self, key: &ObjectRef<K>) -> bool {
        self.read().objects.contains_key(key)
    }

    /// The store's own reference to the object at `key`, to share rather than copy.
    pub fn shared_ref(&self, key: &ObjectRef<K>) -> Option<SharedRef<K>> {
        self.read()
            .objects
            .get_key_value(key)
            .map(|(r, _)| r.clone())
    }

    /// The references of every cached object.
    pub fn keys(&self) -> Vec<SharedRef<K>> {
        self.read().objects.keys().cloned().collect()
    }

    /// Every cached object. A packed store decodes each: meant for kinds held decoded.
    pub fn state(&self) -> Vec<Arc<K>> {
        let inner = self.read();
        inner
            .objects
            .values()
            .filter_map(|(held, _)| inner.decoded(held))
            .collect()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether no object is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether objects are packed
    /// ([`SharedCache::pack_objects`](crate::SharedCache::pack_objects)).
    pub fn is_packed(&self) -> bool {
        self.read().packing.is_some()
    }

    pub(super) fn pack_objects(&self) {
        let mut inner = self.write();
        inner.packing.get_or_insert_default();
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, StoreInner<K>> {
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, StoreInner<K>> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `obj` and returns its shared reference and the object to hand to subscribers.
    ///
    /// A decoded store keeps a copy, not the decoded object itself: decoding grows each list by
    /// doubling, so a one-entry `ownerReferences` keeps room for four and three conditions for
    /// four, a few hundred bytes per object; a clone allocates exactly what it holds.
    pub(super) fn apply(&self, obj: K) -> (SharedRef<K>, Arc<K>) {
        let lean = lean_ref(&obj);
        let packing = self.read().packing.clone();
        let (held, obj) = match packing.and_then(|p| p.pack(&obj)) {
            Some(packed) => (Held::Packed(packed), Arc::new(obj)),
            None => {
                let copy = Arc::new(obj.clone());
                (Held::Decoded(copy.clone()), copy)
            }
        };
        let mut inner = self.write();
        let listing = inner.listing;
        let key = match inner.objects.get_key_value(&lean) {
            Some((key, _)) => key.clone(),
            None => Arc::new(lean),
        };
        inner.objects.insert(key.clone(), (held, listing));
        (key, obj)
    }

    pub(super) fn delete(&self, obj: &K) {
        self.write().objects.remove(&lean_ref(obj));
    }

    /// A re-list begins: from now on objects are stamped with a new count.
    pub(super) fn begin_listing(&self) {
        let mut inner = self.write();
        inner.listing = inner.listing.wrapping_add(1);
    }

    /// A re-list ended: removes and returns what it did not list — objects deleted while no
    /// watch ran, of which no Delete event will ever tell.
    pub(super) fn end_listing(&self) -> Vec<Arc<K>> {
        let mut inner = self.write();
        let listing = inner.listing;
        let gone: Vec<_> = inner
            .objects
            .extract_if(|_, (_, seen)| *seen != listing)
            .map(|(_, (held, _))| held)
            .collect();
        gone.iter().filter_map(|held| inner.decoded(held)).collect()
    }
}

impl<K: Object> StoreInner<K> {
    fn decoded(&self, held: &Held<K>) -> Option<Arc<K>> {
        held.decoded(self.packing.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::fixtures::cm;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::ResourceExt;
    use serde::{Deserialize, Serialize};

    /// A re-list replaces objects in place and drops exactly those it did not list, also when
    /// an earlier attempt of it broke off half-way.
    #[test]
    fn a_relist_keeps_one_copy_and_removes_what_it_did_not_list() {
        let store = Store::<ConfigMap>::default();
        let (first_ref, first) = store.apply(cm("a", &[]));
        store.apply(cm("b", &[]));
        store.apply(cm("c", &[]));
        store.begin_listing();
        store.apply(cm("b", &[]));
        // The list broke off and started again: only the second attempt counts.
        store.begin_listing();
        let (relisted_ref, relisted) = store.apply(cm("a", &[]));
        assert_eq!(store.len(), 3, "old and listed objects are never both held");
        let cached = store.get(&lean_ref(&*first)).expect("a is cached");
        assert!(Arc::ptr_eq(&cached, &relisted));
        assert!(
            Arc::ptr_eq(&first_ref, &relisted_ref),
            "one reference per object, however often it changes"
        );
        let mut gone: Vec<_> = store
            .end_listing()
            .iter()
            .map(|obj| obj.name_any())
            .collect();
        gone.sort();
        assert_eq!(gone, ["b", "c"]);
        assert_eq!(store.len(), 1);
        store.delete(&cm("a", &[]));
        assert!(store.is_empty());
    }

    fn data(name: &str, value: &str) -> ConfigMap {
        let mut obj = cm(name, &["owner-uid"]);
        obj.metadata.uid = Some(format!("uid-of-{name}"));
        obj.data = Some([("key".to_owned(), value.to_owned())].into());
        obj
    }

    /// A packed store hands back exactly what it was given, keeps one reference per object
    /// and re-lists like a decoded one; objects after the first take a fraction of their JSON.
    #[test]
    fn a_packed_store_returns_what_it_was_given() {
        let store = Store::<ConfigMap>::default();
        store.pack_objects();
        assert!(store.is_packed());
        let objects: Vec<_> = (0..50)
            .map(|i| {
                data(
                    &format!("cm-{i}"),
                    &format!("value {i} {}", "x".repeat(200)),
                )
            })
            .collect();
        for obj in &objects {
            store.apply(obj.clone());
        }
        for obj in &objects {
            assert_eq!(store.get(&lean_ref(obj)).as_deref(), Some(obj));
        }
        {
            let inner = store.read();
            let (held, _) = inner.objects.get(&lean_ref(&objects[49])).expect("cached");
            let Held::Packed(bytes) = held else {
                panic!("held decoded");
            };
            let json = serde_json::to_vec(&objects[49]).expect("json");
            assert!(
                bytes.len() * 4 < json.len(),
                "{} packed bytes for {} of JSON",
                bytes.len(),
                json.len()
            );
        }
        let (first_ref, _) = store.apply(data("cm-0", "changed"));
        store.begin_listing();
        let (relisted_ref, _) = store.apply(data("cm-0", "changed again"));
        assert!(Arc::ptr_eq(&first_ref, &relisted_ref));
        let gone = store.end_listing();
        assert_eq!(gone.len(), 49);
        assert!(gone.contains(&Arc::new(objects[7].clone())));
        assert_eq!(
            store.get(&lean_ref(&objects[0])).as_deref(),
            Some(&data("cm-0", "changed again"))
        );
    }

    #[derive(
        kube::CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema,
    )]
    #[kube(
        group = "test.example",
        version = "v1",
        kind = "Ratio",
        namespaced,
        derive = "PartialEq"
    )]
    struct RatioSpec {
        value: f64,
    }

    /// JSON has no NaN (serde writes null, which no f64 reads back): such an object is held
    /// decoded rather than lost, and the others stay packed.
    #[test]
    fn an_object_that_does_not_survive_packing_is_held_decoded() {
        let store = Store::<Ratio>::default();
        store.pack_objects();
        let good = Ratio::new("good", RatioSpec { value: 0.5 });
        let nan = Ratio::new("nan", RatioSpec { value: f64::NAN });
        store.apply(good.clone());
        store.apply(nan.clone());
        assert_eq!(store.get(&lean_ref(&good)).as_deref(), Some(&good));
        let held = store.get(&lean_ref(&nan)).expect("kept");
        assert!(held.spec.value.is_nan());
        assert_eq!(store.len(), 2);
    }
}
