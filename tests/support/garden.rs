//! A local garden (hack/garden.sh: kube-apiserver, etcd and the real gardener-apiserver behind
//! it) and the operator's garden admission (`ontap-operator admission`) as a child process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kube::Client;
use kube::api::PatchParams;
use serde_json::Value;

use super::gardenlet::{documents, helm};
use super::operator::{apply_object, bound_address, mint_user};
use super::{client_for, install_crypto_provider, owned_dir, repo_root};

pub struct Garden {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub client: Client,
}

impl Garden {
    /// A garden of its own, with what a Shoot needs (tests/fixtures/garden/landscape.yaml) and
    /// the ontap extension registered from deploy/gardener/controller-registration.yaml.
    pub async fn start() -> Self {
        install_crypto_provider();
        let dir = owned_dir("garden");
        let script = repo_root().join("hack/garden.sh");
        let pid = std::process::id().to_string();
        let status = tokio::task::spawn_blocking({
            let dir = dir.clone();
            move || {
                Command::new(script)
                    .args(["up", "--dir"])
                    .arg(&dir)
                    .args(["--owner-pid", &pid])
                    .status()
                    .expect("running hack/garden.sh")
            }
        })
        .await
        .unwrap();
        assert!(status.success(), "hack/garden.sh up failed: {status}");
        let kubeconfig = dir.join("kubeconfig");
        let client = client_for(&kubeconfig).await;
        let garden = Self {
            dir,
            kubeconfig,
            client,
        };
        garden
            .apply_file("tests/fixtures/garden/landscape.yaml")
            .await;
        garden
            .apply_file("deploy/gardener/controller-registration.yaml")
            .await;
        garden
    }

    /// A kubeconfig for the admission's ServiceAccount holding exactly the rights its charts
    /// give: deploy/admission/application's in the garden, deploy/admission/runtime's Role in
    /// `namespace` (the garden is its runtime cluster too here, as in a single-cluster setup).
    pub async fn admission_identity(&self, namespace: &str) -> PathBuf {
        let account = "gardener-extension-ontap-admission";
        let render = |chart: &str, values: &[&str]| {
            let mut command = Command::new(helm());
            command
                .args(["template", "ontap", chart, "--namespace", namespace])
                .current_dir(repo_root());
            for v in values {
                command.args(["--set", v]);
            }
            let out = command.output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            documents(&String::from_utf8(out.stdout).unwrap())
        };
        let mut objects = render(
            "deploy/admission/application",
            &[
                &format!("gardener.virtualCluster.serviceAccount.name={account}"),
                &format!("gardener.virtualCluster.serviceAccount.namespace={namespace}"),
            ],
        );
        objects.extend(
            render("deploy/admission/runtime", &[])
                .into_iter()
                .filter(|o| {
                    matches!(
                        o["kind"].as_str(),
                        Some("ServiceAccount" | "Role" | "RoleBinding")
                    )
                }),
        );
        for object in objects {
            self.apply(object).await;
        }
        let out = self.dir.join("admission.kubeconfig");
        mint_user(
            &self.dir.join("kube"),
            &format!("system:serviceaccount:{namespace}:{account}"),
            &[
                "system:serviceaccounts",
                &format!("system:serviceaccounts:{namespace}"),
            ],
            &out,
        );
        out
    }

    pub async fn apply_file(&self, path: &str) {
        let text = std::fs::read_to_string(repo_root().join(path)).unwrap();
        for object in documents(&text) {
            self.apply(object).await;
        }
    }

    pub async fn apply(&self, object: Value) {
        apply_object(
            &self.client,
            object,
            &PatchParams::apply("ontap-operator-tests").force(),
        )
        .await
        .unwrap();
    }
}

/// `ontap-operator admission` against a garden, its servers on ports it picks itself.
pub struct AdmissionProcess {
    child: Child,
    pub address: SocketAddr,
    pub health: SocketAddr,
    pub log: PathBuf,
}

impl AdmissionProcess {
    pub fn spawn(kubeconfig: &Path, namespace: &str, args: &[&str]) -> Self {
        let log = owned_dir("admission").with_extension("log");
        let file = std::fs::File::create(&log).unwrap();
        let binary = super::operator_binary();
        let mut child = Command::new(binary)
            .arg("admission")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", namespace])
            .args([
                "--bind-address=127.0.0.1:0",
                "--health-bind-address=127.0.0.1:0",
            ])
            .args(["--log-format", "text"])
            .args(args)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        let (address, health) =
            super::try_poll_blocking(Duration::from_secs(60), Duration::from_millis(20), || {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "the admission exited before it served:\n{text}"
                );
                bound_address(&text, "admission")
                    .zip(bound_address(&text, "admission health"))
                    .ok_or_else(|| format!("not serving yet:\n{text}"))
            })
            .unwrap_or_else(|why| panic!("the admission serving: {why}"));
        Self {
            child,
            address,
            health,
            log,
        }
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Status of `/readyz`; `None` while nothing answers.
    pub async fn readyz(&self) -> Option<u16> {
        reqwest::Client::new()
            .get(format!("http://{}/readyz", self.health))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()
            .map(|r| r.status().as_u16())
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for AdmissionProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
