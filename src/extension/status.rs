//! The Extension's status per Gardener's contract, and gardenlet's judgement of it.
//!
//! - [`compute_operation`] is Gardener's `ComputeOperationType`: which operation a pass runs.
//! - The `*_patch` functions build the JSON merge patches on `/status` that Gardener's extension
//!   library writes: Processing keeps `lastError` (gardenlet keeps seeing the old error while a
//!   retry runs), Error sets it and `observedGeneration`, and only Succeeded clears it.
//! - [`check_extension_object`] is gardenlet's `health.CheckExtensionObject`: exactly when it
//!   returns `Ok`, gardenlet's shoot flow takes the Extension as ready.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::{Value, json};

use super::api::{
    ErrorCode, Extension, LastOperationState, LastOperationType, OPERATION_ANNOTATION,
    TIMESTAMP_ANNOTATION, operation,
};
use super::errors::ExtensionFailure;

/// Gardener's `ComputeOperationType`: the first match wins.
pub fn compute_operation(ext: &Extension) -> LastOperationType {
    let annotation = ext
        .annotations()
        .get(OPERATION_ANNOTATION)
        .map(String::as_str);
    let last = ext.status.as_ref().and_then(|s| s.last_operation.as_ref());
    match (annotation, last) {
        (Some(operation::MIGRATE), _) => LastOperationType::Migrate,
        _ if ext.metadata.deletion_timestamp.is_some() => LastOperationType::Delete,
        (Some(operation::RESTORE), _) => LastOperationType::Restore,
        (_, None) => LastOperationType::Create,
        (_, Some(op))
            if op.state != LastOperationState::Succeeded
                && matches!(
                    op.type_,
                    LastOperationType::Create
                        | LastOperationType::Migrate
                        | LastOperationType::Restore
                ) =>
        {
            op.type_
        }
        _ => LastOperationType::Reconcile,
    }
}

/// Gardener's `ShouldSkipOperation`: a migrated Extension is left alone until it is migrated
/// again or restored.
pub fn should_skip_operation(ext: &Extension, op: LastOperationType) -> bool {
    let migrated = ext
        .status
        .as_ref()
        .and_then(|s| s.last_operation.as_ref())
        .is_some_and(|last| {
            last.type_ == LastOperationType::Migrate && last.state == LastOperationState::Succeeded
        });
    migrated && !matches!(op, LastOperationType::Migrate | LastOperationType::Restore)
}

/// The texts Gardener's generic Extension reconciler writes for an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperationTexts {
    pub processing: &'static str,
    pub error_prefix: &'static str,
    pub success: &'static str,
}

pub fn texts(op: LastOperationType) -> OperationTexts {
    match op {
        LastOperationType::Delete => OperationTexts {
            processing: "Deleting the Extension",
            error_prefix: "Error deleting the Extension",
            success: "Successfully deleted the Extension",
        },
        LastOperationType::Restore => OperationTexts {
            processing: "Restoring Extension resource",
            error_prefix: "Unable to restore Extension resource",
            success: "Successfully restored Extension resource",
        },
        LastOperationType::Migrate => OperationTexts {
            processing: "Migrate Extension resource.",
            error_prefix: "Error migrating Extension resource",
            success: "Successfully migrated Extension resource",
        },
        LastOperationType::Create | LastOperationType::Reconcile | LastOperationType::Unknown => {
            OperationTexts {
                processing: "Reconciling the Extension",
                error_prefix: "Error reconciling Extension",
                success: "Successfully reconciled Extension",
            }
        }
    }
}

fn last_operation(
    op: LastOperationType,
    state: LastOperationState,
    progress: i32,
    description: &str,
    now: &Time,
) -> Value {
    json!({
        "type": op,
        "state": state,
        "progress": progress,
        "description": description,
        "lastUpdateTime": now,
    })
}

/// Processing, with the step under way named (`Reconciling the Extension: waiting for the SVM`).
/// `progress` is 1 when the operation starts, as Gardener writes it.
pub fn processing_patch(
    op: LastOperationType,
    step: Option<&str>,
    progress: i32,
    now: &Time,
) -> Value {
    let base = texts(op).processing;
    let description = match step {
        Some(step) => format!("{}: {step}", base.trim_end_matches('.')),
        None => base.to_string(),
    };
    json!({"status": {"lastOperation":
        last_operation(op, LastOperationState::Processing, progress, &description, now)}})
}

/// Error: `lastOperation` Error at 50 %, `lastError` with the failure's codes, and
/// `observedGeneration`. The description is Gardener's `FormatLastErrDescription` of
/// `<prefix>: <failure>`.
pub fn error_patch(
    generation: Option<i64>,
    op: LastOperationType,
    failure: &ExtensionFailure,
    now: &Time,
) -> Value {
    let description =
        format_last_err_description(&format!("{}: {failure}", texts(op).error_prefix));
    let codes: Vec<ErrorCode> = failure.codes();
    json!({"status": {
        "observedGeneration": generation.unwrap_or(0),
        "lastOperation": last_operation(op, LastOperationState::Error, 50, &description, now),
        "lastError": {"description": description, "codes": codes, "lastUpdateTime": now},
    }})
}

/// Succeeded at 100 %, `observedGeneration` current, and `lastError` cleared: the only write
/// that clears it.
pub fn success_patch(generation: Option<i64>, op: LastOperationType, now: &Time) -> Value {
    json!({"status": {
        "observedGeneration": generation.unwrap_or(0),
        "lastOperation": last_operation(op, LastOperationState::Succeeded, 100, texts(op).success, now),
        "lastError": null,
    }})
}

/// Gardener's `FormatLastErrDescription`: the first letter upper-cased, nothing else.
pub fn format_last_err_description(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Why gardenlet does not take an Extension as ready.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NotReady {
    pub message: String,
    /// The `lastError` codes, for the lastError case.
    pub codes: Vec<ErrorCode>,
    /// Only the lastError case is retriable in gardenlet's wait: it turns severe after 30 s
    /// and then aborts the shoot flow step; the others only time out.
    pub retriable: bool,
}

fn not_ready(message: String) -> NotReady {
    NotReady {
        message,
        codes: Vec::new(),
        retriable: false,
    }
}

/// gardenlet's `health.CheckExtensionObject`, check for check and in its order.
pub fn check_extension_object(ext: &Extension) -> Result<(), NotReady> {
    let status = ext.status.clone().unwrap_or_default();
    if let Some(error) = &status.last_error {
        return Err(NotReady {
            message: format!("error during reconciliation: {}", error.description),
            codes: error.codes.clone(),
            retriable: true,
        });
    }
    let observed = status.observed_generation.unwrap_or(0);
    let generation = ext.metadata.generation.unwrap_or(0);
    if observed != generation {
        return Err(not_ready(format!(
            "observed generation outdated ({observed}/{generation})"
        )));
    }
    if let Some(op) = ext.annotations().get(OPERATION_ANNOTATION) {
        return Err(not_ready(format!(
            "gardener operation {op:?} is not yet picked up by controller"
        )));
    }
    let Some(last) = &status.last_operation else {
        return Err(not_ready(
            "extension did not record a last operation yet".to_string(),
        ));
    };
    if last.state != LastOperationState::Succeeded {
        return Err(not_ready(format!(
            "extension state is not succeeded but {:?}",
            last.state
        )));
    }
    if let Some(timestamp) = ext.annotations().get(TIMESTAMP_ANNOTATION) {
        let requested: Timestamp = timestamp.parse().map_err(|e| {
            not_ready(format!(
                "cannot parse gardener.cloud/timestamp annotation: {e}"
            ))
        })?;
        // Go's Truncate(time.Second) rounds towards the zero time, i.e. down for any date
        // after year 1.
        let requested = Timestamp::from_second(requested.as_second()).unwrap_or(requested);
        let updated = last.last_update_time.0;
        if requested > updated {
            return Err(not_ready(format!(
                "extension is not reconciled yet - reconciliation requested at {requested}, last update time is: {updated}"
            )));
        }
    }
    Ok(())
}

/// gardenlet's wait: [`check_extension_object`], and, when gardenlet wrote a timestamp, the
/// object carries exactly that value (so a stale read cannot report ready early).
pub fn ready_for_gardenlet(
    ext: &Extension,
    written_timestamp: Option<&str>,
) -> Result<(), NotReady> {
    if let Some(expected) = written_timestamp {
        match ext.annotations().get(TIMESTAMP_ANNOTATION) {
            None => {
                return Err(not_ready(format!(
                    "object does not have {TIMESTAMP_ANNOTATION:?} annotation"
                )));
            }
            Some(actual) if actual != expected => {
                return Err(not_ready(format!(
                    "object's {TIMESTAMP_ANNOTATION:?} annotation is not {expected:?} but {actual:?}"
                )));
            }
            Some(_) => {}
        }
    }
    check_extension_object(ext)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::extension::api::ExtensionStatus;
    use crate::extension::config::ConfigError;

    fn ext(annotations: Value, generation: i64, status: Value) -> Extension {
        serde_json::from_value(json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Extension",
            "metadata": {"name": "ontap", "namespace": "shoot--p--s", "generation": generation,
                "annotations": annotations},
            "spec": {"type": "ontap"},
            "status": status,
        }))
        .unwrap()
    }

    fn op(type_: &str, state: &str, time: &str) -> Value {
        json!({"lastOperation": {"type": type_, "state": state, "progress": 100,
            "description": "d", "lastUpdateTime": time}, "observedGeneration": 1})
    }

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    /// Applies a JSON merge patch on the Extension, as the API server does.
    fn apply(ext: &Extension, patch: &Value) -> Extension {
        let mut doc = serde_json::to_value(ext).unwrap();
        json_patch::merge(&mut doc, patch);
        serde_json::from_value(doc).unwrap()
    }

    #[test]
    fn operation_is_computed_as_gardener_does() {
        use LastOperationType::*;
        let t = "2026-01-01T00:00:00Z";
        let cases = [
            (json!({}), json!({}), Create),
            (json!({}), op("Create", "Error", t), Create),
            (json!({}), op("Create", "Succeeded", t), Reconcile),
            (json!({}), op("Reconcile", "Error", t), Reconcile),
            (json!({}), op("Migrate", "Processing", t), Migrate),
            (json!({}), op("Restore", "Error", t), Restore),
            (json!({}), op("Delete", "Error", t), Reconcile),
            (
                json!({"gardener.cloud/operation": "migrate"}),
                op("Reconcile", "Succeeded", t),
                Migrate,
            ),
            (
                json!({"gardener.cloud/operation": "restore"}),
                op("Migrate", "Succeeded", t),
                Restore,
            ),
            (
                json!({"gardener.cloud/operation": "reconcile"}),
                op("Reconcile", "Succeeded", t),
                Reconcile,
            ),
            (
                json!({"gardener.cloud/operation": "wait-for-state"}),
                json!({}),
                Create,
            ),
        ];
        for (annotations, status, expected) in cases {
            let e = ext(annotations.clone(), 1, status.clone());
            assert_eq!(compute_operation(&e), expected, "{annotations} {status}");
        }
        let mut deleting = ext(json!({"gardener.cloud/operation": "restore"}), 1, json!({}));
        deleting.metadata.deletion_timestamp = Some(time(t));
        assert_eq!(compute_operation(&deleting), Delete);
        deleting
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(OPERATION_ANNOTATION.into(), "migrate".into());
        assert_eq!(
            compute_operation(&deleting),
            Migrate,
            "migrate wins over deletion"
        );
    }

    #[test]
    fn migrated_extension_is_skipped_until_restore() {
        let migrated = ext(
            json!({}),
            1,
            op("Migrate", "Succeeded", "2026-01-01T00:00:00Z"),
        );
        assert!(should_skip_operation(
            &migrated,
            LastOperationType::Reconcile
        ));
        assert!(should_skip_operation(&migrated, LastOperationType::Delete));
        assert!(!should_skip_operation(
            &migrated,
            LastOperationType::Restore
        ));
        assert!(!should_skip_operation(
            &migrated,
            LastOperationType::Migrate
        ));
    }

    #[test]
    fn patches_follow_the_contract_and_the_health_check_agrees() {
        let failure = ExtensionFailure::Configuration(ConfigError::Missing);
        let start = ext(
            json!({"gardener.cloud/timestamp": "2026-03-01T10:00:00.123456789Z"}),
            1,
            json!({}),
        );

        // First pass fails.
        let e = apply(
            &start,
            &processing_patch(
                LastOperationType::Create,
                Some("parsing providerConfig"),
                1,
                &time("2026-03-01T10:00:00Z"),
            ),
        );
        let lo = e.status.as_ref().unwrap().last_operation.as_ref().unwrap();
        assert_eq!(
            lo.description,
            "Reconciling the Extension: parsing providerConfig"
        );
        assert_eq!((lo.state, lo.progress), (LastOperationState::Processing, 1));
        assert!(check_extension_object(&e).is_err());

        let e = apply(
            &e,
            &error_patch(
                e.metadata.generation,
                LastOperationType::Create,
                &failure,
                &time("2026-03-01T10:00:01Z"),
            ),
        );
        let status = e.status.clone().unwrap();
        let last_error = status.last_error.clone().unwrap();
        assert!(
            last_error
                .description
                .starts_with("Error reconciling Extension: providerConfig is missing")
        );
        assert_eq!(last_error.codes, vec![ErrorCode::ConfigurationProblem]);
        assert_eq!(status.observed_generation, Some(1));
        let not_ready = check_extension_object(&e).unwrap_err();
        assert!(not_ready.retriable);
        assert_eq!(not_ready.codes, vec![ErrorCode::ConfigurationProblem]);
        assert!(
            not_ready
                .message
                .starts_with("error during reconciliation: Error reconciling Extension")
        );

        // Processing again keeps the old error visible to gardenlet.
        let e = apply(
            &e,
            &processing_patch(
                LastOperationType::Create,
                None,
                1,
                &time("2026-03-01T10:00:05Z"),
            ),
        );
        assert!(e.status.as_ref().unwrap().last_error.is_some());
        assert!(check_extension_object(&e).unwrap_err().retriable);

        // Success clears it; now the Extension is ready.
        let e = apply(
            &e,
            &success_patch(
                e.metadata.generation,
                LastOperationType::Create,
                &time("2026-03-01T10:00:06Z"),
            ),
        );
        let status: ExtensionStatus = e.status.clone().unwrap();
        assert_eq!(status.last_error, None);
        let lo = status.last_operation.unwrap();
        assert_eq!(
            (lo.state, lo.progress, lo.description.as_str()),
            (
                LastOperationState::Succeeded,
                100,
                "Successfully reconciled Extension"
            )
        );
        assert_eq!(check_extension_object(&e), Ok(()));
        assert_eq!(
            ready_for_gardenlet(&e, Some("2026-03-01T10:00:00.123456789Z")),
            Ok(())
        );
        assert!(
            ready_for_gardenlet(&e, Some("2026-03-01T10:00:09Z")).is_err(),
            "gardenlet wrote another timestamp"
        );
    }

    #[test]
    fn health_check_order_and_messages_are_gardenlets() {
        let ok = op("Reconcile", "Succeeded", "2026-03-01T10:00:00Z");
        assert_eq!(
            check_extension_object(&ext(json!({}), 1, ok.clone())),
            Ok(())
        );

        let msg = |e: Extension| check_extension_object(&e).unwrap_err().message;
        // A lastError fails first, even next to a Succeeded operation.
        let mut with_error = ok.clone();
        with_error["lastError"] = json!({"description": "boom"});
        with_error["observedGeneration"] = json!(0);
        assert_eq!(
            msg(ext(
                json!({"gardener.cloud/operation": "reconcile"}),
                1,
                with_error
            )),
            "error during reconciliation: boom"
        );
        assert_eq!(
            msg(ext(
                json!({"gardener.cloud/operation": "reconcile"}),
                2,
                ok.clone()
            )),
            "observed generation outdated (1/2)"
        );
        assert_eq!(
            msg(ext(
                json!({"gardener.cloud/operation": "wait-for-state"}),
                1,
                ok.clone()
            )),
            "gardener operation \"wait-for-state\" is not yet picked up by controller"
        );
        assert_eq!(
            msg(ext(json!({}), 0, json!({}))),
            "extension did not record a last operation yet"
        );
        assert_eq!(
            msg(ext(
                json!({}),
                1,
                op("Reconcile", "Processing", "2026-03-01T10:00:00Z")
            )),
            "extension state is not succeeded but Processing"
        );
        assert_eq!(
            msg(ext(
                json!({"gardener.cloud/timestamp": "2026-03-01T10:00:01.5Z"}),
                1,
                ok.clone()
            )),
            "extension is not reconciled yet - reconciliation requested at 2026-03-01T10:00:01Z, last update time is: 2026-03-01T10:00:00Z"
        );
        assert!(
            msg(ext(
                json!({"gardener.cloud/timestamp": "yesterday"}),
                1,
                ok.clone()
            ))
            .starts_with("cannot parse gardener.cloud/timestamp annotation")
        );
        // A request within the second of the last update counts as served (second precision).
        assert_eq!(
            check_extension_object(&ext(
                json!({"gardener.cloud/timestamp": "2026-03-01T10:00:00.999Z"}),
                1,
                ok
            )),
            Ok(())
        );
    }

    #[test]
    fn descriptions_are_formatted_as_gardener_does() {
        assert_eq!(format_last_err_description("error x: y"), "Error x: y");
        assert_eq!(format_last_err_description(""), "");
        assert_eq!(
            texts(LastOperationType::Migrate).processing,
            "Migrate Extension resource."
        );
        let patch = processing_patch(
            LastOperationType::Migrate,
            Some("deleting ManagedResources"),
            1,
            &time("2026-03-01T10:00:00Z"),
        );
        assert_eq!(
            patch["status"]["lastOperation"]["description"],
            "Migrate Extension resource: deleting ManagedResources"
        );
        assert_eq!(
            patch["status"]["lastOperation"]["lastUpdateTime"],
            "2026-03-01T10:00:00Z"
        );
        assert_eq!(patch["status"]["lastOperation"]["type"], "Migrate");
    }
}
