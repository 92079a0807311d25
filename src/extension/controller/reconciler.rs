//! The controller's registration and its [`Reconciler`]: which Extensions it admits, and which
//! operation a pass runs.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

use super::delivery::ORIGIN_LABEL;
use super::reasons::{Failed, kube_error};
use super::report::PassReport;
use super::shoot_health::HealthRechecks;
use super::{CONTROLLER, ExtensionReconciler, ExtensionStep, namespace_of};
use crate::api::seed_secret::{seed_secret_selector, without_data};
use crate::api::{OntapCluster, StorageVirtualMachine};
use crate::extension::api::{
    Cluster, Extension, ExtensionStatus, LastOperationType, ManagedResource, ShootView,
};
use crate::extension::config::ConfigDefaults;
use crate::extension::filter::{self, AnnotationAction, REMOVE_OPERATION_ANNOTATION_PATCH};
use crate::extension::shoot::{ORIGIN, ShootImages};
use crate::extension::shoot_access::ShootClients;
use crate::extension::status::{compute_operation, should_skip_operation};
use crate::extension::{EXTENSION_TYPE, FINALIZER};
use crate::ontap::connections::ClusterConnections;
use crate::ontap::svm::{SeedSecretPrefill, VerifyRequests};
use reconcile_engine::manager::resource_rule;
use reconcile_engine::{
    Halt, Manager, ManagerError, Outcome, Reconciler, Registration, SharedCache, StepFlow,
    StepRunner,
};

/// What the flags decide for every Extension.
#[derive(Clone, Debug)]
pub struct ExtensionSettings {
    /// `spec.type` served (`--extension-type`).
    pub extension_type: String,
    /// The OntapCluster for a providerConfig that names none; `None`: the only one there is.
    pub default_cluster: Option<String>,
    /// From the image vector with the landscape's overwrite, read at startup.
    pub images: ShootImages,
    pub config_defaults: ConfigDefaults,
    /// Where the objects that provision per-project SVMs live (`--extension-project-namespace`).
    pub project_namespace: String,
    /// How soon an Extension whose backends Trident has not reported healthy is looked at again
    /// (`--extension-health-period`): nothing signals a change of their status in the shoot.
    pub health_recheck: Duration,
}

impl ExtensionSettings {
    /// The settings with `images` and every flag at its default.
    pub fn new(images: ShootImages) -> Self {
        Self {
            extension_type: EXTENSION_TYPE.to_string(),
            default_cluster: None,
            images,
            config_defaults: ConfigDefaults::default(),
            project_namespace: crate::deploy::NAMESPACE.to_owned(),
            // Gardener's health-check library's default period.
            health_recheck: Duration::from_secs(30),
        }
    }
}

/// Registers the Extension controller. Call only when the extension is enabled: it caches
/// Extensions, Clusters and ManagedResources, which exist only in a Gardener seed. It reads
/// the seed Secrets through the one Secret cache, restricted to the seed Secrets' selector as
/// the StorageVirtualMachine controller asks for it: whichever registers first creates it, the
/// other shares it.
pub fn register(
    manager: &mut Manager,
    connections: ClusterConnections,
    verify: VerifyRequests,
    prefill: SeedSecretPrefill,
    settings: ExtensionSettings,
) -> Result<(), ManagerError> {
    let managed_resources = manager.cache_with::<ManagedResource>(
        watcher::Config::default().labels(&format!("{ORIGIN_LABEL}={ORIGIN}")),
    )?;
    let (rechecks, rechecks_due) = HealthRechecks::new(settings.health_recheck);
    let reconciler = ExtensionReconciler {
        kube: manager.client().clone(),
        clusters: manager.cache::<Cluster>()?,
        ontap_clusters: manager.cache::<OntapCluster>()?,
        svms: manager.cache::<StorageVirtualMachine>()?,
        secrets: {
            let secrets = manager
                .cache_with::<Secret>(watcher::Config::default().labels(&seed_secret_selector()))?;
            // Cached by their metadata: the data is read by name where it is needed.
            secrets.trim_objects(without_data);
            secrets
        },
        managed_resources,
        connections,
        verify,
        prefill,
        shoot_clients: ShootClients::default(),
        rechecks,
        settings,
    };
    let write = |verbs: &[&str]| verbs.iter().map(|v| (*v).to_string()).collect::<Vec<_>>();
    manager.register(
        Registration::new(CONTROLLER, reconciler)
            .owns::<StorageVirtualMachine>(
                watcher::Config::default(),
                &["create", "patch", "delete"],
            )
            .watches::<ManagedResource>(same_namespace)
            .watches::<Secret>(same_namespace)
            .watches::<Cluster>(|cluster, extensions| in_namespace(&cluster.name_any(), extensions))
            .triggers(rechecks_due)
            .rule(resource_rule(
                "resources.gardener.cloud",
                "managedresources",
                &write(&["create", "patch", "delete"]),
            ))
            // The ManagedResources' Secrets and the migration's state Secret; the seed Secrets
            // it reads by name.
            .rule(resource_rule(
                "",
                "secrets",
                &write(&["get", "create", "patch", "delete"]),
            )),
    )
}

fn same_namespace<K: Resource>(
    changed: &K,
    extensions: &SharedCache<Extension>,
) -> Vec<ObjectRef<Extension>> {
    changed
        .meta()
        .namespace
        .as_deref()
        .map(|ns| in_namespace(ns, extensions))
        .unwrap_or_default()
}

fn in_namespace(namespace: &str, extensions: &SharedCache<Extension>) -> Vec<ObjectRef<Extension>> {
    extensions
        .store()
        .state()
        .iter()
        .filter(|e| e.namespace().as_deref() == Some(namespace))
        .map(|e| ObjectRef::from_obj(&**e))
        .collect()
}

impl Reconciler for ExtensionReconciler {
    type Resource = Extension;
    type Step = ExtensionStep;
    const FINALIZER: Option<&'static str> = Some(FINALIZER);
    const MANAGES_STATUS: bool = false;

    fn admits(&self, ext: &Extension) -> bool {
        let class_shoot = ext.spec.class.as_deref().is_none_or(|c| c == "shoot");
        ext.spec.type_ == self.settings.extension_type
            && class_shoot
            && filter::annotation_action(ext) != AnnotationAction::Skip
            && !should_skip_operation(ext, compute_operation(ext))
            && !self.shoot(ext).is_some_and(|s| s.is_failed())
    }

    async fn reconcile(
        &self,
        ext: &Extension,
        _status: &mut ExtensionStatus,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let op = compute_operation(ext);
        let mut report = PassReport {
            op,
            operation: filter::admits_create(ext) || new_generation(ext),
            hibernated: self.shoot(ext).is_some_and(|s| s.hibernation_enabled()),
            cluster: None,
        };
        steps
            .step(ExtensionStep::OperationAccepted, || {
                self.accept_operation(ext)
            })
            .await?;
        let result = match op {
            LastOperationType::Migrate => self.migrate(ext, steps).await,
            _ => self.provision(ext, op, &mut report, steps).await,
        };
        self.report(ext, &report, steps).await;
        result?;
        // A migration's finalizers went in its last step, before `Succeeded`; the annotation
        // goes after it (best effort: left, the operation runs again and succeeds again).
        if matches!(op, LastOperationType::Migrate | LastOperationType::Restore) {
            self.finish(ext, REMOVE_OPERATION_ANNOTATION_PATCH).await;
        }
        Ok(())
    }

    fn forget(&self, ext: &Extension) {
        self.shoot_clients.forget(&namespace_of(ext));
    }

    async fn cleanup(
        &self,
        ext: &Extension,
        _status: &mut ExtensionStatus,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let report = PassReport {
            op: LastOperationType::Delete,
            operation: true,
            hibernated: false,
            cluster: None,
        };
        let force = self.shoot(ext).is_some_and(|s| s.needs_force_deletion());
        let result = self.delete(ext, force, steps).await;
        self.report(ext, &report, steps).await;
        result
    }
}

/// The spec changed since the last operation: gardenlet's updates carry the operation
/// annotation, but a change of the generation asks for an operation by itself too.
fn new_generation(ext: &Extension) -> bool {
    let observed = ext.status.as_ref().and_then(|s| s.observed_generation);
    observed.is_some() && observed != ext.metadata.generation
}

impl ExtensionReconciler {
    pub(super) fn shoot(&self, ext: &Extension) -> Option<ShootView> {
        let cluster = self.clusters.get(&ObjectRef::new(&namespace_of(ext)))?;
        cluster.shoot().ok()
    }

    /// Step `OperationAccepted`: a `reconcile` request is removed before it is acted on.
    async fn accept_operation(&self, ext: &Extension) -> StepFlow<Outcome> {
        if filter::annotation_action(ext) != AnnotationAction::RemoveThenReconcile {
            return Ok(Outcome::unchanged());
        }
        self.patch_extension(ext, REMOVE_OPERATION_ANNOTATION_PATCH)
            .await
            .map_err(kube_error(Failed::AnnotationRemove))?;
        Ok(Outcome::changed())
    }

    pub(super) async fn patch_extension(
        &self,
        ext: &Extension,
        patch: &str,
    ) -> Result<(), kube::Error> {
        let patch: Value = serde_json::from_str(patch).map_err(kube::Error::SerdeError)?;
        Api::<Extension>::namespaced(self.kube.clone(), &namespace_of(ext))
            .patch(
                &ext.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(|_| ())
    }

    /// A metadata write after a successful operation; a failure leaves the annotation, so the
    /// operation runs again (and succeeds again).
    async fn finish(&self, ext: &Extension, patch: &str) {
        if let Err(error) = self.patch_extension(ext, patch).await {
            tracing::warn!(%error, "finishing the Extension's operation failed");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ontap::cluster::ClusterProbes;
    use crate::ontap::connections::ClientSettings;
    use reconcile_engine::Identity;
    use reconcile_engine::feature::Offline;

    /// A spec newer than the last operation asks for one; an Extension never operated on, or
    /// at its observed generation, does not by its generation.
    #[test]
    fn a_new_generation_asks_for_an_operation() {
        let ext = |generation: i64, observed: Option<i64>| -> Extension {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Extension",
                "metadata": {"name": "ontap", "namespace": "shoot--p--s", "generation": generation},
                "spec": {"type": "ontap"},
                "status": {"observedGeneration": observed},
            }))
            .unwrap()
        };
        assert!(new_generation(&ext(3, Some(2))));
        assert!(!new_generation(&ext(2, Some(2))));
        assert!(!new_generation(&ext(1, None)));
    }

    /// The Extension and the ONTAP feature's StorageVirtualMachine controller share the seed
    /// Secrets' cache whichever registers first: the manager refuses a second cache of one kind
    /// with other selectors.
    #[test]
    fn registers_before_or_after_the_svm_controller() {
        let offline = Offline::new(Identity::new("test"));
        for extension_first in [true, false] {
            let declared = offline.read(None, |manager, client| {
                let prefill = SeedSecretPrefill::new(client.clone());
                let connections = ClusterConnections::new(client, ClientSettings::default());
                let verify = VerifyRequests::default();
                let svm = |manager: &mut Manager| {
                    crate::ontap::register(
                        manager,
                        connections.clone(),
                        ClusterProbes::new(Default::default()),
                        watcher::Config::default(),
                    )
                    .map(|_| ())
                };
                let extension = |manager: &mut Manager| {
                    register(
                        manager,
                        connections.clone(),
                        verify.clone(),
                        prefill.clone(),
                        ExtensionSettings::new(ShootImages::embedded().unwrap()),
                    )
                };
                if extension_first {
                    extension(manager)?;
                    svm(manager)
                } else {
                    svm(manager)?;
                    extension(manager)
                }
            });
            assert!(declared.is_ok(), "extension first: {extension_first}");
        }
    }
}
