//! The OntapCluster controller: `Ready` means an authenticated request to the cluster succeeded
//! on the latest pass, which runs every [`REVERIFY_EVERY`]. Each cluster's result is also a
//! readiness check of the operator.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::ResourceExt;

use super::connections::{ClusterConnections, ontap_error};
use crate::api::{OntapCluster, OntapClusterStatus};
use crate::engine::{Halt, Outcome, Reconciler, StepRunner};
use crate::runtime::health::{Health, Probe};

/// How often every OntapCluster is re-verified, events or not.
pub const REVERIFY_EVERY: Duration = Duration::from_secs(30);

/// One readiness check per OntapCluster, named `ontap-cluster/<name>`.
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
                    .add_readiness(format!("ontap-cluster/{cluster}"), move || check.check());
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
            .remove_readiness(&format!("ontap-cluster/{cluster}"));
    }
}

pub struct ClusterReconciler {
    pub connections: ClusterConnections,
    pub probes: ClusterProbes,
}

impl Reconciler for ClusterReconciler {
    type Resource = OntapCluster;

    async fn reconcile(
        &self,
        cluster: &OntapCluster,
        status: &mut OntapClusterStatus,
        steps: &mut StepRunner,
    ) -> Result<(), Halt> {
        let probe = self.probes.probe(&cluster.name_any());
        let info = steps
            .step("Connected", || async {
                let result = async {
                    let client = match self.connections.connect(cluster).await {
                        Ok(client) => client,
                        Err(e) => return e.into_step_result(),
                    };
                    let info = client
                        .cluster()
                        .await
                        .map_err(|e| ontap_error("ClusterUnreachable", e))?;
                    Ok(Outcome::Unchanged(info))
                }
                .await;
                probe.record(match &result {
                    Ok(Outcome::Unchanged(_) | Outcome::Changed(_)) => Ok(()),
                    Ok(Outcome::Waiting(wait)) => Err(wait.message.clone()),
                    Err(e) => Err(e.to_string()),
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
