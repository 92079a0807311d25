//! Kubernetes Events on step failures and recoveries.
//!
//! Decided by comparing a step's new outcome with its condition before the reconcile, so an Event
//! is emitted when something *changes* — a step starts failing, fails for a different reason, or
//! recovers — and not once per retry. Because the memory is the persisted condition, this also
//! holds across operator restarts. kube's `Recorder` additionally folds repeats into an Event
//! series.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::events::EventType;

use super::conditions::{FALSE, find};
use super::step::{StepRecord, StepState};

/// Reason of the Event emitted when a failing or waiting step succeeds again.
pub const RECOVERED: &str = "Recovered";

/// An Event the engine is about to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// `Warning` for failures, `Normal` for recoveries.
    pub type_: EventType,
    /// `PascalCase` reason.
    pub reason: String,
    /// Human-readable note.
    pub note: String,
    /// The step, as the Event's action.
    pub action: String,
}

/// The Events to emit for `records`, given the conditions as they were before.
pub fn plan_events(before: &[Condition], records: &[StepRecord]) -> Vec<PlannedEvent> {
    let mut events = Vec::new();
    for record in records {
        let old = find(before, record.name);
        match &record.state {
            StepState::Failed(err) => {
                let already_reported =
                    old.is_some_and(|c| c.status == FALSE && c.reason == err.reason());
                if !already_reported {
                    events.push(PlannedEvent {
                        type_: EventType::Warning,
                        reason: err.reason().to_owned(),
                        note: format!("step {} failed ({}): {}", record.name, err.category(), err),
                        action: record.name.to_owned(),
                    });
                }
            }
            StepState::Unchanged | StepState::Changed => {
                if let Some(old) = old.filter(|c| c.status == FALSE) {
                    events.push(PlannedEvent {
                        type_: EventType::Normal,
                        reason: RECOVERED.to_owned(),
                        note: format!("step {} succeeded again after {}", record.name, old.reason),
                        action: record.name.to_owned(),
                    });
                }
            }
            // Waiting is progress, not trouble; the condition says it.
            StepState::Waiting(_) => {}
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StepError;
    use crate::conditions::compute_conditions;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use std::time::Duration;

    fn failing(reason: &'static str) -> Vec<StepRecord> {
        vec![StepRecord {
            name: "S",
            state: StepState::Failed(StepError::transient_msg(reason, "down")),
            duration: Duration::ZERO,
        }]
    }

    fn ok() -> Vec<StepRecord> {
        vec![StepRecord {
            name: "S",
            state: StepState::Unchanged,
            duration: Duration::ZERO,
        }]
    }

    #[test]
    fn one_warning_per_failure_reason_and_one_recovery() {
        let now = Time(Timestamp::UNIX_EPOCH);
        let mut conditions = compute_conditions(&[], &ok(), Some(1), &now);
        assert!(
            plan_events(&conditions, &ok()).is_empty(),
            "healthy: silent"
        );

        let e = plan_events(&conditions, &failing("Down"));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, EventType::Warning);
        assert_eq!(e[0].reason, "Down");
        conditions = compute_conditions(&conditions, &failing("Down"), Some(1), &now);

        assert!(
            plan_events(&conditions, &failing("Down")).is_empty(),
            "same failure again: no new Event"
        );
        assert_eq!(plan_events(&conditions, &failing("Timeout")).len(), 1);

        let e = plan_events(&conditions, &ok());
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, EventType::Normal);
        assert_eq!(e[0].reason, RECOVERED);
    }
}
