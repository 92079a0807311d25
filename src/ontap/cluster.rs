//! The OntapCluster controller: `Ready` means an authenticated request to the cluster succeeded
//! on the latest pass, which runs every [`REVERIFY_EVERY`]. Each cluster's result also shows in
//! `/readyz?verbose`, informational only: one unreachable cluster must not take the operator out
//! of service (and block its rollouts) for the SVMs of every other cluster.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::{CustomResourceExt, ResourceExt};

use super::connections::{ClusterConnections, ontap_error};
use super::svm::tenancy::namespace_allowed;
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::ObjectRef;

use crate::api::{OntapCluster, OntapClusterStatus, StorageVirtualMachine};
use reconcile_engine::conditions::{FALSE, TRUE, transition};
use reconcile_engine::health::{Health, Probe};
use reconcile_engine::{
    Halt, Manager, ManagerError, Outcome, Reconciler, Registration, SharedCache, StepFlow,
    StepRunner, Unfinished, Wait,
};

reconcile_engine::steps! {
    /// The steps of the OntapCluster controller.
    pub enum ClusterStep {
        /// An authenticated request to the cluster succeeded.
        Connected,
        /// Cleanup: no StorageVirtualMachine uses the cluster any more.
        Unused,
    }
}

/// Keeps an OntapCluster while StorageVirtualMachines use it: without it their cleanup could
/// not reach ONTAP, and deleting them would hang or leak.
pub const FINALIZER: &str = "ontap.storage.dev/cluster-in-use";

/// How often a cluster being deleted looks again at the SVMs that still use it (an SVM's
/// deletion also triggers a look).
const IN_USE_RECHECK: Duration = Duration::from_secs(30);

/// How many users a condition names; the count says how many there are.
const USERS_NAMED: usize = 10;

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "ontapcluster";

/// `Connected` reason: ONTAP refused the administrator credentials.
pub const UNAUTHENTICATED: &str = "Unauthenticated";
/// `Connected` reason: ONTAP did not answer as it should.
pub const UNREACHABLE: &str = "ClusterUnreachable";

/// Registers the OntapCluster controller: every cluster (of those `watch` selects) is
/// re-verified every [`REVERIFY_EVERY`]; it reads the credential Secrets the clusters name.
pub fn register(
    manager: &mut Manager,
    connections: ClusterConnections,
    probes: ClusterProbes,
    watch: kube::runtime::watcher::Config,
) -> Result<(), ManagerError> {
    let svms = manager.cache::<StorageVirtualMachine>()?;
    let namespaces = manager.cache::<Namespace>()?;
    manager.register(
        Registration::new(
            CONTROLLER,
            ClusterReconciler {
                connections,
                probes,
                svms,
                namespaces,
            },
        )
        .watching(watch)
        // Only a cluster being deleted waits for its SVMs; a live one has no use for their
        // changes, and 1,000 SVMs provisioning would otherwise probe ONTAP at every one.
        .watches::<StorageVirtualMachine>(|svm, clusters| {
            let cluster = ObjectRef::new(&svm.spec.cluster_ref.name);
            match clusters.get(&cluster) {
                Some(c) if c.metadata.deletion_timestamp.is_some() => vec![cluster],
                _ => Vec::new(),
            }
        })
        .crd(OntapCluster::crd())
        .every(REVERIFY_EVERY),
    )
}

/// How often every OntapCluster is re-verified, events or not.
pub const REVERIFY_EVERY: Duration = Duration::from_secs(30);

/// One informational readiness check per OntapCluster, named `ontap-cluster/<name>`.
#[derive(Clone)]
pub struct ClusterProbes {
    health: Health,
    probes: Arc<Mutex<HashMap<String, Probe>>>,
}

impl ClusterProbes {
    pub fn new(health: Health) -> Self {
        Self {
            health,
            probes: Arc::default(),
        }
    }

    fn probe(&self, cluster: &str) -> Probe {
        let mut probes = self.probes.lock().unwrap_or_else(|p| p.into_inner());
        probes
            .entry(cluster.to_string())
            .or_insert_with(|| {
                // Three missed passes make the result stale.
                let probe = Probe::new(REVERIFY_EVERY * 3);
                let check = probe.clone();
                self.health
                    .add_informational(format!("ontap-cluster/{cluster}"), move || check.check());
                probe
            })
            .clone()
    }

    pub fn remove(&self, cluster: &str) {
        self.probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(cluster);
        self.health
            .remove_informational(&format!("ontap-cluster/{cluster}"));
    }
}

pub struct ClusterReconciler {
    pub connections: ClusterConnections,
    pub probes: ClusterProbes,
    pub svms: SharedCache<StorageVirtualMachine>,
    pub namespaces: SharedCache<Namespace>,
}

impl ClusterReconciler {
    /// `namespace/name` of every StorageVirtualMachine that holds something on `cluster`,
    /// sorted: one its namespaceSelector admits, or one that provisioned before it stopped
    /// admitting it. An object the cluster never admitted holds nothing to clean up, so naming
    /// the cluster cannot keep its deletion waiting.
    fn users(&self, cluster: &OntapCluster) -> Vec<String> {
        let name = cluster.name_any();
        let admitted = |svm: &StorageVirtualMachine| {
            let namespace = svm.namespace().unwrap_or_default();
            let labels = self
                .namespaces
                .get(&ObjectRef::new(&namespace))
                .map(|ns| ns.labels().clone())
                .unwrap_or_default();
            namespace_allowed(cluster.spec.namespace_selector.as_ref(), &labels).unwrap_or(true)
        };
        let mut users: Vec<String> = self
            .svms
            .store()
            .state()
            .iter()
            .filter(|svm| svm.spec.cluster_ref.name == name)
            .filter(|svm| svm.status.as_ref().is_some_and(|s| s.uuid.is_some()) || admitted(svm))
            .map(|svm| format!("{}/{}", svm.namespace().unwrap_or_default(), svm.name_any()))
            .collect();
        users.sort();
        users
    }
}

/// Condition: whether the operator checks the cluster's certificate. Not a step: an insecure
/// cluster still works, so it must not hold `Ready` back, yet it has to show where users look
/// (with a Warning Event), not only in the operator's log.
pub const TLS_VERIFIED: &str = "TLSVerified";
/// `TLSVerified` reason when `insecureSkipTLSVerify` is set.
pub const INSECURE_SKIP_TLS_VERIFY: &str = "InsecureSkipTLSVerify";

/// The `TLSVerified` condition of `cluster`'s spec, keeping the transition time of `current`.
fn tls_condition(cluster: &OntapCluster, current: &[Condition]) -> Condition {
    let spec = &cluster.spec;
    let (status, reason, message) = if spec.insecure_skip_tls_verify {
        (
            FALSE,
            INSECURE_SKIP_TLS_VERIFY,
            "insecureSkipTLSVerify is set: the cluster's certificate is not checked, so anyone on the path can read the cluster's admin credentials; set caFingerprint (its certificate's SHA-256 fingerprint) or caSecretRef instead",
        )
    } else if spec.ca_fingerprint.is_some() {
        (
            TRUE,
            "PinnedFingerprint",
            "only the certificate with the fingerprint of spec.caFingerprint is trusted",
        )
    } else if spec.ca_secret_ref.is_some() {
        (
            TRUE,
            "CASecret",
            "the certificate is verified against the CA of spec.caSecretRef",
        )
    } else {
        (
            TRUE,
            "SystemTrustStore",
            "the certificate is verified against the system's trusted CAs",
        )
    };
    transition(
        current,
        TLS_VERIFIED,
        status,
        reason.to_owned(),
        message.to_owned(),
        cluster.metadata.generation,
        &Time(Timestamp::now()),
    )
}

impl Reconciler for ClusterReconciler {
    type Resource = OntapCluster;
    type Step = ClusterStep;
    const FINALIZER: Option<&'static str> = Some(FINALIZER);
    const OWN_CONDITIONS: &'static [&'static str] = &[TLS_VERIFIED];

    /// Waits until no StorageVirtualMachine uses the cluster.
    async fn cleanup(
        &self,
        cluster: &OntapCluster,
        _status: &mut OntapClusterStatus,
        steps: &mut StepRunner<ClusterStep>,
    ) -> Result<(), Halt> {
        steps
            .step(ClusterStep::Unused, || async {
                let users = self.users(cluster);
                if users.is_empty() {
                    return Ok(Outcome::unchanged());
                }
                let named = users
                    .iter()
                    .take(USERS_NAMED)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                let more = users.len().saturating_sub(USERS_NAMED);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                Err(Wait::new(
                    "ClusterInUse",
                    format!(
                        "{} StorageVirtualMachine(s) use this cluster: {named}{more}; it is deleted once they are gone (delete them, or set their deletionPolicy: Retain to keep their SVMs in ONTAP)",
                        users.len()
                    ),
                    IN_USE_RECHECK,
                )
                .into())
            })
            .await
    }

    /// A deleted cluster takes its readiness check and its cached client along.
    fn forget(&self, cluster: &OntapCluster) {
        self.probes.remove(&cluster.name_any());
        self.connections.forget(&cluster.name_any());
    }

    async fn reconcile(
        &self,
        cluster: &OntapCluster,
        status: &mut OntapClusterStatus,
        steps: &mut StepRunner<ClusterStep>,
    ) -> Result<(), Halt> {
        let tls = tls_condition(cluster, &status.conditions);
        status.conditions.retain(|c| c.type_ != TLS_VERIFIED);
        status.conditions.push(tls);
        let probe = self.probes.probe(&cluster.name_any());
        let info = steps
            .step(ClusterStep::Connected, || async {
                let result: StepFlow<Outcome<_>> = async {
                    let client = self.connections.connect(cluster).await?;
                    let info = client.cluster().await.map_err(|e| {
                        // Told apart for whoever maps this condition to an error code (the
                        // Gardener Extension: ERR_INFRA_UNAUTHENTICATED).
                        let reason = if e.class() == ontap_client::ErrorClass::Unauthenticated {
                            UNAUTHENTICATED
                        } else {
                            UNREACHABLE
                        };
                        ontap_error(reason, e)
                    })?;
                    Ok(Outcome::Unchanged(info))
                }
                .await;
                probe.record(match &result {
                    Ok(_) => Ok(()),
                    Err(Unfinished::Waiting(wait)) => Err(wait.message.clone()),
                    Err(Unfinished::Failed(e)) => Err(e.to_string()),
                });
                result
            })
            .await?;
        status.version = Some(format!(
            "{}.{}.{}",
            info.version.generation, info.version.major, info.version.minor
        ));
        Ok(())
    }
}
