//! metal-stack's layout: one SVM per metal-stack project, one account per shoot on it. The
//! project's StorageVirtualMachine object lives in the project namespace, owned by no shoot and
//! bound to the Gardener project of the first shoot that named the metal-stack project; it makes
//! the LIFs in the form metal-stack's extension gave them, adopts the SVM that extension made
//! only when an administrator asks, and goes with the project's last shoot here (deleted or
//! migrated away) when its policy says so.

use std::collections::BTreeMap;

use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use ontap_client::OntapClient;
use reconcile_engine::{Outcome, StepError, StepFlow};
use serde_json::json;

use crate::api::{DeletionPolicy, StorageVirtualMachine, StorageVirtualMachineSpec, SvmMode};
use crate::extension::api::{Extension, GARDENER_PROJECT_ANNOTATION, METAL_PROJECT_ANNOTATION};
use crate::extension::config::{ConfigSource, ExtensionConfig, SvmSharing, parse_provider_config};
use crate::extension::naming;

use super::plan::Plan;
use super::reasons::{
    ErrorCodeReason, Failed, OntapRequest, Waiting, delete_ignoring_missing, ontap_failure,
    rejected,
};
use super::svm_object::svm_spec;
use super::{ExtensionReconciler, namespace_of};

impl ExtensionReconciler {
    /// Step `ProjectSvmDeclared`: the StorageVirtualMachine that provisions the SVM of the
    /// shoot's metal-stack project exists, created from the first shoot's configuration and
    /// owned by no shoot: it outlives each of them — with `Retain` (a TridentConfig: metal-stack
    /// keeps project SVMs) all of them, with `Delete` until the project's last shoot here goes
    /// ([`Self::release_project_svm`]) — and it shares the SVM with the namespaces of shoots
    /// that enabled this extension. On a seed where another seed's project object provisions the
    /// SVM, this one stands in for it (phase `ServedElsewhere`): it shares, and leaves ONTAP alone.
    /// It is bound to the Gardener project of the shoot that declared it, and serves no other.
    pub(super) async fn declare_project_svm(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
        object: &str,
    ) -> StepFlow<Outcome> {
        let namespace = &self.settings.project_namespace;
        match self.svm_object(namespace, object).await? {
            Some(existing) => self.keep_project_svm(plan, object, &existing).await,
            None => self.create_project_svm(config, plan, object).await,
        }
    }

    /// The project's object exists: later shoots of the project take the SVM as the first one
    /// declared it, if they belong to the Gardener project it is bound to.
    async fn keep_project_svm(
        &self,
        plan: &Plan,
        object: &str,
        existing: &StorageVirtualMachine,
    ) -> StepFlow<Outcome> {
        let namespace = &self.settings.project_namespace;
        self.check_binding(plan, existing)?;
        // Deleting, it keeps the SVM while accounts are on it, and shares it: possibly for
        // as long as shoots of the project run on other seeds. A shoot arriving meanwhile
        // joins it (its account then holds the SVM too) instead of waiting for it to go;
        // should it go first after all, it is declared anew on the next pass.
        if existing.metadata.deletion_timestamp.is_some() {
            return Ok(Outcome::unchanged());
        }
        let provisions = existing.spec.mode == SvmMode::Owned
            && existing.spec.svm_name.as_deref() == Some(plan.svm_name.as_str())
            && existing.spec.cluster_ref.name == plan.cluster;
        if !provisions {
            return Err(ErrorCodeReason::Configuration
                .invalid(format!(
                    "the StorageVirtualMachine {namespace}/{object} exists but does not provision the project's SVM {} on cluster {}",
                    plan.svm_name, plan.cluster
                ))
                .into());
        }
        Ok(Outcome::unchanged())
    }

    /// Whether `existing` is bound to the plan's Gardener project. Bound to another, the shoot
    /// is refused: the metal-stack project is the Shoot owner's annotation, and sharing the SVM
    /// would hand them a vsadmin account on another project's SVM. Bound to none (declared by
    /// hand, or before bindings were recorded), it is refused too: no shoot binds an object by
    /// coming first; an administrator records the project. The message names neither the other
    /// project nor its shoots.
    pub(super) fn check_binding(
        &self,
        plan: &Plan,
        existing: &StorageVirtualMachine,
    ) -> Result<(), StepError> {
        match existing.annotations().get(GARDENER_PROJECT_ANNOTATION) {
            Some(bound) if Some(bound) == plan.gardener_project.as_ref() => Ok(()),
            Some(_) => Err(ErrorCodeReason::Configuration.invalid(format!(
                "the metal-stack project's SVM {} belongs to another Gardener project: the Shoot annotation {METAL_PROJECT_ANNOTATION} must name a metal-stack project of this shoot's Gardener project",
                plan.svm_name
            ))),
            None => Err(ErrorCodeReason::Configuration.invalid(format!(
                "the StorageVirtualMachine {}/{} that provisions the metal-stack project's SVM {} records no Gardener project ({GARDENER_PROJECT_ANNOTATION}); a landscape administrator records the project it belongs to",
                self.settings.project_namespace,
                plan.project_object.as_deref().unwrap_or_default(),
                plan.svm_name
            ))),
        }
    }

    /// Creates the project's object, bound to the shoot's Gardener project. An SVM of that name
    /// that ONTAP holds already is not adopted: that the shoot's owner named its project is no
    /// proof that it is theirs. An administrator adopts it explicitly (the project object's
    /// [`crate::api::ADOPT_SVM_UUID_ANNOTATION`]); until then its controller refuses the name.
    async fn create_project_svm(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
        object: &str,
    ) -> StepFlow<Outcome> {
        let namespace = &self.settings.project_namespace;
        // Decided once, as the SVM is declared: peering a cluster with BGP later is an admin's
        // act, and LIFs changing form behind it would cut the data path of every shoot.
        let config = self.metal_stack_routing(config, plan).await?.into_value();
        let spec: StorageVirtualMachineSpec = serde_json::from_value(svm_spec(
            &config,
            plan,
            json!({
                // TridentConfig: Retain, as metal-stack keeps project SVMs.
                "deletionPolicy": config.deletion_policy,
                "shareWith": {"matchLabels": {
                    format!("extensions.gardener.cloud/{}", self.settings.extension_type): "true"
                }},
            }),
        ))
        .map_err(|e| ErrorCodeReason::Configuration.invalid(e.to_string()))?;
        let mut svm = StorageVirtualMachine::new(object, spec);
        svm.metadata.namespace = Some(namespace.clone());
        svm.metadata.annotations = plan
            .gardener_project
            .clone()
            .map(|project| BTreeMap::from([(GARDENER_PROJECT_ANNOTATION.to_string(), project)]));
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), namespace);
        match api.create(&PostParams::default(), &svm).await {
            Ok(_) => Ok(Outcome::changed()),
            // Another shoot declared it first: the next pass checks its binding.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Err(Waiting::SvmCreatedMeanwhile
                    .wait(format!(
                        "the StorageVirtualMachine {namespace}/{object} was declared meanwhile"
                    ))
                    .into())
            }
            Err(e) => Err(rejected(Failed::SvmCreate, e).into()),
        }
    }

    /// The ONTAP client of the plan's cluster; `None` while the OntapCluster is not cached (the
    /// `SvmReady` step reports a missing one).
    pub(super) async fn ontap(&self, plan: &Plan) -> StepFlow<Option<OntapClient>> {
        let Some(cluster) = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster)) else {
            return Ok(None);
        };
        self.connections.connect(&cluster).await.map(Some)
    }

    /// `config` with its LIFs in the form metal-stack's extension gives them on the plan's
    /// cluster (see [`ExtensionConfig::with_metal_stack_routing`]): one ONTAP GET for a
    /// TridentConfig, none for a configuration that states its LIFs. A TridentConfig waits for
    /// the OntapCluster rather than guess: a wrong guess replaces metal-stack's LIFs.
    async fn metal_stack_routing(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
    ) -> StepFlow<Outcome<ExtensionConfig>> {
        if config.source != ConfigSource::MetalStack {
            return Ok(Outcome::Unchanged(config.clone()));
        }
        let Some(client) = self.ontap(plan).await? else {
            return Err(Waiting::OntapClusterMissing
                .wait(format!(
                    "the OntapCluster {} is needed to learn whether it routes with BGP",
                    plan.cluster
                ))
                .into());
        };
        let bgp = match client.bgp_peer_groups().await {
            Ok(peer_groups) => !peer_groups.is_empty(),
            // A release before ONTAP 9.7 has no BGP and no such collection.
            Err(e) if e.is_not_found() => false,
            Err(e) => return Err(ontap_failure(OntapRequest::BgpLookup, e).into()),
        };
        Ok(Outcome::Unchanged(
            config.clone().with_metal_stack_routing(bgp),
        ))
    }

    /// Step `ProjectSvmReleased`: when the shoot shared its metal-stack project's SVM and no
    /// other shoot here still uses it, the project's object goes if its policy is `Delete`
    /// (`Retain`, metal-stack's way, keeps it for the project's next shoot). Not waited for: its
    /// controller deletes the SVM only once ONTAP holds no other account on it — shoots of the
    /// project that another seed serves keep theirs — and says so while it waits.
    pub(super) async fn release_project_svm(&self, ext: &Extension) -> StepFlow<Outcome> {
        let Ok(config) = parse_provider_config(
            ext.spec.provider_config.as_ref(),
            &self.settings.config_defaults,
        ) else {
            return Ok(Outcome::unchanged());
        };
        let project = self
            .shoot(ext)
            .filter(|_| config.sharing == SvmSharing::PerProject)
            .and_then(|shoot| shoot.metal_project().and_then(naming::project_object_name));
        let Some(object) = project else {
            return Ok(Outcome::unchanged());
        };
        let namespace = &self.settings.project_namespace;
        let Some(project) = self.svm_object(namespace, &object).await? else {
            return Ok(Outcome::unchanged());
        };
        // Only a shoot of the Gardener project it is bound to lets it go: a refused shoot (its
        // annotation naming another's project) must not take that project's SVM with it.
        let bound = project.annotations().get(GARDENER_PROJECT_ANNOTATION);
        let ours = self
            .shoot(ext)
            .is_some_and(|shoot| bound.map(String::as_str) == shoot.gardener_project());
        if !ours
            || self.project_svm_in_use(ext, &project)
            || project.spec.deletion_policy != DeletionPolicy::Delete
            || project.metadata.deletion_timestamp.is_some()
        {
            return Ok(Outcome::unchanged());
        }
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), namespace);
        delete_ignoring_missing(&api, &object).await?;
        Ok(Outcome::changed())
    }

    /// Whether another shoot's live object here has its account on `project`'s SVM.
    fn project_svm_in_use(&self, ext: &Extension, project: &StorageVirtualMachine) -> bool {
        let (own_namespace, own_name) = (namespace_of(ext), ext.name_any());
        self.svms.store().state().iter().any(|other| {
            other.spec.mode == SvmMode::AccountOnly
                && other.spec.cluster_ref == project.spec.cluster_ref
                && other.spec.svm_name == project.spec.svm_name
                && other.metadata.deletion_timestamp.is_none()
                && (other.namespace().as_deref(), other.name_any().as_str())
                    != (Some(own_namespace.as_str()), own_name.as_str())
        })
    }
}
