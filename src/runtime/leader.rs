//! Leader election on a `coordination.k8s.io/v1` Lease, through `kube-lease-manager` (maintained,
//! built for kube 5, server-side apply on the Lease so two holders cannot both win).
//!
//! The crate's standby reads the Lease again only when the term it last read would end, so a
//! Lease its holder gave back on shutdown would stay free for up to a whole term. The standby
//! here also watches the Lease, and when it sees it given back competes at once with a fresh
//! manager (whose first read finds it free), as client-go's retry period does.
//!
//! On top of the crate, this process fences its own leadership: a holder that cannot renew (API
//! server unreachable, or its connection black-holed) would keep believing it leads while the
//! Lease expires and a standby takes over. So the leader re-reads the Lease often, each read
//! bounded by a timeout, and, like controller-runtime, gives up — drops its in-flight reconciles
//! and ends the process — before the Lease, measured from its own renew time, can expire.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Client};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use reconcile_engine::health::{Leadership, LeadershipState};

/// How long before the Lease can expire for others a leader that could not confirm its renewal
/// stops acting (at most half of the renew interval): room for the time the stop itself takes.
pub const FENCE_MARGIN: Duration = Duration::from_secs(2);

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
    /// The manager's task; `None` only while a standby's manager is being replaced.
    task: Option<ManagerTask>,
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
        let (receiver, task) = compete(&client, &config).await?;
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
            task: Some(task),
            state,
            client,
        })
    }

    /// Resolves once this process holds the Lease.
    pub async fn acquired(&mut self) -> Result<(), LeaderElectionError> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.config.namespace);
        // Only a Lease seen held by another and then free was given back; one free from the
        // start is the manager's own first find.
        let mut held_by_other = false;
        let mut given_back = std::pin::pin!(
            watcher::watch_object(api, &self.config.lease_name)
                .default_backoff()
                .filter_map(|event| async move {
                    match event {
                        Ok(lease) => Some(lease.as_ref().map(holder).unwrap_or_default()),
                        Err(error) => {
                            tracing::warn!(%error, "watching the lease failed");
                            None
                        }
                    }
                })
        );
        while !*self.receiver.borrow_and_update() {
            tokio::select! {
                changed = self.receiver.changed() => {
                    if changed.is_err() {
                        return Err(LeaderElectionError::Lost(self.config.lease_name.clone()));
                    }
                }
                Some(holder) = given_back.next() => {
                    let other = holder.as_ref().is_some_and(|h| *h != self.config.identity);
                    if held_by_other && holder.is_none() {
                        tracing::info!("the lease was given back: competing at once");
                        self.compete_again().await?;
                    }
                    held_by_other = other;
                }
            }
        }
        self.state.set(Leadership::Leader);
        tracing::info!(identity = %self.config.identity, "became leader");
        Ok(())
    }

    /// Replaces the standby manager, asleep until the end of a term that no longer exists, by a
    /// fresh one. The old one ends first: two managers of one identity at once could give back
    /// the Lease the new one just took.
    async fn compete_again(&mut self) -> Result<(), LeaderElectionError> {
        // A receiver whose sender is gone: should no manager follow, the wait reports the loss.
        drop(std::mem::replace(
            &mut self.receiver,
            watch::channel(false).1,
        ));
        if let Some(old) = self.task.take() {
            match old.await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => tracing::warn!(%error, "ending the standby lease manager failed"),
                Err(error) => tracing::warn!(%error, "the standby lease manager's task failed"),
            }
        }
        let (receiver, task) = compete(&self.client, &self.config).await?;
        self.receiver = receiver;
        self.task = Some(task);
        Ok(())
    }

    /// Resolves when leadership is lost: by the manager's word, because the Lease read back no
    /// longer names this process, or — the fence — because no read has confirmed a renewal in
    /// time. The fence is measured from the Lease's own `renewTime` (what a standby measures
    /// from), not from when a read returned, and falls [`FENCE_MARGIN`] before the Lease can
    /// expire for others. Every read is bounded by a timeout: a black-holed connection would
    /// otherwise hang a read far beyond the Lease, while this process acts on as leader.
    pub async fn lost(&mut self) -> LeaderElectionError {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let check_every = (self.config.renew_before / 4)
            .clamp(Duration::from_millis(250), Duration::from_secs(2));
        // Just acquired: the Lease was renewed no earlier than now minus a check.
        let mut fence =
            tokio::time::Instant::now() + self.fence_after(Duration::ZERO).unwrap_or_default();
        let reason = loop {
            let now = tokio::time::Instant::now();
            if now >= fence {
                break "no renewal confirmed before the Lease could expire for others";
            }
            let next_check = (now + check_every).min(fence);
            tokio::select! {
                changed = self.receiver.changed() => {
                    if changed.is_err() || !*self.receiver.borrow_and_update() {
                        break "the lease manager reported the loss";
                    }
                }
                () = tokio::time::sleep_until(next_check) => {
                    // Bounded by the fence itself: a read that has not answered by then is moot.
                    let timeout = fence.saturating_duration_since(tokio::time::Instant::now()).max(Duration::from_millis(1));
                    match tokio::time::timeout(timeout, api.get(&self.config.lease_name)).await {
                        Ok(Ok(lease)) => match self.renewed_ago(&lease) {
                            Some(ago) => match self.fence_after(ago) {
                                Some(left) => fence = tokio::time::Instant::now() + left,
                                None => break "the Lease read back has expired",
                            },
                            None => break "the Lease read back names another holder",
                        },
                        Ok(Err(error)) => tracing::warn!(%error, "reading the lease back failed"),
                        Err(_) => tracing::warn!(?timeout, "reading the lease back timed out"),
                    }
                }
            }
        };
        self.state.set(Leadership::Standby);
        tracing::error!(identity = %self.config.identity, reason, "leadership lost");
        LeaderElectionError::Lost(self.config.lease_name.clone())
    }

    /// How long after a renewal `ago` in the past this process may still act: until
    /// [`FENCE_MARGIN`] before the Lease expires; `None` when that moment has passed.
    fn fence_after(&self, ago: Duration) -> Option<Duration> {
        let margin = FENCE_MARGIN.min(self.config.renew_before / 2);
        self.config
            .lease_duration
            .checked_sub(margin)?
            .checked_sub(ago)
            .filter(|left| !left.is_zero())
    }

    /// How long ago the Lease was last renewed, if it names this process.
    fn renewed_ago(&self, lease: &Lease) -> Option<Duration> {
        let spec = lease.spec.as_ref()?;
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return None;
        }
        let renewed = spec.renew_time.as_ref()?.0;
        let ago = Timestamp::now().duration_since(renewed);
        // A renewal "in the future" (clock skew between replicas' writes) counts as just now.
        Some(Duration::try_from(ago).unwrap_or_default())
    }

    /// Gives the Lease back so a standby takes over at once instead of after its expiry.
    pub async fn release(self) {
        drop(self.receiver);
        if let Some(task) = self.task {
            match task.await {
                Ok(Ok(_)) => tracing::info!("lease released"),
                Ok(Err(error)) => tracing::warn!(%error, "releasing the lease failed"),
                Err(error) => tracing::warn!(%error, "the lease task failed"),
            }
        }
        self.state.set(Leadership::Standby);
    }
}

type ManagerTask = JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>;

/// A lease manager competing for the Lease in the background; it reports whether this process
/// holds it.
async fn compete(
    client: &Client,
    config: &LeaderElectionConfig,
) -> Result<(watch::Receiver<bool>, ManagerTask), LeaderElectionError> {
    let manager = LeaseManagerBuilder::new(client.clone(), config.lease_name.clone())
        .with_namespace(config.namespace.clone())
        .with_identity(config.identity.clone())
        .with_duration(config.lease_duration.as_secs().max(1))
        .with_grace(config.renew_before.as_secs().max(1))
        .build()
        .await
        .map_err(|source| LeaderElectionError::Setup {
            namespace: config.namespace.clone(),
            name: config.lease_name.clone(),
            source,
        })?;
    Ok(manager.watch().await)
}

/// Who holds `lease`, if anyone: a holder that gave it back leaves no identity.
fn holder(lease: &Lease) -> Option<String> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .clone()
        .filter(|h| !h.is_empty())
}
