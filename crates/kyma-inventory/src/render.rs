//! Rendering a component's chart: the CPU work the experiment found decisive.
//!
//! The charts of the 18 standard components ship inside the binary (`charts/` of this crate, embedded
//! with `include_dir`) and are rendered by the real `helm template`, as the experiment rendered
//! them with helm's library. The first render writes the charts once into a temporary folder;
//! helm then runs as a child process awaited by tokio, so the template work never occupies an
//! async worker thread. Manifests are cached by chart, version and a digest of the values, in a
//! cache whose concurrent first lookups of one key share one render (the experiment's cache was
//! a plain map written by 10 workers: a data race, and 24 renders for 18 charts).
//!
//! The namespace is not part of the key: the shipped charts use it only as the literal
//! `namespace:` of their objects, so a chart is rendered once into a placeholder namespace and
//! the namespace is put in afterwards (a test renders every chart both ways and compares). The
//! cache is bounded by the bytes it holds, and the number of helm processes at once by
//! `--kyma-max-renders`: each helm process takes tens of MiB, and components of many distinct
//! namespaces created at once would otherwise start one each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use include_dir::{Dir, include_dir};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::OnceCell;

/// The charts of the standard components, one folder each.
static CHARTS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/charts");

/// The version of every shipped chart (their `Chart.yaml`).
pub const CHART_VERSION: &str = "1.0.0";

/// The namespace a component renders into when its HelmComponent names none.
pub const DEFAULT_NAMESPACE: &str = "kyma-system";

/// How long one `helm template` may take: far above the ~0.2 s a chart takes, so only a hung
/// process hits it.
const HELM_TIMEOUT: Duration = Duration::from_secs(60);

/// The bytes of manifests kept: every shipped chart at many values sets (one is 10–60 KiB).
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// The default of `--kyma-max-renders`: helm processes at once. Enough to keep two cores busy
/// (a render is CPU-bound), few enough that their memory stays well inside the chart's limit.
pub const DEFAULT_MAX_RENDERS: u16 = 4;

/// The namespace charts are rendered into before the requested one is put in: a DNS label no
/// one names a namespace, which occurs in no chart.
const NAMESPACE_PLACEHOLDER: &str = "kyma-render-namespace-placeholder-5d1e";

/// The names of the shipped charts, sorted.
pub fn chart_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = CHARTS
        .dirs()
        .filter_map(|d| d.path().file_name()?.to_str())
        .collect();
    names.sort_unstable();
    names
}

/// Whether `name` is one of the shipped charts' folders. Asked on every pass: `Dir::contains`
/// searches every embedded file's path, a comparison of the folder names does not.
fn is_shipped_chart(name: &str) -> bool {
    !name.contains(['/', '.'])
        && CHARTS
            .dirs()
            .any(|d| d.path().file_name().and_then(|n| n.to_str()) == Some(name))
}

/// What a manifest is cached by: what changes helm's output, not the namespace.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct RenderKey {
    pub chart: String,
    pub version: String,
    /// SHA-256 of the values, in their canonical (sorted) form.
    pub values_digest: [u8; 32],
}

/// One render request: a chart, its version and the values set on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderRequest {
    pub chart: String,
    pub version: String,
    pub namespace: String,
    pub values: BTreeMap<String, String>,
}

impl RenderRequest {
    /// The cache key: chart, version and values.
    pub fn key(&self) -> RenderKey {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        for (k, v) in &self.values {
            context.update(k.as_bytes());
            context.update(b"\0");
            context.update(v.as_bytes());
            context.update(b"\0");
        }
        let mut values_digest = [0u8; 32];
        values_digest.copy_from_slice(context.finish().as_ref());
        RenderKey {
            chart: self.chart.clone(),
            version: self.version.clone(),
            values_digest,
        }
    }
}

/// Why a chart did not render.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No chart of that name ships with the operator: the spec is wrong.
    #[error("no chart {0:?} ships with the operator (known: {known})", known = chart_names().join(", "))]
    UnknownChart(String),
    /// The chart exists, in another version: the spec is wrong.
    #[error("chart {chart:?} ships in version {CHART_VERSION}, not {version:?}")]
    UnknownVersion { chart: String, version: String },
    /// The helm binary could not be run.
    #[error("running {helm}: {source}")]
    Helm {
        helm: String,
        #[source]
        source: std::io::Error,
    },
    /// helm ran and failed.
    #[error("helm template {chart} failed ({status}): {stderr}")]
    Failed {
        chart: String,
        status: String,
        stderr: String,
    },
    /// helm did not finish in time.
    #[error("helm template {0} did not finish within {HELM_TIMEOUT:?}")]
    Timeout(String),
    /// The charts could not be written out.
    #[error("writing the charts to {dir}: {source}")]
    Extract {
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

impl RenderError {
    /// Whether retrying can help (else the spec must change).
    pub fn is_invalid(&self) -> bool {
        matches!(
            self,
            RenderError::UnknownChart(_) | RenderError::UnknownVersion { .. }
        )
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    /// `hit`, `miss` or `error`.
    result: &'static str,
}

/// `kyma_render_total{result}` and `kyma_render_duration_seconds`. Cheap to clone.
#[derive(Clone, Debug)]
pub struct RenderMetrics {
    total: Family<ResultLabels, Counter>,
    duration: Histogram,
}

impl Default for RenderMetrics {
    fn default() -> Self {
        RenderMetrics {
            total: Family::default(),
            // 10 ms … ~20 s.
            duration: Histogram::new(exponential_buckets(0.01, 2.0, 12)),
        }
    }
}

impl RenderMetrics {
    /// Registers the series under the `kyma_` prefix.
    pub fn register(&self, registry: &mut Registry) {
        let sub = registry.sub_registry_with_prefix("kyma");
        sub.register(
            "render",
            "Chart renders asked for, by result: hit (cached, or another render of the same key in flight), miss (rendered), error",
            self.total.clone(),
        );
        sub.register(
            "render_duration_seconds",
            "Duration of one helm template run",
            self.duration.clone(),
        );
    }

    fn count(&self, result: &'static str) {
        self.total.get_or_create(&ResultLabels { result }).inc();
    }
}

/// Renders the shipped charts with helm, caching the manifests. Cheap to clone.
#[derive(Clone)]
pub struct Renderer {
    inner: Arc<Inner>,
}

struct Inner {
    helm: PathBuf,
    charts: OnceCell<tempfile::TempDir>,
    /// Manifests in the placeholder namespace.
    cache: moka::future::Cache<RenderKey, Arc<str>>,
    /// One permit per helm process that may run.
    renders: tokio::sync::Semaphore,
    metrics: RenderMetrics,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("helm", &self.inner.helm)
            .field("cached", &self.inner.cache.entry_count())
            .finish()
    }
}

impl Renderer {
    /// A renderer running `helm` (a path, or a name looked up on `PATH`), at most
    /// `max_renders` at once.
    pub fn new(helm: PathBuf, max_renders: usize, metrics: RenderMetrics) -> Self {
        Renderer {
            inner: Arc::new(Inner {
                helm,
                charts: OnceCell::new(),
                cache: moka::future::Cache::builder()
                    .weigher(|_, manifest: &Arc<str>| {
                        u32::try_from(manifest.len()).unwrap_or(u32::MAX)
                    })
                    .max_capacity(CACHE_BYTES)
                    .build(),
                renders: tokio::sync::Semaphore::new(max_renders.max(1)),
                metrics,
            }),
        }
    }

    /// The manifest of `request`: from the cache, or rendered once however many ask at once.
    pub async fn render(&self, request: &RenderRequest) -> Result<Arc<str>, Arc<RenderError>> {
        if !is_shipped_chart(&request.chart) {
            self.inner.metrics.count("error");
            return Err(Arc::new(RenderError::UnknownChart(request.chart.clone())));
        }
        if request.version != CHART_VERSION {
            self.inner.metrics.count("error");
            return Err(Arc::new(RenderError::UnknownVersion {
                chart: request.chart.clone(),
                version: request.version.clone(),
            }));
        }
        let inner = self.inner.clone();
        let mut template = request.clone();
        template.namespace = NAMESPACE_PLACEHOLDER.to_owned();
        let manifest = cached(
            &self.inner.cache,
            &self.inner.metrics,
            request.key(),
            async move { inner.helm_template(&template).await },
        )
        .await?;
        Ok(Arc::from(
            manifest.replace(NAMESPACE_PLACEHOLDER, &request.namespace),
        ))
    }

    /// How many manifests are cached.
    pub async fn cached(&self) -> u64 {
        self.inner.cache.run_pending_tasks().await;
        self.inner.cache.entry_count()
    }
}

/// Looks `key` up in `cache`; on a miss runs `render` — once per key, however many callers ask
/// at the same time (moka's `try_get_with` lets the others wait for that one run) — and counts
/// the result. Errors are not cached: the next call renders again.
pub async fn cached<F>(
    cache: &moka::future::Cache<RenderKey, Arc<str>>,
    metrics: &RenderMetrics,
    key: RenderKey,
    render: F,
) -> Result<Arc<str>, Arc<RenderError>>
where
    F: Future<Output = Result<Arc<str>, RenderError>>,
{
    if let Some(manifest) = cache.get(&key).await {
        metrics.count("hit");
        return Ok(manifest);
    }
    let ran = AtomicBool::new(false);
    let result = cache
        .try_get_with(key, async {
            ran.store(true, Ordering::Relaxed);
            let start = Instant::now();
            let result = render.await;
            metrics.duration.observe(start.elapsed().as_secs_f64());
            result
        })
        .await;
    let label = match (&result, ran.load(Ordering::Relaxed)) {
        (Err(_), _) => "error",
        (Ok(_), true) => "miss",
        // Another caller's render of the same key served this one.
        (Ok(_), false) => "hit",
    };
    metrics.count(label);
    result
}

impl Inner {
    async fn charts_dir(&self) -> Result<&Path, RenderError> {
        let dir = self
            .charts
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(extract_charts)
                    .await
                    .map_err(|e| RenderError::Extract {
                        dir: std::env::temp_dir().display().to_string(),
                        source: std::io::Error::other(e),
                    })?
            })
            .await?;
        Ok(dir.path())
    }

    async fn helm_template(&self, request: &RenderRequest) -> Result<Arc<str>, RenderError> {
        let dir = self.charts_dir().await?;
        // Never closed: the permit is only ever missing while all are taken.
        let _permit = self
            .renders
            .acquire()
            .await
            .map_err(|e| RenderError::Helm {
                helm: self.helm.display().to_string(),
                source: std::io::Error::other(e),
            })?;
        let helm_home = dir.join(".helm");
        let mut command = tokio::process::Command::new(&self.helm);
        command
            .arg("template")
            .arg(&request.chart)
            .arg(dir.join("charts").join(&request.chart))
            .arg("--namespace")
            .arg(&request.namespace);
        for (k, v) in &request.values {
            command.arg("--set-string").arg(format!("{k}={v}"));
        }
        command
            // helm reads and writes its config, cache and data folders even for `template`:
            // keep them in our own folder, which also works on a read-only root file system.
            .env("HELM_CACHE_HOME", helm_home.join("cache"))
            .env("HELM_CONFIG_HOME", helm_home.join("config"))
            .env("HELM_DATA_HOME", helm_home.join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = command.spawn().map_err(|source| RenderError::Helm {
            helm: self.helm.display().to_string(),
            source,
        })?;
        let output = tokio::time::timeout(HELM_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| RenderError::Timeout(request.chart.clone()))?
            .map_err(|source| RenderError::Helm {
                helm: self.helm.display().to_string(),
                source,
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(RenderError::Failed {
                chart: request.chart.clone(),
                status: output.status.to_string(),
                stderr: stderr.chars().take(2048).collect(),
            });
        }
        Ok(Arc::from(String::from_utf8_lossy(&output.stdout).as_ref()))
    }
}

/// Writes every shipped chart under `<tmp>/charts/<name>/`.
fn extract_charts() -> Result<tempfile::TempDir, RenderError> {
    let err = |dir: &Path, source: std::io::Error| RenderError::Extract {
        dir: dir.display().to_string(),
        source,
    };
    let tmp = tempfile::Builder::new()
        .prefix("ontap-operator-charts-")
        .tempdir()
        .map_err(|e| err(&std::env::temp_dir(), e))?;
    let charts = tmp.path().join("charts");
    std::fs::create_dir_all(&charts).map_err(|e| err(&charts, e))?;
    CHARTS.extract(&charts).map_err(|e| err(&charts, e))?;
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn key(chart: &str) -> RenderKey {
        RenderRequest {
            chart: chart.into(),
            version: CHART_VERSION.into(),
            namespace: "ns".into(),
            values: BTreeMap::new(),
        }
        .key()
    }

    #[test]
    fn every_standard_component_ships_a_chart() {
        let names = chart_names();
        for c in crate::STANDARD_COMPONENTS {
            assert!(names.contains(c), "no chart for {c}");
        }
        assert_eq!(names.len(), 18);
    }

    #[test]
    fn the_digest_covers_values_not_the_namespace() {
        let base = RenderRequest {
            chart: "istio".into(),
            version: CHART_VERSION.into(),
            namespace: "a".into(),
            values: BTreeMap::from([("component".into(), "istio".into())]),
        };
        let mut other_ns = base.clone();
        other_ns.namespace = "b".into();
        let mut other_value = base.clone();
        other_value.values.insert("x".into(), "1".into());
        assert_eq!(base.key(), base.clone().key());
        assert_eq!(base.key(), other_ns.key());
        assert_ne!(base.key(), other_value.key());
    }

    /// Concurrent first renders of one chart render once; the others are hits.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_first_renders_of_one_key_render_once() {
        let cache = moka::future::Cache::new(16);
        let metrics = RenderMetrics::default();
        let renders = Arc::new(AtomicUsize::new(0));
        let calls = (0..16).map(|i| {
            let cache = cache.clone();
            let metrics = metrics.clone();
            let renders = renders.clone();
            let chart = if i % 2 == 0 { "istio" } else { "ory" };
            tokio::spawn(async move {
                cached(&cache, &metrics, key(chart), async move {
                    renders.fetch_add(1, Ordering::SeqCst);
                    // Long enough for every caller to arrive while the render runs.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok(Arc::from(chart))
                })
                .await
            })
        });
        for (i, call) in futures::future::join_all(calls)
            .await
            .into_iter()
            .enumerate()
        {
            let manifest = call.expect("task").expect("rendered");
            assert_eq!(&*manifest, if i % 2 == 0 { "istio" } else { "ory" });
        }
        assert_eq!(renders.load(Ordering::SeqCst), 2, "one render per key");
        let misses = metrics
            .total
            .get_or_create(&ResultLabels { result: "miss" });
        let hits = metrics.total.get_or_create(&ResultLabels { result: "hit" });
        assert_eq!((misses.get(), hits.get()), (2, 14));
    }

    #[tokio::test]
    async fn errors_are_not_cached() {
        let cache = moka::future::Cache::new(16);
        let metrics = RenderMetrics::default();
        let failed = cached(&cache, &metrics, key("istio"), async {
            Err(RenderError::Timeout("istio".into()))
        })
        .await;
        assert!(failed.is_err());
        let ok = cached(&cache, &metrics, key("istio"), async {
            Ok(Arc::from("manifest"))
        })
        .await;
        assert_eq!(ok.expect("rendered").as_ref(), "manifest");
    }

    /// Twelve distinct first renders at once run at most `max_renders` helm processes together:
    /// a stand-in helm logs when each process starts and ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_max_renders_helm_processes_run_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let helm = dir.path().join("helm");
        std::fs::write(
            &helm,
            format!(
                "#!/bin/sh\necho start >> {log}\nsleep 0.3\necho end >> {log}\necho rendered\n",
                log = log.display()
            ),
        )
        .expect("write");
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&helm)
            .status()
            .expect("chmod");
        let renderer = Renderer::new(helm, 3, RenderMetrics::default());
        let renders = (0..12).map(|i| {
            let renderer = renderer.clone();
            async move {
                let request = RenderRequest {
                    chart: "istio".into(),
                    version: CHART_VERSION.into(),
                    namespace: "ns".into(),
                    values: BTreeMap::from([("i".to_owned(), i.to_string())]),
                };
                renderer.render(&request).await
            }
        });
        for rendered in futures::future::join_all(renders).await {
            assert_eq!(rendered.expect("rendered").trim(), "rendered");
        }
        let (mut running, mut most) = (0, 0);
        for line in std::fs::read_to_string(&log).expect("log").lines() {
            running += if line == "start" { 1 } else { -1 };
            most = most.max(running);
        }
        assert_eq!(most, 3, "helm processes at once");
    }

    #[tokio::test]
    async fn unknown_charts_and_versions_are_invalid() {
        let renderer = Renderer::new("helm-that-is-never-run".into(), 1, RenderMetrics::default());
        let mut request = RenderRequest {
            chart: "no-such-chart".into(),
            version: CHART_VERSION.into(),
            namespace: "ns".into(),
            values: BTreeMap::new(),
        };
        let err = renderer.render(&request).await.expect_err("unknown");
        assert!(err.is_invalid(), "{err}");
        // A path into a chart, or out of the charts, is no chart.
        for chart in ["istio/Chart.yaml", "istio/templates", "..", "."] {
            request.chart = chart.into();
            let err = renderer.render(&request).await.expect_err(chart);
            assert!(
                matches!(*err, RenderError::UnknownChart(_)),
                "{chart}: {err}"
            );
        }
        request.chart = "istio".into();
        request.version = "9.9.9".into();
        let err = renderer
            .render(&request)
            .await
            .expect_err("unknown version");
        assert!(err.is_invalid(), "{err}");
    }
}
