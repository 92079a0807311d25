//! `make bench`: many StorageVirtualMachines created at once, spread over several OntapClusters,
//! each a mock ONTAP that, like ONTAP, runs at most 5 SVM jobs at a time. Prints the time until
//! all are Ready next to the floor (the larger of what the job slots allow and what the same
//! Kubernetes writes take sent bare), each cluster's time next to its own job floor, the
//! operator's peak memory, ONTAP and Kubernetes requests per SVM, and what a resync costs.
//!
//! Ignored by `make test`; run with
//! `cargo test --release --test bench_svm -- --ignored --nocapture` (the release profile also
//! builds the operator binary the test starts). The variables are in `docs/benchmarks/svm.md`:
//! `BENCH_SVMS` (10000), `BENCH_CLUSTERS` (10), `BENCH_JOB_MS` (2000), `BENCH_SLOW_CLUSTER`,
//! `BENCH_LOST_ANSWERS`, `BENCH_BARE_CONCURRENCY`, `BENCH_OPERATOR_FLAGS`, `BENCH_SVM_SPEC`,
//! `BENCH_REPORT`.
#![allow(clippy::unwrap_used)]

use operator_test_support as support;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use mock_ontap::MockConfig;
use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use serde_json::{Value, json};
use support::fixtures::svm;
use support::metrics::metric_sums;
use support::mock::Mock;
use support::svm::{ExtraCluster, SvmWorld, authenticates_on, no_orphans};
use support::{env_or, tail, try_poll};
use test_support::process::{loadavg, proc_cpu, proc_status_kb};

/// ONTAP runs at most this many SVM jobs at a time, per cluster.
const JOB_LIMIT: usize = 5;
/// How many SVMs the bench creates at once, as a user's tool would.
const CREATE_CONCURRENCY: usize = 32;
const SVM_CONTROLLER: &str = "storagevirtualmachine";

struct Settings {
    count: usize,
    clusters: usize,
    job_ms: u64,
    /// The last cluster answers every request 2 s late.
    slow: bool,
    /// The chance that any ONTAP answer is lost after the request was applied.
    lost: Option<f64>,
    bare_concurrency: usize,
    /// Fields merged into every object's spec: what the optional SVM features cost in use.
    spec: Option<Value>,
}

impl Settings {
    fn from_env() -> Self {
        let lost: f64 = env_or("BENCH_LOST_ANSWERS", 0.0);
        Settings {
            count: env_or("BENCH_SVMS", 10_000),
            clusters: env_or("BENCH_CLUSTERS", 10usize).max(1),
            job_ms: env_or("BENCH_JOB_MS", 2000),
            slow: env_or("BENCH_SLOW_CLUSTER", 0u8) != 0,
            lost: (lost > 0.0).then_some(lost),
            // The operator's default --max-concurrent-reconciles: as many writers as it has.
            bare_concurrency: env_or("BENCH_BARE_CONCURRENCY", 50usize).max(1),
            spec: std::env::var("BENCH_SVM_SPEC").ok().map(|spec| {
                serde_json::from_str(&spec)
                    .unwrap_or_else(|e| panic!("BENCH_SVM_SPEC is not a JSON object: {e}"))
            }),
        }
    }

    fn cluster_of(&self, i: usize) -> usize {
        i % self.clusters
    }

    fn svms_of(&self, cluster: usize) -> usize {
        self.count / self.clusters + usize::from(cluster < self.count % self.clusters)
    }

    /// What `n` SVMs take on one cluster's job slots alone.
    fn job_floor(&self, n: usize) -> Duration {
        Duration::from_millis(self.job_ms) * (n.div_ceil(JOB_LIMIT) as u32)
    }

    fn slow_cluster(&self) -> Option<usize> {
        self.slow.then_some(self.clusters - 1)
    }
}

fn name_of(i: usize) -> String {
    format!("bench-{i:05}")
}

fn index_of(name: &str) -> Option<usize> {
    name.strip_prefix("bench-")?.parse().ok()
}

/// Object `i` on `cluster`, with `extra` merged into its spec.
fn manifest(cluster: &str, i: usize, extra: Option<&Value>) -> StorageVirtualMachine {
    // Two addresses per SVM, unique across 65,536 SVMs.
    let (hi, lo) = (i / 256, i % 256);
    let mut object = svm(&name_of(i))
        .cluster(cluster)
        .nfs()
        .lifs(&format!("10.1.{hi}.{lo}"), &format!("10.2.{hi}.{lo}"), 16)
        .json();
    if let Some(extra) = extra.and_then(Value::as_object) {
        for (field, value) in extra {
            object["spec"][field] = value.clone();
        }
    }
    serde_json::from_value(object).unwrap()
}

fn is_ready(svm: &StorageVirtualMachine) -> bool {
    let Some(status) = &svm.status else {
        return false;
    };
    status.observed_generation == svm.metadata.generation
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// User plus system CPU seconds of a process.
fn cpu_seconds(pid: u32) -> Option<f64> {
    proc_cpu(pid).map(|used| used.as_secs_f64())
}

/// Requests per `"METHOD path"` a mock has seen since it started.
async fn ontap_counts(mock: &Mock) -> BTreeMap<String, u64> {
    let body: Value = mock
        .http
        .get(format!("{}/_mock/requests/counts", mock.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["counts"]
        .as_object()
        .map(|all| {
            all.iter()
                .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// ONTAP requests of every mock since `before` (per mock, as [`ontap_counts`] gave them):
/// all of them, the GETs besides the OntapClusters' own probes, and those probes.
async fn ontap_since(mocks: &[&Mock], before: &[BTreeMap<String, u64>]) -> (u64, u64, u64) {
    let (mut all, mut gets, mut probes) = (0, 0, 0);
    for (mock, before) in mocks.iter().zip(before) {
        for (key, n) in ontap_counts(mock).await {
            let n = n - before.get(&key).copied().unwrap_or_default();
            all += n;
            if key == "GET /api/cluster" {
                probes += n;
            } else if key.starts_with("GET ") {
                gets += n;
            }
        }
    }
    (all, gets, probes)
}

/// Which SVMs are Ready now, followed by a watch from before they are created: when each
/// cluster's SVMs first were all Ready, and when all were.
struct Readiness {
    ready: Vec<bool>,
    total: usize,
    per_cluster: Vec<usize>,
    cluster_done: Vec<Option<Duration>>,
    all_done: Option<Duration>,
}

impl Readiness {
    fn new(settings: &Settings) -> Self {
        Readiness {
            ready: vec![false; settings.count],
            total: 0,
            per_cluster: vec![0; settings.clusters],
            cluster_done: vec![None; settings.clusters],
            all_done: None,
        }
    }

    fn saw(&mut self, settings: &Settings, svm: &StorageVirtualMachine, at: Duration) {
        let Some(i) = svm
            .metadata
            .name
            .as_deref()
            .and_then(index_of)
            .filter(|i| *i < settings.count)
        else {
            return;
        };
        let now = is_ready(svm);
        if now == self.ready[i] {
            return;
        }
        self.ready[i] = now;
        let c = settings.cluster_of(i);
        if now {
            self.total += 1;
            self.per_cluster[c] += 1;
        } else {
            self.total -= 1;
            self.per_cluster[c] -= 1;
        }
        if self.per_cluster[c] == settings.svms_of(c) && self.cluster_done[c].is_none() {
            self.cluster_done[c] = Some(at);
        }
        if self.total == settings.count && self.all_done.is_none() {
            self.all_done = Some(at);
        }
    }
}

fn watch_readiness(
    svms: Api<StorageVirtualMachine>,
    settings: Arc<Settings>,
    readiness: Arc<Mutex<Readiness>>,
    start: Arc<Mutex<Option<Instant>>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(
            watcher(svms, watcher::Config::default())
                .default_backoff()
                .applied_objects()
        );
        while let Some(event) = stream.next().await {
            let Ok(svm) = event else { continue };
            let Some(started) = *start.lock().unwrap() else {
                continue;
            };
            readiness
                .lock()
                .unwrap()
                .saw(&settings, &svm, started.elapsed());
        }
    })
}

async fn wait_clusters_ready(world: &SvmWorld, names: &[String]) {
    let clusters: Api<OntapCluster> = Api::all(world.env.client.clone());
    let ready = try_poll(Duration::from_secs(120), async || {
        for name in names {
            let cluster = clusters.get(name).await.unwrap();
            let ready = cluster.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            });
            if !ready {
                return None;
            }
        }
        Some(())
    })
    .await;
    if let Err(why) = ready {
        panic!(
            "OntapClusters not Ready: {why}\n{}",
            tail(&world.operator.logs(), 40)
        );
    }
}

/// Operator metrics over the run, across a restart: each process's `(at the start, at the
/// end)` exposition.
struct MetricsSpans(Vec<(String, String)>);

impl MetricsSpans {
    fn diff(&self, metric: &str, label: &str) -> BTreeMap<String, f64> {
        let mut sums = BTreeMap::new();
        for (before, after) in &self.0 {
            let before = metric_sums(before, metric, label);
            for (k, v) in metric_sums(after, metric, label) {
                *sums.entry(k.clone()).or_default() +=
                    v - before.get(&k).copied().unwrap_or_default();
            }
        }
        sums.retain(|_, v: &mut f64| *v != 0.0);
        sums
    }

    /// Means of histograms: `_sum` over `_count`, per label set.
    fn mean(&self, metric: &str, label: &str) -> BTreeMap<String, String> {
        let sums = self.diff(&format!("{metric}_sum"), label);
        let counts = self.diff(&format!("{metric}_count"), label);
        sums.iter()
            .filter_map(|(k, sum)| {
                let n = counts.get(k)?;
                Some((k.clone(), format!("{:.0} ms x {n}", sum / n * 1000.0)))
            })
            .collect()
    }
}

/// Kubernetes writes per SVM of the run, by verb, as the operator sent them.
struct Recipe {
    by_verb: BTreeMap<String, usize>,
    count: usize,
}

impl Recipe {
    /// How many writes of `verb` SVM `i` gets: the run's total spread evenly.
    fn of(&self, verb: &str, i: usize) -> usize {
        let total = self.by_verb.get(verb).copied().unwrap_or_default();
        total / self.count + usize::from(i < total % self.count)
    }

    fn describe(&self) -> String {
        let per = |verb: &str| {
            self.by_verb.get(verb).copied().unwrap_or_default() as f64 / self.count as f64
        };
        format!(
            "1 SVM create (the user's) + per SVM {:.2} POST (1: the seed Secret, more: Events), {:.2} PATCH (1: the finalizer, more: status), {:.2} PUT (as status patches), {:.2} DELETE (not sent)",
            per("POST"),
            per("PATCH"),
            per("PUT"),
            per("DELETE")
        )
    }
}

/// The floor Kubernetes sets: a plain client sends, in a namespace the operator does not
/// watch, the writes the operator made per SVM (after the same user creates), each SVM's in
/// order and `concurrency` SVMs at a time. Gives the time and the errors of writes that failed.
async fn bare_writes(
    world: &SvmWorld,
    settings: &Settings,
    recipe: &Recipe,
    status: &Value,
    seed: &Secret,
) -> (Duration, Vec<String>) {
    let ns = format!("{}-bare", world.env.namespace);
    support::create_namespace(&world.env.client, &ns, json!({})).await;
    let client = world.env.client.clone();
    let svms: Api<StorageVirtualMachine> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let start = Instant::now();
    let created: Vec<Result<(usize, String), String>> = futures::stream::iter(0..settings.count)
        .map(|i| {
            let svms = svms.clone();
            async move {
                let object = svms
                    .create(&PostParams::default(), &manifest("bare", i, None))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((i, object.metadata.uid.unwrap_or_default()))
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    let mut failed: Vec<String> = created
        .iter()
        .filter_map(|c| c.as_ref().err().cloned())
        .collect();
    let chains = created.into_iter().flatten().map(|(i, uid)| {
        let (svms, secrets, events) = (svms.clone(), secrets.clone(), events.clone());
        let (name, ns) = (name_of(i), ns.clone());
        async move {
            let mut failed = Vec::new();
            let mut ok = |r: Result<(), kube::Error>| {
                if let Err(e) = r {
                    failed.push(e.to_string());
                }
            };
            let patches = recipe.of("PATCH", i);
            let status_writes = patches.saturating_sub(1) + recipe.of("PUT", i);
            if patches > 0 {
                let finalizer = json!([{"op": "add", "path": "/metadata/finalizers", "value": ["bench.ontap.storage.dev/bare"]}]);
                let patch = serde_json::from_value(finalizer).unwrap();
                ok(svms
                    .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
                    .await
                    .map(drop));
            }
            for post in 0..recipe.of("POST", i) {
                if post == 0 {
                    let secret = bare_secret(seed, &name, &uid);
                    ok(secrets
                        .create(&PostParams::default(), &secret)
                        .await
                        .map(drop));
                } else {
                    let event = bare_event(&ns, &name, &uid, post);
                    ok(events
                        .create(&PostParams::default(), &event)
                        .await
                        .map(drop));
                }
            }
            for write in 0..status_writes {
                // Each status write changes something, as the operator's do: an unchanged
                // status would be a no-op the API server answers without writing.
                let mut status = status.clone();
                if write + 1 < status_writes
                    && let Some(conditions) = status["conditions"].as_array_mut()
                {
                    for c in conditions {
                        c["message"] = json!(format!("step {write}"));
                    }
                }
                ok(svms
                    .patch_status(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": status})),
                    )
                    .await
                    .map(drop));
            }
            failed
        }
    });
    let chained: Vec<Vec<String>> = futures::stream::iter(chains)
        .buffer_unordered(settings.bare_concurrency)
        .collect()
        .await;
    failed.extend(chained.into_iter().flatten());
    (start.elapsed(), failed)
}

/// A copy of the seed Secret the operator wrote, for the bare object `name`.
fn bare_secret(seed: &Secret, name: &str, uid: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{name}-svm-credentials")),
            labels: seed.metadata.labels.clone(),
            owner_references: Some(vec![
                serde_json::from_value(json!({
                    "apiVersion": "ontap.storage.dev/v1alpha1",
                    "kind": "StorageVirtualMachine",
                    "name": name,
                    "uid": uid,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }))
                .unwrap(),
            ]),
            ..Default::default()
        },
        data: seed.data.clone(),
        type_: seed.type_.clone(),
        ..Default::default()
    }
}

fn bare_event(ns: &str, name: &str, uid: &str, n: usize) -> k8s_openapi::api::events::v1::Event {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{name}.{n}")},
        "eventTime": humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string(),
        "reportingController": "ontap.storage.dev/bench",
        "reportingInstance": "bench",
        "action": "Reconcile",
        "reason": "Provisioned",
        "type": "Normal",
        "note": "a bare write of the bench",
        "regarding": {
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "StorageVirtualMachine",
            "namespace": ns,
            "name": name,
            "uid": uid,
        },
    }))
    .unwrap()
}

/// What ONTAP and the seed Secrets hold at the end, checked for every object: exactly one
/// ONTAP SVM of its name on its cluster, its two LIFs, one account besides vsadmin (the seed
/// Secret's), no orphan on any cluster, and the seed Secret's credentials authenticating.
struct Holdings {
    one_svm: usize,
    not_one_svm: Vec<String>,
    extra_svms: usize,
    orphans: Vec<String>,
    wrong_lifs: Vec<String>,
    wrong_accounts: Vec<String>,
    authenticating: usize,
    not_authenticating: Vec<String>,
}

async fn check_holdings(
    world: &SvmWorld,
    settings: &Settings,
    clusters: &[(String, &Mock)],
) -> Holdings {
    let objects: HashMap<String, StorageVirtualMachine> = world
        .svms()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| Some((s.metadata.name.clone()?, s)))
        .collect();
    let seeds: HashMap<String, Secret> = world
        .secrets()
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=ontap-operator"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| Some((s.metadata.name.clone()?, s)))
        .collect();
    let mut holdings = Holdings {
        one_svm: 0,
        not_one_svm: Vec::new(),
        extra_svms: 0,
        orphans: Vec::new(),
        wrong_lifs: Vec::new(),
        wrong_accounts: Vec::new(),
        authenticating: 0,
        not_authenticating: Vec::new(),
    };
    let records = |state: &Value, kind: &str| state[kind].as_array().cloned().unwrap_or_default();
    let mut logins = Vec::new();
    for (c, (cluster, mock)) in clusters.iter().enumerate() {
        let state = mock.snapshot();
        if let Err(orphan) = no_orphans(&state) {
            holdings.orphans.push(format!("{cluster}: {orphan}"));
        }
        let svms = records(&state, "svms");
        let mut by_name: HashMap<&str, Vec<&Value>> = HashMap::new();
        for s in &svms {
            by_name
                .entry(s["name"].as_str().unwrap_or_default())
                .or_default()
                .push(s);
        }
        let interfaces = records(&state, "interfaces");
        let accounts = records(&state, "accounts");
        let mut expected = 0;
        for i in (0..settings.count).filter(|i| settings.cluster_of(*i) == c) {
            let name = name_of(i);
            let status = objects.get(&name).and_then(|o| o.status.clone());
            let Some(svm_name) = status.as_ref().and_then(|s| s.svm_name.clone()) else {
                holdings
                    .not_one_svm
                    .push(format!("{name}: no status.svmName"));
                continue;
            };
            expected += 1;
            let same = by_name.get(svm_name.as_str()).map_or(0, Vec::len);
            if same != 1 {
                holdings
                    .not_one_svm
                    .push(format!("{name}: {same} SVMs named {svm_name} on {cluster}"));
                continue;
            }
            holdings.one_svm += 1;
            let uuid = &by_name[svm_name.as_str()][0]["uuid"];
            let lifs = interfaces
                .iter()
                .filter(|l| &l["svm"]["uuid"] == uuid)
                .count();
            if lifs != 2 {
                holdings.wrong_lifs.push(format!("{name}: {lifs} LIFs"));
            }
            let secret = status
                .as_ref()
                .and_then(|s| s.secret_ref.clone())
                .and_then(|r| seeds.get(&r))
                .and_then(|s| s.data.clone());
            let field = |data: &BTreeMap<String, k8s_openapi::ByteString>, k: &str| {
                data.get(k)
                    .and_then(|v| String::from_utf8(v.0.clone()).ok())
                    .unwrap_or_default()
            };
            let Some(data) = secret else {
                holdings
                    .not_authenticating
                    .push(format!("{name}: no seed Secret"));
                continue;
            };
            let (user, password) = (field(&data, "username"), field(&data, "password"));
            let mut own: Vec<&str> = accounts
                .iter()
                .filter(|a| &a["owner"]["uuid"] == uuid)
                .filter_map(|a| a["name"].as_str())
                .filter(|a| *a != "vsadmin")
                .collect();
            own.sort_unstable();
            if own != [user.as_str()] {
                holdings
                    .wrong_accounts
                    .push(format!("{name}: accounts {own:?}, the Secret names {user}"));
            }
            logins.push((name, *mock, user, password, svm_name));
        }
        holdings.extra_svms += svms.len().saturating_sub(expected);
    }
    let results: Vec<(String, bool)> = futures::stream::iter(logins)
        .map(|(name, mock, user, password, svm_name)| async move {
            let ok = authenticates_on(mock, &user, &password, &svm_name).await;
            (name, ok)
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    for (name, ok) in results {
        if ok {
            holdings.authenticating += 1;
        } else {
            holdings.not_authenticating.push(name);
        }
    }
    holdings
}

/// The first cluster's mock, then the others'. Made anew where needed: a restart of the
/// operator needs the world to itself.
fn all_mocks<'a>(world: &'a SvmWorld, extras: &'a [ExtraCluster]) -> Vec<&'a Mock> {
    std::iter::once(&world.mock)
        .chain(extras.iter().map(|e| &e.mock))
        .collect()
}

/// Restarts the operator, which then looks at every SVM once: what a resync of a Ready SVM
/// costs. Returns the ONTAP requests (without the OntapClusters' probes) of those passes, how
/// many of them were GETs, the SVM passes, and the Kubernetes writes of the new process.
async fn measure_resync(
    world: &mut SvmWorld,
    extras: &[ExtraCluster],
    count: usize,
) -> (u64, u64, f64, f64) {
    let mut before = Vec::new();
    for mock in all_mocks(world, extras) {
        before.push(ontap_counts(mock).await);
    }
    world.restart_operator();
    let mocks = &all_mocks(world, extras);
    let passes = async |world: &SvmWorld| {
        // The new process's metrics server may not be up yet.
        let url = format!("http://{}/metrics", world.operator.metrics);
        let text = match reqwest::get(url).await {
            Ok(response) => response.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        metric_sums(&text, "controller_runtime_reconcile_total", "controller")
            .get(SVM_CONTROLLER)
            .copied()
            .unwrap_or_default()
    };
    // Done when every SVM has had its pass and ONTAP has heard nothing new for 3 s.
    let started = Instant::now();
    let mut last = (0, Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (all, _, probes) = ontap_since(mocks, &before).await;
        if all - probes != last.0 {
            last = (all - probes, Instant::now());
        }
        if passes(&*world).await >= count as f64 && last.1.elapsed() >= Duration::from_secs(3) {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            println!(
                "bench: resync incomplete: {} SVM passes of {count}",
                passes(&*world).await
            );
            break;
        }
    }
    let (all, gets, probes) = ontap_since(mocks, &before).await;
    let text = world.operator.metrics_text().await;
    let kube_writes = support::metrics::kube_writes(&text);
    // An empty float sum is -0.0.
    (all - probes, gets, passes(&*world).await, kube_writes.abs())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: make bench"]
async fn bench_many_svms_created_at_once() {
    let settings = Arc::new(Settings::from_env());
    let count = settings.count;
    // What a user runs: the operator's own defaults, unless the environment asks otherwise.
    let extra_flags: Vec<String> = std::env::var("BENCH_OPERATOR_FLAGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut mock = MockConfig::default();
    mock.settings.job_duration_ms = settings.job_ms;
    mock.settings.max_concurrent_svm_jobs = JOB_LIMIT;
    // The world's test defaults (short backoff cap, 2 s ONTAP timeout) would flatter the
    // operator; the benchmark runs with the operator's own defaults.
    let mut flags = vec!["--backoff-max=1000s", "--ontap-request-timeout=30s"];
    flags.extend(extra_flags.iter().map(String::as_str));
    let flags: Vec<&str> = {
        // Flags from BENCH_OPERATOR_FLAGS win over the two above.
        let name = |f: &str| f.split('=').next().unwrap_or(f).to_string();
        let mut kept: Vec<&str> = Vec::new();
        for f in flags.iter().rev() {
            if !kept.iter().any(|k| name(k) == name(f)) {
                kept.push(f);
            }
        }
        kept.reverse();
        kept
    };
    let mut world = SvmWorld::with(mock.clone(), &flags).await;
    let mut extras: Vec<ExtraCluster> = Vec::new();
    for k in 1..settings.clusters {
        extras.push(world.add_cluster(k, mock.clone()).await);
    }
    let names: Vec<String> = std::iter::once(world.cluster.clone())
        .chain(extras.iter().map(|e| e.name.clone()))
        .collect();
    let mocks = all_mocks(&world, &extras);
    if let Some(slow) = settings.slow_cluster() {
        mocks[slow].fault_json(json!({"path": "/api*", "action": {"type": "delay", "ms": 2000}}));
    }
    wait_clusters_ready(&world, &names).await;
    if let Some(p) = settings.lost {
        // Any answer, GETs included: a lost answer to a read costs a retry just as one to a
        // write costs finding out whether it was applied.
        for mock in &mocks {
            mock.fault_json(
                json!({"path": "/api*", "probability": p, "action": {"type": "apply_then_reset"}}),
            );
        }
    }
    let mut pid = world.operator.pid();
    let mut ontap_before = Vec::new();
    for mock in &mocks {
        ontap_before.push(ontap_counts(mock).await);
    }
    let mut metrics_before = world.operator.metrics_text().await;
    let mut spans = Vec::new();
    let mut cpu_before = cpu_seconds(pid).unwrap_or_default();
    let mut cpu = 0.0;
    let mut peak_rss_kb = 0;
    let own_cpu_before = cpu_seconds(std::process::id()).unwrap_or_default();
    let load_before = loadavg();

    let svms: Api<StorageVirtualMachine> = world.svms();
    let readiness = Arc::new(Mutex::new(Readiness::new(&settings)));
    let start_at = Arc::new(Mutex::new(None));
    let watch = watch_readiness(
        svms.clone(),
        settings.clone(),
        readiness.clone(),
        start_at.clone(),
    );
    // The watch's initial list must be in before the first SVM exists, so that every Ready
    // is seen as it happens.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let start = Instant::now();
    *start_at.lock().unwrap() = Some(start);
    let created: Vec<Result<(), kube::Error>> = futures::stream::iter(0..count)
        .map(|i| {
            let svms = svms.clone();
            let object = manifest(&names[settings.cluster_of(i)], i, settings.spec.as_ref());
            async move {
                svms.create(&PostParams::default(), &object)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    let creating = start.elapsed();
    let failed: Vec<_> = created.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "creating SVMs failed: {:?}",
        &failed[..1]
    );

    let job_floor = (0..settings.clusters)
        .map(|c| settings.job_floor(settings.svms_of(c)))
        .max()
        .unwrap_or_default();
    let deadline = Duration::from_secs(30 * 60).max(job_floor * 5);
    let mut progress = Vec::new();
    let mut last_report = Instant::now();
    let mut restarted_at = None;
    let all_ready = loop {
        let (ready, done) = {
            let r = readiness.lock().unwrap();
            (r.total, r.all_done)
        };
        if let Some(done) = done {
            break done;
        }
        if settings.lost.is_some() && restarted_at.is_none() && ready >= count / 2 {
            // The killed process's figures, before they are gone.
            spans.push((metrics_before, world.operator.metrics_text().await));
            peak_rss_kb = proc_status_kb(pid, "VmHWM").unwrap_or_default();
            cpu += cpu_seconds(pid).unwrap_or_default() - cpu_before;
            world.restart_operator();
            restarted_at = Some((start.elapsed(), ready));
            pid = world.operator.pid();
            cpu_before = 0.0;
            metrics_before = String::new();
            println!("bench: operator restarted with {ready}/{count} Ready");
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            let t = start.elapsed().as_secs();
            progress.push(format!("{t:>5}s {ready:>5}"));
            println!("bench: {t:>5}s: {ready}/{count} Ready");
        }
        assert!(
            start.elapsed() < deadline,
            "only {ready}/{count} Ready after {deadline:?}\n{}",
            tail(&world.operator.logs(), 40)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    watch.abort();
    let mocks = all_mocks(&world, &extras);
    let cluster_done = readiness.lock().unwrap().cluster_done.clone();

    peak_rss_kb = peak_rss_kb.max(proc_status_kb(pid, "VmHWM").unwrap_or_default());
    let rss_kb = proc_status_kb(pid, "VmRSS").unwrap_or_default();
    cpu += cpu_seconds(pid).unwrap_or_default() - cpu_before;
    let own_cpu = cpu_seconds(std::process::id()).unwrap_or_default() - own_cpu_before;
    let (ontap_requests, ontap_gets, ontap_probes) = ontap_since(&mocks, &ontap_before).await;
    spans.push((metrics_before, world.operator.metrics_text().await));
    let spans = MetricsSpans(spans);
    let by_request = spans.diff("ontap_client_requests_total", "method+endpoint+status+code");
    let client_requests: f64 = by_request.values().sum();
    let reconciles = spans.diff("controller_runtime_reconcile_total", "controller+result");
    let retries = spans.diff("ontap_client_retries_total", "");
    let jobs = spans.diff("ontap_client_jobs_total", "outcome");
    let request_latency = spans.mean("ontap_client_request_duration_seconds", "method+endpoint");
    let reconcile_time = spans.mean("controller_runtime_reconcile_time_seconds", "controller");
    let step_time = spans.mean("ontap_operator_step_duration_seconds", "step+outcome");
    let queue_retries = spans.diff("workqueue_retries_total", "name");
    // Watches are long requests and counted once; everything else is one call.
    let kube_calls = spans.diff("rest_client_requests_total", "method+code");
    let kube_by_verb = spans.diff("rest_client_requests_total", "method");
    let kube_limiter = spans.mean("rest_client_rate_limiter_duration_seconds", "verb");
    let fault_hits: u64 = {
        let mut hits = 0;
        for mock in &mocks {
            hits += mock.fault_hits().await;
        }
        hits
    };

    // Faults off for the checks and the bare writes: they measure the end state, not the run.
    for mock in &mocks {
        mock.clear_faults();
    }
    let cluster_views: Vec<(String, &Mock)> =
        names.iter().cloned().zip(mocks.iter().copied()).collect();
    let holdings = check_holdings(&world, &settings, &cluster_views).await;

    let sample = svms.get(&name_of(0)).await.unwrap();
    let sample_status = serde_json::to_value(&sample.status).unwrap();
    let seed = world
        .secrets()
        .get(
            sample
                .status
                .as_ref()
                .unwrap()
                .secret_ref
                .as_deref()
                .unwrap(),
        )
        .await
        .unwrap();
    let recipe = Recipe {
        by_verb: ["POST", "PATCH", "PUT", "DELETE"]
            .iter()
            .map(|v| {
                let n = kube_by_verb.get(*v).copied().unwrap_or_default();
                (v.to_string(), n.max(0.0).round() as usize)
            })
            .collect(),
        count,
    };
    let (bare, bare_failed) = bare_writes(&world, &settings, &recipe, &sample_status, &seed).await;
    let floor = job_floor.max(bare);

    let mut report = String::new();
    let mut line = |s: String| {
        report.push_str(&s);
        report.push('\n');
    };
    let secs = |d: Duration| d.as_secs_f64();
    line("==================== bench: SVMs created at once ====================".into());
    line(format!(
        "SVMs                     {count} over {} OntapClusters, round-robin (each mock: {} ms jobs, {JOB_LIMIT} at a time)",
        settings.clusters, settings.job_ms
    ));
    line(format!(
        "faults                   slow cluster: {}; lost answers: {}",
        settings
            .slow_cluster()
            .map_or("none".into(), |c| format!("{} (every /api request 2 s late)", names[c])),
        settings.lost.map_or("none".into(), |p| format!(
            "{:.1} % of every cluster's answers (apply_then_reset; {fault_hits} fired), operator restarted at {}",
            p * 100.0,
            restarted_at.map_or("-".into(), |(t, n)| format!("{:.1} s with {n} Ready", secs(t)))
        ))
    ));
    line(format!("operator flags           {}", flags.join(" ")));
    line(format!("created in               {:.1} s", secs(creating)));
    line(format!(
        "job floor                {:.1} s   ({count} SVMs x {} ms / ({} clusters x {JOB_LIMIT} slots), the fullest cluster's)",
        secs(job_floor),
        settings.job_ms,
        settings.clusters
    ));
    line(format!(
        "bare-writes floor        {:.1} s   (a plain client, {} SVMs at a time, {} writes failed{}): {}",
        secs(bare),
        settings.bare_concurrency,
        bare_failed.len(),
        bare_failed
            .first()
            .map_or(String::new(), |e| format!(", the first: {e}")),
        recipe.describe()
    ));
    line(format!(
        "floor                    {:.1} s   (the larger)",
        secs(floor)
    ));
    line(format!(
        "all Ready after          {:.1} s   = {:.2}x the floor (target ≤ 1.10)",
        secs(all_ready),
        secs(all_ready) / secs(floor)
    ));
    let mut worst: Option<(f64, &str)> = None;
    for (c, name) in names.iter().enumerate() {
        let n = settings.svms_of(c);
        if n == 0 {
            continue;
        }
        let own = settings.job_floor(n);
        let done = cluster_done[c].unwrap_or(all_ready);
        let ratio = secs(done) / secs(own).max(f64::EPSILON);
        let slow = settings.slow_cluster() == Some(c);
        if !slow && worst.is_none_or(|(w, _)| ratio > w) {
            worst = Some((ratio, name.as_str()));
        }
        line(format!(
            "  cluster {c:>2} {name}: {n} SVMs Ready after {:.1} s, own job floor {:.1} s, {ratio:.2}x{}",
            secs(done),
            secs(own),
            if slow { " (the slow one)" } else { "" }
        ));
    }
    if let Some((ratio, name)) = worst {
        line(format!(
            "worst cluster ratio      {ratio:.2}x its own job floor ({name}{}; target ≤ 1.10)",
            if settings.slow {
                ", the slow cluster left out"
            } else {
                ""
            }
        ));
    }
    line(format!(
        "operator peak RSS        {:.1} MiB (VmHWM{}; {:.1} MiB at the end; target ≤ 100 MB)",
        peak_rss_kb as f64 / 1024.0,
        if restarted_at.is_some() {
            ", the larger of both processes"
        } else {
            ""
        },
        rss_kb as f64 / 1024.0
    ));
    line(format!(
        "operator CPU             {cpu:.1} s (user + system, during the run); this process (mock ONTAPs, kube client, watch) {own_cpu:.1} s"
    ));
    line(format!(
        "machine load average     {} at the start, {} at the end ({} CPUs)",
        load_before.trim(),
        loadavg().trim(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    line(format!(
        "ONTAP requests           {ontap_requests} seen by the mocks = {:.2} per SVM ({ontap_gets} GETs besides {ontap_probes} OntapCluster probes; {client_requests} sent per the operator's metrics)",
        ontap_requests as f64 / count as f64
    ));
    for (labels, n) in &by_request {
        line(format!("  {n:>8} {labels}"));
    }
    line("ONTAP request time, mean (from the operator: includes waiting for one of the client's slots)".into());
    for (labels, m) in &request_latency {
        line(format!("  {m:>18} {labels}"));
    }
    line(format!("reconcile time, mean     {reconcile_time:?}"));
    line("step time, mean".into());
    for (labels, m) in &step_time {
        line(format!("  {m:>18} {labels}"));
    }
    line(format!("work queue retries       {queue_retries:?}"));
    line(format!(
        "Kubernetes API calls     {:.2} per SVM ({:.2} writes): {kube_calls:?}",
        kube_calls.values().sum::<f64>() / count as f64,
        recipe.by_verb.values().sum::<usize>() as f64 / count as f64
    ));
    line(format!("client rate limit wait   {kube_limiter:?}"));
    line(format!("ONTAP jobs waited for    {jobs:?}"));
    line(format!("ONTAP client retries     {retries:?}"));
    line(format!("reconciles               {reconciles:?}"));
    line(format!(
        "end state                {} of {count} objects with exactly one ONTAP SVM, {} without, {} ONTAP SVMs no object owns; orphans: {}; LIFs not 2: {}; accounts not the seed's: {}",
        holdings.one_svm,
        holdings.not_one_svm.len(),
        holdings.extra_svms,
        holdings.orphans.len(),
        holdings.wrong_lifs.len(),
        holdings.wrong_accounts.len()
    ));
    line(format!(
        "seed Secrets             {} of {count} authenticate, {} do not",
        holdings.authenticating,
        holdings.not_authenticating.len()
    ));
    line(format!("Ready over time          {}", progress.join(" |")));
    let (resync_requests, resync_gets, resync_passes, resync_kube_writes) =
        measure_resync(&mut world, &extras, count).await;
    line(format!(
        "resync of every Ready SVM (operator restarted): {:.2} ONTAP requests per Ready SVM (target ≤ 1.1): {resync_gets} GETs, {} writes, without the OntapClusters' probes; {resync_passes} SVM passes, {resync_kube_writes} Kubernetes writes",
        resync_requests as f64 / count as f64,
        resync_requests - resync_gets
    ));
    line("=====================================================================".into());
    print!("{report}");
    if let Ok(path) = std::env::var("BENCH_REPORT") {
        std::fs::write(path, &report).unwrap();
    }
    let sample = |v: &[String]| v.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    assert!(
        holdings.not_one_svm.is_empty() && holdings.extra_svms == 0,
        "not exactly one ONTAP SVM per object: {} ({} extra)",
        sample(&holdings.not_one_svm),
        holdings.extra_svms
    );
    assert!(
        holdings.orphans.is_empty(),
        "orphans: {}",
        sample(&holdings.orphans)
    );
    assert!(
        holdings.wrong_lifs.is_empty() && holdings.wrong_accounts.is_empty(),
        "LIFs or accounts not as the objects say: {} {}",
        sample(&holdings.wrong_lifs),
        sample(&holdings.wrong_accounts)
    );
    assert!(
        holdings.not_authenticating.is_empty(),
        "seed Secrets that do not authenticate: {}",
        sample(&holdings.not_authenticating)
    );
}
