//! Waits that travel through `?`.
//!
//! A step body returns `Result<Outcome<T>, StepError>`: `?` carries a failure out of it, but a
//! wait is an `Ok(Outcome::Waiting(..))`, so a body that asks a helper which may have to wait
//! had to spell it out at every call:
//!
//! ```text
//! let svm = match self.find_svm(..).await? {
//!     Outcome::Unchanged(svm) | Outcome::Changed(svm) => svm,
//!     Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
//! };
//! ```
//!
//! A [`StepFlow<T>`] is a `Result` whose error, a [`Stop`], is either a wait or a failure; `?`
//! carries both out of a body that returns a `StepFlow`, and converts every error that converts
//! into a [`StepError`] (a `kube::Error`, say) on the way. [`StepRunner::step_flow`] runs such a
//! body: a [`Stop::Waiting`] becomes the step's [`Outcome::Waiting`], a [`Stop::Failed`] its
//! error, exactly as if the body had returned them the long way.
//!
//! ```
//! use std::time::Duration;
//!
//! use reconcile_engine::{Outcome, StepError, StepFlow, StepRunner, Summary, Wait};
//!
//! reconcile_engine::steps! { enum Demo { SvmReady, AccountReady } }
//!
//! /// A lookup that may have to wait: `?` passes the wait (or a failure) on.
//! async fn find_svm(state: Option<&str>) -> StepFlow<&str> {
//!     match state {
//!         Some("running") => Ok("svm-1"),
//!         Some(other) => Err(StepError::invalid("SvmBroken", other).into()),
//!         None => Err(Wait {
//!             reason: "SvmStarting".into(),
//!             message: "ONTAP is still creating the SVM".into(),
//!             after: Duration::from_secs(10),
//!         }
//!         .into()),
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut steps = StepRunner::new("demo");
//! let reconcile = async {
//!     let svm = steps
//!         .step_flow(Demo::SvmReady, || async {
//!             let svm = find_svm(None).await?; // waits: the step ends here, waiting
//!             Ok(Outcome::Unchanged(svm))
//!         })
//!         .await?;
//!     steps
//!         .step(Demo::AccountReady, || async move { Ok(Outcome::Unchanged(svm)) })
//!         .await?;
//!     Ok::<_, reconcile_engine::Halt>(())
//! };
//! assert_eq!(reconcile.await.unwrap_err().step(), "SvmReady");
//! let Summary::Waiting { step, wait } = steps.summary() else { panic!("not waiting") };
//! assert_eq!((step, wait.reason.as_ref()), (Demo::SvmReady, "SvmStarting"));
//! assert_eq!(steps.records().len(), 1, "AccountReady never ran");
//! # }
//! ```
//!
//! A helper that returns an [`Outcome`] (a sub-step with a changed/unchanged answer of its own)
//! joins in with [`Outcome::into_flow`]: `let svm = existing_svm(..).await?.into_flow()?;`. A
//! body that keeps returning `Result<Outcome<T>, StepError>` for [`StepRunner::step`] can still
//! be written with `?` inside a helper that returns a `StepFlow`, and turn it back with
//! [`settle`].

use std::future::Future;

use crate::error::StepError;
use crate::step::{Halt, Outcome, StepName, StepRunner, Wait};

/// Why a step body stops before its end: it has to wait, or it failed. The `Err` of a
/// [`StepFlow`]; `?` makes one from a [`Wait`] or from anything that converts into a
/// [`StepError`].
///
/// Not to be confused with [`Halt`], which the [`StepRunner`] returns once it has *recorded*
/// that a step stopped, and which ends the whole reconcile.
#[derive(Debug)]
pub enum Stop {
    /// The step cannot complete yet: it reports [`Outcome::Waiting`] with this wait.
    Waiting(Wait),
    /// The step failed with this error.
    Failed(StepError),
}

/// What a step body, or a helper it calls, goes on with (`Ok`), or why the step stops here
/// (`Err`: a wait or a failure). See the [module documentation](self).
pub type StepFlow<T> = Result<T, Stop>;

impl From<Wait> for Stop {
    fn from(wait: Wait) -> Self {
        Stop::Waiting(wait)
    }
}

/// Every error `?` converts into a [`StepError`] stops a flow as a failure, classified the same
/// way (a `kube::Error` as [`StepError::from_kube`] does).
impl<E: Into<StepError>> From<E> for Stop {
    fn from(err: E) -> Self {
        Stop::Failed(err.into())
    }
}

impl Stop {
    /// The step's result when it stops here: [`Outcome::Waiting`] for a wait, the error for a
    /// failure.
    pub fn into_result<T>(self) -> Result<Outcome<T>, StepError> {
        match self {
            Stop::Waiting(wait) => Ok(Outcome::Waiting(wait)),
            Stop::Failed(err) => Err(err),
        }
    }
}

/// A step body's [`StepFlow`] as the result [`StepRunner::step`] takes: the outcome as it is,
/// or the [`Stop`] as its [`into_result`](Stop::into_result).
///
/// ```
/// use reconcile_engine::flow::settle;
/// use reconcile_engine::{Outcome, Stop, StepFlow, Wait};
///
/// let wait = Wait { reason: "NotYet".into(), message: "later".into(), after: Default::default() };
/// let flow: StepFlow<Outcome<u8>> = Err(Stop::Waiting(wait.clone()));
/// assert!(matches!(settle(flow), Ok(Outcome::Waiting(w)) if w == wait));
/// assert!(matches!(settle(Ok(Outcome::Changed(1))), Ok(Outcome::Changed(1))));
/// ```
pub fn settle<T>(flow: StepFlow<Outcome<T>>) -> Result<Outcome<T>, StepError> {
    flow.or_else(Stop::into_result)
}

impl<T> Outcome<T> {
    /// The value to go on with — whether the sub-step changed something or not — or its wait
    /// as a [`Stop`], so that a step body can take a sub-step's outcome with `?`.
    pub fn into_flow(self) -> StepFlow<T> {
        match self {
            Outcome::Unchanged(value) | Outcome::Changed(value) => Ok(value),
            Outcome::Waiting(wait) => Err(Stop::Waiting(wait)),
        }
    }
}

impl<S: StepName> StepRunner<S> {
    /// Runs step `name` like [`step`](Self::step), for a body that returns a [`StepFlow`]: a
    /// wait it passes on with `?` makes the step wait, a failure makes it fail, and an
    /// `Ok(outcome)` is recorded as it is (an `Ok(Outcome::Waiting(..))` waits too).
    pub async fn step_flow<T, F, Fut>(&mut self, step: S, f: F) -> Result<T, Halt>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = StepFlow<Outcome<T>>>,
    {
        self.step(step, move || async move { settle(f().await) })
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::{ErrorCategory, api_error};
    use crate::step::{StepState, Summary};

    crate::steps! {
        enum T { Lookup, Use, After }
    }

    fn wait(reason: &'static str) -> Wait {
        Wait {
            reason: reason.into(),
            message: format!("waiting: {reason}"),
            after: Duration::from_secs(7),
        }
    }

    /// A helper that may wait, fail or answer, as the operator's lookups do.
    async fn lookup(answer: Result<u32, Stop>) -> StepFlow<u32> {
        tokio::task::yield_now().await;
        answer
    }

    #[tokio::test]
    async fn a_wait_passed_on_with_question_mark_makes_the_step_wait_and_halts() {
        let mut steps = StepRunner::new("t");
        let mut after_ran = false;
        let reconcile = async {
            let id = steps
                .step_flow(T::Lookup, || async {
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
            .step_flow(T::Lookup, || async {
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
            .step_flow(T::Lookup, || async {
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
            .step_flow(T::Lookup, || async {
                let id = lookup(Ok(42)).await?;
                Ok(Outcome::Changed(id))
            })
            .await
            .expect("completes");
        assert_eq!(id, 42);
        // The long way still works inside a flow: an Ok(Outcome::Waiting) waits.
        let _ = steps
            .step_flow(T::Use, || async {
                Ok::<Outcome, Stop>(Outcome::Waiting(wait("Explicit")))
            })
            .await;
        let states: Vec<_> = steps.records().iter().map(|r| r.state.as_str()).collect();
        assert_eq!(states, ["changed", "waiting"]);
    }

    #[tokio::test]
    async fn a_sub_steps_outcome_joins_with_into_flow() {
        async fn sub_step(waits: bool) -> Result<Outcome<u32>, StepError> {
            Ok(if waits {
                Outcome::Waiting(wait("SubStepWaits"))
            } else {
                Outcome::Changed(7)
            })
        }
        async fn body(waits: bool) -> StepFlow<Outcome<u32>> {
            let value = sub_step(waits).await?.into_flow()?;
            Ok(Outcome::Unchanged(value + 1))
        }
        assert!(matches!(
            settle(body(false).await),
            Ok(Outcome::Unchanged(8))
        ));
        assert!(matches!(
            settle(body(true).await),
            Ok(Outcome::Waiting(w)) if w.reason == "SubStepWaits"
        ));
    }

    #[tokio::test]
    async fn a_runner_that_halted_does_not_call_a_flow_body() {
        let mut steps = StepRunner::new("t");
        let _ = steps
            .step_flow(T::Lookup, || async {
                Err::<Outcome, _>(Stop::from(wait("First")))
            })
            .await;
        let mut called = false;
        let halt = steps
            .step_flow(T::Use, || async {
                called = true;
                Ok(Outcome::unchanged())
            })
            .await
            .expect_err("halted before");
        assert_eq!(halt.step(), "Lookup");
        assert!(!called);
    }
}
