//! The fake cluster's state and ONTAP's rules about it, independent of HTTP.
//!
//! Time is passed in (`now`) rather than read inside, so jobs progress deterministically: a job's
//! phase is a function of its timestamps, and its effect is applied by [`Model::advance`], which
//! every request calls before it reads or writes anything.
//!
//! Collections answer equality filters on their key fields from indexes kept in step with every
//! change, as ONTAP does, so a filtered GET costs what it returns rather than the cluster's size.
//! Lists hand out [`Row`]s, copies of the records, so the caller turns them into JSON after the
//! model's lock is released.

mod account;
mod bgp;
pub mod cluster;
mod interface;
mod job;
mod network;
mod protocol;
mod role;
mod service;
mod storage;
mod svm;
mod svm_request;

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

pub use account::{AccountCreate, AccountPatch};
pub use bgp::PeerGroupCreate;
pub use interface::{InterfaceCreate, InterfacePatch};
pub use job::{InjectedFailure, Job};
pub use network::{DomainCreate, PortCreate, RouteCreate};
pub use protocol::{Protocol, ServiceCreate, ServicePatch};
pub use storage::San;
pub use svm_request::{SvmCreate, SvmPatch};

use crate::config::{MockConfig, Settings};
use crate::query::ListQuery;
use cluster::Cluster;

/// A record copied out of the model: its JSON (`fields=**` shape) is built without the lock.
pub trait Row {
    fn to_json(&self) -> Value;
}

/// Maps monotonic instants to the wall-clock times ONTAP reports.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: (Instant, DateTime<Utc>),
}

impl Clock {
    fn new() -> Self {
        Self {
            epoch: (Instant::now(), Utc::now()),
        }
    }

    pub fn timestamp(&self, at: Instant) -> String {
        let offset = at.saturating_duration_since(self.epoch.0);
        let wall = self.epoch.1 + chrono::Duration::from_std(offset).unwrap_or_default();
        wall.to_rfc3339_opts(SecondsFormat::Secs, false)
    }
}

/// Record keys an index yields: borrowed from the index, or owned for a single key.
type Keys<'a> = Cow<'a, BTreeSet<String>>;

/// The smallest of the key sets that indexed equality filters narrow a collection to, or
/// `None` when no filter has an index (the caller then scans). Every other filter is still
/// checked on the records, so any superset of the matches is a correct answer here.
fn narrowest<'a>(candidates: impl IntoIterator<Item = Option<Keys<'a>>>) -> Option<Keys<'a>> {
    candidates
        .into_iter()
        .flatten()
        .min_by_key(|keys| keys.len())
}

/// The keys an index maps one value to (none when absent).
fn indexed<'a>(
    index: &'a HashMap<String, BTreeSet<String>>,
    value: Option<&str>,
) -> Option<Keys<'a>> {
    value.map(|v| {
        index
            .get(v)
            .map_or_else(|| Cow::Owned(BTreeSet::new()), Cow::Borrowed)
    })
}

/// A key set of at most one key.
fn single(key: Option<&str>) -> Keys<'static> {
    Cow::Owned(key.map(str::to_owned).into_iter().collect())
}

/// Who is asking: the cluster admin or an account of one SVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    Admin { user: String },
    Svm { user: String, svm_uuid: String },
}

impl Principal {
    /// The only SVM this principal may see, if it is SVM-scoped.
    pub fn svm_scope(&self) -> Option<&str> {
        match self {
            Principal::Admin { .. } => None,
            Principal::Svm { svm_uuid, .. } => Some(svm_uuid),
        }
    }

    pub fn may_see(&self, svm_uuid: &str) -> bool {
        self.svm_scope().is_none_or(|own| own == svm_uuid)
    }
}

pub struct Model {
    pub settings: Settings,
    /// Fixed after start; shared with the rows handed out.
    pub cluster: Arc<Cluster>,
    svms: svm::Svms,
    accounts: account::Accounts,
    interfaces: interface::Interfaces,
    network: network::Network,
    peer_groups: bgp::PeerGroups,
    roles: role::Roles,
    jobs: job::Jobs,
    storage: storage::Storage,
    /// `POST /api/support/ems/application-logs` bodies, newest last (at most [`EMS_LOGS`]).
    ems_logs: std::collections::VecDeque<Value>,
    clock: Clock,
}

/// How many EMS application logs the model keeps for `/_mock/state`.
pub const EMS_LOGS: usize = 100;

impl Model {
    pub fn new(config: &MockConfig) -> anyhow::Result<Self> {
        let cluster = Cluster::from_spec(&config.cluster)?;
        Ok(Self {
            settings: config.settings.clone(),
            network: network::Network::new(&cluster),
            cluster: Arc::new(cluster),
            svms: svm::Svms::default(),
            accounts: account::Accounts::default(),
            interfaces: interface::Interfaces::default(),
            peer_groups: bgp::PeerGroups::default(),
            roles: role::Roles::default(),
            jobs: job::Jobs::default(),
            storage: storage::Storage::default(),
            ems_logs: std::collections::VecDeque::new(),
            clock: Clock::new(),
        })
    }

    /// Finishes every job whose end time has passed (applying or discarding its effect) and
    /// forgets finished jobs older than the expiry.
    pub fn advance(&mut self, now: Instant) {
        while let Some(job) = self.jobs.pop_ended(now) {
            self.finish_job(&job);
        }
        self.jobs
            .expire(now, Duration::from_millis(self.settings.job_expiry_ms));
    }

    /// Records an EMS application log as ONTAP would raise its `app.log.*` event.
    pub fn log_ems(&mut self, log: Value) {
        if self.ems_logs.len() == EMS_LOGS {
            self.ems_logs.pop_front();
        }
        self.ems_logs.push_back(log);
    }

    /// Everything, as `GET …?fields=**` would show it to the admin; for `/_mock/state`.
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        let everything = ListQuery::everything();
        let admin = Principal::Admin {
            user: String::new(),
        };
        Snapshot {
            svms: self.svm_rows(&admin, &everything, now),
            accounts: self.account_rows(&admin, &everything),
            interfaces: self.interface_rows(&admin, &everything),
            bgp_peer_groups: self.peer_group_rows(&everything),
            jobs: self.job_rows(&everything, now),
            job_stats: self.jobs.stats(),
            ems_application_logs: self.ems_logs.iter().cloned().collect(),
        }
    }
}

/// A copy of every record, turned into JSON once the lock is released.
pub struct Snapshot {
    svms: Vec<svm::SvmRow>,
    accounts: Vec<account::AccountRow>,
    interfaces: Vec<interface::InterfaceRow>,
    bgp_peer_groups: Vec<bgp::PeerGroupRow>,
    jobs: Vec<job::JobRow>,
    job_stats: Value,
    ems_application_logs: Vec<Value>,
}

impl Snapshot {
    pub fn to_json(&self) -> Value {
        fn all<R: Row>(rows: &[R]) -> Vec<Value> {
            rows.iter().map(Row::to_json).collect()
        }
        json!({
            "svms": all(&self.svms),
            "accounts": all(&self.accounts),
            "interfaces": all(&self.interfaces),
            "bgp_peer_groups": all(&self.bgp_peer_groups),
            "jobs": all(&self.jobs),
            "job_stats": self.job_stats,
            "ems_application_logs": self.ems_application_logs,
        })
    }
}
