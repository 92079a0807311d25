//! The shared state behind every connection: the cluster model, the fault registry and the
//! request log, each behind its own lock so fault matching never waits for the model.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::config::{Credentials, MockConfig, Settings};
use crate::faults::{FaultRegistry, FaultSpec};
use crate::model::Model;
use crate::requests::RequestLog;

/// A handle on one fake cluster; cheap to clone.
#[derive(Clone)]
pub struct MockState {
    inner: Arc<Shared>,
}

struct Shared {
    initial: MockConfig,
    model: Mutex<Model>,
    faults: Mutex<FaultRegistry>,
    requests: Mutex<RequestLog>,
}

/// A poisoned lock only means a handler panicked mid-request; the mock keeps serving.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MockState {
    pub fn new(config: MockConfig) -> anyhow::Result<Self> {
        let model = Model::new(&config)?;
        Ok(Self {
            inner: Arc::new(Shared {
                initial: config,
                model: Mutex::new(model),
                faults: Mutex::new(FaultRegistry::default()),
                requests: Mutex::new(RequestLog::default()),
            }),
        })
    }

    /// The model with every due job finished, ready to read or change.
    pub(crate) fn model(&self) -> (MutexGuard<'_, Model>, Instant) {
        let now = Instant::now();
        let mut model = lock(&self.inner.model);
        model.advance(now);
        (model, now)
    }

    pub(crate) fn faults(&self) -> MutexGuard<'_, FaultRegistry> {
        lock(&self.inner.faults)
    }

    pub(crate) fn requests(&self) -> MutexGuard<'_, RequestLog> {
        lock(&self.inner.requests)
    }

    /// Same as `POST /_mock/faults`, for tests that hold the state; returns the fault id.
    pub fn add_fault(&self, spec: FaultSpec) -> Result<String, String> {
        self.faults().add(spec)
    }

    /// Same as `DELETE /_mock/faults`.
    pub fn clear_faults(&self) {
        self.faults().clear();
    }

    /// Same as `GET /_mock/state`.
    pub fn snapshot(&self) -> serde_json::Value {
        let rows = {
            let (model, now) = self.model();
            model.snapshot(now)
        };
        rows.to_json()
    }

    /// How many `/api` requests with this method and exact path arrived since the start, the
    /// last `reset()` or `DELETE /_mock/requests`; as `GET /_mock/requests/counts`.
    pub fn request_count(&self, method: &str, path: &str) -> u64 {
        self.requests().count(&method.to_ascii_uppercase(), path)
    }

    /// Same as `PUT /_mock/config`, e.g. `state.update_settings(|s| s.job_duration_ms = 5_000)`.
    pub fn update_settings(&self, change: impl FnOnce(&mut Settings)) {
        change(&mut self.model().0.settings);
    }

    /// Whether `user`/`password` log in as an account of the SVM named `svm`, as a workload
    /// holding those credentials would. Asked of the model directly: unlike a request it is
    /// neither logged nor hit by faults, so tests can sample it while faults are armed.
    pub fn accepts_svm_login(&self, user: &str, password: &str, svm: &str) -> bool {
        let (model, _) = self.model();
        match model.authenticate(user, password) {
            Some(crate::model::Principal::Svm { svm_uuid, .. }) => {
                model.svm(&svm_uuid).is_some_and(|s| s.name == svm)
            }
            _ => false,
        }
    }

    pub fn admin(&self) -> &Credentials {
        &self.inner.initial.admin
    }

    /// Back to the cluster the server started with: no SVMs, no faults, an empty request log,
    /// the configured settings.
    pub fn reset(&self) -> anyhow::Result<()> {
        let fresh = Model::new(&self.inner.initial)?;
        *lock(&self.inner.model) = fresh;
        self.faults().clear();
        self.requests().clear();
        Ok(())
    }
}

impl Default for MockState {
    fn default() -> Self {
        let model = Model::new(&MockConfig::default())
            .expect("the built-in default cluster is valid by construction");
        Self {
            inner: Arc::new(Shared {
                initial: MockConfig::default(),
                model: Mutex::new(model),
                faults: Mutex::new(FaultRegistry::default()),
                requests: Mutex::new(RequestLog::default()),
            }),
        }
    }
}
