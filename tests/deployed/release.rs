//! What a user installs, and installing it: the image pushed to the node's registry under two tags
//! (the second one for upgrades), the chart packaged and pushed as an OCI artifact, and helm run
//! the way the README tells users to run it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::support::mock::Mock;
use crate::support::node::{NodeCluster, node_cluster, script};
use crate::support::{client_for, poll, repo_root, tool};

pub const NAMESPACE: &str = "ontap-operator-system";
pub const RELEASE: &str = "ontap-operator";
pub const SELECTOR: &str = "app.kubernetes.io/name=ontap-operator";

/// Scenarios take turns: the chart's cluster-scoped names allow one release per cluster.
pub static ONE_RELEASE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub struct Shipped {
    pub node: &'static NodeCluster,
    /// The image's repository in the node's registry.
    pub repository: String,
    /// The tag `make image` built, and a second tag of the same image to upgrade to.
    pub tag: String,
    pub next_tag: String,
    /// `oci://…/charts/ontap-operator` and its version.
    pub chart: String,
    pub chart_version: String,
}

/// The node cluster with the image and the chart pushed to its registry, once per test binary.
pub fn shipped() -> &'static Shipped {
    static SHIPPED: OnceLock<Shipped> = OnceLock::new();
    SHIPPED.get_or_init(|| {
        std::thread::spawn(|| {
            let node = node_cluster();
            let chart_yaml =
                std::fs::read_to_string(repo_root().join("deploy/chart/Chart.yaml")).unwrap();
            let chart_yaml: Value = serde_yaml::from_str(&chart_yaml).unwrap();
            let tag = chart_yaml["appVersion"].as_str().unwrap().to_owned();
            let chart_version = chart_yaml["version"].as_str().unwrap().to_owned();
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| repo_root().join("target"), PathBuf::from);
            let archive = target.join(format!("image/ontap-operator-{tag}.tar"));
            assert!(
                archive.exists(),
                "{} is missing: build the image first (`make image`; `make test` does)",
                archive.display()
            );
            let next_tag = format!("{tag}-next");
            for t in [&tag, &next_tag] {
                script(
                    "image.sh",
                    &[
                        "push",
                        "--registry",
                        &node.registry,
                        "--tag",
                        t,
                        "--archive",
                        archive.to_str().unwrap(),
                    ],
                );
            }
            let out =
                std::env::temp_dir().join(format!("ontap-operator-chart-{}", std::process::id()));
            let packaged = script("chart.sh", &["package", "--out", out.to_str().unwrap()]);
            script(
                "chart.sh",
                &[
                    "push",
                    "--registry",
                    &node.registry,
                    "--archive",
                    packaged.trim(),
                ],
            );
            Shipped {
                node,
                repository: format!("{}/ontap-operator", node.registry),
                tag,
                next_tag,
                chart: format!("oci://{}/charts/ontap-operator", node.registry),
                chart_version,
            }
        })
        .join()
        .expect("pushing the image and the chart")
    })
}

impl Shipped {
    pub async fn client(&self) -> kube::Client {
        crate::support::install_crypto_provider();
        client_for(&self.node.kubeconfig).await
    }

    /// A client that shows the API server's 429s instead of retrying them (kube's default), for
    /// asking what a PodDisruptionBudget refuses.
    pub async fn client_without_retries(&self) -> kube::Client {
        crate::support::install_crypto_provider();
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.node.kubeconfig).unwrap();
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        config.default_retry = false;
        kube::Client::try_from(config).unwrap()
    }

    /// Values of a release against `mock`: the image of the node's registry and the mock as the
    /// OntapCluster `lab`, its administrator in a Secret the chart writes.
    pub fn values(&self, mock: &Mock) -> Value {
        let admin = mock.server.admin();
        let mut values = self.image_values();
        values["ontapClusters"] = json!([{
            "name": "lab",
            "endpoint": mock.base_url(),
            "credentials": {"username": admin.user, "password": admin.password},
            "ca": mock.server.cert_pem().unwrap(),
        }]);
        values
    }

    /// Values naming only the image of the node's registry.
    pub fn image_values(&self) -> Value {
        json!({"image": {"repository": self.repository, "tag": self.tag}})
    }

    /// `helm install RELEASE oci://… --version V -f values`, as the README has users do it.
    pub fn install(&self, values: &Value) {
        self.helm_from_registry("install", values);
    }

    /// `helm upgrade` to `values`.
    pub fn upgrade(&self, values: &Value) {
        self.helm_from_registry("upgrade", values);
    }

    fn helm_from_registry(&self, verb: &str, values: &Value) {
        let version = ["--version", &self.chart_version, "--plain-http"];
        let args: Vec<&str> = [verb, RELEASE, &self.chart]
            .into_iter()
            .chain(version)
            .collect();
        self.helm(&args, values);
    }

    pub fn uninstall(&self) {
        self.helm(
            &["uninstall", RELEASE, "--wait", "--timeout", "2m"],
            &Value::Null,
        );
    }

    fn helm(&self, args: &[&str], values: &Value) {
        let mut command = Command::new(tool("helm"));
        command
            .args(args)
            .env("KUBECONFIG", &self.node.kubeconfig)
            // helm's caches and registry logins stay out of the user's home.
            .env("HELM_CACHE_HOME", self.node.dir.join("helm/cache"))
            .env("HELM_CONFIG_HOME", self.node.dir.join("helm/config"))
            .env("HELM_DATA_HOME", self.node.dir.join("helm/data"));
        if !values.is_null() {
            let file: PathBuf = self.node.dir.join("values.json");
            std::fs::write(&file, values.to_string()).unwrap();
            command.arg("--values").arg(&file);
        }
        let out = command.output().unwrap();
        // The values hold the ONTAP administrator's password.
        let _ = std::fs::remove_file(self.node.dir.join("values.json"));
        assert!(
            out.status.success(),
            "helm {}: {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The operator's Pods, Ready ones first.
pub async fn operator_pods(client: &kube::Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .unwrap()
        .items
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        && pod.metadata.deletion_timestamp.is_none()
}

/// Waits until the Deployment has rolled out `image` to `replicas` Ready Pods and no others run.
pub async fn rolled_out(
    client: &kube::Client,
    image: &str,
    replicas: usize,
    timeout: Duration,
) -> Vec<Pod> {
    poll(
        &format!("{replicas} Ready Pods of {image}"),
        timeout,
        async || {
            let deployment = Api::<Deployment>::namespaced(client.clone(), NAMESPACE)
                .get_opt(RELEASE)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("no Deployment")?;
            let status = deployment.status.clone().unwrap_or_default();
            if status.observed_generation != deployment.metadata.generation {
                return Err("the Deployment's controller has not seen its spec".to_owned());
            }
            let pods = operator_pods(client).await;
            let ready: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
            let all_new = pods.iter().all(|p| {
                p.spec
                    .as_ref()
                    .is_some_and(|s| s.containers[0].image.as_deref() == Some(image))
            });
            if ready.len() == replicas && pods.len() == replicas && all_new {
                Ok(pods)
            } else {
                Err(format!(
                    "{} Pods, {} Ready, all of {image}: {all_new}; {:?}",
                    pods.len(),
                    ready.len(),
                    status
                ))
            }
        },
    )
    .await
}
