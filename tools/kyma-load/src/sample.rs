//! The experiment's sample Kymas (`sample-data.sh`) and creating them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt};

use kyma_inventory::api::{Kyma, KymaComponent, KymaSpec};
use kyma_inventory::component::Lifecycle;
use kyma_inventory::{STANDARD_COMPONENTS, standard_namespace};

/// Creates running at once when no rate is set.
pub(crate) const CREATE_CONCURRENCY: usize = 32;

/// The Kyma `sample-data.sh` creates: the 18 standard components, `istio` and `certificates`
/// in `istio-system`, `application-connector` in `kyma-integration`.
pub fn sample_kyma(name: &str, namespace: &str) -> Kyma {
    Kyma {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        spec: KymaSpec {
            components: STANDARD_COMPONENTS
                .iter()
                .map(|c| KymaComponent {
                    name: (*c).to_owned(),
                    namespace: standard_namespace(c).map(str::to_owned),
                })
                .collect(),
        },
        status: None,
    }
}

/// `kyma-sample-<i>`, as `sample-data.sh` names them (from 1).
pub fn sample_name(i: usize) -> String {
    format!("kyma-sample-{i}")
}

/// How long one standard Kyma takes alone at `time_scale`: its longest component's lifecycle.
pub fn single_kyma_time(time_scale: f64) -> Duration {
    let lifecycle = Lifecycle { time_scale };
    STANDARD_COMPONENTS
        .iter()
        .map(|c| lifecycle.total(c))
        .max()
        .unwrap_or_default()
}

/// Creates `namespace` unless it exists.
pub async fn ensure_namespace(client: &Client, namespace: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating namespace {namespace}")),
    }
}

/// Creates `kymas` (at `rate` per second, or as fast as the API server takes them with
/// `rate <= 0`); returns when each create was sent, by name.
pub async fn create_kymas(
    client: &Client,
    kymas: Vec<Kyma>,
    rate: f64,
) -> anyhow::Result<HashMap<String, Instant>> {
    let start = Instant::now();
    let results: Vec<anyhow::Result<(String, Instant)>> =
        futures::stream::iter(kymas.into_iter().enumerate())
            .map(|(i, kyma)| {
                let client = client.clone();
                async move {
                    if rate > 0.0 {
                        let at = start + Duration::from_secs_f64(i as f64 / rate);
                        tokio::time::sleep_until(at.into()).await;
                    }
                    let api: Api<Kyma> =
                        Api::namespaced(client, &kyma.namespace().unwrap_or_default());
                    let sent = Instant::now();
                    api.create(&PostParams::default(), &kyma)
                        .await
                        .with_context(|| format!("creating Kyma {}", kyma.name_any()))?;
                    Ok((kyma.name_any(), sent))
                }
            })
            .buffer_unordered(CREATE_CONCURRENCY)
            .collect()
            .await;
    results.into_iter().collect()
}
