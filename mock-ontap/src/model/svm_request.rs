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
        "nfs.enabled",
        "iscsi.enabled",
        "nvme.enabled",
    ];
}
