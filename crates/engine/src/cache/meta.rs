//! What the cache does to every object's metadata and reference before it keeps them: strips
//! what no controller reads, and names the object by namespace and name only.

use std::sync::Arc;

use kube::Resource;
use kube::api::ObjectMeta;
use kube::runtime::reflector::ObjectRef;

/// The annotation `kubectl apply` (client-side) writes: the whole object again, as JSON.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Removes what a controller never reads but would pay memory for on every cached object.
pub fn strip_metadata(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = &mut meta.annotations {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

/// One object's reference, held once and shared by every long-lived map that names the object:
/// the store, the owner index and the work queues. A copy per map (a 96-byte reference and its
/// two strings each) was a tenth of the process at 19,000 cached objects.
pub type SharedRef<K> = Arc<ObjectRef<K>>;

/// A reference to `obj` by namespace and name only: [`ObjectRef::from_obj`] also copies the
/// resourceVersion and uid, which identity ignores and which long-lived maps would pay for.
pub fn lean_ref<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectRef<K> {
    let name = obj.meta().name.as_deref().unwrap_or_default();
    match obj.meta().namespace.as_deref() {
        Some(namespace) => ObjectRef::new(name).within(namespace),
        None => ObjectRef::new(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    #[test]
    fn strip_keeps_other_annotations() {
        let mut meta = ObjectMeta {
            managed_fields: Some(vec![ManagedFieldsEntry::default()]),
            annotations: Some(
                [
                    (LAST_APPLIED_ANNOTATION.to_owned(), "{}".to_owned()),
                    ("keep".to_owned(), "me".to_owned()),
                ]
                .into(),
            ),
            ..Default::default()
        };
        strip_metadata(&mut meta);
        assert!(meta.managed_fields.is_none());
        let annotations = meta.annotations.expect("kept");
        assert_eq!(annotations.len(), 1);
        assert_eq!(annotations["keep"], "me");
    }

    #[test]
    fn strip_leaves_no_empty_annotations() {
        let mut meta = ObjectMeta {
            annotations: Some([(LAST_APPLIED_ANNOTATION.to_owned(), "{}".to_owned())].into()),
            ..Default::default()
        };
        strip_metadata(&mut meta);
        assert!(meta.annotations.is_none());
    }
}
