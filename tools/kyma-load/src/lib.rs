//! Measuring the Kyma controllers at scale: the load driver `kyma-load` (this crate's binary)
//! and the helpers the benchmark (the operator's `tests/bench_kyma.rs`) shares with it — Kymas created as the
//! experiment's `sample-data.sh` creates them, the time until each reports `success`,
//! percentiles, a process's peak RSS, the API server's requests by verb, and the write rate a
//! plain client gets from the API server.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};

use kyma_inventory::api::{
    HelmComponent, HelmComponentState, Kyma, KymaComponent, KymaSpec, KymaState,
};
use kyma_inventory::component::{Lifecycle, pascal};
use kyma_inventory::kyma::child_spec;
use kyma_inventory::{STANDARD_COMPONENTS, standard_namespace};
use test_support::process::{CpuMeter, CpuUse, proc_status_kb};

/// Creates running at once when no rate is set.
const CREATE_CONCURRENCY: usize = 32;

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

/// The first time each Kyma of a namespace was seen with `status: success`, from a watch
/// started before the Kymas are created.
#[derive(Clone)]
pub struct SuccessWatch {
    seen: Arc<Mutex<HashMap<String, Instant>>>,
    task: Arc<tokio::task::AbortHandle>,
}

impl Drop for SuccessWatch {
    fn drop(&mut self) {
        if Arc::strong_count(&self.task) == 1 {
            self.task.abort();
        }
    }
}

impl SuccessWatch {
    /// Starts watching the Kymas of `namespace`.
    pub fn start(client: &Client, namespace: &str) -> Self {
        let api: Api<Kyma> = Api::namespaced(client.clone(), namespace);
        let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                let stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .applied_objects();
                let mut stream = std::pin::pin!(stream);
                loop {
                    match stream.try_next().await {
                        Ok(Some(kyma)) => {
                            let success = kyma.status.as_ref().and_then(|s| s.status)
                                == Some(KymaState::Success);
                            if success {
                                seen.lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .entry(kyma.name_any())
                                    .or_insert_with(Instant::now);
                            }
                        }
                        Ok(None) => return,
                        Err(e) => tracing::warn!(error = %e, "watching Kymas"),
                    }
                }
            }
        })
        .abort_handle();
        SuccessWatch {
            seen,
            task: Arc::new(task),
        }
    }

    /// How many of `names` were seen at success.
    pub fn count(&self, names: &[String]) -> usize {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        names.iter().filter(|n| seen.contains_key(*n)).count()
    }

    /// Waits until every one of `names` was seen at success, calling `progress` every 10 s;
    /// returns when each was seen, or how many were by the deadline.
    pub async fn wait_all(
        &self,
        names: &[String],
        timeout: Duration,
        mut progress: impl FnMut(usize),
    ) -> Result<HashMap<String, Instant>, usize> {
        let deadline = Instant::now() + timeout;
        let mut report = Instant::now();
        loop {
            let done = self.count(names);
            if done == names.len() {
                let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
                return Ok(names
                    .iter()
                    .filter_map(|n| Some((n.clone(), *seen.get(n)?)))
                    .collect());
            }
            if Instant::now() > deadline {
                return Err(done);
            }
            if report.elapsed() >= Duration::from_secs(10) {
                report = Instant::now();
                progress(done);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The `p`-th percentile (0–100) of `sorted`, nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The API server's `apiserver_request_total`, summed by the labels named in `by`
/// (`verb`, `resource`, `subresource`, `code`), joined with a space.
pub async fn apiserver_requests(
    client: &Client,
    by: &[&str],
) -> anyhow::Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .context("building the /metrics request")?;
    let text = client
        .request_text(request)
        .await
        .context("reading the API server's /metrics")?;
    Ok(sum_by(&text, "apiserver_request_total", by))
}

/// Sums the samples of `metric` in a Prometheus text exposition by the labels in `by`.
pub fn sum_by(text: &str, metric: &str, by: &[&str]) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        let Some((labels, value)) = rest.strip_prefix('{').and_then(|r| r.rsplit_once("} ")) else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        // API server label values hold no commas or quotes.
        let labels: HashMap<&str, &str> = labels
            .split(',')
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k, v.trim_matches('"')))
            })
            .collect();
        let key = by
            .iter()
            .map(|l| labels.get(l).copied().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        *sums.entry(key.trim().to_owned()).or_default() += value;
    }
    sums
}

/// `after - before`, per key, dropping zeros.
pub fn difference(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let mut diff = after.clone();
    for (k, v) in before {
        *diff.entry(k.clone()).or_default() -= v;
    }
    diff.retain(|_, v| *v != 0.0);
    diff
}

/// Writes among API server requests: the verbs that change objects.
pub const WRITE_VERBS: [&str; 5] = ["POST", "PUT", "PATCH", "DELETE", "APPLY"];

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

/// Deletes what a write-rate probe left in `namespace`, and the namespace; best effort, as a
/// probe's leftovers harm nothing but the probe's next run.
async fn clean_up<K>(client: &Client, api: &Api<K>, namespace: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let _ = api
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await;
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
fn probe_status(state: HelmComponentState) -> serde_json::Value {
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

/// What a load run measured.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    pub kymas: usize,
    pub created_in: Duration,
    pub all_success_after: Duration,
    /// From each Kyma's create to its first `success`, sorted.
    pub per_kyma: Vec<Duration>,
    pub single_kyma: Duration,
    pub peak_rss_kib: Option<u64>,
    /// The operator's CPU time from the first create until all succeeded.
    pub operator_cpu: Option<Duration>,
    /// API server requests during the run, by verb.
    pub requests_by_verb: BTreeMap<String, f64>,
    /// API server requests during the run, by verb, resource, subresource and response code
    /// (429s are requests the API server's in-flight limit refused and the client retried).
    pub requests_by_resource: BTreeMap<String, f64>,
}

impl LoadReport {
    /// Writes during the run.
    pub fn writes(&self) -> f64 {
        self.requests_by_verb
            .iter()
            .filter(|(v, _)| WRITE_VERBS.contains(&v.as_str()))
            .map(|(_, n)| n)
            .sum()
    }

    /// The report as lines of text.
    pub fn lines(&self) -> Vec<String> {
        let ratio = self.all_success_after.as_secs_f64() / self.single_kyma.as_secs_f64().max(1e-9);
        let mut lines = vec![
            format!("Kymas                    {}", self.kymas),
            format!(
                "created in               {:.1} s",
                self.created_in.as_secs_f64()
            ),
            format!(
                "all success after        {:.1} s = {ratio:.2} x the single-Kyma time ({:.1} s)",
                self.all_success_after.as_secs_f64(),
                self.single_kyma.as_secs_f64()
            ),
            format!(
                "per Kyma                 p50 {:.1} s, p99 {:.1} s, max {:.1} s",
                percentile(&self.per_kyma, 50.0).as_secs_f64(),
                percentile(&self.per_kyma, 99.0).as_secs_f64(),
                percentile(&self.per_kyma, 100.0).as_secs_f64()
            ),
        ];
        if let Some(cpu) = self.operator_cpu {
            lines.push(format!(
                "operator CPU             {:.1} s = {:.2} cores while the Kymas ran",
                cpu.as_secs_f64(),
                cpu.as_secs_f64() / self.all_success_after.as_secs_f64().max(1e-9)
            ));
        }
        if let Some(kib) = self.peak_rss_kib {
            lines.push(format!(
                "operator peak RSS        {:.1} MiB",
                kib as f64 / 1024.0
            ));
        }
        lines.push(format!(
            "API server writes        {:.0} = {:.1} per Kyma",
            self.writes(),
            self.writes() / self.kymas.max(1) as f64
        ));
        lines.push("API server requests by verb".to_owned());
        for (verb, n) in &self.requests_by_verb {
            lines.push(format!("  {n:>9.0} {verb}"));
        }
        lines.push("API server requests by verb, resource, subresource, code".to_owned());
        for (key, n) in &self.requests_by_resource {
            lines.push(format!("  {n:>9.0} {key}"));
        }
        lines
    }
}

/// Creates `count` sample Kymas in `namespace` and, with `wait`, waits for all to succeed.
pub async fn run_load(
    client: &Client,
    namespace: &str,
    count: usize,
    rate: f64,
    wait: Option<Duration>,
    operator_pid: Option<u32>,
    single_kyma: Duration,
) -> anyhow::Result<LoadReport> {
    ensure_namespace(client, namespace).await?;
    let names: Vec<String> = (1..=count).map(sample_name).collect();
    let kymas = names.iter().map(|n| sample_kyma(n, namespace)).collect();
    let by_verb = |client: Client| async move { apiserver_requests(&client, &["verb"]).await };
    let by_resource = |client: Client| async move {
        apiserver_requests(&client, &["verb", "resource", "subresource", "code"]).await
    };
    let verbs_before = by_verb(client.clone()).await.unwrap_or_default();
    let resources_before = by_resource(client.clone()).await.unwrap_or_default();
    let watch = SuccessWatch::start(client, namespace);
    let cpu = operator_pid.map(|pid| CpuMeter::start(&[("operator", pid)]));
    let start = Instant::now();
    let sent = create_kymas(client, kymas, rate).await?;
    let created_in = start.elapsed();
    let mut report = LoadReport {
        kymas: count,
        created_in,
        single_kyma,
        ..LoadReport::default()
    };
    if let Some(timeout) = wait {
        let seen = watch
            .wait_all(&names, timeout, |done| {
                println!(
                    "kyma-load: {:>5.0} s: {done}/{count} success",
                    start.elapsed().as_secs_f64()
                );
            })
            .await
            .map_err(|done| {
                anyhow::anyhow!("only {done}/{count} Kymas reached success within {timeout:?}")
            })?;
        report.operator_cpu = cpu.and_then(|meter| meter.stop().of("operator"));
        report.all_success_after = seen
            .values()
            .map(|at| at.duration_since(start))
            .max()
            .unwrap_or_default();
        let mut per_kyma: Vec<Duration> = seen
            .iter()
            .filter_map(|(name, at)| Some(at.saturating_duration_since(*sent.get(name)?)))
            .collect();
        per_kyma.sort();
        report.per_kyma = per_kyma;
    }
    report.peak_rss_kib = operator_pid.and_then(|pid| proc_status_kb(pid, "VmHWM"));
    report.requests_by_verb = difference(
        &verbs_before,
        &by_verb(client.clone()).await.unwrap_or_default(),
    );
    report.requests_by_resource = difference(
        &resources_before,
        &by_resource(client.clone()).await.unwrap_or_default(),
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

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
