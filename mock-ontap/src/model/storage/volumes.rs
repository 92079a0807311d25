//! FlexVol volumes and their snapshots: every change a job.

use std::time::Instant;

use serde_json::{Value, json};

use super::{
    DEFAULT_SNAPSHOT_RESERVE, DEFAULT_VOLUME_SIZE, Snapshot, Volume, at, bool_at, link, new_uuid,
    reference, str_at, u64_at,
};
use crate::error::{ApiError, ApiResult, codes};
use crate::model::job::{Effect, InjectedFailure, Job, StorageEffect};
use crate::model::{Model, Principal};

impl Model {
    // ---------------------------------------------------------------- volumes

    pub(super) fn volume_json(&self, v: &Volume) -> Value {
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

    pub(super) fn visible_volume(&self, who: &Principal, uuid: &str) -> ApiResult<&Volume> {
        self.storage
            .volumes
            .get(uuid)
            .filter(|v| !v.pending && who.may_see(&v.svm))
            .ok_or_else(|| ApiError::not_found("uuid"))
    }

    pub fn volume_record(&self, who: &Principal, uuid: &str) -> ApiResult<Value> {
        self.visible_volume(who, uuid).map(|v| self.volume_json(v))
    }

    pub(super) fn check_volume_fields(&self, svm: &str, body: &Value) -> ApiResult<()> {
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
        self.check_object_qos_nesting(&svm, body, "qos.policy.name")?;
        if self.storage.volume_by_name(&svm, &name).is_some() {
            return Err(ApiError::conflict(
                codes::VOLUME_NAME_IN_USE,
                format!("Duplicate volume name \"{name}\"."),
            )
            .with_target("name"));
        }
        let size = u64_at(body, "size")?.unwrap_or(DEFAULT_VOLUME_SIZE);
        // Past the SVM's limits the job fails and no volume appears, as through a failed job.
        let refusal = self.volume_allowance(&svm, 1, size);
        let uuid = new_uuid();
        let job = self.start_job(
            "POST /api/storage/volumes".into(),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::VolumeCreate(uuid.clone())),
            refusal.clone().or(failure),
            now,
        );
        if refusal.is_some() {
            return Ok((job, json!({ "uuid": uuid, "name": name })));
        }
        let volume = Volume {
            uuid: uuid.clone(),
            name: name.clone(),
            svm,
            size,
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
        let (svm, name, old_size) = (volume.svm.clone(), volume.name.clone(), volume.size);
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
        let growth = u64_at(&body, "size")?.map_or(0, |size| size.saturating_sub(old_size));
        let refusal = self.volume_allowance(&svm, 0, growth);
        let svm_name = self.svm_name(&svm);
        Ok(self.start_job(
            format!("PATCH /api/storage/volumes/{uuid}"),
            (&svm, &svm_name),
            Effect::Storage(StorageEffect::VolumeModify(uuid.to_owned(), body)),
            refusal.or(failure),
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

    pub(in crate::model) fn finish_storage_job(&mut self, effect: &StorageEffect, failed: bool) {
        let volumes = &mut self.storage.volumes;
        match effect {
            StorageEffect::QosCreate(_)
            | StorageEffect::QosModify(..)
            | StorageEffect::QosDelete(_) => self.finish_qos_job(effect, failed),
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

    pub(super) fn snapshot_json(&self, v: &Volume, s: &Snapshot) -> Value {
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
}
