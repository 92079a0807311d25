//! What a controller does for one object: the [`Reconciler`] a controller implements, and the
//! [`Lifecycle`] stage a pass runs in.

use std::future::Future;

use super::object::{EngineResource, StatusOf};
use super::remote::RemoteSystem;
use super::step::{Halt, StepName, StepRunner, Summary};

/// Where an object is in its life when a pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// The object lives: `reconcile` ran.
    Live,
    /// The object is being deleted and still carries the controller's finalizer: `cleanup` ran.
    Deleting,
}

/// What a controller does for one object. See the [crate documentation](crate) for an example.
///
/// The engine owns the lifecycle: when [`FINALIZER`](Reconciler::FINALIZER) is set it adds the
/// finalizer before the first `reconcile`, calls `cleanup` once the object is being deleted, and
/// removes the finalizer only after `cleanup` completed every step. Both run their steps through
/// `steps` and may set the non-condition fields of `status` (which starts as a copy of the
/// object's current status). The engine then computes the conditions, writes the status if — and
/// only if — it differs from what the API server holds, emits Events and schedules the next look.
/// Both must be safe to run at any time, also after a crash half-way: every step observes before
/// it acts.
pub trait Reconciler: Send + Sync + 'static {
    /// The kind reconciled.
    type Resource: EngineResource;
    /// The names of this controller's steps (declare them with [`steps!`](crate::steps)).
    type Step: StepName;

    /// The finalizer that keeps objects until `cleanup` succeeded; `None` when deleting an object
    /// needs no work of this controller.
    const FINALIZER: Option<&'static str> = None;

    /// Whether the engine writes the status: the conditions (one per step and `Ready`),
    /// `observedGeneration` and `halted`, as a diff after each pass. `false` for kinds whose
    /// status belongs to a contract of someone else's (Gardener's `Extension`, whose
    /// `lastOperation`/`lastError`/conditions gardenlet reads): the reconciler then writes the
    /// status itself, the engine never touches it, and only Events and metrics come from the
    /// step records. The status type still implements
    /// [`ConditionedStatus`](crate::ConditionedStatus); its setters are never called.
    const MANAGES_STATUS: bool = true;

    /// Condition types the reconciler sets itself in `status.conditions` (build them with
    /// [`transition`](crate::conditions::transition) so their transition time is kept): facts
    /// that are not a step's outcome and must not hold `Ready` back, such as a warning about an
    /// insecure setting. The engine keeps them beside the step conditions.
    const OWN_CONDITIONS: &'static [&'static str] = &[];

    /// Whether this controller acts on `obj` in this pass at all, like controller-runtime's
    /// predicates: when `false` the engine neither adds nor removes the finalizer, nor calls
    /// `reconcile` or `cleanup`, nor writes anything; the object's next change asks again.
    /// Decided from the object and caches only (no requests). Default: every object.
    fn admits(&self, obj: &Self::Resource) -> bool {
        let _ = obj;
        true
    }

    /// The remote system `obj`'s passes talk to, with what it lets the controller run on it at
    /// once; the engine keeps to that ([`Jobs`](crate::Jobs)). `None` (the default): the
    /// passes talk to the API server only. Decided from the object and caches only (no
    /// requests).
    fn remote_system(&self, obj: &Self::Resource) -> Option<RemoteSystem> {
        let _ = obj;
        None
    }

    /// Where this reconciler records its own writes of owned children
    /// ([`OwnWrites`](crate::OwnWrites)), so that their events do not reconcile the owner a
    /// second time. Default: none recorded, every child event reconciles its owner.
    fn own_writes(&self) -> Option<crate::OwnWrites> {
        None
    }

    /// Makes the world match `obj`. Return the [`Halt`] of a failed or waiting step with `?`.
    fn reconcile(
        &self,
        obj: &Self::Resource,
        status: &mut StatusOf<Self::Resource>,
        steps: &mut StepRunner<Self::Step>,
    ) -> impl Future<Output = Result<(), Halt>> + Send;

    /// Removes what `reconcile` made, before the finalizer goes. Only called when
    /// [`FINALIZER`](Reconciler::FINALIZER) is set.
    fn cleanup(
        &self,
        obj: &Self::Resource,
        status: &mut StatusOf<Self::Resource>,
        steps: &mut StepRunner<Self::Step>,
    ) -> impl Future<Output = Result<(), Halt>> + Send {
        let _ = (obj, status, steps);
        async { Ok(()) }
    }

    /// Drops whatever the reconciler keeps about an object that no longer exists (a readiness
    /// check, a connection). Called for every deletion the cache sees — also for objects deleted
    /// while no watch ran, found when the cache lists again.
    fn forget(&self, obj: &Self::Resource) {
        let _ = obj;
    }

    /// Sets what the status derives from the pass's result (a `phase`, for instance). Called
    /// after every `reconcile` and `cleanup`; the default sets nothing.
    fn conclude(
        &self,
        status: &mut StatusOf<Self::Resource>,
        lifecycle: Lifecycle,
        summary: &Summary<Self::Step>,
    ) {
        let _ = (status, lifecycle, summary);
    }
}
