//! The render cache in the real process: HelmComponents that exist before the operator starts
//! are all reconciled at once when its cache syncs, so their first renders of one chart run
//! concurrently — and helm runs once per chart.

use std::time::Duration;

use kube::api::PostParams;

use crate::support::kyma::{KymaWorld, component_state, helm_component};
use crate::support::metrics::metric_sum;
use crate::support::{poll, tail};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_renders_of_one_chart_render_once() {
    const EACH: usize = 8;
    let world = KymaWorld::without_operator().await;
    let api: kube::Api<kyma_inventory::api::HelmComponent> =
        kube::Api::namespaced(world.env.client.clone(), &world.env.namespace);
    for chart in ["ory", "rafter"] {
        for i in 0..EACH {
            api.create(
                &PostParams::default(),
                &helm_component(&format!("{chart}-{i}"), chart),
            )
            .await
            .unwrap();
        }
    }
    let world = world.with_operator(&[]);
    // A status means the pass got past rendering.
    poll(
        "every component rendered",
        Duration::from_secs(60),
        async || {
            let list = world.children().await;
            (list.len() == 2 * EACH && list.iter().all(|c| component_state(c).is_some()))
                .then_some(())
        },
    )
    .await;
    let metrics = world.metrics().await;
    let count = |result: &str| metric_sum(&metrics, "kyma_render_total", &[("result", result)]);
    let helm_runs = metric_sum(&metrics, "kyma_render_duration_seconds_count", &[]);
    let context = || {
        format!(
            "miss {}, hit {}, error {}, helm runs {helm_runs}\n--- operator log ---\n{}",
            count("miss"),
            count("hit"),
            count("error"),
            tail(&world.operator.logs(), 30)
        )
    };
    assert_eq!(count("error"), 0.0, "{}", context());
    assert_eq!(count("miss"), 2.0, "one render per chart: {}", context());
    assert_eq!(helm_runs, 2.0, "helm ran once per chart: {}", context());
    assert!(
        count("hit") >= (2 * (EACH - 1)) as f64,
        "every other first pass was served by the cache: {}",
        context()
    );
}

/// The cache renders a chart once for every namespace, into a placeholder namespace put right
/// afterwards: for every shipped chart the result must be byte for byte what helm renders for
/// that namespace itself.
#[tokio::test]
async fn a_manifest_rendered_for_one_namespace_serves_every_namespace() {
    use std::collections::BTreeMap;

    use kyma_inventory::render::{
        CHART_VERSION, RenderMetrics, RenderRequest, Renderer, chart_names,
    };

    let helm = crate::support::tool("helm");
    let renderer = Renderer::new(helm.clone(), 2, RenderMetrics::default());
    let home = tempfile::tempdir().unwrap();
    for chart in chart_names() {
        let values = BTreeMap::from([("component".to_owned(), chart.to_owned())]);
        for namespace in ["team-a", "kyma-system"] {
            let request = RenderRequest {
                chart: chart.to_owned(),
                version: CHART_VERSION.to_owned(),
                namespace: namespace.to_owned(),
                values: values.clone(),
            };
            let cached = renderer.render(&request).await.unwrap();
            let direct = std::process::Command::new(&helm)
                .arg("template")
                .arg(chart)
                .arg(
                    crate::support::repo_root()
                        .join("crates/kyma-inventory/charts")
                        .join(chart),
                )
                .args(["--namespace", namespace])
                .args(["--set-string", &format!("component={chart}")])
                .env("HELM_CACHE_HOME", home.path().join("cache"))
                .env("HELM_CONFIG_HOME", home.path().join("config"))
                .env("HELM_DATA_HOME", home.path().join("data"))
                .output()
                .unwrap();
            assert!(direct.status.success(), "{direct:?}");
            assert_eq!(
                &*cached,
                String::from_utf8(direct.stdout).unwrap(),
                "{chart} in {namespace}"
            );
            assert!(
                cached.contains(&format!("namespace: {namespace}")),
                "{chart}"
            );
        }
    }
    assert_eq!(
        renderer.cached().await,
        chart_names().len() as u64,
        "one manifest per chart, whatever the namespace"
    );
}
