//! The HelmComponent controller: renders the component's chart (cached), then moves the
//! simulated installation on — `""` → `pending` → (1 s) `started` → (N s) `failing` → (N s)
//! `retrying` → (N s) `success`, N = the length of `componentName` — one state per pass.
//!
//! The next state is due `duration` after `status.lastReconciliation`, the time the previous one
//! was written; a pass before that waits for the rest (a requeue), so progress depends on
//! neither the component's own status events (the engine does not wake a controller for them)
//! nor on the process staying up: after a restart the times in the status still hold.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::watcher;
use kube::{CustomResourceExt, ResourceExt};

use super::render::{CHART_VERSION, DEFAULT_NAMESPACE, RenderRequest, Renderer};
use crate::api::{HelmComponent, HelmComponentState, HelmComponentStatus};
use reconcile_engine::{
    Halt, Manager, ManagerError, Outcome, Reconciler, Registration, StepError, StepRunner, Wait,
};

reconcile_engine::steps! {
    /// The steps of the HelmComponent controller.
    pub enum HelmComponentStep {
        /// The component's chart rendered (from the cache, or by helm).
        ChartRendered,
        /// The (simulated) installation reached `success`.
        Installed,
    }
}

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "helmcomponent";

/// How fast the simulated lifecycle runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lifecycle {
    /// Every duration is divided by this (1 = the experiment's seconds).
    pub time_scale: f64,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle { time_scale: 1.0 }
    }
}

impl Lifecycle {
    /// How long `state` lasts for a component named `name`, and the state after it.
    pub fn after(
        &self,
        state: Option<HelmComponentState>,
        name: &str,
    ) -> Option<(Duration, HelmComponentState)> {
        let n = name.chars().count() as f64;
        let (seconds, next) = match state {
            None => (0.0, HelmComponentState::Pending),
            Some(HelmComponentState::Pending) => (1.0, HelmComponentState::Started),
            Some(HelmComponentState::Started) => (n, HelmComponentState::Failing),
            Some(HelmComponentState::Failing) => (n, HelmComponentState::Retrying),
            Some(HelmComponentState::Retrying) => (n, HelmComponentState::Success),
            Some(HelmComponentState::Success) => return None,
        };
        Some((self.scaled(seconds), next))
    }

    /// `seconds` at this time scale.
    pub fn scaled(&self, seconds: f64) -> Duration {
        let scale = if self.time_scale.is_finite() && self.time_scale > 0.0 {
            self.time_scale
        } else {
            1.0
        };
        Duration::from_secs_f64(seconds / scale)
    }

    /// From creation to `success` for a component named `name`: 1 + 3N seconds, scaled.
    pub fn total(&self, name: &str) -> Duration {
        self.scaled(1.0 + 3.0 * name.chars().count() as f64)
    }
}

/// Registers the HelmComponent controller.
pub fn register(
    manager: &mut Manager,
    renderer: Renderer,
    lifecycle: Lifecycle,
) -> Result<(), ManagerError> {
    manager.register(
        Registration::new(
            CONTROLLER,
            HelmComponentReconciler {
                renderer,
                lifecycle,
            },
        )
        .watching(watcher::Config::default())
        // 18 per Kyma, each read by its own pass or its Kyma's: packed, one holds a fraction
        // of what it takes decoded.
        .packed()
        .crd(HelmComponent::crd()),
    )
}

pub struct HelmComponentReconciler {
    pub renderer: Renderer,
    pub lifecycle: Lifecycle,
}

/// What the component's chart is rendered with.
pub fn render_request(component: &HelmComponent) -> RenderRequest {
    let spec = &component.spec;
    RenderRequest {
        chart: spec
            .chart_location
            .clone()
            .unwrap_or_else(|| spec.component_name.clone()),
        version: spec
            .version
            .clone()
            .unwrap_or_else(|| CHART_VERSION.to_owned()),
        namespace: spec
            .namespace
            .clone()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
        values: BTreeMap::from([("component".to_owned(), spec.component_name.clone())]),
    }
}

/// `state` as a condition reason.
pub fn pascal(state: HelmComponentState) -> &'static str {
    match state {
        HelmComponentState::Pending => "Pending",
        HelmComponentState::Started => "Started",
        HelmComponentState::Failing => "Failing",
        HelmComponentState::Retrying => "Retrying",
        HelmComponentState::Success => "Success",
    }
}

impl Reconciler for HelmComponentReconciler {
    type Resource = HelmComponent;
    type Step = HelmComponentStep;

    async fn reconcile(
        &self,
        component: &HelmComponent,
        status: &mut HelmComponentStatus,
        steps: &mut StepRunner<HelmComponentStep>,
    ) -> Result<(), Halt> {
        steps
            .step(HelmComponentStep::ChartRendered, || async {
                let request = render_request(component);
                match self.renderer.render(&request).await {
                    Ok(_manifest) => Ok(Outcome::unchanged()),
                    Err(err) if err.is_invalid() => {
                        Err(StepError::invalid("ChartNotFound", err.to_string()).into())
                    }
                    Err(err) => {
                        Err(StepError::transient_msg("RenderFailed", err.to_string()).into())
                    }
                }
            })
            .await?;

        let name = component.spec.component_name.as_str();
        let now = Timestamp::now();
        let current = status.status;
        let Some((duration, next)) = self.lifecycle.after(current, name) else {
            return steps
                .step(HelmComponentStep::Installed, || async {
                    Ok(Outcome::unchanged())
                })
                .await;
        };
        let since = status
            .last_reconciliation
            .as_ref()
            .map(|t| t.0)
            .unwrap_or(now);
        let elapsed = now
            .duration_since(since)
            .try_into()
            .unwrap_or(Duration::ZERO);
        let (state, wait) = if current.is_none() || elapsed >= duration {
            status.status = Some(next);
            status.last_reconciliation = Some(MicroTime(now));
            tracing::debug!(component = %component.name_any(), state = next.as_str(), "moved on");
            let wait = self.lifecycle.after(Some(next), name).map(|(d, _)| d);
            (next, wait)
        } else {
            (
                current.unwrap_or(HelmComponentState::Pending),
                Some(duration - elapsed),
            )
        };
        steps
            .step(HelmComponentStep::Installed, || async {
                match wait {
                    None => Ok(Outcome::changed()),
                    Some(after) => Err(Wait::new(
                        pascal(state),
                        format!("the installation is {}", state.as_str()),
                        after,
                    )
                    .into()),
                }
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifecycle_takes_one_plus_three_n_seconds() {
        let lifecycle = Lifecycle::default();
        let name = "service-catalog-addons";
        let mut state = None;
        let mut total = Duration::ZERO;
        while let Some((d, next)) = lifecycle.after(state, name) {
            total += d;
            state = Some(next);
        }
        assert_eq!(state, Some(HelmComponentState::Success));
        assert_eq!(total, Duration::from_secs(67));
        assert_eq!(lifecycle.total(name), total);
        let fast = Lifecycle { time_scale: 10.0 };
        assert_eq!(fast.total(name), Duration::from_secs_f64(6.7));
        assert_eq!(
            Lifecycle { time_scale: 0.0 }.total("ory"),
            Duration::from_secs(10)
        );
    }
}
