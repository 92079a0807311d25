//! `deploy/gardener/`: current with the chart and the CRDs, shaped as Gardener's API wants it,
//! and its chart renders, with the values it carries, objects a real API server accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PatchParams, PostParams};
use serde_json::{Value, json};

const REGISTRATION: &str = "deploy/gardener/controller-registration.yaml";

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ontap-operator-{label}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Unpacks a ControllerDeployment's `helm.rawChart` into `dir`, returning the chart folder.
fn unpack(deployment: &Value, dir: &Path) -> PathBuf {
    let raw = deployment["helm"]["rawChart"].as_str().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let tgz = dir.join("chart.tgz");
    std::fs::write(
        &tgz,
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, raw).unwrap(),
    )
    .unwrap();
    run(Command::new("tar").arg("-xzf").arg(&tgz).arg("-C").arg(dir));
    dir.join("ontap-operator")
}

/// Every file below `dir` with its content, by relative path.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn registration() -> (Value, Value) {
    let text = std::fs::read_to_string(crate::support::repo_root().join(REGISTRATION)).unwrap();
    let docs = documents(&text);
    let find = |kind: &str| docs.iter().find(|d| d["kind"] == kind).unwrap().clone();
    (find("ControllerDeployment"), find("ControllerRegistration"))
}

#[test]
fn committed_registration_is_what_the_script_writes_now() {
    let dir = temp_dir("registration");
    let fresh = dir.join("controller-registration.yaml");
    run(
        Command::new(crate::support::repo_root().join("hack/gardener-registration.sh"))
            .arg("--out")
            .arg(&fresh),
    );
    let committed = documents(
        &std::fs::read_to_string(crate::support::repo_root().join(REGISTRATION)).unwrap(),
    );
    let fresh = documents(&std::fs::read_to_string(&fresh).unwrap());
    let without_chart = |docs: &[Value]| -> Vec<Value> {
        docs.iter()
            .map(|d| {
                let mut d = d.clone();
                if let Some(helm) = d.get_mut("helm") {
                    helm["rawChart"] = Value::Null;
                }
                d
            })
            .collect()
    };
    assert_eq!(
        without_chart(&committed),
        without_chart(&fresh),
        "{REGISTRATION} is stale: run make gardener-registration"
    );
    // The archives are compared by content, so a different tar or gzip cannot fail the check.
    let committed_chart = unpack(&committed[0], &dir.join("committed"));
    let fresh_chart = unpack(&fresh[0], &dir.join("fresh"));
    assert_eq!(
        tree(&committed_chart),
        tree(&fresh_chart),
        "the chart in {REGISTRATION} is stale: run make gardener-registration"
    );
    // And it is the chart of deploy/chart plus the CRDs.
    let chart_files: Vec<String> = tree(&committed_chart).into_iter().map(|(p, _)| p).collect();
    let mut expected: Vec<String> = tree(&crate::support::repo_root().join("deploy/chart"))
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    expected.push("files/crds.yaml".into());
    expected.sort();
    assert_eq!(chart_files, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn registration_has_gardeners_shape() {
    let (deployment, registration) = registration();
    assert_eq!(deployment["apiVersion"], "core.gardener.cloud/v1");
    assert_eq!(registration["apiVersion"], "core.gardener.cloud/v1beta1");
    assert_eq!(
        registration["spec"]["deployment"]["deploymentRefs"],
        json!([{"name": deployment["metadata"]["name"]}])
    );
    let resources = registration["spec"]["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 1);
    let resource = &resources[0];
    assert_eq!(
        (resource["kind"].as_str(), resource["type"].as_str()),
        (Some("Extension"), Some("ontap"))
    );
    assert!(
        resource.get("autoEnable").is_none(),
        "only shoots that ask get the extension"
    );
    assert!(
        resource.get("globallyEnabled").is_none(),
        "removed from Gardener's API"
    );
    assert_eq!(resource["reconcileTimeout"], "10m");
    assert_eq!(
        resource["lifecycle"],
        json!({"reconcile": "AfterWorker", "delete": "BeforeKubeAPIServer", "migrate": "BeforeKubeAPIServer"})
    );
    let values = &deployment["helm"]["values"];
    assert_eq!(values["extension"]["enabled"], true);
    assert_eq!(values["installCRDs"], true);
    assert!(values["namespace"].is_null());
}

/// Renders the packaged chart as gardenlet does (release named after the registration, into
/// `extension-<installation>`, the ControllerDeployment's values plus gardenlet's `gardener`
/// values) with one ONTAP cluster, and applies the result to a real API server.
#[tokio::test]
async fn packaged_chart_installs_on_a_seed() {
    let (deployment, _) = registration();
    let dir = temp_dir("seed-chart");
    let chart = unpack(&deployment, &dir);
    let mut values = deployment["helm"]["values"].clone();
    values["gardener"] = json!({"version": "v1.149.3", "seed": {"name": "local"}, "garden": {}});
    values["ontapClusters"] = json!([{
        "name": "lab", "endpoint": "https://192.0.2.100",
        "credentials": {"username": "YWRtaW4=", "password": "bm90LWEtcmVhbC1wYXNzd29yZA=="}
    }]);
    let values_file = dir.join("values.json");
    std::fs::write(&values_file, values.to_string()).unwrap();
    let env = crate::support::env().await;
    let namespace = format!("extension-ontap-{}", &env.namespace[5..]);
    let helm = run(Command::new(crate::support::repo_root().join("hack/tools.sh")).arg("helm"));
    let rendered = documents(&run(Command::new(helm.trim())
        .args(["template", "ontap", "--namespace", &namespace, "-f"])
        .arg(&values_file)
        .arg(&chart)));
    std::fs::remove_dir_all(&dir).unwrap();

    let kinds: Vec<String> = rendered
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        !kinds.iter().any(|k| k.starts_with("Namespace/")),
        "gardenlet makes the namespace: {kinds:?}"
    );
    assert!(
        !kinds.iter().any(|k| k.starts_with("ConfigMap/")),
        "no ConfigMaps: {kinds:?}"
    );
    for expected in [
        "CustomResourceDefinition/ontapclusters.ontap.storage.dev",
        "CustomResourceDefinition/storagevirtualmachines.ontap.storage.dev",
        "Secret/lab-admin",
        "OntapCluster/lab",
        "Role/ontap-operator-heartbeat",
        "Deployment/ontap-operator",
    ] {
        assert!(
            kinds.contains(&expected.to_string()),
            "{expected} missing: {kinds:?}"
        );
    }
    let role = rendered
        .iter()
        .find(|o| o["kind"] == "ClusterRole")
        .unwrap();
    let rules = role["rules"].to_string();
    for resource in [
        "\"extensions\"",
        "\"extensions/status\"",
        "\"clusters\"",
        "\"managedresources\"",
    ] {
        assert!(
            rules.contains(resource),
            "ClusterRole lacks {resource}: {rules}"
        );
    }
    let container = &rendered.iter().find(|o| o["kind"] == "Deployment").unwrap()["spec"]["template"]
        ["spec"]["containers"][0];
    let args = container["args"].to_string();
    assert!(
        args.contains("--extension-type=ontap")
            && args.contains("--heartbeat-namespace=$(POD_NAMESPACE)"),
        "{args}"
    );
    assert!(
        !container.to_string().contains("bm90LWEtcmVhbC1wYXNzd29yZA"),
        "credentials only in the Secret"
    );

    // Everything is valid for a real API server (CRDs already installed by the test support).
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
    Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    for object in rendered {
        crate::support::operator::apply_object(
            &env.client,
            object,
            &PatchParams::apply("ontap-operator-tests").dry_run(),
        )
        .await
        .unwrap();
    }
}
