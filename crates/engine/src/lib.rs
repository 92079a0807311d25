//! A reconcile engine for Kubernetes controllers on kube-rs.
//!
//! A reconcile is an ordered list of named **steps**. Each step observes the actual state, acts
//! only where it differs from the desired state, and is safe to run again at any time — also
//! after a crash half-way. A step body returns a [`StepFlow`]: what it found,
//! [`Outcome::Unchanged`] or [`Outcome::Changed`], or why it is [`Unfinished`] — it has to
//! [`Wait`], or it fails with a [`StepError`] that is *transient* (retry with backoff), *invalid*
//! (the spec is wrong: surface it and wait for a change) or a *conflict* (retry soon, backing off
//! while it persists). Step names are typed: an enum per controller ([`steps!`]). Steps are plain
//! async closures composed with `?`; the first step that fails or waits ends the reconcile.
//! Helpers a step calls return a [`StepFlow`] too, so `?` carries their waits out of the step as
//! well as their failures ([`StepFlow`]).
//!
//! A step that starts a job on a remote system (an ONTAP cluster, say) sends it through the
//! pass's [`Jobs`]; the controller names each object's [`RemoteSystem`] with its limits — passes
//! and jobs at once — and the engine keeps to them, without holding workers while passes wait
//! ([`RemoteSystem`]).
//!
//! Around the steps the engine provides what kube-runtime leaves out and operators at scale rely
//! on in controller-runtime:
//!
//! - **Lifecycle** ([`Reconciler`], [`Lifecycle`]): the finalizer is added before the first
//!   `reconcile`, `cleanup` runs on deletion, and the finalizer goes only after `cleanup`
//!   completed — like Gardener's actuators or kube-runtime's `finalizer`.
//! - **A manager** ([`Manager`], [`Registration`]): one shared cache per kind, a controller
//!   registered with one call, readiness per cache, liveness per controller, and the RBAC rules
//!   and CRDs that follow from the registrations.
//! - **Status discipline** ([`conditions`], [`ConditionedStatus`], [`Halted`]): one condition per step plus `Ready`,
//!   `observedGeneration`, `lastTransitionTime` moved only when `status` moves, and a merge patch
//!   only when it differs from what the API server holds — a reconcile that finds nothing to do
//!   writes nothing. Messages are bounded ([`text`]); a failed write never leaves `Ready=True`
//!   standing; `status.halted` says where the last pass stopped, after how many attempts, and in
//!   which trace (printer columns for `kubectl get -o wide`).
//! - **Events** on a step's first failure, on a new failure reason and on recovery; not per loop.
//! - **Requeue policy**: per-object exponential backoff (1 s → 1000 s, reset on success) and a
//!   token bucket on reconcile starts (1,000/s, burst 2,000), the later of the two winning — like
//!   controller-runtime's `MaxOf` limiter — plus a jittered periodic re-verification
//!   (`--sync-period`, 10 min) that finds drift without events.
//! - **Bounded concurrency** per controller (`--max-concurrent-reconciles`, 50); an object is
//!   never reconciled twice at once.
//! - **Client QPS/burst** ([`build_client`]) as a tower layer on the kube client.
//! - **Lean shared caches** ([`SharedCache`]) without managedFields and the `kubectl apply`
//!   annotation, with an owner index for parent/child controllers.
//! - **Metrics** ([`Metrics`]) under controller-runtime's names.
//!
//! The engine knows nothing of the program embedding it: the Events' reporter, the prefix of
//! its own metrics and the trace-id hook are injected ([`Identity`], [`Metrics::new`]).
//!
//! # A controller on the engine
//!
//! A `Greeting` owns a ConfigMap holding its text. The reconcile validates the spec, then makes
//! sure the ConfigMap exists with the right content — by looking at the ConfigMap, every time.
//! Its cleanup deletes the ConfigMap itself (no garbage collector needed), and the engine keeps
//! the finalizer on the object until that succeeded.
//!
//! ```no_run
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{ObjectMeta, PostParams};
//! use kube::runtime::watcher;
//! use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
//! use reconcile_engine::{
//!     Halt, Identity, Manager, ManagerConfig, Metrics, NoProbes, Outcome, Reconciler,
//!     Registration, StepError, StepRunner,
//! };
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.dev", version = "v1", kind = "Greeting", namespaced,
//!        status = "GreetingStatus")]
//! pub struct GreetingSpec {
//!     pub text: String,
//! }
//!
//! // The status: its own fields, then the engine's `conditions`, `observedGeneration` and
//! // `halted`, declared by the macro.
//! reconcile_engine::engine_status! {
//!     #[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
//!     #[serde(rename_all = "camelCase")]
//!     pub struct GreetingStatus {
//!         #[serde(default, skip_serializing_if = "Option::is_none")]
//!         pub config_map: Option<String>,
//!     }
//! }
//!
//! reconcile_engine::steps! {
//!     /// The steps of the greeting controller; its tests use the same names.
//!     pub enum GreetingStep { SpecValid, ConfigMapReady, ConfigMapDeleted }
//! }
//!
//! struct Greeter {
//!     client: Client,
//! }
//!
//! impl Reconciler for Greeter {
//!     type Resource = Greeting;
//!     type Step = GreetingStep;
//!     const FINALIZER: Option<&'static str> = Some("example.dev/greeting");
//!
//!     async fn reconcile(
//!         &self,
//!         greeting: &Greeting,
//!         status: &mut GreetingStatus,
//!         steps: &mut StepRunner<GreetingStep>,
//!     ) -> Result<(), Halt> {
//!         steps
//!             .step(GreetingStep::SpecValid, || async {
//!                 if greeting.spec.text.is_empty() {
//!                     let empty = StepError::invalid("EmptyText", "spec.text must not be empty");
//!                     return Err(empty.into());
//!                 }
//!                 Ok(Outcome::unchanged())
//!             })
//!             .await?;
//!
//!         let name = format!("{}-greeting", greeting.name_any());
//!         let ns = greeting.namespace().unwrap_or_default();
//!         let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &ns);
//!         let data = BTreeMap::from([("text".to_owned(), greeting.spec.text.clone())]);
//!         steps
//!             .step(GreetingStep::ConfigMapReady, || async {
//!                 // Look at the world; an earlier run's success proves nothing now.
//!                 let current = api.get_opt(&name).await?;
//!                 if current.as_ref().and_then(|cm| cm.data.as_ref()) == Some(&data) {
//!                     return Ok(Outcome::unchanged());
//!                 }
//!                 let mut cm = current.unwrap_or_default();
//!                 cm.metadata = ObjectMeta {
//!                     name: Some(name.clone()),
//!                     owner_references: greeting.controller_owner_ref(&()).map(|o| vec![o]),
//!                     ..cm.metadata
//!                 };
//!                 cm.data = Some(data.clone());
//!                 if cm.metadata.resource_version.is_some() {
//!                     api.replace(&name, &PostParams::default(), &cm).await?;
//!                 } else {
//!                     api.create(&PostParams::default(), &cm).await?;
//!                 }
//!                 Ok(Outcome::changed())
//!             })
//!             .await?;
//!         status.config_map = Some(name);
//!         Ok(())
//!     }
//!
//!     async fn cleanup(
//!         &self,
//!         greeting: &Greeting,
//!         _status: &mut GreetingStatus,
//!         steps: &mut StepRunner<GreetingStep>,
//!     ) -> Result<(), Halt> {
//!         let ns = greeting.namespace().unwrap_or_default();
//!         let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &ns);
//!         let name = format!("{}-greeting", greeting.name_any());
//!         steps
//!             .step(GreetingStep::ConfigMapDeleted, || async {
//!                 match api.delete(&name, &Default::default()).await {
//!                     Ok(_) => Ok(Outcome::changed()),
//!                     Err(kube::Error::Api(s)) if s.code == 404 => Ok(Outcome::unchanged()),
//!                     Err(e) => Err(e.into()),
//!                 }
//!             })
//!             .await?;
//!         Ok(())
//!     }
//! }
//!
//! # async fn run() -> anyhow::Result<()> {
//! let mut registry = prometheus_client::registry::Registry::default();
//! let metrics = Metrics::new(&mut registry, "example");
//! let client = reconcile_engine::build_client(kube::Config::infer().await?, Default::default(),
//!                                             metrics.clone())?;
//! let config = ManagerConfig {
//!     namespace: None,
//!     engine: Default::default(),
//!     identity: Identity::new("example.dev"),
//!     stuck_reconcile_after: std::time::Duration::from_secs(600),
//! };
//! let mut manager = Manager::new(client.clone(), config, metrics, Arc::new(NoProbes));
//! // The one line a controller costs:
//! manager.register(
//!     Registration::new("greeting", Greeter { client })
//!         .crd(Greeting::crd())
//!         .owns::<ConfigMap>(watcher::Config::default(), &["create", "update", "delete"]),
//! )?;
//! println!("{:?}", manager.rbac_rules());
//! manager.run(async { let _ = tokio::signal::ctrl_c().await; }).await;
//! # Ok(())
//! # }
//! ```
//!
//! The reconcile never writes the status itself: it sets `status.config_map`, the engine adds
//! the conditions `Ready`, `SpecValid` and `ConfigMapReady` and `halted`, and writes only what
//! differs from what the API server holds.

#![deny(missing_docs)]

// The modules are the engine's own; a controller and the program embedding it see the names
// re-exported below and the namespaces that follow, so a change inside the engine breaks no
// caller that these names do not reach.
mod cache;
mod client;
mod config;
mod controller;
mod error;
mod events;
mod flow;
mod inflight;
mod lifecycle;
mod manager;
mod manifest;
mod metrics;
mod object;
mod own_writes;
mod pass;
mod queue;
mod reconciler;
mod remote;
mod requeue;
mod sparse;
mod status;
mod step;
mod worker;

// Namespaces whose names read best qualified (`conditions::READY`, `names::DNS_LABEL`).
pub mod conditions;
pub mod feature;
pub mod health;
pub mod names;
pub mod reasons;
pub mod text;

// Writing a controller: its steps, what they return, and what they may use.
pub use error::{BoxError, ErrorCategory, StepError};
pub use flow::{StepFlow, Unfinished, Wait};
pub use object::{EngineResource, Object, StatusOf};
pub use own_writes::{OwnWrites, PendingWrite};
pub use reconciler::{Lifecycle, Reconciler};
pub use remote::{Jobs, RemoteSystem};
pub use sparse::Sparse;
pub use status::{ConditionedStatus, Halted};
pub use step::{Halt, Outcome, StepName, StepRecord, StepRunner, StepState, Summary};

// Registering it, and running the manager in a program.
pub use cache::{Change, SharedCache};
pub use client::{ClientLimits, ConfigLoadError, build_client, load_config};
pub use config::{EngineConfig, Identity, TraceIdHook};
pub use manager::{Check, Manager, ManagerConfig, ManagerError, NoProbes, Probes, Registration};
pub use manifest::{merge_rules, resource_rule};
pub use metrics::Metrics;

// For tools that act on an engine's objects from outside it (load generators, probes): the
// finalizer and status writes as the engine does them.
pub use lifecycle::{add_finalizer, remove_finalizer};
pub use status::{patch_status, status_patch};
