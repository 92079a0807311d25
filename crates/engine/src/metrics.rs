//! Prometheus metrics, named like controller-runtime's so its dashboards work unchanged.
//!
//! Every label value is bounded: controller and step names are `&'static str` in code, HTTP
//! methods and status codes are finite, and errors are labelled by [`ErrorCategory`], never by
//! their message.
//!
//! [`ErrorCategory`]: super::ErrorCategory

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// `{controller}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// Controller name.
    pub controller: String,
}

/// `{controller, result}`; result is `success`, `error`, `requeue` or `requeue_after`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// Controller name.
    pub controller: String,
    /// Reconcile result.
    pub result: String,
}

/// `{name}` of a work queue (the controller's name).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// Queue name.
    pub name: String,
}

/// `{code, method, host}` of a Kubernetes API request, as client-go labels them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// HTTP status code, or `<error>` when no response arrived.
    pub code: String,
    /// HTTP method.
    pub method: String,
    /// API server host:port.
    pub host: String,
}

/// `{verb, host}` of the client-side rate limiter, as client-go labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimiterLabels {
    /// HTTP method.
    pub verb: String,
    /// API server host:port.
    pub host: String,
}

/// `{controller, step, outcome}`; outcome is `unchanged`, `changed`, `waiting` or `error`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabels {
    /// Controller name.
    pub controller: String,
    /// Step name.
    pub step: String,
    /// Step outcome.
    pub outcome: String,
}

/// `{controller, step, category}`; category is an [`ErrorCategory`](super::ErrorCategory).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepErrorLabels {
    /// Controller name.
    pub controller: String,
    /// Step name.
    pub step: String,
    /// Error category.
    pub category: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    // controller-runtime's reconcile_time buckets, so its dashboards' quantiles line up.
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

fn queue_histogram() -> Histogram {
    // controller-runtime's workqueue buckets: ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1e-8, 10.0, 12,
    ))
}

fn limiter_histogram() -> Histogram {
    // client-go's rate limiter latency buckets (exponential from 1 ms to ~1 min).
    Histogram::new([
        0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
        8.192, 16.384, 32.768, 65.536,
    ])
}

/// Every metric the engine records. One instance is shared by all controllers and the client
/// layer of a process; [`Metrics::new`] registers them in a [`Registry`] that the admin server
/// serves as OpenMetrics text.
///
/// Registered names (counters get `_total` appended by the OpenMetrics encoder):
///
/// | metric | type | labels |
/// |---|---|---|
/// | `controller_runtime_reconcile_total` | counter | `controller`, `result` |
/// | `controller_runtime_reconcile_errors_total` | counter | `controller` |
/// | `controller_runtime_reconcile_time_seconds` | histogram | `controller` |
/// | `controller_runtime_active_workers` | gauge | `controller` |
/// | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` |
/// | `workqueue_depth` | gauge | `name` |
/// | `workqueue_adds_total` | counter | `name` |
/// | `workqueue_retries_total` | counter | `name` |
/// | `workqueue_queue_duration_seconds` | histogram | `name` |
/// | `workqueue_work_duration_seconds` | histogram | `name` |
/// | `rest_client_requests_total` | counter | `code`, `method`, `host` |
/// | `rest_client_rate_limiter_duration_seconds` | histogram | `verb`, `host` |
/// | `{prefix}_step_duration_seconds` | histogram | `controller`, `step`, `outcome` |
/// | `{prefix}_step_errors_total` | counter | `controller`, `step`, `category` |
/// | `{prefix}_workqueue_oldest_item_age_seconds` | gauge | `name` |
/// | `{prefix}_workqueue_unswept` | gauge | `name` |
/// | `{prefix}_reconciles_awaiting_slot` | gauge | `controller` |
///
/// The prefix of the engine's own metrics is the embedding program's (see [`Metrics::new`]).
///
/// ```
/// use prometheus_client::registry::Registry;
/// use reconcile_engine::Metrics;
///
/// let mut registry = Registry::default();
/// let metrics = Metrics::new(&mut registry, "demo");
/// metrics.reconcile_total("svm", "success").inc();
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"controller_runtime_reconcile_total{controller="svm",result="success"} 1"#));
/// ```
#[derive(Debug)]
pub struct Metrics {
    reconcile_total: Family<ReconcileLabels, Counter>,
    reconcile_errors_total: Family<ControllerLabels, Counter>,
    reconcile_time_seconds: HistogramFamily<ControllerLabels>,
    active_workers: Family<ControllerLabels, Gauge>,
    max_concurrent_reconciles: Family<ControllerLabels, Gauge>,
    workqueue_depth: Family<QueueLabels, Gauge>,
    workqueue_unswept: Family<QueueLabels, Gauge>,
    reconciles_awaiting_slot: Family<ControllerLabels, Gauge>,
    workqueue_adds_total: Family<QueueLabels, Counter>,
    workqueue_retries_total: Family<QueueLabels, Counter>,
    workqueue_queue_duration_seconds: HistogramFamily<QueueLabels>,
    workqueue_work_duration_seconds: HistogramFamily<QueueLabels>,
    rest_client_requests_total: Family<RequestLabels, Counter>,
    rest_client_rate_limiter_duration_seconds: HistogramFamily<LimiterLabels>,
    step_duration_seconds: HistogramFamily<StepLabels>,
    step_errors_total: Family<StepErrorLabels, Counter>,
    queue_ages: Arc<QueueAges>,
}

/// The source of one queue's oldest-item age, read at scrape time.
type AgeSource = Box<dyn Fn() -> Option<Duration> + Send + Sync>;

/// `{prefix}_workqueue_oldest_item_age_seconds`, computed when scraped: a gauge set on queue
/// events would stand still exactly when nothing drains the queue, which is what it must show.
#[derive(Default)]
struct QueueAges {
    sources: Mutex<Vec<(String, AgeSource)>>,
}

impl std::fmt::Debug for QueueAges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueAges").finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct QueueAgeCollector {
    name: String,
    ages: Arc<QueueAges>,
}

impl Collector for QueueAgeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family = Family::<QueueLabels, Gauge<f64, AtomicU64>>::default();
        {
            let sources = self
                .ages
                .sources
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for (name, source) in sources.iter() {
                if let Some(age) = source() {
                    family
                        .get_or_create(&queue_labels(name))
                        .set(age.as_secs_f64());
                }
            }
        }
        family.encode(encoder.encode_descriptor(
            &self.name,
            "How long the oldest item ready in the work queue has waited to be handed out (0 when none waits)",
            None,
            family.metric_type(),
        )?)
    }
}

impl Metrics {
    /// Creates the metrics and registers them in `registry`; the engine's own metrics (steps)
    /// are named `{prefix}_…`.
    pub fn new(registry: &mut Registry, prefix: &str) -> Arc<Self> {
        let metrics = Self::unregistered();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            metrics.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            metrics.reconcile_errors_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            metrics.reconcile_time_seconds.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            metrics.active_workers.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            metrics.max_concurrent_reconciles.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            metrics.workqueue_depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            metrics.workqueue_adds_total.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            metrics.workqueue_retries_total.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            metrics.workqueue_queue_duration_seconds.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            metrics.workqueue_work_duration_seconds.clone(),
        );
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            metrics.rest_client_requests_total.clone(),
        );
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds, by verb and host",
            metrics.rest_client_rate_limiter_duration_seconds.clone(),
        );
        registry.register(
            format!("{prefix}_step_duration_seconds"),
            "Duration of reconcile steps by controller, step and outcome",
            metrics.step_duration_seconds.clone(),
        );
        registry.register(
            format!("{prefix}_step_errors"),
            "Failed reconcile steps by controller, step and error category",
            metrics.step_errors_total.clone(),
        );
        registry.register(
            format!("{prefix}_workqueue_unswept"),
            "Objects of a controller's initial list not yet admitted into its work queue",
            metrics.workqueue_unswept.clone(),
        );
        registry.register(
            format!("{prefix}_reconciles_awaiting_slot"),
            "Reconciles taken from the work queue that wait, without a worker, for one of the pass slots of the remote system their object is on",
            metrics.reconciles_awaiting_slot.clone(),
        );
        registry.register_collector(Box::new(QueueAgeCollector {
            name: format!("{prefix}_workqueue_oldest_item_age_seconds"),
            ages: metrics.queue_ages.clone(),
        }));
        Arc::new(metrics)
    }

    /// Metrics that are recorded but not exported; for tests and tools that need no registry.
    pub fn unregistered() -> Self {
        Metrics {
            reconcile_total: Family::default(),
            reconcile_errors_total: Family::default(),
            reconcile_time_seconds: Family::new_with_constructor(duration_histogram),
            active_workers: Family::default(),
            max_concurrent_reconciles: Family::default(),
            workqueue_depth: Family::default(),
            workqueue_unswept: Family::default(),
            reconciles_awaiting_slot: Family::default(),
            workqueue_adds_total: Family::default(),
            workqueue_retries_total: Family::default(),
            workqueue_queue_duration_seconds: Family::new_with_constructor(queue_histogram),
            workqueue_work_duration_seconds: Family::new_with_constructor(queue_histogram),
            rest_client_requests_total: Family::default(),
            rest_client_rate_limiter_duration_seconds: Family::new_with_constructor(
                limiter_histogram,
            ),
            step_duration_seconds: Family::new_with_constructor(duration_histogram),
            step_errors_total: Family::default(),
            queue_ages: Arc::default(),
        }
    }

    /// Reports the queue `name`'s oldest-item age from `source` at every scrape; a source that
    /// answers `None` (its queue is gone) reports nothing.
    pub fn watch_queue_age(
        &self,
        name: &str,
        source: impl Fn() -> Option<Duration> + Send + Sync + 'static,
    ) {
        let mut sources = self
            .queue_ages
            .sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A controller restarted in the same process replaces its earlier queue.
        sources.retain(|(known, _)| known != name);
        sources.push((name.to_owned(), Box::new(source)));
    }

    /// `controller_runtime_reconcile_total{controller, result}`.
    pub fn reconcile_total(&self, controller: &str, result: &str) -> Counter {
        self.reconcile_total.get_or_create_owned(&ReconcileLabels {
            controller: controller.to_owned(),
            result: result.to_owned(),
        })
    }

    /// `controller_runtime_reconcile_errors_total{controller}`.
    pub fn reconcile_errors_total(&self, controller: &str) -> Counter {
        self.reconcile_errors_total
            .get_or_create_owned(&controller_labels(controller))
    }

    /// `controller_runtime_reconcile_time_seconds{controller}`.
    pub fn observe_reconcile_time(&self, controller: &str, elapsed: Duration) {
        self.reconcile_time_seconds
            .get_or_create(&controller_labels(controller))
            .observe(elapsed.as_secs_f64());
    }

    /// `controller_runtime_active_workers{controller}`.
    pub fn active_workers(&self, controller: &str) -> Gauge {
        self.active_workers
            .get_or_create_owned(&controller_labels(controller))
    }

    /// `controller_runtime_max_concurrent_reconciles{controller}`.
    pub fn max_concurrent_reconciles(&self, controller: &str) -> Gauge {
        self.max_concurrent_reconciles
            .get_or_create_owned(&controller_labels(controller))
    }

    /// `workqueue_depth{name}`.
    pub fn workqueue_depth(&self, name: &str) -> Gauge {
        self.workqueue_depth
            .get_or_create_owned(&queue_labels(name))
    }

    /// `{prefix}_workqueue_unswept{name}`.
    pub fn workqueue_unswept(&self, name: &str) -> Gauge {
        self.workqueue_unswept
            .get_or_create_owned(&queue_labels(name))
    }

    /// `{prefix}_reconciles_awaiting_slot{controller}`.
    pub fn reconciles_awaiting_slot(&self, controller: &str) -> Gauge {
        self.reconciles_awaiting_slot
            .get_or_create_owned(&controller_labels(controller))
    }

    /// `workqueue_adds_total{name}`.
    pub fn workqueue_adds_total(&self, name: &str) -> Counter {
        self.workqueue_adds_total
            .get_or_create_owned(&queue_labels(name))
    }

    /// `workqueue_retries_total{name}`.
    pub fn workqueue_retries_total(&self, name: &str) -> Counter {
        self.workqueue_retries_total
            .get_or_create_owned(&queue_labels(name))
    }

    /// `workqueue_queue_duration_seconds{name}`.
    pub fn workqueue_queue_duration(&self, name: &str) -> Histogram {
        self.workqueue_queue_duration_seconds
            .get_or_create_owned(&queue_labels(name))
    }

    /// `workqueue_work_duration_seconds{name}`.
    pub fn workqueue_work_duration(&self, name: &str) -> Histogram {
        self.workqueue_work_duration_seconds
            .get_or_create_owned(&queue_labels(name))
    }

    /// `rest_client_requests_total{code, method, host}`.
    pub fn rest_client_requests_total(&self, code: &str, method: &str, host: &str) -> Counter {
        self.rest_client_requests_total
            .get_or_create_owned(&RequestLabels {
                code: code.to_owned(),
                method: method.to_owned(),
                host: host.to_owned(),
            })
    }

    /// Records one wait in `rest_client_rate_limiter_duration_seconds{verb, host}`.
    pub fn observe_rate_limiter(&self, verb: &str, host: &str, waited: Duration) {
        self.rest_client_rate_limiter_duration_seconds
            .get_or_create(&LimiterLabels {
                verb: verb.to_owned(),
                host: host.to_owned(),
            })
            .observe(waited.as_secs_f64());
    }

    /// Records one step in `{prefix}_step_duration_seconds{controller, step, outcome}`.
    pub fn observe_step(&self, controller: &str, step: &str, outcome: &str, elapsed: Duration) {
        self.step_duration_seconds
            .get_or_create(&StepLabels {
                controller: controller.to_owned(),
                step: step.to_owned(),
                outcome: outcome.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// `{prefix}_step_errors_total{controller, step, category}`.
    pub fn step_errors_total(&self, controller: &str, step: &str, category: &str) -> Counter {
        self.step_errors_total
            .get_or_create_owned(&StepErrorLabels {
                controller: controller.to_owned(),
                step: step.to_owned(),
                category: category.to_owned(),
            })
    }
}

fn controller_labels(controller: &str) -> ControllerLabels {
    ControllerLabels {
        controller: controller.to_owned(),
    }
}

fn queue_labels(name: &str) -> QueueLabels {
    QueueLabels {
        name: name.to_owned(),
    }
}
