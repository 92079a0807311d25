//! The seed Secret as the controller judges it. What the Secret is (its name, keys, label,
//! owner, and how it is built) is the published contract, `crate::api::seed_secret`; what it
//! holds against what ONTAP and the object say is decided here.
//!
//! The controller never assumes the Secret exists because the SVM does (a failed write leaves an
//! SVM without one): it reads the Secret on every reconcile and acts on [`SeedSecretState`].
//! A Secret of that name that the operator does not control is reported, never overwritten.

use std::fmt;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use secrecy::SecretString;

use crate::api::StorageVirtualMachine;
use crate::api::seed_secret::{
    MANAGED_BY_LABEL, MANAGED_BY_VALUE, MANAGEMENT_LIF_KEY, PASSWORD_KEY, SECRET_TYPE, SEED_KEYS,
    SVM_KEY, SVM_UUID_KEY, USERNAME_KEY, seed_value,
};

/// What the controller expects a seed Secret to say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedSeed {
    /// uid of the StorageVirtualMachine that must control the Secret.
    pub owner_uid: String,
    pub username: String,
    pub management_lif: String,
    pub svm_name: String,
    pub svm_uuid: String,
}

impl ExpectedSeed {
    /// What `svm`'s seed Secret should say about the account `username` on the SVM
    /// `svm_name`/`svm_uuid`. None if `svm` has no uid (it was never stored).
    pub fn for_svm(
        svm: &StorageVirtualMachine,
        username: impl Into<String>,
        svm_name: impl Into<String>,
        svm_uuid: impl Into<String>,
    ) -> Option<Self> {
        Some(Self {
            owner_uid: svm.uid()?,
            username: username.into(),
            management_lif: svm.spec.management_lif.ip.clone(),
            svm_name: svm_name.into(),
            svm_uuid: svm_uuid.into(),
        })
    }
}

/// A field of the contract whose value is not the expected one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SeedField {
    /// The `app.kubernetes.io/managed-by` label is missing or changed.
    Label,
    /// The Secret's `type` is not `Opaque` (immutable: the Secret must be recreated).
    Type,
    Username,
    ManagementLif,
    Svm,
    SvmUuid,
}

impl SeedField {
    /// The key (or, for [`SeedField::Type`], the field) as it appears in the Secret.
    pub fn key(self) -> &'static str {
        match self {
            Self::Label => MANAGED_BY_LABEL,
            Self::Type => "type",
            Self::Username => USERNAME_KEY,
            Self::ManagementLif => MANAGEMENT_LIF_KEY,
            Self::Svm => SVM_KEY,
            Self::SvmUuid => SVM_UUID_KEY,
        }
    }
}

/// Why an existing Secret is not the operator's to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// No `app.kubernetes.io/managed-by=ontap-operator` label.
    NotLabelled,
    /// Labelled, but not controlled by this StorageVirtualMachine (another object, or nobody).
    OtherController,
}

/// The state of a seed Secret, as the controller acts on it.
///
/// Neither `Debug` nor `Display` shows a password.
#[derive(Clone, Debug)]
pub enum SeedSecretState {
    /// No Secret of that name: write one (with a verified password).
    Missing,
    /// A Secret of that name the operator does not control: report a conflict, leave it alone.
    NotOurs(Foreign),
    /// Ours, but keys are absent, empty or not UTF-8: the password cannot be trusted; set a new
    /// one in ONTAP and rewrite the Secret.
    Incomplete { missing_keys: Vec<&'static str> },
    /// Ours and complete, but the listed fields differ from what is expected. The password may
    /// still be valid (if the username did not change): verify it before reusing it.
    Stale {
        fields: Vec<SeedField>,
        username: String,
        password: SecretString,
    },
    /// Ours, complete and up to date. The password still has to be verified against ONTAP.
    Complete {
        username: String,
        password: SecretString,
    },
}

impl SeedSecretState {
    /// Whether the Secret says what it should (up to verifying the password).
    pub fn is_complete(&self) -> bool {
        matches!(self, Self::Complete { .. })
    }
}

impl fmt::Display for SeedSecretState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("the seed Secret does not exist"),
            Self::NotOurs(Foreign::NotLabelled) => f.write_str(
                "a Secret of that name exists without the label app.kubernetes.io/managed-by=ontap-operator; it is left alone",
            ),
            Self::NotOurs(Foreign::OtherController) => f.write_str(
                "a Secret of that name exists but is not controlled by this StorageVirtualMachine; it is left alone",
            ),
            Self::Incomplete { missing_keys } => write!(
                f,
                "the seed Secret lacks usable values for: {}",
                missing_keys.join(", ")
            ),
            Self::Stale { fields, .. } => {
                let keys: Vec<_> = fields.iter().map(|k| k.key()).collect();
                write!(f, "the seed Secret is out of date: {}", keys.join(", "))
            }
            Self::Complete { username, .. } => {
                write!(f, "the seed Secret holds credentials for {username}")
            }
        }
    }
}

/// Classifies `secret` (the object of the seed Secret's name, if any) against `expected`.
pub fn inspect_seed_secret(secret: Option<&Secret>, expected: &ExpectedSeed) -> SeedSecretState {
    let Some(secret) = secret else {
        return SeedSecretState::Missing;
    };
    let labelled =
        secret.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE);
    let controlled = secret
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == expected.owner_uid);
    // Control decides: a label someone removed from a Secret this object controls is repaired,
    // not taken for a stranger's Secret.
    if !controlled {
        return SeedSecretState::NotOurs(if labelled {
            Foreign::OtherController
        } else {
            Foreign::NotLabelled
        });
    }

    let value = |key: &str| seed_value(secret, key);
    let missing_keys: Vec<&'static str> = SEED_KEYS
        .into_iter()
        .filter(|k| value(k).is_none())
        .collect();
    let (Some(username), Some(password), Some(lif), Some(svm), Some(uuid)) = (
        value(USERNAME_KEY),
        value(PASSWORD_KEY),
        value(MANAGEMENT_LIF_KEY),
        value(SVM_KEY),
        value(SVM_UUID_KEY),
    ) else {
        return SeedSecretState::Incomplete { missing_keys };
    };

    let mut fields = Vec::new();
    if !labelled {
        fields.push(SeedField::Label);
    }
    if secret.type_.as_deref().unwrap_or(SECRET_TYPE) != SECRET_TYPE {
        fields.push(SeedField::Type);
    }
    if username != expected.username {
        fields.push(SeedField::Username);
    }
    if !same_address(lif, &expected.management_lif) {
        fields.push(SeedField::ManagementLif);
    }
    if svm != expected.svm_name {
        fields.push(SeedField::Svm);
    }
    if !uuid.eq_ignore_ascii_case(&expected.svm_uuid) {
        fields.push(SeedField::SvmUuid);
    }
    let username = username.to_string();
    let password = SecretString::from(password);
    if fields.is_empty() {
        SeedSecretState::Complete { username, password }
    } else {
        SeedSecretState::Stale {
            fields,
            username,
            password,
        }
    }
}

/// Two spellings of one IP address are the same LIF (`2001:DB8::1` and `2001:db8:0::1`).
fn same_address(a: &str, b: &str) -> bool {
    match (a.parse::<IpAddr>(), b.parse::<IpAddr>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use secrecy::ExposeSecret;

    use super::*;
    use crate::api::seed_secret::fixtures::{PASSWORD, built, fields, set, svm};

    fn expected() -> ExpectedSeed {
        ExpectedSeed::for_svm(
            &svm(),
            "vsadmin-1234abcd",
            "k8s_team-a_db",
            "0d3c2f6e-1111-2222-3333-444455556666",
        )
        .unwrap()
    }

    #[test]
    fn an_unstored_object_expects_no_secret() {
        let mut svm = svm();
        svm.metadata.uid = None;
        assert!(ExpectedSeed::for_svm(&svm, "u", "s", "x").is_none());
    }

    #[test]
    fn built_secret_inspects_as_complete() {
        match inspect_seed_secret(Some(&built()), &expected()) {
            SeedSecretState::Complete { username, password } => {
                assert_eq!(username, "vsadmin-1234abcd");
                assert_eq!(password.expose_secret(), PASSWORD);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing() {
        assert!(matches!(
            inspect_seed_secret(None, &expected()),
            SeedSecretState::Missing
        ));
    }

    #[test]
    fn not_ours_without_the_label_and_control() {
        let mut s = built();
        s.metadata.labels = None;
        s.metadata.owner_references = None;
        assert!(matches!(
            inspect_seed_secret(Some(&s), &expected()),
            SeedSecretState::NotOurs(Foreign::NotLabelled)
        ));
    }

    #[test]
    fn a_controlled_secret_that_lost_its_label_is_repaired() {
        for labels in [
            None,
            Some(BTreeMap::from([(MANAGED_BY_LABEL.into(), "helm".into())])),
        ] {
            let mut s = built();
            s.metadata.labels = labels;
            match inspect_seed_secret(Some(&s), &expected()) {
                SeedSecretState::Stale { fields, .. } => assert_eq!(fields, [SeedField::Label]),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn not_ours_when_controlled_by_another_object_or_by_nobody() {
        let mut s = built();
        s.metadata.owner_references.as_mut().unwrap()[0].uid = "someone-else".into();
        assert!(matches!(
            inspect_seed_secret(Some(&s), &expected()),
            SeedSecretState::NotOurs(Foreign::OtherController)
        ));
        // An ownerReference without controller=true is not control.
        let mut s = built();
        s.metadata.owner_references.as_mut().unwrap()[0].controller = None;
        assert!(matches!(
            inspect_seed_secret(Some(&s), &expected()),
            SeedSecretState::NotOurs(Foreign::OtherController)
        ));
        let mut s = built();
        s.metadata.owner_references = None;
        assert!(matches!(
            inspect_seed_secret(Some(&s), &expected()),
            SeedSecretState::NotOurs(Foreign::OtherController)
        ));
    }

    #[test]
    fn incomplete_lists_absent_empty_and_undecodable_keys() {
        let mut s = built();
        s.data.as_mut().unwrap().remove("svmUUID");
        set(&mut s, "password", b"");
        set(&mut s, "username", &[0xff, 0xfe]);
        match inspect_seed_secret(Some(&s), &expected()) {
            SeedSecretState::Incomplete { missing_keys } => {
                assert_eq!(missing_keys, ["username", "password", "svmUUID"]);
            }
            other => panic!("{other:?}"),
        }
        let mut s = built();
        s.data = None;
        match inspect_seed_secret(Some(&s), &expected()) {
            SeedSecretState::Incomplete { missing_keys } => assert_eq!(missing_keys, SEED_KEYS),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stale_lists_the_fields_that_differ() {
        let mut s = built();
        set(&mut s, "managementLIF", b"2001:db8::99");
        set(&mut s, "svm", b"k8s_old");
        set(&mut s, "svmUUID", b"another-uuid");
        set(&mut s, "username", b"vsadmin-old");
        s.type_ = Some("kubernetes.io/basic-auth".into());
        match inspect_seed_secret(Some(&s), &expected()) {
            SeedSecretState::Stale {
                fields,
                username,
                password,
            } => {
                assert_eq!(
                    fields,
                    [
                        SeedField::Type,
                        SeedField::Username,
                        SeedField::ManagementLif,
                        SeedField::Svm,
                        SeedField::SvmUuid
                    ]
                );
                assert_eq!(username, "vsadmin-old");
                assert_eq!(password.expose_secret(), PASSWORD);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn equivalent_spellings_are_not_stale() {
        let mut s = built();
        set(&mut s, "managementLIF", b"2001:DB8:0::10");
        set(&mut s, "svmUUID", b"0D3C2F6E-1111-2222-3333-444455556666");
        assert!(inspect_seed_secret(Some(&s), &expected()).is_complete());
    }

    #[test]
    fn passwords_never_show() {
        let states = [inspect_seed_secret(Some(&built()), &expected()), {
            let mut s = built();
            set(&mut s, "svm", b"other");
            inspect_seed_secret(Some(&s), &expected())
        }];
        for state in states {
            let shown = format!("{state} {state:?}");
            assert!(!shown.contains(PASSWORD), "{shown}");
        }
        assert!(!format!("{:?}", fields()).contains(PASSWORD));
    }

    #[test]
    fn display_names_the_problem() {
        let mut s = built();
        set(&mut s, "svm", b"other");
        assert_eq!(
            inspect_seed_secret(Some(&s), &expected()).to_string(),
            "the seed Secret is out of date: svm"
        );
        let mut s = built();
        s.data.as_mut().unwrap().remove("password");
        assert_eq!(
            inspect_seed_secret(Some(&s), &expected()).to_string(),
            "the seed Secret lacks usable values for: password"
        );
    }
}
