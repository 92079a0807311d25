//! The heartbeat Lease against a real API server: created, renewed as Gardener's heartbeat
//! controller renews it, and the renewal loop stops when told.

use std::time::Duration;

use crate::support::poll;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use ontap_operator::extension::heartbeat::{HEARTBEAT_LEASE, HeartbeatConfig, renew, run};
use tokio_util::sync::CancellationToken;

fn config(namespace: &str, interval: Duration) -> HeartbeatConfig {
    HeartbeatConfig {
        namespace: namespace.to_string(),
        holder_identity: "extension-ontap".into(),
        renew_interval: interval,
    }
}

fn renew_time(lease: &Lease) -> Timestamp {
    lease.spec.as_ref().unwrap().renew_time.clone().unwrap().0
}

#[tokio::test]
async fn lease_is_created_then_renewed_with_gardeners_fields() {
    let env = crate::support::env().await;
    let config = config(&env.namespace, Duration::from_secs(30));
    let first: Timestamp = "2026-03-01T10:00:00.250Z".parse().unwrap();
    renew(&env.client, &config, first).await.unwrap();

    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &env.namespace);
    let lease = leases.get(HEARTBEAT_LEASE).await.unwrap();
    let spec = lease.spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("extension-ontap"));
    assert_eq!(spec.lease_duration_seconds, Some(30));
    assert_eq!(
        renew_time(&lease),
        first,
        "MicroTime keeps the sub-second part"
    );

    // Someone else's fields do not survive a renewal, as with Gardener's whole-spec write.
    leases
        .patch(
            HEARTBEAT_LEASE,
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({"spec": {"holderIdentity": "other", "leaseTransitions": 3}}),
            ),
        )
        .await
        .unwrap();
    let second: Timestamp = "2026-03-01T10:00:30.5Z".parse().unwrap();
    renew(&env.client, &config, second).await.unwrap();
    let spec = leases.get(HEARTBEAT_LEASE).await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("extension-ontap"));
    assert_eq!(spec.lease_transitions, None);
    assert_eq!(spec.renew_time.unwrap().0, second);
}

#[tokio::test]
async fn run_renews_every_interval_until_stopped() {
    let env = crate::support::env().await;
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(
        env.client.clone(),
        config(&env.namespace, Duration::from_secs(1)),
        stop.clone(),
    ));
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &env.namespace);
    let mut seen = Vec::new();
    poll("three renewals", Duration::from_secs(20), async || {
        if let Some(lease) = leases.get_opt(HEARTBEAT_LEASE).await.unwrap() {
            let t = renew_time(&lease);
            if seen.last() != Some(&t) {
                seen.push(t);
            }
        }
        (seen.len() >= 3)
            .then_some(())
            .ok_or_else(|| format!("renewals seen: {seen:?}"))
    })
    .await;
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the heartbeat stops when cancelled")
        .unwrap();
}
