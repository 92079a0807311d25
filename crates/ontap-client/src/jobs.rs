//! ONTAP's asynchronous jobs: a change ONTAP answers with 202 is done only when its job is, so
//! the client polls the job until it ends, bounded by the job poll settings.

use tracing::{Instrument, field};

use crate::client::OntapClient;
use crate::endpoints;
use crate::error::{OntapError, Result};
use crate::model::{self, Job};

impl OntapClient {
    /// Fetches a job once.
    pub async fn job(&self, uuid: &str) -> Result<Job> {
        let url = self.url(
            &["api", "cluster", "jobs", uuid],
            &[("fields", "uuid,state,message,code,description,svm")],
        )?;
        self.get_json(endpoints::JOB, url).await
    }

    /// Polls a job until it is terminal, with bounded backoff and an overall deadline.
    ///
    /// A failed job is [`OntapError::JobFailed`]; a job that disappears (ONTAP deletes finished
    /// jobs after a few minutes) is [`OntapError::JobExpired`]; one still running at the deadline
    /// is [`OntapError::JobTimeout`]. The last two are ambiguous: the caller must look the object
    /// up to learn the outcome.
    pub async fn wait_for_job(&self, uuid: &str) -> Result<Job> {
        let span = tracing::debug_span!("ontap.job", job_uuid = uuid, state = field::Empty);
        let result = self.poll_job(uuid, &span).instrument(span.clone()).await;
        if let Some(m) = self.metrics() {
            m.observe_job(match &result {
                Ok(_) => "success",
                Err(OntapError::JobFailed { .. }) => "failure",
                Err(OntapError::JobExpired { .. }) => "expired",
                Err(OntapError::JobTimeout { .. }) => "timeout",
                Err(_) => "error",
            });
        }
        result
    }

    async fn poll_job(&self, uuid: &str, span: &tracing::Span) -> Result<Job> {
        let cfg = self.job_poll();
        let started = tokio::time::Instant::now();
        let deadline = started + cfg.deadline;
        let mut interval = cfg.initial_interval;
        let mut last_state = String::from("unknown");
        loop {
            // Even the first look waits: a job is never done the moment it was accepted, and a
            // poll that can only say "running" is a request ONTAP answers for nothing.
            let now = tokio::time::Instant::now();
            if now + interval > deadline {
                return Err(OntapError::JobTimeout {
                    job_uuid: uuid.to_owned(),
                    state: last_state,
                    waited: now - started,
                });
            }
            tokio::time::sleep(interval).await;
            interval = interval
                .mul_f64(cfg.multiplier.max(1.0))
                .min(cfg.max_interval);
            match self.job(uuid).await {
                Ok(job) => {
                    span.record("state", job.state.as_str());
                    match job.state {
                        model::JobState::Success => return Ok(job),
                        model::JobState::Failure => return Err(job.failure()),
                        s => last_state = s.as_str().to_owned(),
                    }
                }
                Err(e) if e.is_not_found() => {
                    return Err(OntapError::JobExpired {
                        job_uuid: uuid.to_owned(),
                    });
                }
                // The job GETs were already retried; keep polling until the deadline, since the
                // operation itself is running on the cluster regardless.
                Err(e) if e.is_transient() => {
                    tracing::debug!(job_uuid = uuid, error = %e, "polling ONTAP job failed");
                }
                Err(e) => {
                    return Err(OntapError::JobPollFailed {
                        job_uuid: uuid.to_owned(),
                        source: Box::new(e),
                    });
                }
            }
        }
    }
}
