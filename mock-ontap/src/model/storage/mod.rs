//! An SVM's storage, as Trident's ONTAP drivers use it: FlexVol volumes and their snapshots,
//! NFS export policies and rules, NVMe namespaces, subsystems, hosts and maps, LUNs, igroups,
//! initiators and LUN maps, and the iSCSI default initiator security.
//!
//! Volume and snapshot changes are jobs, as ONTAP documents them (202 + job); everything else
//! is synchronous. An SVM account sees and changes only its own SVM's objects: another SVM's
//! answer 404 as if absent, as the SVM itself does. Bodies are checked against the fields a
//! request may carry (`FIELDS` lists) and then read as JSON, since every request here sets a
//! handful of optional fields.
//!
//! This file holds the objects and what the kinds share; the requests on each kind are in
//! `volumes` (volumes, snapshots), `exports` (export policies, rules, iSCSI credentials) and
//! `san` (LUNs and namespaces, LUN attributes) and `groups` (igroups and subsystems, their
//! members and maps, reporting nodes).

mod exports;
mod groups;
mod qos;
mod san;
mod volumes;

use std::collections::{BTreeMap, HashMap};

use axum::http::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Model, Principal};
use crate::error::{ApiError, ApiResult, codes};

/// ONTAP's default volume size when a POST names none ("size - 20MB", POST /storage/volumes).
const DEFAULT_VOLUME_SIZE: u64 = 20 * 1024 * 1024;
/// Snapshot reserve when a POST names none. Not confirmed by NetApp's REST docs (ONTAP's CLI
/// default); see the README.
const DEFAULT_SNAPSHOT_RESERVE: u64 = 5;

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
    qos_policies: BTreeMap<String, qos::QosPolicy>,
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

    /// The count and total size of one SVM's volumes.
    pub fn usage_of(&self, svm: &str) -> SvmUsage {
        self.volumes
            .values()
            .filter(|v| v.svm == svm)
            .fold(SvmUsage::default(), SvmUsage::with)
    }

    /// The count and total size of every SVM's volumes, in one pass.
    pub fn usage_by_svm(&self) -> HashMap<String, SvmUsage> {
        let mut usage: HashMap<String, SvmUsage> = HashMap::new();
        for v in self.volumes.values() {
            let entry = usage.entry(v.svm.clone()).or_default();
            *entry = entry.with(v);
        }
        usage
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
        self.qos_policies.retain(|_, p| !p.owned_by(svm));
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

/// What an SVM's volumes take: how many there are and the sum of their sizes. A volume counts
/// from the moment its POST is accepted, as its name is taken from then on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SvmUsage {
    pub volumes: u64,
    pub allocated: u64,
}

impl SvmUsage {
    fn with(self, v: &Volume) -> SvmUsage {
        SvmUsage {
            volumes: self.volumes + 1,
            allocated: self.allocated.saturating_add(v.size),
        }
    }
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
