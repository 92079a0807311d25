//! What the container runtime really did, read from the host's `/proc` and cgroups rather than from
//! the Pod's spec: which processes a Pod runs, as whom, with which privileges, mounts, network
//! namespace and memory limit.

use std::path::PathBuf;

/// The host's processes of the Pod with `uid` (cgroupfs puts them under `pod<uid>`), but the
/// sandbox's pause.
pub fn pod_processes(uid: &str) -> Vec<u32> {
    let mark = format!("pod{uid}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cgroups) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if cgroups.contains(&mark) && comm.trim() != "pause" {
            pids.push(pid);
        }
    }
    pids
}

/// A line of `/proc/<pid>/status`, e.g. `Uid`, `CapEff`, `NoNewPrivs`, `Seccomp`.
pub fn status_field(pid: u32, key: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
        .trim()
        .to_owned()
}

/// The options of the mount at `target` in the process's own mount namespace.
pub fn mount_options(pid: u32, target: &str) -> Option<String> {
    let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    // mountinfo: id parent major:minor root mount-point options … (proc(5))
    mounts.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        (fields.get(4) == Some(&target)).then(|| fields[5].to_owned())
    })
}

/// The network namespace the process is in (the inode `/proc/<pid>/ns/net` links to).
pub fn network_namespace(pid: u32) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap()
}

/// The memory cgroup (v1) folder of the container process `pid`.
fn memory_cgroup(pid: u32) -> PathBuf {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let path = cgroups
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then(|| path.to_owned())
        })
        .expect("a memory cgroup (v1)");
    PathBuf::from("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'))
}

/// The memory limit the kernel enforces on the container of `pid`, and the most it has used.
pub fn memory_limit_and_peak(pid: u32) -> (u64, u64) {
    let dir = memory_cgroup(pid);
    let read = |file: &str| -> u64 {
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
            .trim()
            .parse()
            .unwrap()
    };
    (
        read("memory.limit_in_bytes"),
        read("memory.max_usage_in_bytes"),
    )
}
