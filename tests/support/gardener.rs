//! Gardener around a test: the binary's control plane plays the seed (with Gardener's own CRDs
//! for Extension, Cluster and ManagedResource), a second control plane plays the shoot (with
//! Trident's TridentBackendConfig CRD, as a shoot with Trident installed has it), and the real
//! gardener-resource-manager applies the seed's ManagedResources to the shoot.
//!
//! Each [`Gardener`] gets its own shoot and its own resource manager, limited to its own shoot
//! namespace in the seed, so tests run in parallel. [`Gardener::start_on`] puts it around another
//! seed (a cluster with a node, whose Pods serve the Extensions) with the shoot's API server where
//! those Pods reach it. The shoot namespace has gardenlet's shoot
//! access Secret `gardener` with the shoot's kubeconfig. Everything is stopped on drop, and by the
//! scripts' watchdogs when the test binary dies.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;

use super::{
    client_for, control_plane, crds_in, install_crd, install_crypto_provider, repo_root,
    start_owned_control_plane_on,
};

pub struct Gardener {
    /// The seed (the binary's shared control plane).
    pub seed: Client,
    pub seed_kubeconfig: PathBuf,
    /// The shoot's control-plane namespace in the seed, named and labelled as gardenlet does.
    pub namespace: String,
    pub shoot: Client,
    pub shoot_kubeconfig: PathBuf,
    shoot_dir: PathBuf,
    grm: ResourceManager,
}

/// The folder `hack/tools.sh gardener-crds` fills from the gardener Go module.
pub fn gardener_crds() -> Vec<CustomResourceDefinition> {
    let out = Command::new(repo_root().join("hack/tools.sh"))
        .arg("gardener-crds")
        .output()
        .expect("running hack/tools.sh gardener-crds");
    assert!(
        out.status.success(),
        "hack/tools.sh gardener-crds failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    crds_in(Path::new(String::from_utf8(out.stdout).unwrap().trim()))
}

/// The Trident CRDs a shoot with Trident installed serves (see the fixture's header for where
/// they come from).
pub fn trident_crds() -> Vec<CustomResourceDefinition> {
    crds_in(&repo_root().join("tests/fixtures/trident"))
}

impl Gardener {
    /// Gardener around the binary's control plane, the shoot on loopback.
    pub async fn start() -> Self {
        install_crypto_provider();
        let seed_plane = tokio::task::spawn_blocking(control_plane).await.unwrap();
        Self::start_on(&seed_plane.kubeconfig, None).await
    }

    /// Gardener around the seed of `seed_kubeconfig`, the shoot's API server listening on
    /// `shoot_address` (loopback without): where an extension running in a Pod of the seed reaches
    /// it through gardenlet's shoot access Secret.
    pub async fn start_on(seed_kubeconfig: &Path, shoot_address: Option<IpAddr>) -> Self {
        install_crypto_provider();
        let seed = client_for(seed_kubeconfig).await;
        for crd in gardener_crds() {
            install_crd(&seed, crd).await;
        }
        let namespace = format!(
            "shoot--test--{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": namespace,
                "labels": { "gardener.cloud/role": "shoot" }
            }
        }))
        .unwrap();
        Api::<Namespace>::all(seed.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();

        let shoot_dir = tokio::task::spawn_blocking(move || {
            start_owned_control_plane_on("shoot", shoot_address)
        })
        .await
        .unwrap();
        let shoot_kubeconfig = shoot_dir.join("kubeconfig");
        let shoot = client_for(&shoot_kubeconfig).await;
        for crd in trident_crds() {
            install_crd(&shoot, crd).await;
        }

        shoot_access_secret(&seed, &namespace, &shoot_kubeconfig).await;

        let grm = ResourceManager::start(
            shoot_dir.with_extension("grm"),
            seed_kubeconfig,
            &shoot_kubeconfig,
            &namespace,
            None,
        );
        Self {
            seed,
            seed_kubeconfig: seed_kubeconfig.to_path_buf(),
            namespace,
            shoot,
            shoot_kubeconfig,
            shoot_dir,
            grm,
        }
    }

    /// A second resource manager for another namespace of the same seed, writing to the same
    /// shoot.
    pub fn extra_resource_manager(&self, namespace: &str) -> ResourceManager {
        ResourceManager::start(
            std::env::temp_dir().join(format!("grm-{namespace}")),
            &self.seed_kubeconfig,
            &self.shoot_kubeconfig,
            namespace,
            None,
        )
    }

    /// The resource manager's log, for failure messages.
    pub fn grm_log(&self) -> String {
        self.grm.log()
    }

    /// ManagedResources of the shoot namespace.
    pub fn managed_resources(&self) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "resources.gardener.cloud",
            "v1alpha1",
            "ManagedResource",
        ));
        Api::namespaced_with(self.seed.clone(), &self.namespace, &resource)
    }

    /// Polls `check` until it yields a value; on timeout fails with `what` and the tail of the
    /// resource manager's log.
    pub async fn eventually<T, F, Fut>(&self, what: &str, timeout: Duration, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        match super::try_poll(timeout, async || check().await).await {
            Ok(value) => value,
            Err(why) => panic!("{what}: {why}\n{}", self.grm_log_tail()),
        }
    }

    /// The last 40 lines of the resource manager's log, headed, for failure messages.
    pub fn grm_log_tail(&self) -> String {
        format!(
            "--- gardener-resource-manager log (tail) ---\n{}",
            super::tail(&self.grm_log(), 40)
        )
    }
}

/// The status (`True`, `False`, …) of the condition `type_` of a ManagedResource.
pub fn condition(mr: &DynamicObject, type_: &str) -> Option<String> {
    mr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

/// gardenlet's shoot access Secret `gardener` in the shoot namespace: the kubeconfig extensions
/// read the shoot with (Gardener's library prefers `gardener-internal`, which a shoot whose API
/// server is not in the seed's network does not need).
async fn shoot_access_secret(seed: &Client, namespace: &str, shoot_kubeconfig: &Path) {
    let kubeconfig = std::fs::read_to_string(shoot_kubeconfig).unwrap();
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "gardener", "namespace": namespace},
        "type": "Opaque",
        "stringData": {"kubeconfig": kubeconfig},
    }))
    .unwrap();
    Api::<Secret>::namespaced(seed.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

impl Drop for Gardener {
    fn drop(&mut self) {
        // The resource manager first: the shoot it writes to goes next.
        self.grm.stop();
        let _ = Command::new(repo_root().join("hack/control-plane.sh"))
            .args(["down", "--dir"])
            .arg(&self.shoot_dir)
            .status();
        let _ = std::fs::remove_dir_all(&self.shoot_dir);
    }
}

/// The real gardener-resource-manager (`hack/gardener-resource-manager.sh`), stopped on drop:
/// it applies the ManagedResources of `namespace` in the source cluster whose class is `class`
/// (none: a shoot's resource manager) to the target cluster.
pub struct ResourceManager {
    dir: PathBuf,
}

impl ResourceManager {
    pub fn start(
        dir: PathBuf,
        source_kubeconfig: &Path,
        target_kubeconfig: &Path,
        namespace: &str,
        class: Option<&str>,
    ) -> Self {
        let status = Command::new(repo_root().join("hack/gardener-resource-manager.sh"))
            .args(["up", "--dir"])
            .arg(&dir)
            .arg("--seed-kubeconfig")
            .arg(source_kubeconfig)
            .arg("--shoot-kubeconfig")
            .arg(target_kubeconfig)
            .args(["--namespace", namespace])
            .args(class.map(|c| ["--class", c]).into_iter().flatten())
            .args(["--owner-pid", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(
            status.success(),
            "hack/gardener-resource-manager.sh up failed"
        );
        Self { dir }
    }

    /// Its log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("gardener-resource-manager.log")).unwrap_or_default()
    }

    /// Stops it (again, harmlessly, once stopped); stop it only after the ManagedResources it
    /// serves are gone, as it holds a finalizer on each.
    pub fn stop(&self) {
        let _ = Command::new(repo_root().join("hack/gardener-resource-manager.sh"))
            .args(["down", "--dir"])
            .arg(&self.dir)
            .status();
    }
}

impl Drop for ResourceManager {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
