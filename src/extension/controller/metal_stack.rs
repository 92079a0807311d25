//! metal-stack's layout: one SVM per metal-stack project, one account per shoot on it. The
//! project's StorageVirtualMachine object lives in the project namespace, owned by no shoot; it
//! adopts the SVM metal-stack's extension made, with the LIFs in the form that extension gave
//! them, and goes with the project's last shoot here when its policy says so.

use std::collections::BTreeMap;

use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use ontap_client::OntapClient;
use reconcile_engine::flow::settle;
use reconcile_engine::{Outcome, StepError, StepFlow};
use serde_json::json;

use crate::api::{
    ADOPT_SVM_UUID_ANNOTATION, DeletionPolicy, StorageVirtualMachine, StorageVirtualMachineSpec,
    SvmMode,
};
use crate::extension::api::Extension;
use crate::extension::config::{ConfigSource, ExtensionConfig, SvmSharing, parse_provider_config};
use crate::extension::naming;
use crate::ontap::connections::ConnectError;
use crate::ontap::svm::{Ownership, owned_by};

use super::plan::Plan;
use super::reasons::{
    Coded, Failed, OntapRequest, Waiting, delete_ignoring_missing, ontap_failure, rejected,
};
use super::svm_object::{set_adoption, svm_spec};
use super::{ExtensionReconciler, namespace_of};

impl ExtensionReconciler {
    /// Step `ProjectSvmDeclared`: the StorageVirtualMachine that provisions the SVM of the
    /// shoot's metal-stack project exists, created from the first shoot's configuration and
    /// owned by no shoot: it outlives each of them — with `Retain` (a TridentConfig: metal-stack
    /// keeps project SVMs) all of them, with `Delete` until the project's last shoot here goes
    /// ([`Self::release_project_svm`]) — and it shares the SVM with the namespaces of shoots
    /// that enabled this extension. On a seed where another seed's project object provisions the
    /// SVM, this one stands in for it (phase `ServedElsewhere`): it shares, and leaves ONTAP alone.
    pub(super) async fn declare_project_svm(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
        object: &str,
    ) -> Result<Outcome, StepError> {
        let namespace = &self.settings.project_namespace;
        settle(match self.svm_object(namespace, object).await? {
            Some(existing) => self.keep_project_svm(plan, object, &existing).await,
            None => self.create_project_svm(config, plan, object).await,
        })
    }

    /// The project's object exists: later shoots of the project take the SVM as the first one
    /// declared it, and one that has not provisioned yet adopts metal-stack's SVM.
    async fn keep_project_svm(
        &self,
        plan: &Plan,
        object: &str,
        existing: &StorageVirtualMachine,
    ) -> StepFlow<Outcome> {
        let namespace = &self.settings.project_namespace;
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
            return Err(Coded::Configuration
                .invalid(format!(
                    "the StorageVirtualMachine {namespace}/{object} exists but does not provision the project's SVM {} on cluster {}",
                    plan.svm_name, plan.cluster
                ))
                .into());
        }
        let provisioned = existing.status.as_ref().is_some_and(|s| s.uuid.is_some());
        if provisioned
            || existing
                .annotations()
                .contains_key(ADOPT_SVM_UUID_ANNOTATION)
        {
            return Ok(Outcome::unchanged());
        }
        // Declared before ONTAP could be asked (or by a release that did not adopt): the
        // SVM metal-stack's extension made is adopted now rather than refused.
        let uuid = self.unmarked_project_svm(plan).await?.into_flow()?;
        let Some(uuid) = uuid else {
            return Ok(Outcome::unchanged());
        };
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), namespace);
        Ok(set_adoption(&api, object, json!(uuid)).await?)
    }

    /// Creates the project's object, adopting metal-stack's SVM if ONTAP holds one.
    async fn create_project_svm(
        &self,
        config: &ExtensionConfig,
        plan: &Plan,
        object: &str,
    ) -> StepFlow<Outcome> {
        let namespace = &self.settings.project_namespace;
        let adopt = self.unmarked_project_svm(plan).await?.into_flow()?;
        // Decided once, as the SVM is declared: peering a cluster with BGP later is an admin's
        // act, and LIFs changing form behind it would cut the data path of every shoot.
        let config = self.metal_stack_routing(config, plan).await?.into_flow()?;
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
        .map_err(|e| Coded::Configuration.invalid(e.to_string()))?;
        let mut svm = StorageVirtualMachine::new(object, spec);
        svm.metadata.namespace = Some(namespace.clone());
        svm.metadata.annotations =
            adopt.map(|uuid| BTreeMap::from([(ADOPT_SVM_UUID_ANNOTATION.to_string(), uuid)]));
        let api: Api<StorageVirtualMachine> = Api::namespaced(self.kube.clone(), namespace);
        match api.create(&PostParams::default(), &svm).await {
            Ok(_) => Ok(Outcome::changed()),
            // Another shoot of the project declared it first.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Outcome::unchanged()),
            Err(e) => Err(rejected(Failed::SvmCreate, e).into()),
        }
    }

    /// The ONTAP client of the plan's cluster; `None` while the OntapCluster is not cached (the
    /// `SvmReady` step reports a missing one).
    pub(super) async fn ontap(&self, plan: &Plan) -> Result<Option<OntapClient>, ConnectError> {
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
    ) -> Result<Outcome<ExtensionConfig>, StepError> {
        if config.source != ConfigSource::MetalStack {
            return Ok(Outcome::Unchanged(config.clone()));
        }
        let client = match self.ontap(plan).await {
            Ok(Some(client)) => client,
            Ok(None) => {
                return Ok(Waiting::OntapClusterMissing.outcome(format!(
                    "the OntapCluster {} is needed to learn whether it routes with BGP",
                    plan.cluster
                )));
            }
            Err(e) => return e.into_step_result(),
        };
        let bgp = match client.bgp_peer_groups().await {
            Ok(peer_groups) => !peer_groups.is_empty(),
            // A release before ONTAP 9.7 has no BGP and no such collection.
            Err(e) if e.is_not_found() => false,
            Err(e) => return Err(ontap_failure(OntapRequest::BgpLookup, e)),
        };
        Ok(Outcome::Unchanged(
            config.clone().with_metal_stack_routing(bgp),
        ))
    }

    /// The uuid of the project's SVM if ONTAP holds one that the operator did not create:
    /// metal-stack's extension made it. The project object asks to adopt exactly that SVM
    /// ([`ADOPT_SVM_UUID_ANNOTATION`]); an SVM marked for an object is left to the SVM
    /// controller's ownership rules.
    async fn unmarked_project_svm(
        &self,
        plan: &Plan,
    ) -> Result<Outcome<Option<String>>, StepError> {
        let client = match self.ontap(plan).await {
            Ok(Some(client)) => client,
            Ok(None) => return Ok(Outcome::Unchanged(None)),
            Err(e) => return e.into_step_result(),
        };
        let found = client
            .svm_by_name(&plan.svm_name)
            .await
            .map_err(|e| ontap_failure(OntapRequest::SvmLookup, e))?;
        Ok(Outcome::Unchanged(
            found
                .filter(|svm| owned_by(svm.comment.as_deref(), "") == Ownership::Unmarked)
                .map(|svm| svm.uuid),
        ))
    }

    /// Step `ProjectSvmReleased`: when the shoot shared its metal-stack project's SVM and no
    /// other shoot here still uses it, the project's object goes if its policy is `Delete`
    /// (`Retain`, metal-stack's way, keeps it for the project's next shoot). Not waited for: its
    /// controller deletes the SVM only once ONTAP holds no other account on it — shoots of the
    /// project that another seed serves keep theirs — and says so while it waits.
    pub(super) async fn release_project_svm(&self, ext: &Extension) -> Result<Outcome, StepError> {
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
        if self.project_svm_in_use(ext, &project)
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
