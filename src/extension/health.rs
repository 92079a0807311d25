//! The Extension's `SystemComponentsHealthy` condition, which gardenlet copies into the Shoot's
//! condition of that type: the shoot's Trident is reported where the shoot owner looks.
//!
//! As Gardener's health-check library judges a ManagedResource (`general.CheckManagedResource`):
//! missing or not applied and healthy is False; a failed apply of an invalid object carries
//! `ERR_CONFIGURATION_PROBLEM`. A hibernated shoot is healthy by definition. The transition
//! time only moves when the status changes.
//!
//! Applied is not working: the resource manager judges no `TridentBackendConfig`, so once the
//! delivery is healthy the condition reports what Trident in the shoot says about each delivered
//! backend (its status `phase`, `lastOperationStatus` and `message`), as an extension's own check
//! with the library's shoot client would ([`judge_backends`]).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;

use super::api::{ErrorCode, GardenerCondition, ManagedResource};

/// The condition type gardenlet copies from extensions into the Shoot.
pub const SYSTEM_COMPONENTS_HEALTHY: &str = "SystemComponentsHealthy";

/// The reasons Gardener's health-check library writes.
const SUCCESSFUL: &str = "HealthCheckSuccessful";
const UNSUCCESSFUL: &str = "HealthCheckUnsuccessful";
const PROGRESSING: &str = "HealthCheckProgressing";
/// The library's reason when a check could not run (status `Unknown`).
const CHECK_ERROR: &str = "ConditionCheckError";
/// A delivered backend Trident does not serve: the shoot's volumes of it cannot be provisioned.
pub const BACKEND_NOT_BOUND: &str = "BackendNotBound";

/// How long Trident has to report on a new backend before its silence counts as a failure.
/// Gardener's library reports a check that fails "for expected reasons" as `Progressing` with a
/// threshold after which it turns `False`; Trident reports on a backend within seconds of
/// seeing it, so minutes cover a Trident that is still starting. Counted from the backend's
/// creation in the shoot, not from the condition's last transition as the library does: during
/// a shoot's creation the condition is `Progressing` for as long as the nodes take, which would
/// leave Trident no time at all once they are there.
pub const BACKEND_REPORT_GRACE: Duration = Duration::from_secs(5 * 60);

/// What the condition says, before its times are set.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// `True`, `False`, `Unknown` or `Progressing`.
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
    pub codes: Vec<ErrorCode>,
}

impl Judgement {
    pub fn healthy() -> Self {
        Self::new(
            "True",
            SUCCESSFUL,
            "All health checks successful".to_string(),
        )
    }

    /// Gardener's library for a hibernated shoot: nothing runs that could be unhealthy.
    pub fn hibernated() -> Self {
        Self::new("True", SUCCESSFUL, "Shoot is hibernated".to_string())
    }

    pub fn unsuccessful(message: String, codes: Vec<ErrorCode>) -> Self {
        Self {
            codes,
            ..Self::new("False", UNSUCCESSFUL, message)
        }
    }

    pub fn progressing(message: String) -> Self {
        Self::new("Progressing", PROGRESSING, message)
    }

    pub fn is_healthy(&self) -> bool {
        self.status == "True"
    }

    fn new(status: &'static str, reason: &'static str, message: String) -> Self {
        Self {
            status,
            reason,
            message,
            codes: Vec::new(),
        }
    }
}

/// Gardener's `configurationProblemRegex`: `(?i)(error during apply of object .* is invalid:)`.
fn is_configuration_problem(message: &str) -> bool {
    message.lines().any(|line| {
        let line = line.to_lowercase();
        line.find("error during apply of object ")
            .is_some_and(|at| line[at..].contains(" is invalid:"))
    })
}

/// The ManagedResources of the shoot delivery (`None`: not found), judged.
pub fn judge_delivery(managed_resources: &[(&str, Option<&ManagedResource>)]) -> Judgement {
    let failures: Vec<String> = managed_resources
        .iter()
        .filter_map(|(name, mr)| match mr {
            None => Some(format!("managed resource {name} not found")),
            Some(mr) => mr.check_healthy().err(),
        })
        .collect();
    if failures.is_empty() {
        return Judgement::healthy();
    }
    let codes = if failures.iter().any(|f| is_configuration_problem(f)) {
        vec![ErrorCode::ConfigurationProblem]
    } else {
        Vec::new()
    };
    Judgement::unsuccessful(failures.join("; "), codes)
}

/// Trident's `TridentBackendConfig` status, as far as health reads it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BackendStatus {
    /// `Bound`, `Unbound`, `Failed`, `Lost`, `Unknown`, `Deleting`; empty until Trident reports.
    #[serde(default)]
    pub phase: String,
    /// `Success`, `Failed`, `Processing`.
    #[serde(default)]
    pub last_operation_status: String,
    #[serde(default)]
    pub message: String,
}

/// A delivered backend as the shoot shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum ObservedBackend {
    /// The resource manager reported it applied, but the shoot does not have it (any more).
    Missing,
    Found {
        /// When it was created in the shoot: the grace for Trident's first report runs from it.
        created: Option<Time>,
        status: BackendStatus,
    },
}

/// What Trident says about the delivered backends (`namespace/name` and what the shoot shows),
/// or why the shoot could not be read.
pub fn judge_backends(
    backends: &Result<Vec<(String, ObservedBackend)>, String>,
    now: &Time,
) -> Judgement {
    let backends = match backends {
        Ok(backends) => backends,
        // As the library when a check cannot run: neither healthy nor not.
        Err(why) => {
            return Judgement::new(
                "Unknown",
                CHECK_ERROR,
                format!("failed to check Trident's backends in the shoot: {why}"),
            );
        }
    };
    let mut failing = Vec::new();
    let mut pending = Vec::new();
    for (name, backend) in backends {
        let status = match backend {
            ObservedBackend::Missing => {
                failing.push(format!(
                    "TridentBackendConfig {name} not found in the shoot"
                ));
                continue;
            }
            ObservedBackend::Found { created, status } => {
                let age = created
                    .as_ref()
                    .map(|c| now.0.duration_since(c.0))
                    .and_then(|age| Duration::try_from(age).ok())
                    .unwrap_or_default();
                if awaits_report(status) {
                    if age <= BACKEND_REPORT_GRACE {
                        pending.push(format!("Trident has not reported on backend {name} yet"));
                    } else {
                        failing.push(format!(
                            "Trident has not reported on backend {name} within {}m of its creation",
                            BACKEND_REPORT_GRACE.as_secs() / 60
                        ));
                    }
                    continue;
                }
                status
            }
        };
        if status.phase != "Bound" || status.last_operation_status == "Failed" {
            failing.push(not_bound(name, status));
        }
    }
    if !failing.is_empty() {
        // No code: Trident's message names what it met (a missing LIF, a refused login), which
        // is this operator's or ONTAP's to fix as often as the shoot owner's configuration.
        return Judgement::new("False", BACKEND_NOT_BOUND, failing.join("; "));
    }
    if !pending.is_empty() {
        return Judgement::progressing(pending.join("; "));
    }
    Judgement::healthy()
}

/// Trident has not finished with the backend: no status yet, or an operation under way that has
/// not bound it.
fn awaits_report(status: &BackendStatus) -> bool {
    status.phase.is_empty()
        || (status.phase != "Bound" && status.last_operation_status == "Processing")
}

fn not_bound(name: &str, status: &BackendStatus) -> String {
    let mut text = format!("backend {name} is {}", status.phase);
    if !status.last_operation_status.is_empty() {
        text.push_str(&format!(
            ", its last operation {}",
            status.last_operation_status
        ));
    }
    if !status.message.is_empty() {
        text.push_str(&format!(": {}", status.message));
    }
    text
}

/// The condition saying `judgement`; its transition time moves only with the status.
pub fn system_components_condition(
    judgement: Judgement,
    previous: Option<&GardenerCondition>,
    now: &Time,
) -> GardenerCondition {
    let last_transition_time = match previous {
        Some(p) if p.status == judgement.status => p.last_transition_time.clone(),
        _ => now.clone(),
    };
    GardenerCondition {
        type_: SYSTEM_COMPONENTS_HEALTHY.to_string(),
        status: judgement.status.to_string(),
        last_transition_time,
        last_update_time: now.clone(),
        reason: judgement.reason.to_string(),
        message: reconcile_engine::text::bounded(&judgement.message),
        codes: judgement.codes,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn mr(applied: &str, message: &str) -> ManagedResource {
        serde_json::from_value(json!({
            "apiVersion": "resources.gardener.cloud/v1alpha1", "kind": "ManagedResource",
            "metadata": {"name": "trident-backends", "namespace": "shoot--p--s", "generation": 1},
            "spec": {"secretRefs": [{"name": "s"}]},
            "status": {"observedGeneration": 1, "conditions": [
                {"type": "ResourcesApplied", "status": applied, "reason": "r", "message": message,
                 "lastTransitionTime": "2026-03-01T10:00:00Z", "lastUpdateTime": "2026-03-01T10:00:00Z"},
                {"type": "ResourcesHealthy", "status": "True", "reason": "r", "message": "",
                 "lastTransitionTime": "2026-03-01T10:00:00Z", "lastUpdateTime": "2026-03-01T10:00:00Z"}]}
        }))
        .unwrap()
    }

    #[test]
    fn healthy_unhealthy_and_hibernated() {
        let now = time("2026-03-01T11:00:00Z");
        let good = mr("True", "");
        let ok = system_components_condition(
            judge_delivery(&[("trident-backends", Some(&good))]),
            None,
            &now,
        );
        assert_eq!(
            (ok.status.as_str(), ok.reason.as_str()),
            ("True", "HealthCheckSuccessful")
        );
        assert_eq!(ok.type_, "SystemComponentsHealthy");

        let missing = system_components_condition(
            judge_delivery(&[("trident-init", None)]),
            Some(&ok),
            &time("2026-03-01T11:01:00Z"),
        );
        assert_eq!(missing.status, "False");
        assert_eq!(missing.message, "managed resource trident-init not found");
        assert_eq!(missing.last_transition_time, time("2026-03-01T11:01:00Z"));
        assert!(missing.codes.is_empty());

        let invalid = mr(
            "False",
            "Could not apply all new resources: error during apply of object \"storage.k8s.io/v1/StorageClass//x\": StorageClass.storage.k8s.io \"x\" is invalid: parameters: Forbidden",
        );
        let bad = system_components_condition(
            judge_delivery(&[("trident-backends", Some(&invalid))]),
            Some(&missing),
            &time("2026-03-01T11:02:00Z"),
        );
        assert_eq!(bad.codes, vec![ErrorCode::ConfigurationProblem]);
        assert_eq!(
            bad.last_transition_time, missing.last_transition_time,
            "still False: no transition"
        );

        let sleeping = system_components_condition(Judgement::hibernated(), None, &now);
        assert_eq!(
            (sleeping.status.as_str(), sleeping.message.as_str()),
            ("True", "Shoot is hibernated")
        );
    }

    fn found(created: &str, status: Value) -> ObservedBackend {
        ObservedBackend::Found {
            created: Some(time(created)),
            status: serde_json::from_value(status).unwrap(),
        }
    }

    fn judge(backends: Vec<(&str, ObservedBackend)>, now: &str) -> Judgement {
        let backends = backends
            .into_iter()
            .map(|(name, b)| (format!("kube-system/{name}"), b))
            .collect();
        judge_backends(&Ok(backends), &time(now))
    }

    #[test]
    fn a_bound_backend_is_healthy() {
        let bound = found(
            "2026-03-01T10:00:00Z",
            json!({"phase": "Bound", "lastOperationStatus": "Success", "message": "Backend 'x' created"}),
        );
        assert_eq!(
            judge(vec![("x", bound)], "2026-03-01T11:00:00Z"),
            Judgement::healthy()
        );
        // An update under way keeps a bound backend serving.
        let updating = found(
            "2026-03-01T10:00:00Z",
            json!({"phase": "Bound", "lastOperationStatus": "Processing"}),
        );
        assert!(judge(vec![("x", updating)], "2026-03-01T11:00:00Z").is_healthy());
    }

    /// Trident's own words reach the condition, with the backend's name and no code.
    #[test]
    fn a_failed_backend_is_false_with_tridents_message() {
        let failed = found(
            "2026-03-01T10:00:00Z",
            json!({"phase": "Unbound", "lastOperationStatus": "Failed",
                   "message": "Failed to create backend: no NVMe data LIFs found"}),
        );
        let verdict = judge(vec![("ontap-a-backend", failed)], "2026-03-01T10:00:30Z");
        assert_eq!(verdict.status, "False");
        assert_eq!(verdict.reason, "BackendNotBound");
        assert_eq!(
            verdict.message,
            "backend kube-system/ontap-a-backend is Unbound, its last operation Failed: \
             Failed to create backend: no NVMe data LIFs found"
        );
        assert!(verdict.codes.is_empty());

        // Bound once, but its last update failed: Trident serves an outdated backend.
        let stale = found(
            "2026-03-01T10:00:00Z",
            json!({"phase": "Bound", "lastOperationStatus": "Failed", "message": "update failed"}),
        );
        assert_eq!(
            judge(vec![("x", stale)], "2026-03-01T11:00:00Z").status,
            "False"
        );

        let lost = found("2026-03-01T10:00:00Z", json!({"phase": "Lost"}));
        let verdict = judge(vec![("x", lost)], "2026-03-01T11:00:00Z");
        assert_eq!(verdict.message, "backend kube-system/x is Lost");

        let gone = judge(
            vec![("x", ObservedBackend::Missing)],
            "2026-03-01T11:00:00Z",
        );
        assert_eq!(gone.status, "False");
        assert!(
            gone.message.contains("not found in the shoot"),
            "{}",
            gone.message
        );
    }

    /// A backend Trident has not reported on yet is Progressing for the grace, then False; a
    /// failing one beside it wins.
    #[test]
    fn silence_is_progressing_within_the_grace_only() {
        let silent = || found("2026-03-01T10:00:00Z", json!({}));
        let early = judge(vec![("x", silent())], "2026-03-01T10:04:59Z");
        assert_eq!(
            (early.status, early.reason, early.message.as_str()),
            (
                "Progressing",
                "HealthCheckProgressing",
                "Trident has not reported on backend kube-system/x yet"
            )
        );
        let working = found(
            "2026-03-01T10:00:00Z",
            json!({"phase": "Unbound", "lastOperationStatus": "Processing"}),
        );
        assert_eq!(
            judge(vec![("x", working)], "2026-03-01T10:01:00Z").status,
            "Progressing"
        );

        let late = judge(vec![("x", silent())], "2026-03-01T10:05:01Z");
        assert_eq!((late.status, late.reason), ("False", "BackendNotBound"));
        assert!(late.message.contains("within 5m"), "{}", late.message);

        let failed = found("2026-03-01T10:00:00Z", json!({"phase": "Failed"}));
        let mixed = judge(vec![("x", silent()), ("y", failed)], "2026-03-01T10:01:00Z");
        assert_eq!(mixed.status, "False");
        assert_eq!(mixed.message, "backend kube-system/y is Failed");
    }

    /// A shoot that cannot be read says neither healthy nor not, as Gardener's library.
    #[test]
    fn an_unreadable_shoot_is_unknown() {
        let verdict = judge_backends(
            &Err("no shoot access Secret".to_string()),
            &time("2026-03-01T10:00:00Z"),
        );
        assert_eq!(
            (verdict.status, verdict.reason),
            ("Unknown", "ConditionCheckError")
        );
        let condition = system_components_condition(verdict, None, &time("2026-03-01T10:00:00Z"));
        assert_eq!(condition.status, "Unknown");
    }
}
