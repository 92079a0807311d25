//! The write rates a plain client gets from the API server: the floor a controller's writes
//! are measured against.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};

use crate::sample::{CREATE_CONCURRENCY, ensure_namespace, sample_name};
use kyma_inventory::api::{HelmComponent, HelmComponentState};
use kyma_inventory::component::pascal;
use kyma_inventory::kyma::child_spec;
use kyma_inventory::{STANDARD_COMPONENTS, standard_namespace};
use test_support::process::{CpuMeter, CpuUse};

/// The API server's write rate as a plain client (no client-side limit) sees it: `count` small
/// ConfigMaps created with 32 requests in flight, in a namespace of their own that is deleted
/// afterwards. Writes per second.
pub async fn plain_write_rate(
    client: &Client,
    namespace: &str,
    count: usize,
) -> anyhow::Result<f64> {
    ensure_namespace(client, namespace).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let rate = writes_per_second(count, "ConfigMap creates", |i| {
        let api = api.clone();
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("write-rate-{i}")),
                ..ObjectMeta::default()
            },
            data: Some([("i".to_owned(), i.to_string())].into()),
            ..ConfigMap::default()
        };
        async move { api.create(&PostParams::default(), &cm).await }
    })
    .await;
    clean_up(client, &api, namespace).await;
    rate
}

/// Sends the `count` writes `write` makes, [`CREATE_CONCURRENCY`] at once, and returns how many
/// per second the API server took; an error if any failed.
async fn writes_per_second<T, F>(
    count: usize,
    what: &str,
    write: impl Fn(usize) -> F,
) -> anyhow::Result<f64>
where
    F: Future<Output = Result<T, kube::Error>>,
{
    let start = Instant::now();
    let results: Vec<Result<T, kube::Error>> = futures::stream::iter(0..count)
        .map(write)
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    let rate = count as f64 / start.elapsed().as_secs_f64();
    let failed = results.iter().filter(|r| r.is_err()).count();
    anyhow::ensure!(failed == 0, "{failed} of {count} {what} failed");
    Ok(rate)
}

/// Deletes what a write-rate probe left in `namespace`, and the namespace, and waits until the
/// objects are gone: a Kyma controller started afterwards would otherwise take a probe's
/// HelmComponents for its own and write their status (in session 23, one `deletecollection` of
/// 18,000 objects on a loaded API server ended before its work did, and the restart after it
/// counted 6,490 writes). Best effort beyond that wait, as leftovers harm nothing but what
/// runs after the probe; how many are left is logged.
async fn clean_up<K>(client: &Client, api: &Api<K>, namespace: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    const EMPTY_WITHIN: Duration = Duration::from_secs(900);
    let start = Instant::now();
    loop {
        if let Err(e) = api
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
        {
            tracing::warn!(error = %e, namespace, "deleting a probe's objects");
        }
        match api.list_metadata(&ListParams::default().limit(1)).await {
            Ok(left) if left.items.is_empty() => break,
            Ok(left) => {
                let remaining = left.metadata.remaining_item_count.unwrap_or(0) + 1;
                if start.elapsed() > EMPTY_WITHIN {
                    tracing::warn!(remaining, namespace, "a probe's objects are still there");
                    break;
                }
            }
            Err(e) => tracing::warn!(error = %e, namespace, "listing a probe's objects"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
}

/// The write rates a plain client gets for the writes the Kyma controllers make, per second.
#[derive(Clone, Debug)]
pub struct HelmComponentWriteRates {
    /// HelmComponent creates (a Kyma's child creates).
    pub create: f64,
    /// Merge patches of a HelmComponent's status subresource (the HelmComponent controller's
    /// transitions), each with a status, a timestamp and three conditions: over one patch of
    /// each object without a status and one of each object with it.
    pub status_patch: f64,
    /// The CPU the measured processes used during the status patches.
    pub status_patch_cpu: CpuUse,
}

impl HelmComponentWriteRates {
    /// How long the API server needs at least for `creates` creates and `other` status writes.
    pub fn floor(&self, creates: f64, other: f64) -> Duration {
        Duration::from_secs_f64(creates / self.create + other / self.status_patch)
    }
}

/// The API server's rates for the writes the Kyma controllers make, as a plain client (no
/// client-side limit, 32 requests in flight) sees them: `count` HelmComponents created, then
/// two rounds of `count` patches of their status, in a namespace of their own that is deleted
/// afterwards.
/// The CPU that `processes` (name, pid) use during the patches is measured too.
///
/// A ConfigMap create is cheaper than a HelmComponent status patch (a custom resource: schema
/// and CEL validation, a read-modify-write of the stored object), so a floor measured with
/// ConfigMaps alone promises more than the API server can give the controllers. No Kyma
/// controller may run meanwhile: it would take these HelmComponents for its own and write
/// their status too.
pub async fn plain_helmcomponent_write_rates(
    client: &Client,
    namespace: &str,
    count: usize,
    processes: &[(&str, u32)],
) -> anyhow::Result<HelmComponentWriteRates> {
    ensure_namespace(client, namespace).await?;
    let api: Api<HelmComponent> = Api::namespaced(client.clone(), namespace);
    let name = |i: usize| format!("write-rate-{i}");
    let component = STANDARD_COMPONENTS.first().copied().unwrap_or("istio");
    let spec = child_spec(component, standard_namespace(component));
    let creates = writes_per_second(count, "HelmComponent creates", |i| {
        let api = api.clone();
        let hc = HelmComponent::new(&name(i), spec.clone());
        async move { api.create(&PostParams::default(), &hc).await }
    })
    .await;
    let meter = CpuMeter::start(processes);
    let patches = match &creates {
        Ok(_) => {
            // Two transitions per object, as the HelmComponent controller writes them: the
            // first gives an object without a status its three conditions, the second (like
            // the four after it) patches an object that holds them.
            let mut rates = Vec::new();
            for state in [TRANSITIONS[0], TRANSITIONS[1]] {
                let rate = writes_per_second(count, "HelmComponent status patches", |i| {
                    let api = api.clone();
                    let patch = serde_json::json!({ "status": probe_status(state) });
                    let name = name(i);
                    async move {
                        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                    }
                })
                .await;
                rates.push(rate);
            }
            rates
                .into_iter()
                .collect::<anyhow::Result<Vec<f64>>>()
                // Equal counts: the rate over both is their harmonic mean.
                .map(|r| r.len() as f64 / r.iter().map(|x| 1.0 / x.max(1e-9)).sum::<f64>())
        }
        // Not read: the failed creates are the error returned below.
        Err(_) => Ok(0.0),
    };
    let status_patch_cpu = meter.stop();
    clean_up(client, &api, namespace).await;
    Ok(HelmComponentWriteRates {
        create: creates?,
        status_patch: patches?,
        status_patch_cpu,
    })
}

/// What the least any controller could do took: the HelmComponent writes of a load run, sent as
/// fast as the API server takes them, with a watch on them open.
#[derive(Clone, Debug)]
pub struct WatchedWrites {
    pub creates: usize,
    pub status_patches: usize,
    pub took: Duration,
    /// The CPU the measured processes used meanwhile.
    pub cpu: CpuUse,
}

/// The HelmComponent writes `kymas` standard Kymas need — 18 creates each, then the five status
/// transitions of every child, round by round, [`CREATE_CONCURRENCY`] in flight — with a watch
/// on them open and read, as every controller has one, but nothing else: no lifecycle to wait
/// for, no reconcile, no Kyma. In a namespace of its own, emptied afterwards. No Kyma controller
/// may run meanwhile: it would take these HelmComponents for its own.
///
/// Against the floor the plain client's rates set, this says how close a controller can come
/// at all on this API server.
pub async fn watched_helmcomponent_writes(
    client: &Client,
    namespace: &str,
    kymas: usize,
    processes: &[(&str, u32)],
) -> anyhow::Result<WatchedWrites> {
    ensure_namespace(client, namespace).await?;
    let api: Api<HelmComponent> = Api::namespaced(client.clone(), namespace);
    let watch = tokio::spawn({
        let api = api.clone();
        async move {
            let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
            while stream.next().await.is_some() {}
        }
    });
    let names: Vec<(String, &str)> = (1..=kymas)
        .flat_map(|k| {
            STANDARD_COMPONENTS
                .iter()
                .map(move |c| (format!("{}-{c}", sample_name(k)), *c))
        })
        .collect();
    let meter = CpuMeter::start(processes);
    let start = Instant::now();
    let result = async {
        writes_per_second(names.len(), "HelmComponent creates", |i| {
            let api = api.clone();
            let (name, component) = &names[i];
            let child =
                HelmComponent::new(name, child_spec(component, standard_namespace(component)));
            async move { api.create(&PostParams::default(), &child).await }
        })
        .await?;
        for state in TRANSITIONS {
            let patch = serde_json::json!({ "status": probe_status(state) });
            writes_per_second(names.len(), "HelmComponent status patches", |i| {
                let api = api.clone();
                let (name, _) = &names[i];
                let patch = &patch;
                async move {
                    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
                        .await
                }
            })
            .await?;
        }
        anyhow::Ok(())
    }
    .await;
    let took = start.elapsed();
    let cpu = meter.stop();
    watch.abort();
    clean_up(client, &api, namespace).await;
    result?;
    Ok(WatchedWrites {
        creates: names.len(),
        status_patches: TRANSITIONS.len() * names.len(),
        took,
        cpu,
    })
}

/// The states a HelmComponent's status moves through, each one write.
const TRANSITIONS: [HelmComponentState; 5] = [
    HelmComponentState::Pending,
    HelmComponentState::Started,
    HelmComponentState::Failing,
    HelmComponentState::Retrying,
    HelmComponentState::Success,
];

/// A HelmComponent status in `state` as the HelmComponent controller writes it: the state, its
/// time, and the conditions of its steps and of the whole.
pub(crate) fn probe_status(state: HelmComponentState) -> serde_json::Value {
    let now = k8s_openapi::jiff::Timestamp::now();
    let reason = pascal(state);
    let message = format!("the installation is {}", state.as_str());
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        serde_json::json!({
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": Time(now),
            "observedGeneration": 1,
        })
    };
    serde_json::json!({
        "status": state,
        "lastReconciliation": MicroTime(now),
        "observedGeneration": 1,
        "conditions": [
            condition("Ready", "False", reason, &format!("Installed: {message}")),
            condition("ChartRendered", "True", "Succeeded", ""),
            condition("Installed", "False", reason, &message),
        ],
    })
}
