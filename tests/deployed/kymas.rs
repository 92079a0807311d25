//! The chart's default memory limit, enforced by the kernel: 1,000 standard Kymas created at once
//! complete with `kyma.enabled=true` and the chart's default resources, with no OOMKill and no
//! restart. It prints what the containers' memory cgroups recorded at their peak (operator and the
//! helm it renders with, page cache included): the figures the chart's defaults come from.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use kyma_inventory::api::{Kyma, KymaState};
use kyma_inventory::{STANDARD_COMPONENTS, standard_namespace};
use serde_json::Value;

use crate::release::{ONE_RELEASE, operator_pods, rolled_out, shipped};
use crate::runtime::{memory_limit_and_peak, pod_processes};
use crate::support::kyma::{TIME_SCALE, kyma};
use crate::support::{create_namespace, env_or, try_poll_every};

#[tokio::test]
async fn a_thousand_kymas_complete_within_the_default_memory_limit() {
    let _turn = ONE_RELEASE.lock().await;
    let shipped = shipped();
    let client = shipped.client().await;
    // No OntapCluster: this release only runs the Kyma controllers' load.
    let mut values = shipped.image_values();
    values["kyma"] = serde_json::json!({"enabled": true});
    values["extraArgs"] = serde_json::json!([format!("--kyma-time-scale={TIME_SCALE}")]);
    shipped.install(&values);
    let image = format!("{}:{}", shipped.repository, shipped.tag);
    rolled_out(&client, &image, 2, Duration::from_secs(120)).await;

    let count: usize = env_or("DEPLOYED_KYMAS", 1000);
    let namespace = "kymas";
    create_namespace(&client, namespace, serde_json::json!({})).await;
    let kymas: Api<Kyma> = Api::namespaced(client.clone(), namespace);
    let components: Vec<(&str, Option<&str>)> = STANDARD_COMPONENTS
        .iter()
        .map(|c| (*c, standard_namespace(c)))
        .collect();
    let started = Instant::now();
    stream::iter(0..count)
        .map(|i| {
            let kymas = kymas.clone();
            let object = kyma(&format!("kyma-{i}"), &components);
            async move {
                kymas
                    .create(&PostParams::default(), &object)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
    // Every 2 s, not poll's 100 ms: each look lists all the Kymas, and at 100 ms those lists
    // were most of the API server's CPU in this test (the load it means to measure is the
    // operator's).
    try_poll_every(
        Duration::from_secs(900),
        Duration::from_secs(2),
        async || {
            let list = kymas.list(&ListParams::default()).await.ok()?;
            let done = list
                .items
                .iter()
                .filter(|k| k.status.as_ref().and_then(|s| s.status) == Some(KymaState::Success))
                .count();
            (done == count).then_some(())
        },
    )
    .await
    .unwrap_or_else(|why| panic!("{count} Kymas at success: {why}"));
    let took = started.elapsed();

    let pods = operator_pods(&client).await;
    let mut report = Vec::new();
    for pod in &pods {
        no_restart_and_no_oom_kill(pod);
        let uid = pod.metadata.uid.clone().unwrap();
        let pid = *pod_processes(&uid)
            .first()
            .unwrap_or_else(|| panic!("no process of {}", pod.name_any()));
        let (limit, peak) = memory_limit_and_peak(pid);
        let chart_limit = mebibytes(&values_default("resources.limits.memory"));
        assert_eq!(
            limit,
            chart_limit * 1024 * 1024,
            "the kernel's limit is the chart's"
        );
        report.push(format!(
            "{}: peak {:.1} MiB of {} MiB",
            pod.name_any(),
            peak as f64 / 1048576.0,
            chart_limit
        ));
    }
    eprintln!(
        "{count} Kymas at success after {:.1} s in the chart's default limits; memory cgroups: {}",
        took.as_secs_f64(),
        report.join("; ")
    );
    shipped.uninstall();
}

fn no_restart_and_no_oom_kill(pod: &Pod) {
    for status in pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default()
    {
        let last = status
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.reason.clone().unwrap_or_default());
        assert_eq!(
            (status.restart_count, last),
            (0, None),
            "{} restarted",
            pod.name_any()
        );
    }
}

/// A value of the chart's defaults (deploy/chart/values.yaml) by its dotted path.
fn values_default(path: &str) -> String {
    let text =
        std::fs::read_to_string(crate::support::repo_root().join("deploy/chart/values.yaml"))
            .unwrap();
    let mut value: Value = serde_yaml::from_str(&text).unwrap();
    for key in path.split('.') {
        value = value[key].take();
    }
    value.as_str().unwrap().to_owned()
}

fn mebibytes(quantity: &str) -> u64 {
    quantity
        .strip_suffix("Mi")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the chart's memory limit {quantity} is not in Mi"))
}
