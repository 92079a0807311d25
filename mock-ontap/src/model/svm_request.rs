//! What a client asks of SVMs: the POST and PATCH bodies, with the name-or-uuid references and
//! toggles inside them. Apart from the SVMs because a job carries its PATCH until the change
//! lands: jobs import these shapes, SVMs import jobs, and nothing imports back.

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NameRef {
    pub name: Option<String>,
    pub uuid: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Toggle {
    pub enabled: Option<bool>,
    pub allowed: Option<bool>,
}

/// `dns` of an SVM POST: the SVM's DNS domains and name servers.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DnsSpec {
    #[serde(default)]
    pub domains: Vec<String>,
    #[serde(default)]
    pub servers: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SvmCreate {
    pub name: Option<String>,
    pub comment: Option<String>,
    pub language: Option<String>,
    pub ipspace: Option<NameRef>,
    pub aggregates: Option<Vec<NameRef>>,
    pub nfs: Option<Toggle>,
    pub iscsi: Option<Toggle>,
    pub nvme: Option<Toggle>,
    pub dns: Option<DnsSpec>,
}

impl SvmCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "comment",
        "language",
        "ipspace.name",
        "ipspace.uuid",
        "aggregates.name",
        "aggregates.uuid",
        "nfs.enabled",
        "nfs.allowed",
        "iscsi.enabled",
        "iscsi.allowed",
        "nvme.enabled",
        "nvme.allowed",
        "dns.domains",
        "dns.servers",
    ];
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SvmPatch {
    pub name: Option<String>,
    pub comment: Option<String>,
    pub state: Option<String>,
    pub language: Option<String>,
    pub aggregates: Option<Vec<NameRef>>,
    pub nfs: Option<Toggle>,
    pub iscsi: Option<Toggle>,
    pub nvme: Option<Toggle>,
}

impl SvmPatch {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "comment",
        "state",
        "language",
        "aggregates.name",
        "aggregates.uuid",
        "nfs.allowed",
        "iscsi.allowed",
        "nvme.allowed",
    ];

    /// Readable fields ONTAP sets only at creation: netapp-ontap's `SvmNfs`, `SvmIscsi` and
    /// `SvmNvme` list `enabled` in `postable_fields` but not in `patchable_fields`. The protocol
    /// is switched on its service (`/api/protocols/...`).
    pub const NOT_PATCHABLE: &'static [&'static str] = &[
        "nfs.enabled",
        "iscsi.enabled",
        "nvme.enabled",
        "fcp.enabled",
    ];
}
