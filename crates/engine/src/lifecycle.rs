//! The finalizer that keeps an object until its controller has cleaned up after it.
//!
//! Both writes are JSON patches guarded by a `test` operation, so a finalizer that another writer
//! added or removed meanwhile is never overwritten: a failed test is a 422 and the next pass looks
//! again at the object as it is then.

use kube::api::{Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The name under which a failing finalizer write appears in conditions and metrics.
pub const FINALIZER_STEP: &str = "Finalizer";

/// Where an object stands with respect to one finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerState {
    /// Alive, finalizer not yet added.
    Missing,
    /// Alive, finalizer in place.
    Present,
    /// Being deleted, finalizer still in place: cleanup is due.
    Deleting,
    /// Being deleted, finalizer already removed: nothing left for this controller.
    Released,
}

/// Where `obj` stands with respect to `finalizer`.
pub fn finalizer_state<K: Resource>(obj: &K, finalizer: &str) -> FinalizerState {
    let present = obj.finalizers().iter().any(|f| f == finalizer);
    match (obj.meta().deletion_timestamp.is_some(), present) {
        (false, false) => FinalizerState::Missing,
        (false, true) => FinalizerState::Present,
        (true, true) => FinalizerState::Deleting,
        (true, false) => FinalizerState::Released,
    }
}

/// The JSON patch adding `finalizer` to an object whose finalizers are `current`.
///
/// Appending (`/-`) never replaces anything; creating the list is guarded by a test that there
/// is none yet, so a concurrent writer's first finalizer is not replaced by ours.
pub fn add_patch(current: &[String], finalizer: &str) -> Value {
    if current.is_empty() {
        json!([
            { "op": "test", "path": "/metadata/finalizers", "value": null },
            { "op": "add", "path": "/metadata/finalizers", "value": [finalizer] }
        ])
    } else {
        json!([{ "op": "add", "path": "/metadata/finalizers/-", "value": finalizer }])
    }
}

/// The JSON patch removing `finalizer`, or `None` when `current` does not hold it. The test makes
/// sure the index still holds our finalizer when the patch lands.
pub fn remove_patch(current: &[String], finalizer: &str) -> Option<Value> {
    let index = current.iter().position(|f| f == finalizer)?;
    Some(json!([
        { "op": "test", "path": format!("/metadata/finalizers/{index}"), "value": finalizer },
        { "op": "remove", "path": format!("/metadata/finalizers/{index}") }
    ]))
}

/// Adds `finalizer` to `obj`; returns the object as the write left it.
pub async fn add_finalizer<K: Resource<DynamicType = ()> + DeserializeOwned>(
    client: &Client,
    obj: &K,
    finalizer: &str,
    field_manager: &str,
) -> Result<K, kube::Error> {
    let patch = add_patch(obj.finalizers(), finalizer);
    let answer = json_patch(client, obj, patch, field_manager).await?;
    serde_json::from_value(answer).map_err(kube::Error::SerdeError)
}

/// Removes `finalizer` from `obj`. An object already gone counts as done.
pub async fn remove_finalizer<K: Resource<DynamicType = ()>>(
    client: &Client,
    obj: &K,
    finalizer: &str,
    field_manager: &str,
) -> Result<(), kube::Error> {
    let Some(patch) = remove_patch(obj.finalizers(), finalizer) else {
        return Ok(());
    };
    match json_patch(client, obj, patch, field_manager).await {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => other.map(|_| ()),
    }
}

async fn json_patch<K: Resource<DynamicType = ()>>(
    client: &Client,
    obj: &K,
    patch: Value,
    field_manager: &str,
) -> Result<Value, kube::Error> {
    let patch: json_patch::Patch =
        serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
    let url = K::url_path(&(), obj.namespace().as_deref());
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    let request = kube::core::Request::new(url)
        .patch(&obj.name_any(), &params, &Patch::<()>::Json(patch))
        .map_err(kube::Error::BuildRequest)?;
    client.request(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_finalizer_is_added_only_if_there_is_still_none() {
        let patch = add_patch(&[], "x/f");
        assert_eq!(patch[0]["op"], "test");
        assert_eq!(patch[0]["value"], Value::Null);
        assert_eq!(patch[1]["value"], json!(["x/f"]));
        let appended = add_patch(&["other".to_owned()], "x/f");
        assert_eq!(appended[0]["path"], "/metadata/finalizers/-");
    }

    #[test]
    fn removal_tests_the_index_it_removes() {
        let current = ["a".to_owned(), "x/f".to_owned()];
        let patch = remove_patch(&current, "x/f").expect("present");
        assert_eq!(patch[0]["path"], "/metadata/finalizers/1");
        assert_eq!(patch[0]["value"], "x/f");
        assert!(remove_patch(&current[..1], "x/f").is_none());
    }
}
