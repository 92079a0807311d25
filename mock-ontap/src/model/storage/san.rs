//! LUNs and NVMe namespaces, and LUN attributes.

use std::time::Instant;

use serde_json::{Value, json};

use super::{
    Block, Map, at, attribute_not_found, bool_at, check_attribute, link, lun_attribute_json,
    lun_attributes_of, lun_not_found, new_uuid, reference, split_path, str_at, u64_at,
};
use crate::error::{ApiError, ApiResult, codes};
use crate::model::{Model, Principal, San};

impl Model {
    // ---------------------------------------------------------------- LUNs and namespaces

    pub(super) fn block_json(&self, san: San, b: &Block) -> Value {
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

    pub(super) fn visible_block(&self, san: San, who: &Principal, uuid: &str) -> ApiResult<&Block> {
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
        self.check_object_qos_nesting(&svm, body, "qos_policy.name")?;
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

    // ---------------------------------------------------------------- LUN attributes

    pub(super) fn attribute_lun(&self, who: &Principal, lun: &str) -> ApiResult<&Block> {
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
