//! What every step of the StorageVirtualMachine controller shares: the reconciler's caches and
//! connections, the consumers each provider has, and how soon a step looks again. Below the
//! steps and `reconcile`, which runs them, so that neither imports the other.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};

use super::authority::Creator;
use super::naming::Names;
use super::standing::Standings;
use super::steady::SteadyInventory;
use crate::api::{OntapCluster, StorageVirtualMachine, SvmMode};
use crate::ontap::connections::ClusterConnections;
use reconcile_engine::{OwnWrites, SharedCache};

/// How soon to look again at an SVM that ONTAP is still creating, starting or deleting.
pub(super) const ONTAP_SETTLING: Duration = Duration::from_secs(2);
/// How often an `AccountOnly` object looks again for an SVM that is missing or not running:
/// another object provisions it, on no schedule this one can see.
pub(super) const EXISTING_SVM_RECHECK: Duration = Duration::from_secs(5);
/// How often an object whose SVM another operator installation provisions looks again: nothing
/// changes for it unless that installation lets the SVM go.
pub(super) const SERVED_ELSEWHERE_RECHECK: Duration = Duration::from_secs(60);

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
    pub(super) fn record(
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
    pub(super) fn of(
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
    pub(super) fn creator(
        &self,
        actor: &StorageVirtualMachine,
        marked: &str,
        names: &Names,
    ) -> Creator {
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
