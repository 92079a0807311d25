//! The protocol services of an SVM (`/api/protocols/.../services`): each reflects the SVM's
//! protocol state, and switching it is how a protocol changes after the SVM was created.

use super::protocol::{Protocol, ServiceCreate, ServicePatch};
use super::{Model, Principal, Row, svm::Svm};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;
use serde_json::{Value, json};

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
