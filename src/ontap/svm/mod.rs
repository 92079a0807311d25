//! The StorageVirtualMachine controller. [`reconcile`] holds the Reconciler and runs the steps,
//! each in a module of its own (`cluster`, `svm`, `lifs`, `routes`, `account`, `secret`,
//! `delete`); what they all share, the reconciler's state, is declared here above them, so that
//! the steps and `reconcile` import it rather than each other.
//! [`plan`] holds what an `Owned` object wants in ONTAP and what differs from it there (the SVM,
//! LIF and route plans): the `svm`, `lifs` and `routes` steps act on it, and `steady` confirms
//! from it, so a property of the SVM or a LIF is compared in `plan` alone. `credentials` is the one writer
//! of the seed Secret and the only place a password is minted: the Secret-first handoff both
//! `account` and `secret` use. `steady` decides when a pass over a Ready object may take its SVM
//! and LIFs from the cluster's inventory, and runs the refresher that re-reads it. `standing`
//! reads who an object is. The rest is pure logic: the names an object may ask for, passwords,
//! netmasks, the seed Secret's judgement, and the SVM requests a spec calls for. Nothing in those talks to Kubernetes
//! or ONTAP, so all of it is unit-tested without either.
//! The seed Secret's shape and the default names are the published contract
//! (`crate::api::seed_secret`), which the Gardener Extension reads too.

mod account;
pub mod authority;
mod cluster;
mod credentials;
mod delete;
pub(crate) mod errors;
mod lifs;
mod limits;
pub mod naming;
pub mod netmask;
pub mod password;
pub mod plan;
mod qos;
pub mod reconcile;
pub mod role;
mod rotation;
mod routes;
mod secret;
pub mod seed_secret;
mod standing;
mod steady;
// Each step's module is named after what it brings about; the SVM step's is the SVM.
#[allow(clippy::module_inception)]
mod svm;
pub mod tenancy;
pub mod tenant_network;
mod verify;

pub use credentials::{PrefillError, Prefilled, SeedSecretPrefill};
pub use password::generate_password;
pub use plan::{
    DesiredError, DesiredLif, DesiredSvm, LifPlan, LifRemoval, LifRole, Mismatch, RemovalReason,
    StateAction, SvmPlan, data_service_policy, desired_lifs, desired_svm, plan_lifs, plan_svm,
    protocol_changes,
};
pub use rotation::Rotations;
pub use seed_secret::{ExpectedSeed, SeedField, SeedSecretState, inspect_seed_secret};
pub use standing::{Adopters, AdoptionGrant};
// The steps name it through `super::`, as they did when it was this module's.
use crate::api::seed_secret::without_data;
pub use verify::VerifyRequests;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};

use crate::api::{OntapCluster, StorageVirtualMachine, SvmMode};
use crate::ontap::connections::ClusterConnections;
use authority::Creator;
use naming::Names;
use reconcile_engine::{OwnWrites, SharedCache};
use standing::Standings;
use steady::SteadyInventory;

/// How soon to look again at an SVM that ONTAP is still creating, starting or deleting.
const ONTAP_SETTLING: Duration = Duration::from_secs(2);
/// How often an `AccountOnly` object looks again for an SVM that is missing or not running:
/// another object provisions it, on no schedule this one can see.
const EXISTING_SVM_RECHECK: Duration = Duration::from_secs(5);
/// How often an object whose SVM another operator installation provisions looks again: nothing
/// changes for it unless that installation lets the SVM go.
const SERVED_ELSEWHERE_RECHECK: Duration = Duration::from_secs(60);

pub struct SvmReconciler {
    /// Which consumers name which provider.
    pub consumers: Consumers,
    /// The engine's: the longest a consumer waits before it looks again on its own.
    pub sync_period: Duration,
    pub kube: Client,
    pub clusters: SharedCache<OntapCluster>,
    pub svms: SharedCache<StorageVirtualMachine>,
    pub namespaces: SharedCache<Namespace>,
    pub connections: ClusterConnections,
    /// The seed Secrets this controller wrote: their events need no second pass.
    pub own_writes: OwnWrites,
    /// Each object's standing, from the adoption grant and its namespace's labels.
    pub standings: Standings,
    /// What passes over steady objects may confirm from their cluster's inventory.
    pub steady: SteadyInventory,
    /// Credential rotations: their record, Events, counter and wake-ups.
    pub rotations: Rotations,
    /// Events of what the controller makes beside an SVM (tenant networks).
    pub recorder: Recorder,
}

/// The consumers each provider has: `AccountOnly` objects by the provider they name.
type ConsumerMap =
    HashMap<ObjectRef<StorageVirtualMachine>, HashSet<ObjectRef<StorageVirtualMachine>>>;

/// Which `AccountOnly` objects name which provider: a provider's change (its `shareWith`, its
/// status, its deletion) reconciles its consumers at once, so a narrowed `shareWith` revokes
/// within a pass and a waiting consumer needs no polling. Recorded by each consumer's pass.
#[derive(Clone, Debug, Default)]
pub struct Consumers(Arc<Mutex<ConsumerMap>>);

impl Consumers {
    fn lock(&self) -> std::sync::MutexGuard<'_, ConsumerMap> {
        // The map holds no invariant a panicking holder could break.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `consumer` names `provider` now, and no other (`None`: none, it is gone).
    fn record(
        &self,
        consumer: &ObjectRef<StorageVirtualMachine>,
        provider: Option<ObjectRef<StorageVirtualMachine>>,
    ) {
        let mut map = self.lock();
        if let Some(provider) = &provider
            && map.get(provider).is_some_and(|c| c.contains(consumer))
        {
            return;
        }
        map.retain(|_, consumers| {
            consumers.remove(consumer);
            !consumers.is_empty()
        });
        if let Some(provider) = provider {
            map.entry(provider).or_default().insert(consumer.clone());
        }
    }

    /// The consumers that name `provider`.
    fn of(
        &self,
        provider: &ObjectRef<StorageVirtualMachine>,
    ) -> Vec<ObjectRef<StorageVirtualMachine>> {
        self.lock()
            .get(provider)
            .map(|c| c.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl SvmReconciler {
    /// What the object with uid `marked` (the uid an SVM's mark holds) is to `actor`, which asks
    /// for the SVM `names.svm`: gone, keeping it, or an `AccountOnly` object on that SVM naming
    /// `actor` as its provider — handing it over by its own word.
    fn creator(&self, actor: &StorageVirtualMachine, marked: &str, names: &Names) -> Creator {
        let all = self.svms.store().state();
        let Some(creator) = all.iter().find(|o| o.uid().as_deref() == Some(marked)) else {
            return Creator::Absent;
        };
        let names_actor = creator.spec.provider.as_ref().is_some_and(|p| {
            p.name == actor.name_any()
                && p.namespace.as_ref().or(creator.metadata.namespace.as_ref())
                    == actor.metadata.namespace.as_ref()
        });
        if creator.spec.mode == SvmMode::AccountOnly
            && names_actor
            && creator.spec.cluster_ref == actor.spec.cluster_ref
            && creator.spec.svm_name.as_deref() == Some(names.svm.as_str())
        {
            Creator::HandsOverToActor
        } else {
            Creator::Keeps
        }
    }
}

/// A Normal Event on `svm`. A courtesy: what it tells is recorded elsewhere (the status, ONTAP, a
/// counter), so a failed write is logged and nothing more. The recorder folds Events of one
/// reason and action on one object into a series keeping the first note, so a pass tells each
/// reason once.
pub(super) async fn tell(
    recorder: &Recorder,
    svm: &StorageVirtualMachine,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: action.into(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, &svm.object_ref(&())).await {
        tracing::warn!(%error, reason, "an Event was not written");
    }
}
