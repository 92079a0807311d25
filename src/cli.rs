//! Command line. Every flag can also be set through the environment variable named in `--help`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "ontap-operator",
    version,
    about = "Provisions NetApp ONTAP SVMs with verified seed secrets"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controllers until SIGTERM or SIGINT.
    Run(Box<RunArgs>),
    /// Print every CRD this operator owns as multi-document YAML.
    Crds(CrdsArgs),
    /// Write the generated manifests (crds/, deploy/rbac.yaml, the chart's ClusterRole rules)
    /// from the controllers' registrations into a repository checkout.
    Manifests(ManifestsArgs),
    /// Print the operator's version.
    Version,
    /// Create Kymas with the 18 standard components (as the experiment's sample-data.sh does)
    /// and, with --wait, measure how long until all reach success.
    KymaLoad(KymaLoadArgs),
}

#[derive(Debug, Args)]
pub struct KymaLoadArgs {
    /// Kubeconfig file; without it, KUBECONFIG's default rules and then the in-cluster config apply.
    #[arg(long, env = "ONTAP_OPERATOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// How many Kymas (`kyma-sample-1` … `kyma-sample-N`).
    #[arg(long)]
    pub kymas: usize,
    /// The namespace, created if missing.
    #[arg(long, default_value = "pb")]
    pub namespace: String,
    /// Creates per second; 0 = all at once (as fast as the API server takes them).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Wait until every Kyma reports success, and print the measurements.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
    pub timeout: Duration,
    /// The operator's process id, for its peak RSS (from /proc; same machine only).
    #[arg(long)]
    pub operator_pid: Option<u32>,
    /// Seconds one Kyma takes alone, for the ratio (default: 67 s, the longest standard
    /// component, divided by --time-scale).
    #[arg(long)]
    pub single_kyma_seconds: Option<f64>,
    /// The operator's --kyma-time-scale, for the expected single-Kyma time.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
}

/// Which controllers `run` starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ControllerSet {
    /// OntapCluster and StorageVirtualMachine (and the Gardener Extension with --extension-type).
    Ontap,
    /// Kyma and HelmComponent (inventory.kyma-project.io).
    Kyma,
}

#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this folder (named `<plural>.<group>.yaml`) instead of printing.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// The repository root to write into.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig file; without it, KUBECONFIG's default rules and then the in-cluster config apply.
    #[arg(long, env = "ONTAP_OPERATOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Log line format. Filter with RUST_LOG (default `info`).
    #[arg(long, env = "ONTAP_OPERATOR_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Address of the /metrics server (`:8080` = every interface, `0` = off).
    #[arg(
        long,
        env = "ONTAP_OPERATOR_METRICS_BIND_ADDRESS",
        default_value = ":8080"
    )]
    pub metrics_bind_address: String,
    /// Address of the /healthz and /readyz server (`0` = off).
    #[arg(
        long,
        env = "ONTAP_OPERATOR_HEALTH_PROBE_BIND_ADDRESS",
        default_value = ":8081"
    )]
    pub health_probe_bind_address: String,
    /// Run controllers only while holding a Lease, so that replicas can stand by.
    #[arg(long, env = "ONTAP_OPERATOR_LEADER_ELECT")]
    pub leader_elect: bool,
    /// Namespace of the Lease; default: the pod's namespace (POD_NAMESPACE), else `ontap-operator-system`.
    #[arg(long, env = "ONTAP_OPERATOR_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(
        long,
        env = "ONTAP_OPERATOR_LEADER_ELECTION_ID",
        default_value = "ontap-operator"
    )]
    pub leader_election_id: String,
    /// How long a Lease stays valid after its last renewal: the longest a standby waits after a
    /// leader died without releasing it.
    #[arg(long, env = "ONTAP_OPERATOR_LEASE_DURATION", value_parser = humantime::parse_duration, default_value = "15s")]
    pub lease_duration: Duration,
    /// How long before expiry the leader renews the Lease.
    #[arg(long, env = "ONTAP_OPERATOR_LEASE_RENEW_BEFORE", value_parser = humantime::parse_duration, default_value = "5s")]
    pub lease_renew_before: Duration,
    /// On SIGTERM, how long in-flight work may take to finish before the process exits.
    #[arg(long, env = "ONTAP_OPERATOR_SHUTDOWN_TIMEOUT", value_parser = humantime::parse_duration, default_value = "25s")]
    pub shutdown_timeout: Duration,
    /// Watch StorageVirtualMachines (and their Secrets) in this namespace only; default: all.
    #[arg(long, env = "ONTAP_OPERATOR_NAMESPACE")]
    pub namespace: Option<String>,
    /// Reconcile only the OntapClusters with these labels (e.g. `shard=a`), to run several
    /// operators side by side; default: all.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_CLUSTER_SELECTOR")]
    pub ontap_cluster_selector: Option<String>,
    /// The only namespace whose Secrets an OntapCluster may name for its credentials and CA;
    /// default: the pod's namespace (POD_NAMESPACE), else `ontap-operator-system`. Whoever may
    /// create an OntapCluster cannot make the operator read Secrets anywhere else.
    #[arg(long, env = "ONTAP_OPERATOR_CREDENTIALS_NAMESPACE")]
    pub credentials_namespace: Option<String>,
    /// HTTP(S) proxy for requests to ONTAP (e.g. `http://proxy:3128`). Without it requests go
    /// straight to the cluster: HTTPS_PROXY and friends are ignored for ONTAP, so that a proxy
    /// meant for other traffic never sees cluster credentials unasked.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_PROXY")]
    pub ontap_proxy: Option<reqwest::Url>,
    /// Timeout of one request to ONTAP (a lost answer is noticed after this long).
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_REQUEST_TIMEOUT", value_parser = humantime::parse_duration, default_value = "30s")]
    pub ontap_request_timeout: Duration,
    /// ONTAP jobs (SVM create, change, delete) the operator runs at once per OntapCluster; ONTAP
    /// itself runs 5 and refuses more.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_SVM_JOBS_PER_CLUSTER", default_value_t = 5,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub ontap_svm_jobs_per_cluster: u16,
    /// How long an OntapCluster's aggregate list is reused for SVM creates (0s: listed for each).
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_AGGREGATES_MAX_AGE", value_parser = humantime::parse_duration, default_value = "30s")]
    pub ontap_aggregates_max_age: Duration,
    /// /healthz fails while a reconcile has been running longer than this: far beyond what its
    /// timeouts allow (ONTAP requests, job waits), so it is stuck and a restart is the way out.
    #[arg(long, env = "ONTAP_OPERATOR_STUCK_RECONCILE_AFTER", value_parser = humantime::parse_duration, default_value = "10m")]
    pub stuck_reconcile_after: Duration,
    /// Run the Gardener Extension controller for Extensions of this type (e.g. `ontap`), with
    /// the heartbeat Lease. Off by default: Extension, Cluster and ManagedResource exist only in
    /// a Gardener seed.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_TYPE")]
    pub extension_type: Option<String>,
    /// The OntapCluster of shoots whose providerConfig names none; default: the only one there is.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_DEFAULT_CLUSTER")]
    pub extension_default_cluster: Option<String>,
    /// Where the StorageVirtualMachines that provision per-project SVMs (metal-stack's layout:
    /// one SVM per project, one account per shoot) live; default: the pod's namespace
    /// (POD_NAMESPACE), else `ontap-operator-system`. The operator must watch it.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_PROJECT_NAMESPACE")]
    pub extension_project_namespace: Option<String>,
    /// The Trident operator image of shoots whose providerConfig names none.
    #[arg(long, env = "ONTAP_OPERATOR_TRIDENT_OPERATOR_IMAGE")]
    pub trident_operator_image: Option<String>,
    /// Namespace of the `gardener-extension-heartbeat` Lease (the extension's own); default: the
    /// pod's namespace (POD_NAMESPACE), else `ontap-operator-system`.
    #[arg(long, env = "ONTAP_OPERATOR_HEARTBEAT_NAMESPACE")]
    pub heartbeat_namespace: Option<String>,
    /// How often the heartbeat Lease is renewed.
    #[arg(long, env = "ONTAP_OPERATOR_HEARTBEAT_RENEW_INTERVAL", value_parser = humantime::parse_duration, default_value = "30s")]
    pub heartbeat_renew_interval: Duration,
    /// The controllers to run, comma-separated: `ontap`, `kyma`.
    #[arg(
        long,
        env = "ONTAP_OPERATOR_CONTROLLERS",
        value_enum,
        value_delimiter = ',',
        default_value = "ontap"
    )]
    pub controllers: Vec<ControllerSet>,
    /// The helm binary the HelmComponent controller renders charts with: a path, or a name
    /// looked up on PATH.
    #[arg(long, env = "ONTAP_OPERATOR_HELM", default_value = "helm")]
    pub helm: PathBuf,
    /// Divides every duration of the simulated HelmComponent lifecycle (and the progress
    /// interval): 10 makes a standard Kyma take 6.7 s instead of 67 s. For tests.
    #[arg(long, env = "ONTAP_OPERATOR_KYMA_TIME_SCALE", default_value_t = 1.0)]
    pub kyma_time_scale: f64,
    /// How long after a Kyma began reconciling its status.waitingFor may be refreshed, once
    /// (reconciling and success are written at once: three status writes per Kyma).
    #[arg(long, env = "ONTAP_OPERATOR_KYMA_PROGRESS_INTERVAL", value_parser = humantime::parse_duration, default_value = "40s")]
    pub kyma_progress_interval: Duration,
    /// Scheduling, concurrency and client rate limits of the reconcile engine.
    #[command(flatten)]
    pub engine: crate::runtime::engine_flags::EngineArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
