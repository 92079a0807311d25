//! Each ONTAP cluster's SVMs and IP interfaces (and, where objects need them, the SVMs' limits
//! and volumes, their routes, one REST role and the accounts holding it, and the ports and
//! broadcast domains of tenant networks) as a few paged collection reads last saw them.
//!
//! A pass over a Ready SVM would otherwise look its SVM and its interfaces up by themselves: two
//! requests per SVM and sync period, which on a cluster of a thousand SVMs is two thousand
//! requests to an ONTAP its storage administrators share. Read as collections, `max_records` at a
//! time, the same facts cost a handful of pages. A snapshot only ever confirms that nothing
//! changed (see `svm::steady`); anything it does not confirm is read afresh, and the login that
//! proves a seed Secret's credentials stays one request per SVM and pass. An account of the
//! operator's least-privilege role cannot read its own record, so without the role and its
//! accounts in the snapshot its pass would add the administrator's reads of both: three
//! requests instead of one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ontap_client::{
    Account, BroadcastDomain, ClusterVersion, EthernetPort, IpInterface, OntapClient, OntapError,
    Pages, QosPolicy, Role, RolePrivilege, Route, Svm, SvmLimits, VolumeUsage,
};
use serde::de::DeserializeOwned;

/// Records per page of an inventory read: ONTAP's own default page is much smaller, and a larger
/// one costs the cluster one big answer instead of many requests.
pub const PAGE_RECORDS: u32 = 500;

/// How long passes do without a cluster's inventory after reading it failed.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);

/// One cluster's SVMs and interfaces, and when their reading began.
#[derive(Debug)]
pub struct Snapshot {
    started: Instant,
    svms: HashMap<String, Svm>,
    interfaces: HashMap<String, Vec<IpInterface>>,
    /// Read only while some SVM of the cluster has limits: two more collections for the rest.
    limits: Option<Limits>,
    /// By SVM uuid; `None` when the reading did not read routes (no object managed any).
    routes: Option<HashMap<String, Vec<Route>>>,
    /// The cluster's QoS policies by name, which ONTAP keeps unique across the cluster; `None`
    /// when the reading did not read them (no object wanted a throughput ceiling).
    qos_policies: Option<HashMap<String, QosPolicy>>,
    /// Read only while some object's account is to hold the role [`AlsoRead::role`] names.
    role: Option<RoleHolders>,
    /// The cluster's ports and broadcast domains; `None` when the reading did not read them
    /// (the cluster has no tenant networks).
    network: Option<Network>,
}

/// One REST role on every SVM that has it, and the accounts holding it.
#[derive(Debug)]
struct RoleHolders {
    name: String,
    /// The role's privileges by its SVM's uuid. Equal lists share one allocation: the role is
    /// meant to be alike on every SVM, and a thousand copies of forty privileges would be
    /// megabytes held between reads.
    privileges: HashMap<String, Arc<[RolePrivilege]>>,
    /// The list the last role read held, for the next to share.
    last_read: Option<Arc<[RolePrivilege]>>,
    /// By their SVM's uuid (which their key names, so their `owner` is not kept).
    accounts: HashMap<String, Vec<Account>>,
}

/// A cluster's ethernet ports and broadcast domains: a few per node, not per SVM.
#[derive(Debug, Default)]
pub struct Network {
    pub ports: Vec<EthernetPort>,
    pub domains: Vec<BroadcastDomain>,
}

/// Every SVM's limits and volume count, by SVM uuid.
#[derive(Debug, Default)]
struct Limits {
    svms: HashMap<String, SvmLimits>,
    volumes: HashMap<String, u64>,
    /// Records read, for the pages the next read takes.
    volume_records: usize,
}

impl Snapshot {
    /// The SVMs and interfaces of a reading that began at `started`.
    pub fn new(started: Instant, svms: Vec<Svm>, interfaces: Vec<IpInterface>) -> Self {
        let mut reading = Reading::default();
        svms.into_iter().for_each(|svm| reading.add_svm(svm));
        interfaces
            .into_iter()
            .for_each(|interface| reading.add_interface(interface));
        reading.finish(started)
    }

    /// The routes of the SVM with that uuid, when the reading read routes (none for an SVM it
    /// does not know).
    pub fn routes(&self, svm_uuid: &str) -> Option<&[Route]> {
        self.routes
            .as_ref()
            .map(|r| r.get(svm_uuid).map_or(&[][..], Vec::as_slice))
    }

    /// The cluster's ports and broadcast domains, when the reading read them.
    pub fn network(&self) -> Option<&Network> {
        self.network.as_ref()
    }

    /// The SVM of that name when the snapshot was read.
    pub fn svm(&self, name: &str) -> Option<&Svm> {
        self.svms.get(name)
    }

    /// The snapshot with every SVM's limits and volumes as `limits` and `volumes` list them.
    pub fn with_limits(mut self, limits: Vec<SvmLimits>, volumes: Vec<VolumeUsage>) -> Self {
        let mut read = Limits::default();
        limits.into_iter().for_each(|l| read.add_svm(l));
        volumes.into_iter().for_each(|v| read.add_volume(v));
        self.limits = Some(read);
        self
    }

    /// This snapshot with the cluster's QoS `policies` read too.
    pub fn with_qos_policies(mut self, policies: Vec<QosPolicy>) -> Self {
        self.qos_policies = Some(policies.into_iter().map(|p| (p.name.clone(), p)).collect());
        self
    }

    /// Whether its reading took the QoS policies too.
    pub fn has_qos_policies(&self) -> bool {
        self.qos_policies.is_some()
    }

    /// The QoS policy of that name, in any SVM; the outer `None` when the reading did not take
    /// the policies.
    pub fn qos_policy(&self, name: &str) -> Option<Option<&QosPolicy>> {
        self.qos_policies.as_ref().map(|p| p.get(name))
    }

    /// Whether its reading took limits and volumes too.
    pub fn has_limits(&self) -> bool {
        self.limits.is_some()
    }

    /// The limits of the SVM with that uuid, where the reading took them.
    pub fn limits(&self, svm_uuid: &str) -> Option<&SvmLimits> {
        self.limits.as_ref()?.svms.get(svm_uuid)
    }

    /// How many volumes the SVM with that uuid has, where the reading counted them.
    pub fn volumes(&self, svm_uuid: &str) -> Option<u64> {
        let limits = self.limits.as_ref()?;
        limits
            .svms
            .contains_key(svm_uuid)
            .then(|| limits.volumes.get(svm_uuid).copied().unwrap_or_default())
    }

    /// This snapshot with the role `name` of every SVM that has it, and the accounts holding
    /// it, read too.
    pub fn with_role(mut self, name: &str, roles: Vec<Role>, accounts: Vec<Account>) -> Self {
        let mut holders = RoleHolders::new(name);
        roles.into_iter().for_each(|r| holders.add_role(r));
        accounts.into_iter().for_each(|a| holders.add_account(a));
        self.role = Some(holders.finish());
        self
    }

    /// Whether its reading took the role `name` and its accounts.
    pub fn has_role(&self, name: &str) -> bool {
        self.role.as_ref().is_some_and(|r| r.name == name)
    }

    /// The privileges of the role `name` on the SVM with that uuid, where the reading took that
    /// role and the SVM has it.
    pub fn role_privileges(&self, svm_uuid: &str, name: &str) -> Option<&[RolePrivilege]> {
        let role = self.role.as_ref().filter(|r| r.name == name)?;
        role.privileges.get(svm_uuid).map(|p| &p[..])
    }

    /// The account `name` of the SVM with that uuid, where the reading took it: only accounts
    /// holding the role it read are taken, so one holding any other is not found.
    pub fn role_account(&self, svm_uuid: &str, name: &str) -> Option<&Account> {
        let role = self.role.as_ref()?;
        role.accounts.get(svm_uuid)?.iter().find(|a| a.name == name)
    }

    /// The interfaces of the SVM with that uuid (none for an SVM the snapshot does not know).
    pub fn interfaces(&self, svm_uuid: &str) -> &[IpInterface] {
        self.interfaces.get(svm_uuid).map_or(&[], Vec::as_slice)
    }

    /// How long ago its reading began: anything changed since may be missing from it.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// The pages its reading took, at [`PAGE_RECORDS`] per page: what the next will take.
    pub fn pages(&self) -> usize {
        let interfaces: usize = self.interfaces.values().map(Vec::len).sum();
        let per_page = PAGE_RECORDS as usize;
        let limits = self.limits.as_ref().map_or(0, |l| {
            l.svms.len().div_ceil(per_page).max(1) + l.volume_records.div_ceil(per_page).max(1)
        });
        let routes = self.routes.as_ref().map_or(0, |r| {
            r.values()
                .map(Vec::len)
                .sum::<usize>()
                .div_ceil(per_page)
                .max(1)
        });
        let qos_policies = self
            .qos_policies
            .as_ref()
            .map_or(0, |p| p.len().div_ceil(per_page).max(1));
        let role = self.role.as_ref().map_or(0, |r| {
            let accounts: usize = r.accounts.values().map(Vec::len).sum();
            r.privileges.len().div_ceil(per_page).max(1) + accounts.div_ceil(per_page).max(1)
        });
        let network = self.network.as_ref().map_or(0, |n| {
            n.ports.len().div_ceil(per_page).max(1) + n.domains.len().div_ceil(per_page).max(1)
        });
        self.svms.len().div_ceil(per_page).max(1)
            + interfaces.div_ceil(per_page).max(1)
            + limits
            + routes
            + qos_policies
            + role
            + network
    }
}

impl Limits {
    fn add_svm(&mut self, limits: SvmLimits) {
        self.svms.insert(limits.uuid.clone(), limits);
    }

    /// Only the count is kept: a cluster may have many more volumes than SVMs.
    fn add_volume(&mut self, volume: VolumeUsage) {
        self.volume_records += 1;
        if let Some(uuid) = volume.svm.and_then(|s| s.uuid) {
            *self.volumes.entry(uuid).or_default() += 1;
        }
    }
}

impl RoleHolders {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            privileges: HashMap::new(),
            last_read: None,
            accounts: HashMap::new(),
        }
    }

    /// Keeps `role`'s privileges, shared with the role read before when they are the same.
    fn add_role(&mut self, role: Role) {
        let Some(uuid) = role.owner.and_then(|o| o.uuid) else {
            return;
        };
        let privileges = match self.last_read.take() {
            Some(last) if last[..] == role.privileges[..] => last,
            _ => Arc::from(role.privileges),
        };
        self.last_read = Some(privileges.clone());
        self.privileges.insert(uuid, privileges);
    }

    fn add_account(&mut self, mut account: Account) {
        if let Some(uuid) = account.owner.take().and_then(|o| o.uuid) {
            self.accounts.entry(uuid).or_default().push(account);
        }
    }

    fn finish(mut self) -> Self {
        self.last_read = None;
        self.privileges.shrink_to_fit();
        self.accounts.shrink_to_fit();
        self
    }
}

/// A snapshot being read. Each record is trimmed as its page arrives, so a read holds the
/// snapshot it makes and one page, not every record in full besides: at 10,000 SVMs over 10
/// clusters read at once, the full records and the growth of their vectors were megabytes.
#[derive(Default)]
struct Reading {
    svms: HashMap<String, Svm>,
    interfaces: HashMap<String, Vec<IpInterface>>,
    routes: Option<HashMap<String, Vec<Route>>>,
}

impl Reading {
    /// Sized for as many SVMs as `previous` held, so that the maps are not grown by doubling
    /// (and copied once more to shrink them) while the previous snapshot is still held.
    fn sized_like(previous: Option<&Snapshot>) -> Self {
        previous.map_or_else(Self::default, |previous| Self {
            svms: HashMap::with_capacity(previous.svms.len()),
            interfaces: HashMap::with_capacity(previous.interfaces.len()),
            routes: None,
        })
    }

    /// Held for every SVM of every cluster between reads: what no confirmation reads (an
    /// SVM's aggregates, subtype and IPspace, an interface's SVM, which its key names) is not
    /// kept.
    fn add_svm(&mut self, mut svm: Svm) {
        svm.aggregates = Vec::new();
        svm.subtype = None;
        svm.ipspace = None;
        self.svms.insert(svm.name.clone(), svm);
    }

    fn add_interface(&mut self, mut interface: IpInterface) {
        // Cluster-scoped interfaces (node management, cluster LIFs) belong to no SVM.
        if let Some(uuid) = interface.svm.take().and_then(|s| s.uuid) {
            let interfaces = self.interfaces.entry(uuid).or_default();
            // Exactly: a vector grown by doubling keeps room for four of an SVM's two LIFs.
            interfaces.reserve_exact(1);
            interfaces.push(interface);
        }
    }

    fn finish(mut self, started: Instant) -> Snapshot {
        self.svms.shrink_to_fit();
        self.interfaces.shrink_to_fit();
        Snapshot {
            started,
            svms: self.svms,
            interfaces: self.interfaces,
            limits: None,
            routes: self.routes,
            qos_policies: None,
            role: None,
            network: None,
        }
    }
}

/// Files `route` under its SVM; a cluster-scoped route belongs to none and is not kept.
fn add_route(by_svm: &mut HashMap<String, Vec<Route>>, mut route: Route) {
    if let Some(uuid) = route.svm.take().and_then(|s| s.uuid) {
        by_svm.entry(uuid).or_default().push(route);
    }
}

/// What a read takes beyond the SVMs and interfaces, each only while some object on the cluster
/// needs it, so that the clusters of objects that do not pay nothing for it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlsoRead<'a> {
    /// Every SVM's limits and the cluster's volumes, with the fields the cluster's version knows.
    pub limits: Option<&'a ClusterVersion>,
    /// The SVMs' routes.
    pub routes: bool,
    /// The cluster's QoS policies (with the limits, whose SVM records say which one each SVM
    /// applies).
    pub qos_policies: bool,
    /// The REST role of this name on every SVM, and the accounts holding it: what a pass over
    /// an account that cannot read its own record would otherwise read per object.
    pub role: Option<&'a str>,
    /// The cluster's ports and broadcast domains (it has tenant networks).
    pub network: bool,
}

/// Held by the one pass reading a cluster's inventory; holds when the last such read failed.
type ReadGate = Arc<tokio::sync::Mutex<Option<Instant>>>;

/// The snapshots of every cluster, shared by the passes and the refresher.
#[derive(Clone, Debug)]
pub struct Inventory {
    max_age: Duration,
    snapshots: Arc<Mutex<HashMap<String, Arc<Snapshot>>>>,
    /// One read at a time per cluster for passes that find no fresh snapshot: the thousand
    /// passes after a restart wait for one read instead of each making its own. It holds when
    /// the last such read failed.
    reading: Arc<Mutex<HashMap<String, ReadGate>>>,
}

impl Inventory {
    /// Snapshots are used until `max_age` after their reading began.
    pub fn new(max_age: Duration) -> Self {
        Self {
            max_age,
            snapshots: Arc::default(),
            reading: Arc::default(),
        }
    }

    /// The cluster's snapshot, if young enough to use.
    pub fn fresh(&self, cluster: &str) -> Option<Arc<Snapshot>> {
        self.held(cluster).filter(|s| s.age() <= self.max_age)
    }

    /// The cluster's snapshot, however old.
    fn held(&self, cluster: &str) -> Option<Arc<Snapshot>> {
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
            .cloned()
    }

    /// A fresh snapshot of `cluster`, read now (pages back to back) when there is none; passes
    /// asking while a read is under way wait for it. Where `also` asks for limits, only a
    /// snapshot with limits and volumes will do, and likewise for a role. `None` while reads
    /// fail: after a failed read, passes read per object for [`RETRY_AFTER_FAILURE`] rather
    /// than each trying the inventory again, one after another.
    pub async fn current(
        &self,
        cluster: &str,
        client: &OntapClient,
        also: AlsoRead<'_>,
    ) -> Option<Arc<Snapshot>> {
        let usable = |s: &Arc<Snapshot>| {
            (also.limits.is_none() || s.has_limits())
                && (!also.qos_policies || s.has_qos_policies())
                && also.role.is_none_or(|r| s.has_role(r))
                && (!also.network || s.network.is_some())
        };
        if let Some(snapshot) = self.fresh(cluster).filter(usable) {
            return Some(snapshot);
        }
        let gate = self
            .reading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(cluster.to_owned())
            .or_default()
            .clone();
        let mut failed_at = gate.lock().await;
        if let Some(snapshot) = self.fresh(cluster).filter(usable) {
            return Some(snapshot);
        }
        if failed_at.is_some_and(|at| at.elapsed() < RETRY_AFTER_FAILURE) {
            return None;
        }
        match self.read(cluster, client, Duration::ZERO, also).await {
            Ok(snapshot) => {
                *failed_at = None;
                Some(snapshot)
            }
            Err(error) => {
                tracing::warn!(cluster, %error, "reading the cluster's inventory failed; its passes look their SVMs and LIFs up one by one");
                *failed_at = Some(Instant::now());
                None
            }
        }
    }

    /// Reads `cluster`'s SVMs and interfaces, and what `also` asks for, anew, waiting `pace`
    /// between pages so that a large cluster's inventory is spread over time rather than sent
    /// in one burst, and keeps it.
    pub async fn read(
        &self,
        cluster: &str,
        client: &OntapClient,
        pace: Duration,
        also: AlsoRead<'_>,
    ) -> Result<Arc<Snapshot>, OntapError> {
        let started = Instant::now();
        let mut reading = Reading::sized_like(self.held(cluster).as_deref());
        for_each_record(client.svm_pages(PAGE_RECORDS)?, pace, |svm| {
            reading.add_svm(svm);
        })
        .await?;
        for_each_record(client.interface_pages(PAGE_RECORDS)?, pace, |interface| {
            reading.add_interface(interface);
        })
        .await?;
        if also.routes {
            let mut routes = HashMap::new();
            for_each_record(client.route_pages(PAGE_RECORDS)?, pace, |route| {
                add_route(&mut routes, route);
            })
            .await?;
            reading.routes = Some(routes);
        }
        let mut snapshot = reading.finish(started);
        if also.network {
            let mut network = Network::default();
            for_each_record(client.port_pages(PAGE_RECORDS)?, pace, |port| {
                network.ports.push(port);
            })
            .await?;
            for_each_record(
                client.broadcast_domain_pages(PAGE_RECORDS)?,
                pace,
                |domain| {
                    network.domains.push(domain);
                },
            )
            .await?;
            snapshot.network = Some(network);
        }
        if let Some(version) = also.limits {
            let mut read = Limits::default();
            for_each_record(client.svm_limit_pages(PAGE_RECORDS, version)?, pace, |l| {
                read.add_svm(l);
            })
            .await?;
            for_each_record(client.volume_usage_pages(PAGE_RECORDS)?, pace, |v| {
                read.add_volume(v);
            })
            .await?;
            read.svms.shrink_to_fit();
            read.volumes.shrink_to_fit();
            snapshot.limits = Some(read);
        }
        if also.qos_policies {
            let mut policies = HashMap::new();
            for_each_record(
                client.qos_policy_pages(PAGE_RECORDS)?,
                pace,
                |p: QosPolicy| {
                    policies.insert(p.name.clone(), p);
                },
            )
            .await?;
            snapshot.qos_policies = Some(policies);
        }
        if let Some(name) = also.role {
            let mut holders = RoleHolders::new(name);
            for_each_record(client.role_pages(PAGE_RECORDS, name)?, pace, |role| {
                holders.add_role(role);
            })
            .await?;
            for_each_record(client.account_pages(PAGE_RECORDS, name)?, pace, |account| {
                holders.add_account(account);
            })
            .await?;
            snapshot.role = Some(holders.finish());
        }
        let snapshot = Arc::new(snapshot);
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(cluster.to_owned(), snapshot.clone());
        Ok(snapshot)
    }

    /// Forgets `cluster`'s snapshot: its passes read afresh until the next read.
    pub fn forget(&self, cluster: &str) {
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(cluster);
    }
}

/// Hands every record of `pages` to `record`, a page at a time, waiting `pace` between pages.
async fn for_each_record<T: DeserializeOwned>(
    mut pages: Pages<T>,
    pace: Duration,
    mut record: impl FnMut(T),
) -> Result<(), OntapError> {
    while let Some(page) = pages.next_page().await? {
        page.into_iter().for_each(&mut record);
        if pages.has_next() && !pace.is_zero() {
            tokio::time::sleep(pace).await;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn record<T: DeserializeOwned>(value: serde_json::Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_snapshot_keeps_what_confirmations_read_and_no_room_besides() {
        let svm: Svm = record(serde_json::json!({
            "uuid": "u-1", "name": "svm-1", "state": "running", "comment": "ours",
            "subtype": "default", "ipspace": { "name": "Default" },
            "aggregates": [{ "name": "aggr1", "uuid": "a-1" }],
        }));
        let lif = |name: &str| -> IpInterface {
            record(serde_json::json!({
                "uuid": format!("{name}-uuid"), "name": name,
                "ip": { "address": "192.0.2.1", "netmask": "24" },
                "svm": { "name": "svm-1", "uuid": "u-1" },
            }))
        };
        let cluster_lif: IpInterface =
            record(serde_json::json!({ "uuid": "c", "name": "cluster" }));
        let snapshot = Snapshot::new(
            Instant::now(),
            vec![svm],
            vec![lif("data-1"), cluster_lif, lif("data-2")],
        );
        let kept = snapshot.svm("svm-1").unwrap();
        assert_eq!(
            (kept.uuid.as_str(), kept.comment.as_deref()),
            ("u-1", Some("ours"))
        );
        assert!(kept.aggregates.is_empty() && kept.subtype.is_none() && kept.ipspace.is_none());
        let names: Vec<_> = snapshot
            .interfaces("u-1")
            .iter()
            .map(|i| i.name.as_str())
            .collect();
        assert_eq!(names, ["data-1", "data-2"]);
        assert!(snapshot.interfaces("u-1").iter().all(|i| i.svm.is_none()));
        assert_eq!(
            snapshot.interfaces["u-1"].capacity(),
            2,
            "room for exactly its LIFs"
        );
        assert_eq!(
            snapshot.interfaces.len(),
            1,
            "the cluster's own LIF belongs to no SVM"
        );
    }

    #[test]
    fn a_role_read_on_every_svm_shares_equal_privileges_and_finds_only_its_accounts() {
        let role = |svm: &str, access: &str| -> Role {
            record(serde_json::json!({
                "name": "lean", "owner": { "uuid": svm },
                "privileges": [
                    { "path": "/api/svm/svms", "access": "readonly" },
                    { "path": "/api/storage/volumes", "access": access },
                ],
            }))
        };
        let account = |svm: &str, name: &str| -> Account {
            record(serde_json::json!({
                "name": name, "owner": { "uuid": svm }, "role": { "name": "lean" },
            }))
        };
        let snapshot = Snapshot::new(Instant::now(), Vec::new(), Vec::new()).with_role(
            "lean",
            vec![
                role("u-1", "all"),
                role("u-2", "all"),
                role("u-3", "readonly"),
                role("u-4", "all"),
            ],
            vec![account("u-1", "a-1"), account("u-2", "a-2")],
        );
        assert!(snapshot.has_role("lean") && !snapshot.has_role("other"));
        let held = |svm| snapshot.role.as_ref().unwrap().privileges[svm].clone();
        assert!(
            Arc::ptr_eq(&held("u-1"), &held("u-2")),
            "equal lists, one allocation"
        );
        assert!(!Arc::ptr_eq(&held("u-2"), &held("u-3")));
        assert_eq!(held("u-4")[..], held("u-1")[..]);
        assert_eq!(snapshot.role_privileges("u-3", "lean").unwrap().len(), 2);
        assert!(
            snapshot.role_privileges("u-3", "other").is_none(),
            "another name"
        );
        assert!(
            snapshot.role_privileges("u-9", "lean").is_none(),
            "no role there"
        );
        let found = snapshot.role_account("u-1", "a-1").unwrap();
        assert!(found.owner.is_none(), "its key names its SVM");
        assert!(
            snapshot.role_account("u-1", "a-2").is_none(),
            "another SVM's"
        );
        assert!(
            Snapshot::new(Instant::now(), Vec::new(), Vec::new())
                .role_account("u-1", "a-1")
                .is_none(),
            "not read"
        );
        assert_eq!(snapshot.pages(), 4, "SVMs, interfaces, roles, accounts");
    }

    #[test]
    fn a_reading_is_sized_like_the_snapshot_it_replaces() {
        let svms: Vec<Svm> = (0..100)
            .map(|i| {
                record(serde_json::json!({ "uuid": format!("u-{i}"), "name": format!("svm-{i}") }))
            })
            .collect();
        let previous = Snapshot::new(Instant::now(), svms, Vec::new());
        let reading = Reading::sized_like(Some(&previous));
        assert!(reading.svms.capacity() >= 100);
        assert!(Reading::sized_like(None).svms.capacity() < 100);
    }
}
