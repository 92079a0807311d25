//! SVMs. Creation, modification and deletion are jobs; while its create job runs an SVM is
//! visible in state `initializing` (its name is taken from the moment the POST is accepted), and
//! while its delete job runs it is in state `deleting`. A rename is a PATCH like any other: the
//! new name is reserved when the PATCH is accepted and becomes the SVM's when its job succeeds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use uuid::Uuid;

use super::job::{Effect, InjectedFailure, Job};
use super::protocol::{Protocol, ProtocolState};
use super::svm_request::{DnsSpec, NameRef, SvmCreate, SvmPatch, Toggle};
use super::{Model, Principal, Row, cluster::Cluster, narrowest, single};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

pub const MAX_SVM_NAME: usize = 47;

#[derive(Debug, Clone)]
pub struct Pending {
    pub start_at: Instant,
}

#[derive(Debug, Clone)]
pub struct Svm {
    pub uuid: String,
    pub name: String,
    pub comment: String,
    pub language: String,
    pub state: String,
    pub aggregates: Vec<(String, String)>,
    pub nfs: ProtocolState,
    pub iscsi: ProtocolState,
    pub nvme: ProtocolState,
    /// `dns` as given at creation; ONTAP's DNS configuration (`/api/name-services/dns`) is not
    /// modelled beyond it.
    pub dns: Option<DnsSpec>,
    pub creating: Option<Pending>,
    pub deleting: Option<Pending>,
}

impl Svm {
    pub fn reference(&self) -> Value {
        json!({ "name": self.name, "uuid": self.uuid,
            "_links": { "self": { "href": format!("/api/svm/svms/{}", self.uuid) } } })
    }

    pub fn protocol(&self, protocol: Protocol) -> &ProtocolState {
        match protocol {
            Protocol::Nfs => &self.nfs,
            Protocol::Iscsi => &self.iscsi,
            Protocol::Nvme => &self.nvme,
        }
    }

    pub fn protocol_mut(&mut self, protocol: Protocol) -> &mut ProtocolState {
        match protocol {
            Protocol::Nfs => &mut self.nfs,
            Protocol::Iscsi => &mut self.iscsi,
            Protocol::Nvme => &mut self.nvme,
        }
    }

    fn state_at(&self, now: Instant) -> &str {
        if self.creating.is_some() {
            "initializing"
        } else if self.deleting.as_ref().is_some_and(|d| now >= d.start_at) {
            "deleting"
        } else {
            &self.state
        }
    }
}

/// SVMs by uuid, with the name index kept in step by every change.
#[derive(Default)]
pub struct Svms {
    by_uuid: BTreeMap<String, Svm>,
    by_name: HashMap<String, String>,
}

impl Svms {
    pub fn get(&self, uuid: &str) -> Option<&Svm> {
        self.by_uuid.get(uuid)
    }

    pub fn uuid_of(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(String::as_str)
    }

    fn insert(&mut self, svm: Svm) {
        self.by_name.insert(svm.name.clone(), svm.uuid.clone());
        self.by_uuid.insert(svm.uuid.clone(), svm);
    }

    fn remove(&mut self, uuid: &str) -> Option<Svm> {
        let svm = self.by_uuid.remove(uuid)?;
        self.by_name.remove(&svm.name);
        Some(svm)
    }

    /// Changes an SVM in place; a changed name moves in the index.
    pub(super) fn update(&mut self, uuid: &str, change: impl FnOnce(&mut Svm)) {
        let Some(svm) = self.by_uuid.get_mut(uuid) else {
            return;
        };
        let old_name = svm.name.clone();
        change(svm);
        if svm.name != old_name {
            self.by_name.remove(&old_name);
            self.by_name.insert(svm.name.clone(), svm.uuid.clone());
        }
    }

    /// SVMs in uuid order, from the paging cursor on.
    pub(super) fn starting_at(&self, start: &str) -> impl Iterator<Item = &Svm> {
        self.by_uuid.range(start.to_owned()..).map(|(_, svm)| svm)
    }
}

/// A copy of an SVM with what its JSON needs.
pub struct SvmRow {
    svm: Svm,
    cluster: Arc<Cluster>,
    now: Instant,
}

impl Row for SvmRow {
    fn to_json(&self) -> Value {
        let SvmRow { svm, cluster, now } = self;
        svm.to_json(cluster, *now)
    }
}

impl Svm {
    fn to_json(&self, cluster: &Cluster, now: Instant) -> Value {
        // `enabled` is the protocol's service as `/api/protocols/...` shows it: false while no
        // service exists.
        let protocol = |p: &ProtocolState| json!({ "enabled": p.enabled(), "allowed": p.allowed });
        let aggregates: Vec<Value> = self
            .aggregates
            .iter()
            .map(|(uuid, name)| json!({ "name": name, "uuid": uuid }))
            .collect();
        let mut svm = json!({
            "uuid": self.uuid,
            "name": self.name,
            "subtype": "default",
            "state": self.state_at(now),
            "comment": self.comment,
            "language": self.language,
            "ipspace": cluster.ipspace_json(),
            "aggregates": aggregates,
            "nfs": protocol(&self.nfs),
            "iscsi": protocol(&self.iscsi),
            "nvme": protocol(&self.nvme),
            "cifs": { "enabled": false, "allowed": true },
            "fcp": { "enabled": false, "allowed": true },
            "_links": { "self": { "href": format!("/api/svm/svms/{}", self.uuid) } },
        });
        if let (Some(dns), Some(obj)) = (&self.dns, svm.as_object_mut()) {
            obj.insert(
                "dns".into(),
                json!({ "domains": dns.domains, "servers": dns.servers }),
            );
        }
        svm
    }
}

impl Model {
    pub(crate) fn svm(&self, uuid: &str) -> Option<&Svm> {
        self.svms.get(uuid)
    }

    /// An SVM another object may refer to: it exists and its creation has finished.
    pub(super) fn usable_svm(&self, uuid: Option<&str>, name: Option<&str>) -> ApiResult<&Svm> {
        let by_name = name.and_then(|n| self.svms.uuid_of(n));
        let uuid = match (uuid, by_name) {
            (Some(u), Some(by_name)) if u != by_name => None,
            (Some(u), _) => Some(u),
            (None, Some(u)) => Some(u),
            (None, None) if name.is_none() => {
                return Err(ApiError::missing_field("svm"));
            }
            (None, None) => None,
        };
        let svm = uuid.and_then(|u| self.svms.get(u)).ok_or_else(|| {
            ApiError::bad_request(
                codes::SVM_NOT_FOUND,
                format!(
                    "SVM \"{}\" does not exist.",
                    name.or(uuid).unwrap_or_default()
                ),
            )
            .with_target("svm")
        })?;
        if svm.creating.is_some() {
            return Err(being_created(&svm.name));
        }
        Ok(svm)
    }

    fn svm_row(&self, svm: &Svm, now: Instant) -> SvmRow {
        SvmRow {
            svm: svm.clone(),
            cluster: self.cluster.clone(),
            now,
        }
    }

    /// The SVMs the principal may see that can match the query, in uuid order: through the
    /// uuid and name indexes when the query pins either, else from the paging cursor on.
    pub fn svm_rows(&self, who: &Principal, q: &ListQuery, now: Instant) -> Vec<SvmRow> {
        let pinned = narrowest([
            q.exact("uuid").map(|u| single(Some(u))),
            q.exact("name").map(|n| single(self.svms.uuid_of(n))),
            who.svm_scope().map(|u| single(Some(u))),
        ]);
        let candidates: Vec<&Svm> = match &pinned {
            Some(uuids) => uuids.iter().filter_map(|u| self.svms.get(u)).collect(),
            None => self
                .svms
                .starting_at(q.cursor("uuid").unwrap_or_default())
                .collect(),
        };
        candidates
            .into_iter()
            .filter(|s| who.may_see(&s.uuid))
            .map(|s| self.svm_row(s, now))
            .collect()
    }

    pub fn svm_json(&self, who: &Principal, uuid: &str, now: Instant) -> ApiResult<Value> {
        self.svms
            .get(uuid)
            .filter(|s| who.may_see(&s.uuid))
            .map(|s| self.svm_row(s, now).to_json())
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    /// A name is taken by an SVM (other than `except`) or reserved by a rename in flight.
    fn svm_name_taken(&self, name: &str, except: Option<&str>) -> bool {
        self.svms.uuid_of(name).is_some_and(|u| Some(u) != except)
            || self
                .jobs
                .renaming_to(name)
                .is_some_and(|u| Some(u) != except)
    }

    fn aggregates_of(&self, refs: &[NameRef]) -> ApiResult<Vec<(String, String)>> {
        refs.iter()
            .map(|r| {
                self.cluster
                    .aggregate_by(r.uuid.as_deref(), r.name.as_deref())
                    .map(|a| (a.uuid.clone(), a.name.clone()))
                    .ok_or_else(|| {
                        ApiError::bad_request(
                            codes::INVALID_FIELD,
                            format!(
                                "Aggregate \"{}\" does not exist.",
                                r.name.as_deref().or(r.uuid.as_deref()).unwrap_or_default()
                            ),
                        )
                        .with_target("aggregates")
                    })
            })
            .collect()
    }

    pub fn create_svm(
        &mut self,
        req: SvmCreate,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<(Job, String)> {
        let name = req
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?;
        validate_name_length(&name)?;
        if let Some(ipspace) = &req.ipspace {
            let by_name = ipspace.name.as_deref().is_none_or(|n| n == "Default");
            let by_uuid = ipspace
                .uuid
                .as_deref()
                .is_none_or(|u| u == self.cluster.ipspace_uuid);
            if !(by_name && by_uuid) {
                return Err(
                    ApiError::bad_request(codes::INVALID_FIELD, "IPspace does not exist.")
                        .with_target("ipspace"),
                );
            }
        }
        let aggregates = self.aggregates_of(req.aggregates.as_deref().unwrap_or_default())?;
        if self.svm_name_taken(&name, None) {
            return Err(name_in_use(&name));
        }
        self.check_job_slot()?;
        let uuid = Uuid::new_v4().to_string();
        let job = self.start_job(
            "POST /api/svm/svms".into(),
            (&uuid, &name),
            Effect::Create(uuid.clone()),
            failure,
            now,
        );
        let protocol = |t: &Option<Toggle>| ProtocolState::at_create(t.as_ref());
        let svm = Svm {
            uuid: uuid.clone(),
            name: name.clone(),
            comment: req.comment.unwrap_or_default(),
            language: req.language.unwrap_or_else(|| "c.utf_8".into()),
            state: "running".into(),
            aggregates,
            nfs: protocol(&req.nfs),
            iscsi: protocol(&req.iscsi),
            nvme: protocol(&req.nvme),
            dns: req.dns,
            creating: Some(Pending {
                start_at: job.start_at,
            }),
            deleting: None,
        };
        self.svms.insert(svm);
        Ok((job, uuid))
    }

    /// The SVM a PATCH or DELETE may act on: it exists and no create or delete job holds it.
    fn mutable_svm(&self, uuid: &str) -> ApiResult<&Svm> {
        let svm = self
            .svms
            .get(uuid)
            .ok_or_else(|| ApiError::not_found("uuid"))?;
        if svm.creating.is_some() {
            return Err(being_created(&svm.name));
        }
        if svm.deleting.is_some() {
            return Err(ApiError::conflict(
                codes::SVM_BEING_DELETED,
                format!(
                    "SVM \"{}\" is being deleted. Wait a few minutes, and then try the command again.",
                    svm.name
                ),
            ));
        }
        Ok(svm)
    }

    pub fn patch_svm(
        &mut self,
        uuid: &str,
        patch: SvmPatch,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        let name = self.mutable_svm(uuid)?.name.clone();
        if let Some(state) = &patch.state
            && !matches!(state.as_str(), "running" | "stopped")
        {
            return Err(ApiError::invalid_value("state", state));
        }
        if let Some(aggregates) = &patch.aggregates {
            self.aggregates_of(aggregates)?;
        }
        if let Some(new_name) = &patch.name {
            if new_name.is_empty() {
                return Err(ApiError::invalid_value("name", "empty"));
            }
            validate_name_length(new_name)?;
            if self.svm_name_taken(new_name, Some(uuid)) {
                return Err(name_in_use(new_name));
            }
        }
        self.check_job_slot()?;
        Ok(self.start_job(
            format!("PATCH /api/svm/svms/{uuid}"),
            (uuid, &name),
            Effect::Modify(uuid.to_owned(), patch),
            failure,
            now,
        ))
    }

    pub fn delete_svm(
        &mut self,
        uuid: &str,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        let name = self.mutable_svm(uuid)?.name.clone();
        if self.storage.svm_has_volumes(uuid) {
            return Err(ApiError::bad_request(
                codes::SVM_HAS_VOLUMES,
                format!("Cannot delete SVM \"{name}\" because it contains volumes."),
            ));
        }
        self.check_job_slot()?;
        let job = self.start_job(
            format!("DELETE /api/svm/svms/{uuid}"),
            (uuid, &name),
            Effect::Delete(uuid.to_owned()),
            failure,
            now,
        );
        let start_at = job.start_at;
        self.svms.update(uuid, |svm| {
            svm.deleting = Some(Pending { start_at });
        });
        Ok(job)
    }

    pub(super) fn complete_svm_creation(&mut self, uuid: &str) {
        if self.svms.get(uuid).is_none() {
            return;
        }
        self.svms.update(uuid, |svm| svm.creating = None);
        self.storage.add_default_policy(uuid);
        if self.settings.create_vsadmin_account {
            self.add_builtin_vsadmin(uuid);
        }
    }

    pub(super) fn apply_svm_patch(&mut self, uuid: &str, patch: &SvmPatch) {
        let aggregates = patch
            .aggregates
            .as_ref()
            .and_then(|a| self.aggregates_of(a).ok());
        self.svms.update(uuid, |svm| svm.apply(patch, aggregates));
    }

    pub(super) fn cancel_svm_deletion(&mut self, uuid: &str) {
        self.svms.update(uuid, |svm| svm.deleting = None);
    }

    /// Removes an SVM with the accounts and interfaces that belong to it.
    pub(super) fn remove_svm(&mut self, uuid: &str) {
        self.svms.remove(uuid);
        self.accounts.remove_owner(uuid);
        self.interfaces.remove_svm(uuid);
        self.storage.remove_svm(uuid);
    }
}

impl Svm {
    fn apply(&mut self, patch: &SvmPatch, aggregates: Option<Vec<(String, String)>>) {
        let svm = self;
        // The new name moves in the name index through `Svms::update`.
        if let Some(name) = &patch.name {
            svm.name = name.clone();
        }
        if let Some(comment) = &patch.comment {
            svm.comment = comment.clone();
        }
        if let Some(state) = &patch.state {
            svm.state = state.clone();
        }
        if let Some(language) = &patch.language {
            svm.language = language.clone();
        }
        if let Some(aggregates) = aggregates {
            svm.aggregates = aggregates;
        }
        let set = |state: &mut ProtocolState, toggle: &Option<Toggle>| {
            if let Some(allowed) = toggle.as_ref().and_then(|t| t.allowed) {
                state.allowed = allowed;
            }
        };
        set(&mut svm.nfs, &patch.nfs);
        set(&mut svm.iscsi, &patch.iscsi);
        set(&mut svm.nvme, &patch.nvme);
    }
}

fn validate_name_length(name: &str) -> ApiResult<()> {
    if name.chars().count() > MAX_SVM_NAME {
        return Err(ApiError::bad_request(
            codes::SVM_NAME_TOO_LONG,
            format!("The SVM name \"{name}\" is too long. The maximum supported length is {MAX_SVM_NAME} characters."),
        )
        .with_target("name"));
    }
    Ok(())
}

fn name_in_use(name: &str) -> ApiError {
    ApiError::conflict(
        codes::SVM_NAME_IN_USE,
        format!("Duplicate SVM name \"{name}\". A Vserver with that name already exists."),
    )
    .with_target("name")
}

fn being_created(name: &str) -> ApiError {
    ApiError::conflict(
        codes::SVM_BEING_CREATED,
        format!(
            "SVM \"{name}\" is still being created. Wait a few minutes, and then try the command again."
        ),
    )
}
