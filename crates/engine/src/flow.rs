//! How a step says it goes on, waits or fails; told on [`StepFlow`], which the crate exports.

use std::borrow::Cow;
use std::time::Duration;

use crate::error::StepError;

/// Why a step body ends before it is done: it has to wait, or it failed. The `Err` of a
/// [`StepFlow`]; `?` makes one from a [`Wait`] or from anything that converts into a
/// [`StepError`].
///
/// Once the [`StepRunner`](crate::StepRunner) has recorded it, the runner returns a
/// [`Halt`](crate::Halt), which ends the whole reconcile.
#[derive(Debug)]
pub enum Unfinished {
    /// The step cannot complete yet; the object is looked at again after [`Wait::after`].
    Waiting(Wait),
    /// The step failed with this error.
    Failed(StepError),
}

/// Why and for how long a step waits: the error of a [`StepFlow`] whose step cannot complete
/// yet (something outside our control is still converging). Later steps do not run, and the
/// object is looked at again after `after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Condition reason, `PascalCase`.
    pub reason: Cow<'static, str>,
    /// Human-readable description; keep it stable between loops.
    pub message: String,
    /// When to look again.
    pub after: Duration,
}

impl Wait {
    /// A wait for `reason` (a `PascalCase` identifier), looked at again after `after`.
    pub fn new(
        reason: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        after: Duration,
    ) -> Self {
        Wait {
            reason: reason.into(),
            message: message.into(),
            after,
        }
    }
}

/// What a step body, or a helper it calls, goes on with (`Ok`), or why the step is unfinished
/// (`Err`: a wait or a failure).
///
/// The one way a step says "not done": a [`StepFlow`] whose error, [`Unfinished`], is a wait or
/// a failure, and which `?` carries out of a step body and of every helper it calls.
///
/// A step body returns `StepFlow<Outcome<T>>`: what it found ([`Outcome::Unchanged`](crate::Outcome::Unchanged) or
/// [`Outcome::Changed`](crate::Outcome::Changed), with what later steps need), or why the step is unfinished. A helper
/// that may have to wait returns a `StepFlow<T>` too, so its wait leaves the step with `?` as a
/// failure does, and a body never spells out "if the helper waits, wait":
///
/// ```
/// use std::time::Duration;
///
/// use reconcile_engine::{Outcome, StepError, StepFlow, StepRunner, Summary, Wait};
///
/// reconcile_engine::steps! { enum Demo { SvmReady, AccountReady } }
///
/// /// A lookup that may have to wait: `?` passes the wait (or a failure) on.
/// async fn find_svm(state: Option<&str>) -> StepFlow<&str> {
///     match state {
///         Some("running") => Ok("svm-1"),
///         Some(other) => Err(StepError::invalid("SvmBroken", other).into()),
///         None => Err(Wait::new(
///             "SvmStarting",
///             "ONTAP is still creating the SVM",
///             Duration::from_secs(10),
///         )
///         .into()),
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mut steps = StepRunner::new("demo");
/// let reconcile = async {
///     let svm = steps
///         .step(Demo::SvmReady, || async {
///             let svm = find_svm(None).await?; // waits: the step ends here, waiting
///             Ok(Outcome::Unchanged(svm))
///         })
///         .await?;
///     steps
///         .step(Demo::AccountReady, || async move { Ok(Outcome::Unchanged(svm)) })
///         .await?;
///     Ok::<_, reconcile_engine::Halt>(())
/// };
/// assert_eq!(reconcile.await.unwrap_err().step(), "SvmReady");
/// let Summary::Waiting { step, wait } = steps.summary() else { panic!("not waiting") };
/// assert_eq!((step, wait.reason.as_ref()), (Demo::SvmReady, "SvmStarting"));
/// assert_eq!(steps.records().len(), 1, "AccountReady never ran");
/// # }
/// ```
///
/// A helper with a changed/unchanged answer of its own (a sub-step) returns a
/// `StepFlow<Outcome<T>>`; the body takes its value with
/// `let svm = existing_svm(..).await?.into_value();`.
pub type StepFlow<T> = Result<T, Unfinished>;

impl From<Wait> for Unfinished {
    fn from(wait: Wait) -> Self {
        Unfinished::Waiting(wait)
    }
}

/// Every error `?` converts into a [`StepError`] ends a step as a failure, classified the same
/// way (a `kube::Error` as [`StepError::from_kube`] does).
impl<E: Into<StepError>> From<E> for Unfinished {
    fn from(err: E) -> Self {
        Unfinished::Failed(err.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorCategory, api_error};
    use crate::step::{Outcome, StepRunner, StepState, Summary};

    crate::steps! {
        enum T { Lookup, Use, After }
    }

    fn wait(reason: &'static str) -> Wait {
        Wait::new(reason, format!("waiting: {reason}"), Duration::from_secs(7))
    }

    /// A helper that may wait, fail or answer, as the operator's lookups do.
    async fn lookup(answer: StepFlow<u32>) -> StepFlow<u32> {
        tokio::task::yield_now().await;
        answer
    }

    #[tokio::test]
    async fn a_wait_passed_on_with_question_mark_makes_the_step_wait_and_halts() {
        let mut steps = StepRunner::new("t");
        let mut after_ran = false;
        let reconcile = async {
            let id = steps
                .step(T::Lookup, || async {
                    let id = lookup(Err(wait("NotYet").into())).await?;
                    Ok(Outcome::Changed(id))
                })
                .await?;
            steps
                .step(T::After, || async {
                    after_ran = true;
                    Ok(Outcome::Unchanged(id))
                })
                .await
        };
        let halt = reconcile.await.expect_err("halts");
        assert_eq!(halt.step(), "Lookup");
        assert!(!after_ran);
        assert_eq!(
            steps.summary(),
            Summary::Waiting {
                step: T::Lookup,
                wait: wait("NotYet"),
            }
        );
    }

    #[tokio::test]
    async fn failures_pass_through_classified_as_a_step_would() {
        let mut steps = StepRunner::new("t");
        let _ = steps
            .step(T::Lookup, || async {
                // A kube::Error converts as StepError::from_kube: 409 is a conflict.
                let id: u32 = Err(api_error(409))?;
                Ok(Outcome::Unchanged(id))
            })
            .await;
        assert_eq!(
            steps.summary(),
            Summary::Failed {
                step: T::Lookup,
                category: ErrorCategory::Conflict,
                rejected: false,
            }
        );

        let mut steps = StepRunner::new("t");
        let _ = steps
            .step(T::Lookup, || async {
                let id = lookup(Err(StepError::invalid("Bad", "no").into())).await?;
                Ok(Outcome::Unchanged(id))
            })
            .await;
        let StepState::Failed(err) = &steps.records()[0].state else {
            panic!("not failed: {:?}", steps.records());
        };
        assert_eq!(
            (err.category(), err.reason()),
            (ErrorCategory::Invalid, "Bad")
        );
    }

    #[tokio::test]
    async fn values_flow_on_and_outcomes_are_recorded_as_returned() {
        let mut steps = StepRunner::new("t");
        let id = steps
            .step(T::Lookup, || async {
                let id = lookup(Ok(42)).await?;
                Ok(Outcome::Changed(id))
            })
            .await
            .expect("completes");
        assert_eq!(id, 42);
        let _ = steps
            .step(T::Use, || async {
                Err::<Outcome, _>(Unfinished::from(wait("Explicit")))
            })
            .await;
        let states: Vec<_> = steps.records().iter().map(|r| r.state.as_str()).collect();
        assert_eq!(states, ["changed", "waiting"]);
    }

    #[tokio::test]
    async fn a_sub_steps_value_is_taken_whether_it_changed_something_or_not() {
        async fn sub_step(waits: bool) -> StepFlow<Outcome<u32>> {
            if waits {
                return Err(wait("SubStepWaits").into());
            }
            Ok(Outcome::Changed(7))
        }
        async fn body(waits: bool) -> StepFlow<Outcome<u32>> {
            let value = sub_step(waits).await?.into_value();
            Ok(Outcome::Unchanged(value + 1))
        }
        assert!(matches!(body(false).await, Ok(Outcome::Unchanged(8))));
        assert!(matches!(
            body(true).await,
            Err(Unfinished::Waiting(w)) if w.reason == "SubStepWaits"
        ));
    }

    #[tokio::test]
    async fn a_runner_that_halted_does_not_call_a_body() {
        let mut steps = StepRunner::new("t");
        let _ = steps
            .step(T::Lookup, || async {
                Err::<Outcome, _>(Unfinished::from(wait("First")))
            })
            .await;
        let mut called = false;
        let halt = steps
            .step(T::Use, || async {
                called = true;
                Ok(Outcome::unchanged())
            })
            .await
            .expect_err("halted before");
        assert_eq!(halt.step(), "Lookup");
        assert!(!called);
    }
}
