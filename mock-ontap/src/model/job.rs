//! Asynchronous SVM jobs: `queued` for the first fifth of their duration (at most 1 s), then
//! `running`, then `success` or `failure`; their effect lands at the end, and they vanish after
//! the expiry.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

use super::{Clock, Model, Row, svm_request::SvmPatch};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

/// Long jobs (tests that want to catch a job mid-way) still start running promptly.
const MAX_QUEUED: Duration = Duration::from_secs(1);

/// A `job_failure` fault: the job that the request starts ends in failure, applying nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectedFailure {
    pub code: String,
    pub message: String,
}

/// What a job does when it ends: an SVM change, or a volume or snapshot change.
#[derive(Debug, Clone)]
pub enum Effect {
    Create(String),
    Modify(String, SvmPatch),
    Delete(String),
    Storage(StorageEffect),
}

/// The effect of a volume or snapshot job, applied when the job ends. Declared with the other
/// effects: storage starts jobs and so imports them, and jobs import nothing from storage.
#[derive(Debug, Clone)]
pub enum StorageEffect {
    VolumeCreate(String),
    VolumeModify(String, Value),
    VolumeDelete(String),
    SnapshotCreate(String, String),
    SnapshotDelete(String, String),
    QosCreate(String),
    QosModify(String, Value),
    QosDelete(String),
}

impl Effect {
    fn is_svm_job(&self) -> bool {
        !matches!(self, Effect::Storage(_))
    }
}

#[derive(Debug, Clone)]
pub struct Job {
    pub uuid: String,
    pub description: String,
    pub svm_uuid: String,
    pub svm_name: String,
    pub start_at: Instant,
    pub end_at: Instant,
    pub failure: Option<InjectedFailure>,
    pub effect: Effect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Success,
    Failure,
}

impl JobState {
    fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Success => "success",
            JobState::Failure => "failure",
        }
    }
}

impl Job {
    pub fn state(&self, now: Instant) -> JobState {
        if now < self.start_at {
            JobState::Queued
        } else if now < self.end_at {
            JobState::Running
        } else if self.failure.is_some() {
            JobState::Failure
        } else {
            JobState::Success
        }
    }

    pub fn link(uuid: &str) -> Value {
        json!({ "uuid": uuid, "_links": { "self": { "href": format!("/api/cluster/jobs/{uuid}") } } })
    }

    fn to_json(&self, clock: &Clock, now: Instant) -> Value {
        let state = self.state(now);
        let mut job = json!({
            "uuid": self.uuid,
            "description": self.description,
            "state": state.as_str(),
            "svm": { "name": self.svm_name, "uuid": self.svm_uuid,
                "_links": { "self": { "href": format!("/api/svm/svms/{}", self.svm_uuid) } } },
            "_links": { "self": { "href": format!("/api/cluster/jobs/{}", self.uuid) } },
        });
        let (message, code) = match (state, &self.failure) {
            (JobState::Queued, _) => ("Queued".to_owned(), 0),
            (JobState::Running, _) => ("Running".to_owned(), 0),
            (JobState::Success, _) => ("success".to_owned(), 0),
            (JobState::Failure, Some(f)) => (f.message.clone(), f.code.parse::<i64>().unwrap_or(0)),
            (JobState::Failure, None) => (String::new(), 0),
        };
        if let Some(obj) = job.as_object_mut() {
            obj.insert("message".into(), json!(message));
            obj.insert("code".into(), json!(code));
            if state != JobState::Queued {
                obj.insert("start_time".into(), json!(clock.timestamp(self.start_at)));
            }
            if matches!(state, JobState::Success | JobState::Failure) {
                obj.insert("end_time".into(), json!(clock.timestamp(self.end_at)));
            }
            if let (JobState::Failure, Some(f)) = (state, &self.failure) {
                obj.insert(
                    "error".into(),
                    json!({ "message": f.message, "code": f.code }),
                );
            }
        }
        job
    }
}

/// Jobs by uuid, plus two orderings by end time: in flight (effect pending) and finished
/// (waiting to expire); both let `advance` touch only the jobs whose moment has come.
#[derive(Default)]
pub struct Jobs {
    by_uuid: HashMap<String, Job>,
    in_flight: BTreeSet<(Instant, String)>,
    finished: BTreeSet<(Instant, String)>,
    /// The most SVM jobs that ever ran at once, and how many were refused for the limit: what a
    /// client that keeps to ONTAP's limit must keep at most the limit and zero.
    peak_in_flight: usize,
    refused: u64,
}

impl Jobs {
    pub fn pop_ended(&mut self, now: Instant) -> Option<Job> {
        let first = self.in_flight.first()?;
        if first.0 > now {
            return None;
        }
        let (end_at, uuid) = self.in_flight.pop_first()?;
        self.finished.insert((end_at, uuid.clone()));
        self.by_uuid.get(&uuid).cloned()
    }

    pub fn expire(&mut self, now: Instant, expiry: Duration) {
        while let Some((end_at, _)) = self.finished.first() {
            if *end_at + expiry > now {
                break;
            }
            if let Some((_, uuid)) = self.finished.pop_first() {
                self.by_uuid.remove(&uuid);
            }
        }
    }

    /// SVM jobs in flight: ONTAP's limit on concurrent jobs is for SVM jobs only.
    pub fn in_flight_count(&self) -> usize {
        self.in_flight
            .iter()
            .filter_map(|(_, uuid)| self.by_uuid.get(uuid))
            .filter(|job| job.effect.is_svm_job())
            .count()
    }

    /// `{peak_in_flight, refused}` since the start (or the last reset).
    pub fn stats(&self) -> Value {
        json!({ "peak_in_flight": self.peak_in_flight, "refused": self.refused })
    }

    /// The SVM a rename still in flight gives this name to: the name is reserved meanwhile.
    pub fn renaming_to(&self, name: &str) -> Option<&str> {
        self.in_flight
            .iter()
            .filter_map(|(_, uuid)| self.by_uuid.get(uuid))
            .find_map(|job| match &job.effect {
                Effect::Modify(svm, patch) if patch.name.as_deref() == Some(name) => {
                    Some(svm.as_str())
                }
                _ => None,
            })
    }
}

/// A copy of a job with what its JSON needs.
pub struct JobRow {
    job: Job,
    clock: Clock,
    now: Instant,
}

impl Row for JobRow {
    fn to_json(&self) -> Value {
        self.job.to_json(&self.clock, self.now)
    }
}

impl Model {
    /// Starts an SVM job, refusing when ONTAP's limit of concurrent SVM jobs is reached.
    pub(super) fn check_job_slot(&mut self) -> ApiResult<()> {
        let limit = self.settings.max_concurrent_svm_jobs;
        if limit > 0 && self.jobs.in_flight_count() >= limit {
            self.jobs.refused += 1;
            return Err(ApiError::bad_request(
                codes::SVM_JOB_LIMIT,
                format!(
                    "The maximum number of concurrent SVM jobs ({limit}) is already running. Wait a few minutes, and then try the command again."
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn start_job(
        &mut self,
        description: String,
        svm: (&str, &str),
        effect: Effect,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> Job {
        let duration = Duration::from_millis(self.settings.job_duration_ms);
        let job = Job {
            uuid: Uuid::new_v4().to_string(),
            description,
            svm_uuid: svm.0.to_owned(),
            svm_name: svm.1.to_owned(),
            start_at: now + (duration / 5).min(MAX_QUEUED),
            end_at: now + duration,
            failure,
            effect,
        };
        self.jobs.in_flight.insert((job.end_at, job.uuid.clone()));
        self.jobs.by_uuid.insert(job.uuid.clone(), job.clone());
        if job.effect.is_svm_job() {
            let in_flight = self.jobs.in_flight_count();
            self.jobs.peak_in_flight = self.jobs.peak_in_flight.max(in_flight);
        }
        job
    }

    pub(super) fn finish_job(&mut self, job: &Job) {
        let failed = job.failure.is_some();
        match &job.effect {
            Effect::Create(uuid) if failed => self.remove_svm(uuid),
            Effect::Create(uuid) => self.complete_svm_creation(uuid),
            Effect::Modify(uuid, patch) if !failed => self.apply_svm_patch(uuid, patch),
            Effect::Modify(..) => {}
            Effect::Delete(uuid) if failed => self.cancel_svm_deletion(uuid),
            Effect::Delete(uuid) => self.remove_svm(uuid),
            Effect::Storage(effect) => self.finish_storage_job(effect, failed),
        }
    }

    pub fn job_json(&self, uuid: &str, now: Instant) -> ApiResult<Value> {
        self.jobs
            .by_uuid
            .get(uuid)
            .map(|j| j.to_json(&self.clock, now))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    /// The jobs that can match the query, sorted by uuid (the collection's cursor key); one
    /// look-up when the query pins a uuid. Jobs live only minutes, so the rest is a scan of
    /// the few thousand there can be at most.
    pub fn job_rows(&self, q: &ListQuery, now: Instant) -> Vec<JobRow> {
        let mut jobs: Vec<&Job> = match q.exact("uuid") {
            Some(uuid) => self.jobs.by_uuid.get(uuid).into_iter().collect(),
            None => {
                let start = q.cursor("uuid").unwrap_or_default();
                let svm = q.exact("svm.uuid");
                self.jobs
                    .by_uuid
                    .values()
                    .filter(|j| j.uuid.as_str() >= start)
                    .filter(|j| svm.is_none_or(|s| s == j.svm_uuid))
                    .collect()
            }
        };
        jobs.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        jobs.into_iter()
            .map(|job| JobRow {
                job: job.clone(),
                clock: self.clock,
                now,
            })
            .collect()
    }
}
