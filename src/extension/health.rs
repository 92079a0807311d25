//! The Extension's `SystemComponentsHealthy` condition, which gardenlet copies into the Shoot's
//! condition of that type: the shoot's Trident is reported where the shoot owner looks.
//!
//! As Gardener's health-check library judges a ManagedResource (`general.CheckManagedResource`):
//! missing or not applied and healthy is False; a failed apply of an invalid object carries
//! `ERR_CONFIGURATION_PROBLEM`. A hibernated shoot is healthy by definition. The transition
//! time only moves when the status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::api::{ErrorCode, GardenerCondition, ManagedResource};

/// The condition type gardenlet copies from extensions into the Shoot.
pub const SYSTEM_COMPONENTS_HEALTHY: &str = "SystemComponentsHealthy";

/// Gardener's `configurationProblemRegex`: `(?i)(error during apply of object .* is invalid:)`.
fn is_configuration_problem(message: &str) -> bool {
    message.lines().any(|line| {
        let line = line.to_lowercase();
        line.find("error during apply of object ")
            .is_some_and(|at| line[at..].contains(" is invalid:"))
    })
}

/// The condition from the ManagedResources of the shoot delivery (`None`: not found).
pub fn system_components_condition(
    managed_resources: &[(&str, Option<&ManagedResource>)],
    hibernated: bool,
    previous: Option<&GardenerCondition>,
    now: &Time,
) -> GardenerCondition {
    let (status, reason, message, codes) = if hibernated {
        (
            "True",
            "HealthCheckSuccessful",
            "Shoot is hibernated".to_string(),
            Vec::new(),
        )
    } else {
        let failures: Vec<String> = managed_resources
            .iter()
            .filter_map(|(name, mr)| match mr {
                None => Some(format!("managed resource {name} not found")),
                Some(mr) => mr.check_healthy().err(),
            })
            .collect();
        if failures.is_empty() {
            (
                "True",
                "HealthCheckSuccessful",
                "All health checks successful".to_string(),
                Vec::new(),
            )
        } else {
            let codes = if failures.iter().any(|f| is_configuration_problem(f)) {
                vec![ErrorCode::ConfigurationProblem]
            } else {
                Vec::new()
            };
            (
                "False",
                "HealthCheckUnsuccessful",
                failures.join("; "),
                codes,
            )
        }
    };
    let last_transition_time = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => now.clone(),
    };
    GardenerCondition {
        type_: SYSTEM_COMPONENTS_HEALTHY.to_string(),
        status: status.to_string(),
        last_transition_time,
        last_update_time: now.clone(),
        reason: reason.to_string(),
        message,
        codes,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let ok =
            system_components_condition(&[("trident-backends", Some(&good))], false, None, &now);
        assert_eq!(
            (ok.status.as_str(), ok.reason.as_str()),
            ("True", "HealthCheckSuccessful")
        );
        assert_eq!(ok.type_, "SystemComponentsHealthy");

        let missing = system_components_condition(
            &[("trident-init", None)],
            false,
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
            &[("trident-backends", Some(&invalid))],
            false,
            Some(&missing),
            &time("2026-03-01T11:02:00Z"),
        );
        assert_eq!(bad.codes, vec![ErrorCode::ConfigurationProblem]);
        assert_eq!(
            bad.last_transition_time, missing.last_transition_time,
            "still False: no transition"
        );

        let sleeping = system_components_condition(&[("trident-init", None)], true, None, &now);
        assert_eq!(
            (sleeping.status.as_str(), sleeping.message.as_str()),
            ("True", "Shoot is hibernated")
        );
    }
}
