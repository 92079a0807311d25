//! Credential rotation: when a password that works is replaced, on a schedule (the object's
//! `spec.account.rotationPeriod`, else its OntapCluster's `defaults.credentialRotationPeriod`)
//! or on request (each new value of [`ROTATE_CREDENTIALS_ANNOTATION`]). The replacement itself
//! is the credentials module's (the seed Secret's one writer): staged beside the working
//! password, switched in ONTAP, verified, then published. This module decides whether a pass
//! rotates, records what it did (status, an Event, a counter) and wakes the object when its
//! next rotation falls due before its next periodic pass would.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use reconcile_engine::StepError;

use super::errors::Invalid;
use super::{VerifyRequests, tell};
use crate::api::rules::{ROTATION_PERIOD_MESSAGE, rotation_period};
use crate::api::{
    OntapCluster, ROTATE_CREDENTIALS_ANNOTATION, StorageVirtualMachine, StorageVirtualMachineStatus,
};
use crate::deploy::METRIC_PREFIX;

/// Why a pass rotates a password that works.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    /// The rotation period has passed since the last rotation (or the object's creation).
    Schedule,
    /// The annotation carries a value not yet honoured.
    Request(String),
}

impl Trigger {
    fn label(&self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::Request(_) => "request",
        }
    }
}

/// What an object's rotation settings say at the start of a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RotationPlan {
    /// The period in force, if any.
    pub(super) period: Option<Duration>,
    /// When the next scheduled rotation is due.
    pub(super) due: Option<Timestamp>,
    /// Why this pass rotates; `None`: it does not.
    pub(super) trigger: Option<Trigger>,
}

/// A rotation period admission would refuse, in an object stored before the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} {value:?} {ROTATION_PERIOD_MESSAGE}")]
pub(super) struct PeriodError {
    field: &'static str,
    value: String,
}

impl PeriodError {
    pub(super) fn error(&self) -> StepError {
        Invalid::RotationPeriod.error(self.to_string())
    }
}

/// The rotation plan of `svm` on `cluster` at `now`: the object's period overrides the
/// cluster's default; the clock starts at the last rotation, or at the object's creation.
pub(super) fn rotation_plan(
    svm: &StorageVirtualMachine,
    cluster: Option<&OntapCluster>,
    now: Timestamp,
) -> Result<RotationPlan, PeriodError> {
    let own = svm
        .spec
        .account
        .as_ref()
        .and_then(|a| a.rotation_period.as_deref())
        .map(|p| ("spec.account.rotationPeriod", p));
    let default = cluster
        .and_then(|c| c.spec.defaults.as_ref())
        .and_then(|d| d.credential_rotation_period.as_deref())
        .map(|p| ("the OntapCluster's defaults.credentialRotationPeriod", p));
    let period = match own.or(default) {
        None => None,
        Some((field, value)) => Some(rotation_period(value).ok_or_else(|| PeriodError {
            field,
            value: value.to_owned(),
        })?),
    };
    let status = svm.status.as_ref();
    let since = status
        .and_then(|s| s.credentials_rotated_at.as_ref())
        .or(svm.metadata.creation_timestamp.as_ref())
        .map(|t| t.0);
    let due = match (period, since) {
        (Some(period), Some(since)) => SignedDuration::try_from(period)
            .ok()
            .and_then(|p| since.checked_add(p).ok()),
        _ => None,
    };
    let requested = svm
        .annotations()
        .get(ROTATE_CREDENTIALS_ANNOTATION)
        .filter(|v| !v.is_empty())
        .filter(|v| status.and_then(|s| s.rotation_request.as_ref()) != Some(*v));
    let trigger = match requested {
        Some(value) => Some(Trigger::Request(value.clone())),
        None if due.is_some_and(|due| due <= now) => Some(Trigger::Schedule),
        None => None,
    };
    Ok(RotationPlan {
        period,
        due,
        trigger,
    })
}

/// What the pass's `SecretReady` step did about a rotation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum RotationOutcome {
    #[default]
    None,
    /// The new password is published and works.
    Rotated(Trigger),
    /// The rotation stopped part-way (the step's error says where); the next pass resumes it.
    Failed(Trigger),
}

/// `{trigger, result}` of a rotation.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RotationLabels {
    trigger: &'static str,
    result: &'static str,
}

/// Rotations, their Events and the object's wake-up at its next due time.
#[derive(Clone)]
pub struct Rotations {
    total: Family<RotationLabels, Counter>,
    recorder: Option<Recorder>,
    wakeups: Wakeups,
}

impl std::fmt::Debug for Rotations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rotations").finish_non_exhaustive()
    }
}

impl Default for Rotations {
    fn default() -> Self {
        Self {
            total: Family::default(),
            recorder: None,
            wakeups: Wakeups::new(VerifyRequests::default()),
        }
    }
}

impl Rotations {
    /// `ontap_operator_credential_rotations_total{trigger, result}`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            format!("{METRIC_PREFIX}_credential_rotations"),
            "Credential rotations of StorageVirtualMachine accounts by trigger (schedule, request) and result (success, failure)",
            self.total.clone(),
        );
    }

    /// Events go out through `recorder`; wake-ups through `requests`, the SVM controller's queue.
    pub(super) fn wired(mut self, recorder: Recorder, requests: VerifyRequests) -> Self {
        self.recorder = Some(recorder);
        self.wakeups = Wakeups::new(requests);
        self
    }

    /// Records the pass's rotation in `status`, the counter and an Event; sets when the next
    /// one is due and wakes the object then, if that comes before `sync_period` has passed.
    pub(super) async fn record(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        plan: &RotationPlan,
        outcome: RotationOutcome,
        account: &str,
        sync_period: Duration,
    ) {
        let now = Timestamp::now();
        let mut due = plan.due;
        match &outcome {
            RotationOutcome::None => {}
            RotationOutcome::Failed(trigger) => {
                self.count(trigger, "failure");
            }
            RotationOutcome::Rotated(trigger) => {
                self.count(trigger, "success");
                status.credentials_rotated_at = Some(Time(now));
                if let Trigger::Request(value) = trigger {
                    status.rotation_request = Some(value.clone());
                }
                due = plan
                    .period
                    .and_then(|p| SignedDuration::try_from(p).ok())
                    .and_then(|p| now.checked_add(p).ok());
                self.event(svm, trigger, account).await;
            }
        }
        status.credentials_rotation_due = due.map(Time);
        if let Some(due) = due {
            let left = now.duration_until(due).unsigned_abs();
            if now < due && left < sync_period {
                self.wakeups.at(ObjectRef::from_obj(svm), left);
            }
        }
    }

    fn count(&self, trigger: &Trigger, result: &'static str) {
        self.total
            .get_or_create(&RotationLabels {
                trigger: trigger.label(),
                result,
            })
            .inc();
    }

    async fn event(&self, svm: &StorageVirtualMachine, trigger: &Trigger, account: &str) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let why = match trigger {
            Trigger::Schedule => "its rotation period passed".to_owned(),
            Trigger::Request(value) => {
                format!("{ROTATE_CREDENTIALS_ANNOTATION} asked for it ({value:?})")
            }
        };
        let note = format!(
            "the password of account {account} was replaced, verified and published: {why}"
        );
        tell(
            recorder,
            svm,
            "CredentialsRotated",
            "RotateCredentials",
            note,
        )
        .await;
    }
}

/// One pending wake-up per object: the earliest asked for. A pass whose rotation falls due
/// within the sync period asks for one; the periodic pass covers the rest.
#[derive(Clone)]
struct Wakeups {
    requests: VerifyRequests,
    pending: Arc<Mutex<HashMap<ObjectRef<StorageVirtualMachine>, tokio::time::Instant>>>,
}

impl Wakeups {
    fn new(requests: VerifyRequests) -> Self {
        Self {
            requests,
            pending: Arc::default(),
        }
    }

    fn at(&self, object: ObjectRef<StorageVirtualMachine>, after: Duration) {
        let when = tokio::time::Instant::now() + after;
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if pending.get(&object).is_some_and(|&at| at <= when) {
                return;
            }
            pending.insert(object.clone(), when);
        }
        let (requests, pending) = (self.requests.clone(), self.pending.clone());
        tokio::spawn(async move {
            tokio::time::sleep_until(when).await;
            {
                let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
                if pending.get(&object) == Some(&when) {
                    pending.remove(&object);
                }
            }
            if let Some(namespace) = &object.namespace {
                requests.request(namespace, &object.name);
            }
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::seed_secret::fixtures::svm;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn cluster(period: Option<&str>) -> OntapCluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "OntapCluster",
            "metadata": {"name": "lab"},
            "spec": {
                "endpoint": "https://10.0.0.1",
                "credentialsSecretRef": {"namespace": "n", "name": "c"},
                "defaults": {"credentialRotationPeriod": period},
            }
        }))
        .unwrap()
    }

    fn object(period: Option<&str>) -> StorageVirtualMachine {
        let mut svm = svm();
        svm.metadata.creation_timestamp = Some(Time(at("2026-01-01T00:00:00Z")));
        svm.spec.account = Some(crate::api::SvmAccountSpec {
            rotation_period: period.map(str::to_owned),
            ..Default::default()
        });
        svm
    }

    #[test]
    fn the_objects_period_beats_the_clusters_default() {
        let plan = rotation_plan(
            &object(Some("1h")),
            Some(&cluster(Some("720h"))),
            at("2026-01-01T00:30:00Z"),
        )
        .unwrap();
        assert_eq!(plan.due, Some(at("2026-01-01T01:00:00Z")));
        assert_eq!(plan.trigger, None);
        let plan = rotation_plan(
            &object(None),
            Some(&cluster(Some("720h"))),
            at("2026-01-31T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(plan.trigger, Some(Trigger::Schedule), "due at 30 days");
    }

    #[test]
    fn no_period_no_schedule() {
        let plan = rotation_plan(
            &object(None),
            Some(&cluster(None)),
            at("2030-01-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!((plan.period, plan.due, plan.trigger), (None, None, None));
    }

    #[test]
    fn the_clock_starts_at_the_last_rotation() {
        let mut svm = object(Some("1h"));
        svm.status = Some(StorageVirtualMachineStatus {
            credentials_rotated_at: Some(Time(at("2026-01-01T05:00:00Z"))),
            ..Default::default()
        });
        let plan = rotation_plan(&svm, None, at("2026-01-01T05:59:00Z")).unwrap();
        assert_eq!(plan.due, Some(at("2026-01-01T06:00:00Z")));
        assert_eq!(plan.trigger, None);
    }

    #[test]
    fn each_request_value_rotates_once() {
        let mut svm = object(None);
        svm.metadata.annotations = Some(
            [(ROTATE_CREDENTIALS_ANNOTATION.to_owned(), "1".to_owned())]
                .into_iter()
                .collect(),
        );
        let now = at("2026-01-01T00:00:00Z");
        let plan = rotation_plan(&svm, None, now).unwrap();
        assert_eq!(plan.trigger, Some(Trigger::Request("1".into())));
        svm.status = Some(StorageVirtualMachineStatus {
            rotation_request: Some("1".into()),
            ..Default::default()
        });
        assert_eq!(rotation_plan(&svm, None, now).unwrap().trigger, None);
    }

    #[test]
    fn a_period_admission_would_refuse_is_invalid() {
        let error = rotation_plan(&object(Some("5s")), None, Timestamp::now()).unwrap_err();
        assert!(
            error.to_string().contains("spec.account.rotationPeriod"),
            "{error}"
        );
    }
}
