//! How a pass closes: the conditions and the halt summary computed from its step records, the
//! status written only where it differs from what the API server holds, and its Events.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::runtime::events::Event;
use serde_json::Value;

use super::controller_state::{ControllerState, Pass};
use crate::conditions::{FALSE, READY, compute_conditions, transition};
use crate::error::{ErrorCategory, StepError};
use crate::events::{plan_events, plan_own_events};
use crate::object::StatusOf;
use crate::reconciler::Reconciler;
use crate::status::{ConditionedStatus, Halted, StatusWrite, patch_status, status_patch};
use crate::step::StepRecord;
use crate::text::bounded;

impl<R: Reconciler> ControllerState<R> {
    /// Computes conditions and the halt summary, writes the status if the API server's differs,
    /// and publishes the Events of this pass.
    pub(super) async fn finish_status(
        &self,
        pass: &Pass<'_, R::Resource>,
        mut status: StatusOf<R::Resource>,
        records: &[StepRecord],
    ) -> StatusWrite {
        if !R::MANAGES_STATUS {
            self.publish_events(pass, &[], records).await;
            return StatusWrite::Unchanged;
        }
        let before = pass.before;
        let generation = pass.obj.meta().generation;
        let now = Time(Timestamp::now());
        let mut conditions = compute_conditions(before.conditions(), records, generation, &now);
        conditions.retain(|c| !R::OWN_CONDITIONS.contains(&c.type_.as_str()));
        conditions.extend(
            status
                .conditions()
                .iter()
                .filter(|c| R::OWN_CONDITIONS.contains(&c.type_.as_str()))
                .cloned(),
        );
        status.set_conditions(conditions);
        status.set_observed_generation(generation);
        status.set_halted(Halted::after(
            before.halted(),
            records,
            pass.trace_id.as_deref(),
        ));

        let result = self.write_status(pass, &status).await;
        if !matches!(result, StatusWrite::Gone) {
            self.publish_events(pass, status.conditions(), records)
                .await;
        }
        result
    }

    async fn write_status(
        &self,
        pass: &Pass<'_, R::Resource>,
        status: &StatusOf<R::Resource>,
    ) -> StatusWrite {
        let (obj_ref, obj) = (pass.obj_ref, pass.obj);
        // The diff is against what the API server holds as far as we know, at the version it
        // holds it: a stale cache would otherwise hide that the server still holds an older
        // pass's status.
        let baseline = if pass.no_status_yet {
            Value::Null
        } else {
            match serde_json::to_value(pass.before) {
                Ok(v) => v,
                Err(err) => {
                    tracing::error!(error = %err, "status does not serialize");
                    return StatusWrite::Failed(ErrorCategory::Transient);
                }
            }
        };
        let base_version = pass.resource_version.as_deref();
        let patch = match status_patch(&baseline, status) {
            Ok(None) => return StatusWrite::Unchanged,
            Ok(Some(patch)) => patch,
            Err(err) => {
                tracing::error!(error = %err, "status does not serialize");
                return StatusWrite::Failed(ErrorCategory::Transient);
            }
        };
        match patch_status(&self.client, obj, &patch, base_version, self.name).await {
            Ok(to) => {
                self.memory.wrote(obj_ref, to, status, || {
                    self.cache
                        .get(obj_ref)
                        .and_then(|cached| cached.meta().resource_version.clone())
                });
                StatusWrite::Written
            }
            // The pass may itself have ended the object's life: nothing is left to write to.
            Err(kube::Error::Api(s)) if s.code == 404 => StatusWrite::Gone,
            Err(err) => {
                // Whatever we remembered writing is no longer known to be what the server holds.
                self.memory.forget(obj_ref);
                let err = StepError::from_kube("StatusWriteFailed", err);
                // The versions tell a conflict's cause: a write this controller did not
                // remember, or a cache behind the server.
                tracing::warn!(
                    error = %err,
                    base_version = base_version.unwrap_or(""),
                    cached_version = obj.meta().resource_version.as_deref().unwrap_or(""),
                    "writing status failed"
                );
                if err.category() != ErrorCategory::Conflict {
                    self.write_minimal_status(obj, status, &err).await;
                }
                StatusWrite::Failed(err.category())
            }
        }
    }

    /// After a failed status write, the status the API server holds may still say
    /// `Ready=True` while this pass found otherwise (or could not even say what it found). A
    /// small write that only replaces the conditions with `Ready=False` keeps that claim from
    /// standing; the next pass writes the full status again.
    async fn write_minimal_status(
        &self,
        obj: &R::Resource,
        status: &StatusOf<R::Resource>,
        err: &StepError,
    ) {
        let ready = status
            .conditions()
            .iter()
            .find(|c| c.type_ == READY)
            .filter(|c| c.status == FALSE)
            .cloned()
            .unwrap_or_else(|| {
                transition(
                    status.conditions(),
                    READY,
                    FALSE,
                    "StatusWriteFailed".to_owned(),
                    bounded(err.message()),
                    obj.meta().generation,
                    &Time(Timestamp::now()),
                )
            });
        let minimal: Vec<Condition> = vec![Condition {
            message: bounded(&ready.message),
            ..ready
        }];
        let patch = serde_json::json!({ "status": { "conditions": minimal } });
        if let Err(err) = patch_status(&self.client, obj, &patch, None, self.name).await {
            tracing::warn!(error = %StepError::from_kube("StatusWriteFailed", err), "writing the minimal status failed too");
        }
    }

    /// Publishes the Events of this pass: what changed since the status the pass started from
    /// said, or, for a reconciler that keeps no engine status, since the pass it remembers.
    pub(super) async fn publish_events(
        &self,
        pass: &Pass<'_, R::Resource>,
        after: &[Condition],
        records: &[StepRecord],
    ) {
        let (before, obj) = (pass.before, pass.obj);
        let planned = if R::MANAGES_STATUS {
            plan_events(before.conditions(), before.halted(), records)
        } else {
            self.memory
                .plan_events(pass.obj_ref, records, obj.meta().generation)
        };
        let own = plan_own_events(before.conditions(), after, R::OWN_CONDITIONS);
        for planned in planned.into_iter().chain(own) {
            let note = match pass.trace_id.as_deref() {
                Some(id) if planned.type_ == kube::runtime::events::EventType::Warning => {
                    format!("{} (trace {id})", planned.note)
                }
                _ => planned.note,
            };
            let event = Event {
                type_: planned.type_,
                reason: planned.reason,
                note: Some(bounded(&note)),
                action: planned.action,
                secondary: None,
            };
            if let Err(err) = self.recorder.publish(&event, &obj.object_ref(&())).await {
                tracing::warn!(error = %StepError::from_kube("EventFailed", err), "publishing Event failed");
            }
        }
    }
}
