//! Which names an object may ask for: the default names themselves are the seed Secret
//! contract's (`crate::api::seed_secret`), the reservation they carry is this controller's.

use crate::api::seed_secret::{SVM_NAME_PREFIX, default_svm_name};

/// Whether `svm_name`, asked for by an `Owned` object `namespace/name`, has the form of another
/// namespace's default SVM names. The `k8s_` prefix marks default names, and a default name
/// belongs to its namespace: a tenant must not take one in advance from a namespace whose
/// objects will ask for it later. `k8s_<namespace>_…` of the object's own namespace is allowed.
pub fn reserved_for_another_namespace(svm_name: &str, namespace: &str, name: &str) -> bool {
    svm_name.starts_with(SVM_NAME_PREFIX)
        && svm_name != default_svm_name(namespace, name)
        && !svm_name.starts_with(&format!("{SVM_NAME_PREFIX}{namespace}_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_of_other_namespaces_are_reserved() {
        assert!(reserved_for_another_namespace(
            "k8s_team-b_db",
            "team-a",
            "x"
        ));
        assert!(reserved_for_another_namespace(
            &default_svm_name(&"n".repeat(60), "db"),
            "team-a",
            "db"
        ));
        assert!(!reserved_for_another_namespace(
            "k8s_team-a_db",
            "team-a",
            "x"
        ));
        assert!(!reserved_for_another_namespace(
            &default_svm_name(&"n".repeat(60), "db"),
            &"n".repeat(60),
            "db"
        ));
        assert!(!reserved_for_another_namespace("prod", "team-a", "x"));
        assert!(
            reserved_for_another_namespace("k8s_team_db", "team-a", "x"),
            "no namespace holds `_`, so none other than team's starts like that"
        );
    }
}
