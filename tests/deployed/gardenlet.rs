//! The registration installed the way gardenlet installs a ControllerInstallation, into the node
//! cluster playing the seed: the committed rawChart rendered with the ControllerDeployment's values
//! and gardenlet's merged over them, `SEED_NAME` injected, the manifests put into a Secret and a
//! ManagedResource of class `seed` in `garden`, and the real gardener-resource-manager for that
//! class applying them. The operator's Pods then serve an Extension end to end: its SVM in ONTAP,
//! Trident's objects in a shoot whose API server the Pods reach, and its deletion; and the
//! ManagedResource's deletion takes the operator away again.
//!
//! Shapes from gardener v1.149.3: `pkg/gardenlet/controller/controllerinstallation/
//! controllerinstallation/reconciler.go` (namespace, values, injection, ManagedResource),
//! `pkg/chartrenderer` (`AsSecretData`'s keys), `pkg/utils/managedresources` (the Secret and the
//! ManagedResource), `pkg/utils/kubernetes` (`MakeUnique`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, LogParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Client, ResourceExt};
use ontap_operator::extension::shoot::{sha256_hex, unique_secret};
use serde_json::{Value, json};

use crate::release::{ONE_RELEASE, SELECTOR, is_ready, shipped};
use crate::support::gardener::{Gardener, ResourceManager, condition};
use crate::support::gardenlet::{
    backend_configs, confirm_and_delete, create_cluster, create_extension, documents, extensions,
    garbage_collector_stand_in, gardenlet_values, nfs_config, registration, render_as_gardenlet,
    shoot_credentials, wait_ready_within,
};
use crate::support::mock::{Mock, fast_mock};
use crate::support::svm::authenticates_on;
use crate::support::{gone, poll, tail};

const TIMEOUT: Duration = Duration::from_secs(180);
/// The seed's garden namespace, where gardenlet puts the installations' ManagedResources.
const GARDEN: &str = "garden";
/// The OntapCluster the values name: not `lab`, which the helm scenarios' releases use.
const CLUSTER: &str = "gardener-lab";

#[tokio::test]
async fn the_registration_installed_as_gardenlet_does_serves_an_extension_from_its_pods() {
    let _turn = ONE_RELEASE.lock().await;
    let shipped = shipped();
    let client = shipped.client().await;
    let mock = Mock::start_tls_on(fast_mock(), shipped.node.address).await;
    let g = Gardener::start_on(&shipped.node.kubeconfig, Some(shipped.node.address)).await;

    // gardener-controller-manager names the installation after the registration, plus 5 random
    // characters; gardenlet installs it into extension-<installation>.
    let (deployment, registration) = registration();
    let registration_name = registration["metadata"]["name"].as_str().unwrap();
    let installation = format!(
        "{registration_name}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..5]
    );
    let namespace = format!("extension-{installation}");
    let admin = mock.server.admin();
    // The landscape's ControllerDeployment values: its image in the registry the node pulls from,
    // and the ONTAP cluster (as "{{ .resources… }}" substitution leaves them: plain text).
    let values = gardenlet_values(
        &deployment,
        json!({
            "image": {"repository": shipped.repository, "tag": shipped.tag},
            "ontapClusters": [{
                "name": CLUSTER,
                "endpoint": mock.base_url(),
                "credentials": {"username": admin.user, "password": admin.password},
                "ca": mock.server.cert_pem().unwrap(),
            }],
        }),
    );
    let seed = values["gardener"]["seed"].clone();
    let seed_name = seed["name"].as_str().unwrap();
    extension_namespace(&client, &namespace, &registration, &seed).await;
    let rendered = render_as_gardenlet(&namespace, &values)
        .unwrap_or_else(|e| panic!("the chart refuses gardenlet's values: {e}"));
    let data = as_secret_data(&rendered, &namespace, seed_name);

    create_namespace_once(&client, GARDEN).await;
    let seed_grm = ResourceManager::start(
        shipped.node.dir.join(format!("grm-seed-{installation}")),
        &shipped.node.kubeconfig,
        &shipped.node.kubeconfig,
        GARDEN,
        Some("seed"),
    );
    let managed_resources = managed_resources(&client);
    let secret_name =
        install_managed_resource(&client, &installation, registration_name, data).await;

    let image = format!("{}:{}", shipped.repository, shipped.tag);
    let pods = poll(
        "both operator Pods Ready in the extension's namespace",
        TIMEOUT,
        async || {
            let pods = Api::<Pod>::namespaced(client.clone(), &namespace)
                .list(&ListParams::default().labels(SELECTOR))
                .await
                .map_err(|e| e.to_string())?
                .items;
            let ready = pods.iter().filter(|p| is_ready(p)).count();
            if ready == 2 && pods.len() == 2 {
                Ok(pods)
            } else {
                Err(format!(
                    "{} Pods, {ready} Ready\n--- seed GRM log ---\n{}",
                    pods.len(),
                    tail(&seed_grm.log(), 20)
                ))
            }
        },
    )
    .await;
    for pod in &pods {
        let container = &pod.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.image.as_deref(), Some(image.as_str()));
        let seed_env = container
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "SEED_NAME")
            .and_then(|e| e.value.clone());
        assert_eq!(
            seed_env.as_deref(),
            Some(seed_name),
            "gardenlet's SEED_NAME in {}",
            pod.name_any()
        );
    }
    let mr = poll("the ManagedResource applied", TIMEOUT, async || {
        let mr = managed_resources.get(&installation).await.ok()?;
        (condition(&mr, "ResourcesApplied").as_deref() == Some("True")).then_some(mr)
    })
    .await;
    assert!(
        mr.finalizers()
            .iter()
            .any(|f| f == "resources.gardener.cloud/gardener-resource-manager-seed"),
        "the seed-class resource manager serves it: {:?}",
        mr.finalizers()
    );
    // gardenlet looks for the extension's heartbeat in its namespace: the Pods renew it.
    poll("the heartbeat Lease renewed", TIMEOUT, async || {
        let lease = Api::<Lease>::namespaced(client.clone(), &namespace)
            .get("gardener-extension-heartbeat")
            .await
            .ok()?;
        lease.spec?.renew_time.map(|_| ())
    })
    .await;

    // The test as gardenlet for one shoot: its Cluster and an Extension with an NFS SVM.
    let shoot_ns = g.namespace.clone();
    create_cluster(&g, &shoot_ns, json!({})).await;
    let ts = create_extension(
        &g,
        &shoot_ns,
        nfs_config(CLUSTER, "192.0.2.20", "192.0.2.21"),
        "reconcile",
    )
    .await;
    let logs = async || operator_logs(&client, &namespace).await;
    let took = wait_ready_within(&g, &shoot_ns, &ts, TIMEOUT, logs).await;
    println!("Extension served from the Pods: Succeeded after {took:?}");
    let svms = mock.snapshot()["svms"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(svms.len(), 1, "one SVM in ONTAP: {svms:#?}");
    let svm_name = svms[0]["name"].as_str().unwrap().to_owned();
    let (user, password) = shoot_credentials(&g, "ontap-svm-credentials")
        .await
        .expect("the SVM's credentials in the shoot");
    assert!(
        authenticates_on(&mock, &user, &password, &svm_name).await,
        "the shoot's credentials work on the SVM"
    );
    let backends = backend_configs(&g).list(&Default::default()).await.unwrap();
    assert!(
        !backends.items.is_empty(),
        "no TridentBackendConfig in the shoot"
    );
    let classes = Api::<StorageClass>::all(g.shoot.clone())
        .list(&Default::default())
        .await
        .unwrap();
    assert!(!classes.items.is_empty(), "no StorageClass in the shoot");

    // gardenlet deletes the Extension: the SVM goes from ONTAP and the objects from the shoot.
    let gc = garbage_collector_stand_in(g.shoot.clone());
    confirm_and_delete(&g, &shoot_ns).await;
    poll("the Extension gone", TIMEOUT, async || {
        match extensions(&g, &shoot_ns).get_opt("ontap").await {
            Ok(None) => Ok(()),
            Ok(Some(ext)) => Err(format!(
                "still there: {:?}\n{}",
                ext.status,
                operator_logs(&client, &namespace).await
            )),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    gc.abort();
    assert_eq!(
        mock.snapshot()["svms"].as_array().map_or(0, Vec::len),
        0,
        "the SVM left in ONTAP: {}",
        mock.snapshot()
    );
    assert!(
        shoot_credentials(&g, "ontap-svm-credentials")
            .await
            .is_none(),
        "the credentials left in the shoot"
    );

    // gardenlet deletes the installation: the ManagedResource and its Secrets, then waits for the
    // resource manager to have removed what it applied.
    uninstall_managed_resource(&client, &installation, &secret_name).await;
    poll(
        "the ManagedResource gone",
        TIMEOUT,
        async || match managed_resources.get_opt(&installation).await {
            Ok(None) => Ok(()),
            Ok(Some(mr)) => Err(format!(
                "{}\n--- seed GRM log ---\n{}",
                serde_json::to_string_pretty(&mr.data["status"]).unwrap(),
                tail(&seed_grm.log(), 20)
            )),
            Err(e) => Err(e.to_string()),
        },
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    gone(&deployments, "ontap-operator", TIMEOUT).await.unwrap();
    let roles = Api::<ClusterRole>::all(client.clone())
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .unwrap();
    assert!(
        roles.items.is_empty(),
        "ClusterRoles left: {:?}",
        roles.iter().map(ResourceExt::name_any).collect::<Vec<_>>()
    );
    // The CRDs went with it, and their objects (the OntapCluster, whose finalizer the resource
    // manager released) with them.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in [
        "ontapclusters.ontap.storage.dev",
        "storagevirtualmachines.ontap.storage.dev",
    ] {
        gone(&crds, crd, TIMEOUT).await.unwrap();
    }
    // gardenlet then deletes the namespace.
    Api::<Namespace>::all(client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
    drop(seed_grm);
}

/// The namespace gardenlet creates for the installation, with its labels and annotation.
async fn extension_namespace(client: &Client, name: &str, registration: &Value, seed: &Value) {
    let zones: Vec<&str> = seed["spec"]["provider"]["zones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z.as_str().unwrap())
        .collect();
    // gardener-controller-manager copies the registration's pod-security annotation onto the
    // installation, and gardenlet turns it into the namespace's enforced level.
    let enforce =
        registration["metadata"]["annotations"]["security.gardener.cloud/pod-security-enforce"]
            .as_str()
            .unwrap();
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {
                "gardener.cloud/role": "extension",
                "controllerregistration.core.gardener.cloud/name": registration["metadata"]["name"],
                "high-availability-config.resources.gardener.cloud/consider": "true",
                "pod-security.kubernetes.io/enforce": enforce,
            },
            "annotations": {
                "high-availability-config.resources.gardener.cloud/zones": zones.join(","),
            },
        }
    }))
    .unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

async fn create_namespace_once(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await.unwrap().is_none() {
        crate::support::create_namespace(client, name, json!({})).await;
    }
}

/// `RenderedChart.AsSecretData` of `helm template`'s output, then gardenlet's injection of
/// `SEED_NAME` into every container of the release namespace's `apps` and `batch` workloads
/// (`MutateObjectsInSecretData`): one key per template file, or per object of a file that renders
/// several, named as gardener's chart renderer names them.
fn as_secret_data(rendered: &str, namespace: &str, seed_name: &str) -> BTreeMap<String, Vec<u8>> {
    let mut files: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for chunk in rendered.split("\n---\n") {
        let Some(source) = chunk
            .lines()
            .find_map(|l| l.strip_prefix("# Source: "))
            .map(str::to_owned)
        else {
            continue;
        };
        let Some(object) = documents(chunk).pop() else {
            continue;
        };
        let resource = format!(
            "{}/{}",
            object["kind"].as_str().unwrap(),
            object["metadata"]["name"].as_str().unwrap()
        )
        .to_lowercase();
        let content = match inject_seed_name(object, namespace, seed_name) {
            Some(mutated) => serde_yaml::to_string(&mutated).unwrap(),
            None => chunk.to_owned(),
        };
        files.entry(source).or_default().push((resource, content));
    }
    let mut data = BTreeMap::new();
    for (file, resources) in files {
        let several = resources.len() > 1;
        for (resource, content) in resources {
            let key = if several {
                valid_config_key(&format!(
                    "{}/{resource}.yaml",
                    file.trim_end_matches(".yaml")
                ))
            } else {
                file.replace('/', "_")
            };
            data.insert(key, content.into_bytes());
        }
    }
    data
}

/// gardener's `validConfigKey.ReplaceAllString(key, "_")`: each run of characters outside
/// `[-._a-zA-Z0-9]` becomes one `_`.
fn valid_config_key(key: &str) -> String {
    let mut out = String::new();
    let mut in_run = false;
    for c in key.chars() {
        if c.is_ascii_alphanumeric() || "-._".contains(c) {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

/// `object` with `SEED_NAME` set in each of its containers (init containers too), if it is a
/// workload of the groups gardenlet mutates in the release's namespace.
fn inject_seed_name(mut object: Value, namespace: &str, seed_name: &str) -> Option<Value> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if !["apps", "batch"].contains(&group) || object["metadata"]["namespace"] != namespace {
        return None;
    }
    let pod_spec = match object["kind"].as_str() {
        Some("CronJob") => &mut object["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        _ => &mut object["spec"]["template"]["spec"],
    };
    for list in ["initContainers", "containers"] {
        for container in pod_spec[list].as_array_mut().into_iter().flatten() {
            let mut env: Vec<Value> = container["env"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|e| e["name"] != "SEED_NAME")
                .collect();
            env.push(json!({"name": "SEED_NAME", "value": seed_name}));
            container["env"] = Value::Array(env);
        }
    }
    Some(object)
}

fn managed_resources(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        GARDEN,
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "resources.gardener.cloud",
            "v1alpha1",
            "ManagedResource",
        )),
    )
}

/// gardenlet's `managedresources.Create(…, garden, <installation>, labels, false, "seed", data,
/// nil, nil, nil)`: the Secret made unique (`MakeUnique`: named after the data's checksum,
/// immutable, garbage-collectable), then the ManagedResource of class `seed` referencing it, with
/// the reference annotation the builder injects. Returns the Secret's name.
async fn install_managed_resource(
    client: &Client,
    installation: &str,
    registration: &str,
    data: BTreeMap<String, Vec<u8>>,
) -> String {
    let secret = unique_secret(installation, GARDEN, data);
    let secret_name = secret.metadata.name.clone().unwrap();
    Api::<Secret>::namespaced(client.clone(), GARDEN)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let reference = format!(
        "reference.resources.gardener.cloud/secret-{}",
        &sha256_hex(secret_name.as_bytes())[..8]
    );
    let mr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {
            "name": installation,
            "namespace": GARDEN,
            "labels": {
                "controllerinstallation-name": installation,
                "controllerregistration-name": registration,
            },
            "annotations": {reference: secret_name},
        },
        "spec": {"class": "seed", "secretRefs": [{"name": secret_name}]},
    }))
    .unwrap();
    managed_resources(client)
        .create(&PostParams::default(), &mr)
        .await
        .unwrap();
    secret_name
}

/// gardenlet's `managedresources.Delete(…, garden, <installation>, false)`: the Secrets first
/// (the resource manager's finalizer keeps them while it needs them), then the ManagedResource.
async fn uninstall_managed_resource(client: &Client, installation: &str, secret_name: &str) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), GARDEN);
    for name in [installation, secret_name] {
        match secrets.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => panic!("deleting Secret {name}: {e}"),
        }
    }
    managed_resources(client)
        .delete(installation, &DeleteParams::default())
        .await
        .unwrap();
}

/// The tails of the operator Pods' logs, for failure messages.
async fn operator_logs(client: &Client, namespace: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut out = String::new();
    for pod in pods
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
    {
        let logs = pods
            .logs(&pod.name_any(), &LogParams::default())
            .await
            .unwrap_or_else(|e| e.to_string());
        out.push_str(&format!(
            "--- {} log ---\n{}\n",
            pod.name_any(),
            tail(&logs, 40)
        ));
    }
    out
}
