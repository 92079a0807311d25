//! Measuring the Kyma controllers at scale: the load driver `kyma-load` (this crate's binary)
//! and the helpers the benchmark (the operator's `tests/bench_kyma.rs`) shares with it:
//! Kymas created as the experiment's `sample-data.sh` creates them, the time until each reports `success`,
//! percentiles, a process's peak RSS, the API server's requests by verb, and the write rate a
//! plain client gets from the API server.

mod apiserver;
mod probe;
mod report;
mod sample;
mod watch;

pub use apiserver::*;
pub use probe::*;
pub use report::*;
pub use sample::*;
pub use watch::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::probe_status;
    use kyma_inventory::api::HelmComponentState;
    use std::time::Duration;

    #[test]
    fn the_sample_kyma_is_the_experiments() {
        let kyma = sample_kyma("kyma-sample-1", "pb");
        assert_eq!(kyma.spec.components.len(), 18);
        let ns = |name: &str| {
            kyma.spec
                .components
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.namespace.clone())
        };
        assert_eq!(ns("istio").as_deref(), Some("istio-system"));
        assert_eq!(ns("certificates").as_deref(), Some("istio-system"));
        assert_eq!(
            ns("application-connector").as_deref(),
            Some("kyma-integration")
        );
        assert_eq!(ns("logging"), None);
        assert_eq!(single_kyma_time(1.0), Duration::from_secs(67));
    }

    #[test]
    fn the_probe_writes_a_status_the_controller_would() {
        let status: kyma_inventory::api::HelmComponentStatus =
            serde_json::from_value(probe_status(HelmComponentState::Started))
                .expect("a HelmComponent status");
        assert_eq!(
            status.status,
            Some(kyma_inventory::api::HelmComponentState::Started)
        );
        let conditions: Vec<(&str, &str)> = status
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            conditions,
            [
                ("Ready", "Started"),
                ("ChartRendered", "Succeeded"),
                ("Installed", "Started")
            ]
        );
    }

    /// The probe's Kyma statuses are ones the Kyma controller writes, and its refresh of
    /// `waitingFor` is the small patch the controller sends, not a whole status.
    #[test]
    fn the_probe_writes_kyma_statuses_the_controller_would() {
        use crate::probe::probe_kyma_status;
        use kyma_inventory::api::{KymaState, KymaStatus};
        let waiting: KymaStatus = serde_json::from_value(probe_kyma_status(&["istio", "logging"]))
            .expect("a Kyma status");
        assert_eq!(waiting.status, Some(KymaState::Reconciling));
        assert_eq!(waiting.waiting_for, ["istio", "logging"]);
        let ready = waiting.conditions.first().expect("Ready");
        assert_eq!(
            (ready.type_.as_str(), ready.status.as_str()),
            ("Ready", "False")
        );
        let done: KymaStatus =
            serde_json::from_value(probe_kyma_status(&[])).expect("a Kyma status");
        assert_eq!(done.status, Some(KymaState::Success));
        assert!(done.waiting_for.is_empty());
        assert!(done.conditions.iter().all(|c| c.status == "True"));

        let before = probe_kyma_status(&["istio", "logging"]);
        std::thread::sleep(Duration::from_millis(2));
        let mut after = probe_kyma_status(&["logging"]);
        crate::probe::keep_transition_times(&mut after, &before);
        let patch = reconcile_engine::status_patch(&before, &after)
            .expect("serializes")
            .expect("a change");
        assert_eq!(
            patch,
            serde_json::json!({"status": {"waitingFor": ["logging"]}})
        );
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_secs).collect();
        assert_eq!(percentile(&v, 50.0), Duration::from_secs(50));
        assert_eq!(percentile(&v, 99.0), Duration::from_secs(99));
        assert_eq!(percentile(&v, 100.0), Duration::from_secs(100));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn apiserver_request_totals_sum_by_labels() {
        let text = r#"# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="inventory.kyma-project.io",resource="helmcomponents",scope="resource",subresource="",verb="POST",version="v1alpha1"} 18
apiserver_request_total{code="200",component="apiserver",dry_run="",group="inventory.kyma-project.io",resource="helmcomponents",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 90
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"} 3
"#;
        let by_verb = sum_by(text, "apiserver_request_total", &["verb"]);
        assert_eq!(by_verb["POST"], 18.0);
        assert_eq!(by_verb["PATCH"], 90.0);
        let by = sum_by(
            text,
            "apiserver_request_total",
            &["resource", "subresource"],
        );
        assert_eq!(by["helmcomponents status"], 90.0);
        assert_eq!(by["helmcomponents"], 18.0);
    }
}
