//! Who a StorageVirtualMachine is: its [`Standing`], which only an administrator or gardenlet
//! can give it, read from the [`AdoptionGrant`] and the labels of the object's namespace. Kept
//! apart from the Reconciler, so that what runs beside the passes reads it as they do.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::authority::Standing;
use crate::api::{
    GARDENER_PROJECT_ANNOTATION, GARDENER_SHOOT_UID_ANNOTATION, StorageVirtualMachine,
};
use reconcile_engine::SharedCache;

/// Where StorageVirtualMachines may take over what the operator did not create for them: none
/// until a feature that needs adoption grants it, once, before the controllers run. Only
/// namespaces tenants cannot write to, or cannot label, qualify: an adoption is vsadmin access.
#[derive(Clone, Debug, Default)]
pub struct AdoptionGrant(Arc<OnceLock<Adopters>>);

/// The namespaces an [`AdoptionGrant`] names.
#[derive(Clone, Debug)]
pub struct Adopters {
    /// May adopt SVMs and their accounts: the Gardener Extension's project namespace.
    pub project_namespace: String,
    /// Namespaces with this label (key, value) may adopt the accounts on the SVM their objects
    /// name (a shoot's account on its project's SVM, after a restore or a switch from
    /// metal-stack), never an SVM: gardenlet labels a seed's shoot namespaces, and a tenant
    /// cannot label a namespace with only namespaced roles.
    pub account_adopters: Option<(String, String)>,
}

impl AdoptionGrant {
    /// Grants adoption to `adopters`; a second grant is refused with the project namespace that
    /// holds it: adoption belongs to one feature.
    pub fn grant(&self, adopters: Adopters) -> Result<(), String> {
        self.0.set(adopters).map_err(|held| held.project_namespace)
    }

    /// The namespace granted adoption of SVMs, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.0.get().map(|a| a.project_namespace.as_str())
    }

    /// The standing of an object of `namespace` (with `labels`) that records the Gardener
    /// `project` it serves: what only an administrator or gardenlet can give it. The project
    /// namespace holds the extension's project objects; a namespace gardenlet labelled (tenants
    /// cannot label namespaces) holds a shoot's; everything else is a tenant's, whatever it
    /// records.
    ///
    /// An object a shoot's Extension controls is that shoot's, wherever it lives (a seed whose
    /// project namespace is also its shoots' namespace holds both kinds).
    pub fn standing(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        project: Option<&String>,
        shoot: Option<&String>,
        of_a_shoot: bool,
    ) -> Standing {
        let Some(adopters) = self.0.get() else {
            return Standing::Tenant;
        };
        let project = project.cloned();
        let in_project_namespace = adopters.project_namespace == namespace;
        let gardeners = in_project_namespace
            || adopters
                .account_adopters
                .as_ref()
                .is_some_and(|(key, value)| labels.get(key) == Some(value));
        match (gardeners, in_project_namespace && !of_a_shoot) {
            (false, _) => Standing::Tenant,
            (true, true) => Standing::Project { project },
            (true, false) => Standing::Shoot {
                project,
                shoot: shoot.cloned(),
            },
        }
    }
}

/// The standing of each object: the adoption grant, and the namespaces' labels as cached.
#[derive(Clone)]
pub struct Standings {
    adoption: AdoptionGrant,
    namespaces: SharedCache<Namespace>,
}

impl Standings {
    pub fn new(adoption: AdoptionGrant, namespaces: SharedCache<Namespace>) -> Self {
        Self {
            adoption,
            namespaces,
        }
    }

    /// The labels of `namespace` as cached (none while it is not).
    pub fn namespace_labels(&self, namespace: &str) -> BTreeMap<String, String> {
        self.namespaces
            .get(&ObjectRef::new(namespace))
            .map(|ns| ns.labels().clone())
            .unwrap_or_default()
    }

    /// `svm`'s [`Standing`].
    pub fn of(&self, svm: &StorageVirtualMachine) -> Standing {
        let namespace = svm.namespace().unwrap_or_default();
        let of_a_shoot = svm.owner_references().iter().any(|o| {
            o.controller == Some(true)
                && o.kind == "Extension"
                && o.api_version.starts_with("extensions.gardener.cloud/")
        });
        self.adoption.standing(
            &namespace,
            &self.namespace_labels(&namespace),
            svm.annotations().get(GARDENER_PROJECT_ANNOTATION),
            svm.annotations().get(GARDENER_SHOOT_UID_ANNOTATION),
            of_a_shoot,
        )
    }
}
