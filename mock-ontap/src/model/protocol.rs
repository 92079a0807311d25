//! An SVM's protocol services: `/api/protocols/nfs/services`, `/api/protocols/san/iscsi/services`
//! and `/api/protocols/nvme/services`, one record per SVM keyed by `svm.uuid`.
//!
//! ONTAP sets an SVM's `nfs|iscsi|nvme.enabled` only when the SVM is created (netapp-ontap lists
//! `enabled` as postable, not patchable); afterwards the protocol is created, switched on and off
//! on its service, and the SVM's `enabled` shows the service's state. Creating an SVM with
//! `enabled: true` creates the service, enabled.

use serde::Deserialize;
use serde_json::{Value, json};

use super::svm_request::{NameRef, Toggle};
use super::{Model, Principal, Row, svm::Svm};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Nfs,
    Iscsi,
    Nvme,
}

impl Protocol {
    /// The collection's path.
    pub fn path(self) -> &'static str {
        match self {
            Protocol::Nfs => "/api/protocols/nfs/services",
            Protocol::Iscsi => "/api/protocols/san/iscsi/services",
            Protocol::Nvme => "/api/protocols/nvme/services",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Protocol::Nfs => "NFS",
            Protocol::Iscsi => "iSCSI",
            Protocol::Nvme => "NVMe",
        }
    }
}

/// One protocol of one SVM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolState {
    /// Whether an SVM administrator may manage the service (settable at create and by PATCH).
    pub allowed: bool,
    /// The service: `None` while it does not exist, else whether it is enabled.
    pub service: Option<bool>,
}

impl ProtocolState {
    pub fn at_create(toggle: Option<&Toggle>) -> Self {
        let enabled = toggle.and_then(|t| t.enabled).unwrap_or(false);
        Self {
            allowed: toggle.and_then(|t| t.allowed).unwrap_or(true),
            service: enabled.then_some(true),
        }
    }

    /// What the SVM reports as `<protocol>.enabled`.
    pub fn enabled(&self) -> bool {
        self.service == Some(true)
    }
}

/// `POST` body of a service collection.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServiceCreate {
    pub svm: Option<NameRef>,
    pub enabled: Option<bool>,
}

impl ServiceCreate {
    pub const FIELDS: &'static [&'static str] = &["svm.uuid", "svm.name", "enabled"];
}

/// `PATCH` body of a service.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServicePatch {
    pub enabled: Option<bool>,
}

impl ServicePatch {
    pub const FIELDS: &'static [&'static str] = &["enabled"];
}

/// A service as its collection shows it.
pub struct ServiceRow {
    protocol: Protocol,
    svm: Value,
    svm_uuid: String,
    svm_name: String,
    enabled: bool,
}

impl Row for ServiceRow {
    fn to_json(&self) -> Value {
        let mut record = json!({
            "svm": self.svm,
            "enabled": self.enabled,
            "_links": { "self": { "href": format!("{}/{}", self.protocol.path(), self.svm_uuid) } },
        });
        if let Some(obj) = record.as_object_mut() {
            match self.protocol {
                Protocol::Nfs => {
                    let state = if self.enabled { "online" } else { "offline" };
                    obj.insert("state".into(), json!(state));
                }
                Protocol::Iscsi => {
                    // The target name ONTAP derives from the cluster and the SVM; its default
                    // alias is the SVM's name.
                    let iqn = format!(
                        "iqn.1992-08.com.netapp:sn.{}:vs",
                        self.svm_uuid.replace('-', "")
                    );
                    obj.insert(
                        "target".into(),
                        json!({ "name": iqn, "alias": self.svm_name }),
                    );
                }
                Protocol::Nvme => {}
            }
        }
        record
    }
}

impl Model {
    fn service_row(&self, protocol: Protocol, svm: &Svm) -> Option<ServiceRow> {
        let enabled = svm.protocol(protocol).service?;
        Some(ServiceRow {
            protocol,
            svm: svm.reference(),
            svm_uuid: svm.uuid.clone(),
            svm_name: svm.name.clone(),
            enabled,
        })
    }

    /// The services of this protocol the principal may see, in SVM uuid order.
    pub fn service_rows(
        &self,
        protocol: Protocol,
        who: &Principal,
        q: &ListQuery,
    ) -> Vec<ServiceRow> {
        let start = q.cursor("svm.uuid").unwrap_or_default();
        self.svms
            .starting_at(start)
            .filter(|s| s.creating.is_none() && who.may_see(&s.uuid))
            .filter_map(|s| self.service_row(protocol, s))
            .collect()
    }

    pub fn service_json(
        &self,
        protocol: Protocol,
        who: &Principal,
        svm_uuid: &str,
    ) -> ApiResult<Value> {
        self.svms
            .get(svm_uuid)
            .filter(|s| s.creating.is_none() && who.may_see(&s.uuid))
            .and_then(|s| self.service_row(protocol, s))
            .map(|r| r.to_json())
            .ok_or_else(|| ApiError::not_found("svm.uuid"))
    }

    /// Creates the service of an SVM that has none; enabled unless `enabled: false`.
    pub fn create_service(
        &mut self,
        protocol: Protocol,
        req: ServiceCreate,
    ) -> ApiResult<(String, Value)> {
        let svm_ref = req.svm.ok_or_else(|| ApiError::missing_field("svm"))?;
        let svm = self.usable_svm(svm_ref.uuid.as_deref(), svm_ref.name.as_deref())?;
        if svm.protocol(protocol).service.is_some() {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ENTRY,
                format!(
                    "The {} service already exists on SVM \"{}\".",
                    protocol.label(),
                    svm.name
                ),
            ));
        }
        let uuid = svm.uuid.clone();
        let enabled = req.enabled.unwrap_or(true);
        self.svms.update(&uuid, |svm| {
            svm.protocol_mut(protocol).service = Some(enabled)
        });
        let record = self
            .svms
            .get(&uuid)
            .and_then(|s| self.service_row(protocol, s))
            .map(|r| {
                let mut key = r.to_json();
                if let Some(obj) = key.as_object_mut() {
                    obj.retain(|k, _| k == "svm" || k == "_links");
                }
                key
            })
            .unwrap_or_default();
        Ok((uuid, record))
    }

    /// Switches an existing service on or off.
    pub fn patch_service(
        &mut self,
        protocol: Protocol,
        who: &Principal,
        svm_uuid: &str,
        patch: ServicePatch,
    ) -> ApiResult<()> {
        self.service_json(protocol, who, svm_uuid)?;
        if let Some(enabled) = patch.enabled {
            self.svms.update(svm_uuid, |svm| {
                svm.protocol_mut(protocol).service = Some(enabled)
            });
        }
        Ok(())
    }

    pub fn delete_service(
        &mut self,
        protocol: Protocol,
        who: &Principal,
        svm_uuid: &str,
    ) -> ApiResult<()> {
        self.service_json(protocol, who, svm_uuid)?;
        self.svms
            .update(svm_uuid, |svm| svm.protocol_mut(protocol).service = None);
        Ok(())
    }
}
