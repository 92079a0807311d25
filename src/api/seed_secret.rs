//! The seed Secret contract: what the StorageVirtualMachine controller promises whoever reads an
//! SVM's credentials (the Gardener Extension, a user's workload). An `Opaque` Secret in the
//! StorageVirtualMachine's namespace, named [`seed_secret_name`], controlled by that object
//! (ownerReference with `controller` and `blockOwnerDeletion`, so it goes away with it), with
//! these data keys and labelled [`MANAGED_BY_LABEL`]`=`[`MANAGED_BY_VALUE`].
//!
//! Both sides build on this module alone: the SVM module writes the Secret with
//! [`build_seed_secret`] (for its own passes, and for the Extension's pre-fill through the
//! service the SVM module offers it) and judges what it holds; readers take its values with
//! [`seed_value`]. The default names an object's spec may leave out are part of it ([`names`]):
//! whoever declares an object knows in advance what its seed Secret will say.

pub mod names;

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};
use secrecy::{ExposeSecret, SecretString};

use super::StorageVirtualMachine;

pub use names::{SVM_NAME_PREFIX, default_account_name, default_secret_name, default_svm_name};

/// Key of the account name.
pub const USERNAME_KEY: &str = "username";
/// Key of the account password.
pub const PASSWORD_KEY: &str = "password";
/// Key of the SVM management LIF's IP address.
pub const MANAGEMENT_LIF_KEY: &str = "managementLIF";
/// Key of the SVM name in ONTAP.
pub const SVM_KEY: &str = "svm";
/// Key of the SVM's ONTAP UUID.
pub const SVM_UUID_KEY: &str = "svmUUID";
/// Key present only while a rotation replaces a password that works: the password ONTAP is
/// being switched to. At every moment ONTAP accepts the account's `password` or, while this key
/// is present, this one; a reader that is refused with `password` tries this one. Not one of
/// [`SEED_KEYS`]: a Secret without it is complete.
pub const NEXT_PASSWORD_KEY: &str = "nextPassword";
/// Every key of the contract, in the order they are reported.
pub const SEED_KEYS: [&str; 5] = [
    USERNAME_KEY,
    PASSWORD_KEY,
    MANAGEMENT_LIF_KEY,
    SVM_KEY,
    SVM_UUID_KEY,
];

/// Label marking objects this operator manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY_VALUE: &str = "ontap-operator";

/// When the operator last set a new password (RFC 3339). A password request sent earlier whose
/// answer was lost may still land for a while; until that window has passed, the credentials
/// are verified again before they count as working.
pub const PASSWORD_SET_AT_ANNOTATION: &str = "ontap.storage.dev/password-set-at";
/// The only Secret type the contract uses.
pub const SECRET_TYPE: &str = "Opaque";

/// The label selector of the seed Secrets. The one Secret cache of the operator is restricted
/// to it (caching every Secret of the cluster would cost memory and widen what a memory dump
/// reveals): every controller that reads seed Secrets asks for the cache with this selector.
pub fn seed_secret_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
}

/// A seed Secret as the operator caches it: without its data. Whoever may label a Secret
/// could otherwise grow the cache without bound (and a memory dump would hold every password);
/// a pass reads the Secret it needs by name.
pub fn without_data(secret: &mut Secret) {
    secret.data = None;
    secret.string_data = None;
}

/// The name of the seed Secret of `svm`: `spec.secretName`, or the default derived from the
/// object's name.
pub fn seed_secret_name(svm: &StorageVirtualMachine) -> String {
    svm.spec
        .secret_name
        .clone()
        .unwrap_or_else(|| default_secret_name(&svm.name_any()))
}

/// The value of `key` in `secret` as the contract reads it: present, UTF-8 and non-empty, or
/// not there at all (an empty password is no password).
pub fn seed_value<'a>(secret: &'a Secret, key: &str) -> Option<&'a str> {
    secret
        .data
        .as_ref()?
        .get(key)
        .and_then(|v| std::str::from_utf8(&v.0).ok())
        .filter(|v| !v.is_empty())
}

/// What goes into a seed Secret. `Debug` shows the password as `[REDACTED]`.
#[derive(Clone, Debug)]
pub struct SeedFields {
    pub username: String,
    pub password: SecretString,
    /// IP address of the SVM's management LIF.
    pub management_lif: String,
    /// SVM name in ONTAP.
    pub svm_name: String,
    pub svm_uuid: String,
    /// Set when this password is new in ONTAP (see [`PASSWORD_SET_AT_ANNOTATION`]), or carried
    /// over from the Secret when only descriptive fields change.
    pub password_set_at: Option<Timestamp>,
}

/// When the password of `secret` was last set by the operator, if it says so.
pub fn password_set_at(secret: &Secret) -> Option<Timestamp> {
    secret
        .annotations()
        .get(PASSWORD_SET_AT_ANNOTATION)?
        .parse()
        .ok()
}

/// Why a seed Secret could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SeedSecretError {
    /// An object that was never stored by the API server has no uid to own a Secret with.
    #[error("the StorageVirtualMachine has no {0}: it must be read from the API server first")]
    MissingMetadata(&'static str),
}

/// The seed Secret for `svm` holding `fields`, ready to be applied.
pub fn build_seed_secret(
    svm: &StorageVirtualMachine,
    fields: &SeedFields,
) -> Result<Secret, SeedSecretError> {
    let namespace = svm
        .namespace()
        .ok_or(SeedSecretError::MissingMetadata("namespace"))?;
    // None without a name or uid. kube sets `controller` only: blockOwnerDeletion keeps the
    // StorageVirtualMachine from vanishing in a foreground deletion while its Secret remains.
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..svm
            .controller_owner_ref(&())
            .ok_or(SeedSecretError::MissingMetadata("uid"))?
    };
    let data: BTreeMap<String, ByteString> = [
        (USERNAME_KEY, fields.username.as_str()),
        (PASSWORD_KEY, fields.password.expose_secret()),
        (MANAGEMENT_LIF_KEY, fields.management_lif.as_str()),
        (SVM_KEY, fields.svm_name.as_str()),
        (SVM_UUID_KEY, fields.svm_uuid.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
    .collect();
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(seed_secret_name(svm)),
            namespace: Some(namespace),
            labels: Some(BTreeMap::from([(
                MANAGED_BY_LABEL.to_string(),
                MANAGED_BY_VALUE.to_string(),
            )])),
            owner_references: Some(vec![owner]),
            annotations: fields.password_set_at.map(|at| {
                BTreeMap::from([(PASSWORD_SET_AT_ANNOTATION.to_string(), at.to_string())])
            }),
            ..ObjectMeta::default()
        },
        type_: Some(SECRET_TYPE.to_string()),
        data: Some(data),
        ..Secret::default()
    })
}

/// A stored StorageVirtualMachine and the fields of its seed Secret, for the tests of whoever
/// builds or reads one.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod fixtures {
    use super::*;

    pub(crate) const UID: &str = "6f1c1f5e-0000-4000-8000-000000000001";
    pub(crate) const PASSWORD: &str = "Sup3rSecretPassw0rdValue";

    pub(crate) fn svm() -> StorageVirtualMachine {
        let mut svm: StorageVirtualMachine = serde_json::from_value(serde_json::json!({
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "StorageVirtualMachine",
            "metadata": { "name": "db", "namespace": "team-a", "uid": UID },
            "spec": {
                "clusterRef": { "name": "lab" },
                "managementLif": { "ip": "2001:db8::10", "prefixLength": 64 },
                "dataLifs": [ { "ip": "2001:db8::11", "prefixLength": 64 } ]
            }
        }))
        .unwrap();
        svm.metadata.uid = Some(UID.into());
        svm
    }

    pub(crate) fn fields() -> SeedFields {
        SeedFields {
            username: "vsadmin-1234abcd".into(),
            password: SecretString::from(PASSWORD),
            management_lif: "2001:db8::10".into(),
            svm_name: "k8s_team-a_db".into(),
            svm_uuid: "0d3c2f6e-1111-2222-3333-444455556666".into(),
            password_set_at: None,
        }
    }

    pub(crate) fn built() -> Secret {
        build_seed_secret(&svm(), &fields()).unwrap()
    }

    pub(crate) fn set(secret: &mut Secret, key: &str, value: &[u8]) {
        secret
            .data
            .as_mut()
            .unwrap()
            .insert(key.into(), ByteString(value.to_vec()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn built_secret_follows_the_contract() {
        let s = built();
        assert_eq!(s.metadata.name.as_deref(), Some("db-svm-credentials"));
        assert_eq!(s.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(s.type_.as_deref(), Some("Opaque"));
        assert_eq!(
            s.labels()
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("ontap-operator")
        );
        let owners = s.owner_references();
        assert_eq!(owners.len(), 1);
        let o: &OwnerReference = &owners[0];
        assert_eq!(o.uid, UID);
        assert_eq!(o.kind, "StorageVirtualMachine");
        assert_eq!(o.api_version, "ontap.storage.dev/v1alpha1");
        assert_eq!(o.name, "db");
        assert_eq!(o.controller, Some(true));
        assert_eq!(o.block_owner_deletion, Some(true));
        let data = s.data.as_ref().unwrap();
        let keys: Vec<_> = data.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["managementLIF", "password", "svm", "svmUUID", "username"]
        );
        assert_eq!(data["password"].0, PASSWORD.as_bytes());
        assert_eq!(data["managementLIF"].0, b"2001:db8::10");
        assert!(s.string_data.is_none());
        assert!(s.metadata.annotations.is_none());
        assert_eq!(password_set_at(&s), None);
        assert_eq!(
            seed_secret_selector(),
            "app.kubernetes.io/managed-by=ontap-operator"
        );
    }

    #[test]
    fn the_time_a_password_was_set_round_trips() {
        let at: Timestamp = "2025-01-02T03:04:05Z".parse().unwrap();
        let s = build_seed_secret(
            &svm(),
            &SeedFields {
                password_set_at: Some(at),
                ..fields()
            },
        )
        .unwrap();
        assert_eq!(password_set_at(&s), Some(at));
    }

    #[test]
    fn secret_name_comes_from_the_spec_when_set() {
        let mut svm = svm();
        assert_eq!(seed_secret_name(&svm), "db-svm-credentials");
        svm.spec.secret_name = Some("custom".into());
        assert_eq!(seed_secret_name(&svm), "custom");
        let s = build_seed_secret(&svm, &fields()).unwrap();
        assert_eq!(s.metadata.name.as_deref(), Some("custom"));
    }

    #[test]
    fn an_unstored_object_cannot_own_a_secret() {
        let mut svm = svm();
        svm.metadata.uid = None;
        assert_eq!(
            build_seed_secret(&svm, &fields()).unwrap_err(),
            SeedSecretError::MissingMetadata("uid")
        );
        let mut svm = self::svm();
        svm.metadata.namespace = None;
        assert_eq!(
            build_seed_secret(&svm, &fields()).unwrap_err(),
            SeedSecretError::MissingMetadata("namespace")
        );
    }

    #[test]
    fn values_are_read_as_built_and_unusable_ones_are_absent() {
        let mut s = built();
        assert_eq!(seed_value(&s, USERNAME_KEY), Some("vsadmin-1234abcd"));
        assert_eq!(seed_value(&s, PASSWORD_KEY), Some(PASSWORD));
        assert_eq!(
            seed_value(&s, SVM_UUID_KEY),
            Some("0d3c2f6e-1111-2222-3333-444455556666")
        );
        set(&mut s, PASSWORD_KEY, b"");
        set(&mut s, USERNAME_KEY, &[0xff, 0xfe]);
        s.data.as_mut().unwrap().remove(SVM_KEY);
        for key in [PASSWORD_KEY, USERNAME_KEY, SVM_KEY] {
            assert_eq!(seed_value(&s, key), None, "{key}");
        }
        s.data = None;
        assert_eq!(seed_value(&s, MANAGEMENT_LIF_KEY), None);
    }

    #[test]
    fn the_cache_keeps_no_data() {
        let mut s = built();
        s.string_data = Some(BTreeMap::from([(PASSWORD_KEY.into(), PASSWORD.into())]));
        without_data(&mut s);
        assert!(s.data.is_none() && s.string_data.is_none());
        assert_eq!(s.metadata.name.as_deref(), Some("db-svm-credentials"));
    }

    #[test]
    fn the_password_never_shows() {
        assert!(!format!("{:?}", fields()).contains(PASSWORD));
    }
}
