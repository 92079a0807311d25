//! `deploy/gardener/`: the chart and the CRDs, shaped as Gardener's API wants it
//! (gardener-operator's Extension checked against its real CRD), and its chart renders, with the
//! values it carries and those gardenlet adds, objects a real API server accepts.

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::gardenlet::{
    CHART_NAME, committed, documents, gardenlet_values, helm, merge_maps, raw_chart, registration,
    render_as_gardenlet, run, temp_dir, unpack,
};

const EXTENSION: &str = "deploy/gardener/extension.yaml";

fn script() -> Command {
    Command::new(crate::support::repo_root().join("hack/gardener-registration.sh"))
}

/// Every file below `dir`, by relative path, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The script packages deploy/chart with the CRDs, named as Gardener names extension charts;
/// `--package-chart` writes the very archive the rawChart carries, and the Extension names it where
/// `helm push` puts it. Whether the committed files are what it writes now is `make
/// check-generated`'s (hack/check-generated.sh), with every other generated file.
#[test]
fn the_script_packages_the_chart_with_the_crds() {
    let dir = temp_dir("registration");
    let out = dir.join("out");
    run(script().arg("--out-dir").arg(&out));
    let fresh =
        documents(&std::fs::read_to_string(out.join("controller-registration.yaml")).unwrap());
    let fresh_chart = unpack(&fresh[0], &dir.join("fresh"));
    let mut expected = tree(&crate::support::repo_root().join("deploy/chart"));
    expected.push("files/crds.yaml".into());
    expected.sort();
    assert_eq!(tree(&fresh_chart), expected);
    let chart_yaml: Value =
        serde_yaml::from_str(&std::fs::read_to_string(fresh_chart.join("Chart.yaml")).unwrap())
            .unwrap();
    assert_eq!(chart_yaml["name"], CHART_NAME);

    // --package-chart writes the very archive the rawChart carries, named as `helm push` wants.
    let version = chart_yaml["version"].as_str().unwrap();
    let packaged = run(script().arg("--package-chart").arg(dir.join("charts")));
    let tgz = dir
        .join("charts")
        .join(format!("{CHART_NAME}-{version}.tgz"));
    let admission = |part: &str| {
        dir.join("charts")
            .join(format!("{CHART_NAME}-admission-{part}-{version}.tgz"))
            .display()
            .to_string()
    };
    assert_eq!(
        packaged.lines().collect::<Vec<_>>(),
        [
            tgz.display().to_string(),
            admission("runtime"),
            admission("application")
        ],
        "the extension's chart and its admission's two, as the Extension's ociRepository refs name them"
    );
    for part in ["runtime", "application"] {
        let shown = run(Command::new(helm()).args(["show", "chart", &admission(part)]));
        let shown: Value = serde_yaml::from_str(&shown).unwrap();
        assert_eq!(shown["name"], format!("{CHART_NAME}-admission-{part}"));
        assert_eq!(shown["version"], version);
    }
    assert_eq!(std::fs::read(&tgz).unwrap(), raw_chart(&fresh[0]));
    let shown = run(Command::new(helm()).args(["show", "chart"]).arg(&tgz));
    let shown: Value = serde_yaml::from_str(&shown).unwrap();
    assert_eq!(
        (&shown["name"], &shown["version"]),
        (&json!(CHART_NAME), &json!(version))
    );

    // The Extension names the chart where `helm push <tgz> <--oci-repository>` puts it.
    let local = dir.join("local");
    run(script()
        .args([
            "--oci-repository",
            "oci://127.0.0.1:5000/charts",
            "--out-dir",
        ])
        .arg(&local));
    let extension = documents(&std::fs::read_to_string(local.join("extension.yaml")).unwrap());
    assert_eq!(
        extension[0]["spec"]["deployment"]["extension"]["helm"]["ociRepository"],
        json!({"ref": format!("127.0.0.1:5000/charts/{CHART_NAME}:{version}")})
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn registration_has_gardeners_shape() {
    let (deployment, registration) = registration();
    assert_eq!(deployment["apiVersion"], "core.gardener.cloud/v1");
    assert_eq!(registration["apiVersion"], "core.gardener.cloud/v1beta1");
    // As Gardener's extensions name theirs (extension-registry-cache).
    assert_eq!(registration["metadata"]["name"], "extension-ontap");
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

/// An air-gapped landscape's image vector overwrite, as its ControllerDeployment gives it.
const IMAGE_VECTOR_OVERWRITE: &str = "images:
- name: trident-operator
  repository: mirror.example/netapp/trident-operator
- name: pause-container
  repository: mirror.example/pause
";

/// Renders the packaged chart as gardenlet does (see [`render_as_gardenlet`]; the values of
/// tests/fixtures/gardenlet-values.yaml over the ControllerDeployment's) with one ONTAP cluster
/// and an image vector overwrite, and applies the result to a real API server.
#[tokio::test]
async fn packaged_chart_installs_on_a_seed() {
    let (deployment, registration) = registration();
    let values = gardenlet_values(
        &deployment,
        json!({"ontapClusters": [{
            "name": "lab", "endpoint": "https://192.0.2.100",
            "credentials": {"username": "admin", "password": "not-a-real-password"}
        }], "imageVectorOverwrite": IMAGE_VECTOR_OVERWRITE}),
    );
    assert_eq!(values["gardener"]["seed"]["name"], "aws-eu1");
    let env = crate::support::env().await;
    // extension-<ControllerInstallation>, whose name is the registration's plus 5 random characters.
    let namespace = format!(
        "extension-{}-{}",
        registration["metadata"]["name"].as_str().unwrap(),
        &env.namespace[5..10]
    );
    let rendered = documents(
        &render_as_gardenlet(&namespace, &values)
            .unwrap_or_else(|e| panic!("the chart refuses gardenlet's values: {e}")),
    );

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
    let config_maps: Vec<&String> = kinds
        .iter()
        .filter(|k| k.starts_with("ConfigMap/"))
        .collect();
    assert_eq!(
        config_maps,
        ["ConfigMap/ontap-operator-imagevector-overwrite"],
        "no ConfigMap but the image vector overwrite's: {kinds:?}"
    );
    for object in &rendered {
        match object["metadata"]["namespace"].as_str() {
            Some(ns) => assert_eq!(ns, namespace, "{object}"),
            None => assert!(
                [
                    "CustomResourceDefinition",
                    "ClusterRole",
                    "ClusterRoleBinding",
                    "OntapCluster"
                ]
                .contains(&object["kind"].as_str().unwrap()),
                "{} has no namespace",
                object["kind"]
            ),
        }
    }
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
    assert!(
        !args.contains("--extension-allow-shoot-images"),
        "shoots choose no images unless the landscape says so: {args}"
    );

    // The overwrite reaches the operator unchanged, where IMAGEVECTOR_OVERWRITE says.
    let config_map = rendered.iter().find(|o| o["kind"] == "ConfigMap").unwrap();
    let (file, text) = config_map["data"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(text, IMAGE_VECTOR_OVERWRITE);
    let path = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "IMAGEVECTOR_OVERWRITE")
        .unwrap()["value"]
        .as_str()
        .unwrap();
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| path == format!("{}/{file}", m["mountPath"].as_str().unwrap()))
        .unwrap_or_else(|| panic!("nothing mounted at {path}: {container}"));
    let pod = &rendered.iter().find(|o| o["kind"] == "Deployment").unwrap()["spec"]["template"];
    let volume = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert_eq!(volume["configMap"]["name"], config_map["metadata"]["name"]);
    assert!(
        pod["metadata"]["annotations"]["checksum/imagevector-overwrite"].is_string(),
        "a new overwrite rolls the pods: {}",
        pod["metadata"]
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

/// The schema types what gardenlet's values fix, so a gardenlet that wrote them otherwise, or a
/// schema that lost them, shows here and not on a seed.
#[test]
fn gardenlet_values_of_the_wrong_shape_are_refused() {
    let (deployment, _) = registration();
    for (wrong, field) in [
        (json!({"seed": {"visible": "yes"}}), "visible"),
        (
            json!({"gardenlet": {"featureGates": {"AllAlpha": "false"}}}),
            "AllAlpha",
        ),
        (json!({"version": 1149}), "version"),
    ] {
        let values = merge_maps(
            &gardenlet_values(&deployment, json!({})),
            &json!({ "gardener": wrong }),
        );
        let err = render_as_gardenlet("extension-extension-ontap-wrong", &values)
            .expect_err("values of the wrong shape rendered");
        assert!(
            err.contains("schema") && err.contains(field),
            "{field}: {err}"
        );
    }
}

/// deploy/gardener/extension.yaml is what gardener-operator's own CRD (from the gardener module)
/// accepts, field by field, and carries what controller-registration.yaml does.
#[tokio::test]
async fn operator_extension_is_valid_for_gardener_operators_crd() {
    let extension = committed(EXTENSION).remove(0);
    let (deployment, registration) = registration();
    // gardener-operator writes the ControllerRegistration and ControllerDeployment from it
    // (ControllerRegistrationForExtension): named after it, with its values, resources and
    // pod-security annotation.
    assert_eq!(extension["metadata"], registration["metadata"]);
    assert_eq!(
        extension["spec"]["resources"],
        registration["spec"]["resources"]
    );
    let spec = &extension["spec"]["deployment"]["extension"];
    assert_eq!(spec["values"], deployment["helm"]["values"]);
    assert_eq!(spec["policy"], registration["spec"]["deployment"]["policy"]);
    // What gardener-operator's webhook adds to the CRD (ValidateOCIRepository): ref alone, or
    // repository with tag or digest; and what the puller parses (OCIRepository.GetURL drops oci://).
    let oci = spec["helm"]["ociRepository"].as_object().unwrap();
    assert_eq!(oci.keys().collect::<Vec<_>>(), ["ref"]);
    let reference = oci["ref"].as_str().unwrap();
    let (repository, tag) = reference.rsplit_once(':').unwrap();
    assert!(
        !reference.starts_with("oci://") && repository.ends_with(&format!("/{CHART_NAME}")),
        "{reference}"
    );
    let chart: Value = serde_yaml::from_str(
        &std::fs::read_to_string(crate::support::repo_root().join("deploy/chart/Chart.yaml"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        tag, chart["version"],
        "pushed charts are tagged with their version"
    );

    let env = crate::support::env().await;
    let out = run(
        Command::new(crate::support::repo_root().join("hack/tools.sh"))
            .arg("gardener-operator-crds"),
    );
    for crd in crate::support::crds_in(Path::new(out.trim())) {
        crate::support::install_crd(&env.client, crd).await;
    }
    let strict = PatchParams::apply("ontap-operator-tests")
        .dry_run()
        .validation_strict();
    crate::support::operator::apply_object(&env.client, extension.clone(), &strict)
        .await
        .unwrap();
    // Strict validation is what makes the check bite: a field the CRD lacks is refused.
    let mut wrong = extension.clone();
    wrong["spec"]["deployment"]["extension"]["helm"]["ociRepository"]["url"] = json!(reference);
    let err = crate::support::operator::apply_object(&env.client, wrong, &strict)
        .await
        .expect_err("an unknown field was accepted");
    assert!(err.contains("url"), "{err}");
}
