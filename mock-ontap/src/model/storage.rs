//! An SVM's storage, as Trident's ONTAP drivers use it: FlexVol volumes and their snapshots,
//! NFS export policies and rules, NVMe namespaces, subsystems, hosts and maps, LUNs, igroups,
//! initiators and LUN maps, and the iSCSI default initiator security.
//!
//! Volume and snapshot changes are jobs, as ONTAP documents them (202 + job); everything else
//! is synchronous. An SVM account sees and changes only its own SVM's objects: another SVM's
//! answer 404 as if absent, as the SVM itself does. Bodies are checked against the fields a
//! request may carry (`FIELDS` lists) and then read as JSON, since every request here sets a
//! handful of optional fields.

use std::collections::BTreeMap;
use std::time::Instant;

use axum::http::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use super::job::{Effect, InjectedFailure, Job};
use super::{Model, Principal};
use crate::error::{ApiError, ApiResult, codes};

/// ONTAP's default volume size when a POST names none ("size - 20MB", POST /storage/volumes).
const DEFAULT_VOLUME_SIZE: u64 = 20 * 1024 * 1024;
/// Snapshot reserve when a POST names none. Not confirmed by NetApp's REST docs (ONTAP's CLI
/// default); see the README.
const DEFAULT_SNAPSHOT_RESERVE: u64 = 5;

/// The effect of a volume or snapshot job, applied when the job ends.
#[derive(Debug, Clone)]
pub enum StorageEffect {
    VolumeCreate(String),
    VolumeModify(String, Value),
    VolumeDelete(String),
    SnapshotCreate(String, String),
    SnapshotDelete(String, String),
}

#[derive(Debug, Clone)]
struct Snapshot {
    uuid: String,
    name: String,
    comment: String,
    create_time: String,
    /// Until its create job succeeds the snapshot is not listed.
    pending: bool,
}

#[derive(Debug, Clone)]
struct Volume {
    uuid: String,
    name: String,
    svm: String,
    size: u64,
    aggregates: Vec<(String, String)>,
    guarantee: String,
    snapshot_policy: String,
    snapshot_reserve: u64,
    snapdir: bool,
    comment: String,
    encryption: bool,
    qos_policy: Option<String>,
    tiering_policy: Option<String>,
    nas_path: String,
    security_style: String,
    unix_permissions: u64,
    export_policy: String,
    create_time: String,
    snapshots: Vec<Snapshot>,
    /// Until its create job succeeds the volume is not listed (its name is taken meanwhile).
    pending: bool,
}

#[derive(Debug, Clone)]
struct Rule {
    index: u64,
    body: Value,
}

#[derive(Debug, Clone)]
struct ExportPolicy {
    id: u64,
    name: String,
    svm: String,
    rules: Vec<Rule>,
}

/// A LUN or an NVMe namespace: both live in a volume at `/vol/<volume>/<name>`.
#[derive(Debug, Clone)]
struct Block {
    uuid: String,
    name: String,
    svm: String,
    volume: String,
    os_type: String,
    size: u64,
    comment: String,
    qos_policy: Option<String>,
    /// LUNs only: `space.guarantee.requested`, `space.scsi_thin_provisioning_support_enabled`.
    guarantee: bool,
    thin_provisioning: bool,
    create_time: String,
    /// LUNs only: caller-defined name/value pairs, in the order they were added.
    attributes: Vec<(String, String)>,
}

/// An igroup (initiators) or an NVMe subsystem (host NQNs).
#[derive(Debug, Clone)]
struct Group {
    uuid: String,
    name: String,
    svm: String,
    os_type: String,
    protocol: String,
    comment: String,
    members: Vec<String>,
}

#[derive(Debug, Clone)]
struct Map {
    block: String,
    group: String,
    number: u64,
}

#[derive(Default)]
pub struct Storage {
    volumes: BTreeMap<String, Volume>,
    policies: BTreeMap<u64, ExportPolicy>,
    /// The high half of an SVM's export policy ids, per SVM uuid.
    policy_base: BTreeMap<String, u64>,
    namespaces: BTreeMap<String, Block>,
    luns: BTreeMap<String, Block>,
    subsystems: BTreeMap<String, Group>,
    igroups: BTreeMap<String, Group>,
    namespace_maps: Vec<Map>,
    lun_maps: Vec<Map>,
}

/// Which kind of block object and group a request is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum San {
    /// LUNs, igroups, initiators, LUN maps.
    Iscsi,
    /// Namespaces, subsystems, hosts, subsystem maps.
    Nvme,
}

fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

fn str_at<'a>(value: &'a Value, path: &str) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

fn u64_at(value: &Value, path: &str) -> ApiResult<Option<u64>> {
    match at(value, path) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ApiError::invalid_value(path, v)),
    }
}

fn bool_at(value: &Value, path: &str) -> ApiResult<Option<bool>> {
    match at(value, path) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| ApiError::invalid_value(path, v)),
    }
}

fn link(href: String) -> Value {
    json!({ "self": { "href": href } })
}

fn reference(name: &str, uuid: &str, href: String) -> Value {
    json!({ "name": name, "uuid": uuid, "_links": link(href) })
}

fn new_uuid() -> String {
    Uuid::new_v4().to_string()
}

/// Splits `/vol/<volume>/<name>`, the only path form LUNs and namespaces have in a FlexVol.
fn split_path(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/vol/")?;
    let (volume, name) = rest.split_once('/')?;
    (!volume.is_empty() && !name.is_empty() && !name.contains('/')).then_some((volume, name))
}

impl San {
    fn block_label(self) -> &'static str {
        match self {
            San::Iscsi => "LUN",
            San::Nvme => "namespace",
        }
    }

    fn group_label(self) -> &'static str {
        match self {
            San::Iscsi => "igroup",
            San::Nvme => "subsystem",
        }
    }
}

impl Storage {
    fn blocks(&self, san: San) -> &BTreeMap<String, Block> {
        match san {
            San::Iscsi => &self.luns,
            San::Nvme => &self.namespaces,
        }
    }

    fn blocks_mut(&mut self, san: San) -> &mut BTreeMap<String, Block> {
        match san {
            San::Iscsi => &mut self.luns,
            San::Nvme => &mut self.namespaces,
        }
    }

    fn groups(&self, san: San) -> &BTreeMap<String, Group> {
        match san {
            San::Iscsi => &self.igroups,
            San::Nvme => &self.subsystems,
        }
    }

    fn groups_mut(&mut self, san: San) -> &mut BTreeMap<String, Group> {
        match san {
            San::Iscsi => &mut self.igroups,
            San::Nvme => &mut self.subsystems,
        }
    }

    fn maps(&self, san: San) -> &Vec<Map> {
        match san {
            San::Iscsi => &self.lun_maps,
            San::Nvme => &self.namespace_maps,
        }
    }

    fn maps_mut(&mut self, san: San) -> &mut Vec<Map> {
        match san {
            San::Iscsi => &mut self.lun_maps,
            San::Nvme => &mut self.namespace_maps,
        }
    }

    /// Whether the SVM still holds volumes (ONTAP refuses to delete it then).
    pub fn svm_has_volumes(&self, svm: &str) -> bool {
        self.volumes.values().any(|v| v.svm == svm)
    }

    /// Forgets everything of an SVM that is gone.
    pub fn remove_svm(&mut self, svm: &str) {
        let volumes: Vec<String> = self
            .volumes
            .values()
            .filter(|v| v.svm == svm)
            .map(|v| v.uuid.clone())
            .collect();
        for uuid in volumes {
            self.remove_volume(&uuid);
        }
        self.policies.retain(|_, p| p.svm != svm);
        for san in [San::Iscsi, San::Nvme] {
            let groups: Vec<String> = self
                .groups(san)
                .values()
                .filter(|g| g.svm == svm)
                .map(|g| g.uuid.clone())
                .collect();
            for uuid in groups {
                self.groups_mut(san).remove(&uuid);
                self.maps_mut(san).retain(|m| m.group != uuid);
            }
        }
    }

    fn remove_volume(&mut self, uuid: &str) {
        self.volumes.remove(uuid);
        for san in [San::Iscsi, San::Nvme] {
            let gone: Vec<String> = self
                .blocks(san)
                .values()
                .filter(|b| b.volume == uuid)
                .map(|b| b.uuid.clone())
                .collect();
            for block in gone {
                self.blocks_mut(san).remove(&block);
                self.maps_mut(san).retain(|m| m.block != block);
            }
        }
    }

    /// The SVM's `default` export policy, made with the SVM as ONTAP does. Ids follow the one
    /// NetApp shows (netapp-ontap's Volume example: `default` is 8589934593 = 2 << 32 | 1): the
    /// high half per SVM, the low half per policy in it.
    pub fn add_default_policy(&mut self, svm: &str) {
        let base = self.policy_base.values().max().map_or(2, |b| b + 1);
        self.policy_base.insert(svm.to_owned(), base);
        let id = (base << 32) | 1;
        self.policies.insert(
            id,
            ExportPolicy {
                id,
                name: "default".into(),
                svm: svm.to_owned(),
                rules: Vec::new(),
            },
        );
    }

    fn next_policy_id(&self, svm: &str) -> u64 {
        let base = self.policy_base.get(svm).copied().unwrap_or(0);
        let last = self
            .policies
            .values()
            .filter(|p| p.svm == svm)
            .map(|p| p.id)
            .max()
            .unwrap_or(base << 32);
        last + 1
    }

    fn policy_by_name(&self, svm: &str, name: &str) -> Option<&ExportPolicy> {
        self.policies
            .values()
            .find(|p| p.svm == svm && p.name == name)
    }

    fn volume_by_name(&self, svm: &str, name: &str) -> Option<&Volume> {
        self.volumes
            .values()
            .find(|v| v.svm == svm && v.name == name)
    }
}

impl Model {
    /// The SVM a create acts in: `svm.uuid`/`svm.name` of the body, or for an SVM account its
    /// own SVM when the body names none. An SVM the principal may not see does not exist for it.
    fn target_svm(&self, who: &Principal, body: &Value) -> ApiResult<(String, String)> {
        let uuid = str_at(body, "svm.uuid");
        let name = str_at(body, "svm.name");
        let (uuid, name) = match (uuid, name, who.svm_scope()) {
            (None, None, Some(own)) => (Some(own), None),
            other => (other.0, other.1),
        };
        let svm = self.usable_svm(uuid, name)?;
        if !who.may_see(&svm.uuid) {
            return Err(ApiError::bad_request(
                codes::SVM_NOT_FOUND,
                format!(
                    "SVM \"{}\" does not exist.",
                    name.or(uuid).unwrap_or_default()
                ),
            )
            .with_target("svm"));
        }
        Ok((svm.uuid.clone(), svm.name.clone()))
    }

    fn svm_ref(&self, svm: &str) -> Value {
        match self.svm(svm) {
            Some(s) => s.reference(),
            None => json!({ "uuid": svm }),
        }
    }

    fn svm_name(&self, svm: &str) -> String {
        self.svm(svm).map(|s| s.name.clone()).unwrap_or_default()
    }

    // ---------------------------------------------------------------- volumes

    fn volume_json(&self, v: &Volume) -> Value {
        let reserve = v.size * v.snapshot_reserve / 100;
        let snapshots = v.snapshots.iter().filter(|s| !s.pending).count();
        let policy_id = self
            .storage
            .policy_by_name(&v.svm, &v.export_policy)
            .map(|p| p.id);
        let aggregates: Vec<Value> = v
            .aggregates
            .iter()
            .map(|(uuid, name)| json!({ "name": name, "uuid": uuid }))
            .collect();
        let mut volume = json!({
            "uuid": v.uuid,
            "name": v.name,
            "svm": self.svm_ref(&v.svm),
            "size": v.size,
            "state": "online",
            "style": "flexvol",
            "type": "rw",
            "comment": v.comment,
            "create_time": v.create_time,
            "language": self.svm(&v.svm).map(|s| s.language.clone()).unwrap_or_default(),
            "aggregates": aggregates,
            "guarantee": { "type": v.guarantee },
            "snapshot_policy": { "name": v.snapshot_policy },
            "snapshot_directory_access_enabled": v.snapdir,
            "snapshot_count": snapshots,
            "encryption": { "enabled": v.encryption },
            "nas": {
                "path": v.nas_path,
                "security_style": v.security_style,
                "unix_permissions": v.unix_permissions,
                "export_policy": { "name": v.export_policy, "id": policy_id },
            },
            // No data is ever written: only the snapshot reserve is set aside.
            "space": {
                "size": v.size,
                "available": v.size - reserve,
                "used": 0,
                "logical_space": { "used": 0, "available": v.size - reserve },
                "snapshot": { "used": 0, "reserve_percent": v.snapshot_reserve },
            },
            "_links": link(format!("/api/storage/volumes/{}", v.uuid)),
        });
        if let Some(obj) = volume.as_object_mut() {
            if let Some(qos) = &v.qos_policy {
                obj.insert("qos".into(), json!({ "policy": { "name": qos } }));
            }
            if let Some(tiering) = &v.tiering_policy {
                obj.insert("tiering".into(), json!({ "policy": tiering }));
            }
        }
        volume
    }

    /// Visible volumes (created, the principal's SVM), in uuid order, as JSON.
    pub fn volume_records(&self, who: &Principal) -> Vec<Value> {
        self.storage
            .volumes
            .values()
            .filter(|v| !v.pending && who.may_see(&v.svm))
            .map(|v| self.volume_json(v))
            .collect()
    }

    fn visible_volume(&self, who: &Principal, uuid: &str) -> ApiResult<&Volume> {
        self.storage
            .volumes
            .get(uuid)
            .filter(|v| !v.pending && who.may_see(&v.svm))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn volume_record(&self, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.visible_volume(who, uuid).map(|v| self.volume_json(v))
    }

    fn check_volume_fields(&self, svm: &str, body: &Value) -> ApiResult<()> {
        if let Some(policy) = str_at(body, "nas.export_policy.name")
            && self.storage.policy_by_name(svm, policy).is_none()
        {
            return Err(ApiError::bad_request(
                codes::INVALID_FIELD,
                format!("Export policy \"{policy}\" does not exist."),
            )
            .with_target("nas.export_policy.name"));
        }
        if let Some(guarantee) = str_at(body, "guarantee.type")
            && !matches!(guarantee, "volume" | "none")
        {
            return Err(ApiError::invalid_value("guarantee.type", guarantee));
        }
        if let Some(percent) = u64_at(body, "space.snapshot.reserve_percent")?
            && percent > 90
        {
            return Err(ApiError::invalid_value(
                "space.snapshot.reserve_percent",
                percent,
            ));
        }
        if let Some(size) = u64_at(body, "size")?
            && size == 0
        {
            return Err(ApiError::invalid_value("size", size));
        }
        u64_at(body, "nas.unix_permissions")?;
        bool_at(body, "snapshot_directory_access_enabled")?;
        bool_at(body, "encryption.enabled")?;
        Ok(())
    }

    pub fn create_volume(
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
        let refs = at(body, "aggregates")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| ApiError::missing_field("aggregates"))?;
        let mut aggregates = Vec::new();
        for r in refs {
            let aggregate = self
                .cluster
                .aggregate_by(str_at(r, "uuid"), str_at(r, "name"))
                .ok_or_else(|| {
                    ApiError::bad_request(codes::INVALID_FIELD, "Aggregate does not exist.")
                        .with_target("aggregates")
                })?;
            aggregates.push((aggregate.uuid.clone(), aggregate.name.clone()));
        }
        if let Some(style) = str_at(body, "style")
            && style != "flexvol"
        {
            // FlexGroups are not modelled.
            return Err(ApiError::invalid_value("style", style));
        }
        self.check_volume_fields(&svm, body)?;
        if self.storage.volume_by_name(&svm, &name).is_some() {
            return Err(ApiError::conflict(
                codes::VOLUME_NAME_IN_USE,
                format!("Duplicate volume name \"{name}\"."),
            )
            .with_target("name"));
        }
        let uuid = new_uuid();
        let job = self.start_job(
            "POST /api/storage/volumes".into(),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::VolumeCreate(uuid.clone())),
            failure,
            now,
        );
        let volume = Volume {
            uuid: uuid.clone(),
            name: name.clone(),
            svm,
            size: u64_at(body, "size")?.unwrap_or(DEFAULT_VOLUME_SIZE),
            aggregates,
            guarantee: str_at(body, "guarantee.type").unwrap_or("volume").into(),
            snapshot_policy: str_at(body, "snapshot_policy.name")
                .unwrap_or("default")
                .into(),
            snapshot_reserve: u64_at(body, "space.snapshot.reserve_percent")?
                .unwrap_or(DEFAULT_SNAPSHOT_RESERVE),
            snapdir: bool_at(body, "snapshot_directory_access_enabled")?.unwrap_or(true),
            comment: str_at(body, "comment").unwrap_or_default().into(),
            encryption: bool_at(body, "encryption.enabled")?.unwrap_or(false),
            qos_policy: str_at(body, "qos.policy.name").map(str::to_owned),
            tiering_policy: str_at(body, "tiering.policy").map(str::to_owned),
            nas_path: str_at(body, "nas.path").unwrap_or_default().into(),
            security_style: str_at(body, "nas.security_style").unwrap_or("unix").into(),
            unix_permissions: u64_at(body, "nas.unix_permissions")?.unwrap_or(755),
            export_policy: str_at(body, "nas.export_policy.name")
                .unwrap_or("default")
                .into(),
            create_time: self.clock.timestamp(now),
            snapshots: Vec::new(),
            pending: true,
        };
        self.storage.volumes.insert(uuid.clone(), volume);
        Ok((job, json!({ "uuid": uuid, "name": name })))
    }

    pub fn patch_volume(
        &mut self,
        who: &Principal,
        uuid: &str,
        body: Value,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        let volume = self.visible_volume(who, uuid)?;
        let (svm, name) = (volume.svm.clone(), volume.name.clone());
        self.check_volume_fields(&svm, &body)?;
        if let Some(new_name) = str_at(&body, "name")
            && new_name != name
            && self.storage.volume_by_name(&svm, new_name).is_some()
        {
            return Err(ApiError::conflict(
                codes::VOLUME_NAME_IN_USE,
                format!("Duplicate volume name \"{new_name}\"."),
            )
            .with_target("name"));
        }
        let svm_name = self.svm_name(&svm);
        Ok(self.start_job(
            format!("PATCH /api/storage/volumes/{uuid}"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::VolumeModify(uuid.to_owned(), body)),
            failure,
            now,
        ))
    }

    pub fn delete_volume(
        &mut self,
        who: &Principal,
        uuid: &str,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        let svm = self.visible_volume(who, uuid)?.svm.clone();
        let svm_name = self.svm_name(&svm);
        Ok(self.start_job(
            format!("DELETE /api/storage/volumes/{uuid}"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::VolumeDelete(uuid.to_owned())),
            failure,
            now,
        ))
    }

    /// Volume `volume-count` and the space guaranteed volumes take, per aggregate uuid.
    pub fn aggregate_usage(&self, aggregate: &str) -> (u64, u64) {
        self.storage
            .volumes
            .values()
            .filter(|v| !v.pending && v.aggregates.iter().any(|(a, _)| a == aggregate))
            .fold((0, 0), |(count, used), v| {
                let taken = if v.guarantee == "volume" { v.size } else { 0 };
                (count + 1, used + taken)
            })
    }

    pub(super) fn finish_storage_job(&mut self, effect: &StorageEffect, failed: bool) {
        let volumes = &mut self.storage.volumes;
        match effect {
            StorageEffect::VolumeCreate(uuid) if failed => {
                volumes.remove(uuid);
            }
            StorageEffect::VolumeCreate(uuid) => {
                if let Some(v) = volumes.get_mut(uuid) {
                    v.pending = false;
                }
            }
            StorageEffect::VolumeModify(uuid, patch) if !failed => {
                if let Some(v) = volumes.get_mut(uuid) {
                    v.apply(patch);
                }
            }
            StorageEffect::VolumeModify(..) => {}
            StorageEffect::VolumeDelete(uuid) => {
                if !failed {
                    self.storage.remove_volume(uuid);
                }
            }
            StorageEffect::SnapshotCreate(volume, snapshot) => {
                if let Some(v) = volumes.get_mut(volume) {
                    if failed {
                        v.snapshots.retain(|s| &s.uuid != snapshot);
                    } else if let Some(s) = v.snapshots.iter_mut().find(|s| &s.uuid == snapshot) {
                        s.pending = false;
                    }
                }
            }
            StorageEffect::SnapshotDelete(volume, snapshot) => {
                if let (false, Some(v)) = (failed, volumes.get_mut(volume)) {
                    v.snapshots.retain(|s| &s.uuid != snapshot);
                }
            }
        }
    }

    // ---------------------------------------------------------------- snapshots

    fn snapshot_json(&self, v: &Volume, s: &Snapshot) -> Value {
        json!({
            "uuid": s.uuid,
            "name": s.name,
            "comment": s.comment,
            "create_time": s.create_time,
            "size": 0,
            "volume": reference(&v.name, &v.uuid, format!("/api/storage/volumes/{}", v.uuid)),
            "svm": self.svm_ref(&v.svm),
            "_links": link(format!("/api/storage/volumes/{}/snapshots/{}", v.uuid, s.uuid)),
        })
    }

    pub fn snapshot_records(&self, who: &Principal, volume: &str) -> ApiResult<Vec<Value>> {
        let v = self.visible_volume(who, volume)?;
        let mut snapshots: Vec<&Snapshot> = v.snapshots.iter().filter(|s| !s.pending).collect();
        snapshots.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        Ok(snapshots
            .into_iter()
            .map(|s| self.snapshot_json(v, s))
            .collect())
    }

    pub fn snapshot_record(&self, who: &Principal, volume: &str, uuid: &str) -> ApiResult<Value> {
        let v = self.visible_volume(who, volume)?;
        v.snapshots
            .iter()
            .find(|s| !s.pending && s.uuid == uuid)
            .map(|s| self.snapshot_json(v, s))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn create_snapshot(
        &mut self,
        who: &Principal,
        volume: &str,
        body: &Value,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<(Job, Value)> {
        let v = self.visible_volume(who, volume)?;
        if str_at(body, "svm.uuid").is_some() || str_at(body, "svm.name").is_some() {
            let (named, _) = self.target_svm(who, body)?;
            if named != v.svm {
                return Err(ApiError::bad_request(
                    codes::SVM_NOT_FOUND,
                    "the SVM named is not the volume's".to_string(),
                )
                .with_target("svm"));
            }
        }
        let name = str_at(body, "name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?
            .to_owned();
        if v.snapshots.iter().any(|s| s.name == name) {
            return Err(ApiError::conflict(
                codes::SNAPSHOT_NAME_IN_USE,
                format!("Snapshot \"{name}\" already exists."),
            )
            .with_target("name"));
        }
        let svm = v.svm.clone();
        let svm_name = self.svm_name(&svm);
        let uuid = new_uuid();
        let job = self.start_job(
            format!("POST /api/storage/volumes/{volume}/snapshots"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::SnapshotCreate(
                volume.to_owned(),
                uuid.clone(),
            )),
            failure,
            now,
        );
        let snapshot = Snapshot {
            uuid: uuid.clone(),
            name: name.clone(),
            comment: str_at(body, "comment").unwrap_or_default().into(),
            create_time: self.clock.timestamp(now),
            pending: true,
        };
        if let Some(v) = self.storage.volumes.get_mut(volume) {
            v.snapshots.push(snapshot);
        }
        Ok((job, json!({ "uuid": uuid, "name": name })))
    }

    pub fn delete_snapshot(
        &mut self,
        who: &Principal,
        volume: &str,
        uuid: &str,
        failure: Option<InjectedFailure>,
        now: Instant,
    ) -> ApiResult<Job> {
        self.snapshot_record(who, volume, uuid)?;
        let svm = self.visible_volume(who, volume)?.svm.clone();
        let svm_name = self.svm_name(&svm);
        Ok(self.start_job(
            format!("DELETE /api/storage/volumes/{volume}/snapshots/{uuid}"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::SnapshotDelete(
                volume.to_owned(),
                uuid.to_owned(),
            )),
            failure,
            now,
        ))
    }

    // ---------------------------------------------------------------- export policies

    fn rule_json(&self, policy: &ExportPolicy, rule: &Rule) -> Value {
        let mut out = rule.body.clone();
        if let Some(obj) = out.as_object_mut() {
            obj.insert("index".into(), json!(rule.index));
            obj.insert(
                "_links".into(),
                link(format!(
                    "/api/protocols/nfs/export-policies/{}/rules/{}",
                    policy.id, rule.index
                )),
            );
        }
        out
    }

    fn policy_json(&self, p: &ExportPolicy) -> Value {
        let rules: Vec<Value> = p.rules.iter().map(|r| self.rule_json(p, r)).collect();
        json!({
            "id": p.id,
            "name": p.name,
            "svm": self.svm_ref(&p.svm),
            "rules": rules,
            "_links": link(format!("/api/protocols/nfs/export-policies/{}", p.id)),
        })
    }

    pub fn policy_records(&self, who: &Principal) -> Vec<Value> {
        self.storage
            .policies
            .values()
            .filter(|p| who.may_see(&p.svm))
            .map(|p| self.policy_json(p))
            .collect()
    }

    fn visible_policy(&self, who: &Principal, id: &str) -> ApiResult<&ExportPolicy> {
        id.parse::<u64>()
            .ok()
            .and_then(|id| self.storage.policies.get(&id))
            .filter(|p| who.may_see(&p.svm))
            .ok_or_else(|| ApiError::not_found("id"))
    }

    pub fn policy_record(&self, who: &Principal, id: &str) -> ApiResult<Value> {
        self.visible_policy(who, id).map(|p| self.policy_json(p))
    }

    fn check_policy_name(&self, svm: &str, name: &str) -> ApiResult<()> {
        if name.is_empty() {
            return Err(ApiError::missing_field("name"));
        }
        if self.storage.policy_by_name(svm, name).is_some() {
            return Err(ApiError::conflict(
                codes::EXPORT_POLICY_EXISTS,
                format!("Export policy \"{name}\" already exists."),
            )
            .with_target("name"));
        }
        Ok(())
    }

    pub fn create_policy(&mut self, who: &Principal, body: &Value) -> ApiResult<(u64, Value)> {
        let (svm, _) = self.target_svm(who, body)?;
        let name = str_at(body, "name").unwrap_or_default().to_owned();
        self.check_policy_name(&svm, &name)?;
        let rules = match at(body, "rules").and_then(Value::as_array) {
            Some(rules) => rules
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    rule_body(r).map(|body| Rule {
                        index: i as u64 + 1,
                        body,
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        let id = self.storage.next_policy_id(&svm);
        self.storage.policies.insert(
            id,
            ExportPolicy {
                id,
                name: name.clone(),
                svm,
                rules,
            },
        );
        Ok((id, json!({ "id": id, "name": name })))
    }

    pub fn patch_policy(&mut self, who: &Principal, id: &str, body: &Value) -> ApiResult<()> {
        let policy = self.visible_policy(who, id)?;
        let (key, svm) = (policy.id, policy.svm.clone());
        if let Some(name) = str_at(body, "name")
            && name != policy.name
        {
            self.check_policy_name(&svm, name)?;
            let old = policy.name.clone();
            for v in self.storage.volumes.values_mut() {
                if v.svm == svm && v.export_policy == old {
                    v.export_policy = name.to_owned();
                }
            }
            if let Some(p) = self.storage.policies.get_mut(&key) {
                p.name = name.to_owned();
            }
        }
        if let Some(rules) = at(body, "rules").and_then(Value::as_array) {
            let rules = rules
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    rule_body(r).map(|body| Rule {
                        index: i as u64 + 1,
                        body,
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?;
            if let Some(p) = self.storage.policies.get_mut(&key) {
                p.rules = rules;
            }
        }
        Ok(())
    }

    pub fn delete_policy(&mut self, who: &Principal, id: &str) -> ApiResult<()> {
        let policy = self.visible_policy(who, id)?;
        let in_use = self
            .storage
            .volumes
            .values()
            .any(|v| v.svm == policy.svm && v.export_policy == policy.name);
        if policy.name == "default" || in_use {
            return Err(ApiError::bad_request(
                codes::EXPORT_POLICY_IN_USE,
                format!(
                    "Export policy \"{}\" is the default policy or is in use by a volume.",
                    policy.name
                ),
            ));
        }
        let key = policy.id;
        self.storage.policies.remove(&key);
        Ok(())
    }

    pub fn rule_records(&self, who: &Principal, id: &str) -> ApiResult<Vec<Value>> {
        let p = self.visible_policy(who, id)?;
        let mut rules: Vec<Value> = p.rules.iter().map(|r| self.rule_json(p, r)).collect();
        let policy = json!({ "id": p.id, "name": p.name });
        for rule in &mut rules {
            if let Some(obj) = rule.as_object_mut() {
                obj.insert("policy".into(), policy.clone());
                obj.insert("svm".into(), self.svm_ref(&p.svm));
            }
        }
        Ok(rules)
    }

    pub fn rule_record(&self, who: &Principal, id: &str, index: &str) -> ApiResult<Value> {
        self.rule_records(who, id)?
            .into_iter()
            .find(|r| r["index"].as_u64().is_some_and(|i| i.to_string() == index))
            .ok_or_else(|| ApiError::not_found("index"))
    }

    pub fn create_rule(&mut self, who: &Principal, id: &str, body: &Value) -> ApiResult<Value> {
        let key = self.visible_policy(who, id)?.id;
        let body = rule_body(body)?;
        let policy = self
            .storage
            .policies
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found("id"))?;
        let index = policy.rules.iter().map(|r| r.index).max().unwrap_or(0) + 1;
        policy.rules.push(Rule { index, body });
        Ok(json!({ "index": index }))
    }

    pub fn delete_rule(&mut self, who: &Principal, id: &str, index: &str) -> ApiResult<()> {
        let key = self.visible_policy(who, id)?.id;
        let policy = self
            .storage
            .policies
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found("id"))?;
        let before = policy.rules.len();
        policy.rules.retain(|r| r.index.to_string() != index);
        if policy.rules.len() == before {
            return Err(ApiError::not_found("index"));
        }
        Ok(())
    }

    // ---------------------------------------------------------------- iSCSI credentials

    /// The `default` initiator security of each SVM with an iSCSI service.
    pub fn iscsi_credential_records(&self, who: &Principal) -> Vec<Value> {
        self.svms
            .starting_at("")
            .filter(|s| s.creating.is_none() && who.may_see(&s.uuid))
            .filter(|s| s.iscsi.service.is_some())
            .map(|s| {
                json!({
                    "svm": s.reference(),
                    "initiator": "default",
                    "authentication_type": "none",
                    "_links": link(format!(
                        "/api/protocols/san/iscsi/credentials/{}/default",
                        s.uuid
                    )),
                })
            })
            .collect()
    }

    // ---------------------------------------------------------------- LUNs and namespaces

    fn block_json(&self, san: San, b: &Block) -> Value {
        let volume_name = self
            .storage
            .volumes
            .get(&b.volume)
            .map(|v| v.name.clone())
            .unwrap_or_default();
        let maps: Vec<&Map> = self
            .storage
            .maps(san)
            .iter()
            .filter(|m| m.block == b.uuid)
            .collect();
        let volume = reference(
            &volume_name,
            &b.volume,
            format!("/api/storage/volumes/{}", b.volume),
        );
        let group_ref = |m: &Map| {
            let name = self
                .storage
                .groups(san)
                .get(&m.group)
                .map(|g| g.name.clone())
                .unwrap_or_default();
            let path = match san {
                San::Iscsi => "/api/protocols/san/igroups",
                San::Nvme => "/api/protocols/nvme/subsystems",
            };
            reference(&name, &m.group, format!("{path}/{}", m.group))
        };
        let base_name = b.name.rsplit('/').next().unwrap_or_default();
        let status = json!({ "state": "online", "mapped": !maps.is_empty(), "read_only": false });
        let mut out = match san {
            San::Iscsi => {
                let lun_maps: Vec<Value> = maps
                    .iter()
                    .map(|m| json!({ "igroup": group_ref(m), "logical_unit_number": m.number }))
                    .collect();
                json!({
                    "uuid": b.uuid, "name": b.name, "svm": self.svm_ref(&b.svm),
                    "os_type": b.os_type, "comment": b.comment, "enabled": true,
                    "create_time": b.create_time,
                    "serial_number": b.uuid.replace('-', "").chars().take(12).collect::<String>(),
                    "location": { "volume": volume, "logical_unit": base_name },
                    "space": { "size": b.size, "used": 0,
                        "guarantee": { "requested": b.guarantee, "reserved": b.guarantee },
                        "scsi_thin_provisioning_support_enabled": b.thin_provisioning },
                    "status": status,
                    "lun_maps": lun_maps,
                    "attributes": b.attributes.iter()
                        .map(|(name, value)| lun_attribute_json(&b.uuid, name, value))
                        .collect::<Vec<_>>(),
                    "_links": link(format!("/api/storage/luns/{}", b.uuid)),
                })
            }
            San::Nvme => {
                let mut ns = json!({
                    "uuid": b.uuid, "name": b.name, "svm": self.svm_ref(&b.svm),
                    "os_type": b.os_type, "comment": b.comment, "enabled": true,
                    "create_time": b.create_time,
                    "location": { "volume": volume, "namespace": base_name },
                    "space": { "size": b.size, "used": 0, "block_size": 4096 },
                    "status": status,
                    "_links": link(format!("/api/storage/namespaces/{}", b.uuid)),
                });
                if let (Some(m), Some(obj)) = (maps.first(), ns.as_object_mut()) {
                    obj.insert(
                        "subsystem_map".into(),
                        json!({ "subsystem": group_ref(m), "nsid": format!("{:08x}", m.number) }),
                    );
                }
                ns
            }
        };
        if let (Some(qos), Some(obj)) = (&b.qos_policy, out.as_object_mut())
            && san == San::Iscsi
        {
            obj.insert("qos_policy".into(), json!({ "name": qos }));
        }
        out
    }

    pub fn block_records(&self, san: San, who: &Principal) -> Vec<Value> {
        self.storage
            .blocks(san)
            .values()
            .filter(|b| who.may_see(&b.svm))
            .map(|b| self.block_json(san, b))
            .collect()
    }

    fn visible_block(&self, san: San, who: &Principal, uuid: &str) -> ApiResult<&Block> {
        self.storage
            .blocks(san)
            .get(uuid)
            .filter(|b| who.may_see(&b.svm))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn block_record(&self, san: San, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.visible_block(san, who, uuid)
            .map(|b| self.block_json(san, b))
    }

    pub fn create_block(
        &mut self,
        san: San,
        who: &Principal,
        body: &Value,
        now: Instant,
    ) -> ApiResult<Value> {
        let (svm, _) = self.target_svm(who, body)?;
        let path = str_at(body, "name").ok_or_else(|| ApiError::missing_field("name"))?;
        let (volume_name, _) =
            split_path(path).ok_or_else(|| ApiError::invalid_value("name", path))?;
        let volume = self
            .storage
            .volume_by_name(&svm, volume_name)
            .filter(|v| !v.pending)
            .ok_or_else(|| {
                ApiError::bad_request(
                    codes::INVALID_FIELD,
                    format!("Volume \"{volume_name}\" does not exist."),
                )
                .with_target("name")
            })?
            .uuid
            .clone();
        let os_type = str_at(body, "os_type")
            .ok_or_else(|| ApiError::missing_field("os_type"))?
            .to_owned();
        let size =
            u64_at(body, "space.size")?.ok_or_else(|| ApiError::missing_field("space.size"))?;
        if size == 0 {
            return Err(ApiError::invalid_value("space.size", size));
        }
        if self
            .storage
            .blocks(san)
            .values()
            .any(|b| b.svm == svm && b.name == path)
        {
            let code = match san {
                San::Iscsi => codes::LUN_EXISTS,
                San::Nvme => codes::NAMESPACE_EXISTS,
            };
            return Err(ApiError::conflict(
                code,
                format!("A {} named \"{path}\" already exists.", san.block_label()),
            )
            .with_target("name"));
        }
        let attributes = match (san, at(body, "attributes")) {
            (San::Iscsi, Some(list)) => lun_attributes_of(list)?,
            _ => Vec::new(),
        };
        let uuid = new_uuid();
        let block = Block {
            uuid: uuid.clone(),
            name: path.to_owned(),
            svm,
            volume,
            os_type,
            size,
            comment: str_at(body, "comment").unwrap_or_default().into(),
            qos_policy: str_at(body, "qos_policy.name").map(str::to_owned),
            guarantee: bool_at(body, "space.guarantee.requested")?.unwrap_or(false),
            thin_provisioning: bool_at(body, "space.scsi_thin_provisioning_support_enabled")?
                .unwrap_or(false),
            create_time: self.clock.timestamp(now),
            attributes,
        };
        self.storage.blocks_mut(san).insert(uuid.clone(), block);
        Ok(json!({ "uuid": uuid, "name": path }))
    }

    pub fn patch_block(
        &mut self,
        san: San,
        who: &Principal,
        uuid: &str,
        body: &Value,
    ) -> ApiResult<()> {
        let current = self.visible_block(san, who, uuid)?.size;
        let size = u64_at(body, "space.size")?;
        if let Some(size) = size
            && size < current
            && san == San::Nvme
        {
            // ONTAP documents that a namespace cannot shrink (NvmeNamespace `space.size`).
            return Err(ApiError::invalid_value("space.size", size));
        }
        if let Some(b) = self.storage.blocks_mut(san).get_mut(uuid) {
            if let Some(size) = size {
                b.size = size;
            }
            if let Some(comment) = str_at(body, "comment") {
                b.comment = comment.to_owned();
            }
            if let Some(qos) = str_at(body, "qos_policy.name") {
                b.qos_policy = Some(qos.to_owned());
            }
        }
        Ok(())
    }

    pub fn delete_block(
        &mut self,
        san: San,
        who: &Principal,
        uuid: &str,
        allow_mapped: bool,
    ) -> ApiResult<()> {
        let b = self.visible_block(san, who, uuid)?;
        let mapped = self.storage.maps(san).iter().any(|m| m.block == uuid);
        if mapped && !allow_mapped {
            return Err(ApiError::bad_request(
                codes::BLOCK_MAPPED,
                format!(
                    "The {} \"{}\" is mapped; unmap it first or set allow_delete_while_mapped.",
                    san.block_label(),
                    b.name
                ),
            ));
        }
        self.storage.blocks_mut(san).remove(uuid);
        self.storage.maps_mut(san).retain(|m| m.block != uuid);
        Ok(())
    }

    // ---------------------------------------------------------------- igroups and subsystems

    fn group_json(&self, san: San, g: &Group) -> Value {
        let maps: Vec<Value> = self
            .storage
            .maps(san)
            .iter()
            .filter(|m| m.group == g.uuid)
            .map(|m| {
                let name = self
                    .storage
                    .blocks(san)
                    .get(&m.block)
                    .map(|b| b.name.clone())
                    .unwrap_or_default();
                match san {
                    San::Iscsi => json!({ "logical_unit_number": m.number,
                        "lun": reference(&name, &m.block, format!("/api/storage/luns/{}", m.block)) }),
                    San::Nvme => json!({ "nsid": format!("{:08x}", m.number),
                        "namespace": reference(&name, &m.block, format!("/api/storage/namespaces/{}", m.block)) }),
                }
            })
            .collect();
        match san {
            San::Iscsi => {
                let initiators: Vec<Value> =
                    g.members.iter().map(|m| json!({ "name": m })).collect();
                json!({
                    "uuid": g.uuid, "name": g.name, "svm": self.svm_ref(&g.svm),
                    "os_type": g.os_type, "protocol": g.protocol, "comment": g.comment,
                    "initiators": initiators, "lun_maps": maps,
                    "_links": link(format!("/api/protocols/san/igroups/{}", g.uuid)),
                })
            }
            San::Nvme => {
                let hosts: Vec<Value> = g.members.iter().map(|m| json!({ "nqn": m })).collect();
                json!({
                    "uuid": g.uuid, "name": g.name, "svm": self.svm_ref(&g.svm),
                    "os_type": g.os_type, "comment": g.comment,
                    "target_nqn": target_nqn(&g.svm, &g.name),
                    "serial_number": g.uuid.replace('-', "").chars().take(20).collect::<String>(),
                    "hosts": hosts, "subsystem_maps": maps,
                    "_links": link(format!("/api/protocols/nvme/subsystems/{}", g.uuid)),
                })
            }
        }
    }

    pub fn group_records(&self, san: San, who: &Principal) -> Vec<Value> {
        self.storage
            .groups(san)
            .values()
            .filter(|g| who.may_see(&g.svm))
            .map(|g| self.group_json(san, g))
            .collect()
    }

    fn visible_group(&self, san: San, who: &Principal, uuid: &str) -> ApiResult<&Group> {
        self.storage
            .groups(san)
            .get(uuid)
            .filter(|g| who.may_see(&g.svm))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn group_record(&self, san: San, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.visible_group(san, who, uuid)
            .map(|g| self.group_json(san, g))
    }

    /// Members named in a body: `initiators[].name` / `hosts[].nqn`, or on a member POST the
    /// record itself or its `records` array.
    fn members_of(san: San, items: Option<&Value>) -> Vec<String> {
        let key = match san {
            San::Iscsi => "name",
            San::Nvme => "nqn",
        };
        items
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|i| str_at(i, key).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn create_group(&mut self, san: San, who: &Principal, body: &Value) -> ApiResult<Value> {
        let (svm, _) = self.target_svm(who, body)?;
        let name = str_at(body, "name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?
            .to_owned();
        let os_type = str_at(body, "os_type")
            .ok_or_else(|| ApiError::missing_field("os_type"))?
            .to_owned();
        if self
            .storage
            .groups(san)
            .values()
            .any(|g| g.svm == svm && g.name == name)
        {
            let code = match san {
                San::Iscsi => codes::IGROUP_EXISTS,
                San::Nvme => codes::SUBSYSTEM_EXISTS,
            };
            return Err(ApiError::conflict(
                code,
                format!("An {} named \"{name}\" already exists.", san.group_label()),
            )
            .with_target("name"));
        }
        let members = match san {
            San::Iscsi => Self::members_of(san, at(body, "initiators")),
            San::Nvme => Self::members_of(san, at(body, "hosts")),
        };
        let uuid = new_uuid();
        let group = Group {
            uuid: uuid.clone(),
            name: name.clone(),
            svm,
            os_type,
            protocol: str_at(body, "protocol").unwrap_or("mixed").into(),
            comment: str_at(body, "comment").unwrap_or_default().into(),
            members,
        };
        let mut record = json!({ "uuid": uuid, "name": name });
        if let (San::Nvme, Some(obj)) = (san, record.as_object_mut()) {
            // Trident's NVMeSubsystemCreate reads the new subsystem's `target_nqn` from the
            // POST answer (return_records=true) without a nil check; it works against ONTAP.
            obj.insert("target_nqn".into(), json!(target_nqn(&group.svm, &name)));
        }
        self.storage.groups_mut(san).insert(uuid.clone(), group);
        Ok(record)
    }

    pub fn delete_group(
        &mut self,
        san: San,
        who: &Principal,
        uuid: &str,
        allow_mapped: bool,
    ) -> ApiResult<()> {
        let g = self.visible_group(san, who, uuid)?;
        let mapped = self.storage.maps(san).iter().any(|m| m.group == uuid);
        if mapped && !allow_mapped {
            return Err(ApiError::bad_request(
                codes::GROUP_MAPPED,
                format!(
                    "The {} \"{}\" is mapped; unmap it first or set allow_delete_while_mapped.",
                    san.group_label(),
                    g.name
                ),
            ));
        }
        self.storage.groups_mut(san).remove(uuid);
        self.storage.maps_mut(san).retain(|m| m.group != uuid);
        Ok(())
    }

    pub fn member_records(&self, san: San, who: &Principal, group: &str) -> ApiResult<Vec<Value>> {
        let g = self.visible_group(san, who, group)?;
        let (path, key, owner) = match san {
            San::Iscsi => ("/api/protocols/san/igroups", "name", "igroup"),
            San::Nvme => ("/api/protocols/nvme/subsystems", "nqn", "subsystem"),
        };
        Ok(g.members
            .iter()
            .map(|m| {
                json!({
                    key: m,
                    owner: reference(&g.name, &g.uuid, format!("{path}/{}", g.uuid)),
                    "_links": link(format!("{path}/{}/{}/{m}", g.uuid,
                        if san == San::Iscsi { "initiators" } else { "hosts" })),
                })
            })
            .collect())
    }

    pub fn add_members(
        &mut self,
        san: San,
        who: &Principal,
        group: &str,
        body: &Value,
    ) -> ApiResult<()> {
        self.visible_group(san, who, group)?;
        let key = match san {
            San::Iscsi => "name",
            San::Nvme => "nqn",
        };
        let mut new = Self::members_of(san, at(body, "records"));
        if let Some(one) = str_at(body, key) {
            new.push(one.to_owned());
        }
        if new.is_empty() {
            return Err(ApiError::missing_field(key));
        }
        let g = self
            .storage
            .groups_mut(san)
            .get_mut(group)
            .ok_or_else(|| ApiError::not_found("uuid"))?;
        if let Some(dup) = new.iter().find(|m| g.members.contains(m)) {
            let code = match san {
                San::Iscsi => codes::INITIATOR_EXISTS,
                San::Nvme => codes::HOST_EXISTS,
            };
            return Err(ApiError::conflict(
                code,
                format!(
                    "\"{dup}\" is already in {} \"{}\".",
                    san.group_label(),
                    g.name
                ),
            )
            .with_target(key));
        }
        g.members.extend(new);
        Ok(())
    }

    pub fn remove_member(
        &mut self,
        san: San,
        who: &Principal,
        group: &str,
        member: &str,
    ) -> ApiResult<()> {
        self.visible_group(san, who, group)?;
        let g = self
            .storage
            .groups_mut(san)
            .get_mut(group)
            .ok_or_else(|| ApiError::not_found("uuid"))?;
        let before = g.members.len();
        g.members.retain(|m| m != member);
        if g.members.len() == before {
            return Err(ApiError::not_found(match san {
                San::Iscsi => "name",
                San::Nvme => "nqn",
            }));
        }
        Ok(())
    }

    // ---------------------------------------------------------------- maps

    fn map_json(&self, san: San, m: &Map) -> Value {
        let block = self.storage.blocks(san).get(&m.block);
        let group = self.storage.groups(san).get(&m.group);
        let svm = block.map(|b| b.svm.clone()).unwrap_or_default();
        let block_name = block.map(|b| b.name.clone()).unwrap_or_default();
        let group_name = group.map(|g| g.name.clone()).unwrap_or_default();
        match san {
            San::Iscsi => json!({
                "svm": self.svm_ref(&svm),
                "lun": reference(&block_name, &m.block, format!("/api/storage/luns/{}", m.block)),
                "igroup": reference(&group_name, &m.group, format!("/api/protocols/san/igroups/{}", m.group)),
                "logical_unit_number": m.number,
                "_links": link(format!("/api/protocols/san/lun-maps/{}/{}", m.block, m.group)),
            }),
            San::Nvme => json!({
                "svm": self.svm_ref(&svm),
                "namespace": reference(&block_name, &m.block, format!("/api/storage/namespaces/{}", m.block)),
                "subsystem": reference(&group_name, &m.group, format!("/api/protocols/nvme/subsystems/{}", m.group)),
                "nsid": format!("{:08x}", m.number),
                "_links": link(format!("/api/protocols/nvme/subsystem-maps/{}/{}", m.group, m.block)),
            }),
        }
    }

    pub fn map_records(&self, san: San, who: &Principal) -> Vec<Value> {
        let mut maps: Vec<&Map> = self
            .storage
            .maps(san)
            .iter()
            .filter(|m| {
                self.storage
                    .blocks(san)
                    .get(&m.block)
                    .is_some_and(|b| who.may_see(&b.svm))
            })
            .collect();
        maps.sort_by(|a, b| (&a.block, &a.group).cmp(&(&b.block, &b.group)));
        maps.into_iter().map(|m| self.map_json(san, m)).collect()
    }

    pub fn map_record(
        &self,
        san: San,
        who: &Principal,
        block: &str,
        group: &str,
    ) -> ApiResult<Value> {
        self.visible_block(san, who, block)?;
        self.storage
            .maps(san)
            .iter()
            .find(|m| m.block == block && m.group == group)
            .map(|m| self.map_json(san, m))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    /// Resolves `<field>.uuid`/`<field>.name` of a body to a visible object's uuid.
    fn resolve(
        &self,
        san: San,
        who: &Principal,
        body: &Value,
        field: &str,
        block: bool,
    ) -> ApiResult<String> {
        let uuid = str_at(body, &format!("{field}.uuid"));
        let name = str_at(body, &format!("{field}.name"));
        if uuid.is_none() && name.is_none() {
            return Err(ApiError::missing_field(field));
        }
        let found = if block {
            self.storage
                .blocks(san)
                .values()
                .find(|b| uuid.is_none_or(|u| b.uuid == u) && name.is_none_or(|n| b.name == n))
                .filter(|b| who.may_see(&b.svm))
                .map(|b| b.uuid.clone())
        } else {
            self.storage
                .groups(san)
                .values()
                .filter(|g| who.may_see(&g.svm))
                .find(|g| uuid.is_none_or(|u| g.uuid == u) && name.is_none_or(|n| g.name == n))
                .map(|g| g.uuid.clone())
        };
        found.ok_or_else(|| {
            let code = match (san, block) {
                (San::Iscsi, true) => codes::LUN_NOT_FOUND,
                (San::Iscsi, false) => codes::IGROUP_NOT_FOUND,
                (San::Nvme, _) => codes::INVALID_FIELD,
            };
            ApiError::bad_request(code, format!("The specified {field} does not exist."))
                .with_target(field)
        })
    }

    pub fn create_map(&mut self, san: San, who: &Principal, body: &Value) -> ApiResult<Value> {
        self.target_svm(who, body)?;
        let (block_field, group_field) = match san {
            San::Iscsi => ("lun", "igroup"),
            San::Nvme => ("namespace", "subsystem"),
        };
        let block = self.resolve(san, who, body, block_field, true)?;
        let group = self.resolve(san, who, body, group_field, false)?;
        let maps = self.storage.maps(san);
        let taken = match san {
            San::Iscsi => maps.iter().any(|m| m.block == block && m.group == group),
            // A namespace is mapped to at most one subsystem.
            San::Nvme => maps.iter().any(|m| m.block == block),
        };
        if taken {
            return Err(ApiError::conflict(
                codes::MAP_EXISTS,
                format!("The {block_field} is already mapped."),
            ));
        }
        let used: Vec<u64> = maps
            .iter()
            .filter(|m| m.group == group)
            .map(|m| m.number)
            .collect();
        let requested = u64_at(body, "logical_unit_number")?;
        if let Some(n) = requested
            && used.contains(&n)
        {
            return Err(ApiError::conflict(
                codes::MAP_EXISTS,
                format!("Logical unit number {n} is already in use in the igroup."),
            )
            .with_target("logical_unit_number"));
        }
        // ONTAP assigns the lowest free LUN id (from 0) or NSID (from 1) when none is given.
        let first = if san == San::Iscsi { 0 } else { 1 };
        let number =
            requested.unwrap_or_else(|| (first..).find(|n| !used.contains(n)).unwrap_or(first));
        let map = Map {
            block: block.clone(),
            group: group.clone(),
            number,
        };
        let record = self.map_json(san, &map);
        self.storage.maps_mut(san).push(map);
        Ok(record)
    }

    pub fn delete_map(
        &mut self,
        san: San,
        who: &Principal,
        block: &str,
        group: &str,
    ) -> ApiResult<()> {
        if san == San::Iscsi {
            self.lun_map_parts(who, block, group)?;
        } else {
            self.visible_block(san, who, block)?;
            self.visible_group(san, who, group)?;
        }
        let maps = self.storage.maps_mut(san);
        let before = maps.len();
        maps.retain(|m| !(m.block == block && m.group == group));
        if maps.len() == before {
            return Err(match san {
                San::Iscsi => lun_map_not_found(),
                San::Nvme => ApiError::not_found("namespace.uuid"),
            });
        }
        Ok(())
    }

    /// The LUN and igroup of a LUN map's path, refused with the codes NetApp documents for the
    /// paths below `/protocols/san/lun-maps/{lun.uuid}/{igroup.uuid}` (DELETE and the
    /// reporting nodes): 5374875, 5374878.
    fn lun_map_parts(
        &self,
        who: &Principal,
        lun: &str,
        igroup: &str,
    ) -> ApiResult<(&Block, &Group)> {
        let block = self
            .visible_block(San::Iscsi, who, lun)
            .map_err(|_| lun_not_found())?;
        let group = self
            .visible_group(San::Iscsi, who, igroup)
            .ok()
            .filter(|g| g.svm == block.svm)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    codes::IGROUP_NOT_FOUND,
                    "The specified initiator group does not exist, is not accessible to the caller, or is not in the same SVM as the specified LUN.",
                )
            })?;
        Ok((block, group))
    }

    // ---------------------------------------------------------------- reporting nodes

    /// A LUN map's reporting nodes: the node owning the aggregate of the LUN's volume and its
    /// HA partner, which NetApp documents as what ONTAP sets when a map is created. Neither
    /// volume moves nor changes to the list are modelled, so the list is derived, not stored.
    pub fn reporting_node_records(
        &self,
        who: &Principal,
        lun: &str,
        igroup: &str,
    ) -> ApiResult<Vec<Value>> {
        let (block, group) = self.lun_map_parts(who, lun, igroup)?;
        if !self
            .storage
            .lun_maps
            .iter()
            .any(|m| m.block == block.uuid && m.group == group.uuid)
        {
            return Err(lun_map_not_found());
        }
        let owner = self
            .storage
            .volumes
            .get(&block.volume)
            .and_then(|v| v.aggregates.first())
            .and_then(|(aggregate, _)| self.cluster.aggregate_by(Some(aggregate), None))
            .map(|a| a.node.uuid.clone())
            .unwrap_or_default();
        let base = format!("/api/protocols/san/lun-maps/{lun}/{igroup}");
        let mut nodes: Vec<Value> = self
            .cluster
            .ha_pair(&owner)
            .into_iter()
            .map(|n| {
                json!({
                    "uuid": n.uuid,
                    "name": n.name,
                    "lun": { "uuid": lun, "_links": link(format!("/api/storage/luns/{lun}")) },
                    "igroup": { "uuid": igroup,
                        "_links": link(format!("/api/protocols/san/igroups/{igroup}")) },
                    "_links": {
                        "self": { "href": format!("{base}/reporting-nodes/{}", n.uuid) },
                        "node": { "href": format!("/api/cluster/nodes/{}", n.uuid) },
                    },
                })
            })
            .collect();
        nodes.sort_by(|a, b| a["uuid"].as_str().cmp(&b["uuid"].as_str()));
        Ok(nodes)
    }

    pub fn reporting_node_record(
        &self,
        who: &Principal,
        lun: &str,
        igroup: &str,
        node: &str,
    ) -> ApiResult<Value> {
        self.reporting_node_records(who, lun, igroup)?
            .into_iter()
            .find(|n| n["uuid"] == node)
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    // ---------------------------------------------------------------- LUN attributes

    fn attribute_lun(&self, who: &Principal, lun: &str) -> ApiResult<&Block> {
        self.visible_block(San::Iscsi, who, lun)
            .map_err(|_| lun_not_found())
    }

    pub fn lun_attribute_records(&self, who: &Principal, lun: &str) -> ApiResult<Vec<Value>> {
        let b = self.attribute_lun(who, lun)?;
        let mut records: Vec<Value> = b
            .attributes
            .iter()
            .map(|(name, value)| lun_attribute_json(&b.uuid, name, value))
            .collect();
        records.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(records)
    }

    pub fn lun_attribute_record(&self, who: &Principal, lun: &str, name: &str) -> ApiResult<Value> {
        let b = self.attribute_lun(who, lun)?;
        b.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, v)| lun_attribute_json(&b.uuid, n, v))
            .ok_or_else(attribute_not_found)
    }

    pub fn create_lun_attribute(
        &mut self,
        who: &Principal,
        lun: &str,
        body: &Value,
    ) -> ApiResult<Value> {
        self.attribute_lun(who, lun)?;
        let [(name, value)] = lun_attributes_of(&json!([body]))?.try_into().map_err(|_| {
            ApiError::bad_request(
                codes::LUN_ATTRIBUTE_INCOMPLETE,
                "An incomplete attribute name/value pair was supplied.",
            )
        })?;
        let b = self.storage.luns.get_mut(lun).ok_or_else(lun_not_found)?;
        if b.attributes.iter().any(|(n, _)| *n == name) {
            return Err(ApiError::conflict(
                codes::LUN_ATTRIBUTE_EXISTS,
                format!("The attribute \"{name}\" already exists for the LUN."),
            )
            .with_target("name"));
        }
        let record = lun_attribute_json(lun, &name, &value);
        b.attributes.push((name, value));
        Ok(record)
    }

    pub fn patch_lun_attribute(
        &mut self,
        who: &Principal,
        lun: &str,
        name: &str,
        body: &Value,
    ) -> ApiResult<()> {
        self.lun_attribute_record(who, lun, name)?;
        let value = str_at(body, "value").ok_or_else(|| ApiError::missing_field("value"))?;
        check_attribute(name, value)?;
        if let Some((_, v)) = self
            .storage
            .luns
            .get_mut(lun)
            .and_then(|b| b.attributes.iter_mut().find(|(n, _)| n == name))
        {
            *v = value.to_owned();
        }
        Ok(())
    }

    pub fn delete_lun_attribute(
        &mut self,
        who: &Principal,
        lun: &str,
        name: &str,
    ) -> ApiResult<()> {
        self.lun_attribute_record(who, lun, name)?;
        if let Some(b) = self.storage.luns.get_mut(lun) {
            b.attributes.retain(|(n, _)| n != name);
        }
        Ok(())
    }
}

/// A subsystem's NQN: ONTAP's form, `nqn.1992-08.com.netapp:sn.<svm serial>:subsystem.<name>`,
/// with the SVM's uuid standing in for its serial.
fn target_nqn(svm: &str, name: &str) -> String {
    let svm_hex = svm.replace('-', "");
    format!("nqn.1992-08.com.netapp:sn.{svm_hex}:subsystem.{name}")
}

fn lun_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        codes::LUN_NOT_FOUND,
        "The specified LUN does not exist or is not accessible to the caller.",
    )
}

fn lun_map_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        codes::LUN_MAP_NOT_FOUND,
        "The specified LUN map does not exist.",
    )
}

fn attribute_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        codes::LUN_ATTRIBUTE_NOT_FOUND,
        "The specified attribute was not found.",
    )
    .with_target("name")
}

/// NetApp's limits: name and value 1 to 4091 bytes each, 4092 bytes together.
fn check_attribute(name: &str, value: &str) -> ApiResult<()> {
    if name.is_empty() || value.is_empty() {
        return Err(ApiError::bad_request(
            codes::LUN_ATTRIBUTE_INCOMPLETE,
            "An incomplete attribute name/value pair was supplied.",
        ));
    }
    if name.len() > 4091 || value.len() > 4091 || name.len() + value.len() > 4092 {
        return Err(ApiError::bad_request(
            codes::LUN_ATTRIBUTE_TOO_LARGE,
            "The combined sizes of an attribute name and value are too large.",
        ));
    }
    Ok(())
}

/// `[{name, value}]` as a LUN POST or an attribute POST carries it; each pair complete and
/// within NetApp's limits, no name twice.
fn lun_attributes_of(list: &Value) -> ApiResult<Vec<(String, String)>> {
    let items = list
        .as_array()
        .ok_or_else(|| ApiError::invalid_value("attributes", list))?;
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in items {
        let name = str_at(item, "name").unwrap_or_default();
        let value = str_at(item, "value").unwrap_or_default();
        check_attribute(name, value)?;
        if pairs.iter().any(|(n, _)| n == name) {
            return Err(ApiError::conflict(
                codes::LUN_ATTRIBUTE_EXISTS,
                format!("The attribute \"{name}\" already exists for the LUN."),
            )
            .with_target("attributes.name"));
        }
        pairs.push((name.to_owned(), value.to_owned()));
    }
    Ok(pairs)
}

/// One attribute as NetApp's examples show it: `name`, `value` and its own link.
fn lun_attribute_json(lun: &str, name: &str, value: &str) -> Value {
    // byte_serialize writes a space as `+` (form encoding), which a path does not decode.
    let encoded = form_urlencoded::byte_serialize(name.as_bytes())
        .collect::<String>()
        .replace('+', "%20");
    json!({
        "name": name,
        "value": value,
        "_links": link(format!("/api/storage/luns/{lun}/attributes/{encoded}")),
    })
}

/// An export rule's body: `clients` is required, the rest defaults as ONTAP's examples show.
fn rule_body(body: &Value) -> ApiResult<Value> {
    let clients = at(body, "clients")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ApiError::missing_field("clients"))?;
    let list = |key: &str, default: &[&str]| -> Value {
        at(body, key)
            .filter(|v| v.is_array())
            .cloned()
            .unwrap_or_else(|| json!(default))
    };
    Ok(json!({
        "clients": clients,
        "protocols": list("protocols", &["any"]),
        "ro_rule": list("ro_rule", &["any"]),
        "rw_rule": list("rw_rule", &["any"]),
        "superuser": list("superuser", &["any"]),
        "anonymous_user": str_at(body, "anonymous_user").unwrap_or("65534"),
        "allow_suid": at(body, "allow_suid").and_then(Value::as_bool).unwrap_or(true),
        "allow_device_creation": at(body, "allow_device_creation").and_then(Value::as_bool).unwrap_or(true),
        "chown_mode": str_at(body, "chown_mode").unwrap_or("restricted"),
        "ntfs_unix_security": str_at(body, "ntfs_unix_security").unwrap_or("fail"),
    }))
}

impl Volume {
    fn apply(&mut self, patch: &Value) {
        if let Some(size) = at(patch, "size").and_then(Value::as_u64) {
            self.size = size;
        }
        if let Some(name) = str_at(patch, "name") {
            self.name = name.to_owned();
        }
        if let Some(comment) = str_at(patch, "comment") {
            self.comment = comment.to_owned();
        }
        if let Some(path) = str_at(patch, "nas.path") {
            self.nas_path = path.to_owned();
        }
        if let Some(policy) = str_at(patch, "nas.export_policy.name") {
            self.export_policy = policy.to_owned();
        }
        if let Some(style) = str_at(patch, "nas.security_style") {
            self.security_style = style.to_owned();
        }
        if let Some(mode) = at(patch, "nas.unix_permissions").and_then(Value::as_u64) {
            self.unix_permissions = mode;
        }
        if let Some(policy) = str_at(patch, "snapshot_policy.name") {
            self.snapshot_policy = policy.to_owned();
        }
        if let Some(on) = at(patch, "snapshot_directory_access_enabled").and_then(Value::as_bool) {
            self.snapdir = on;
        }
        if let Some(percent) = at(patch, "space.snapshot.reserve_percent").and_then(Value::as_u64) {
            self.snapshot_reserve = percent;
        }
        if let Some(guarantee) = str_at(patch, "guarantee.type") {
            self.guarantee = guarantee.to_owned();
        }
        if let Some(qos) = str_at(patch, "qos.policy.name") {
            self.qos_policy = Some(qos.to_owned());
        }
        if let Some(tiering) = str_at(patch, "tiering.policy") {
            self.tiering_policy = Some(tiering.to_owned());
        }
    }
}
