//! Watching Kymas until each reports `success`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};

use kyma_inventory::api::{Kyma, KymaState};

/// The first time each Kyma of a namespace was seen with `status: success`, from a watch
/// started before the Kymas are created.
#[derive(Clone)]
pub struct SuccessWatch {
    seen: Arc<Mutex<HashMap<String, Instant>>>,
    task: Arc<tokio::task::AbortHandle>,
}

impl Drop for SuccessWatch {
    fn drop(&mut self) {
        if Arc::strong_count(&self.task) == 1 {
            self.task.abort();
        }
    }
}

impl SuccessWatch {
    /// Starts watching the Kymas of `namespace`.
    pub fn start(client: &Client, namespace: &str) -> Self {
        let api: Api<Kyma> = Api::namespaced(client.clone(), namespace);
        let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                let stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .applied_objects();
                let mut stream = std::pin::pin!(stream);
                loop {
                    match stream.try_next().await {
                        Ok(Some(kyma)) => {
                            let success = kyma.status.as_ref().and_then(|s| s.status)
                                == Some(KymaState::Success);
                            if success {
                                seen.lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .entry(kyma.name_any())
                                    .or_insert_with(Instant::now);
                            }
                        }
                        Ok(None) => return,
                        Err(e) => tracing::warn!(error = %e, "watching Kymas"),
                    }
                }
            }
        })
        .abort_handle();
        SuccessWatch {
            seen,
            task: Arc::new(task),
        }
    }

    /// How many of `names` were seen at success.
    pub fn count(&self, names: &[String]) -> usize {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        names.iter().filter(|n| seen.contains_key(*n)).count()
    }

    /// Waits until every one of `names` was seen at success, calling `progress` every 10 s;
    /// returns when each was seen, or how many were by the deadline.
    pub async fn wait_all(
        &self,
        names: &[String],
        timeout: Duration,
        mut progress: impl FnMut(usize),
    ) -> Result<HashMap<String, Instant>, usize> {
        let deadline = Instant::now() + timeout;
        let mut report = Instant::now();
        loop {
            let done = self.count(names);
            if done == names.len() {
                let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
                return Ok(names
                    .iter()
                    .filter_map(|n| Some((n.clone(), *seen.get(n)?)))
                    .collect());
            }
            if Instant::now() > deadline {
                return Err(done);
            }
            if report.elapsed() >= Duration::from_secs(10) {
                report = Instant::now();
                progress(done);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
