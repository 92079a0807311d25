//! Writing status only when it changed.
//!
//! The engine compares the status the reconcile computed with the one the object has, as JSON
//! after both went through the same Rust type, and sends a JSON merge patch with just the
//! difference. No difference, no request: a reconcile that finds nothing to do writes nothing,
//! and so triggers no watch event in any other controller.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde_json::{Map, Value};

/// A status the engine can maintain: it owns the `conditions` and the `observedGeneration`, the
/// reconciler owns every other field.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
/// use ontap_operator::engine::ConditionedStatus;
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
/// struct MyStatus {
///     phase: Option<String>,
///     conditions: Vec<Condition>,
///     observed_generation: Option<i64>,
/// }
///
/// impl ConditionedStatus for MyStatus {
///     fn conditions(&self) -> &[Condition] { &self.conditions }
///     fn set_conditions(&mut self, c: Vec<Condition>) { self.conditions = c }
///     fn set_observed_generation(&mut self, g: Option<i64>) { self.observed_generation = g }
/// }
/// ```
pub trait ConditionedStatus:
    Clone + Default + PartialEq + Serialize + Send + Sync + 'static
{
    /// The current conditions.
    fn conditions(&self) -> &[Condition];
    /// Replaces the conditions.
    fn set_conditions(&mut self, conditions: Vec<Condition>);
    /// Sets the generation this status describes.
    fn set_observed_generation(&mut self, generation: Option<i64>);
}

/// Implements [`ConditionedStatus`] for status structs with the conventional fields
/// `conditions: Vec<Condition>` and `observed_generation: Option<i64>`.
#[macro_export]
macro_rules! conditioned_status {
    ($($status:ty),+ $(,)?) => {$(
        impl $crate::engine::ConditionedStatus for $status {
            fn conditions(&self) -> &[::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
                &self.conditions
            }
            fn set_conditions(
                &mut self,
                conditions: Vec<::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
            ) {
                self.conditions = conditions;
            }
            fn set_observed_generation(&mut self, generation: Option<i64>) {
                self.observed_generation = generation;
            }
        }
    )+};
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`, or `None` when they are equal.
///
/// Keys missing from `new` are set to `null` (deleted); arrays are replaced whole, as merge
/// patches require.
pub fn merge_patch(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, new_value) in new {
                match old.get(key) {
                    Some(old_value) => {
                        if let Some(diff) = merge_patch(old_value, new_value) {
                            patch.insert(key.clone(), diff);
                        }
                    }
                    // Adding a null is a no-op on the server; emitting it would be a write
                    // that changes nothing, every single loop.
                    None if new_value.is_null() => {}
                    None => {
                        patch.insert(key.clone(), new_value.clone());
                    }
                }
            }
            for key in old.keys() {
                if !new.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        // Scalars, arrays and type changes are replaced whole.
        _ if old == new => None,
        (_, new) => Some(new.clone()),
    }
}

/// The `{"status": …}` merge patch from `old` to `new`, or `None` when there is nothing to write.
pub fn status_patch<S: Serialize>(
    old: Option<&S>,
    new: &S,
) -> Result<Option<Value>, serde_json::Error> {
    let old = match old {
        Some(old) => serde_json::to_value(old)?,
        None => Value::Null,
    };
    let new = serde_json::to_value(new)?;
    if old.is_null() {
        // No status yet: an empty computed status would be a write of nothing.
        return Ok(match &new {
            Value::Object(map) if map.is_empty() => None,
            Value::Null => None,
            _ => Some(serde_json::json!({ "status": new })),
        });
    }
    Ok(merge_patch(&old, &new).map(|diff| serde_json::json!({ "status": diff })))
}

/// Sends `patch` to the status subresource of `obj`.
///
/// Built from `K::url_path` rather than `Api<K>` so that one function serves namespaced and
/// cluster-scoped kinds alike. No `resourceVersion` precondition: the engine is the only writer of
/// these fields, and a conflict would only turn a redundant write into a retry.
pub async fn patch_status<K>(
    client: &Client,
    obj: &K,
    patch: &Value,
    field_manager: &str,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()>,
{
    let url = K::url_path(&(), obj.namespace().as_deref());
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    let request = kube::core::Request::new(url)
        .patch_subresource("status", &obj.name_any(), &params, &Patch::Merge(patch))
        .map_err(kube::Error::BuildRequest)?;
    // The response body is not needed; `Value` avoids failing on fields our type does not know.
    let _: Value = client.request(request).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_give_no_patch() {
        let v = json!({"a": 1, "b": {"c": [1, 2]}});
        assert_eq!(merge_patch(&v, &v), None);
    }

    #[test]
    fn patch_contains_only_the_difference() {
        let old = json!({"phase": "Pending", "uuid": "u1", "nested": {"x": 1, "y": 2}});
        let new = json!({"phase": "Ready", "uuid": "u1", "nested": {"x": 1, "y": 3}});
        assert_eq!(
            merge_patch(&old, &new),
            Some(json!({"phase": "Ready", "nested": {"y": 3}}))
        );
    }

    #[test]
    fn removed_keys_become_null_and_arrays_are_replaced_whole() {
        let old = json!({"uuid": "u1", "conditions": [{"type": "A"}, {"type": "B"}]});
        let new = json!({"conditions": [{"type": "A"}]});
        assert_eq!(
            merge_patch(&old, &new),
            Some(json!({"uuid": null, "conditions": [{"type": "A"}]}))
        );
    }

    #[test]
    fn new_null_fields_are_not_written() {
        let old = json!({"a": 1});
        let new = json!({"a": 1, "b": null});
        assert_eq!(merge_patch(&old, &new), None);
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize)]
    struct S {
        #[serde(skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        items: Vec<u8>,
    }

    #[test]
    fn status_patch_wraps_in_status_and_skips_empty_first_write() {
        assert_eq!(
            status_patch::<S>(None, &S::default()).expect("serializes"),
            None
        );
        let new = S {
            phase: Some("Ready".into()),
            items: vec![],
        };
        assert_eq!(
            status_patch(None, &new).expect("serializes"),
            Some(json!({"status": {"phase": "Ready"}}))
        );
        assert_eq!(status_patch(Some(&new), &new).expect("serializes"), None);
        let cleared = S::default();
        assert_eq!(
            status_patch(Some(&new), &cleared).expect("serializes"),
            Some(json!({"status": {"phase": null}}))
        );
    }
}
