//! Default names of what a StorageVirtualMachine provisions when its spec leaves them out: the
//! SVM name, the account name and the seed Secret name. Part of the contract: whoever declares an
//! object (the Gardener Extension) knows in advance what its seed Secret will say.
//!
//! Every default is a pure function of the object's namespace and name, so a restarted operator
//! (or a second replica) arrives at the same names and finds what it created before. Readable
//! names are kept whenever they fit; otherwise the name is truncated and a hash of the full
//! identity is appended, so two objects do not end up sharing an SVM or a Secret. Ownership is
//! still checked wherever a name is used (the SVM's comment marker, the Secret's
//! ownerReference): a name collision is reported as a conflict, never silently taken over.

use ring::digest::{SHA256, digest};

use crate::api::rules::{DNS_SUBDOMAIN_MAX, SVM_NAME_MAX, is_ontap_name_char};

/// Prefix of default SVM names: marks them as made for Kubernetes and guarantees a leading
/// letter, which ONTAP requires.
pub const SVM_NAME_PREFIX: &str = "k8s_";
/// Prefix of default account names. Plain `vsadmin` is the locked built-in account ONTAP creates
/// in every SVM, so the default always carries a suffix.
pub const ACCOUNT_NAME_PREFIX: &str = "vsadmin-";
/// Suffix of default seed Secret names.
pub const SECRET_NAME_SUFFIX: &str = "-svm-credentials";

/// Hex digits of the identity hash appended to shortened names (32 bits).
const HASH_LEN: usize = 8;

/// The first [`HASH_LEN`] hex digits of SHA-256 over `namespace/name`. `/` cannot occur in
/// either part, so the input identifies the object unambiguously.
fn identity_hash(namespace: &str, name: &str) -> String {
    let hash = digest(&SHA256, format!("{namespace}/{name}").as_bytes());
    hash.as_ref()
        .iter()
        .take(HASH_LEN / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The default ONTAP SVM name of the StorageVirtualMachine `namespace/name`:
/// `k8s_<namespace>_<name>`, at most 47 characters.
///
/// Kubernetes names consist of lowercase letters, digits, `-` and `.`, all of which ONTAP
/// allows, and never contain `_`; so for them `k8s_<namespace>_<name>` is unambiguous. When
/// that is too long, or when an input holds a character ONTAP does not allow (or `_`, the
/// separator), the readable part is cut and `__<hash>` appended. A readable default never
/// contains `__`, so shortened and readable names cannot collide with each other.
pub fn default_svm_name(namespace: &str, name: &str) -> String {
    let mut altered = false;
    let mut sanitize = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c != '_' && is_ontap_name_char(c) {
                    c
                } else {
                    altered = true;
                    '_'
                }
            })
            .collect()
    };
    let readable = format!(
        "{SVM_NAME_PREFIX}{}_{}",
        sanitize(namespace),
        sanitize(name)
    );
    if !altered && readable.len() <= SVM_NAME_MAX {
        return readable;
    }
    let hash = identity_hash(namespace, name);
    // Everything in `readable` is ASCII by now, so byte truncation is character truncation.
    let keep = SVM_NAME_MAX - 2 - HASH_LEN;
    format!("{}__{hash}", &readable[..readable.len().min(keep)])
}

/// The default name of the SVM-scoped account of the StorageVirtualMachine `namespace/name`:
/// `vsadmin-<8 hex digits>`.
///
/// The account lives inside its own SVM, so the name only has to be stable, valid (3–64
/// characters of `[A-Za-z0-9_.-]`) and different from the built-in `vsadmin`. The `-` also means
/// a generated password (letters and digits only) can never contain it, which ONTAP would
/// refuse (7077918).
pub fn default_account_name(namespace: &str, name: &str) -> String {
    format!("{ACCOUNT_NAME_PREFIX}{}", identity_hash(namespace, name))
}

/// The default seed Secret name of the StorageVirtualMachine `name`: `<name>-svm-credentials`.
///
/// A StorageVirtualMachine name of up to 237 characters fits as it is; a longer one is cut, and
/// a hash of the full name keeps the result unique and within the 253 characters of a DNS
/// subdomain. The Secret lives in the object's own namespace, so the name alone identifies it.
pub fn default_secret_name(name: &str) -> String {
    let readable = format!("{name}{SECRET_NAME_SUFFIX}");
    if readable.len() <= DNS_SUBDOMAIN_MAX {
        return readable;
    }
    let hash = identity_hash("", name);
    let keep = DNS_SUBDOMAIN_MAX - SECRET_NAME_SUFFIX.len() - 1 - HASH_LEN;
    let mut cut = name.chars().take(keep).collect::<String>();
    // A label must end with a letter or digit: `a.-1234` or `a--1234` would be invalid or odd.
    while cut.ends_with(['.', '-']) {
        cut.pop();
    }
    let cut = if cut.is_empty() { "svm" } else { &cut };
    format!("{cut}-{hash}{SECRET_NAME_SUFFIX}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::api::rules::{is_account_name, is_dns_subdomain, is_svm_name};

    #[test]
    fn readable_svm_names() {
        assert_eq!(default_svm_name("team-a", "db"), "k8s_team-a_db");
        assert_eq!(default_svm_name("ns", "a.b-c"), "k8s_ns_a.b-c");
    }

    #[test]
    fn long_svm_names_are_cut_and_hashed() {
        let n = default_svm_name(
            "a-rather-long-namespace-name",
            "and-an-even-longer-object-name",
        );
        assert_eq!(n.len(), 47);
        assert!(
            n.starts_with("k8s_a-rather-long-namespace-name_and-"),
            "{n}"
        );
        assert!(is_svm_name(&n), "{n}");
        let (_, hash) = n.rsplit_once("__").unwrap();
        assert_eq!(hash.len(), 8);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        // Same prefix, different tail: different names.
        let m = default_svm_name(
            "a-rather-long-namespace-name",
            "and-an-even-longer-object-name2",
        );
        assert_ne!(n, m);
    }

    #[test]
    fn exactly_47_is_kept_readable() {
        let name = "x".repeat(47 - "k8s_ns_".len());
        let n = default_svm_name("ns", &name);
        assert_eq!(n.len(), 47);
        assert!(!n.contains("__"));
        let n = default_svm_name("ns", &format!("{name}y"));
        assert!(n.contains("__"));
    }

    #[test]
    fn foreign_characters_force_a_hash() {
        // Not valid Kubernetes names, but the functions are total and must stay injective.
        let a = default_svm_name("ns", "a_b");
        let b = default_svm_name("ns_a", "b");
        let c = default_svm_name("ns", "a/b");
        assert_ne!(a, b);
        assert_ne!(a, c);
        for n in [&a, &b, &c, &default_svm_name("ñ", "ü")] {
            assert!(is_svm_name(n), "{n}");
            assert!(n.contains("__"), "{n}");
        }
    }

    #[test]
    fn account_names() {
        let a = default_account_name("team-a", "db");
        assert!(a.starts_with("vsadmin-"));
        assert_eq!(a.len(), "vsadmin-".len() + 8);
        assert!(is_account_name(&a), "{a}");
        assert_ne!(a, default_account_name("team-a", "db2"));
        assert_ne!(a, default_account_name("team", "a-db"));
        assert_eq!(a, default_account_name("team-a", "db"));
    }

    #[test]
    fn secret_names() {
        assert_eq!(default_secret_name("db"), "db-svm-credentials");
        let fits = "a".repeat(237);
        assert_eq!(default_secret_name(&fits).len(), 253);
        assert!(!default_secret_name(&fits).contains(&identity_hash("", &fits)));
        let long = format!("{}.{}", "a".repeat(226), "b".repeat(26));
        let s = default_secret_name(&long);
        assert!(s.len() <= 253, "{}", s.len());
        assert!(is_dns_subdomain(&s), "{s}");
        assert!(s.ends_with("-svm-credentials"));
        // A cut that would end on `.` or `-` is trimmed.
        let dotted = format!("{}.{}", "a".repeat(227), "b".repeat(40));
        let s = default_secret_name(&dotted);
        assert!(is_dns_subdomain(&s), "{s}");
        assert!(!s.contains(".-"), "{s}");
    }

    /// A Kubernetes DNS label (namespace names).
    fn dns_label(max: usize) -> impl Strategy<Value = String> {
        proptest::string::string_regex(&format!("[a-z0-9]([-a-z0-9]{{0,{}}}[a-z0-9])?", max - 2))
            .unwrap()
    }

    /// A Kubernetes DNS subdomain (object names), lengths spread up to 253.
    fn dns_subdomain() -> impl Strategy<Value = String> {
        prop::collection::vec(dns_label(63), 1..5)
            .prop_map(|labels| labels.join("."))
            .prop_filter("at most 253 characters", |s| s.len() <= 253)
    }

    proptest! {
        #[test]
        fn defaults_obey_the_rules(ns in dns_label(63), name in dns_subdomain()) {
            let svm = default_svm_name(&ns, &name);
            prop_assert!(is_svm_name(&svm), "{}", svm);
            let account = default_account_name(&ns, &name);
            prop_assert!(is_account_name(&account), "{}", account);
            let secret = default_secret_name(&name);
            prop_assert!(is_dns_subdomain(&secret), "{}", secret);
            // Deterministic.
            prop_assert_eq!(svm, default_svm_name(&ns, &name));
            prop_assert_eq!(secret, default_secret_name(&name));
        }

        #[test]
        fn defaults_are_injective(
            objects in prop::collection::hash_set((dns_label(20), dns_subdomain()), 1..64)
        ) {
            let mut svms = HashMap::new();
            let mut secrets = HashMap::new();
            for (ns, name) in &objects {
                if let Some(other) = svms.insert(default_svm_name(ns, name), (ns, name)) {
                    prop_assert!(false, "{other:?} and {ns}/{name} share an SVM name");
                }
                // Secret names only need to be unique within a namespace.
                let previous = secrets.insert((ns, default_secret_name(name)), name);
                prop_assert!(previous.is_none_or(|p| p == name));
            }
        }

        #[test]
        fn readable_names_round_trip(ns in dns_label(20), name in dns_label(20)) {
            // Short Kubernetes names are kept as they are, so an admin can find the SVM.
            let svm = default_svm_name(&ns, &name);
            prop_assert_eq!(svm, format!("k8s_{ns}_{name}"));
        }
    }
}
