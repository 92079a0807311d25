//! The protocols an SVM serves, each through a service object of its own, and where each
//! service lives in the REST API.

use crate::endpoints;

/// A protocol an SVM serves through a service object of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Nfs,
    Iscsi,
    Nvme,
}

impl Protocol {
    pub(crate) fn collection_path(self) -> &'static [&'static str] {
        match self {
            Protocol::Nfs => &["api", "protocols", "nfs", "services"],
            Protocol::Iscsi => &["api", "protocols", "san", "iscsi", "services"],
            Protocol::Nvme => &["api", "protocols", "nvme", "services"],
        }
    }

    pub(crate) fn collection_endpoint(self) -> &'static str {
        match self {
            Protocol::Nfs => endpoints::NFS_SERVICES,
            Protocol::Iscsi => endpoints::ISCSI_SERVICES,
            Protocol::Nvme => endpoints::NVME_SERVICES,
        }
    }

    pub(crate) fn service_endpoint(self) -> &'static str {
        match self {
            Protocol::Nfs => endpoints::NFS_SERVICE,
            Protocol::Iscsi => endpoints::ISCSI_SERVICE,
            Protocol::Nvme => endpoints::NVME_SERVICE,
        }
    }

    /// The protocol's name as an SVM's fields spell it (`nfs`, `iscsi`, `nvme`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Nfs => "nfs",
            Protocol::Iscsi => "iscsi",
            Protocol::Nvme => "nvme",
        }
    }
}
