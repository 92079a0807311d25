//! The write rates a plain client gets from the API server: the floor a controller's writes
//! are measured against.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use serde_json::Value;

use crate::sample::{CREATE_CONCURRENCY, ensure_namespace, sample_kyma, sample_name};
use kyma_inventory::api::{HelmComponent, HelmComponentState, Kyma, KymaState};
use kyma_inventory::component::{self, pascal};
use kyma_inventory::kyma::{self, child_spec, desired_child};
use kyma_inventory::{STANDARD_COMPONENTS, standard_namespace};
use reconcile_engine::conditions::{READY, SUCCEEDED};
use reconcile_engine::{add_finalizer, patch_status, remove_finalizer, status_patch};
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
    round(count, what, write).await?;
    Ok(count as f64 / start.elapsed().as_secs_f64())
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

/// What the least any controller could do took: the writes of a load run, sent as fast as the
/// API server takes them, with a watch on the HelmComponents open.
#[derive(Clone, Debug)]
pub struct WatchedWrites {
    /// Creates: the Kymas' and their HelmComponents'.
    pub creates: usize,
    /// Every other write: finalizers and status patches.
    pub other: usize,
    pub took: Duration,
    /// The CPU the measured processes used meanwhile.
    pub cpu: CpuUse,
}

/// The writes a load run of `kymas` standard Kymas makes, each as the load driver or the
/// controllers send it — the Kyma creates; the Kyma controller's finalizer patch; its 18
/// HelmComponent creates per Kyma (owner reference, field manager); its three status patches per
/// Kyma; the HelmComponent controller's five status transitions per child (each a diff against
/// the status before, under a resourceVersion precondition, by the engine's own functions) —
/// round by round, [`CREATE_CONCURRENCY`] in flight, with a watch on the HelmComponents open and
/// read, as every controller has one, but nothing else: no lifecycle to wait for, no reconcile.
/// In a namespace of its own, emptied afterwards. No Kyma controller may run meanwhile: it would
/// take these objects for its own.
///
/// `client` is the load driver's: it makes the namespace, creates the Kymas and clears up, as
/// in a run. `controllers` is the identity the controllers run as: their writes and the watch
/// go with it, because the API server's cost per request depends on who asks (an identity in
/// `system:masters` skips authorization and priority and fairness, a ServiceAccount pays both),
/// and the same writes are the same requests.
///
/// Against the floor the plain client's rates set, this says how close a controller can come
/// at all on this API server; a run's time divided by this one compares the same writes.
pub async fn watched_writes(
    client: &Client,
    controllers: &Client,
    namespace: &str,
    kymas: usize,
    processes: &[(&str, u32)],
) -> anyhow::Result<WatchedWrites> {
    ensure_namespace(client, namespace).await?;
    let kyma_api: Api<Kyma> = Api::namespaced(client.clone(), namespace);
    let api: Api<HelmComponent> = Api::namespaced(controllers.clone(), namespace);
    let watch = tokio::spawn({
        let api = api.clone();
        async move {
            let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
            while stream.next().await.is_some() {}
        }
    });
    let meter = CpuMeter::start(processes);
    let start = Instant::now();
    let result = the_runs_writes(&kyma_api, controllers, &api, namespace, kymas).await;
    let took = start.elapsed();
    let cpu = meter.stop();
    watch.abort();
    clean_up_kymas(&kyma_api).await;
    clean_up(
        client,
        &Api::<HelmComponent>::namespaced(client.clone(), namespace),
        namespace,
    )
    .await;
    let (creates, other) = result?;
    Ok(WatchedWrites {
        creates,
        other,
        took,
        cpu,
    })
}

/// The writes of [`watched_writes`]: the Kyma creates through `kyma_api` (the load driver's),
/// the rest as `client` and through `api` (the controllers'); how many creates and other
/// writes were sent.
async fn the_runs_writes(
    kyma_api: &Api<Kyma>,
    client: &Client,
    api: &Api<HelmComponent>,
    namespace: &str,
    kymas: usize,
) -> anyhow::Result<(usize, usize)> {
    let samples: Vec<Kyma> = (1..=kymas)
        .map(|k| sample_kyma(&sample_name(k), namespace))
        .collect();
    let created = round(kymas, "Kyma creates", |i| {
        let (api, kyma) = (kyma_api.clone(), &samples[i]);
        async move { api.create(&PostParams::default(), kyma).await }
    })
    .await?;
    let finalized = round(kymas, "Kyma finalizer patches", |i| {
        add_finalizer(client, &created[i], kyma::FINALIZER, kyma::CONTROLLER)
    })
    .await?;
    let mut kyma_versions: Vec<Option<String>> =
        finalized.iter().map(|k| k.resource_version()).collect();

    let children: Vec<HelmComponent> = finalized
        .iter()
        .flat_map(|k| {
            k.spec
                .components
                .iter()
                .map(move |c| desired_child(k, &c.name, c.namespace.as_deref()))
        })
        .collect();
    let params = PostParams {
        field_manager: Some(kyma::CONTROLLER.to_owned()),
        ..PostParams::default()
    };
    let created_children = round(children.len(), "HelmComponent creates", |i| {
        let (api, params, child) = (api.clone(), &params, &children[i]);
        async move { api.create(params, child).await }
    })
    .await?;
    let mut child_versions: Vec<Option<String>> = created_children
        .iter()
        .map(|c| c.resource_version())
        .collect();

    let all: Vec<&str> = STANDARD_COMPONENTS.to_vec();
    // The refresh of `waitingFor` finds the shorter names done: their lifecycles are shorter.
    let mut longest = all.clone();
    longest.sort_by_key(|c| std::cmp::Reverse(c.len()));
    let refreshed = &longest[..all.len() / 2];
    let mut kyma_statuses = [
        probe_kyma_status(&all),
        probe_kyma_status(refreshed),
        probe_kyma_status(&[]),
    ];
    for k in 1..kyma_statuses.len() {
        let before = kyma_statuses[k - 1].clone();
        keep_transition_times(&mut kyma_statuses[k], &before);
    }
    let mut kyma_before = Value::Null;
    let mut child_before = Value::Null;
    let mut other = finalized.len();
    for (i, state) in TRANSITIONS.into_iter().enumerate() {
        let kyma_write = match i {
            0 => Some(0),
            2 => Some(1),
            _ => None,
        };
        if let Some(k) = kyma_write {
            other += status_round(
                client,
                "Kyma status patches",
                &finalized,
                diff(&kyma_before, &kyma_statuses[k])?,
                &mut kyma_versions,
                kyma::CONTROLLER,
            )
            .await?;
            kyma_before = kyma_statuses[k].clone();
        }
        let mut status = probe_status(state);
        keep_transition_times(&mut status, &child_before);
        other += status_round(
            client,
            "HelmComponent status patches",
            &created_children,
            diff(&child_before, &status)?,
            &mut child_versions,
            component::CONTROLLER,
        )
        .await?;
        child_before = status;
    }
    other += status_round(
        client,
        "Kyma status patches",
        &finalized,
        diff(&kyma_before, &kyma_statuses[2])?,
        &mut kyma_versions,
        kyma::CONTROLLER,
    )
    .await?;
    Ok((created.len() + created_children.len(), other))
}

/// The status patch the engine sends to move a status from `before` to `after`.
fn diff(before: &Value, after: &Value) -> anyhow::Result<Value> {
    status_patch(before, after)?.context("a status transition that changes nothing")
}

/// Sends `patch` to the status of each of `objects` as the engine does (the resourceVersion
/// of the object's last write as a precondition, `field_manager`); records the versions the
/// writes produced. How many were sent.
async fn status_round<K>(
    client: &Client,
    what: &str,
    objects: &[K],
    patch: Value,
    versions: &mut [Option<String>],
    field_manager: &str,
) -> anyhow::Result<usize>
where
    K: kube::Resource<DynamicType = ()>,
{
    let written = round(objects.len(), what, |i| {
        let (patch, version) = (&patch, versions[i].clone());
        async move {
            patch_status(
                client,
                &objects[i],
                patch,
                version.as_deref(),
                field_manager,
            )
            .await
        }
    })
    .await?;
    for (version, to) in versions.iter_mut().zip(written) {
        *version = to;
    }
    Ok(objects.len())
}

/// Sends the `count` writes `write` makes, [`CREATE_CONCURRENCY`] at once; their answers in
/// order, or an error if any failed.
async fn round<T, F>(count: usize, what: &str, write: impl Fn(usize) -> F) -> anyhow::Result<Vec<T>>
where
    F: Future<Output = Result<T, kube::Error>>,
{
    let mut results: Vec<(usize, Result<T, kube::Error>)> = futures::stream::iter(0..count)
        .map(|i| {
            let write = write(i);
            async move { (i, write.await) }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    results.sort_by_key(|(i, _)| *i);
    let mut answers = Vec::with_capacity(count);
    let mut failures = Vec::new();
    for (_, result) in results {
        match result {
            Ok(answer) => answers.push(answer),
            Err(e) => failures.push(e),
        }
    }
    match failures.first() {
        None => Ok(answers),
        Some(first) => anyhow::bail!(
            "{} of {count} {what} failed, the first: {first}",
            failures.len()
        ),
    }
}

/// Deletes the probe's Kymas: their finalizer is removed first, as no controller runs to do it.
async fn clean_up_kymas(api: &Api<Kyma>) {
    let left = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::warn!(error = %e, "listing a probe's Kymas");
            return;
        }
    };
    let client = api.clone().into_client();
    futures::stream::iter(left)
        .for_each_concurrent(CREATE_CONCURRENCY, |kyma| {
            let client = client.clone();
            async move {
                if let Err(e) = remove_finalizer(
                    &client,
                    &kyma,
                    kyma::FINALIZER,
                    kyma::CONTROLLER,
                )
                .await
                {
                    tracing::warn!(error = %e, kyma = %kyma.name_any(), "removing a probe Kyma's finalizer");
                }
            }
        })
        .await;
    if let Err(e) = api
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
    {
        tracing::warn!(error = %e, "deleting a probe's Kymas");
    }
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
/// time, and the conditions of its steps and of the whole (the engine's reasons and messages).
pub(crate) fn probe_status(state: HelmComponentState) -> Value {
    let now = Timestamp::now();
    let installed = if state == HelmComponentState::Success {
        condition("Installed", SUCCEEDED, "", now)
    } else {
        let message = format!("the installation is {}", state.as_str());
        condition("Installed", pascal(state), &message, now)
    };
    serde_json::json!({
        "status": state,
        "lastReconciliation": MicroTime(now),
        "observedGeneration": 1,
        "conditions": [ready(&installed, now), condition("ChartRendered", SUCCEEDED, "", now), installed],
    })
}

/// A Kyma's status as the Kyma controller writes it while `waiting` are not at `success` (none:
/// the Kyma is at `success`).
pub(crate) fn probe_kyma_status(waiting: &[&str]) -> Value {
    let now = Timestamp::now();
    let succeeded = if waiting.is_empty() {
        condition("ComponentsSucceeded", SUCCEEDED, "", now)
    } else {
        condition(
            "ComponentsSucceeded",
            kyma::WAITING_REASON,
            "waiting for components to reach success (see status.waitingFor)",
            now,
        )
    };
    let mut status = serde_json::json!({
        "status": if waiting.is_empty() { KymaState::Success } else { KymaState::Reconciling },
        "observedGeneration": 1,
        "conditions": [
            ready(&succeeded, now),
            condition("ComponentsCreated", SUCCEEDED, "", now),
            condition("UnlistedDeleted", SUCCEEDED, "", now),
            succeeded,
        ],
    });
    if !waiting.is_empty() {
        status["waitingFor"] = serde_json::json!(waiting);
    }
    status
}

/// Gives each condition of `after` whose status is the one `before` shows the time `before`
/// gives it, as the engine's conditions keep their `lastTransitionTime` until their status
/// changes.
pub(crate) fn keep_transition_times(after: &mut Value, before: &Value) {
    let Some(conditions) = after["conditions"].as_array_mut() else {
        return;
    };
    for condition in conditions {
        let earlier = before["conditions"].as_array().and_then(|b| {
            b.iter()
                .find(|c| c["type"] == condition["type"] && c["status"] == condition["status"])
        });
        if let Some(earlier) = earlier {
            condition["lastTransitionTime"] = earlier["lastTransitionTime"].clone();
        }
    }
}

/// A step's condition: `True` when `reason` is [`SUCCEEDED`], else `False`.
fn condition(type_: &str, reason: &str, message: &str, now: Timestamp) -> Value {
    serde_json::json!({
        "type": type_,
        "status": if reason == SUCCEEDED { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "lastTransitionTime": Time(now),
        "observedGeneration": 1,
    })
}

/// `Ready`, as the engine derives it from the last step's condition.
fn ready(last_step: &Value, now: Timestamp) -> Value {
    let reason = last_step["reason"].as_str().unwrap_or_default();
    let message = if reason == SUCCEEDED {
        String::new()
    } else {
        format!(
            "step {}: {}",
            last_step["type"].as_str().unwrap_or_default(),
            last_step["message"].as_str().unwrap_or_default()
        )
    };
    condition(READY, reason, &message, now)
}
