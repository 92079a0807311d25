//! The garden's admission against the real gardener-apiserver: Shoots created and updated
//! through it are admitted or refused by `ontap-operator admission`, running with exactly the
//! rights of its charts (deploy/admission) and registered in the garden as it registers itself; Shoots of other types pass untouched; a webhook that cannot be reached
//! refuses (failurePolicy Fail); certificates are renewed without a refused call.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use crate::support::garden::{AdmissionProcess, Garden};
use crate::support::poll;

const PROJECT: &str = "garden-dev";
const METAL_PROJECT: &str = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";

fn shoots(garden: &Garden) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("core.gardener.cloud", "v1beta1", "Shoot"),
        "shoots",
    );
    Api::namespaced_with(garden.client.clone(), PROJECT, &resource)
}

fn ontap_config(data_lifs: &[&str]) -> Value {
    json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "svm": {
            "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
            "dataLifs": data_lifs.iter().map(|ip| json!({"ip": ip, "prefixLength": 24})).collect::<Vec<_>>(),
        },
    })
}

fn shoot(name: &str, extensions: Value) -> Value {
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
        "metadata": {"name": name, "namespace": PROJECT},
        "spec": {
            "cloudProfile": {"name": "local"},
            "credentialsBindingName": "local",
            "region": "local",
            "kubernetes": {"version": "1.34.4"},
            "networking": {"type": "calico", "nodes": "10.10.0.0/16"},
            "provider": {"type": "local", "workers": [{
                "name": "w", "minimum": 1, "maximum": 1,
                "machine": {"type": "local", "image": {"name": "local", "version": "1.0.0"}},
            }]},
            "extensions": extensions,
        },
    })
}

fn with_ontap(name: &str, config: Value) -> Value {
    shoot(name, json!([{"type": "ontap", "providerConfig": config}]))
}

async fn create(garden: &Garden, object: Value) -> Result<(), String> {
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    shoots(garden)
        .create(&PostParams::default(), &object)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// What the garden answers to a Shoot that must be refused: the webhook's refusal naming `field`.
async fn refused(garden: &Garden, object: Value, field: &str) {
    let name = object["metadata"]["name"].clone();
    let error = create(garden, object)
        .await
        .expect_err(&format!("the Shoot {name} was admitted"));
    assert!(
        error.contains("shoots.admission.ontap.extensions.storage.dev")
            && error.contains(&format!("{field}:")),
        "the refusal of {name} names {field}: {error}"
    );
}

async fn start_admission(garden: &Garden, args: &[&str]) -> AdmissionProcess {
    let identity = garden.admission_identity("garden").await;
    let process = AdmissionProcess::spawn(&identity, "garden", args);
    poll(
        "the admission is ready",
        Duration::from_secs(30),
        async || (process.readyz().await == Some(200)).then_some(()),
    )
    .await;
    process
}

/// Patches the Shoot's status as gardenlet does once it has reconciled the shoot.
async fn reconciled(garden: &Garden, name: &str) {
    shoots(garden)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastOperation": {
                "type": "Reconcile", "state": "Succeeded", "progress": 100,
                "description": "reconciled", "lastUpdateTime": "2026-11-28T10:00:00Z",
            }}})),
        )
        .await
        .unwrap();
}

async fn update(garden: &Garden, name: &str, extensions: Value) -> Result<(), String> {
    shoots(garden)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"extensions": extensions}})),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_shoot_owners_mistake_is_refused_by_the_garden() {
    let garden = Garden::start().await;
    let admission = start_admission(&garden, &[]).await;

    create(&garden, with_ontap("good", ontap_config(&["192.0.2.11"])))
        .await
        .unwrap();

    refused(
        &garden,
        with_ontap("bad-address", ontap_config(&["192.0.2.11", "192.0.2.300"])),
        "spec.extensions[0].providerConfig.svm.dataLifs[1].ip",
    )
    .await;
    refused(
        &garden,
        with_ontap("twice", ontap_config(&["192.0.2.11", "192.0.2.11"])),
        "spec.extensions[0].providerConfig.svm.dataLifs[1]",
    )
    .await;
    let mut prefix = ontap_config(&["192.0.2.11"]);
    prefix["svm"]["dataLifs"][0]["prefixLength"] = json!(33);
    refused(
        &garden,
        with_ontap("prefix", prefix),
        "spec.extensions[0].providerConfig.svm.dataLifs[0].prefixLength",
    )
    .await;
    let mut typo = ontap_config(&["192.0.2.11"]);
    typo["svm"]["protocol"] = json!(["nfs"]);
    refused(
        &garden,
        with_ontap("typo", typo),
        "spec.extensions[0].providerConfig.svm.protocol",
    )
    .await;
    let mut class = ontap_config(&["192.0.2.11"]);
    class["storageClasses"] = json!([{"name": "files", "protocol": "nfs"}]);
    refused(
        &garden,
        with_ontap("class", class),
        "spec.extensions[0].providerConfig.storageClasses[0].protocol",
    )
    .await;
    let mut image = ontap_config(&["192.0.2.11"]);
    image["trident"] = json!({"operatorImage": "elsewhere.example/trident-operator:1"});
    refused(
        &garden,
        with_ontap("image", image),
        "spec.extensions[0].providerConfig.trident.operatorImage",
    )
    .await;
    let trident = json!({
        "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
        "svmIpaddresses": {"managementLif": "192.0.2.20", "dataLifs": ["192.0.2.21"], "dataLIFs": []},
    });
    refused(
        &garden,
        with_ontap("metal-typo", trident),
        "spec.extensions[0].providerConfig.svmIpaddresses.dataLIFs",
    )
    .await;
    // The project annotation against provider-metal's projectID, in the second entry.
    let metal = json!({
        "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
        "svmIpaddresses": {"managementLif": "192.0.2.20", "dataLifs": ["192.0.2.21"]},
    });
    let mut disagreeing = shoot(
        "metal",
        json!([{"type": "registry-cache"}, {"type": "ontap", "providerConfig": metal}]),
    );
    disagreeing["metadata"]["annotations"] =
        json!({"cluster.metal-stack.io/project": METAL_PROJECT});
    disagreeing["spec"]["provider"]["infrastructureConfig"] = json!({"apiVersion": "metal.provider.extensions.gardener.cloud/v1alpha1",
               "kind": "InfrastructureConfig", "projectID": "another-project"});
    refused(
        &garden,
        disagreeing.clone(),
        "metadata.annotations[cluster.metal-stack.io/project]",
    )
    .await;
    disagreeing["spec"]["provider"]["infrastructureConfig"]["projectID"] = json!(METAL_PROJECT);
    create(&garden, disagreeing).await.unwrap();

    // Other types, and the type disabled, pass untouched whatever their configuration says.
    create(
        &garden,
        shoot(
            "other",
            json!([{"type": "registry-cache", "providerConfig": {"not": "ours"}}]),
        ),
    )
    .await
    .unwrap();
    create(
        &garden,
        shoot(
            "disabled",
            json!([{"type": "ontap", "disabled": true, "providerConfig": {"kind": "Nonsense"}}]),
        ),
    )
    .await
    .unwrap();

    // Once gardenlet has reconciled the shoot, what would orphan or move its storage is refused;
    // what adds to it is not.
    reconciled(&garden, "good").await;
    let moved = update(
        &garden,
        "good",
        json!([{"type": "ontap", "providerConfig": ontap_config(&["192.0.2.12"])}]),
    )
    .await
    .expect_err("a data LIF in use was replaced");
    assert!(
        moved.contains("spec.extensions[0].providerConfig.svm.dataLifs:"),
        "{moved}"
    );
    let mut elsewhere = ontap_config(&["192.0.2.11"]);
    elsewhere["cluster"] = json!("another-cluster");
    let moved = update(
        &garden,
        "good",
        json!([{"type": "ontap", "providerConfig": elsewhere}]),
    )
    .await
    .expect_err("the SVM moved to another cluster");
    assert!(
        moved.contains("spec.extensions[0].providerConfig.cluster:"),
        "{moved}"
    );
    update(
        &garden,
        "good",
        json!([{"type": "ontap", "providerConfig": ontap_config(&["192.0.2.11", "192.0.2.12"])}]),
    )
    .await
    .unwrap();
    reconciled(&garden, "metal").await;
    let moved = shoots(&garden)
        .patch(
            "metal",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "cluster.metal-stack.io/project": "0b1f9c3e-aaaa-bbbb-cccc-123456789abd"}}})),
        )
        .await
        .expect_err("a per-project SVM's shoot changed its project");
    assert!(
        moved
            .to_string()
            .contains("metadata.annotations[cluster.metal-stack.io/project]:"),
        "{moved}"
    );
    assert!(
        admission
            .logs()
            .contains("a Shoot's ontap configuration was refused"),
        "{}",
        admission.logs()
    );
}

#[tokio::test]
async fn without_the_webhook_a_shoot_that_enables_the_type_is_refused() {
    let garden = Garden::start().await;
    let mut admission = start_admission(&garden, &[]).await;
    admission.kill();
    let error = create(&garden, with_ontap("down", ontap_config(&["192.0.2.11"])))
        .await
        .expect_err("a Shoot was admitted unchecked while the webhook was down");
    assert!(
        error.contains("failed calling webhook"),
        "the garden says which webhook it could not call: {error}"
    );
    create(&garden, shoot("no-storage", json!([])))
        .await
        .unwrap();

    // A new replica serves the same certificate from the Secret and moves the registration.
    let _admission = start_admission(&garden, &[]).await;
    create(&garden, with_ontap("up", ontap_config(&["192.0.2.11"])))
        .await
        .unwrap();
}

#[tokio::test]
async fn certificates_are_renewed_without_a_refused_call() {
    let garden = Garden::start().await;
    // A CA that lives 24 s is renewed with 8 s left, and signs 2 s after the garden trusts it;
    // serving certificates of 9 s are renewed every 6 s.
    let admission = start_admission(
        &garden,
        &[
            "--ca-validity=24s",
            "--ca-publication-grace=2s",
            "--certificate-validity=9s",
            "--certificate-check-period=1s",
        ],
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(garden.client.clone(), "garden");
    let read = async || {
        let secret = secrets
            .get("gardener-extension-ontap-admission-tls")
            .await
            .unwrap();
        let data = secret.data.unwrap();
        (data["ca.crt"].0.clone(), data["tls.crt"].0.clone())
    };
    let (first_ca, first_cert) = read().await;
    let mut cas = std::collections::BTreeSet::from([first_ca]);
    let mut certs = std::collections::BTreeSet::from([first_cert]);
    let mut calls = 0;
    let until = std::time::Instant::now() + Duration::from_secs(26);
    while std::time::Instant::now() < until {
        // A server-side dry run goes through every admission webhook and stores nothing.
        let object: DynamicObject = serde_json::from_value(with_ontap(
            &format!("rotation-{calls}"),
            ontap_config(&["192.0.2.11"]),
        ))
        .unwrap();
        shoots(&garden)
            .create(
                &PostParams {
                    dry_run: true,
                    ..PostParams::default()
                },
                &object,
            )
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "call {calls} was refused during a renewal: {e}\n{}",
                    admission.logs()
                )
            });
        calls += 1;
        let (ca, cert) = read().await;
        cas.insert(ca);
        certs.insert(cert);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        cas.len() >= 2 && certs.len() >= 3,
        "{} CAs and {} serving certificates over {calls} admitted calls",
        cas.len(),
        certs.len()
    );
}
