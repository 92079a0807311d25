//! Tenancy and trust (issue 11, item 8): which Secrets an OntapCluster may make the operator
//! read, which namespaces may use a cluster, who holds a contested SVM name or LIF address, and
//! how the cluster's certificate is trusted.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Namespace, Secret};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use ontap_client::CertificateFingerprint;
use ontap_operator::api::OntapCluster;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

use crate::support::fixtures::ontap_cluster;
use crate::support::poll;
use crate::support::svm::SvmWorld;

const WITHIN: Duration = Duration::from_secs(60);

/// Waits until the OntapCluster's condition `type_` has `status` and `reason`.
async fn wait_cluster_condition(
    world: &SvmWorld,
    cluster: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> OntapCluster {
    poll(
        &format!("{cluster}: {type_}={status} ({reason})"),
        WITHIN,
        async || {
            let found = world
                .clusters()
                .get(cluster)
                .await
                .map_err(|e| e.to_string())?;
            let conditions = found
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default();
            conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == status && c.reason == reason)
                .then_some(found.clone())
                .ok_or_else(|| format!("{conditions:?}"))
        },
    )
    .await
}

/// Waits until the SVM object's condition `type_` is `False` with `reason`.
async fn wait_svm_refused(world: &SvmWorld, name: &str, type_: &str, reason: &str) -> String {
    world
        .refused_in(&world.env.namespace, name, type_, reason)
        .await
}

fn secret(namespace: &str, name: &str, data: Value) -> Secret {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "stringData": data,
    }))
    .unwrap()
}

/// A cluster of this world (same endpoint, same operator) named `suffix`, built by `build`.
async fn create_cluster(
    world: &SvmWorld,
    suffix: &str,
    build: impl FnOnce(Value) -> Value,
) -> String {
    let ns = &world.env.namespace;
    let name = format!("{}-{suffix}", world.cluster);
    let manifest = ontap_cluster(&name)
        .endpoint(&world.mock.base_url())
        .credentials(ns, "ontap-admin")
        .label("ontap-test", ns)
        .json();
    let object: OntapCluster = serde_json::from_value(build(manifest)).unwrap();
    world
        .clusters()
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    name
}

/// An OntapCluster naming a Secret of another namespace gets nothing from it: the operator
/// refuses before reading, and no request carrying it reaches any endpoint.
#[tokio::test]
async fn a_cluster_cannot_make_the_operator_read_secrets_of_other_namespaces() {
    let world = SvmWorld::start().await;
    let other = format!("{}-victim", world.env.namespace);
    Api::<Namespace>::all(world.env.client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(other.clone()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
    Api::<Secret>::namespaced(world.env.client.clone(), &other)
        .create(
            &PostParams::default(),
            &secret(
                &other,
                "database",
                json!({"username": "victim-user", "password": "victim-password"}),
            ),
        )
        .await
        .unwrap();
    let cluster = create_cluster(&world, "thief", |mut m| {
        m["spec"]["credentialsSecretRef"] = json!({"namespace": other, "name": "database"});
        m["spec"]["caSecretRef"] = json!({"namespace": world.env.namespace, "name": "ontap-ca"});
        m
    })
    .await;
    let refused = wait_cluster_condition(
        &world,
        &cluster,
        "Connected",
        "False",
        "SecretNamespaceNotAllowed",
    )
    .await;
    let message = refused
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Connected")
        .unwrap()
        .message;
    assert!(
        message.contains(&world.env.namespace) && message.contains("--credentials-namespace"),
        "the condition says where credentials may live: {message}"
    );
    assert!(
        world
            .mock
            .requests(&[("user", "victim-user")])
            .await
            .is_empty(),
        "the victim's credentials were sent to ONTAP"
    );
    assert!(
        !world.operator.logs().contains("victim-password"),
        "the victim's password reached the log"
    );
}

/// insecureSkipTLSVerify works but shows where users look: a `TLSVerified=False` condition and
/// a Warning Event, while the cluster stays Ready. Pinning the certificate's fingerprint is the
/// safe answer: it connects; a wrong pin does not.
#[tokio::test]
async fn tls_trust_shows_on_the_cluster_and_a_pinned_fingerprint_is_enforced() {
    let world = SvmWorld::start().await;

    let insecure = create_cluster(&world, "insecure", |mut m| {
        m["spec"]["insecureSkipTLSVerify"] = json!(true);
        m
    })
    .await;
    wait_cluster_condition(&world, &insecure, "Ready", "True", "Succeeded").await;
    wait_cluster_condition(
        &world,
        &insecure,
        "TLSVerified",
        "False",
        "InsecureSkipTLSVerify",
    )
    .await;
    let events: Api<Event> = Api::all(world.env.client.clone());
    poll(
        "a Warning Event about the insecure cluster",
        WITHIN,
        async || {
            let list = events
                .list(&ListParams::default().fields(&format!("involvedObject.name={insecure}")))
                .await
                .map_err(|e| e.to_string())?;
            list.items
                .iter()
                .any(|e| {
                    e.type_.as_deref() == Some("Warning")
                        && e.reason.as_deref() == Some("InsecureSkipTLSVerify")
                })
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "{:?}",
                        list.items.iter().map(|e| &e.reason).collect::<Vec<_>>()
                    )
                })
        },
    )
    .await;

    let der =
        CertificateDer::from_pem_slice(world.mock.server.cert_pem().unwrap().as_bytes()).unwrap();
    let fingerprint = CertificateFingerprint::of(&der).to_string();
    let pinned = create_cluster(&world, "pinned", |mut m| {
        m["spec"]["caFingerprint"] = json!(fingerprint);
        m
    })
    .await;
    wait_cluster_condition(&world, &pinned, "Ready", "True", "Succeeded").await;
    wait_cluster_condition(&world, &pinned, "TLSVerified", "True", "PinnedFingerprint").await;

    let wrong = create_cluster(&world, "wrong-pin", |mut m| {
        m["spec"]["caFingerprint"] = json!("00".repeat(32));
        m
    })
    .await;
    wait_cluster_condition(&world, &wrong, "Connected", "False", "ClusterUnreachable").await;

    // Without any trust setting the system store applies, which does not know the mock's CA.
    let system = create_cluster(&world, "system", |m| m).await;
    wait_cluster_condition(&world, &system, "TLSVerified", "True", "SystemTrustStore").await;
    wait_cluster_condition(&world, &system, "Connected", "False", "ClusterUnreachable").await;

    // Turning verification back on clears the warning.
    world
        .clusters()
        .patch(
            &insecure,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"insecureSkipTLSVerify": false, "caFingerprint": fingerprint}}),
            ),
        )
        .await
        .unwrap();
    wait_cluster_condition(
        &world,
        &insecure,
        "TLSVerified",
        "True",
        "PinnedFingerprint",
    )
    .await;
}

/// A cluster's namespaceSelector keeps other namespaces' SVMs off it, before anything reaches
/// ONTAP; labelling the namespace lets them on.
#[tokio::test]
async fn a_namespace_selector_decides_who_may_use_a_cluster() {
    let world = SvmWorld::start().await;
    let ns = world.env.namespace.clone();
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"namespaceSelector": {"matchLabels": {"ontap-tenant": "granted"}}}})),
        )
        .await
        .unwrap();
    world.create_svm("outsider", 1).await;
    let why = wait_svm_refused(&world, "outsider", "ClusterReady", "NamespaceNotAllowed").await;
    assert!(
        why.contains(&ns) && why.contains("namespaceSelector"),
        "{why}"
    );
    let (_, _, phase) = world.readiness("outsider").await;
    assert_eq!(phase.as_deref(), Some("Failed"));
    assert_eq!(
        world.mock.sent("POST", "/api/svm/svms").await,
        0,
        "nothing was created for a namespace the cluster does not admit"
    );

    Api::<Namespace>::all(world.env.client.clone())
        .patch(
            &ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"ontap-tenant": "granted"}}})),
        )
        .await
        .unwrap();
    world.wait_ready("outsider", WITHIN).await;
}

/// Two objects asking for the same LIF address or SVM name: the one created first gets it, the
/// other is refused with a condition and ONTAP never sees its request.
#[tokio::test]
async fn the_first_object_keeps_a_contested_address_or_name() {
    let world = SvmWorld::start().await;
    world.create_svm("first", 1).await;
    world.wait_ready("first", WITHIN).await;
    let svm_name = world
        .svms()
        .get("first")
        .await
        .unwrap()
        .status
        .unwrap()
        .svm_name
        .unwrap();

    // The same management address as `first`, under another name.
    let mut same_address = world.svm("address-squatter", 1).build();
    same_address.spec.svm_name = Some(format!("{svm_name}x"));
    world
        .svms()
        .create(&PostParams::default(), &same_address)
        .await
        .unwrap();
    let why = wait_svm_refused(
        &world,
        "address-squatter",
        "ClusterReady",
        "ClaimedByAnother",
    )
    .await;
    assert!(
        why.contains("LIF address") && !why.contains("first"),
        "says what is taken, not by whom: {why}"
    );

    // The same SVM name, addresses of its own.
    let mut same_name = world.svm("name-squatter", 2).build();
    same_name.spec.svm_name = Some(svm_name.clone());
    world
        .svms()
        .create(&PostParams::default(), &same_name)
        .await
        .unwrap();
    let why = wait_svm_refused(&world, "name-squatter", "ClusterReady", "ClaimedByAnother").await;
    assert!(why.contains(&svm_name), "{why}");

    assert_eq!(
        world.mock.sent("POST", "/api/svm/svms").await,
        1,
        "only the first object's SVM was created"
    );
    // The holder is untouched.
    world.wait_ready("first", WITHIN).await;
}
