//! No password leaves the operator anywhere but in the seed Secrets: not in its log (at debug
//! level), Events, object statuses, metrics, probes or the traces exported to a real Jaeger —
//! raw, base64-encoded, or inside a Basic authorization header.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::support::jaeger::Jaeger;
use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;

const WITHIN: Duration = Duration::from_secs(60);

/// Every form a password (with its user) could leak in.
fn needles(user: &str, password: &str) -> Vec<(String, String)> {
    vec![
        ("raw".into(), password.to_owned()),
        ("base64".into(), STANDARD.encode(password)),
        (
            "Basic header".into(),
            STANDARD.encode(format!("{user}:{password}")),
        ),
    ]
}

#[tokio::test]
async fn no_password_appears_in_logs_events_status_metrics_probes_or_traces() {
    let jaeger = Jaeger::start();
    let world = SvmWorld::with_env(
        fast_mock(),
        &["--log-format=json"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &jaeger.otlp_endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "500"),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;
    let admin = world.mock.server.admin();
    let mut secrets = vec![(admin.user.clone(), admin.password.clone())];

    world.create_svm("scanned", 0).await;
    world.wait_ready("scanned", WITHIN).await;
    let (user, first, _) = world
        .seed_credentials("scanned-svm-credentials")
        .await
        .unwrap();
    secrets.push((user.clone(), first.clone()));
    // A lost seed Secret makes the operator set and publish a new password: a second password
    // goes over the wire, in a PATCH as well as in verifications.
    world
        .secrets()
        .delete("scanned-svm-credentials", &Default::default())
        .await
        .unwrap();
    let second = crate::support::poll("a new seed Secret", WITHIN, async || {
        match world.seed_credentials("scanned-svm-credentials").await {
            Some((_, password, _)) if password != first => Ok(password),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    secrets.push((user, second));
    world.wait_ready("scanned", WITHIN).await;

    let mut haystacks: Vec<(&str, String)> = vec![("operator log", world.operator.logs())];
    let events: Api<Event> = Api::namespaced(world.env.client.clone(), &world.env.namespace);
    let events = events.list(&ListParams::default()).await.unwrap();
    haystacks.push(("Events", serde_json::to_string(&events.items).unwrap()));
    let svms = world.svms().list(&ListParams::default()).await.unwrap();
    haystacks.push((
        "StorageVirtualMachines",
        serde_json::to_string(&svms.items).unwrap(),
    ));
    let clusters = world.clusters().get(&world.cluster).await.unwrap();
    haystacks.push(("OntapCluster", serde_json::to_string(&clusters).unwrap()));
    haystacks.push(("/metrics", world.operator.metrics_text().await));
    haystacks.push(("/readyz", world.operator.readyz().await.unwrap().1));
    haystacks.push(("/healthz", world.operator.healthz().await.unwrap().1));
    let traces = jaeger
        .wait_for("ontap-operator", None, WITHIN, |traces| {
            // Spans of ONTAP requests exist: the traces cover the wire.
            let text = Value::from(traces.to_vec()).to_string();
            text.contains("ontap.request").then_some(text)
        })
        .await;
    haystacks.push(("Jaeger traces", traces));

    for (user, password) in &secrets {
        assert!(password.len() >= 8, "a real password: {password:?}");
        for (form, needle) in needles(user, password) {
            for (place, haystack) in &haystacks {
                assert!(
                    !haystack.contains(&needle),
                    "the {form} form of a password of {user} appears in the {place}"
                );
            }
        }
    }
    // The scan looked at something: the log has debug lines, the traces have request spans.
    assert!(
        haystacks[0].1.contains("DEBUG"),
        "the log is at debug level"
    );
}
