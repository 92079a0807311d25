//! The objects of `deploy/` (rendered from `deploy/chart`, and kept so by `make check-generated`)
//! are hardened and valid for a real API server.

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

fn helm(args: &[&str]) -> std::process::Output {
    Command::new(crate::support::tool("helm"))
        .args(args)
        .output()
        .unwrap()
}

const MONITORING_ON: &str = "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true";

/// The monitoring objects, all switched on: `helm lint` passes, the PrometheusRule carries the
/// rule file and the ConfigMap the dashboard verbatim, and the ServiceMonitor selects the
/// metrics Service's port.
#[test]
fn the_chart_renders_its_monitoring_objects() {
    let root = crate::support::repo_root();
    let chart = root.join("deploy/chart");
    let chart = chart.to_str().unwrap();
    let lint = helm(&["lint", "--strict", chart, "--set", MONITORING_ON]);
    assert!(
        lint.status.success(),
        "{}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    let rendered = helm(&["template", "ontap-operator", chart, "--set", MONITORING_ON]);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let objects = by_identity(documents(&String::from_utf8(rendered.stdout).unwrap()));
    let ns = "ontap-operator-system";
    let rule = &objects[&format!("monitoring.coreos.com/v1/PrometheusRule/{ns}/ontap-operator")];
    let rule_file: Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            root.join("deploy/chart/files/monitoring/ontap-operator.rules.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        rule["spec"], rule_file,
        "the PrometheusRule is the rule file"
    );
    let dashboard = &objects[&format!("v1/ConfigMap/{ns}/ontap-operator-dashboard")];
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    let json: Value =
        serde_json::from_str(dashboard["data"]["ontap-operator.json"].as_str().unwrap()).unwrap();
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(
            root.join("deploy/chart/files/monitoring/ontap-operator-dashboard.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(json, file, "the ConfigMap holds the dashboard");
    let monitor = &objects[&format!("monitoring.coreos.com/v1/ServiceMonitor/{ns}/ontap-operator")];
    let service = &objects[&format!("v1/Service/{ns}/ontap-operator-metrics")];
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"],
        service["metadata"]["labels"]
    );
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
}

/// `values.schema.json`: a wrong value is refused, and the message names it.
#[test]
fn the_chart_refuses_a_wrong_value_naming_it() {
    let chart = crate::support::repo_root().join("deploy/chart");
    let chart = chart.to_str().unwrap();
    for (set, named) in [
        (
            "monitoring.serviceMonitor.interval=soon",
            "/monitoring/serviceMonitor/interval",
        ),
        (
            "monitoring.prometheusRule.enabled=yes",
            "/monitoring/prometheusRule/enabled",
        ),
        ("monitoring.serviceMonitr.enabled=true", "serviceMonitr"),
        ("logFormat=xml", "/logFormat"),
        (
            "extension.allowShootImages=yes",
            "/extension/allowShootImages",
        ),
        ("replicas=-1", "/replicas"),
    ] {
        let out = helm(&["template", "ontap-operator", chart, "--set", set]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{set} was accepted");
        assert!(stderr.contains(named), "{set}: {stderr}");
    }
}
