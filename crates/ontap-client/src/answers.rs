//! What ONTAP's answers mean: the verdicts the operations return, and the readings of a listing,
//! a create's answer and a delete's that several operations share. Below the client and the
//! operations, which both use them.

use crate::error::{OntapError, Result};
use crate::model::{Account, CreatedKey, Route, RouteCreate};

/// The result of a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    Deleted,
    /// ONTAP said the object does not exist (HTTP 404).
    AlreadyAbsent,
}

/// The verdict on a set of SVM-account credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialCheck {
    /// ONTAP accepted the credentials and they see the SVM.
    Valid { svm_uuid: String },
    /// ONTAP answered 401: wrong user name or password (or a locked account).
    Rejected,
    /// Accepted, but the account may not see this SVM (403, or the SVM is not in the answer).
    NotAuthorized,
}

impl CredentialCheck {
    pub fn is_valid(&self) -> bool {
        matches!(self, Self::Valid { .. })
    }
}

/// The verdict on an SVM account's credentials, read as the account itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountCheck {
    /// ONTAP accepted the credentials; the account as it sees itself (role, lock state).
    Valid(Account),
    /// ONTAP answered 401: wrong user name or password, or a locked account.
    Rejected,
    /// Accepted, but the account may not read its own record (403).
    NotAuthorized,
}

/// At most one record with exactly this name (the filter already asked for it; the comparison
/// guards against a server that treats it as a pattern).
pub(crate) fn unique_by_name<T>(
    endpoint: &'static str,
    name: &str,
    records: Vec<T>,
    name_of: impl Fn(&T) -> &str,
) -> Result<Option<T>> {
    let mut matching: Vec<T> = records.into_iter().filter(|r| name_of(r) == name).collect();
    match matching.len() {
        0 => Ok(None),
        1 => Ok(matching.pop()),
        count => Err(OntapError::MultipleRecords {
            endpoint,
            name: name.to_owned(),
            count,
        }),
    }
}

/// A created record that names another object than the one posted is not ours to build on.
pub(crate) fn created_name(endpoint: &'static str, name: &str, created: &CreatedKey) -> Result<()> {
    match created.name.as_deref() {
        Some(other) if other != name => Err(OntapError::Inconsistent(format!(
            "{endpoint}: created {name:?}, the answer names {other:?}"
        ))),
        _ => Ok(()),
    }
}

/// ONTAP's own "entry doesn't exist" counts as already deleted; any other 404 (a proxy's page)
/// is an error, or a delete that never reached the cluster would pass for done.
pub(crate) fn deleted(result: Result<()>) -> Result<DeleteOutcome> {
    match result {
        Ok(_) => Ok(DeleteOutcome::Deleted),
        Err(e) if e.is_not_found() => Ok(DeleteOutcome::AlreadyAbsent),
        Err(e) => Err(e),
    }
}

/// Whether a listed route has the destination a create asked for (none: ONTAP's default
/// route, `/0`).
pub(crate) fn same_destination(listed: &Route, asked: &RouteCreate) -> bool {
    match (&listed.destination, &asked.destination) {
        (Some(have), Some(want)) => have.address == want.address && have.netmask == want.netmask,
        (Some(have), None) => have.netmask == "0",
        (None, _) => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{IpInfo, ObjectRef};

    #[test]
    fn unique_by_name_zero_one_many() {
        fn f(v: Vec<&'static str>) -> Result<Option<&'static str>> {
            unique_by_name("/api/x", "a", v, |s: &&str| s)
        }
        assert_eq!(f(vec![]).unwrap(), None);
        assert_eq!(f(vec!["b"]).unwrap(), None);
        assert_eq!(f(vec!["a", "b"]).unwrap(), Some("a"));
        assert!(matches!(
            f(vec!["a", "a"]),
            Err(OntapError::MultipleRecords { count: 2, .. })
        ));
    }

    fn route(destination: Option<(&str, &str)>) -> Route {
        Route {
            uuid: "r".into(),
            destination: destination.map(|(address, netmask)| IpInfo {
                address: address.into(),
                netmask: netmask.into(),
            }),
            gateway: "10.0.0.1".into(),
            svm: None,
            metric: None,
        }
    }

    #[test]
    fn a_created_route_is_recognised_by_its_destination() {
        let asked = |destination: Option<(&str, &str)>| RouteCreate {
            svm: ObjectRef::by_uuid("s"),
            destination: destination.map(|(address, netmask)| IpInfo {
                address: address.into(),
                netmask: netmask.into(),
            }),
            gateway: "10.0.0.1".into(),
        };
        assert!(same_destination(
            &route(Some(("0.0.0.0", "0"))),
            &asked(None)
        ));
        assert!(!same_destination(
            &route(Some(("10.9.0.0", "16"))),
            &asked(None)
        ));
        assert!(same_destination(
            &route(Some(("10.9.0.0", "16"))),
            &asked(Some(("10.9.0.0", "16")))
        ));
        assert!(!same_destination(
            &route(Some(("10.9.0.0", "24"))),
            &asked(Some(("10.9.0.0", "16")))
        ));
    }
}
