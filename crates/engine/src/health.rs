//! Liveness and readiness, evaluated from checks registered by the parts of the operator.
//!
//! Readiness is deep: a check passes only when its dependency was actually exercised recently
//! (see [`Probe`]), never because a port is open or a task exists. Checks are evaluated at probe
//! time and must be cheap; checks that need I/O run in the background and publish into a
//! [`Probe`], whose result goes stale when nobody refreshes it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

// tokio's clock so that tests can pause and advance it; outside a runtime it is the system clock.
use tokio::time::Instant;

/// A check's verdict: `Err` carries a reason for `/readyz?verbose` (never a secret).
pub type CheckResult = Result<(), String>;
type CheckFn = Arc<dyn Fn() -> CheckResult + Send + Sync>;

/// The process's liveness and readiness checks, by name. Cheap to clone: clones share the checks.
#[derive(Clone, Default)]
pub struct Health {
    readiness: Arc<RwLock<BTreeMap<String, CheckFn>>>,
    informational: Arc<RwLock<BTreeMap<String, CheckFn>>>,
    liveness: Arc<RwLock<BTreeMap<String, CheckFn>>>,
}

/// The outcome of evaluating every check of one kind, in name order.
#[derive(Debug)]
pub struct Report {
    /// The checks that decide, with their verdicts.
    pub checks: Vec<(String, CheckResult)>,
    /// Shown by `?verbose` but never failing the probe: the state of one dependency among
    /// several (an ONTAP cluster), which must not take the whole process out of service.
    pub informational: Vec<(String, CheckResult)>,
}

impl Report {
    /// Whether every deciding check passed.
    pub fn healthy(&self) -> bool {
        self.checks.iter().all(|(_, r)| r.is_ok())
    }

    /// Kubernetes' own format: `[+]name ok` / `[-]name failed: reason`, informational checks
    /// marked as such, then a summary line.
    pub fn verbose(&self, kind: &str) -> String {
        let mut out = String::new();
        for (name, result) in &self.checks {
            match result {
                Ok(()) => out.push_str(&format!("[+]{name} ok\n")),
                Err(reason) => out.push_str(&format!("[-]{name} failed: {reason}\n")),
            }
        }
        for (name, result) in &self.informational {
            match result {
                Ok(()) => out.push_str(&format!("[+]{name} ok (informational)\n")),
                Err(reason) => {
                    out.push_str(&format!("[-]{name} failed (informational): {reason}\n"));
                }
            }
        }
        if self.healthy() {
            out.push_str(&format!("{kind} check passed\n"));
        } else {
            out.push_str(&format!("{kind} check failed\n"));
        }
        out
    }
}

fn evaluate(checks: &RwLock<BTreeMap<String, CheckFn>>) -> Vec<(String, CheckResult)> {
    // Clone the functions out so no lock is held while they run.
    let checks: Vec<(String, CheckFn)> = match checks.read() {
        Ok(guard) => guard.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Err(poisoned) => poisoned
            .into_inner()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    checks
        .into_iter()
        .map(|(name, check)| (name, check()))
        .collect()
}

fn insert(map: &RwLock<BTreeMap<String, CheckFn>>, name: String, check: CheckFn) {
    match map.write() {
        Ok(mut guard) => guard.insert(name, check),
        Err(poisoned) => poisoned.into_inner().insert(name, check),
    };
}

fn remove(map: &RwLock<BTreeMap<String, CheckFn>>, name: &str) {
    match map.write() {
        Ok(mut guard) => guard.remove(name),
        Err(poisoned) => poisoned.into_inner().remove(name),
    };
}

impl Health {
    /// No checks yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a readiness check.
    pub fn add_readiness(
        &self,
        name: impl Into<String>,
        check: impl Fn() -> CheckResult + Send + Sync + 'static,
    ) {
        insert(&self.readiness, name.into(), Arc::new(check));
    }

    /// Removes a readiness check.
    pub fn remove_readiness(&self, name: &str) {
        remove(&self.readiness, name);
    }

    /// Adds or replaces a check `/readyz?verbose` shows without counting it.
    pub fn add_informational(
        &self,
        name: impl Into<String>,
        check: impl Fn() -> CheckResult + Send + Sync + 'static,
    ) {
        insert(&self.informational, name.into(), Arc::new(check));
    }

    /// Removes an informational check.
    pub fn remove_informational(&self, name: &str) {
        remove(&self.informational, name);
    }

    /// Adds or replaces a liveness check: failing it gets the process restarted, so only a
    /// state the process cannot leave by itself (a dead or stuck loop) should fail it.
    pub fn add_liveness(
        &self,
        name: impl Into<String>,
        check: impl Fn() -> CheckResult + Send + Sync + 'static,
    ) {
        insert(&self.liveness, name.into(), Arc::new(check));
    }

    /// Evaluates the readiness checks (`/readyz`).
    pub fn readiness(&self) -> Report {
        Report {
            checks: evaluate(&self.readiness),
            informational: evaluate(&self.informational),
        }
    }

    /// Evaluates the liveness checks (`/healthz`).
    pub fn liveness(&self) -> Report {
        Report {
            checks: evaluate(&self.liveness),
            informational: Vec::new(),
        }
    }
}

/// The latest result of a check that runs in the background, and when it ran. It fails when
/// the latest run failed, when there was none yet, or when it is older than `max_age`.
#[derive(Clone)]
pub struct Probe {
    latest: Arc<Mutex<Option<(Instant, CheckResult)>>>,
    max_age: Duration,
}

impl Probe {
    /// A probe whose last result counts for `max_age`, and that has none yet.
    pub fn new(max_age: Duration) -> Self {
        Self {
            latest: Arc::new(Mutex::new(None)),
            max_age,
        }
    }

    /// Publishes the result of exercising the dependency now.
    pub fn record(&self, result: CheckResult) {
        let mut latest = self.latest.lock().unwrap_or_else(|p| p.into_inner());
        *latest = Some((Instant::now(), result));
    }

    /// The last result, or why there is none that is fresh enough.
    pub fn check(&self) -> CheckResult {
        let latest = self.latest.lock().unwrap_or_else(|p| p.into_inner());
        match &*latest {
            None => Err("not checked yet".into()),
            Some((at, _)) if at.elapsed() > self.max_age => {
                Err(format!("no result for {}s", at.elapsed().as_secs()))
            }
            Some((_, result)) => result.clone(),
        }
    }
}

/// The engine's manager reports its checks (cache sync, stuck reconciles) here.
impl crate::Probes for Health {
    fn add_readiness(&self, name: String, check: crate::Check) {
        Health::add_readiness(self, name, check);
    }

    fn add_liveness(&self, name: String, check: crate::Check) {
        Health::add_liveness(self, name, check);
    }
}

/// What this process knows about leadership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Leadership {
    /// Not known yet: the first attempt on the Lease has not finished.
    Unknown = 0,
    /// This process holds the Lease.
    Leader = 1,
    /// Another process holds the Lease; this one stands by.
    Standby = 2,
    /// Leader election is off: this process is the only one and always acts.
    Disabled = 3,
}

/// This process's leadership, shared between the election and the readiness check.
#[derive(Clone)]
pub struct LeadershipState(Arc<AtomicU8>);

impl Default for LeadershipState {
    fn default() -> Self {
        Self(Arc::new(AtomicU8::new(Leadership::Unknown as u8)))
    }
}

impl LeadershipState {
    /// Records the current state.
    pub fn set(&self, state: Leadership) {
        self.0.store(state as u8, Ordering::Release);
    }

    /// The current state.
    pub fn get(&self) -> Leadership {
        match self.0.load(Ordering::Acquire) {
            1 => Leadership::Leader,
            2 => Leadership::Standby,
            3 => Leadership::Disabled,
            _ => Leadership::Unknown,
        }
    }

    /// Ready unless the election has not decided yet.
    pub fn check(&self) -> CheckResult {
        match self.get() {
            Leadership::Unknown => Err("leadership not known yet".into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_probe_fails_before_its_first_result_and_when_stale() {
        let probe = Probe::new(Duration::from_secs(10));
        assert!(probe.check().is_err());
        probe.record(Ok(()));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(probe.check().is_ok());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(probe.check().unwrap_err().contains("no result"));
        probe.record(Err("connection refused".into()));
        assert_eq!(probe.check().unwrap_err(), "connection refused");
    }

    #[test]
    fn readiness_needs_every_check_and_reports_each() {
        let health = Health::new();
        let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let leadership = LeadershipState::default();
        health.add_readiness("store/svm", {
            let s = synced.clone();
            move || {
                if s.load(Ordering::Acquire) {
                    Ok(())
                } else {
                    Err("cache not synced yet".into())
                }
            }
        });
        health.add_readiness("leader-election", {
            let l = leadership.clone();
            move || l.check()
        });
        let report = health.readiness();
        assert!(!report.healthy());
        assert_eq!(
            report.verbose("readyz"),
            "[-]leader-election failed: leadership not known yet\n[-]store/svm failed: cache not synced yet\nreadyz check failed\n"
        );
        synced.store(true, Ordering::Release);
        leadership.set(Leadership::Standby);
        assert!(health.readiness().healthy());
        health.add_readiness("ontap/lab", || Err("401 Unauthorized".into()));
        assert!(!health.readiness().healthy());
        health.remove_readiness("ontap/lab");
        assert!(health.readiness().healthy());
    }

    #[test]
    fn an_informational_check_is_reported_but_never_fails_readiness() {
        let health = Health::new();
        health.add_readiness("apiserver", || Ok(()));
        health.add_informational("ontap-cluster/lab", || Err("connection refused".into()));
        let report = health.readiness();
        assert!(report.healthy());
        assert_eq!(
            report.verbose("readyz"),
            "[+]apiserver ok\n[-]ontap-cluster/lab failed (informational): connection refused\nreadyz check passed\n"
        );
        health.remove_informational("ontap-cluster/lab");
        assert!(health.readiness().informational.is_empty());
    }
}
