//! Where a shoot's SVM and credentials live, decided once per pass from the providerConfig, the
//! shoot and a restored state.

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use reconcile_engine::{Outcome, StepError, StepFlow};

use crate::api::seed_secret::{default_account_name, default_secret_name, default_svm_name};
use crate::extension::api::{Extension, ShootView};
use crate::extension::config::{ExtensionConfig, SvmSharing, parse_provider_config};
use crate::extension::state::ExtensionState;
use crate::extension::{naming, shoot_rules};

use super::reasons::{ErrorCodeReason, Waiting};
use super::{ExtensionReconciler, namespace_of};

/// Where a shoot's SVM and credentials live: in ONTAP and in the seed.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    /// The StorageVirtualMachine object in the shoot namespace (named like the Extension).
    pub object: String,
    pub cluster: String,
    pub svm_name: String,
    pub account: String,
    /// The seed Secret, and the credentials Secret's name in the shoot.
    pub secret: String,
    /// The object that provisions the SVM a project's shoots share (per-project sharing), in
    /// [`super::ExtensionSettings::project_namespace`]; `None` when the shoot has an SVM of
    /// its own.
    pub project_object: Option<String>,
    /// The shoot's Gardener project, recorded on its objects
    /// ([`crate::extension::api::GARDENER_PROJECT_ANNOTATION`]) and so in ONTAP's marks; with
    /// `project_object`, the one the project object must be bound to. Required then.
    pub gardener_project: Option<String>,
    /// The Shoot's uid in the garden, recorded on its object
    /// ([`crate::api::GARDENER_SHOOT_UID_ANNOTATION`]) and so in ONTAP's marks of its SVM and
    /// account: what identifies them as the shoot's on any seed.
    pub shoot_uid: Option<String>,
}

impl ExtensionReconciler {
    /// Step `ConfigValid`: the providerConfig parsed, and the plan it makes for this shoot.
    pub(super) async fn resolve(
        &self,
        ext: &Extension,
        shoot: &ShootView,
        state: Option<&ExtensionState>,
    ) -> StepFlow<Outcome<(ExtensionConfig, Plan)>> {
        let config = parse_provider_config(
            ext.spec.provider_config.as_ref(),
            &self.settings.config_defaults,
        )
        .map_err(|e| ErrorCodeReason::Configuration.invalid(e.to_string()))?;
        let plan = self.plan(ext, &config, shoot, state)?;
        // Checked here too, before a restore's `SvmAdopted` or an import acts on the plan.
        if let Some(object) = &plan.project_object {
            let namespace = &self.settings.project_namespace;
            let cached = self.svms.get(&ObjectRef::new(object).within(namespace));
            if let Some(existing) = cached {
                self.check_binding(&plan, &existing)?;
            }
        }
        Ok(Outcome::Unchanged((config, plan)))
    }

    /// Names and cluster of the shoot's SVM: from `status.state` after a restore (so nothing
    /// new is made in ONTAP), else from the configuration.
    fn plan(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        shoot: &ShootView,
        state: Option<&ExtensionState>,
    ) -> Result<Plan, StepError> {
        let namespace = namespace_of(ext);
        let object = ext.name_any();
        let cluster = match state {
            Some(state) => state.cluster.clone(),
            None => self.cluster_name(config)?,
        };
        let project = metal_project(config, shoot)?;
        let project_object = project.map(project_object).transpose()?;
        let gardener_project = match project {
            Some(_) => Some(gardener_project(shoot)?),
            None => shoot.gardener_project().map(str::to_owned),
        };
        let (svm_name, account) = match (state, project) {
            (Some(state), _) => (state.svm_name.clone(), state.account.clone()),
            (None, None) => (
                default_svm_name(&namespace, &object),
                naming::account_name(&namespace)
                    .unwrap_or_else(|| default_account_name(&namespace, &object)),
            ),
            (None, Some(project)) => (
                naming::project_svm_name(project),
                project_account(&namespace)?,
            ),
        };
        // metal-stack's name where a switch must find its Secrets; an SVM name may hold
        // characters a Secret name cannot.
        let secret = match config.sharing {
            SvmSharing::PerProject => naming::credentials_secret_name(&svm_name, &namespace),
            SvmSharing::PerShoot => None,
        }
        .unwrap_or_else(|| default_secret_name(&object));
        Ok(Plan {
            object,
            cluster,
            svm_name,
            account,
            secret,
            project_object,
            gardener_project,
            shoot_uid: shoot.metadata.uid.clone().filter(|u| !u.is_empty()),
        })
    }

    fn cluster_name(&self, config: &ExtensionConfig) -> Result<String, StepError> {
        if let Some(name) = config
            .cluster
            .clone()
            .or(self.settings.default_cluster.clone())
        {
            return Ok(name);
        }
        let all = self.ontap_clusters.store().state();
        match all.as_slice() {
            [only] => Ok(only.name_any()),
            // Not cached yet, or not created yet: a missing reference is waited for.
            [] => Err(StepError::transient_msg(
                Waiting::OntapClusterMissing.as_str(),
                "providerConfig names no cluster and there is no OntapCluster yet",
            )),
            _ => Err(ErrorCodeReason::Configuration.invalid(format!(
                "providerConfig names no cluster and the operator has no default (--extension-default-cluster) among {} OntapClusters",
                all.len()
            ))),
        }
    }
}

/// The shoot's metal-stack project when its SVM is the project's ([`shoot_rules::metal_project`]).
fn metal_project<'a>(
    config: &ExtensionConfig,
    shoot: &'a ShootView,
) -> Result<Option<&'a str>, StepError> {
    shoot_rules::metal_project(config, shoot)
        .map_err(|e| ErrorCodeReason::Shoot.invalid(e.to_string()))
}

/// The shoot's Gardener project, which its owner cannot choose.
fn gardener_project(shoot: &ShootView) -> Result<String, StepError> {
    shoot.gardener_project().map(str::to_owned).ok_or_else(|| {
        ErrorCodeReason::Shoot.invalid(
            "the Cluster's Shoot has no namespace: its Gardener project is unknown, and a per-project SVM is only shared within one",
        )
    })
}

/// The object that provisions `project`'s SVM.
fn project_object(project: &str) -> Result<String, StepError> {
    naming::project_object_name(project).ok_or_else(|| {
        ErrorCodeReason::Shoot.invalid(format!(
            "the metal-stack project {project:?} cannot name a Kubernetes object"
        ))
    })
}

/// The shoot's account on its project's SVM, named as metal-stack's extension names it.
fn project_account(namespace: &str) -> Result<String, StepError> {
    naming::account_name(namespace).ok_or_else(|| {
        ErrorCodeReason::Shoot.invalid(format!(
            "{namespace} is not a shoot namespace (shoot--<project>--<name>)"
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::extension::api::METAL_PROJECT_ANNOTATION;
    use crate::extension::config::ConfigDefaults;
    use reconcile_engine::ErrorCategory;
    use serde::Deserialize;
    use serde_json::json;

    fn trident_config() -> ExtensionConfig {
        let raw = json!({
            "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
            "svmIpaddresses": {"managementLif": "192.0.2.10", "dataLifs": ["192.0.2.11"]},
        });
        parse_provider_config(Some(&raw), &ConfigDefaults::default()).unwrap()
    }

    fn shoot(project: &str, infrastructure: Option<&str>) -> ShootView {
        let mut shoot = json!({"metadata": {"name": "web", "namespace": "garden-a",
            "annotations": {METAL_PROJECT_ANNOTATION: project}}});
        if let Some(id) = infrastructure {
            shoot["spec"] =
                json!({"provider": {"type": "metal", "infrastructureConfig": {"projectID": id}}});
        }
        ShootView::deserialize(&shoot).unwrap()
    }

    /// The annotation is the owner's to write; provider-metal's projectID, immutable after
    /// creation, must agree with it where there is one.
    #[test]
    fn the_annotation_must_agree_with_the_infrastructure_project() {
        let config = trident_config();
        const P1: &str = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";
        assert_eq!(metal_project(&config, &shoot(P1, None)).unwrap(), Some(P1));
        assert_eq!(
            metal_project(&config, &shoot(P1, Some(P1))).unwrap(),
            Some(P1)
        );
        let refused = metal_project(&config, &shoot("victim", Some(P1))).unwrap_err();
        assert_eq!(refused.reason(), ErrorCodeReason::Shoot.as_str());
        assert_eq!(refused.category(), ErrorCategory::Invalid);
        assert_eq!(
            gardener_project(&shoot(P1, None)).unwrap(),
            "garden-a",
            "the Shoot's namespace, which its owner cannot choose"
        );
        for not_a_project in [
            "ayroll",
            "rod",
            "0b1f9c3e-aaaa-bbbb-cccc-123456789abz",
            "0b1f9c3eaaaabbbbcccc123456789abc",
        ] {
            let refused = metal_project(&config, &shoot(not_a_project, None)).unwrap_err();
            assert_eq!(
                refused.reason(),
                ErrorCodeReason::Shoot.as_str(),
                "{not_a_project}"
            );
        }
    }
}
