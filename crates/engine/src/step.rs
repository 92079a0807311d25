//! Steps and the runner that records them.
//!
//! A step is a plain async closure that observes the actual state, acts only where it differs
//! from the desired state, and says what it found. Steps are composed with `?`: the first step
//! that fails or has to wait stops the reconcile, because later steps build on it. The runner
//! refuses to run further steps after that, so a reconcile that swallowed the [`Halt`] still
//! cannot act on a precondition that does not hold.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::error::{ErrorCategory, StepError};
use super::flow::{StepFlow, Unfinished, Wait};
use super::metrics::Metrics;
use super::remote::Jobs;

/// The name of a step: one variant of an enum per controller, declared with [`steps!`], so
/// that a controller, its conditions and its tests share one spelling and a typo does not
/// compile.
///
/// [`steps!`]: crate::steps
pub trait StepName: Copy + Eq + std::hash::Hash + fmt::Debug + Send + Sync + 'static {
    /// The name as it appears in condition types, metrics, spans and Events (`PascalCase`).
    fn as_str(self) -> &'static str;
}

/// Declares the step enum of a controller and implements [`StepName`] for it; each variant's
/// name is its step name.
///
/// ```
/// reconcile_engine::steps! {
///     /// The steps of the greeting controller.
///     pub enum GreetingStep { SpecValid, ConfigMapReady }
/// }
/// use reconcile_engine::StepName;
/// assert_eq!(GreetingStep::ConfigMapReady.as_str(), "ConfigMapReady");
/// ```
#[macro_export]
macro_rules! steps {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vmeta])* $variant),+ }

        impl $crate::StepName for $name {
            fn as_str(self) -> &'static str {
                match self { $(Self::$variant => stringify!($variant)),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($crate::StepName::as_str(*self))
            }
        }
    };
}

/// What a step found, once it is done.
///
/// `T` carries what later steps need (an id, a looked-up object); most steps return `()`, for
/// which [`Outcome::unchanged`] and [`Outcome::changed`] are shorthands. A step that is not done
/// says why through its [`StepFlow`]'s error ([`Unfinished`]).
#[derive(Debug)]
pub enum Outcome<T = ()> {
    /// The world already matched; nothing was written.
    Unchanged(T),
    /// The step changed the world to match.
    Changed(T),
}

impl Outcome<()> {
    /// Nothing to do.
    pub fn unchanged() -> Self {
        Outcome::Unchanged(())
    }

    /// Something was changed.
    pub fn changed() -> Self {
        Outcome::Changed(())
    }
}

impl<T> Outcome<T> {
    /// The value to go on with, whether the step (or sub-step) changed something or not.
    pub fn into_value(self) -> T {
        match self {
            Outcome::Unchanged(value) | Outcome::Changed(value) => value,
        }
    }
}

/// What happened to one step, as recorded by the [`StepRunner`].
#[derive(Debug)]
pub enum StepState {
    /// Observed, nothing to do.
    Unchanged,
    /// Observed and changed.
    Changed,
    /// Not done yet.
    Waiting(Wait),
    /// Failed.
    Failed(StepError),
}

impl StepState {
    /// The metric label of this state.
    pub fn as_str(&self) -> &'static str {
        match self {
            StepState::Unchanged => "unchanged",
            StepState::Changed => "changed",
            StepState::Waiting(_) => "waiting",
            StepState::Failed(_) => "error",
        }
    }

    /// Whether the step completed (unchanged or changed).
    pub fn is_done(&self) -> bool {
        matches!(self, StepState::Unchanged | StepState::Changed)
    }
}

/// One executed step.
#[derive(Debug)]
pub struct StepRecord {
    /// Step name; also its condition `type`.
    pub name: &'static str,
    /// What happened.
    pub state: StepState,
    /// How long the step ran.
    pub duration: Duration,
}

/// The reconcile stopped at a step that failed or has to wait.
///
/// Only the [`StepRunner`] creates it, after recording why the step was [`Unfinished`];
/// returning it with `?` is how a reconcile says "stop here".
#[derive(Debug, PartialEq, Eq)]
pub struct Halt {
    step: &'static str,
}

impl Halt {
    /// The step that stopped the reconcile.
    pub fn step(&self) -> &'static str {
        self.step
    }
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reconcile stopped at step {}", self.step)
    }
}

impl std::error::Error for Halt {}

/// The overall result of a reconcile, derived from its step records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Summary<S> {
    /// Every step completed; `changed` when at least one changed something.
    Done {
        /// Whether any step changed the world.
        changed: bool,
    },
    /// A step is waiting.
    Waiting {
        /// The waiting step.
        step: S,
        /// Its wait.
        wait: Wait,
    },
    /// A step failed.
    Failed {
        /// The failed step.
        step: S,
        /// The error's category.
        category: ErrorCategory,
        /// Whether another system refused the request ([`StepError::is_rejection`]).
        rejected: bool,
    },
}

/// Runs the steps of one reconcile and records each one's outcome.
///
/// Each step gets a tracing span `step` (with `step`, `outcome` and `duration_ms`), a sample in
/// `ontap_operator_step_duration_seconds`, an increment of `ontap_operator_step_errors_total` on
/// failure, and — through its record — a status condition of the same name.
///
/// ```
/// use reconcile_engine::{Outcome, StepError, StepRunner, Summary};
///
/// reconcile_engine::steps! { enum Demo { Lookup, Create } }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mut steps = StepRunner::new("demo");
/// let reconcile = async {
///     let id = steps.step(Demo::Lookup, || async { Ok(Outcome::Unchanged(42)) }).await?;
///     steps.step(Demo::Create, || async move {
///         if id == 42 { Ok(Outcome::changed()) } else { Err(StepError::invalid("BadId", "no").into()) }
///     }).await?;
///     Ok::<_, reconcile_engine::Halt>(())
/// };
/// reconcile.await.unwrap();
/// assert_eq!(steps.summary(), Summary::Done { changed: true });
/// # }
/// ```
pub struct StepRunner<S> {
    controller: &'static str,
    metrics: Option<Arc<Metrics>>,
    records: Vec<StepRecord>,
    steps: Vec<S>,
    halted: Option<S>,
    jobs: Jobs,
}

impl<S: StepName> fmt::Debug for StepRunner<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepRunner")
            .field("controller", &self.controller)
            .field("records", &self.records)
            .field("halted", &self.halted)
            .finish_non_exhaustive()
    }
}

impl<S: StepName> StepRunner<S> {
    /// A runner that records metrics nowhere; for unit tests of a reconcile.
    pub fn new(controller: &'static str) -> Self {
        StepRunner {
            controller,
            metrics: None,
            records: Vec::new(),
            steps: Vec::new(),
            halted: None,
            jobs: Jobs::default(),
        }
    }

    /// The runner of a pass whose steps start their jobs through `jobs`.
    pub(crate) fn for_pass(mut self, jobs: Jobs) -> Self {
        self.jobs = jobs;
        self
    }

    /// What this pass's steps start jobs on its remote system through. Take it before a step:
    /// the step's closure cannot borrow the runner. A step's job slot is held until the step
    /// ends.
    pub fn jobs(&self) -> Jobs {
        self.jobs.clone()
    }

    /// A runner that records into `metrics`.
    pub fn with_metrics(controller: &'static str, metrics: Arc<Metrics>) -> Self {
        StepRunner {
            metrics: Some(metrics),
            ..StepRunner::new(controller)
        }
    }

    /// Runs step `name` unless an earlier step halted, records its outcome and returns its value.
    ///
    /// Returns `Err(Halt)` when the step was [`Unfinished`] (it failed or waits) — or when an
    /// earlier step was, in which case `f` is not called at all.
    pub async fn step<T, F, Fut>(&mut self, step: S, f: F) -> Result<T, Halt>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = StepFlow<Outcome<T>>>,
    {
        if let Some(halted) = self.halted {
            return Err(Halt {
                step: halted.as_str(),
            });
        }
        let name = step.as_str();
        let span = tracing::info_span!(
            "step",
            step = name,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty
        );
        let start = Instant::now();
        let result = f().instrument(span.clone()).await;
        self.jobs.step_ended();
        let duration = start.elapsed();
        let (state, value) = match result {
            Ok(Outcome::Unchanged(v)) => (StepState::Unchanged, Some(v)),
            Ok(Outcome::Changed(v)) => (StepState::Changed, Some(v)),
            Err(Unfinished::Waiting(w)) => (StepState::Waiting(w), None),
            Err(Unfinished::Failed(e)) => (StepState::Failed(e), None),
        };
        span.record("outcome", state.as_str());
        span.record("duration_ms", duration.as_secs_f64() * 1000.0);
        span.in_scope(|| match &state {
            StepState::Unchanged => tracing::debug!("step unchanged"),
            StepState::Changed => tracing::info!("step changed the world"),
            // Waiting is how a healthy object makes progress, and its reason and message are
            // already the step's condition: at INFO, 1,000 Kymas logged 160,000 such lines in
            // a four-minute run, burying the changes and failures.
            StepState::Waiting(w) => {
                tracing::debug!(reason = %w.reason, message = %w.message, after = ?w.after, "step waiting")
            }
            StepState::Failed(e) => {
                tracing::warn!(category = %e.category(), reason = e.reason(), error = %e, "step failed")
            }
        });
        if let Some(metrics) = &self.metrics {
            metrics.observe_step(self.controller, name, state.as_str(), duration);
            if let StepState::Failed(e) = &state {
                metrics
                    .step_errors_total(self.controller, name, e.category().as_str())
                    .inc();
            }
        }
        self.records.push(StepRecord {
            name,
            state,
            duration,
        });
        self.steps.push(step);
        match value {
            Some(v) => Ok(v),
            None => {
                self.halted = Some(step);
                Err(Halt { step: name })
            }
        }
    }

    /// The steps executed so far, in order.
    pub fn records(&self) -> &[StepRecord] {
        &self.records
    }

    /// The records, ending the runner.
    pub fn into_records(self) -> Vec<StepRecord> {
        self.records
    }

    /// The overall result.
    pub fn summary(&self) -> Summary<S> {
        for (record, step) in self.records.iter().zip(&self.steps) {
            match &record.state {
                StepState::Waiting(wait) => {
                    return Summary::Waiting {
                        step: *step,
                        wait: wait.clone(),
                    };
                }
                StepState::Failed(err) => {
                    return Summary::Failed {
                        step: *step,
                        category: err.category(),
                        rejected: err.is_rejection(),
                    };
                }
                StepState::Unchanged | StepState::Changed => {}
            }
        }
        Summary::Done {
            changed: self
                .records
                .iter()
                .any(|r| matches!(r.state, StepState::Changed)),
        }
    }

    /// The name of the controller this runner records for.
    pub fn controller(&self) -> &'static str {
        self.controller
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    crate::steps! {
        enum T { First, Second, Third, Wait, After, Bad }
    }

    async fn three_steps(
        steps: &mut StepRunner<T>,
        fail_second: bool,
        ran: &AtomicU32,
    ) -> Result<(), Halt> {
        steps
            .step(T::First, || async {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(Outcome::unchanged())
            })
            .await?;
        steps
            .step(T::Second, || async {
                ran.fetch_add(10, Ordering::SeqCst);
                if fail_second {
                    Err(StepError::transient_msg("Boom", "second failed").into())
                } else {
                    Ok(Outcome::changed())
                }
            })
            .await?;
        steps
            .step(T::Third, || async {
                ran.fetch_add(100, Ordering::SeqCst);
                Ok(Outcome::unchanged())
            })
            .await?;
        Ok(())
    }

    #[tokio::test]
    async fn runs_in_order_and_stops_at_first_failure() {
        let ran = AtomicU32::new(0);
        let mut steps = StepRunner::new("t");
        let halt = three_steps(&mut steps, true, &ran)
            .await
            .expect_err("halts");
        assert_eq!(halt.step(), "Second");
        assert_eq!(ran.load(Ordering::SeqCst), 11, "Third never ran");
        let names: Vec<_> = steps.records().iter().map(|r| r.name).collect();
        assert_eq!(names, ["First", "Second"]);
        assert_eq!(
            steps.summary(),
            Summary::Failed {
                step: T::Second,
                category: ErrorCategory::Transient,
                rejected: false,
            }
        );
    }

    #[tokio::test]
    async fn all_done_reports_changed() {
        let ran = AtomicU32::new(0);
        let mut steps = StepRunner::new("t");
        three_steps(&mut steps, false, &ran)
            .await
            .expect("completes");
        assert_eq!(ran.load(Ordering::SeqCst), 111);
        assert_eq!(steps.summary(), Summary::Done { changed: true });
    }

    #[tokio::test]
    async fn steps_after_a_halt_do_not_run_even_if_the_halt_is_ignored() {
        let mut steps = StepRunner::new("t");
        let _ = steps
            .step(T::Wait, || async {
                Err::<Outcome, _>(Wait::new("NotYet", "later", Duration::from_secs(5)).into())
            })
            .await;
        let mut called = false;
        let r = steps
            .step(T::After, || async {
                called = true;
                Ok(Outcome::unchanged())
            })
            .await;
        assert_eq!(r, Err(Halt { step: "Wait" }));
        assert!(!called);
        assert!(matches!(
            steps.summary(),
            Summary::Waiting { step: T::Wait, .. }
        ));
    }

    #[tokio::test]
    async fn records_metrics() {
        let metrics = Arc::new(Metrics::unregistered());
        let mut steps = StepRunner::with_metrics("ctl", metrics.clone());
        let _ = steps
            .step(T::Bad, || async {
                Err::<Outcome, _>(StepError::invalid("Nope", "bad spec").into())
            })
            .await;
        assert_eq!(metrics.step_errors_total("ctl", "Bad", "invalid").get(), 1);
    }
}
