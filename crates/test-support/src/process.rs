//! Sampling processes of this machine from `/proc`: peak memory, CPU time, load. Benchmarks and
//! the load driver print these next to their timings, since on a machine the API server, etcd
//! and the operator share, which one the cores went to says what bounds a run.

use std::time::{Duration, Instant};

/// A `/proc/<pid>/status` value in kB, e.g. `VmHWM` (peak RSS) or `VmRSS`.
pub fn proc_status_kb(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The CPU time process `pid` has used so far (user and system, all its threads), from
/// `/proc/PID/stat`; `None` when it cannot be read (gone, or not Linux).
pub fn proc_cpu(pid: u32) -> Option<Duration> {
    // Linux reports these in USER_HZ, which its ABI fixes at 100 on every architecture.
    const TICKS_PER_SECOND: f64 = 100.0;
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, field 2, may hold spaces and parentheses: count from its closing one.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (user + system) as f64 / TICKS_PER_SECOND,
    ))
}

/// CPU time used by named processes between [`CpuMeter::start`] and [`CpuMeter::stop`], and the
/// wall time between them: on a machine the API server, etcd and the operator share, which one
/// the cores went to says what bounds a run.
#[derive(Debug)]
pub struct CpuMeter {
    started: Instant,
    processes: Vec<(String, u32, Option<Duration>)>,
}

/// What a [`CpuMeter`] measured.
#[derive(Clone, Debug, Default)]
pub struct CpuUse {
    pub wall: Duration,
    /// Each process's CPU time, in the order given; `None` when it could not be read.
    pub processes: Vec<(String, Option<Duration>)>,
}

impl CpuMeter {
    /// Starts measuring the processes `(name, pid)`.
    pub fn start(processes: &[(&str, u32)]) -> Self {
        CpuMeter {
            started: Instant::now(),
            processes: processes
                .iter()
                .map(|(name, pid)| ((*name).to_owned(), *pid, proc_cpu(*pid)))
                .collect(),
        }
    }

    /// The CPU time each process used since the start.
    pub fn stop(&self) -> CpuUse {
        CpuUse {
            wall: self.started.elapsed(),
            processes: self
                .processes
                .iter()
                .map(|(name, pid, before)| {
                    let used = before.zip(proc_cpu(*pid)).map(|(b, a)| a.saturating_sub(b));
                    (name.clone(), used)
                })
                .collect(),
        }
    }
}

impl CpuUse {
    /// The CPU time of the process named `name`.
    pub fn of(&self, name: &str) -> Option<Duration> {
        self.processes
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, used)| *used)
    }

    /// `name 12.3 s (0.45 cores)` for each process, and their sum in cores.
    pub fn line(&self) -> String {
        let wall = self.wall.as_secs_f64().max(1e-9);
        let mut total = 0.0;
        let mut parts = Vec::new();
        for (name, used) in &self.processes {
            match used {
                Some(used) => {
                    total += used.as_secs_f64();
                    parts.push(format!(
                        "{name} {:.1} s ({:.2} cores)",
                        used.as_secs_f64(),
                        used.as_secs_f64() / wall
                    ));
                }
                None => parts.push(format!("{name} unknown")),
            }
        }
        format!(
            "{} over {:.1} s: {:.2} cores together",
            parts.join(", "),
            wall,
            total / wall
        )
    }
}

/// `/proc/loadavg`'s three averages: other work on the machine skews every figure a benchmark
/// prints.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The RSS of `pid` and of every process descending from it, in KiB, and how many descendants
/// there are: what a container's memory limit counts (children included).
pub fn tree_rss_kb(pid: u32) -> (u64, usize) {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = proc_status_kb(child, "PPid") {
                parents.push((child, u32::try_from(ppid).unwrap_or_default()));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    let rss = tree
        .iter()
        .filter_map(|p| proc_status_kb(*p, "VmRSS"))
        .sum();
    (rss, tree.len() - 1)
}
