//! Shoot delivery through the real gardener-resource-manager: ManagedResources in the seed, built
//! as Gardener's `managedresources.CreateForShoot` builds them, put a Secret, a
//! TridentBackendConfig and a StorageClass into a second control plane playing the shoot.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::gardener::{Gardener, condition};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

/// What the operator puts into a shoot, in miniature: the SVM credentials, the backend using
/// them and a StorageClass selecting that backend.
fn shoot_objects(suffix: &str) -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": format!("ontap-svm-{suffix}"), "namespace": "kube-system" },
            "type": "Opaque",
            "stringData": { "username": "shoot-a", "password": "not-a-real-password-1" }
        }),
        json!({
            "apiVersion": "trident.netapp.io/v1",
            "kind": "TridentBackendConfig",
            "metadata": { "name": format!("ontap-{suffix}"), "namespace": "kube-system" },
            "spec": {
                "version": 1,
                "storageDriverName": "ontap-san",
                "sanType": "nvme",
                "managementLIF": "192.0.2.10",
                "credentials": { "name": format!("ontap-svm-{suffix}") }
            }
        }),
        json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": { "name": format!("ontap-gold-{suffix}") },
            "provisioner": "csi.trident.netapp.io",
            "parameters": { "backendType": "ontap-san", "fsType": "ext4" },
            "allowVolumeExpansion": true
        }),
    ]
}

/// The Secret and ManagedResource pair Gardener's helpers create for the shoot: an immutable,
/// garbage-collectable Opaque Secret holding one manifest per key, created first, then the MR
/// without a class (served by the shoot's resource manager).
async fn deliver(g: &Gardener, name: &str, keep_objects: bool, objects: &[Value]) {
    let data: BTreeMap<String, ByteString> = objects
        .iter()
        .map(|o| {
            let key = format!(
                "{}__{}__{}.yaml",
                o["kind"].as_str().unwrap().to_lowercase(),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap()
            );
            (
                key,
                ByteString(serde_yaml::to_string(o).unwrap().into_bytes()),
            )
        })
        .collect();
    let secret_name = format!("managedresource-{name}");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": secret_name,
            "labels": { "resources.gardener.cloud/garbage-collectable-reference": "true" }
        },
        "type": "Opaque",
        "immutable": true,
    }))
    .unwrap();
    let secret = Secret {
        data: Some(data),
        ..secret
    };
    Api::<Secret>::namespaced(g.seed.clone(), &g.namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let mr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": { "name": name, "labels": { "origin": "ontap-operator-tests" } },
        "spec": {
            "secretRefs": [ { "name": secret_name } ],
            "keepObjects": keep_objects,
            "injectLabels": { "shoot.gardener.cloud/no-cleanup": "true" }
        }
    }))
    .unwrap();
    g.managed_resources()
        .create(&PostParams::default(), &mr)
        .await
        .unwrap();
}

async fn exists<K>(api: &Api<K>, name: &str) -> bool
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.unwrap().is_some()
}

fn backend_configs(g: &Gardener) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "trident.netapp.io",
        "v1",
        "TridentBackendConfig",
    ));
    Api::namespaced_with(g.shoot.clone(), "kube-system", &resource)
}

/// The MR's status once it is current, applied and healthy.
async fn wait_applied_and_healthy(g: &Gardener, name: &str) -> DynamicObject {
    g.eventually(
        &format!("ManagedResource {name} Applied and Healthy"),
        TIMEOUT,
        || async {
            let mr = g.managed_resources().get_opt(name).await.unwrap()?;
            let current =
                mr.data["status"]["observedGeneration"].as_i64() == mr.metadata.generation;
            (current
                && condition(&mr, "ResourcesApplied").as_deref() == Some("True")
                && condition(&mr, "ResourcesHealthy").as_deref() == Some("True"))
            .then_some(mr)
        },
    )
    .await
}

struct InShoot {
    secret: Option<Secret>,
    backend: Option<DynamicObject>,
    class: Option<StorageClass>,
}

async fn in_shoot(g: &Gardener, suffix: &str) -> InShoot {
    InShoot {
        secret: Api::<Secret>::namespaced(g.shoot.clone(), "kube-system")
            .get_opt(&format!("ontap-svm-{suffix}"))
            .await
            .unwrap(),
        backend: backend_configs(g)
            .get_opt(&format!("ontap-{suffix}"))
            .await
            .unwrap(),
        class: Api::<StorageClass>::all(g.shoot.clone())
            .get_opt(&format!("ontap-gold-{suffix}"))
            .await
            .unwrap(),
    }
}

async fn delete_and_wait_gone(g: &Gardener, name: &str) {
    g.managed_resources()
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    if let Err(why) = crate::support::gone(&g.managed_resources(), name, TIMEOUT).await {
        panic!(
            "ManagedResource {name} not gone: {why}\n{}",
            g.grm_log_tail()
        );
    }
}

#[tokio::test]
async fn managed_resource_applies_secret_backend_and_storage_class_to_the_shoot() {
    let g = Gardener::start().await;
    deliver(&g, "trident-backends", false, &shoot_objects("a")).await;

    let mr = wait_applied_and_healthy(&g, "trident-backends").await;
    let listed = mr.data["status"]["resources"].as_array().unwrap().len();
    assert_eq!(listed, 3, "status.resources: {}", mr.data["status"]);

    let shoot = in_shoot(&g, "a").await;
    let secret = shoot.secret.expect("the credentials Secret in the shoot");
    assert_eq!(
        secret.data.unwrap()["password"].0,
        b"not-a-real-password-1".to_vec()
    );
    let labels = secret.metadata.labels.unwrap_or_default();
    assert_eq!(labels["shoot.gardener.cloud/no-cleanup"], "true");
    assert_eq!(labels["resources.gardener.cloud/managed-by"], "gardener");
    let backend = shoot
        .backend
        .expect("the TridentBackendConfig in the shoot");
    assert_eq!(backend.data["spec"]["sanType"], "nvme");
    assert_eq!(backend.data["spec"]["credentials"]["name"], "ontap-svm-a");
    let class = shoot.class.expect("the StorageClass in the shoot");
    assert_eq!(class.provisioner, "csi.trident.netapp.io");

    // Without keepObjects, deleting the ManagedResource takes its objects out of the shoot.
    delete_and_wait_gone(&g, "trident-backends").await;
    let shoot = in_shoot(&g, "a").await;
    assert!(shoot.secret.is_none() && shoot.backend.is_none() && shoot.class.is_none());
}

#[tokio::test]
async fn keep_objects_leaves_the_objects_in_the_shoot_when_the_managed_resource_goes() {
    let g = Gardener::start().await;
    deliver(&g, "trident-init", true, &shoot_objects("b")).await;
    wait_applied_and_healthy(&g, "trident-init").await;

    delete_and_wait_gone(&g, "trident-init").await;
    let shoot = in_shoot(&g, "b").await;
    assert!(
        shoot.secret.is_some() && shoot.backend.is_some() && shoot.class.is_some(),
        "keepObjects: the shoot's objects stay when the ManagedResource is deleted"
    );
}

/// The operator's own rendering of the shoot delivery (metal-stack's layout), applied as the
/// controller will apply it: each Secret first, then its ManagedResource.
#[tokio::test]
async fn rendered_shoot_delivery_lands_in_the_shoot_and_survives_migration() {
    use kube::api::{Patch, PatchParams};
    use ontap_operator::extension::api::ManagedResource;
    use ontap_operator::extension::config::{ConfigDefaults, parse_provider_config};
    use ontap_operator::extension::shoot::{
        KEEP_OBJECTS_PATCH, MANAGED_RESOURCE_NAMES, ShootCredentials, ShootImages, ShootInputs,
        shoot_delivery,
    };
    use secrecy::SecretString;

    let g = Gardener::start().await;
    let config = parse_provider_config(
        Some(&json!({
            "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
            "svmIpaddresses": {"managementLif": "10.130.0.10", "dataLifs": ["10.130.0.11"]}
        })),
        &ConfigDefaults::default(),
    )
    .unwrap();
    let credentials = ShootCredentials {
        username: "web-a".into(),
        password: SecretString::from("q\"uo: te#d'"),
    };
    let images = ShootImages::embedded().unwrap();
    let svm = "p0b1f9c3eaaaabbbbcccc123456789abc";
    let secret_name = format!("{svm}-test--web-a-credentials");
    let inputs = ShootInputs {
        config: &config,
        svm_name: svm,
        secret_name: &secret_name,
        credentials: &credentials,
        images: &images,
        trident_api: ontap_operator::ontap::trident_api::TridentApi::Rest,
        node_cidrs: &[],
    };
    let mrs: Api<ManagedResource> = Api::namespaced(g.seed.clone(), &g.namespace);
    for bundle in shoot_delivery(&g.namespace, &inputs, false).unwrap() {
        Api::<Secret>::namespaced(g.seed.clone(), &g.namespace)
            .create(&PostParams::default(), &bundle.secret)
            .await
            .unwrap();
        mrs.create(&PostParams::default(), &bundle.managed_resource)
            .await
            .unwrap();
    }

    // The Trident operator's Deployment and DaemonSet never roll out on a control plane
    // without nodes, so trident-init is applied but cannot be healthy; the rest is both.
    for name in MANAGED_RESOURCE_NAMES {
        g.eventually(&format!("{name} applied"), TIMEOUT, || async {
            let mr = mrs.get(name).await.unwrap();
            let status = mr.status.clone()?;
            let applied = status.observed_generation == mr.metadata.generation
                && status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "ResourcesApplied" && c.status == "True");
            let healthy = name == "trident-init" || mr.check_healthy().is_ok();
            (applied && healthy).then_some(())
        })
        .await;
    }

    let secret = Api::<Secret>::namespaced(g.shoot.clone(), "kube-system")
        .get(&secret_name)
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["password"].0, b"q\"uo: te#d'".to_vec());
    let backend = backend_configs(&g)
        .get(&format!("ontap-{svm}-backend"))
        .await
        .unwrap();
    assert_eq!(
        backend.data["spec"]["credentials"]["name"],
        secret_name.as_str()
    );
    let classes = Api::<StorageClass>::all(g.shoot.clone());
    let gold = classes.get("ontap-gold").await.unwrap();
    assert_eq!(gold.parameters.unwrap()["selector"], "luks=false");
    assert!(exists(&classes, "ontap-encrypted").await);
    let orchestrators = Api::<DynamicObject>::all_with(
        g.shoot.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "trident.netapp.io",
            "v1",
            "TridentOrchestrator",
        )),
    );
    assert_eq!(
        orchestrators.get("trident").await.unwrap().data["spec"]["namespace"],
        "kube-system"
    );
    let deployments =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(g.shoot.clone(), "kube-system");
    assert!(exists(&deployments, "trident-operator").await);

    // Migration: keepObjects first, then the ManagedResources go and the shoot keeps everything.
    let patch: Value = serde_json::from_str(KEEP_OBJECTS_PATCH).unwrap();
    for name in MANAGED_RESOURCE_NAMES {
        mrs.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        mrs.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in MANAGED_RESOURCE_NAMES {
        g.eventually(&format!("{name} gone"), TIMEOUT, || async {
            mrs.get_opt(name).await.unwrap().is_none().then_some(())
        })
        .await;
    }
    assert!(exists(&classes, "ontap-gold").await);
    assert!(exists(&deployments, "trident-operator").await);
    let shoot_secrets = Api::<Secret>::namespaced(g.shoot.clone(), "kube-system");
    assert!(exists(&shoot_secrets, &secret_name).await);
}
