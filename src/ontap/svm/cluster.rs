//! Step `ClusterReady`: the OntapCluster this object names, whether its namespace may use it
//! ([`tenancy`](super::tenancy)), and a client with its credentials.

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::errors::{Conflict, Invalid, Transient, Waiting};
use super::naming::reserved_for_another_namespace;
use super::reconcile::{Names, SvmReconciler, SvmStep, names_of};
use super::tenancy;
use crate::api::{OntapCluster, StorageVirtualMachine, StorageVirtualMachineStatus, SvmMode};
use ontap_client::OntapClient;
use reconcile_engine::{Halt, Outcome, StepError, StepRunner};

impl SvmReconciler {
    /// Whether `svm`'s namespace may use `cluster`, and no older object holds the SVM name or a
    /// LIF address it asks for ([`tenancy`](super::tenancy)).
    fn tenancy(
        &self,
        svm: &StorageVirtualMachine,
        cluster: &OntapCluster,
        names: &Names,
    ) -> Result<(), StepError> {
        let namespace = svm.namespace().unwrap_or_default();
        let labels = self
            .namespaces
            .get(&ObjectRef::new(&namespace))
            .map(|ns| ns.labels().clone())
            .ok_or_else(|| {
                Transient::NamespaceUnknown
                    .error(format!("the namespace {namespace} is not in the cache yet"))
            })?;
        let allowed = tenancy::namespace_allowed(cluster.spec.namespace_selector.as_ref(), &labels)
            .map_err(|e| Invalid::NamespaceSelector.error(e))?;
        if !allowed {
            return Err(Invalid::NamespaceNotAllowed.error(format!(
                "the OntapCluster {}'s namespaceSelector does not admit the namespace {namespace}; a cluster administrator can label the namespace or widen the selector",
                cluster.name_any()
            )));
        }
        if self.squats(svm, &names.svm) {
            return Err(Invalid::SvmNameReserved.error(format!(
                "the SVM name {} has the form of another namespace's default names (k8s_<namespace>_<name>), which belong to that namespace; choose a name without the k8s_ prefix, or k8s_{namespace}_…",
                names.svm
            )));
        }
        let claims = tenancy::Claims::of(svm, names.svm.clone(), names.account.clone());
        let others = self.svms.store().state();
        let no_status = StorageVirtualMachineStatus::default();
        let contested = tenancy::contested(
            svm,
            &claims,
            tenancy::contenders(svm, others.iter().map(|other| &**other)).map(|other| {
                let names = names_of(other, other.status.as_ref().unwrap_or(&no_status));
                let mut claims = tenancy::Claims::of(other, names.svm.clone(), names.account);
                // Refused the name, so holding no claim on it: the namespace it belongs to is
                // not kept from it.
                if self.squats(other, &names.svm) {
                    claims.svm_name = None;
                }
                (other, claims)
            }),
        );
        match contested {
            Some(why) => Err(Conflict::ClaimedByAnother.error(why)),
            None => Ok(()),
        }
    }

    /// Whether `svm` asks for `svm_name`, another namespace's default name, from a namespace
    /// tenants write to. The namespaces granted account adoption (the project namespace and
    /// gardenlet's shoot namespaces) hold only the Extension's objects, which restore a shoot's
    /// names from its state, made in a namespace of the same name on another seed.
    fn squats(&self, svm: &StorageVirtualMachine, svm_name: &str) -> bool {
        let namespace = svm.namespace().unwrap_or_default();
        if svm.spec.mode != SvmMode::Owned
            || !reserved_for_another_namespace(svm_name, &namespace, &svm.name_any())
        {
            return false;
        }
        let labels = self
            .namespaces
            .get(&ObjectRef::new(&namespace))
            .map(|ns| ns.labels().clone())
            .unwrap_or_default();
        !self.adoption.may_adopt_accounts(&namespace, &labels)
    }

    /// Step `ClusterReady`: the OntapCluster exists, is Ready, admits this object (only while it
    /// lives: cleanup of what was provisioned must go on), and its credentials load.
    pub(super) async fn cluster(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<OntapClient, Halt> {
        steps
            .step(SvmStep::ClusterReady, || async {
                let name = &svm.spec.cluster_ref.name;
                let Some(cluster) = self.clusters.get(&ObjectRef::new(name)) else {
                    let todo = if svm.metadata.deletion_timestamp.is_some() {
                        "; the SVM cannot be cleaned up without it: recreate the OntapCluster, or set deletionPolicy: Retain to let this object go and leave ONTAP alone"
                    } else {
                        ""
                    };
                    return Ok(Outcome::Waiting(Waiting::ClusterNotFound.missing(
                        format!("the OntapCluster {name} does not exist{todo}"),
                    )));
                };
                let ready = cluster
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
                // A cluster being deleted is not Ready (it waits for its SVMs), yet its SVMs
                // must still reach it to clean up: then the connection itself is the test.
                if svm.metadata.deletion_timestamp.is_none() {
                    self.tenancy(svm, &cluster, names)?;
                }
                let deleting = cluster.metadata.deletion_timestamp.is_some();
                if !deleting && ready.is_none_or(|c| c.status != "True") {
                    let why = ready
                        .map(|c| c.message.clone())
                        .unwrap_or_else(|| "not verified yet".into());
                    return Ok(Outcome::Waiting(Waiting::ClusterNotReady.missing(
                        format!("the OntapCluster {name} is not Ready: {why}"),
                    )));
                }
                match self.connections.connect(&cluster).await {
                    Ok(client) => Ok(Outcome::Unchanged(client)),
                    Err(e) => e.into_step_result(),
                }
            })
            .await
    }
}
