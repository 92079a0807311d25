//! Status conditions from step records, following the Kubernetes conventions.
//!
//! One condition per step (its `type` is the step name) plus an overall `Ready` first. Every
//! condition carries the `observedGeneration` it was computed for, and its `lastTransitionTime`
//! changes only when its `status` changes — so a reconcile that finds the same world produces the
//! very same conditions, and the status diff finds nothing to write.
//!
//! Steps that did not run this time (a step before them halted) become `Unknown` with reason
//! `NOT_REACHED`: claiming they are still `True` would repeat exactly the mistake this engine
//! exists to prevent — trusting an earlier success instead of looking.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::step::{StepRecord, StepState};
use super::text::bounded;

/// Type of the overall condition.
pub const READY: &str = "Ready";
/// Reason of a completed step and of `Ready` when every step completed.
pub const SUCCEEDED: &str = "Succeeded";
/// Reason of a step that did not run because an earlier one halted.
pub(crate) const NOT_REACHED: &str = "NotReached";

/// `True`, `False` or `Unknown`.
pub const TRUE: &str = "True";
/// See [`TRUE`].
pub const FALSE: &str = "False";
/// See [`TRUE`].
pub(crate) const UNKNOWN: &str = "Unknown";

/// Computes the conditions after a reconcile from the current ones and the step records.
///
/// The result lists `Ready` first, then the executed steps in order, then (only if a step
/// halted) the previously known steps that were not reached. When every step completed,
/// conditions of steps that no longer exist are dropped.
pub(crate) fn compute_conditions(
    current: &[Condition],
    records: &[StepRecord],
    generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    let mut out = Vec::with_capacity(records.len() + 1);
    let halt = records.iter().find(|r| !r.state.is_done());

    let (status, reason, message) = match halt {
        None => (TRUE, SUCCEEDED.to_owned(), String::new()),
        Some(record) => {
            let (reason, message) = reason_and_message(&record.state);
            (
                FALSE,
                reason.to_owned(),
                format!("step {}: {}", record.name, message),
            )
        }
    };
    out.push(transition(
        current, READY, status, reason, message, generation, now,
    ));

    for record in records {
        let (status, reason, message) = match &record.state {
            StepState::Unchanged | StepState::Changed => (TRUE, SUCCEEDED, ""),
            state => {
                let (reason, message) = reason_and_message(state);
                (FALSE, reason, message)
            }
        };
        out.push(transition(
            current,
            record.name,
            status,
            reason.to_owned(),
            message.to_owned(),
            generation,
            now,
        ));
    }

    if let Some(halted) = halt {
        for old in current {
            let known = old.type_ == READY || records.iter().any(|r| r.name == old.type_);
            if known {
                continue;
            }
            out.push(transition(
                current,
                &old.type_,
                UNKNOWN,
                NOT_REACHED.to_owned(),
                format!("not evaluated: step {} did not complete", halted.name),
                generation,
                now,
            ));
        }
    }
    out
}

fn reason_and_message(state: &StepState) -> (&str, &str) {
    match state {
        StepState::Waiting(w) => (&w.reason, &w.message),
        StepState::Failed(e) => (e.reason(), e.message()),
        StepState::Unchanged | StepState::Changed => (SUCCEEDED, ""),
    }
}

/// Builds condition `type_`, keeping the current `lastTransitionTime` when `status` is unchanged.
pub fn transition(
    current: &[Condition],
    type_: &str,
    status: &str,
    reason: String,
    message: String,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    let last_transition_time = match find(current, type_) {
        Some(old) if old.status == status => old.last_transition_time.clone(),
        _ => now.clone(),
    };
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason,
        message: bounded(&message),
        observed_generation: generation,
        last_transition_time,
    }
}

/// The condition of type `type_`, if present.
pub(crate) fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StepError, Wait};
    use k8s_openapi::jiff::Timestamp;
    use std::time::Duration;

    fn t(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("valid timestamp"))
    }

    fn rec(name: &'static str, state: StepState) -> StepRecord {
        StepRecord {
            name,
            state,
            duration: Duration::ZERO,
        }
    }

    fn ok_records() -> Vec<StepRecord> {
        vec![rec("A", StepState::Unchanged), rec("B", StepState::Changed)]
    }

    #[test]
    fn first_success_sets_all_true_with_now() {
        let c = compute_conditions(&[], &ok_records(), Some(3), &t(100));
        let types: Vec<_> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, "A", "B"]);
        for cond in &c {
            assert_eq!(cond.status, TRUE);
            assert_eq!(cond.reason, SUCCEEDED);
            assert_eq!(cond.observed_generation, Some(3));
            assert_eq!(cond.last_transition_time, t(100));
        }
    }

    #[test]
    fn unchanged_world_gives_identical_conditions() {
        let first = compute_conditions(&[], &ok_records(), Some(3), &t(100));
        // "Changed" and "Unchanged" share a reason, so a changing step then a no-op step
        // produce the same condition and no write.
        let records = vec![
            rec("A", StepState::Unchanged),
            rec("B", StepState::Unchanged),
        ];
        let second = compute_conditions(&first, &records, Some(3), &t(200));
        assert_eq!(first, second);
    }

    #[test]
    fn transition_time_changes_only_with_status() {
        let first = compute_conditions(&[], &ok_records(), Some(1), &t(100));
        let failing = vec![
            rec("A", StepState::Unchanged),
            rec(
                "B",
                StepState::Failed(StepError::transient_msg("Down", "backend down")),
            ),
        ];
        let second = compute_conditions(&first, &failing, Some(1), &t(200));
        let b = find(&second, "B").expect("B");
        assert_eq!((b.status.as_str(), b.reason.as_str()), (FALSE, "Down"));
        assert_eq!(b.last_transition_time, t(200));
        assert_eq!(find(&second, "A").expect("A").last_transition_time, t(100));
        let ready = find(&second, READY).expect("Ready");
        assert_eq!(ready.status, FALSE);
        assert_eq!(ready.reason, "Down");
        assert_eq!(ready.message, "step B: backend down");
        assert_eq!(ready.last_transition_time, t(200));

        // Still failing, different reason: status unchanged, so the time stays.
        let failing_other = vec![
            rec("A", StepState::Unchanged),
            rec(
                "B",
                StepState::Failed(StepError::transient_msg("Timeout", "timed out")),
            ),
        ];
        let third = compute_conditions(&second, &failing_other, Some(1), &t(300));
        let b = find(&third, "B").expect("B");
        assert_eq!(b.reason, "Timeout");
        assert_eq!(b.last_transition_time, t(200));

        // Recovered: back to True with a new time.
        let fourth = compute_conditions(&third, &ok_records(), Some(1), &t(400));
        assert_eq!(find(&fourth, "B").expect("B").last_transition_time, t(400));
        assert_eq!(
            find(&fourth, READY).expect("Ready").last_transition_time,
            t(400)
        );
        assert_eq!(find(&fourth, "A").expect("A").last_transition_time, t(100));
    }

    #[test]
    fn unreached_steps_become_unknown_and_come_back() {
        let three = vec![
            rec("A", StepState::Unchanged),
            rec("B", StepState::Unchanged),
            rec("C", StepState::Unchanged),
        ];
        let first = compute_conditions(&[], &three, Some(1), &t(100));
        let halted = vec![rec(
            "A",
            StepState::Waiting(Wait {
                reason: "Pending".into(),
                message: "backend provisioning".into(),
                after: Duration::from_secs(5),
            }),
        )];
        let second = compute_conditions(&first, &halted, Some(1), &t(200));
        let types: Vec<_> = second.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, "A", "B", "C"]);
        for name in ["B", "C"] {
            let c = find(&second, name).expect("present");
            assert_eq!(c.status, UNKNOWN);
            assert_eq!(c.reason, NOT_REACHED);
            assert_eq!(c.message, "not evaluated: step A did not complete");
        }
        assert_eq!(find(&second, READY).expect("Ready").reason, "Pending");
    }

    #[test]
    fn removed_steps_are_dropped_after_a_complete_run() {
        let old = compute_conditions(
            &[],
            &[
                rec("A", StepState::Unchanged),
                rec("Gone", StepState::Unchanged),
            ],
            Some(1),
            &t(1),
        );
        let new = compute_conditions(&old, &[rec("A", StepState::Unchanged)], Some(1), &t(2));
        assert!(find(&new, "Gone").is_none());
    }

    #[test]
    fn generation_change_updates_observed_generation_but_not_time() {
        let first = compute_conditions(&[], &ok_records(), Some(1), &t(100));
        let second = compute_conditions(&first, &ok_records(), Some(2), &t(200));
        for c in &second {
            assert_eq!(c.observed_generation, Some(2));
            assert_eq!(c.last_transition_time, t(100));
        }
    }
}
