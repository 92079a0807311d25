//! SVMs. Creation, modification and deletion are jobs; while its create job runs an SVM is
//! visible in state `initializing` (its name is taken from the moment the POST is accepted), and
//! while its delete job runs it is in state `deleting`. A rename is a PATCH like any other: the
//! new name is reserved when the PATCH is accepted and becomes the SVM's when its job succeeds.
//!
//! One file because an SVM's states (initializing, running, deleting, a pending rename) and the
//! jobs that move it between them are one state machine: split by operation, each part would
//! have to know the others' reservations to keep a name from being taken twice.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use uuid::Uuid;

use super::job::{Effect, InjectedFailure, Job};
use super::protocol::{Protocol, ProtocolState};
use super::storage::SvmUsage;
use super::svm_request::{
    DnsSpec, MaxVolumes, NameRef, StorageLimitSpec, SvmCreate, SvmPatch, Toggle,
};
use super::{Model, Principal, Row, cluster::Cluster, narrowest, single};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;
use crate::schema;

/// ONTAP's alert threshold of an SVM's capacity limit when none is given (netapp-ontap
/// `SvmStorage.limit_threshold_alert`: "The default value is 90").
const DEFAULT_LIMIT_THRESHOLD_ALERT: u64 = 90;

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
    pub max_volumes: MaxVolumes,
    /// `storage.limit` in bytes (ONTAP 9.13.1+); `None`: no capacity limit.
    pub storage_limit: Option<u64>,
    pub limit_threshold_alert: u64,
    /// The uuid of the QoS policy applied to the SVM.
    pub qos_policy: Option<String>,
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
    usage: SvmUsage,
    /// The applied QoS policy's (uuid, name).
    qos_policy: Option<(String, String)>,
}

impl Row for SvmRow {
    fn to_json(&self) -> Value {
        let mut svm = self.svm.to_json(&self.cluster, self.now);
        if let Some(obj) = svm.as_object_mut() {
            if self.cluster.version.at_least(schema::SVM_STORAGE_SINCE) {
                obj.insert("storage".into(), self.svm.storage_json(self.usage));
            }
            if let Some((uuid, name)) = &self.qos_policy {
                obj.insert(
                    "qos_policy".into(),
                    json!({ "name": name, "uuid": uuid,
                        "_links": { "self": { "href": format!("/api/storage/qos/policies/{uuid}") } } }),
                );
            }
        }
        svm
    }
}

impl Svm {
    /// `storage`: `allocated`, `available` and `used_percentage` only while a limit is set, as
    /// netapp-ontap's `SvmStorage` says of each ("only available if storage.limit is set").
    fn storage_json(&self, usage: SvmUsage) -> Value {
        let Some(limit) = self.storage_limit else {
            return json!({ "limit_threshold_alert": self.limit_threshold_alert });
        };
        let used_percentage = (usage.allocated.saturating_mul(100))
            .checked_div(limit)
            .unwrap_or(100);
        json!({
            "limit": limit,
            "limit_threshold_alert": self.limit_threshold_alert,
            "allocated": usage.allocated,
            "available": limit.saturating_sub(usage.allocated),
            "used_percentage": used_percentage,
            "limit_threshold_exceeded": used_percentage > self.limit_threshold_alert,
        })
    }

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
            "max_volumes": match self.max_volumes {
                MaxVolumes::Unlimited => "unlimited".to_owned(),
                MaxVolumes::Limit(n) => n.to_string(),
            },
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

    fn svm_row(&self, svm: &Svm, now: Instant, usage: SvmUsage) -> SvmRow {
        let qos_policy = svm
            .qos_policy
            .as_deref()
            .and_then(|uuid| self.storage.qos_policy_name(uuid))
            .map(|(uuid, name)| (uuid.to_owned(), name.to_owned()));
        SvmRow {
            svm: svm.clone(),
            cluster: self.cluster.clone(),
            now,
            usage,
            qos_policy,
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
        let visible: Vec<&Svm> = candidates
            .into_iter()
            .filter(|s| who.may_see(&s.uuid))
            .collect();
        // One pass over the volumes for a listing, one SVM's volumes for a single record.
        let usage = match visible.as_slice() {
            [one] => std::collections::HashMap::from([(
                one.uuid.clone(),
                self.storage.usage_of(&one.uuid),
            )]),
            _ => self.storage.usage_by_svm(),
        };
        visible
            .into_iter()
            .map(|s| self.svm_row(s, now, usage.get(&s.uuid).copied().unwrap_or_default()))
            .collect()
    }

    pub fn svm_json(&self, who: &Principal, uuid: &str, now: Instant) -> ApiResult<Value> {
        self.svms
            .get(uuid)
            .filter(|s| who.may_see(&s.uuid))
            .map(|s| {
                self.svm_row(s, now, self.storage.usage_of(&s.uuid))
                    .to_json()
            })
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
        let (storage_limit, limit_threshold_alert) = match &req.storage {
            Some(spec) => storage_limit_of(spec, (None, DEFAULT_LIMIT_THRESHOLD_ALERT))?,
            None => (None, DEFAULT_LIMIT_THRESHOLD_ALERT),
        };
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
            max_volumes: req.max_volumes.unwrap_or(MaxVolumes::Unlimited),
            storage_limit,
            limit_threshold_alert,
            qos_policy: None,
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
        let svm = self.mutable_svm(uuid)?;
        let name = svm.name.clone();
        if let Some(spec) = &patch.storage {
            storage_limit_of(spec, (svm.storage_limit, svm.limit_threshold_alert))?;
        }
        if let Some(policy) = &patch.qos_policy {
            self.svm_qos_policy(uuid, policy)?;
            self.check_svm_qos_nesting(uuid)?;
        }
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

    /// The QoS policy an SVM PATCH names: it must exist and belong to the SVM, since ONTAP
    /// applies a policy only to storage objects of the policy's own SVM, and set no floor.
    fn svm_qos_policy(&self, svm: &str, policy: &NameRef) -> ApiResult<String> {
        let found = self
            .storage
            .qos_policy_by(svm, policy.uuid.as_deref(), policy.name.as_deref());
        if let Some(uuid) = found
            && self.storage.qos_policy_has_floor(uuid)
        {
            return Err(ApiError::bad_request(
                codes::INVALID_FIELD,
                "A QoS policy group that defines a throughput floor cannot be applied to a Vserver.",
            )
            .with_target("qos_policy"));
        }
        found.map(str::to_owned).ok_or_else(|| {
            ApiError::bad_request(
                codes::INVALID_FIELD,
                format!(
                    "QoS policy \"{}\" does not exist in this SVM.",
                    policy
                        .name
                        .as_deref()
                        .or(policy.uuid.as_deref())
                        .unwrap_or_default()
                ),
            )
            .with_target("qos_policy")
        })
    }

    pub(super) fn apply_svm_patch(&mut self, uuid: &str, patch: &SvmPatch) {
        let aggregates = patch
            .aggregates
            .as_ref()
            .and_then(|a| self.aggregates_of(a).ok());
        // A policy deleted while the PATCH's job ran is not applied.
        let qos_policy = patch
            .qos_policy
            .as_ref()
            .and_then(|p| self.svm_qos_policy(uuid, p).ok());
        self.svms
            .update(uuid, |svm| svm.apply(patch, aggregates, qos_policy));
    }

    /// Forgets a deleted QoS policy wherever an SVM applies it.
    pub(super) fn drop_svm_qos_policy(&mut self, svm_uuid: &str, policy_uuid: &str) {
        self.svms.update(svm_uuid, |svm| {
            if svm.qos_policy.as_deref() == Some(policy_uuid) {
                svm.qos_policy = None;
            }
        });
    }

    /// What the SVM allows a new volume of `size` bytes, checked when its POST is accepted:
    /// the refusal ONTAP gives once `max_volumes` volumes exist or the volume would take the
    /// SVM past `storage.limit`. ONTAP's messages as observed through ZAPI (see the README).
    pub(super) fn volume_allowance(
        &self,
        svm: &str,
        added_volumes: u64,
        added_bytes: u64,
    ) -> Option<InjectedFailure> {
        let svm = self.svms.get(svm)?;
        let usage = self.storage.usage_of(&svm.uuid);
        if let Some(max) = svm.max_volumes.limit()
            && added_volumes > 0
            && usage.volumes + added_volumes > max
        {
            return Some(InjectedFailure {
                code: codes::VOLUME_LIMIT_REACHED.into(),
                message: format!(
                    "Cannot create volume. Reason: Maximum volume count for Vserver {} reached.  Maximum volume count is {max}. ",
                    svm.name
                ),
            });
        }
        match svm.storage_limit {
            Some(limit)
                if added_bytes > 0 && usage.allocated.saturating_add(added_bytes) > limit =>
            {
                Some(InjectedFailure {
                    code: codes::VOLUME_LIMIT_REACHED.into(),
                    message: format!(
                        "Request to perform volume operation failed because there is insufficient storage available in the Vserver \"{}\". To increase the available storage in the Vserver, you can, for example, delete volumes, Snapshot copies, or files. Other options include raising the storage limit.",
                        svm.name
                    ),
                })
            }
            _ => None,
        }
    }

    pub(super) fn cancel_svm_deletion(&mut self, uuid: &str) {
        self.svms.update(uuid, |svm| svm.deleting = None);
    }

    /// Removes an SVM with the accounts and interfaces that belong to it.
    pub(super) fn remove_svm(&mut self, uuid: &str) {
        self.svms.remove(uuid);
        self.accounts.remove_owner(uuid);
        self.roles.remove_owner(uuid);
        self.interfaces.remove_svm(uuid);
        self.network.remove_svm(uuid);
        self.storage.remove_svm(uuid);
    }
}

impl Svm {
    fn apply(
        &mut self,
        patch: &SvmPatch,
        aggregates: Option<Vec<(String, String)>>,
        qos_policy: Option<String>,
    ) {
        let svm = self;
        if let Some(max_volumes) = patch.max_volumes {
            svm.max_volumes = max_volumes;
        }
        if let Some(spec) = &patch.storage
            && let Ok((limit, alert)) =
                storage_limit_of(spec, (svm.storage_limit, svm.limit_threshold_alert))
        {
            svm.storage_limit = limit;
            svm.limit_threshold_alert = alert;
        }
        if qos_policy.is_some() {
            svm.qos_policy = qos_policy;
        }
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

/// The (limit, alert percentage) a `storage` body leaves, from the current ones. A limit of 0
/// removes the limit (the mock's reading; see the README).
fn storage_limit_of(
    spec: &StorageLimitSpec,
    (limit, alert): (Option<u64>, u64),
) -> ApiResult<(Option<u64>, u64)> {
    let alert = match spec.limit_threshold_alert {
        Some(percent) if percent.0 > 100 => {
            return Err(ApiError::invalid_value(
                "storage.limit_threshold_alert",
                format!("{} is not a percentage", percent.0),
            ));
        }
        Some(percent) => percent.0,
        None => alert,
    };
    let limit = match spec.limit {
        Some(bytes) if bytes.0 == 0 => None,
        Some(bytes) => Some(bytes.0),
        None => limit,
    };
    Ok((limit, alert))
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
