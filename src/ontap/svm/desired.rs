//! What several steps share about the ONTAP side of a StorageVirtualMachine: the ownership
//! marker in an SVM's comment, and the [`DesiredError`] a spec that cannot become a request
//! turns into, reported as a condition rather than a request ONTAP refuses over and over. Each
//! step's own planning sits next to it: the SVM create body and protocol patch in
//! `svm`, the LIF plan in `lifs`.
//!
//! Everything here is pure.

use std::net::IpAddr;

// ---------------------------------------------------------------------------------------------
// Ownership marker

/// Start of the marker the operator writes into the comment of every SVM it creates.
pub const COMMENT_MARKER: &str = "ontap-operator:uid=";
/// ONTAP's limit on SVM comments.
const COMMENT_MAX: usize = 255;

/// The comment of an SVM created for the object with `uid` (`namespace/name` follows for
/// people reading ONTAP, cut to ONTAP's 255 characters; only the marker is ever parsed).
pub fn ownership_comment(uid: &str, namespace: &str, name: &str) -> String {
    let mut comment = format!("{COMMENT_MARKER}{uid} StorageVirtualMachine {namespace}/{name}");
    if comment.len() > COMMENT_MAX {
        // Kubernetes names are ASCII; stay on a character boundary for anything else.
        let mut end = COMMENT_MAX;
        while !comment.is_char_boundary(end) {
            end -= 1;
        }
        comment.truncate(end);
    }
    comment
}

/// The comment of an account created for the object with `uid`: the marker alone, which is what
/// lets cleanup, a lock or a new password touch the account at all.
pub fn account_comment(uid: &str) -> String {
    format!("{COMMENT_MARKER}{uid}")
}

/// The namespace of the object an SVM's comment says it was created for (`None` for an
/// unmarked SVM, or a comment cut before it). Decides where a released SVM may be taken over
/// from: its previous owner's namespace.
pub fn marked_namespace(comment: Option<&str>) -> Option<&str> {
    let (_, rest) = comment?.split_once(COMMENT_MARKER)?;
    let (_, described) = rest.split_once(" StorageVirtualMachine ")?;
    let (namespace, name) = described.split_once('/')?;
    (!namespace.is_empty() && !name.is_empty()).then_some(namespace)
}

/// Who an existing SVM belongs to, according to its comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Marked with this object's uid: created by the operator for this object.
    Ours,
    /// Marked for another object (its uid): another StorageVirtualMachine manages it.
    Foreign(String),
    /// No marker: created outside the operator. Never adopted or deleted implicitly.
    Unmarked,
}

/// Reads the ownership marker of an SVM's `comment` and compares it with `uid`.
pub fn owned_by(comment: Option<&str>, uid: &str) -> Ownership {
    let Some(rest) = comment
        .and_then(|c| c.split_once(COMMENT_MARKER))
        .map(|(_, r)| r)
    else {
        return Ownership::Unmarked;
    };
    let marked = rest.split_whitespace().next().unwrap_or_default();
    if marked.is_empty() {
        Ownership::Unmarked
    } else if marked == uid {
        Ownership::Ours
    } else {
        Ownership::Foreign(marked.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

/// A spec the controller cannot turn into ONTAP requests. Reported as a condition: retrying does
/// not help until the spec changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DesiredError {
    #[error("{field}: {value:?} is not an IPv4 or IPv6 address")]
    InvalidAddress { field: String, value: String },
    #[error("{field}: prefix length {prefix} is out of range for an IPv{family} address (1-{max})")]
    InvalidPrefix {
        field: String,
        prefix: u8,
        family: u8,
        max: u8,
    },
    #[error("{field}: a VIP LIF is in no subnet, so its prefix length must be {max}, not {prefix}")]
    VipPrefix { field: String, prefix: u8, max: u8 },
    #[error("{field}: {address} is used by more than one LIF")]
    DuplicateAddress { field: String, address: IpAddr },
    #[error("the StorageVirtualMachine has no uid: it must be read from the API server first")]
    MissingUid,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn the_namespace_of_a_marked_svm_is_read_from_its_comment() {
        let comment = ownership_comment("u-1", "team-a", "db");
        assert_eq!(marked_namespace(Some(&comment)), Some("team-a"));
        assert_eq!(
            owned_by(Some(&account_comment("u-1")), "u-1"),
            Ownership::Ours
        );
        assert_eq!(marked_namespace(Some(&account_comment("u-1"))), None);
        assert_eq!(marked_namespace(Some("made by hand")), None);
        assert_eq!(marked_namespace(None), None);
    }
    use crate::api::StorageVirtualMachine;

    pub(crate) const UID: &str = "9b2e8c1a-0000-4000-8000-000000000002";

    pub(crate) fn svm(spec: serde_json::Value) -> StorageVirtualMachine {
        let mut svm: StorageVirtualMachine = serde_json::from_value(serde_json::json!({
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "StorageVirtualMachine",
            "metadata": { "name": "db", "namespace": "team-a" },
            "spec": spec,
        }))
        .unwrap();
        svm.metadata.uid = Some(UID.into());
        svm
    }

    pub(crate) fn base() -> StorageVirtualMachine {
        svm(serde_json::json!({
            "clusterRef": { "name": "lab" },
            "ipspace": "Default",
            "aggregates": ["aggr1", "aggr2"],
            "protocols": { "nfs": true },
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24 },
            "dataLifs": [
                { "ip": "192.0.2.11", "prefixLength": 24, "homeNode": "n1" },
                { "ip": "2001:db8::11", "prefixLength": 64 }
            ]
        }))
    }

    #[test]
    fn ownership() {
        let comment = ownership_comment(UID, "team-a", "db");
        assert_eq!(owned_by(Some(&comment), UID), Ownership::Ours);
        assert_eq!(
            owned_by(Some(&comment), "other"),
            Ownership::Foreign(UID.into())
        );
        assert_eq!(owned_by(None, UID), Ownership::Unmarked);
        assert_eq!(owned_by(Some("made by hand"), UID), Ownership::Unmarked);
        assert_eq!(
            owned_by(Some("ontap-operator:uid="), UID),
            Ownership::Unmarked
        );
        // An admin may prepend a note; the marker still counts.
        assert_eq!(
            owned_by(Some(&format!("prod! {comment}")), UID),
            Ownership::Ours
        );
        // A uid that merely starts like ours is someone else's.
        assert_eq!(
            owned_by(Some(&format!("{COMMENT_MARKER}{UID}x")), UID),
            Ownership::Foreign(format!("{UID}x"))
        );
    }

    #[test]
    fn long_comments_are_cut_to_ontap_limit() {
        let c = ownership_comment(UID, &"n".repeat(63), &"m".repeat(253));
        assert_eq!(c.len(), 255);
        assert_eq!(owned_by(Some(&c), UID), Ownership::Ours);
    }
}
