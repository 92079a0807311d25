//! Writing status only when it changed.
//!
//! The engine compares the status the reconcile computed with the one the object has, as JSON
//! after both went through the same Rust type, and sends a JSON merge patch with just the
//! difference. No difference, no request: a reconcile that finds nothing to do writes nothing,
//! and so triggers no watch event in any other controller.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::ErrorCategory;
use super::step::{StepRecord, StepState};

/// Where the last pass stopped, for `kubectl get -o wide` and for finding the pass in a trace
/// store. Absent while every step completes.
///
/// `attempts` counts consecutive passes that failed at the same step for the same reason; a
/// waiting step is progress, not an attempt, and keeps it at 0 — so a step that waits for a
/// remote job does not rewrite the status on every look.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Halted {
    /// The step that failed or waits.
    pub step: String,
    /// Its condition reason.
    pub reason: String,
    /// Consecutive failed passes at this step for this reason.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    /// The trace id of the last failed pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Halted {
    /// The halt after a pass with `records`, given the one before it.
    pub fn after(
        previous: Option<&Halted>,
        records: &[StepRecord],
        trace_id: Option<&str>,
    ) -> Option<Halted> {
        let record = records.iter().find(|r| !r.state.is_done())?;
        let (reason, failed) = match &record.state {
            StepState::Failed(err) => (err.reason(), true),
            StepState::Waiting(wait) => (wait.reason.as_ref(), false),
            StepState::Unchanged | StepState::Changed => return None,
        };
        let same = previous.filter(|p| p.step == record.name && p.reason == reason);
        Some(Halted {
            step: record.name.to_owned(),
            reason: reason.to_owned(),
            attempts: match (failed, same) {
                (false, _) => 0,
                (true, Some(p)) => p.attempts.saturating_add(1),
                (true, None) => 1,
            },
            trace_id: if failed {
                trace_id.map(str::to_owned)
            } else {
                None
            },
        })
    }
}

/// What became of a status write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusWrite {
    /// The API server already held this status: nothing was sent.
    Unchanged,
    /// Written.
    Written,
    /// The object no longer exists.
    Gone,
    /// The write failed.
    Failed(ErrorCategory),
}

/// A status the engine can maintain: it owns the `conditions`, the `observedGeneration` and
/// `halted`; the reconciler owns every other field. Implement it with [`conditioned_status!`]
/// for a struct with the conventional fields, or declare the struct with [`engine_status!`],
/// which adds those fields and implements this trait.
///
/// [`conditioned_status!`]: crate::conditioned_status
/// [`engine_status!`]: crate::engine_status
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
/// use reconcile_engine::Halted;
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
/// struct MyStatus {
///     phase: Option<String>,
///     conditions: Vec<Condition>,
///     observed_generation: Option<i64>,
///     halted: Option<Box<Halted>>,
/// }
///
/// reconcile_engine::conditioned_status!(MyStatus);
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
    /// Where the last pass stopped.
    fn halted(&self) -> Option<&Halted>;
    /// Sets where the last pass stopped.
    fn set_halted(&mut self, halted: Option<Halted>);
}

/// Implements [`ConditionedStatus`] for status structs with the conventional fields
/// `conditions: Vec<Condition>`, `observed_generation: Option<i64>` and
/// `halted: Option<Box<Halted>>` (boxed: it is absent while passes complete, and a cached
/// object would otherwise carry its full size inline).
#[macro_export]
macro_rules! conditioned_status {
    ($($status:ty),+ $(,)?) => {$(
        impl $crate::ConditionedStatus for $status {
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
            fn halted(&self) -> Option<&$crate::Halted> {
                self.halted.as_deref()
            }
            fn set_halted(&mut self, halted: Option<$crate::Halted>) {
                self.halted = halted.map(Box::new);
            }
        }
    )+};
}

/// Declares a status struct with the engine's three fields — `conditions`,
/// `observed_generation` and `halted`, spelled as [`conditioned_status!`] expects them — after
/// its own, and implements [`ConditionedStatus`] for it: the three fields are written once,
/// here, instead of in every status struct.
///
/// The struct's attributes (derives, `#[serde(rename_all = "camelCase")]`) and its own fields
/// with theirs are kept as written. The generated fields are exactly what a hand-written status
/// holds, so its JSON schema — and a CRD generated from it — does not change: `halted` is
/// documented as "Where the last reconcile stopped (absent while every step completes).". The
/// struct must derive `Serialize` and `Deserialize` (the fields carry `#[serde]` attributes),
/// and the calling crate must depend on `k8s-openapi`, as for [`conditioned_status!`].
///
/// [`conditioned_status!`]: crate::conditioned_status
///
/// ```
/// use reconcile_engine::ConditionedStatus;
/// use serde::{Deserialize, Serialize};
///
/// reconcile_engine::engine_status! {
///     #[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
///     #[serde(rename_all = "camelCase")]
///     pub struct GreetingStatus {
///         /// The ConfigMap holding the greeting.
///         #[serde(default, skip_serializing_if = "Option::is_none")]
///         pub config_map: Option<String>,
///     }
/// }
///
/// let mut status = GreetingStatus::default();
/// status.set_observed_generation(Some(3));
/// assert_eq!(status.observed_generation, Some(3));
/// assert!(status.conditions().is_empty() && status.halted.is_none());
/// assert_eq!(serde_json::to_string(&status).unwrap(), r#"{"observedGeneration":3}"#);
/// ```
#[macro_export]
macro_rules! engine_status {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $field_vis:vis $field:ident : $field_ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[$field_meta])*
                $field_vis $field: $field_ty,
            )*
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub conditions: Vec<::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub observed_generation: Option<i64>,
            /// Where the last reconcile stopped (absent while every step completes).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub halted: Option<Box<$crate::Halted>>,
        }

        $crate::conditioned_status!($name);
    };
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

/// The `{"status": …}` merge patch from `old` (the status as JSON, `null` when there is none) to
/// `new`, or `None` when there is nothing to write.
pub fn status_patch<S: Serialize>(
    old: &Value,
    new: &S,
) -> Result<Option<Value>, serde_json::Error> {
    let new = serde_json::to_value(new)?;
    if old.is_null() {
        // No status yet: an empty computed status would be a write of nothing.
        return Ok(match &new {
            Value::Object(map) if map.is_empty() => None,
            Value::Null => None,
            _ => Some(serde_json::json!({ "status": new })),
        });
    }
    Ok(merge_patch(old, &new).map(|diff| serde_json::json!({ "status": diff })))
}

/// Sends `patch` to the status subresource of `obj` and returns the resourceVersion it produced.
///
/// With `resource_version`, the write applies only to the object at exactly that version (a
/// 409 otherwise): the patch is a diff against the status of that version, and applied to
/// another it could leave a mix of two passes.
///
/// Built from `K::url_path` rather than `Api<K>` so that one function serves namespaced and
/// cluster-scoped kinds alike.
pub async fn patch_status<K>(
    client: &Client,
    obj: &K,
    patch: &Value,
    resource_version: Option<&str>,
    field_manager: &str,
) -> Result<Option<String>, kube::Error>
where
    K: Resource<DynamicType = ()>,
{
    let mut patch = patch.clone();
    if let (Some(rv), Value::Object(map)) = (resource_version, &mut patch) {
        map.insert(
            "metadata".to_owned(),
            serde_json::json!({ "resourceVersion": rv }),
        );
    }
    let url = K::url_path(&(), obj.namespace().as_deref());
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    let request = kube::core::Request::new(url)
        .patch_subresource("status", &obj.name_any(), &params, &Patch::Merge(&patch))
        .map_err(kube::Error::BuildRequest)?;
    let answer: Written = client.request(request).await?;
    Ok(answer.metadata.resource_version)
}

/// What a status write's answer is read for. The answer is the whole object, managedFields
/// included; reading it into a `Value` built a map of every field only to take one string, for
/// each of a Kyma run's 90 status writes per Kyma. Fields not named here are skipped, so a
/// field our type does not know cannot fail the read either.
#[derive(serde::Deserialize)]
struct Written {
    #[serde(default)]
    metadata: WrittenMeta,
}

#[derive(Default, serde::Deserialize)]
struct WrittenMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
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
            status_patch::<S>(&Value::Null, &S::default()).expect("serializes"),
            None
        );
        let new = S {
            phase: Some("Ready".into()),
            items: vec![],
        };
        assert_eq!(
            status_patch(&Value::Null, &new).expect("serializes"),
            Some(json!({"status": {"phase": "Ready"}}))
        );
        let written = serde_json::to_value(&new).expect("serializes");
        assert_eq!(status_patch(&written, &new).expect("serializes"), None);
        let cleared = S::default();
        assert_eq!(
            status_patch(&written, &cleared).expect("serializes"),
            Some(json!({"status": {"phase": null}}))
        );
    }

    /// The status a CRD declares is the same whether the three engine fields are written by
    /// hand, in any order among the others, or by `engine_status!`: adopting the macro leaves
    /// a generated CRD as it was.
    mod declared_once {
        use kube::CustomResourceExt;
        use schemars::JsonSchema;
        use serde::{Deserialize, Serialize};

        use crate::Halted;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

        #[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct HandStatus {
            /// What the object is doing.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub phase: Option<String>,
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub conditions: Vec<Condition>,
            /// Name of a Secret.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub secret_ref: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub observed_generation: Option<i64>,
            /// Where the last reconcile stopped (absent while every step completes).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub halted: Option<Box<Halted>>,
        }
        crate::conditioned_status!(HandStatus);

        crate::engine_status! {
            #[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
            #[serde(rename_all = "camelCase")]
            pub struct DeclaredStatus {
                /// What the object is doing.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub phase: Option<String>,
                /// Name of a Secret.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub secret_ref: Option<String>,
            }
        }

        crate::engine_status! {
            /// A status with nothing of its own.
            #[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
            pub struct BareStatus {}
        }

        #[derive(kube::CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
        #[kube(
            group = "test.example",
            version = "v1",
            kind = "Hand",
            status = "HandStatus"
        )]
        pub struct HandSpec {
            value: i64,
        }

        #[derive(kube::CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
        #[kube(
            group = "test.example",
            version = "v1",
            kind = "Declared",
            status = "DeclaredStatus"
        )]
        pub struct DeclaredSpec {
            value: i64,
        }

        fn status_schema(
            crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        ) -> String {
            let schema = crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| s.properties.as_ref())
                .and_then(|p| p.get("status"))
                .expect("a status schema");
            serde_json::to_string_pretty(schema).expect("serializes")
        }

        #[test]
        fn the_generated_crd_schema_is_the_hand_written_ones() {
            let hand = status_schema(&Hand::crd());
            assert!(hand.contains("Where the last reconcile stopped"), "{hand}");
            assert_eq!(status_schema(&Declared::crd()), hand);
        }

        #[test]
        fn the_declared_status_reads_and_writes_like_the_hand_written_one() {
            use crate::ConditionedStatus;
            let mut declared = DeclaredStatus {
                phase: Some("Ready".into()),
                ..DeclaredStatus::default()
            };
            declared.set_observed_generation(Some(2));
            declared.set_halted(Some(Halted {
                step: "SVMReady".into(),
                reason: "NotYet".into(),
                ..Halted::default()
            }));
            let json = serde_json::to_value(&declared).expect("serializes");
            let hand: HandStatus = serde_json::from_value(json.clone()).expect("reads back");
            assert_eq!(serde_json::to_value(&hand).expect("serializes"), json);
            assert_eq!(hand.halted.as_deref(), declared.halted());
            let bare = BareStatus::default();
            assert_eq!(serde_json::to_string(&bare).expect("serializes"), "{}");
        }
    }
}
