//! Which names an object may ask for, and [`Names`], the names an object's ONTAP and Kubernetes
//! objects go by, defaults or not: the default names themselves are the seed Secret contract's
//! (`crate::api::seed_secret`), the reservation they carry is this controller's.

use super::authority::{Actor, Standing};
use crate::api::seed_secret::{
    SVM_NAME_PREFIX, default_account_name, default_svm_name, seed_secret_name,
};
use kube::ResourceExt;

use crate::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine, StorageVirtualMachineStatus};

/// Whether `svm_name`, asked for by an `Owned` object `namespace/name`, has the form of another
/// namespace's default SVM names. The `k8s_` prefix marks default names, and a default name
/// belongs to its namespace: a tenant must not take one in advance from a namespace whose
/// objects will ask for it later. `k8s_<namespace>_…` of the object's own namespace is allowed.
pub fn reserved_for_another_namespace(svm_name: &str, namespace: &str, name: &str) -> bool {
    svm_name.starts_with(SVM_NAME_PREFIX)
        && svm_name != default_svm_name(namespace, name)
        && !svm_name.starts_with(&format!("{SVM_NAME_PREFIX}{namespace}_"))
}

/// The names this object's ONTAP and Kubernetes objects go by.
pub(super) struct Names {
    pub(super) svm: String,
    pub(super) account: String,
    pub(super) secret: String,
    pub(super) namespace: String,
    pub(super) uid: String,
    /// The uuid of the SVM it asks to take over ([`crate::api::ADOPT_SVM_UUID_ANNOTATION`]).
    pub(super) adopt: Option<String>,
}

impl Names {
    /// The object as [`super::authority`]'s decisions see it, of `standing`.
    pub(super) fn actor<'a>(&'a self, standing: &'a Standing) -> Actor<'a> {
        Actor {
            uid: &self.uid,
            namespace: &self.namespace,
            standing,
            svm_name: &self.svm,
        }
    }
}

/// The names `svm`'s ONTAP and Kubernetes objects go by, given its `status`.
pub(super) fn names_of(svm: &StorageVirtualMachine, status: &StorageVirtualMachineStatus) -> Names {
    let namespace = svm.namespace().unwrap_or_default();
    let name = svm.name_any();
    Names {
        // Once provisioned under a name, the SVM keeps it: the status remembers it.
        svm: svm
            .spec
            .svm_name
            .clone()
            .or_else(|| status.svm_name.clone())
            .unwrap_or_else(|| default_svm_name(&namespace, &name)),
        account: svm
            .spec
            .account
            .as_ref()
            .and_then(|a| a.name.clone())
            .unwrap_or_else(|| default_account_name(&namespace, &name)),
        secret: seed_secret_name(svm),
        uid: svm.uid().unwrap_or_default(),
        adopt: svm.annotations().get(ADOPT_SVM_UUID_ANNOTATION).cloned(),
        namespace,
    }
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
