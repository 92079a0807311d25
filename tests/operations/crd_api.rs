//! The CRDs against a real kube-apiserver: installation, round trips through the status
//! subresource, printer columns, and schema validation.

use crate::support::fixtures::svm;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use ontap_operator::api::{StorageVirtualMachine, StorageVirtualMachineStatus, SvmPhase};
use serde_json::json;

#[tokio::test]
async fn project_crds_are_established() {
    let env = crate::support::env().await;
    let api: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    for crd in ontap_operator::manifests::crds().unwrap() {
        let name = crd.metadata.name.unwrap();
        let served = api.get(&name).await.unwrap();
        let conditions = served.status.unwrap().conditions.unwrap_or_default();
        for wanted in ["Established", "NamesAccepted"] {
            assert!(
                conditions
                    .iter()
                    .any(|c| c.type_ == wanted && c.status == "True"),
                "{name} is not {wanted}: {conditions:?}"
            );
        }
    }
}

#[tokio::test]
async fn svm_round_trips_and_status_writes_keep_the_generation() {
    let env = crate::support::env().await;
    let api: Api<StorageVirtualMachine> = Api::namespaced(env.client.clone(), &env.namespace);
    let svm: StorageVirtualMachine = svm("round-trip").build();
    let created = api.create(&PostParams::default(), &svm).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.spec, svm.spec,
        "defaults must not change what we sent"
    );

    let fetched = api.get("round-trip").await.unwrap();
    assert_eq!(fetched.spec.data_lifs[0].ip, "192.0.2.11");
    assert!(fetched.status.is_none());

    let status = StorageVirtualMachineStatus {
        svm_name: Some("svm_round_trip".into()),
        phase: Some(SvmPhase::Provisioning),
        observed_generation: Some(1),
        ..Default::default()
    };
    let patched = api
        .patch_status(
            "round-trip",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.status.as_ref().and_then(|s| s.phase),
        Some(SvmPhase::Provisioning)
    );
    assert_eq!(
        patched.metadata.generation,
        Some(1),
        "a status write must not bump the generation"
    );

    // Status sent through the main resource is ignored: the subresource is the only way in.
    let mut via_main = api.get("round-trip").await.unwrap();
    via_main.status.as_mut().unwrap().phase = Some(SvmPhase::Failed);
    let replaced = api
        .replace("round-trip", &PostParams::default(), &via_main)
        .await
        .unwrap();
    assert_eq!(
        replaced.status.and_then(|s| s.phase),
        Some(SvmPhase::Provisioning)
    );

    // A spec change does bump it.
    let respec = api
        .patch(
            "round-trip",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "secretName": "other" } })),
        )
        .await
        .unwrap();
    assert_eq!(respec.metadata.generation, Some(2));
}

#[tokio::test]
async fn printer_columns_come_back_in_a_table_request() {
    let env = crate::support::env().await;
    let api: Api<StorageVirtualMachine> = Api::namespaced(env.client.clone(), &env.namespace);
    let svm: StorageVirtualMachine = svm("columns").build();
    api.create(&PostParams::default(), &svm).await.unwrap();
    let status = json!({ "status": {
        "svmName": "svm_columns", "phase": "Ready", "uuid": "0d3c2f6e-1111-2222-3333-444455556666",
        "secretRef": "columns-svm-credentials",
        "conditions": [{ "type": "Ready", "status": "True", "reason": "Verified", "message": "",
                         "lastTransitionTime": "2026-01-01T00:00:00Z" }]
    }});
    api.patch_status("columns", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();

    // What `kubectl get svm -o wide` asks for.
    let table = crate::support::table(
        &env.client,
        &format!(
            "/apis/ontap.storage.dev/v1alpha1/namespaces/{}/storagevirtualmachines",
            env.namespace
        ),
    )
    .await;
    assert_eq!(table["kind"], "Table");
    let columns: Vec<(&str, i64)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["priority"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("Name", 0),
            ("SVM", 0),
            ("Phase", 0),
            ("Ready", 0),
            ("Secret", 0),
            ("Age", 0),
            ("UUID", 1),
            ("Role", 1),
            ("Usage", 1),
            ("Step", 1),
            ("Reason", 1),
            ("Attempts", 1),
            ("Trace", 1),
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "columns");
    assert_eq!(cells[1], "svm_columns");
    assert_eq!(cells[2], "Ready");
    assert_eq!(cells[3], "True");
    assert_eq!(cells[4], "columns-svm-credentials");
    assert_eq!(cells[6], "0d3c2f6e-1111-2222-3333-444455556666");
}

#[tokio::test]
async fn schema_violations_are_rejected_naming_the_field() {
    let env = crate::support::env().await;
    let api: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &env.namespace,
        &kube::api::ApiResource::erase::<StorageVirtualMachine>(&()),
    );
    let cases = [
        (
            "/spec/deletionPolicy",
            json!("Sometimes"),
            "spec.deletionPolicy",
        ),
        ("/spec/dataLifs", json!([]), "spec.dataLifs"),
        (
            "/spec/managementLif/prefixLength",
            json!(200),
            "spec.managementLif.prefixLength",
        ),
        ("/spec/svmName", json!("x".repeat(48)), "spec.svmName"),
    ];
    for (i, (pointer, bad, field)) in cases.into_iter().enumerate() {
        let mut manifest = svm(&format!("invalid-{i}")).json();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        manifest
            .pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert(key.to_string(), bad);
        let object: DynamicObject = serde_json::from_value(manifest).unwrap();
        let err = api
            .create(&PostParams::default(), &object)
            .await
            .unwrap_err();
        match err {
            kube::Error::Api(status) => {
                assert_eq!(status.code, 422, "{pointer}: {status:?}");
                assert!(
                    status.message.contains(field),
                    "{pointer}: message does not name {field}: {}",
                    status.message
                );
            }
            other => panic!("{pointer}: expected a 422 from the API server, got {other:?}"),
        }
    }
}
