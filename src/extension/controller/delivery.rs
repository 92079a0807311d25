//! The shoot delivery: the ManagedResources (and their Secrets) that install Trident in the
//! shoot, written once the credentials are verified, and removed on migrate and delete.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use reconcile_engine::{Outcome, StepError, StepFlow};
use serde_json::{Value, json};

use crate::extension::api::ShootView;
use crate::extension::api::{ManagedResource, mr_condition};
use crate::extension::config::{ExtensionConfig, Protocol};
use crate::extension::shoot::{
    INIT_MANAGED_RESOURCE, KEEP_OBJECTS_PATCH, MANAGED_RESOURCE_NAMES, ManagedResourceBundle,
    ORIGIN, SECRET_MANAGED_RESOURCE, ShootCredentials, ShootInputs, shoot_delivery,
};
use crate::ontap::trident_api::{NVME_TCP, OntapVersion, REST_SUPPORTED, TridentApi};

use super::plan::Plan;
use super::reasons::{
    ErrorCodeReason, Failed, Transient, Waiting, delete_ignoring_missing, kube_error,
};
use super::{CONTROLLER, ExtensionReconciler};

/// The label gardener puts on a ManagedResource of an extension, here with [`ORIGIN`].
pub(super) const ORIGIN_LABEL: &str = "origin";

impl ExtensionReconciler {
    /// Step `DeliveryApplied`: each ManagedResource's Secret, then the ManagedResource.
    pub(super) async fn apply_delivery(
        &self,
        namespace: &str,
        config: &ExtensionConfig,
        plan: &Plan,
        credentials: &ShootCredentials,
        shoot: &ShootView,
        repairs_only: bool,
    ) -> StepFlow<Outcome> {
        let Some(version) = self.ontap_version(plan) else {
            return Err(Waiting::OntapVersionUnknown
                .wait(format!(
                    "the OntapCluster {} has not reported ONTAP's version yet",
                    plan.cluster
                ))
                .into());
        };
        refuse_unusable(config, version)?;
        let node_cidrs = shoot.node_cidrs();
        if config.protocols.contains(&Protocol::Nfs) && node_cidrs.is_empty() {
            // Exporting to every address (Trident's default CIDRs) is not a fallback we take
            // unasked: the shoot's nodes are the only NFS clients.
            return Err(ErrorCodeReason::Shoot.invalid(
                "the shoot's Cluster names no node network (spec.networking.nodes): NFS volumes \
                 are exported to the nodes' network only",
            ).into());
        }
        let inputs = ShootInputs {
            config,
            svm_name: &plan.svm_name,
            secret_name: &plan.secret,
            credentials,
            images: &self.settings.images,
            trident_api: TridentApi::for_version(version),
            node_cidrs: &node_cidrs,
        };
        let bundles = shoot_delivery(namespace, &inputs, false)
            .map_err(|e| Transient::RenderFailed.error(e.to_string()))?;
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        let mrs: Api<ManagedResource> = Api::namespaced(self.kube.clone(), namespace);
        let mut changed = false;
        for bundle in bundles {
            // Unasked, only the credentials (healed by the SVM controller) and what is missing
            // are written; anything else that differs (a new operator's rendering, say) waits
            // for gardenlet's next reconcile. Present is what the cache says: one written a
            // moment ago and not cached yet is applied again, which writes nothing as desired.
            let name = bundle.managed_resource.name_any();
            if repairs_only
                && name != SECRET_MANAGED_RESOURCE
                && self
                    .managed_resources
                    .get(&ObjectRef::new(&name).within(namespace))
                    .is_some()
            {
                continue;
            }
            changed |= apply_bundle(&secrets, &mrs, &bundle).await?;
        }
        Ok(if changed {
            Outcome::changed()
        } else {
            Outcome::unchanged()
        })
    }

    /// The ONTAP version the plan's OntapCluster reported, if it did.
    fn ontap_version(&self, plan: &Plan) -> Option<OntapVersion> {
        let cluster = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster))?;
        cluster.status.as_ref()?.version.as_deref()?.parse().ok()
    }

    /// Step `DeliveryHealthy`: applied at their generation; all but the Trident operator's
    /// workloads healthy (those need the shoot's nodes; the condition reports them).
    pub(super) fn delivery_applied(&self, namespace: &str) -> StepFlow<Outcome> {
        let mut pending = Vec::new();
        for name in MANAGED_RESOURCE_NAMES {
            let mr = self
                .managed_resources
                .get(&ObjectRef::new(name).within(namespace));
            let check = match &mr {
                None => Err(format!("managed resource {name} not found")),
                Some(mr) if name == INIT_MANAGED_RESOURCE => applied(mr),
                Some(mr) => mr.check_healthy(),
            };
            if let Err(why) = check {
                pending.push(why);
            }
        }
        if pending.is_empty() {
            Ok(Outcome::unchanged())
        } else {
            Err(Waiting::DeliveryPending.wait(pending.join("; ")).into())
        }
    }

    /// Deletes the ManagedResources (first setting `keepObjects` when `keep`), waits until the
    /// resource manager released them when `wait`, then deletes their Secrets.
    pub(super) async fn remove_delivery(
        &self,
        namespace: &str,
        keep: bool,
        wait: bool,
    ) -> StepFlow<Outcome> {
        let mrs: Api<ManagedResource> = Api::namespaced(self.kube.clone(), namespace);
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        // In reverse: the CRDs go last, or the resource manager could no longer delete the
        // TridentOrchestrator whose kind they define.
        for name in MANAGED_RESOURCE_NAMES.iter().rev().copied() {
            let Some(mr) = mrs
                .get_opt(name)
                .await
                .map_err(kube_error(Failed::MrRead))?
            else {
                continue;
            };
            delete_managed_resource(&mrs, &mr, keep).await?;
            if wait {
                return Err(Waiting::DeliveryDeleting
                    .wait(format!(
                        "the resource manager is removing {name} from the shoot"
                    ))
                    .into());
            }
            for secret in &mr.spec.secret_refs {
                delete_ignoring_missing(&secrets, &secret.name).await?;
            }
        }
        // Gone: their Secrets may go now (and any left by an interrupted earlier pass).
        delete_delivery_secrets(&secrets).await?;
        Ok(Outcome::unchanged())
    }
}

/// What no Trident can use on a cluster of `version`: NVMe/TCP before ONTAP has it, and NVMe
/// where Trident must speak ZAPI, whose layer in Trident implements no NVMe operation (every one
/// answers "not supported"), so the backend would come up and never provision a volume.
fn refuse_unusable(config: &ExtensionConfig, version: OntapVersion) -> Result<(), StepError> {
    if !config.protocols.contains(&Protocol::Nvme) {
        return Ok(());
    }
    if version < NVME_TCP {
        return Err(ErrorCodeReason::Configuration.invalid(format!(
            "ONTAP {version} has no NVMe/TCP (it came with {NVME_TCP}): no Trident can use an \
             nvme backend on this cluster; choose iscsi or nfs"
        )));
    }
    if TridentApi::for_version(version) == TridentApi::Zapi {
        return Err(ErrorCodeReason::Configuration.invalid(format!(
            "on ONTAP {version} Trident speaks ZAPI (REST from {REST_SUPPORTED}), and its ZAPI \
             driver implements no NVMe operation: an nvme backend there could not create a \
             volume; choose iscsi or nfs, or upgrade ONTAP to {REST_SUPPORTED} or later"
        )));
    }
    Ok(())
}

/// Writes one ManagedResource (its Secret first) unless it is as desired; whether it wrote.
async fn apply_bundle(
    secrets: &Api<Secret>,
    mrs: &Api<ManagedResource>,
    bundle: &ManagedResourceBundle,
) -> Result<bool, StepError> {
    let name = bundle.managed_resource.name_any();
    let current = mrs
        .get_opt(&name)
        .await
        .map_err(kube_error(Failed::MrRead))?;
    let same = current.as_ref().is_some_and(|c| {
        c.spec == bundle.managed_resource.spec
            && c.labels().get(ORIGIN_LABEL).map(String::as_str) == Some(ORIGIN)
    });
    if same {
        return Ok(false);
    }
    match secrets.create(&PostParams::default(), &bundle.secret).await {
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        other => {
            other.map_err(kube_error(Failed::MrSecretWrite))?;
        }
    }
    let patch = json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {"name": name, "labels": bundle.managed_resource.metadata.labels},
        "spec": bundle.managed_resource.spec,
    });
    mrs.patch(
        &name,
        &PatchParams::apply(CONTROLLER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(kube_error(Failed::MrWrite))?;
    // The previous content's Secret; Gardener's garbage collector would remove it too.
    for old in current.iter().flat_map(|c| c.spec.secret_refs.iter()) {
        if !bundle.managed_resource.spec.secret_refs.contains(old) {
            delete_ignoring_missing(secrets, &old.name).await?;
        }
    }
    Ok(true)
}

/// Deletes `mr`, first setting `keepObjects` when `keep` (a migration leaves the shoot as it is).
async fn delete_managed_resource(
    mrs: &Api<ManagedResource>,
    mr: &ManagedResource,
    keep: bool,
) -> Result<(), StepError> {
    let name = mr.name_any();
    if keep && mr.spec.keep_objects != Some(true) {
        let patch: Value = serde_json::from_str(KEEP_OBJECTS_PATCH)
            .map_err(|e| Transient::PatchBuildFailed.error(e.to_string()))?;
        mrs.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(kube_error(Failed::MrPatch))?;
    }
    if mr.metadata.deletion_timestamp.is_none() {
        delete_ignoring_missing(mrs, &name).await?;
    }
    Ok(())
}

/// Deletes every Secret of the delivery's ManagedResources in the namespace.
async fn delete_delivery_secrets(secrets: &Api<Secret>) -> Result<(), StepError> {
    let list = secrets
        .list(&Default::default())
        .await
        .map_err(kube_error(Failed::SecretList))?;
    for secret in list {
        let name = secret.name_any();
        if MANAGED_RESOURCE_NAMES
            .iter()
            .any(|mr| name.starts_with(&format!("managedresource-{mr}-")))
        {
            delete_ignoring_missing(secrets, &name).await?;
        }
    }
    Ok(())
}

fn applied(mr: &ManagedResource) -> Result<(), String> {
    let status = mr.status.clone().unwrap_or_default();
    if status.observed_generation != mr.metadata.generation {
        return Err(format!(
            "managed resource {} is not observed at its generation yet",
            mr.name_any()
        ));
    }
    match status
        .conditions
        .iter()
        .find(|c| c.type_ == mr_condition::RESOURCES_APPLIED)
    {
        Some(c) if c.status == "True" => Ok(()),
        Some(c) => Err(format!(
            "managed resource {} is not applied: {}",
            mr.name_any(),
            c.message
        )),
        None => Err(format!(
            "managed resource {} is not applied yet",
            mr.name_any()
        )),
    }
}
