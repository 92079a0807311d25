//! `deploy/` and `deploy/chart` describe the same objects, and those objects are valid for a
//! real API server.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn by_identity(objects: Vec<Value>) -> BTreeMap<String, Value> {
    objects
        .into_iter()
        .map(|o| {
            let key = format!(
                "{}/{}/{}/{}",
                o["apiVersion"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap()
            );
            (key, o)
        })
        .collect()
}

fn deploy_objects() -> BTreeMap<String, Value> {
    let dir = crate::support::repo_root().join("deploy");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    by_identity(
        files
            .iter()
            .flat_map(|f| documents(&std::fs::read_to_string(f).unwrap()))
            .collect(),
    )
}

#[test]
fn the_chart_renders_the_objects_of_deploy() {
    let rendered = Command::new(crate::support::tool("helm"))
        .args(["template", "ontap-operator"])
        .arg(crate::support::repo_root().join("deploy/chart"))
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let chart = by_identity(documents(&String::from_utf8(rendered.stdout).unwrap()));
    let deploy = deploy_objects();
    assert_eq!(
        chart.keys().collect::<Vec<_>>(),
        deploy.keys().collect::<Vec<_>>()
    );
    for (key, object) in &deploy {
        assert_eq!(
            &chart[key], object,
            "the chart renders {key} differently from deploy/"
        );
    }
}

#[test]
fn the_deployment_is_hardened() {
    let deploy = deploy_objects();
    let deployment = &deploy["apps/v1/Deployment/ontap-operator-system/ontap-operator"];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"][0],
        "ALL"
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--leader-elect")
    );
    assert!(container["resources"]["limits"]["memory"].is_string());
}

#[tokio::test]
async fn every_deploy_object_is_accepted_by_the_api_server() {
    let env = crate::support::env().await;
    crate::support::operator::apply_deploy_files(
        &env.client,
        &[
            "namespace.yaml",
            "rbac.yaml",
            "deployment.yaml",
            "service.yaml",
        ],
    )
    .await;
}
