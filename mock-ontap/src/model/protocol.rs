//! An SVM's protocol services: `/api/protocols/nfs/services`, `/api/protocols/san/iscsi/services`
//! and `/api/protocols/nvme/services`, one record per SVM keyed by `svm.uuid`.
//!
//! ONTAP sets an SVM's `nfs|iscsi|nvme.enabled` only when the SVM is created (netapp-ontap lists
//! `enabled` as postable, not patchable); afterwards the protocol is created, switched on and off
//! on its service, and the SVM's `enabled` shows the service's state. Creating an SVM with
//! `enabled: true` creates the service, enabled.

use serde::Deserialize;

use super::svm_request::{NameRef, Toggle};

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

    pub(super) fn label(self) -> &'static str {
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
