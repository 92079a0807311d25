//! The fake cluster's state and ONTAP's rules about it, independent of HTTP.
//!
//! Time is passed in (`now`) rather than read inside, so jobs progress deterministically: a job's
//! phase is a function of its timestamps, and its effect is applied by [`Model::advance`], which
//! every request calls before it reads or writes anything.

mod account;
pub mod cluster;
mod interface;
mod job;
mod svm;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

pub use account::{AccountCreate, AccountPatch};
pub use interface::InterfaceCreate;
pub use job::{InjectedFailure, Job};
pub use svm::{SvmCreate, SvmPatch};

use crate::config::{MockConfig, Settings};
use cluster::Cluster;

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
    pub cluster: Cluster,
    svms: BTreeMap<String, svm::Svm>,
    svm_names: HashMap<String, String>,
    accounts: BTreeMap<(String, String), account::Account>,
    interfaces: BTreeMap<String, interface::Interface>,
    interface_ips: HashMap<String, String>,
    jobs: job::Jobs,
    /// Maps monotonic instants to wall-clock times for the timestamps ONTAP reports.
    epoch: (Instant, DateTime<Utc>),
}

impl Model {
    pub fn new(config: &MockConfig) -> anyhow::Result<Self> {
        Ok(Self {
            settings: config.settings.clone(),
            cluster: Cluster::from_spec(&config.cluster)?,
            svms: BTreeMap::new(),
            svm_names: HashMap::new(),
            accounts: BTreeMap::new(),
            interfaces: BTreeMap::new(),
            interface_ips: HashMap::new(),
            jobs: job::Jobs::default(),
            epoch: (Instant::now(), Utc::now()),
        })
    }

    pub fn timestamp(&self, at: Instant) -> String {
        let offset = at.saturating_duration_since(self.epoch.0);
        let wall = self.epoch.1 + chrono::Duration::from_std(offset).unwrap_or_default();
        wall.to_rfc3339_opts(SecondsFormat::Secs, false)
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

    /// Everything, as `GET …?fields=**` would show it to the admin; for `/_mock/state`.
    pub fn snapshot(&self, now: Instant) -> Value {
        let svms: Vec<Value> = self.svms.values().map(|s| s.to_json(self, now)).collect();
        let accounts: Vec<Value> = self.accounts.values().map(|a| a.to_json(self)).collect();
        let interfaces: Vec<Value> = self.interfaces.values().map(|i| i.to_json(self)).collect();
        json!({
            "svms": svms,
            "accounts": accounts,
            "interfaces": interfaces,
            "jobs": self.jobs_json(now),
        })
    }
}
