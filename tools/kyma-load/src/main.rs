//! `kyma-load`: creates Kymas with the 18 standard components (as the experiment's
//! `sample-data.sh` does) and, with `--wait`, measures how long until all reach success. A tool
//! of its own so that load driving and `/proc` sampling stay out of the operator's binary.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use kube::Client;

use kyma_load::{run_load, single_kyma_time};

#[derive(Debug, Parser)]
#[command(name = "kyma-load", version, about)]
struct Args {
    /// Kubeconfig file; without it, KUBECONFIG's default rules and then the in-cluster config apply.
    #[arg(long, env = "ONTAP_OPERATOR_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// How many Kymas (`kyma-sample-1` … `kyma-sample-N`).
    #[arg(long)]
    kymas: usize,
    /// The namespace, created if missing.
    #[arg(long, default_value = "pb")]
    namespace: String,
    /// Creates per second; 0 = all at once (as fast as the API server takes them).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Wait until every Kyma reports success, and print the measurements.
    #[arg(long)]
    wait: bool,
    /// Give up waiting after this long.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
    timeout: Duration,
    /// The operator's process id, for its peak RSS (from /proc; same machine only).
    #[arg(long)]
    operator_pid: Option<u32>,
    /// Seconds one Kyma takes alone, for the ratio (default: 67 s, the longest standard
    /// component, divided by --time-scale).
    #[arg(long)]
    single_kyma_seconds: Option<f64>,
    /// The operator's --kyma-time-scale, for the expected single-Kyma time.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let config = reconcile_engine::load_config(args.kubeconfig.as_deref(), USER_AGENT).await?;
    let client = Client::try_from(config).context("building the Kubernetes client")?;
    let single = args
        .single_kyma_seconds
        .map(Duration::from_secs_f64)
        .unwrap_or_else(|| single_kyma_time(args.time_scale));
    let report = run_load(
        &client,
        &args.namespace,
        args.kymas,
        args.rate,
        args.wait.then_some(args.timeout),
        args.operator_pid,
        single,
    )
    .await?;
    for line in report.lines() {
        println!("{line}");
    }
    Ok(())
}

const USER_AGENT: &str = concat!("kyma-load/", env!("CARGO_PKG_VERSION"));
