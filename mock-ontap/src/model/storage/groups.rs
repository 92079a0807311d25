//! igroups and NVMe subsystems with their members, the maps that expose LUNs and namespaces
//! through them, and the nodes reporting a LUN map.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{
    Block, Group, Map, at, link, lun_map_not_found, lun_not_found, new_uuid, reference, str_at,
    target_nqn, u64_at,
};
use crate::error::{ApiError, ApiResult, codes};
use crate::model::{Model, Principal, San};

impl Model {
    // ---------------------------------------------------------------- igroups and subsystems

    pub(super) fn group_json(&self, san: San, g: &Group) -> Value {
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

    pub(super) fn visible_group(&self, san: San, who: &Principal, uuid: &str) -> ApiResult<&Group> {
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
    pub(super) fn members_of(san: San, items: Option<&Value>) -> Vec<String> {
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

    pub(super) fn map_json(&self, san: San, m: &Map) -> Value {
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
    pub(super) fn resolve(
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
    pub(super) fn lun_map_parts(
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
}
