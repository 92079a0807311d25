//! What every pass of one controller shares, and what one pass works on.

use std::sync::Arc;

use kube::core::object::HasStatus;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource};

use super::memory::Memory;
use crate::cache::SharedCache;
use crate::config::{EngineConfig, Identity};
use crate::inflight::InFlight;
use crate::metrics::Metrics;
use crate::object::StatusOf;
use crate::reconciler::Reconciler;
use crate::remote::RemoteSystems;

/// What every pass of one running controller shares.
pub(crate) struct ControllerState<R: Reconciler> {
    pub(crate) name: &'static str,
    pub(crate) reconciler: Arc<R>,
    pub(crate) cache: SharedCache<R::Resource>,
    pub(crate) client: Client,
    pub(crate) config: EngineConfig,
    pub(crate) identity: Identity,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) recorder: Recorder,
    pub(crate) in_flight: InFlight,
    pub(crate) memory: Memory<StatusOf<R::Resource>>,
    /// The remote systems the reconciler's objects name, with their slots.
    pub(crate) remote_systems: RemoteSystems,
}

/// What a pass works on besides the status it computes.
pub(super) struct Pass<'a, K: Resource<DynamicType = ()> + HasStatus> {
    pub(super) obj_ref: &'a ObjectRef<K>,
    pub(super) obj: &'a K,
    /// The status the API server holds as far as this controller knows, at `resource_version`:
    /// the status write is a diff against it, and applies only to the object at that version.
    pub(super) before: &'a K::Status,
    /// The API server holds no status for the object yet (`before` is the default): the write
    /// sends the whole status rather than a diff against the default.
    pub(super) no_status_yet: bool,
    pub(super) resource_version: Option<String>,
    pub(super) trace_id: Option<String>,
}
