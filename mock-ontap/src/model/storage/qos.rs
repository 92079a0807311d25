//! QoS policies (`/api/storage/qos/policies`): fixed throughput limits an SVM owns, applied to
//! the SVM itself (`qos_policy` of an SVM PATCH) or to its volumes. Create, modify and delete
//! are jobs (202 + job), as NetApp's REST reference answers them; a created policy is listed
//! once its job succeeded, its name is taken from the moment the POST is accepted.

use std::time::Instant;

use serde_json::{Value, json};

use super::{Storage, at, bool_at, link, new_uuid, str_at, u64_at};
use crate::error::{ApiError, ApiResult, codes};
use crate::model::job::{Effect, InjectedFailure, Job, StorageEffect};
use crate::model::{Model, Principal};

/// A fixed policy's limits; 0 means none, as netapp-ontap's `QosPolicyFixed` says of each.
#[derive(Debug, Clone, Default)]
pub(super) struct Fixed {
    max_iops: u64,
    max_mbps: u64,
    min_iops: u64,
    min_mbps: u64,
    capacity_shared: bool,
}

#[derive(Debug, Clone)]
pub(super) struct QosPolicy {
    uuid: String,
    name: String,
    svm: String,
    fixed: Fixed,
    pgid: u64,
    pending: bool,
}

/// Policy group ids as the mock hands them out, above those of ONTAP's preset policies.
const FIRST_PGID: u64 = 1000;

/// The release from which an SVM's policy and its volumes' policies may nest: "Beginning with
/// ONTAP 9.18.1, you can use nested QoS policies" (NetApp, *QoS policy group assignment
/// restrictions*). Before it, an SVM with a policy and its storage objects with policies exclude
/// each other.
const NESTED_QOS_SINCE: (u32, u32, u32) = (9, 18, 1);

impl QosPolicy {
    pub(super) fn owned_by(&self, svm: &str) -> bool {
        self.svm == svm
    }
}

impl Fixed {
    /// The limits a body sets, on top of `self`.
    fn updated(&self, body: &Value) -> ApiResult<Fixed> {
        let fixed = Fixed {
            max_iops: u64_at(body, "fixed.max_throughput_iops")?.unwrap_or(self.max_iops),
            max_mbps: u64_at(body, "fixed.max_throughput_mbps")?.unwrap_or(self.max_mbps),
            min_iops: u64_at(body, "fixed.min_throughput_iops")?.unwrap_or(self.min_iops),
            min_mbps: u64_at(body, "fixed.min_throughput_mbps")?.unwrap_or(self.min_mbps),
            capacity_shared: bool_at(body, "fixed.capacity_shared")?
                .unwrap_or(self.capacity_shared),
        };
        for (min, max, field) in [
            (fixed.min_iops, fixed.max_iops, "fixed.min_throughput_iops"),
            (fixed.min_mbps, fixed.max_mbps, "fixed.min_throughput_mbps"),
        ] {
            if max != 0 && min > max {
                return Err(ApiError::invalid_value(
                    field,
                    format!("the minimum {min} is above the maximum {max}"),
                ));
            }
        }
        Ok(fixed)
    }

    fn to_json(&self) -> Value {
        json!({
            "max_throughput_iops": self.max_iops,
            "max_throughput_mbps": self.max_mbps,
            "min_throughput_iops": self.min_iops,
            "min_throughput_mbps": self.min_mbps,
            "capacity_shared": self.capacity_shared,
        })
    }
}

impl Storage {
    /// The (uuid, name) of a policy that exists.
    pub fn qos_policy_name(&self, uuid: &str) -> Option<(&str, &str)> {
        self.qos_policies
            .get(uuid)
            .filter(|p| !p.pending)
            .map(|p| (p.uuid.as_str(), p.name.as_str()))
    }

    /// The uuid of the SVM's policy named by uuid and/or name (both must agree).
    pub fn qos_policy_by(&self, svm: &str, uuid: Option<&str>, name: Option<&str>) -> Option<&str> {
        if uuid.is_none() && name.is_none() {
            return None;
        }
        self.qos_policies
            .values()
            .filter(|p| !p.pending && p.svm == svm)
            .find(|p| uuid.is_none_or(|u| u == p.uuid) && name.is_none_or(|n| n == p.name))
            .map(|p| p.uuid.as_str())
    }

    /// Whether the policy sets a throughput floor, which ONTAP applies to no SVM ("A policy
    /// group that defines a throughput floor cannot be applied to an SVM", NetApp, *Set a
    /// throughput floor with QoS*).
    pub fn qos_policy_has_floor(&self, uuid: &str) -> bool {
        self.qos_policies
            .get(uuid)
            .is_some_and(|p| p.fixed.min_iops != 0 || p.fixed.min_mbps != 0)
    }

    fn qos_policy_named(&self, name: &str) -> Option<&QosPolicy> {
        self.qos_policies.values().find(|p| p.name == name)
    }
}

impl Model {
    /// An SVM PATCH applying a policy to `svm`: refused before nesting while a volume, LUN or
    /// namespace of the SVM has a policy of its own.
    pub(crate) fn check_svm_qos_nesting(&self, svm: &str) -> ApiResult<()> {
        if self.cluster.version.at_least(NESTED_QOS_SINCE) {
            return Ok(());
        }
        let storage = &self.storage;
        let volume = storage
            .volumes
            .values()
            .any(|v| v.svm == svm && v.qos_policy.is_some());
        let block = storage
            .luns
            .values()
            .chain(storage.namespaces.values())
            .any(|b| b.svm == svm && b.qos_policy.is_some());
        if volume || block {
            return Err(ApiError::bad_request(
                codes::INVALID_FIELD,
                "Cannot assign a QoS policy group to the Vserver: a storage object it contains belongs to a policy group.",
            )
            .with_target("qos_policy"));
        }
        Ok(())
    }

    /// A volume, LUN or namespace of `svm` created naming a policy (at `field` of `body`):
    /// refused before nesting while the SVM applies one.
    pub(crate) fn check_object_qos_nesting(
        &self,
        svm: &str,
        body: &Value,
        field: &str,
    ) -> ApiResult<()> {
        let applied = self
            .svm(svm)
            .and_then(|s| s.qos_policy.as_deref())
            .is_some();
        if applied
            && str_at(body, field).is_some()
            && !self.cluster.version.at_least(NESTED_QOS_SINCE)
        {
            return Err(ApiError::bad_request(
                codes::INVALID_FIELD,
                "Cannot assign a QoS policy group to the storage object: its Vserver belongs to a policy group.",
            )
            .with_target(field));
        }
        Ok(())
    }

    fn qos_policy_json(&self, p: &QosPolicy) -> Value {
        let volumes = self
            .storage
            .volumes
            .values()
            .filter(|v| v.svm == p.svm && v.qos_policy.as_deref() == Some(p.name.as_str()))
            .count();
        let svms =
            usize::from(self.svm(&p.svm).and_then(|s| s.qos_policy.as_deref()) == Some(&p.uuid));
        json!({
            "uuid": p.uuid,
            "name": p.name,
            "svm": self.svm_ref(&p.svm),
            "scope": "svm",
            "policy_class": "user_defined",
            "pgid": p.pgid,
            "object_count": volumes + svms,
            "fixed": p.fixed.to_json(),
            "_links": link(format!("/api/storage/qos/policies/{}", p.uuid)),
        })
    }

    /// Visible policies (created, of the principal's SVM), in uuid order, as JSON.
    pub fn qos_policy_records(&self, who: &Principal) -> Vec<Value> {
        self.storage
            .qos_policies
            .values()
            .filter(|p| !p.pending && who.may_see(&p.svm))
            .map(|p| self.qos_policy_json(p))
            .collect()
    }

    fn visible_qos_policy(&self, who: &Principal, uuid: &str) -> ApiResult<&QosPolicy> {
        self.storage
            .qos_policies
            .get(uuid)
            .filter(|p| !p.pending && who.may_see(&p.svm))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn qos_policy_record(&self, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.visible_qos_policy(who, uuid)
            .map(|p| self.qos_policy_json(p))
    }

    /// ONTAP keys policy groups by name across the cluster, whichever SVM owns them, and
    /// restricts names "to 127 alphanumeric characters including underscores "_" and hyphens
    /// "-"", starting "with an alphanumeric character" (`qos policy-group create`).
    fn check_qos_name(&self, name: &str, except: Option<&str>) -> ApiResult<()> {
        let well_formed = name.len() <= 127
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !well_formed {
            return Err(ApiError::invalid_value(
                "name",
                "a policy group name is at most 127 letters, digits, \"_\" and \"-\", starting with a letter or digit",
            ));
        }
        match self.storage.qos_policy_named(name) {
            Some(p) if Some(p.uuid.as_str()) != except => Err(ApiError::conflict(
                codes::QOS_POLICY_NAME_IN_USE,
                format!("The name \"{name}\" conflicts with an existing QoS policy name."),
            )
            .with_target("name")),
            _ => Ok(()),
        }
    }

    pub fn create_qos_policy(
        &mut self,
        who: &Principal,
        body: &Value,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<(Job, Value)> {
        let (svm, svm_name) = self.target_svm(who, body)?;
        let name = str_at(body, "name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?
            .to_owned();
        if at(body, "fixed").is_none() {
            return Err(ApiError::missing_field("fixed"));
        }
        let fixed = Fixed::default().updated(body)?;
        self.check_qos_name(&name, None)?;
        let uuid = new_uuid();
        let job = self.start_job(
            "POST /api/storage/qos/policies".into(),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::QosCreate(uuid.clone())),
            failure,
            now,
        );
        let pgid = self
            .storage
            .qos_policies
            .values()
            .map(|p| p.pgid + 1)
            .max()
            .unwrap_or(FIRST_PGID);
        self.storage.qos_policies.insert(
            uuid.clone(),
            QosPolicy {
                uuid: uuid.clone(),
                name: name.clone(),
                svm,
                fixed,
                pgid,
                pending: true,
            },
        );
        Ok((job, json!({ "uuid": uuid, "name": name })))
    }

    pub fn patch_qos_policy(
        &mut self,
        who: &Principal,
        uuid: &str,
        body: Value,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        let policy = self.visible_qos_policy(who, uuid)?;
        let svm = policy.svm.clone();
        policy.fixed.updated(&body)?;
        if let Some(name) = str_at(&body, "name") {
            if name.is_empty() {
                return Err(ApiError::invalid_value("name", "empty"));
            }
            self.check_qos_name(name, Some(uuid))?;
        }
        let svm_name = self.svm_name(&svm);
        Ok(self.start_job(
            format!("PATCH /api/storage/qos/policies/{uuid}"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::QosModify(uuid.to_owned(), body)),
            failure,
            now,
        ))
    }

    pub fn delete_qos_policy(
        &mut self,
        who: &Principal,
        uuid: &str,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        let svm = self.visible_qos_policy(who, uuid)?.svm.clone();
        let svm_name = self.svm_name(&svm);
        Ok(self.start_job(
            format!("DELETE /api/storage/qos/policies/{uuid}"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::QosDelete(uuid.to_owned())),
            failure,
            now,
        ))
    }

    pub(super) fn finish_qos_job(&mut self, effect: &StorageEffect, failed: bool) {
        match effect {
            StorageEffect::QosCreate(uuid) if failed => {
                self.storage.qos_policies.remove(uuid);
            }
            StorageEffect::QosCreate(uuid) => {
                if let Some(p) = self.storage.qos_policies.get_mut(uuid) {
                    p.pending = false;
                }
            }
            StorageEffect::QosModify(uuid, body) if !failed => self.apply_qos_patch(uuid, body),
            // "When a QoS policy is deleted any associations of the policy with a storage
            // objects are also removed." (NetApp, /storage/qos/policies)
            StorageEffect::QosDelete(uuid) if !failed => {
                if let Some(p) = self.storage.qos_policies.remove(uuid) {
                    for v in self.storage.volumes.values_mut() {
                        if v.svm == p.svm && v.qos_policy.as_deref() == Some(p.name.as_str()) {
                            v.qos_policy = None;
                        }
                    }
                    self.drop_svm_qos_policy(&p.svm, uuid);
                }
            }
            _ => {}
        }
    }

    /// A rename carries over to the volumes that name the policy.
    fn apply_qos_patch(&mut self, uuid: &str, body: &Value) {
        let Some(policy) = self.storage.qos_policies.get_mut(uuid) else {
            return;
        };
        if let Ok(fixed) = policy.fixed.updated(body) {
            policy.fixed = fixed;
        }
        let Some(new_name) = str_at(body, "name") else {
            return;
        };
        let old_name = std::mem::replace(&mut policy.name, new_name.to_owned());
        let svm = policy.svm.clone();
        for v in self.storage.volumes.values_mut() {
            if v.svm == svm && v.qos_policy.as_deref() == Some(old_name.as_str()) {
                v.qos_policy = Some(new_name.to_owned());
            }
        }
    }
}
