//! The StorageVirtualMachine object of a shoot: declared from its configuration, owned by its
//! Extension, and removed (retained or orphaned in ONTAP) when the Extension goes.

use std::collections::BTreeMap;

use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use reconcile_engine::{Outcome, StepError, StepFlow};
use serde_json::{Value, json};

use crate::api::{
    ADOPT_SVM_UUID_ANNOTATION, DeletionPolicy, GARDENER_PROJECT_ANNOTATION,
    GARDENER_SHOOT_UID_ANNOTATION, StorageVirtualMachine, StorageVirtualMachineSpec, SvmMode,
};
use crate::extension::api::Extension;
use crate::extension::config::{ExtensionConfig, Lif, LifPlacement, Protocol, SvmSharing};

use super::plan::Plan;
use super::reasons::{
    ErrorCodeReason, Failed, Transient, Waiting, delete_ignoring_missing, is_not_found, kube_error,
    rejected,
};
use super::{ExtensionReconciler, namespace_of};

/// The spec of an SVM object from the shoot's configuration: cluster, SVM name, aggregates,
/// protocols and LIFs, plus `extra` fields.
pub(super) fn svm_spec(config: &ExtensionConfig, plan: &Plan, extra: Value) -> Value {
    let lif = |l: &Lif, placement: Option<&LifPlacement>| {
        let mut lif = json!({"ip": l.ip.to_string(), "prefixLength": l.prefix_length});
        if l.vip {
            lif["vip"] = json!(true);
        }
        if let Some(protocol) = l.protocol {
            lif["protocols"] = json!([protocol]);
        }
        let placement = placement.cloned().unwrap_or_default();
        for (field, value) in [
            ("homeNode", placement.home_node),
            ("homePort", placement.home_port),
            ("broadcastDomain", placement.broadcast_domain),
            ("servicePolicy", placement.service_policy),
        ] {
            if let Some(value) = value {
                lif[field] = json!(value);
            }
        }
        lif
    };
    let placement = |i: usize| config.lif_placements.get(i);
    let mut spec = json!({
        "clusterRef": {"name": plan.cluster},
        "svmName": plan.svm_name,
        "aggregates": config.aggregates,
        "protocols": {
            "nvme": config.protocols.contains(&Protocol::Nvme),
            "iscsi": config.protocols.contains(&Protocol::Iscsi),
            "nfs": config.protocols.contains(&Protocol::Nfs),
        },
        "managementLif": lif(&config.management_lif, placement(0)),
        "dataLifs": config
            .data_lifs
            .iter()
            .enumerate()
            .map(|(i, l)| lif(l, placement(i + 1)))
            .collect::<Vec<_>>(),
    });
    if let Some(routes) = &config.routes {
        spec["routes"] = json!(routes);
    }
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    spec
}

/// Sets (a uuid) or removes (`null`) the object `name`'s request to adopt an SVM by uuid.
pub(super) async fn set_adoption(
    api: &Api<StorageVirtualMachine>,
    name: &str,
    uuid: Value,
) -> StepFlow<Outcome> {
    let patch = json!({"metadata": {"annotations": {ADOPT_SVM_UUID_ANNOTATION: uuid}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(kube_error(Failed::SvmPatch))?;
    Ok(Outcome::changed())
}

/// Whether `ext` controls `svm`: only its own object is changed or deleted.
fn owned_by_extension(svm: &StorageVirtualMachine, ext: &Extension) -> bool {
    svm.owner_references()
        .iter()
        .any(|o| Some(&o.uid) == ext.uid().as_ref())
}

impl ExtensionReconciler {
    /// The shoot's StorageVirtualMachine as its configuration makes it, owned by the Extension;
    /// `adopt`: the uuid of an SVM in ONTAP it takes over.
    pub(super) fn desired_svm(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        adopt: Option<&str>,
    ) -> Result<StorageVirtualMachine, StepError> {
        // A shoot sharing its project's SVM makes only its account on it: deleting the shoot
        // deletes the account, never the SVM. The configuration's policy is the project
        // object's (a TridentConfig retains the project's SVM); the account is the shoot's
        // alone, and one left behind would be a working vsadmin login nobody holds any more.
        let (mode, deletion_policy) = match config.sharing {
            SvmSharing::PerProject => (SvmMode::AccountOnly, DeletionPolicy::Delete),
            SvmSharing::PerShoot => (SvmMode::Owned, config.deletion_policy),
        };
        let mut extra = json!({
            "mode": mode,
            "account": {"name": plan.account, "rotationPeriod": config.credential_rotation_period},
            "secretName": plan.secret,
            "deletionPolicy": deletion_policy,
        });
        if let Some(role) = config.account_role {
            extra["account"]["role"] = json!(role);
        }
        // The project's SVM is the project object's, named: never whichever object provisions
        // an SVM of that name first.
        if let (SvmMode::Owned, Some(limits)) = (mode, &config.limits) {
            extra["limits"] = json!(limits);
        }
        if let (SvmMode::AccountOnly, Some(project_object)) = (mode, &plan.project_object) {
            extra["provider"] = json!({
                "namespace": self.settings.project_namespace,
                "name": project_object,
            });
        }
        let spec: StorageVirtualMachineSpec = serde_json::from_value(svm_spec(config, plan, extra))
            .map_err(|e| ErrorCodeReason::Configuration.invalid(e.to_string()))?;
        let owner = ext
            .controller_owner_ref(&())
            .ok_or_else(|| Transient::ExtensionUnstored.error("the Extension has no uid yet"))?;
        let mut svm = StorageVirtualMachine::new(&plan.object, spec);
        svm.metadata.namespace = Some(namespace_of(ext));
        svm.metadata.owner_references = Some(vec![owner]);
        // The Gardener project, which the shoot's owner cannot choose, goes into ONTAP's mark:
        // what lets the same shoot on another seed, and only its project, take its SVM back.
        let mut annotations = BTreeMap::new();
        if let Some(project) = &plan.gardener_project {
            annotations.insert(GARDENER_PROJECT_ANNOTATION.to_string(), project.clone());
        }
        if let Some(shoot) = &plan.shoot_uid {
            annotations.insert(GARDENER_SHOOT_UID_ANNOTATION.to_string(), shoot.clone());
        }
        if let Some(uuid) = adopt {
            annotations.insert(ADOPT_SVM_UUID_ANNOTATION.to_string(), uuid.to_string());
        }
        svm.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
        Ok(svm)
    }

    /// Step `SvmDeclared`: the StorageVirtualMachine object exists with the desired spec.
    /// `repairs_only` (a pass gardenlet did not ask for): a missing object is created, an
    /// existing one is left as it is until gardenlet's next reconcile.
    pub(super) async fn declare_svm(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        adopt: Option<&str>,
        repairs_only: bool,
    ) -> StepFlow<Outcome<StorageVirtualMachine>> {
        let desired = self.desired_svm(ext, config, plan, adopt)?;
        let namespace = namespace_of(ext);
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), &namespace);
        let current = self.svm_object(&namespace, &plan.object).await?;
        let Some(current) = current else {
            let created = api
                .create(&PostParams::default(), &desired)
                .await
                .map_err(|e| rejected(Failed::SvmCreate, e))?;
            return Ok(Outcome::Changed(created));
        };
        if !owned_by_extension(&current, ext) {
            return Err(ErrorCodeReason::Configuration
                .invalid(format!(
                    "the StorageVirtualMachine {namespace}/{} exists and is not this Extension's",
                    plan.object
                ))
                .into());
        }
        let identity = |svm: &StorageVirtualMachine| {
            [GARDENER_PROJECT_ANNOTATION, GARDENER_SHOOT_UID_ANNOTATION]
                .map(|key| svm.annotations().get(key).cloned())
        };
        if identity(&current) != identity(&desired) {
            // Recorded by this operator alone; not a change gardenlet has to ask for.
            let [project, shoot] = identity(&desired);
            let patched = api
                .patch(
                    &plan.object,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {
                        GARDENER_PROJECT_ANNOTATION: project,
                        GARDENER_SHOOT_UID_ANNOTATION: shoot,
                    }}})),
                )
                .await
                .map_err(|e| rejected(Failed::SvmPatch, e))?;
            return Ok(Outcome::Changed(patched));
        }
        if current.spec == desired.spec {
            return Ok(Outcome::Unchanged(current));
        }
        if repairs_only {
            tracing::info!(
                svm = %plan.object,
                "the StorageVirtualMachine differs from the configuration; it is changed on gardenlet's next reconcile"
            );
            return Ok(Outcome::Unchanged(current));
        }
        let patched = api
            .patch(
                &plan.object,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": desired.spec})),
            )
            .await
            .map_err(|e| rejected(Failed::SvmPatch, e))?;
        Ok(Outcome::Changed(patched))
    }

    /// The StorageVirtualMachine `namespace/name`: from the cache, else (just created, not
    /// cached yet) from the API server.
    pub(super) async fn svm_object(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<StorageVirtualMachine>, StepError> {
        if let Some(cached) = self.svms.get(&ObjectRef::new(name).within(namespace)) {
            return Ok(Some((*cached).clone()));
        }
        Api::<StorageVirtualMachine>::namespaced(self.kube.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(kube_error(Failed::SvmRead))
    }

    /// Deletes the StorageVirtualMachine object. `retain` first sets `deletionPolicy: Retain`
    /// (a migration: ONTAP must stay as it is); `orphan` removes its finalizer instead of waiting
    /// for ONTAP (force-deletion).
    pub(super) async fn remove_svm(
        &self,
        ext: &Extension,
        retain: bool,
        orphan: bool,
    ) -> StepFlow<Outcome> {
        let namespace = namespace_of(ext);
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), &namespace);
        let name = ext.name_any();
        let Some(svm) = api
            .get_opt(&name)
            .await
            .map_err(kube_error(Failed::SvmRead))?
        else {
            return Ok(Outcome::unchanged());
        };
        if !owned_by_extension(&svm, ext) {
            return Ok(Outcome::unchanged());
        }
        if retain && svm.spec.deletion_policy != DeletionPolicy::Retain {
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"deletionPolicy": "Retain"}})),
            )
            .await
            .map_err(kube_error(Failed::SvmPatch))?;
        }
        if svm.metadata.deletion_timestamp.is_none() {
            delete_ignoring_missing(&api, &name).await?;
        }
        if orphan {
            return orphan_svm(&api, &name).await;
        }
        Err(Waiting::SvmDeleting
            .wait(format!("the StorageVirtualMachine {name} is being deleted"))
            .into())
    }
}

/// Force-deletion: the object's finalizer goes without its controller, leaving ONTAP as it is.
async fn orphan_svm(api: &Api<StorageVirtualMachine>, name: &str) -> StepFlow<Outcome> {
    match api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
    {
        Err(e) if !is_not_found(&e) => Err(kube_error(Failed::SvmFinalizerRemove)(e).into()),
        _ => Ok(Outcome::changed()),
    }
}
