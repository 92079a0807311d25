//! Step `ClusterReady`: the OntapCluster this object names, whether its namespace may use it
//! ([`tenancy`](super::tenancy)), and a client with its credentials.

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::SvmReconciler;
use super::authority::Standing;
use super::errors::{Conflict, Failed, Invalid, Transient, Waiting, ontap_error};
use super::naming::reserved_for_another_namespace;
use super::naming::{Names, names_of};
use super::reconcile::SvmStep;
use super::{role, tenancy, tenant_network};
use crate::api::{
    ClusterAllowances, OntapCluster, StorageVirtualMachine, StorageVirtualMachineStatus, SvmMode,
};
use ontap_client::OntapClient;
use reconcile_engine::{Halt, Outcome, StepError, StepRunner, Unfinished};

impl SvmReconciler {
    /// Whether `svm`'s namespace may use `cluster`, and no older object holds the SVM name, the
    /// account or a LIF address it asks for on the same ONTAP cluster ([`tenancy`]). Only
    /// objects that may hold anything count: those the cluster admits and, for `AccountOnly`
    /// objects, whose named provider shares with them. A refused object keeps nothing from
    /// anyone.
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
        if let Some(allowed) = &cluster.spec.allowed
            && let Some(why) = tenancy::not_allowed(
                svm,
                allowed,
                &cluster.name_any(),
                self.standings.of(svm) == Standing::Tenant,
            )
        {
            return Err(Invalid::NotAllowedByCluster.error(why));
        }
        if let Some(allowed) = &cluster.spec.allowed
            && let Some(why) =
                role::role_not_allowed(self.account_role(svm), allowed, &cluster.name_any())
        {
            return Err(Invalid::NotAllowedByCluster.error(why));
        }
        if let Some(why) = tenant_network::not_allowed(svm, cluster, &self.party(svm)) {
            return Err(Invalid::NotAllowedByCluster.error(why));
        }
        let others = self.svms.store().state();
        let over_limit = self.over_namespace_limit(cluster, &others);
        if svm.uid().is_some_and(|uid| over_limit.contains(&uid)) {
            let limit = cluster
                .spec
                .allowed
                .as_ref()
                .and_then(|a| a.svms_per_namespace);
            return Err(Invalid::NotAllowedByCluster.error(format!(
                "the OntapCluster {} allows {} SVMs per namespace, and {namespace} has them",
                cluster.name_any(),
                limit.unwrap_or_default()
            )));
        }
        if self.squats(svm, &names.svm) {
            return Err(Invalid::SvmNameReserved.error(format!(
                "the SVM name {} has the form of another namespace's default names (k8s_<namespace>_<name>), which belong to that namespace; choose a name without the k8s_ prefix, or k8s_{namespace}_…",
                names.svm
            )));
        }
        let claims = tenancy::Claims::of(svm, names.svm.clone(), names.account.clone());
        let no_status = StorageVirtualMachineStatus::default();
        let contested = tenancy::contested(
            svm,
            &claims,
            tenancy::contenders(svm, others.iter().map(|other| &**other), |a, b| {
                self.same_ontap(a, b)
            })
            .filter(|other| {
                self.holds_claims(other)
                    && !other.uid().is_some_and(|uid| over_limit.contains(&uid))
            })
            .map(|other| {
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

    /// The uids of the tenants' `Owned` objects on `cluster` beyond its SVMs-per-namespace limit,
    /// the newest of each namespace first: refused, and holding no claim. Empty without a limit.
    fn over_namespace_limit(
        &self,
        cluster: &OntapCluster,
        all: &[Arc<StorageVirtualMachine>],
    ) -> HashSet<String> {
        let Some(limit) = cluster
            .spec
            .allowed
            .as_ref()
            .and_then(|a| a.svms_per_namespace)
        else {
            return HashSet::new();
        };
        let name = cluster.name_any();
        let mut by_namespace: HashMap<&str, Vec<&StorageVirtualMachine>> = HashMap::new();
        for svm in all.iter().map(|s| &**s) {
            if svm.spec.mode == SvmMode::Owned
                && self.same_ontap(&svm.spec.cluster_ref.name, &name)
                && self.standings.of(svm) == Standing::Tenant
                && self.admitted(svm)
            {
                by_namespace
                    .entry(svm.metadata.namespace.as_deref().unwrap_or_default())
                    .or_default()
                    .push(svm);
            }
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        by_namespace
            .into_values()
            .flat_map(|mut svms| {
                svms.sort_by(|a, b| tenancy::precedence(a).cmp(&tenancy::precedence(b)));
                svms.into_iter().skip(limit).filter_map(|s| s.uid())
            })
            .collect()
    }

    /// What the administrator of `svm`'s cluster allows (no bounds while it is not cached).
    pub(super) fn allowances(&self, svm: &StorageVirtualMachine) -> ClusterAllowances {
        self.clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name))
            .and_then(|c| c.spec.allowed.clone())
            .unwrap_or_default()
    }

    /// Whether `svm` may hold claims: its cluster admits its namespace and, for an `AccountOnly`
    /// object, the provider it names shares with it. One that provisioned already holds what it
    /// provisioned, admitted now or not, until its cleanup.
    fn holds_claims(&self, svm: &StorageVirtualMachine) -> bool {
        if svm.status.as_ref().is_some_and(|s| s.uuid.is_some()) {
            return true;
        }
        if !self.admitted(svm) {
            return false;
        }
        match svm.spec.mode {
            SvmMode::Owned => true,
            SvmMode::AccountOnly => {
                let Some(reference) = &svm.spec.provider else {
                    return false;
                };
                let namespace = reference
                    .namespace
                    .clone()
                    .or_else(|| svm.namespace())
                    .unwrap_or_default();
                let consumer = svm.namespace().unwrap_or_default();
                self.svms
                    .get(&ObjectRef::new(&reference.name).within(&namespace))
                    .is_some_and(|provider| {
                        tenancy::shares_with(
                            &provider,
                            &consumer,
                            &self.standings.namespace_labels(&consumer),
                        )
                        .unwrap_or(false)
                    })
            }
        }
    }

    /// Whether the cluster `svm` names admits it: its namespace, and what it chooses (`false`
    /// while the cluster is not cached, or its selector is invalid).
    pub(super) fn admitted(&self, svm: &StorageVirtualMachine) -> bool {
        let namespace = svm.namespace().unwrap_or_default();
        self.clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name))
            .is_some_and(|cluster| {
                let within_bounds = cluster.spec.allowed.as_ref().is_none_or(|allowed| {
                    let tenant = self.standings.of(svm) == Standing::Tenant;
                    let role = role::effective_role(&svm.spec, cluster.spec.defaults.as_ref());
                    tenancy::not_allowed(svm, allowed, "", tenant).is_none()
                        && role::role_not_allowed(role, allowed, "").is_none()
                });
                within_bounds
                    && tenant_network::not_allowed(svm, &cluster, &self.party(svm)).is_none()
                    && tenancy::namespace_allowed(
                        cluster.spec.namespace_selector.as_ref(),
                        &self.standings.namespace_labels(&namespace),
                    )
                    .unwrap_or(false)
            })
    }

    /// Whether the OntapClusters `a` and `b` reach the same ONTAP cluster: claims are ONTAP's,
    /// and two OntapCluster objects on one ONTAP must not let two objects claim one name. Compared
    /// by endpoint host and port; by object name while either is not cached.
    pub(super) fn same_ontap(&self, a: &str, b: &str) -> bool {
        if a == b {
            return true;
        }
        let endpoint = |name: &str| {
            self.clusters
                .get(&ObjectRef::new(name))
                .and_then(|c| tenancy::ontap_identity(&c.spec.endpoint))
        };
        matches!((endpoint(a), endpoint(b)), (Some(x), Some(y)) if x == y)
    }

    /// Whether `svm` asks for `svm_name`, another namespace's default name, as a tenant. The
    /// extension's objects (in the project namespace and gardenlet's shoot namespaces) restore
    /// a shoot's names from its state, made in a namespace of the same name on another seed.
    fn squats(&self, svm: &StorageVirtualMachine, svm_name: &str) -> bool {
        let namespace = svm.namespace().unwrap_or_default();
        svm.spec.mode == SvmMode::Owned
            && reserved_for_another_namespace(svm_name, &namespace, &svm.name_any())
            && self.standings.of(svm) == Standing::Tenant
    }

    /// An object whose namespace the cluster stopped admitting loses the access it was given:
    /// the account it made on its SVM is locked (its SVM and data stay). Admitted again, its
    /// `AccountReady` unlocks it. Nothing is touched for an object that never provisioned.
    async fn revoke_unadmitted(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        cluster: &OntapCluster,
    ) -> Result<(), StepError> {
        let Some(uuid) = svm.status.as_ref().and_then(|s| s.uuid.as_deref()) else {
            return Ok(());
        };
        let client = match self.connections.connect(cluster).await {
            Ok(client) => client,
            // A Secret the cluster names is missing: nothing can be reached to revoke yet, and
            // the refusal, not the Secret, is what the step reports.
            Err(Unfinished::Waiting(_)) => return Ok(()),
            Err(Unfinished::Failed(e)) => return Err(e),
        };
        let found = match client.svm(uuid).await {
            Ok(found) => found,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(ontap_error(Failed::SvmLookup, e)),
        };
        self.revoke_account(names, &found, &client).await
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
                    return Err(Waiting::ClusterNotFound
                        .missing(format!("the OntapCluster {name} does not exist{todo}"))
                        .into());
                };
                let ready = cluster
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
                // A cluster being deleted is not Ready (it waits for its SVMs), yet its SVMs
                // must still reach it to clean up: then the connection itself is the test.
                if svm.metadata.deletion_timestamp.is_none()
                    && let Err(refused) = self.tenancy(svm, &cluster, names)
                {
                    if refused.reason() == Invalid::NamespaceNotAllowed.as_str() {
                        self.revoke_unadmitted(svm, names, &cluster).await?;
                    }
                    return Err(refused.into());
                }
                let deleting = cluster.metadata.deletion_timestamp.is_some();
                if !deleting && ready.is_none_or(|c| c.status != "True") {
                    let why = ready
                        .map(|c| c.message.clone())
                        .unwrap_or_else(|| "not verified yet".into());
                    return Err(Waiting::ClusterNotReady
                        .missing(format!("the OntapCluster {name} is not Ready: {why}"))
                        .into());
                }
                Ok(Outcome::Unchanged(self.connections.connect(&cluster).await?))
            })
            .await
    }
}
