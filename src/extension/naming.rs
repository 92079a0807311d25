//! Names as metal-stack's `gardener-extension-ontap` derives them, so an installation can switch
//! to this operator without re-provisioning: the same SVM, the same ONTAP account, the same
//! Secret names and the same objects in the shoot.
//!
//! metal-stack's layout: one SVM per metal-stack project, `p<project uuid without dashes>`,
//! shared by the project's shoots; one ONTAP account per shoot, named after the shoot; its
//! credentials in `<svm>-<gardenproject>--<shoot>-credentials`.

use crate::api::rules::{ACCOUNT_NAME_LEN, RESERVED_ACCOUNTS, is_ontap_name};

/// Prefixes of a shoot's control-plane namespace: `shoot--<project>--<shoot>`, and the legacy
/// `shoot-<project>--<shoot>`.
const SHOOT_NAMESPACE_PREFIXES: [&str; 2] = ["shoot--", "shoot-"];

/// metal-stack truncates account names to this length.
const METAL_STACK_ACCOUNT_NAME_MAX: usize = 25;

/// Whether `id` has the form of a metal-stack project id: a UUID in lowercase hex, 8-4-4-4-12.
/// Its SVM then has the shape [`crate::api::is_metal_stack_svm_name`] asks.
pub fn is_metal_project_id(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, len)| {
            g.len() == len
                && g.chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        })
}

/// The per-project SVM of a metal-stack project: `p` and the project id without dashes.
pub fn project_svm_name(metal_project: &str) -> String {
    format!("p{}", metal_project.replace('-', ""))
}

/// The StorageVirtualMachine object that provisions a metal-stack project's SVM:
/// `ontap-project-<project id>`, or `None` when the id cannot be part of an object name.
pub fn project_object_name(metal_project: &str) -> Option<String> {
    let id = metal_project.to_ascii_lowercase();
    let valid = !id.is_empty()
        && id.len() <= 200
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !id.ends_with('-');
    valid.then(|| format!("ontap-project-{id}"))
}

/// `<project>--<shoot>` of a shoot namespace, or `None` for a namespace that is not one.
pub fn shoot_identity(namespace: &str) -> Option<&str> {
    SHOOT_NAMESPACE_PREFIXES
        .iter()
        .find_map(|p| namespace.strip_prefix(p))
        .filter(|rest| rest.contains("--"))
}

/// The shoot's name, the part after the last `--` of its namespace.
pub fn shoot_name(namespace: &str) -> Option<&str> {
    shoot_identity(namespace)
        .and_then(|rest| rest.rsplit_once("--"))
        .map(|(_, shoot)| shoot)
        .filter(|s| !s.is_empty())
}

/// The ONTAP account of a shoot: metal-stack's (the shoot name cut to 25 characters, a leading
/// `-` replaced by `s`), and, where ONTAP would refuse that (too short, not starting with a
/// letter or `_`, one of ONTAP's built-in accounts), `s-` put in front.
pub fn account_name(namespace: &str) -> Option<String> {
    let shoot = shoot_name(namespace)?;
    let mut name: String = shoot.chars().take(METAL_STACK_ACCOUNT_NAME_MAX).collect();
    if name.starts_with('-') {
        name.replace_range(..1, "s");
    }
    let refused = !is_ontap_name(&name)
        || name.len() < *ACCOUNT_NAME_LEN.start()
        || RESERVED_ACCOUNTS.contains(&name.to_ascii_lowercase().as_str());
    if refused {
        name = format!("s-{name}");
    }
    Some(name)
}

/// Where metal-stack's extension keeps a shoot's credentials Secret in the seed (named by
/// [`credentials_secret_name`]); read once when an installation switches, to keep the password.
pub const METAL_STACK_SECRET_NAMESPACE: &str = "kube-system";

/// The credentials Secret of a shoot's account, in the seed and in the shoot:
/// `<svm>-<project>--<shoot>-credentials`.
pub fn credentials_secret_name(svm: &str, namespace: &str) -> Option<String> {
    shoot_identity(namespace).map(|identity| format!("{svm}-{identity}-credentials"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metal_stack_names() {
        let svm = project_svm_name("0b1f9c3e-aaaa-bbbb-cccc-123456789abc");
        assert_eq!(svm, "p0b1f9c3eaaaabbbbcccc123456789abc");
        assert_eq!(
            account_name("shoot--prod--db"),
            Some("s-db".into()),
            "ONTAP needs 3 characters"
        );
        assert_eq!(account_name("shoot--prod--web-a"), Some("web-a".into()));
        assert_eq!(
            account_name("shoot--prod--a-very-long-shoot-name-indeed"),
            Some("a-very-long-shoot-name-in".into())
        );
        assert_eq!(account_name("shoot--prod--admin"), Some("s-admin".into()));
        assert_eq!(account_name("shoot--prod--1st"), Some("s-1st".into()));
        assert_eq!(
            credentials_secret_name(&svm, "shoot--prod--web-a"),
            Some("p0b1f9c3eaaaabbbbcccc123456789abc-prod--web-a-credentials".into())
        );
    }

    #[test]
    fn metal_stack_project_ids_are_uuids() {
        let id = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";
        assert!(is_metal_project_id(id));
        assert!(crate::api::is_metal_stack_svm_name(&project_svm_name(id)));
        for other in [
            "ayroll",
            "0B1F9C3E-AAAA-BBBB-CCCC-123456789ABC",
            "0b1f9c3eaaaabbbbcccc123456789abc",
            "0b1f9c3e-aaaa-bbbb-cccc-123456789abc-",
        ] {
            assert!(!is_metal_project_id(other), "{other}");
        }
    }

    #[test]
    fn legacy_and_foreign_namespaces() {
        assert_eq!(
            shoot_name("shoot-prod--web"),
            Some("web"),
            "legacy shoot-<project>--<name>"
        );
        assert_eq!(shoot_identity("shoot-prod--web"), Some("prod--web"));
        assert_eq!(shoot_name("garden"), None);
        assert_eq!(shoot_name("shoot--prod"), None);
        assert_eq!(account_name("kube-system"), None);
        assert_eq!(credentials_secret_name("p1", "default"), None);
    }
}
