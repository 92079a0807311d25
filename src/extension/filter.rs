//! Which events start a reconcile, and what the operation annotation asks, as in Gardener's
//! extension library (`extensions/pkg/predicate/default.go`,
//! `pkg/controllerutils/reconciler/operation_annotation_wrapper.go`).
//!
//! Without the annotation, an Extension that last succeeded is left alone: gardenlet asks for
//! every reconcile with `gardener.cloud/operation=reconcile`. The controller's own status
//! writes therefore never trigger it again, not even during deletion.

use kube::ResourceExt;

use super::api::{
    Extension, LastOperationState, LastOperationType, OPERATION_ANNOTATION, operation,
};

/// The annotation values that start a reconcile (`wait-for-state` does not).
fn has_operation_annotation(ext: &Extension) -> bool {
    matches!(
        ext.annotations()
            .get(OPERATION_ANNOTATION)
            .map(String::as_str),
        Some(operation::RECONCILE | operation::RESTORE | operation::MIGRATE)
    )
}

/// A create event (also every object of the initial list after a restart).
pub fn admits_create(ext: &Extension) -> bool {
    let last_not_succeeded = ext
        .status
        .as_ref()
        .and_then(|s| s.last_operation.as_ref())
        .is_none_or(|op| op.state != LastOperationState::Succeeded);
    has_operation_annotation(ext) || ext.metadata.deletion_timestamp.is_some() || last_not_succeeded
}

/// An update event: the new object carries the annotation, or it is being deleted and the
/// change was not a status write.
pub fn admits_update(old: &Extension, new: &Extension) -> bool {
    has_operation_annotation(new)
        || (new.metadata.deletion_timestamp.is_some()
            && old.status.clone().unwrap_or_default() == new.status.clone().unwrap_or_default())
}

/// What the operation annotation asks before a reconcile runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnotationAction {
    /// `wait-for-state`: gardenlet is restoring the state; do nothing.
    Skip,
    /// `reconcile`: remove the annotation ([`REMOVE_OPERATION_ANNOTATION_PATCH`]), then
    /// reconcile.
    RemoveThenReconcile,
    /// No annotation, or `migrate`/`restore`, which stay until that operation succeeded.
    Reconcile,
}

pub fn annotation_action(ext: &Extension) -> AnnotationAction {
    match ext
        .annotations()
        .get(OPERATION_ANNOTATION)
        .map(String::as_str)
    {
        Some(operation::WAIT_FOR_STATE) => AnnotationAction::Skip,
        Some(operation::RECONCILE) => AnnotationAction::RemoveThenReconcile,
        _ => AnnotationAction::Reconcile,
    }
}

/// Whether a successful operation of this type ends by removing the operation annotation
/// (restore and migrate do; a reconcile removed it before it started).
pub fn removes_annotation_after_success(op: LastOperationType) -> bool {
    matches!(op, LastOperationType::Restore | LastOperationType::Migrate)
}

/// JSON merge patch removing the operation annotation (`gardener.cloud/timestamp` stays).
pub const REMOVE_OPERATION_ANNOTATION_PATCH: &str =
    r#"{"metadata":{"annotations":{"gardener.cloud/operation":null}}}"#;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ext(annotation: Option<&str>, deleting: bool, last: Option<&str>) -> Extension {
        let mut meta = json!({"name": "ontap", "namespace": "shoot--p--s"});
        if let Some(a) = annotation {
            meta["annotations"] = json!({"gardener.cloud/operation": a});
        }
        if deleting {
            meta["deletionTimestamp"] = json!("2026-03-01T10:00:00Z");
        }
        let status = match last {
            Some(state) => {
                json!({"lastOperation": {"type": "Reconcile", "state": state, "progress": 100,
                "description": "d", "lastUpdateTime": "2026-03-01T10:00:00Z"}})
            }
            None => Value::Null,
        };
        serde_json::from_value(
            json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Extension",
            "metadata": meta, "spec": {"type": "ontap"}, "status": status}),
        )
        .unwrap()
    }

    #[test]
    fn create_events() {
        assert!(admits_create(&ext(None, false, None)), "never reconciled");
        assert!(admits_create(&ext(None, false, Some("Error"))));
        assert!(!admits_create(&ext(None, false, Some("Succeeded"))));
        assert!(admits_create(&ext(
            Some("reconcile"),
            false,
            Some("Succeeded")
        )));
        assert!(admits_create(&ext(
            Some("migrate"),
            false,
            Some("Succeeded")
        )));
        assert!(admits_create(&ext(
            Some("restore"),
            false,
            Some("Succeeded")
        )));
        assert!(!admits_create(&ext(
            Some("wait-for-state"),
            false,
            Some("Succeeded")
        )));
        assert!(admits_create(&ext(None, true, Some("Succeeded"))));
    }

    #[test]
    fn update_events() {
        let done = ext(None, false, Some("Succeeded"));
        assert!(
            !admits_update(&done, &ext(None, false, Some("Error"))),
            "status writes alone do not count"
        );
        assert!(admits_update(
            &done,
            &ext(Some("reconcile"), false, Some("Succeeded"))
        ));
        assert!(!admits_update(
            &done,
            &ext(Some("wait-for-state"), false, Some("Succeeded"))
        ));
        // Deletion: the deletionTimestamp arriving counts, the controller's own status writes do not.
        let deleting = ext(None, true, Some("Succeeded"));
        assert!(admits_update(&done, &deleting));
        assert!(!admits_update(
            &deleting,
            &ext(None, true, Some("Processing"))
        ));
    }

    #[test]
    fn annotation_actions() {
        assert_eq!(
            annotation_action(&ext(Some("wait-for-state"), false, None)),
            AnnotationAction::Skip
        );
        assert_eq!(
            annotation_action(&ext(Some("reconcile"), false, None)),
            AnnotationAction::RemoveThenReconcile
        );
        assert_eq!(
            annotation_action(&ext(Some("migrate"), false, None)),
            AnnotationAction::Reconcile
        );
        assert_eq!(
            annotation_action(&ext(None, false, None)),
            AnnotationAction::Reconcile
        );
        assert!(removes_annotation_after_success(LastOperationType::Restore));
        assert!(!removes_annotation_after_success(
            LastOperationType::Reconcile
        ));
        let patch: Value = serde_json::from_str(REMOVE_OPERATION_ANNOTATION_PATCH).unwrap();
        assert!(patch["metadata"]["annotations"]["gardener.cloud/operation"].is_null());
    }
}
