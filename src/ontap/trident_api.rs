//! Which ONTAP API the shoot's Trident speaks, decided from the cluster's version
//! (`GET /api/cluster`, recorded in the OntapCluster's `status.version`), and what the SVM account
//! and the backend need for it.
//!
//! From Trident's `InitializeOntapDriver` (`storage_drivers/ontap/ontap_common.go`):
//!
//! - below 9.12.1 Trident always speaks ZAPI and refuses a backend with `useREST: true`;
//! - from 9.12.1 to before 9.15.1 it speaks ZAPI unless the backend says `useREST: true`;
//! - from 9.15.1 it speaks REST unless the backend says `useREST: false` (after 9.17 ZAPI is gone).
//!
//! So from 9.12.1 on the backend says `useREST: true` (harmless from 9.15.1, where it is the
//! default) and the account keeps only the `http` application; below 9.12.1 the account also
//! gets `ontapi`, which ZAPI logs in through, and the backend says nothing. NVMe/TCP exists in
//! ONTAP from 9.10.1 on (ONTAP's "Configure an NVMe LIF"), and Trident's ZAPI layer implements
//! no NVMe operation, so an NVMe backend below 9.12.1 is refused: no Trident can provision on it.

use std::fmt;
use std::str::FromStr;

use ontap_client::{AccountApplication, RoleAccess};

/// An ONTAP release, `generation.major.minor` as `GET /api/cluster` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OntapVersion {
    pub generation: u32,
    pub major: u32,
    pub minor: u32,
}

impl OntapVersion {
    pub const fn new(generation: u32, major: u32, minor: u32) -> Self {
        Self {
            generation,
            major,
            minor,
        }
    }
}

/// The first release whose REST API Trident uses (on request).
pub const REST_SUPPORTED: OntapVersion = OntapVersion::new(9, 12, 1);
/// The first release with NVMe over TCP.
pub const NVME_TCP: OntapVersion = OntapVersion::new(9, 10, 1);

impl fmt::Display for OntapVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.generation, self.major, self.minor)
    }
}

/// A version text that is not `generation.major.minor`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an ONTAP version (generation.major.minor)")]
pub struct VersionError(String);

impl FromStr for OntapVersion {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || VersionError(text.to_owned());
        let mut parts = text.trim().split('.').map(|p| p.parse::<u32>());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Ok(generation)), Some(Ok(major)), Some(Ok(minor)), None) => {
                Ok(Self::new(generation, major, minor))
            }
            _ => Err(error()),
        }
    }
}

/// The API the shoot's Trident uses against a cluster of a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TridentApi {
    /// REST: the backend says `useREST: true`; the account needs `http`.
    Rest,
    /// ZAPI: the account needs `ontapi` (besides the operator's own `http`).
    Zapi,
}

impl TridentApi {
    pub fn for_version(version: OntapVersion) -> Self {
        if version >= REST_SUPPORTED {
            TridentApi::Rest
        } else {
            TridentApi::Zapi
        }
    }

    /// The backend's `useREST`, where it is written.
    pub fn use_rest(self) -> Option<bool> {
        match self {
            TridentApi::Rest => Some(true),
            TridentApi::Zapi => None,
        }
    }
}

/// The applications an SVM account needs on a cluster of `version`: `http` with a password (the
/// operator and REST), and `ontapi` where Trident speaks ZAPI. An unknown version gets `http`
/// only: the account is repaired once the version is known.
pub fn account_applications(version: Option<OntapVersion>) -> Vec<AccountApplication> {
    let password = |application: &str| AccountApplication {
        application: application.to_owned(),
        authentication_methods: vec!["password".to_owned()],
    };
    let mut applications = vec![password("http")];
    if version.map(TridentApi::for_version) == Some(TridentApi::Zapi) {
        applications.push(password("ontapi"));
    }
    applications
}

/// The applications of `wanted` that `have` lacks, or lacks password login for.
pub fn missing_applications(
    have: &[AccountApplication],
    wanted: &[AccountApplication],
) -> Vec<AccountApplication> {
    wanted
        .iter()
        .filter(|w| {
            !have.iter().any(|h| {
                h.application == w.application
                    && w.authentication_methods
                        .iter()
                        .all(|m| h.authentication_methods.contains(m))
            })
        })
        .cloned()
        .collect()
}

/// The REST privileges NetApp documents for an SVM-scoped Trident user, path for path and
/// access for access: NetApp/trident `contrib/ontap/trident_role/cli_pastable/
/// rest_custom_role_output.txt` (`security login rest-role create -role "trident" -api …
/// -access …`). What an account of role `Trident` holds, nothing more: not even
/// `/api/protocols/nvme/services`, which Trident's NVMe driver does not read (its `Initialize`,
/// `storage_drivers/ontap/ontap_san_nvme.go`, decides NVMe support from the cluster version and
/// finds its LIFs by `services=data_nvme_tcp`), nor `/api/security/accounts`, so the operator
/// proves such an account's password through `/api/svm/svms`, which the list grants.
pub const TRIDENT_PRIVILEGES: [(&str, RoleAccess); 42] = [
    ("/api/application/consistency-groups", RoleAccess::All),
    (
        "/api/application/consistency-groups/snapshots",
        RoleAccess::ReadCreate,
    ),
    ("/api/application/containers", RoleAccess::ReadCreate),
    ("/api/cluster", RoleAccess::Readonly),
    ("/api/cluster/jobs", RoleAccess::Readonly),
    ("/api/cluster/nodes", RoleAccess::Readonly),
    ("/api/cluster/schedules", RoleAccess::Readonly),
    ("/api/network/fc/interfaces", RoleAccess::Readonly),
    ("/api/network/ip/interfaces", RoleAccess::Readonly),
    ("/api/private/cli/volume/recovery-queue", RoleAccess::All),
    (
        "/api/private/cli/volume/recovery-queue/purge",
        RoleAccess::All,
    ),
    (
        "/api/private/cli/vserver/nvme/subsystem/delete",
        RoleAccess::All,
    ),
    ("/api/protocols/cifs/shares", RoleAccess::All),
    ("/api/protocols/cifs/shares/acls", RoleAccess::All),
    ("/api/protocols/nfs/export-policies", RoleAccess::All),
    ("/api/protocols/nfs/export-policies/rules", RoleAccess::All),
    ("/api/protocols/nvme/subsystem-maps", RoleAccess::All),
    ("/api/protocols/nvme/subsystems", RoleAccess::All),
    ("/api/protocols/nvme/subsystems/hosts", RoleAccess::All),
    ("/api/protocols/san/fcp/services", RoleAccess::Readonly),
    ("/api/protocols/san/igroups", RoleAccess::All),
    ("/api/protocols/san/igroups/initiators", RoleAccess::All),
    (
        "/api/protocols/san/iscsi/credentials",
        RoleAccess::ReadModify,
    ),
    ("/api/protocols/san/iscsi/services", RoleAccess::Readonly),
    ("/api/protocols/san/lun-maps", RoleAccess::All),
    (
        "/api/protocols/san/lun-maps/reporting-nodes",
        RoleAccess::All,
    ),
    ("/api/snapmirror/policies", RoleAccess::Readonly),
    ("/api/snapmirror/relationships", RoleAccess::All),
    (
        "/api/snapmirror/relationships/transfers",
        RoleAccess::ReadCreateModify,
    ),
    ("/api/storage/aggregates", RoleAccess::Readonly),
    ("/api/storage/luns", RoleAccess::All),
    ("/api/storage/luns/attributes", RoleAccess::ReadCreateModify),
    ("/api/storage/namespaces", RoleAccess::All),
    ("/api/storage/qtrees", RoleAccess::All),
    ("/api/storage/quota/rules", RoleAccess::ReadCreateModify),
    ("/api/storage/storage-units", RoleAccess::ReadCreateModify),
    ("/api/storage/storage-units/snapshots", RoleAccess::All),
    ("/api/storage/volumes", RoleAccess::All),
    ("/api/storage/volumes/snapshots", RoleAccess::All),
    ("/api/support/ems/application-logs", RoleAccess::ReadCreate),
    ("/api/svm/peers", RoleAccess::Readonly),
    ("/api/svm/svms", RoleAccess::Readonly),
];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn v(text: &str) -> OntapVersion {
        text.parse().unwrap()
    }

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(v("9.16.1"), OntapVersion::new(9, 16, 1));
        assert!(v("9.9.1") < v("9.10.1"));
        assert!(v("9.12.0") < REST_SUPPORTED);
        assert!("9.16".parse::<OntapVersion>().is_err());
        assert!("9.16.1.2".parse::<OntapVersion>().is_err());
        assert!("x.1.1".parse::<OntapVersion>().is_err());
        assert_eq!(v("9.16.1").to_string(), "9.16.1");
    }

    /// Trident's own boundaries: ZAPI below 9.12.1, REST on request from there, REST by
    /// default from 9.15.1; we ask for REST wherever Trident takes it.
    #[test]
    fn trident_speaks_rest_from_9_12_1() {
        assert_eq!(TridentApi::for_version(v("9.11.1")), TridentApi::Zapi);
        assert_eq!(TridentApi::for_version(v("9.12.1")), TridentApi::Rest);
        assert_eq!(TridentApi::for_version(v("9.14.1")), TridentApi::Rest);
        assert_eq!(TridentApi::for_version(v("9.16.1")), TridentApi::Rest);
        assert_eq!(TridentApi::Rest.use_rest(), Some(true));
        assert_eq!(TridentApi::Zapi.use_rest(), None);
    }

    #[test]
    fn zapi_clusters_give_the_account_ontapi() {
        let names = |apps: Vec<AccountApplication>| {
            apps.into_iter().map(|a| a.application).collect::<Vec<_>>()
        };
        assert_eq!(names(account_applications(Some(v("9.16.1")))), ["http"]);
        assert_eq!(
            names(account_applications(Some(v("9.11.1")))),
            ["http", "ontapi"]
        );
        assert_eq!(names(account_applications(None)), ["http"]);
        let have = account_applications(Some(v("9.16.1")));
        let wanted = account_applications(Some(v("9.11.1")));
        assert_eq!(names(missing_applications(&have, &wanted)), ["ontapi"]);
        assert!(missing_applications(&wanted, &have).is_empty());
    }
}
