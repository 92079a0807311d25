//! The heartbeat Lease gardenlet reads to tell a live extension from a dead one.
//!
//! As Gardener's heartbeat controller does it: a `coordination.k8s.io/v1` Lease
//! `gardener-extension-heartbeat` in the extension's own namespace (`extension-<installation>`,
//! where gardenlet looks; the pod's namespace), renewed every interval (default 30 s) with
//! `holderIdentity` = the extension's name, `leaseDurationSeconds` = the interval and
//! `renewTime` = now; created when missing, merge-patched otherwise. gardenlet judges only
//! `renewTime`: older than 5 minutes turns the shoot's extension-reported conditions Unknown.
//!
//! The heartbeat says the process is alive, not that it leads: every replica renews it, as
//! Gardener's controller does (it runs without leader election).

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The Lease's name, fixed by Gardener.
pub const HEARTBEAT_LEASE: &str = "gardener-extension-heartbeat";
/// Gardener's default `--heartbeat-renew-interval-seconds`.
pub const DEFAULT_RENEW_INTERVAL: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatConfig {
    /// The extension's namespace (the pod's).
    pub namespace: String,
    /// The extension's name, e.g. `extension-ontap`.
    pub holder_identity: String,
    pub renew_interval: Duration,
}

/// Renews the Lease once, at `now`.
pub async fn renew(
    client: &Client,
    config: &HeartbeatConfig,
    now: Timestamp,
) -> Result<Lease, kube::Error> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), &config.namespace);
    let duration = i32::try_from(config.renew_interval.as_secs()).unwrap_or(i32::MAX);
    // The whole spec, as Gardener's controller sets it: what another writer left is cleared.
    let spec = json!({
        "holderIdentity": config.holder_identity,
        "leaseDurationSeconds": duration,
        "renewTime": MicroTime(now),
        "acquireTime": null,
        "leaseTransitions": null,
        "preferredHolder": null,
        "strategy": null,
    });
    let body = Patch::Merge(json!({"spec": spec}));
    let params = PatchParams::default();
    let patch = || leases.patch(HEARTBEAT_LEASE, &params, &body);
    if leases.get_opt(HEARTBEAT_LEASE).await?.is_some() {
        return patch().await;
    }
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": HEARTBEAT_LEASE, "namespace": config.namespace},
        "spec": spec,
    }))
    .map_err(kube::Error::SerdeError)?;
    match leases.create(&PostParams::default(), &lease).await {
        // Another replica created it in between: renew that one.
        Err(kube::Error::Api(status)) if status.code == 409 => patch().await,
        other => other,
    }
}

/// Renews the Lease every interval until `stop` is cancelled. A failed renewal is retried with
/// backoff within the interval and logged; the next interval starts afresh either way.
pub async fn run(client: Client, config: HeartbeatConfig, stop: CancellationToken) {
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(config.renew_interval / 4)
        .with_max_times(4)
        .with_jitter();
    loop {
        let renewed = (|| renew(&client, &config, Timestamp::now()))
            .retry(backoff)
            .notify(|e, delay| {
                tracing::debug!(error = %e, ?delay, "retrying the heartbeat Lease renewal");
            });
        tokio::select! {
            () = stop.cancelled() => return,
            result = renewed => match result {
                Ok(lease) => tracing::trace!(lease = %lease.name_any(), "heartbeat renewed"),
                Err(e) => tracing::warn!(
                    error = %e,
                    namespace = %config.namespace,
                    "cannot renew the heartbeat Lease {HEARTBEAT_LEASE}; gardenlet reports the shoots' extension conditions Unknown after 5 minutes without one"
                ),
            },
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(config.renew_interval) => {}
        }
    }
}
