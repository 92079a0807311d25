//! Kubernetes Events on step failures and recoveries.
//!
//! Decided by comparing a step's new outcome with its condition before the reconcile, so an Event
//! is emitted when something *changes* — a step starts failing, fails for a different reason, or
//! recovers — and not once per retry. Because the memory is the persisted condition, this also
//! holds across operator restarts. kube's `Recorder` additionally folds repeats into an Event
//! series.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::runtime::events::EventType;

use super::conditions::{FALSE, compute_conditions, find};
use super::status::Halted;
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

/// The Events to emit for `records`, given the conditions and the halt as they were before.
///
/// A step whose `False` condition came from a wait (the halt before was that step, with no
/// failed attempts) did not recover when it completes: the wait simply ended, and an Event per
/// finished wait would be noise on every object that waits as a matter of course.
pub fn plan_events(
    before: &[Condition],
    before_halted: Option<&Halted>,
    records: &[StepRecord],
) -> Vec<PlannedEvent> {
    let mut events = Vec::new();
    let waited = |step: &str| before_halted.is_some_and(|h| h.step == step && h.attempts == 0);
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
                if let Some(old) = old.filter(|c| c.status == FALSE && !waited(record.name)) {
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

/// What a reconciler that keeps no engine status
/// ([`Reconciler::MANAGES_STATUS`](crate::Reconciler::MANAGES_STATUS) `false`, such as Gardener's
/// Extension, whose status has Gardener's shape) remembers of its last pass, in memory, so that its
/// Events follow the same rule as everyone else's: a Warning when a step starts failing or fails
/// for a new reason, a Normal when it recovers, nothing for a retry that fails the same way.
/// Without it every failed pass would look like the first. Lost on restart, which costs one
/// repeated Event.
#[derive(Clone, Debug, Default)]
pub struct EventMemory {
    /// The step conditions the last pass would have written.
    pub conditions: Vec<Condition>,
    /// Where the last pass stopped.
    pub halted: Option<Halted>,
}

impl EventMemory {
    /// The Events of a pass with `records` after the pass this memory holds.
    pub fn plan(&self, records: &[StepRecord]) -> Vec<PlannedEvent> {
        plan_events(&self.conditions, self.halted.as_ref(), records)
    }

    /// The memory after a pass with `records`: the conditions and halt the engine would have
    /// written, had it managed the status.
    pub fn after(&self, records: &[StepRecord], generation: Option<i64>, now: &Time) -> Self {
        Self {
            conditions: compute_conditions(&self.conditions, records, generation, now),
            halted: Halted::after(self.halted.as_ref(), records, None),
        }
    }
}

/// The Events of a reconciler's own conditions
/// ([`Reconciler::OWN_CONDITIONS`](crate::Reconciler::OWN_CONDITIONS)): a Warning when one turns `False` (or changes its reason
/// while `False`), a Normal when it turns `True` again. Nothing while it stays as it was.
pub fn plan_own_events(
    before: &[Condition],
    after: &[Condition],
    own: &[&str],
) -> Vec<PlannedEvent> {
    let mut events = Vec::new();
    for condition in after.iter().filter(|c| own.contains(&c.type_.as_str())) {
        let old = find(before, &condition.type_);
        let unchanged =
            old.is_some_and(|o| o.status == condition.status && o.reason == condition.reason);
        if unchanged {
            continue;
        }
        if condition.status == FALSE {
            events.push(PlannedEvent {
                type_: EventType::Warning,
                reason: condition.reason.clone(),
                note: condition.message.clone(),
                action: condition.type_.clone(),
            });
        } else if old.is_some_and(|o| o.status == FALSE) {
            events.push(PlannedEvent {
                type_: EventType::Normal,
                reason: condition.reason.clone(),
                note: condition.message.clone(),
                action: condition.type_.clone(),
            });
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
            plan_events(&conditions, None, &ok()).is_empty(),
            "healthy: silent"
        );

        let e = plan_events(&conditions, None, &failing("Down"));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, EventType::Warning);
        assert_eq!(e[0].reason, "Down");
        conditions = compute_conditions(&conditions, &failing("Down"), Some(1), &now);

        assert!(
            plan_events(&conditions, None, &failing("Down")).is_empty(),
            "same failure again: no new Event"
        );
        assert_eq!(plan_events(&conditions, None, &failing("Timeout")).len(), 1);

        let e = plan_events(&conditions, None, &ok());
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, EventType::Normal);
        assert_eq!(e[0].reason, RECOVERED);
    }

    #[test]
    fn a_status_less_reconciler_remembers_what_it_reported() {
        let now = Time(Timestamp::UNIX_EPOCH);
        let mut memory = EventMemory::default();
        let mut published = Vec::new();
        for records in [
            failing("Down"),
            failing("Down"),
            failing("Down"),
            ok(),
            ok(),
        ] {
            published.extend(memory.plan(&records));
            memory = memory.after(&records, Some(1), &now);
        }
        let reasons: Vec<_> = published.iter().map(|e| e.reason.as_str()).collect();
        assert_eq!(
            reasons,
            ["Down", RECOVERED],
            "one Warning for three failed passes, one recovery"
        );
        assert_eq!(published[0].type_, EventType::Warning);
        assert_eq!(published[1].type_, EventType::Normal);
    }

    #[test]
    fn a_wait_that_ends_is_no_recovery() {
        let now = Time(Timestamp::UNIX_EPOCH);
        let waiting = vec![StepRecord {
            name: "S",
            state: StepState::Waiting(crate::Wait {
                reason: "Installing".into(),
                message: "job running".into(),
                after: Duration::from_secs(1),
            }),
            duration: Duration::ZERO,
        }];
        let conditions = compute_conditions(&[], &waiting, Some(1), &now);
        let halted = Halted::after(None, &waiting, None);
        assert!(plan_events(&conditions, halted.as_ref(), &ok()).is_empty());

        // A failure before still recovers.
        let conditions = compute_conditions(&[], &failing("Down"), Some(1), &now);
        let halted = Halted::after(None, &failing("Down"), None);
        let e = plan_events(&conditions, halted.as_ref(), &ok());
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].reason, RECOVERED);
    }
}
