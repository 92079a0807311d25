//! Leader election on a `coordination.k8s.io/v1` Lease, through `kube-lease-manager` (maintained,
//! built for kube 5, server-side apply on the Lease so two holders cannot both win).
//!
//! On top of the crate, this process double-checks its own leadership: a holder that cannot renew
//! (API server unreachable) keeps believing it leads while the Lease expires and a standby takes
//! over. So the leader re-reads the Lease on every renew interval and, like controller-runtime,
//! gives up — ends the process — as soon as the Lease no longer names it or has expired.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::health::{Leadership, LeadershipState};

#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    pub namespace: String,
    pub lease_name: String,
    /// Unique per process: two processes with one identity would both believe they lead.
    pub identity: String,
    pub lease_duration: Duration,
    /// How long before expiry the holder renews.
    pub renew_before: Duration,
}

impl LeaderElectionConfig {
    /// The identity controller-runtime uses: the host (pod) name and a random suffix.
    pub fn default_identity() -> String {
        let host = std::env::var("POD_NAME")
            .ok()
            .or_else(|| {
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .ok()
                    .map(|h| h.trim().to_string())
            })
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "ontap-operator".into());
        format!("{host}_{}", uuid::Uuid::new_v4())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderElectionError {
    #[error("setting up the lease {namespace}/{name}: {source}")]
    Setup {
        namespace: String,
        name: String,
        source: kube_lease_manager::LeaseManagerError,
    },
    #[error("leadership of lease {0} lost")]
    Lost(String),
}

pub struct LeaderElection {
    config: LeaderElectionConfig,
    receiver: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
    state: LeadershipState,
    client: Client,
}

impl LeaderElection {
    /// Creates (or finds) the Lease and starts competing for it in the background.
    pub async fn start(
        client: Client,
        config: LeaderElectionConfig,
        state: LeadershipState,
    ) -> Result<Self, LeaderElectionError> {
        let setup_error = |source| LeaderElectionError::Setup {
            namespace: config.namespace.clone(),
            name: config.lease_name.clone(),
            source,
        };
        let manager = LeaseManagerBuilder::new(client.clone(), config.lease_name.clone())
            .with_namespace(config.namespace.clone())
            .with_identity(config.identity.clone())
            .with_duration(config.lease_duration.as_secs().max(1))
            .with_grace(config.renew_before.as_secs().max(1))
            .build()
            .await
            .map_err(setup_error)?;
        let (receiver, task) = manager.watch().await;
        // The Lease was read successfully: until it says otherwise, another process leads.
        state.set(if *receiver.borrow() {
            Leadership::Leader
        } else {
            Leadership::Standby
        });
        tracing::info!(identity = %config.identity, lease = %config.lease_name, "competing for leadership");
        Ok(Self {
            config,
            receiver,
            task,
            state,
            client,
        })
    }

    /// Resolves once this process holds the Lease.
    pub async fn acquired(&mut self) -> Result<(), LeaderElectionError> {
        while !*self.receiver.borrow_and_update() {
            if self.receiver.changed().await.is_err() {
                return Err(LeaderElectionError::Lost(self.config.lease_name.clone()));
            }
        }
        self.state.set(Leadership::Leader);
        tracing::info!(identity = %self.config.identity, "became leader");
        Ok(())
    }

    /// Resolves when leadership is lost, by the manager's word or because the Lease, read back,
    /// no longer names this process as an unexpired holder.
    pub async fn lost(&mut self) -> LeaderElectionError {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let check_every = self.config.renew_before.max(Duration::from_secs(1));
        let mut last_confirmed = tokio::time::Instant::now();
        loop {
            tokio::select! {
                changed = self.receiver.changed() => {
                    if changed.is_err() || !*self.receiver.borrow_and_update() {
                        break;
                    }
                }
                _ = tokio::time::sleep(check_every) => {
                    match api.get(&self.config.lease_name).await {
                        Ok(lease) if self.still_holds(&lease) => last_confirmed = tokio::time::Instant::now(),
                        Ok(_) => break,
                        Err(error) => {
                            tracing::warn!(%error, "reading the lease back failed");
                            // Without a confirmation for a whole lease duration, another
                            // process may already lead: stop before acting on stale leadership.
                            if last_confirmed.elapsed() >= self.config.lease_duration.saturating_sub(self.config.renew_before) {
                                break;
                            }
                        }
                    }
                }
            }
        }
        self.state.set(Leadership::Standby);
        tracing::error!(identity = %self.config.identity, "leadership lost");
        LeaderElectionError::Lost(self.config.lease_name.clone())
    }

    fn still_holds(&self, lease: &Lease) -> bool {
        let Some(spec) = &lease.spec else {
            return false;
        };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return false;
        }
        let duration = spec.lease_duration_seconds.map(i64::from).unwrap_or(0);
        match &spec.renew_time {
            Some(renewed) => {
                let expires = renewed.0.as_second() + duration;
                expires > Timestamp::now().as_second()
            }
            None => false,
        }
    }

    /// Gives the Lease back so a standby takes over at once instead of after its expiry.
    pub async fn release(self) {
        drop(self.receiver);
        match self.task.await {
            Ok(Ok(_)) => tracing::info!("lease released"),
            Ok(Err(error)) => tracing::warn!(%error, "releasing the lease failed"),
            Err(error) => tracing::warn!(%error, "the lease task failed"),
        }
        self.state.set(Leadership::Standby);
    }
}
