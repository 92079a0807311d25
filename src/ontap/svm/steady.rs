//! Passes over steady StorageVirtualMachines, confirmed from their cluster's inventory.
//!
//! A steady object (`Owned`, Ready at its generation, its SVM's uuid recorded) is re-verified
//! every sync period. Its SVM and LIFs are then taken from the cluster's [`Inventory`] snapshot
//! when, and only when, the snapshot shows them exactly as this object wants them: their plans
//! ([`super::plan`]), the very ones the steps act on, find nothing to change. Anything else is
//! read afresh by the step as before. The seed Secret's login is never taken from anywhere:
//! it is the one request per object and pass that proves the credentials. For an account of
//! the Trident role, which cannot read its own record, the snapshot likewise confirms the role's
//! privileges and the account's record that the administrator would read after the login.
//!
//! A snapshot is up to [`Inventory`]'s age limit old, so it could confirm what changed after it
//! was read. The refresher closes that window: every half sync period it reads each cluster's
//! inventory anew, the clusters in turn over a quarter period, and asks for a pass of every steady
//! object the new snapshot does not confirm. A LIF deleted behind the operator's back is thus
//! found within three quarters of a sync period, whatever the object's own schedule.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::account::{applications_on, settled_account};
use super::authority::Standing;
use super::limits::{
    ceiling_confirmed, cluster_version, desired_limits_on, wants_ceiling, wants_limits,
};
use super::naming::{Names, names_of};
use super::plan::{
    DesiredSvm, desired_lifs, desired_routes, desired_svm, plan_lifs, plan_routes, plan_svm,
};
use super::role::{TRIDENT_ROLE, effective_role, trident_role_confirmed};
use super::standing::Standings;
use super::tenant_network::{confirmed, granted};
use crate::api::{AccountRole, OntapCluster, StorageVirtualMachine, SvmMode, SvmPhase};
use crate::ontap::connections::ClusterConnections;
use crate::ontap::inventory::{AlsoRead, Inventory, Snapshot};
use ontap_client::{OntapClient, Svm};
use reconcile_engine::SharedCache;

/// How long a cluster's count of steady objects is reused: counting walks every object.
const COUNT_MAX_AGE: Duration = Duration::from_secs(5);

/// A cluster's steady objects, how many of them manage routes, whether any object on it
/// (steady or not) has limits of its own, and how many steady ones' accounts hold the Trident
/// role.
#[derive(Clone, Copy, Debug, Default)]
struct SteadyCount {
    objects: usize,
    routed: usize,
    limited: bool,
    /// Some object on the cluster asks for a throughput ceiling of its own.
    throttled: bool,
    least_privileged: usize,
}

impl SteadyCount {
    /// The role the cluster's inventory reads with its accounts, while some steady object's
    /// account holds it.
    fn role(self) -> Option<&'static str> {
        (self.least_privileged > 0).then_some(TRIDENT_ROLE)
    }
}

/// Per cluster name, its count, and when they were counted.
type SteadyCounts = (Instant, HashMap<String, SteadyCount>);

/// When a pass over a steady object may use its cluster's inventory, and the refresher that
/// keeps the inventories fresh.
#[derive(Clone)]
pub struct SteadyInventory {
    inventory: Inventory,
    /// Clusters with fewer steady objects are read per object: an inventory read per half sync
    /// period would cost them as much as it saves, and no snapshot is held for them.
    min_svms: usize,
    /// The refresher's interval; snapshots serve passes for two of them, so that a slow read
    /// never leaves passes without one.
    refresh: Duration,
    svms: SharedCache<StorageVirtualMachine>,
    /// Their defaults and bounds decide an SVM's limits, and whether the inventory reads limits.
    clusters: SharedCache<OntapCluster>,
    /// Each object's standing, which the mark on its SVM records: as its passes read it.
    standings: Standings,
    counts: Arc<Mutex<Option<SteadyCounts>>>,
}

impl SteadyInventory {
    /// `sync_period`: the engine's; the inventory is read anew every half of it.
    pub fn new(
        svms: SharedCache<StorageVirtualMachine>,
        clusters: SharedCache<OntapCluster>,
        standings: Standings,
        sync_period: Duration,
        min_svms: usize,
    ) -> Self {
        let refresh = sync_period / 2;
        Self {
            inventory: Inventory::new(2 * refresh),
            min_svms: min_svms.max(1),
            refresh,
            svms,
            clusters,
            standings,
            counts: Arc::default(),
        }
    }

    /// The snapshot a pass over `svm` may confirm its SVM and LIFs from: `None` for an object
    /// that is not steady, on a cluster with too few steady objects, or when no snapshot can be
    /// read (the pass then reads per object, and reports what that finds).
    pub async fn for_pass(
        &self,
        svm: &StorageVirtualMachine,
        client: &OntapClient,
    ) -> Option<Arc<Snapshot>> {
        let cluster = &svm.spec.cluster_ref.name;
        let count = self.steady_on(cluster);
        if !is_steady(svm) || count.objects < self.min_svms {
            return None;
        }
        let limits = match self.limits_version(cluster, count) {
            Ok(version) => version,
            // Limits are wanted, and which fields ONTAP knows is not known yet.
            Err(()) => return None,
        };
        let also = AlsoRead {
            limits: limits.as_ref(),
            routes: count.routed > 0,
            qos_policies: self.qos_wanted(cluster, count),
            role: count.role(),
            network: self.has_tenant_networks(cluster),
        };
        self.inventory.current(cluster, client, also).await
    }

    /// The version of `cluster` when its inventory is to read limits (some object on it has
    /// limits, or its administrator sets defaults or bounds); `Ok(None)` when it is not; an error
    /// when it is but the cluster's version is not known yet.
    fn limits_version(
        &self,
        cluster: &str,
        count: SteadyCount,
    ) -> Result<Option<ontap_client::ClusterVersion>, ()> {
        let object = self.clusters.get(&ObjectRef::new(cluster));
        if !count.limited && !object.as_deref().is_some_and(wants_limits) {
            return Ok(None);
        }
        object
            .as_deref()
            .and_then(cluster_version)
            .map(Some)
            .ok_or(())
    }

    /// Whether `cluster`'s inventory is to read the QoS policies: some object on it, or its
    /// administrator's defaults or bounds, ask for a throughput ceiling. Its limits are then
    /// read too ([`wants_limits`]), which say which policy each SVM applies.
    fn qos_wanted(&self, cluster: &str, count: SteadyCount) -> bool {
        count.throttled
            || self
                .clusters
                .get(&ObjectRef::new(cluster))
                .as_deref()
                .is_some_and(wants_ceiling)
    }

    /// Whether `cluster`'s administrator grants tenant networks: its inventory then reads the
    /// ports and broadcast domains, which every steady object of a tenant with one confirms.
    fn has_tenant_networks(&self, cluster: &str) -> bool {
        self.clusters
            .get(&ObjectRef::new(cluster))
            .is_some_and(|c| {
                c.spec
                    .tenant_networks
                    .as_ref()
                    .is_some_and(|n| !n.vlans.is_empty())
            })
    }

    /// `cluster`'s count, made at most every [`COUNT_MAX_AGE`].
    fn steady_on(&self, cluster: &str) -> SteadyCount {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() > COUNT_MAX_AGE)
        {
            let mut fresh: HashMap<String, SteadyCount> = HashMap::new();
            // Their defaults decide the role of an object that names none.
            let mut clusters: HashMap<String, Option<Arc<OntapCluster>>> = HashMap::new();
            for svm in self.svms.store().state() {
                let name = &svm.spec.cluster_ref.name;
                let count = fresh.entry(name.clone()).or_default();
                count.limited |= svm.spec.limits.is_some();
                count.throttled |= svm.spec.limits.as_ref().is_some_and(|l| {
                    l.max_throughput_iops.is_some() || l.max_throughput_mbps.is_some()
                });
                if is_steady(&svm) {
                    count.objects += 1;
                    count.routed += usize::from(svm.spec.routes.is_some());
                    let cluster = clusters
                        .entry(name.clone())
                        .or_insert_with(|| self.clusters.get(&ObjectRef::new(name)));
                    let defaults = cluster.as_deref().and_then(|c| c.spec.defaults.as_ref());
                    count.least_privileged +=
                        usize::from(effective_role(&svm.spec, defaults) == AccountRole::Trident);
                }
            }
            *counts = Some((Instant::now(), fresh));
        }
        counts
            .as_ref()
            .and_then(|(_, c)| c.get(cluster).copied())
            .unwrap_or_default()
    }

    /// Every refresh interval, each cluster's inventory read anew, the clusters in turn over
    /// half the interval, and the steady objects it does not confirm: for the controller's
    /// queue.
    pub fn drifted(
        self,
        clusters: SharedCache<OntapCluster>,
        connections: ClusterConnections,
    ) -> impl Stream<Item = ObjectRef<StorageVirtualMachine>> + Send + 'static {
        // The interval is made on the first poll: registering needs no timer, so that
        // declarations can be read without a runtime's clock.
        futures::stream::unfold((self, None), move |(this, interval)| {
            let clusters = clusters.clone();
            let connections = connections.clone();
            async move {
                let mut interval: tokio::time::Interval = interval.unwrap_or_else(|| {
                    let mut interval = tokio::time::interval_at(
                        tokio::time::Instant::now() + this.refresh,
                        this.refresh,
                    );
                    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    interval
                });
                interval.tick().await;
                let clusters = clusters.store().state();
                // One cluster after another, each in its share of half the interval: a read
                // holds its new snapshot beside the one it replaces, so every cluster read at
                // once would hold two of every snapshot at the peak. Each still starts at its
                // own time, so a slow cluster delays only its own read.
                let share = this.refresh / 2 / u32::try_from(clusters.len().max(1)).unwrap_or(1);
                let sweeps = clusters.into_iter().enumerate().map(|(i, cluster)| {
                    let (this, connections) = (&this, &connections);
                    async move {
                        let turn = share.saturating_mul(u32::try_from(i).unwrap_or(u32::MAX));
                        tokio::time::sleep(turn).await;
                        this.sweep(cluster, connections, share).await
                    }
                });
                let drifted: Vec<_> = futures::future::join_all(sweeps)
                    .await
                    .into_iter()
                    .flatten()
                    .collect();
                Some((futures::stream::iter(drifted), (this, Some(interval))))
            }
        })
        .flatten()
    }

    /// One cluster's new snapshot, its pages spread over `window`, and its steady objects that
    /// snapshot does not confirm.
    async fn sweep(
        &self,
        cluster: Arc<OntapCluster>,
        connections: &ClusterConnections,
        window: Duration,
    ) -> Vec<ObjectRef<StorageVirtualMachine>> {
        let name = cluster.name_any();
        let count = self.steady_on(&name);
        if count.objects < self.min_svms {
            self.inventory.forget(&name);
            return Vec::new();
        }
        let Ok(limits) = self.limits_version(&name, count) else {
            return Vec::new();
        };
        let also = AlsoRead {
            limits: limits.as_ref(),
            routes: count.routed > 0,
            qos_policies: self.qos_wanted(&name, count),
            role: count.role(),
            network: self.has_tenant_networks(&name),
        };
        // A cluster the operator cannot reach now is the cluster controller's to report; its
        // passes read per object once the snapshot ages out.
        let Ok(client) = connections.connect(&cluster).await else {
            return Vec::new();
        };
        let pages = self.inventory.fresh(&name).map_or(2, |s| s.pages());
        let pace = window / u32::try_from(pages).unwrap_or(u32::MAX);
        let snapshot = match self.inventory.read(&name, &client, pace, also).await {
            Ok(snapshot) => snapshot,
            Err(error) => {
                tracing::warn!(cluster = name, %error, "reading the cluster's inventory failed; its objects are re-verified on their own schedule");
                return Vec::new();
            }
        };
        let drifted: Vec<_> = self
            .svms
            .store()
            .state()
            .iter()
            .filter(|svm| svm.spec.cluster_ref.name == name && is_steady(svm))
            .filter(|svm| !confirms(svm, Some(&cluster), &self.standings.of(svm), &snapshot))
            .map(|svm| ObjectRef::from_obj(&**svm))
            .collect();
        if !drifted.is_empty() {
            tracing::info!(
                cluster = name,
                objects = drifted.len(),
                "the cluster's inventory shows Ready objects' SVMs, LIFs or routes otherwise than wanted; re-verifying them now"
            );
        }
        drifted
    }
}

/// Whether `svm` is an `Owned` object Ready at its generation with its SVM's uuid recorded: one
/// whose pass re-verifies, rather than provisions or changes.
pub fn is_steady(svm: &StorageVirtualMachine) -> bool {
    let Some(status) = &svm.status else {
        return false;
    };
    svm.spec.mode == SvmMode::Owned
        && svm.metadata.deletion_timestamp.is_none()
        && status.phase == Some(SvmPhase::Ready)
        && status.observed_generation.is_some()
        && status.observed_generation == svm.metadata.generation
        && status.uuid.is_some()
}

/// Whether `snapshot` shows `svm`'s SVM, LIFs, routes, tenant network and (for the Trident role)
/// account exactly as the object, of `standing`, on `cluster`, wants them.
fn confirms(
    svm: &StorageVirtualMachine,
    cluster: Option<&OntapCluster>,
    standing: &Standing,
    snapshot: &Snapshot,
) -> bool {
    let Some(status) = &svm.status else {
        return false;
    };
    let Some(recorded) = status.uuid.as_deref() else {
        return false;
    };
    let names = names_of(svm, status);
    desired_limits_on(svm, cluster, cluster.and_then(cluster_version).as_ref())
        .ok()
        .and_then(|limits| desired_svm(svm, &names.svm, standing, limits).ok())
        .and_then(|desired| {
            confirmed_svm(&desired, recorded, snapshot).map(|found| (desired, found))
        })
        .is_some_and(|(desired, found)| {
            lifs_confirmed(svm, &found.uuid, snapshot)
                && routes_confirmed(svm, &found.uuid, snapshot)
                && ceiling_confirmed(
                    desired.limits.ceiling,
                    status.usage.as_ref(),
                    &found.uuid,
                    snapshot,
                )
                && account_confirmed(svm, cluster, standing, &names, &found.uuid, snapshot)
                && network_confirmed(svm, cluster, standing, snapshot)
        })
}

/// Whether `snapshot` shows what the account step of `svm` would read as the administrator as
/// the step wants it: for an account of the Trident role, the role's privileges and the
/// account's record. A vsadmin account's own login reads its record: nothing to confirm.
fn account_confirmed(
    svm: &StorageVirtualMachine,
    cluster: Option<&OntapCluster>,
    standing: &Standing,
    names: &Names,
    svm_uuid: &str,
    snapshot: &Snapshot,
) -> bool {
    let role = effective_role(&svm.spec, cluster.and_then(|c| c.spec.defaults.as_ref()));
    role == AccountRole::Vsadmin
        || (trident_role_confirmed(svm_uuid, snapshot)
            && settled_account(
                snapshot,
                svm_uuid,
                names,
                standing,
                role,
                &applications_on(cluster),
            )
            .is_some())
}

/// Whether `snapshot` shows the tenant network `cluster` grants `svm`'s party as wanted: always
/// for an object without one, never from a snapshot that did not read the network.
pub fn network_confirmed(
    svm: &StorageVirtualMachine,
    cluster: Option<&OntapCluster>,
    standing: &Standing,
    snapshot: &Snapshot,
) -> bool {
    let party = standing.party(&svm.namespace().unwrap_or_default());
    cluster
        .and_then(|c| granted(c, &party))
        .is_none_or(|network| confirmed(&network, snapshot))
}

/// The SVM `desired` describes as `snapshot` shows it, when it is the one recorded as `recorded`
/// and its [`plan_svm`] finds nothing to change; `None` when anything is otherwise.
pub fn confirmed_svm(desired: &DesiredSvm, recorded: &str, snapshot: &Snapshot) -> Option<Svm> {
    let found = snapshot.svm(&desired.name)?;
    let limits = snapshot.limits(&found.uuid);
    (found.uuid == recorded && plan_svm(desired, found, limits).is_empty()).then(|| found.clone())
}

/// Whether `snapshot` shows the SVM `svm_uuid` with exactly the routes `svm` plans: always for
/// an object that leaves routes alone, never from a snapshot that did not read routes.
pub fn routes_confirmed(svm: &StorageVirtualMachine, svm_uuid: &str, snapshot: &Snapshot) -> bool {
    match desired_routes(svm) {
        Ok(None) => true,
        Ok(Some(desired)) => snapshot
            .routes(svm_uuid)
            .is_some_and(|actual| plan_routes(&desired, actual).is_empty()),
        Err(_) => false,
    }
}

/// Whether `snapshot` shows the SVM `svm_uuid` with exactly the LIFs `svm` plans.
pub fn lifs_confirmed(svm: &StorageVirtualMachine, svm_uuid: &str, snapshot: &Snapshot) -> bool {
    desired_lifs(svm)
        .is_ok_and(|desired| plan_lifs(&desired, snapshot.interfaces(svm_uuid)).is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::StorageVirtualMachineStatus;
    use crate::ontap::svm::authority::svm_comment;
    use crate::ontap::svm::plan::DesiredLimits;
    use crate::ontap::svm::plan::tests::base;
    use ontap_client::{IpInterface, ProtocolState, SvmState};

    const UUID: &str = "2f7d0f2a-0000-4000-8000-000000000001";

    /// `base()` Ready at its generation, its SVM recorded.
    fn steady() -> StorageVirtualMachine {
        let mut svm = base();
        svm.metadata.generation = Some(3);
        svm.status = Some(StorageVirtualMachineStatus {
            uuid: Some(UUID.into()),
            phase: Some(SvmPhase::Ready),
            observed_generation: Some(3),
            ..StorageVirtualMachineStatus::default()
        });
        svm
    }

    /// The SVM `svm`, a tenant's, wants.
    fn desired(svm: &StorageVirtualMachine) -> DesiredSvm {
        let names = names_of(svm, svm.status.as_ref().unwrap());
        desired_svm(svm, &names.svm, &Standing::Tenant, DesiredLimits::default()).unwrap()
    }

    /// ONTAP's record of `svm`'s SVM as the operator made it for a tenant's object.
    fn ontap_svm(svm: &StorageVirtualMachine) -> Svm {
        let status = svm.status.clone().unwrap_or_default();
        let names = names_of(svm, &status);
        serde_json::from_value(serde_json::json!({
            "uuid": UUID, "name": names.svm, "state": "running",
            "comment": svm_comment(&names.uid, &Standing::Tenant, &names.namespace, &svm.name_any()),
            "nfs": { "enabled": true }, "iscsi": { "enabled": false }, "nvme": { "enabled": false },
        }))
        .unwrap()
    }

    /// ONTAP's records of `svm`'s LIFs as the operator created them.
    fn ontap_lifs(svm: &StorageVirtualMachine) -> Vec<IpInterface> {
        desired_lifs(svm)
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, lif)| {
                let mut record = serde_json::to_value(lif.create_request(&lif.name, UUID)).unwrap();
                record["uuid"] = format!("lif-{i}").into();
                record["svm"] = serde_json::json!({ "uuid": UUID });
                serde_json::from_value(record).unwrap()
            })
            .collect()
    }

    fn snapshot(svms: Vec<Svm>, interfaces: Vec<IpInterface>) -> Snapshot {
        Snapshot::new(Instant::now(), svms, interfaces)
    }

    #[test]
    fn a_snapshot_as_the_object_wants_it_confirms_svm_and_lifs() {
        let svm = steady();
        let snapshot = snapshot(vec![ontap_svm(&svm)], ontap_lifs(&svm));
        assert!(is_steady(&svm));
        assert_eq!(
            confirmed_svm(&desired(&svm), UUID, &snapshot).unwrap().uuid,
            UUID
        );
        assert!(confirms(&svm, None, &Standing::Tenant, &snapshot));
    }

    #[test]
    fn limits_are_confirmed_from_the_snapshot_only_as_wanted() {
        let mut svm = steady();
        svm.spec.limits = Some(crate::api::SvmLimitsSpec {
            max_volumes: Some(10),
            ..Default::default()
        });
        let read = |max: &str| {
            let limits: ontap_client::SvmLimits = serde_json::from_value(
                serde_json::json!({ "uuid": UUID, "name": "n", "max_volumes": max }),
            )
            .unwrap();
            snapshot(vec![ontap_svm(&svm)], ontap_lifs(&svm)).with_limits(vec![limits], Vec::new())
        };
        assert!(confirms(&svm, None, &Standing::Tenant, &read("10")));
        assert!(
            !confirms(&svm, None, &Standing::Tenant, &read("7")),
            "drifted"
        );
        let unread = snapshot(vec![ontap_svm(&svm)], ontap_lifs(&svm));
        assert!(
            !confirms(&svm, None, &Standing::Tenant, &unread),
            "limits wanted, none read"
        );
    }

    /// A Trident object's role and account are confirmed only as its account step would leave
    /// them: the role with exactly NetApp's privileges, the account of that role, marked for
    /// the object, with the applications it needs.
    #[test]
    fn a_trident_account_and_its_role_are_confirmed_only_as_wanted() {
        use crate::ontap::svm::authority::account_comment;
        use crate::ontap::svm::role::trident_privileges;
        use ontap_client::{Account, Role, RoleAccess};

        let mut svm = steady();
        svm.spec.account = Some(crate::api::SvmAccountSpec {
            role: Some(AccountRole::Trident),
            ..Default::default()
        });
        let names = names_of(&svm, svm.status.as_ref().unwrap());
        let role = |privileges| Role {
            name: TRIDENT_ROLE.into(),
            owner: serde_json::from_value(serde_json::json!({ "uuid": UUID })).unwrap(),
            privileges,
        };
        let account = |role: &str, comment: String| -> Account {
            serde_json::from_value(serde_json::json!({
                "name": names.account, "owner": { "uuid": UUID }, "role": { "name": role },
                "comment": comment, "applications": applications_on(None),
            }))
            .unwrap()
        };
        let ours = account_comment(&names.uid, &Standing::Tenant);
        let read = |roles: Vec<Role>, accounts: Vec<Account>| {
            snapshot(vec![ontap_svm(&svm)], ontap_lifs(&svm)).with_role(
                TRIDENT_ROLE,
                roles,
                accounts,
            )
        };
        let netapps = || role(trident_privileges());
        assert!(confirms(
            &svm,
            None,
            &Standing::Tenant,
            &read(vec![netapps()], vec![account(TRIDENT_ROLE, ours.clone())])
        ));

        let mut narrowed = trident_privileges();
        narrowed[0].access = RoleAccess::None;
        let mut fewer = trident_privileges();
        fewer.pop();
        let unconfirmed = [
            (
                "no role read",
                snapshot(vec![ontap_svm(&svm)], ontap_lifs(&svm)),
            ),
            (
                "role absent",
                read(Vec::new(), vec![account(TRIDENT_ROLE, ours.clone())]),
            ),
            (
                "privilege changed",
                read(
                    vec![role(narrowed)],
                    vec![account(TRIDENT_ROLE, ours.clone())],
                ),
            ),
            (
                "privilege removed",
                read(vec![role(fewer)], vec![account(TRIDENT_ROLE, ours.clone())]),
            ),
            ("account absent", read(vec![netapps()], Vec::new())),
            (
                "another role",
                read(
                    vec![netapps()],
                    vec![account(crate::ontap::svm::role::VSADMIN_ROLE, ours.clone())],
                ),
            ),
            (
                "another mark",
                read(
                    vec![netapps()],
                    vec![account(
                        TRIDENT_ROLE,
                        account_comment("another", &Standing::Tenant),
                    )],
                ),
            ),
        ];
        for (case, snapshot) in unconfirmed {
            assert!(
                !confirms(&svm, None, &Standing::Tenant, &snapshot),
                "{case}"
            );
        }
        let mut lacking = account(TRIDENT_ROLE, ours);
        lacking.applications.clear();
        assert!(
            !confirms(
                &svm,
                None,
                &Standing::Tenant,
                &read(vec![netapps()], vec![lacking])
            ),
            "an application missing"
        );

        // A vsadmin account's login reads its own record: nothing more to confirm.
        svm.spec.account = None;
        assert!(confirms(
            &svm,
            None,
            &Standing::Tenant,
            &snapshot(vec![ontap_svm(&svm)], ontap_lifs(&svm))
        ));
    }

    #[test]
    fn only_ready_owned_objects_at_their_generation_are_steady() {
        let mut changed = steady();
        changed.metadata.generation = Some(4);
        let mut provisioning = steady();
        provisioning.status.as_mut().unwrap().phase = Some(SvmPhase::Provisioning);
        let mut unrecorded = steady();
        unrecorded.status.as_mut().unwrap().uuid = None;
        let mut account_only = steady();
        account_only.spec.mode = SvmMode::AccountOnly;
        for svm in [changed, provisioning, unrecorded, account_only] {
            assert!(!is_steady(&svm), "{:?}", svm.status);
        }
    }

    #[test]
    fn anything_otherwise_than_wanted_is_not_confirmed() {
        let svm = steady();
        let desired = desired(&svm);
        let mut renewed = ontap_svm(&svm);
        renewed.uuid = "another".into();
        let mut foreign = ontap_svm(&svm);
        foreign.comment = Some("made by hand".into());
        let mut stopped = ontap_svm(&svm);
        stopped.state = Some(SvmState::Stopped);
        let mut iscsi = ontap_svm(&svm);
        iscsi.iscsi = Some(ProtocolState { enabled: true });
        // This object's uid, but the mark of a project object: what other seeds read is wrong.
        let mut restanding = ontap_svm(&svm);
        restanding.comment = Some(svm_comment(
            svm.metadata.uid.as_deref().unwrap(),
            &Standing::Project {
                project: Some("p1".into()),
            },
            "team-a",
            "db",
        ));
        for found in [renewed, foreign, stopped, iscsi, restanding] {
            let snapshot = snapshot(vec![found.clone()], ontap_lifs(&svm));
            assert!(
                confirmed_svm(&desired, UUID, &snapshot).is_none(),
                "{found:?}"
            );
            assert!(
                !confirms(&svm, None, &Standing::Tenant, &snapshot),
                "{found:?}"
            );
        }
        let absent = snapshot(Vec::new(), ontap_lifs(&svm));
        assert!(confirmed_svm(&desired, UUID, &absent).is_none());
        let mut lifs = ontap_lifs(&svm);
        lifs.pop();
        let snapshot_of = |lifs| snapshot(vec![ontap_svm(&svm)], lifs);
        assert!(!confirms(&svm, None, &Standing::Tenant, &snapshot_of(lifs)));
        let mut moved = ontap_lifs(&svm);
        moved[0].ip.as_mut().unwrap().address = "192.0.2.99".into();
        assert!(!confirms(
            &svm,
            None,
            &Standing::Tenant,
            &snapshot_of(moved)
        ));
    }

    /// The shortcut and the full pass share one SVM plan: whatever `plan_svm` finds to change,
    /// which the full pass then changes, the inventory does not confirm, so a steady object
    /// does not skip the repair; and what it finds as wanted, the inventory confirms. A property
    /// compared only by the shortcut, or only by the full pass, breaks one of the two.
    #[test]
    fn the_inventory_confirms_exactly_the_svms_the_plan_leaves_alone() {
        let svm = steady();
        let names = names_of(&svm, svm.status.as_ref().unwrap());
        let shoot = Standing::Shoot {
            project: Some("p1".into()),
            shoot: Some("s1".into()),
        };
        let standings = [
            Standing::Tenant,
            Standing::Project {
                project: Some("p1".into()),
            },
            shoot,
        ];
        let comments: Vec<Option<String>> = standings
            .iter()
            .map(|s| Some(svm_comment(&names.uid, s, &names.namespace, "db")))
            .chain([
                None,
                Some(svm_comment("another", &Standing::Tenant, "x", "y")),
            ])
            .collect();
        let states = [
            Some(SvmState::Running),
            Some(SvmState::Stopped),
            Some(SvmState::Starting),
            Some(SvmState::Deleting),
            Some(SvmState::Unknown),
            None,
        ];
        let (mut confirmed, mut refused) = (0, 0);
        for standing in &standings {
            let desired =
                desired_svm(&svm, &names.svm, standing, DesiredLimits::default()).unwrap();
            for comment in &comments {
                for state in states {
                    for iscsi in [false, true] {
                        let mut found = ontap_svm(&svm);
                        found.comment = comment.clone();
                        found.state = state;
                        found.iscsi = Some(ProtocolState { enabled: iscsi });
                        let as_wanted = plan_svm(&desired, &found, None).is_empty();
                        let snapshot = snapshot(vec![found.clone()], ontap_lifs(&svm));
                        assert_eq!(
                            confirms(&svm, None, standing, &snapshot),
                            as_wanted,
                            "{standing:?} {found:?}"
                        );
                        if as_wanted {
                            confirmed += 1
                        } else {
                            refused += 1
                        }
                    }
                }
            }
        }
        // Each standing's own mark on a running SVM with the spec's protocols, and nothing else.
        assert_eq!(confirmed, standings.len());
        assert!(refused > 0);
    }
}
