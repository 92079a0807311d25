//! A cluster that runs Pods: a control plane on the node's address, a registry on loopback and a
//! real node beside them (`hack/node.sh`), all owned by this test process, so their watchdogs stop
//! them when it is gone. One node runs per machine: the process holds the machine's node lock for
//! its lifetime, so test runs in other worktrees wait for it instead of failing.

use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::repo_root;

pub struct NodeCluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    /// The node's address: where Pods reach the API server and anything else on this machine.
    pub address: IpAddr,
    /// `host:port` of the registry on loopback the node pulls from.
    pub registry: String,
    /// containerd's socket, for looking at the node's containers from the outside.
    pub containerd: PathBuf,
    _machine_lock: File,
}

static NODE: OnceLock<NodeCluster> = OnceLock::new();

/// The node cluster of this test binary, started on first use.
pub fn node_cluster() -> &'static NodeCluster {
    NODE.get_or_init(|| std::thread::spawn(start).join().expect("starting the node"))
}

fn start() -> NodeCluster {
    let lock_path = std::env::temp_dir().join("ontap-operator-node.lock");
    let lock = File::create(&lock_path).unwrap();
    if lock.try_lock().is_err() {
        eprintln!(
            "waiting for {}: another test run uses this machine's node",
            lock_path.display()
        );
        lock.lock().unwrap();
    }
    let dir = crate::owned_dir("node");
    std::fs::create_dir_all(&dir).unwrap();
    let owner = std::process::id().to_string();
    let plane = dir.join("control-plane");
    let registry_dir = dir.join("registry");
    let node_dir = dir.join("node");
    // Claims the machine first: a node still being stopped takes the address with it.
    let address: IpAddr = script("node.sh", &["address", "--dir", path(&node_dir)])
        .trim()
        .parse()
        .unwrap();
    script(
        "control-plane.sh",
        &[
            "up",
            "--dir",
            path(&plane),
            "--address",
            &address.to_string(),
            "--owner-pid",
            &owner,
        ],
    );
    script(
        "registry.sh",
        &["up", "--dir", path(&registry_dir), "--owner-pid", &owner],
    );
    let registry = std::fs::read_to_string(registry_dir.join("address"))
        .unwrap()
        .trim()
        .to_owned();
    script(
        "node.sh",
        &[
            "up",
            "--dir",
            path(&node_dir),
            "--control-plane",
            path(&plane),
            "--registry",
            &registry,
            "--owner-pid",
            &owner,
        ],
    );
    remove_when_stopped(&dir);
    NodeCluster {
        kubeconfig: plane.join("kubeconfig"),
        containerd: node_dir.join("containerd/containerd.sock"),
        dir,
        address,
        registry,
        _machine_lock: lock,
    }
}

impl NodeCluster {
    /// Puts an image `hack/tools.sh` builds (`toolbox`) into the node, as no registry serves it.
    pub fn import(&self, tool: &str) -> String {
        let archive = crate::tool(tool);
        script(
            "node.sh",
            &[
                "import",
                "--dir",
                path(&self.dir.join("node")),
                path(&archive),
            ],
        );
        std::fs::read_to_string(archive.with_file_name("name"))
            .unwrap()
            .trim()
            .to_owned()
    }
}

/// Once this process is gone and the scripts' own watchdogs have stopped what they started (each
/// removes its folder), removes `dir` with what the tests wrote there (helm's caches, values).
fn remove_when_stopped(dir: &Path) {
    let script = r#"
        while kill -0 "$1" 2>/dev/null; do sleep 1; done
        for _ in $(seq 1 120); do
          [ -e "$2/node" ] || [ -e "$2/control-plane" ] || [ -e "$2/registry" ] || break
          sleep 1
        done
        rm -rf "$2""#;
    // Not waited for: it waits for this process to be gone, so it outlives it by design.
    #[allow(clippy::zombie_processes)]
    Command::new("setsid")
        .args(["bash", "-c", script, "_", &std::process::id().to_string()])
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `hack/<name> args…` and gives its standard output; panics with its error output.
pub fn script(name: &str, args: &[&str]) -> String {
    let mut command = Command::new(repo_root().join("hack").join(name));
    String::from_utf8(crate::stdout_of(command.args(args))).unwrap()
}
