//! Engine settings. The command-line flags that fill them belong to the program embedding the
//! engine (its names, its environment variables).

use std::time::Duration;

/// How controllers schedule reconciles. [`Default`] matches the flags' defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// Every object is re-verified at least this often, even without events, so drift made
    /// behind the operator's back is found.
    pub sync_period: Duration,
    /// The sync period is stretched by a random factor in `[1, 1 + sync_jitter)` per object, so
    /// objects created together do not all come due in the same second.
    pub sync_jitter: f64,
    /// Reconciles running at once per controller. Never unbounded; 0 is treated as 1.
    pub max_concurrent_reconciles: u16,
    /// First delay after a transient failure; doubles per consecutive failure.
    pub backoff_base: Duration,
    /// Longest delay after failures (transient ones and conflicts alike).
    pub backoff_max: Duration,
    /// Reconcile starts per second per controller (token bucket); 0 disables.
    pub reconcile_rate: f64,
    /// Reconcile starts allowed at once.
    pub reconcile_burst: u32,
    /// Passes per controller that may wait without holding a worker at once (for a remote
    /// system's job slot, [`Jobs`](crate::Jobs)); beyond it, a pass that must wait requeues,
    /// and its object is queued again when a parked pass leaves.
    pub max_parked_reconciles: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            sync_period: Duration::from_secs(600),
            sync_jitter: 0.1,
            // Reconciles mostly wait on the API server, not the CPU: 50 in flight keep a
            // controller busy at the client's 1,000 requests/s with ~50 ms requests.
            max_concurrent_reconciles: 50,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(1000),
            // A guard against hot loops, not a throttle: 4,000 Kymas created at once put 72,000
            // HelmComponents in one queue, and at 30/s (controller-runtime's experiment value)
            // their first passes alone would take 40 minutes.
            reconcile_rate: 1000.0,
            reconcile_burst: 2000,
            max_parked_reconciles: 2000,
        }
    }
}

/// Who the engine works for: the names it writes into the cluster and how it finds the trace of
/// a pass. Injected by the program embedding the engine, which owns those names.
#[derive(Clone)]
pub struct Identity {
    /// Events are reported by `{reporter_domain}/{controller}`.
    pub reporter_domain: String,
    /// The reporting instance of Events (the pod name, usually).
    pub instance: Option<String>,
    /// Given the span of a reconcile, records its trace id on it and returns it (hex), so that
    /// Events and the status can name the trace of a failed pass. `None` without tracing.
    pub trace_id: Option<TraceIdHook>,
}

/// See [`Identity::trace_id`].
pub type TraceIdHook = std::sync::Arc<dyn Fn(&tracing::Span) -> Option<String> + Send + Sync>;

impl Identity {
    /// An identity reporting as `{reporter_domain}/{controller}`, without tracing.
    pub fn new(reporter_domain: impl Into<String>) -> Self {
        Identity {
            reporter_domain: reporter_domain.into(),
            instance: None,
            trace_id: None,
        }
    }

    /// The trace id of `span`, if a hook is set.
    pub fn trace_id(&self, span: &tracing::Span) -> Option<String> {
        self.trace_id.as_ref().and_then(|hook| hook(span))
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("reporter_domain", &self.reporter_domain)
            .field("instance", &self.instance)
            .field("trace_id", &self.trace_id.is_some())
            .finish()
    }
}
