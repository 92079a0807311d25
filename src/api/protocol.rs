//! The data protocols an SVM enables and a data LIF serves: a value both the resource types and
//! the rules over them ([`super::rules`]) name, so it sits below both.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A data protocol: one of an SVM's `protocols`, the one a data LIF serves.
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord, Hash,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// NVMe over TCP.
    Nvme,
    Iscsi,
    Nfs,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Nvme, Protocol::Iscsi, Protocol::Nfs];

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Nvme => "nvme",
            Protocol::Iscsi => "iscsi",
            Protocol::Nfs => "nfs",
        }
    }

    /// Block protocols, whose volumes Trident can LUKS-encrypt.
    pub fn is_san(self) -> bool {
        matches!(self, Protocol::Nvme | Protocol::Iscsi)
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
