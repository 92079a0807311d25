//! Command line. Every flag can also be set through the environment variable named in `--help`.
//! `run` takes the process's own flags from [`RunArgs`] and each feature's from the feature
//! ([`FEATURES`]), so a feature's flags live with the feature.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::features::FEATURES;

pub mod engine;

/// How `/metrics` is protected (`--metrics-auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricsAuth {
    /// A bearer token the API server authenticates (TokenReview) and authorizes for
    /// `get /metrics` (SubjectAccessReview), as controller-runtime's secure serving decides.
    Kubernetes,
    /// None: whoever reaches the address reads it.
    None,
}

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
    /// Write the generated manifests (crds/, the chart's ClusterRole rules and features list)
    /// from the features' registrations into a repository checkout.
    Manifests(ManifestsArgs),
    /// Serve the garden's validating webhook for Shoots that enable the extension: their
    /// providerConfig is refused where the shoot owner writes it (docs/gardener.md).
    Admission(Box<AdmissionArgs>),
    /// Print the operator's version.
    Version,
}

#[derive(Debug, Args)]
pub struct AdmissionArgs {
    /// Kubeconfig of the cluster the admission runs in, where it keeps its certificate Secret;
    /// without it, KUBECONFIG's default rules and then the in-cluster config apply.
    #[arg(long, env = "ONTAP_OPERATOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig of the garden whose Shoots are validated: the webhook configuration is
    /// written there. Default: the one gardener-operator mounts into an admission's Pods when
    /// present, else the cluster of --kubeconfig.
    #[arg(long, env = "ONTAP_OPERATOR_GARDEN_KUBECONFIG")]
    pub garden_kubeconfig: Option<PathBuf>,
    /// Namespace of the certificate Secret.
    #[arg(long, env = "POD_NAMESPACE", default_value = "garden")]
    pub namespace: String,
    /// The Secret holding the CA and the serving certificate, shared by all replicas.
    #[arg(long, default_value = "gardener-extension-ontap-admission-tls")]
    pub certificate_secret: String,
    /// Names (DNS or IP) the serving certificate is valid for, besides the host of --webhook-url.
    #[arg(long = "certificate-name", value_delimiter = ',')]
    pub certificate_names: Vec<String>,
    /// How often the certificates and the registration are checked and renewed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub certificate_check_period: std::time::Duration,
    /// Lifetime of a CA; a new one joins the bundle when a third of it is left.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "730d")]
    pub ca_validity: std::time::Duration,
    /// How long a new CA is published in the garden's bundle before it signs the served
    /// certificate; keep it well below a third of --ca-validity.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1m")]
    pub ca_publication_grace: std::time::Duration,
    /// Lifetime of a serving certificate; renewed when a third of it is left.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "90d")]
    pub certificate_validity: std::time::Duration,
    /// Address of the HTTPS webhook server (port 0: any free port, logged at start).
    #[arg(long, default_value = "0.0.0.0:10250")]
    pub bind_address: std::net::SocketAddr,
    /// Address of /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub health_bind_address: std::net::SocketAddr,
    /// The URL the garden's API servers call (a Service name in a cluster); default:
    /// https://<bound address>/validate-shoots.
    #[arg(long)]
    pub webhook_url: Option<String>,
    /// Name of the ValidatingWebhookConfiguration written into the garden.
    #[arg(long, default_value = "gardener-extension-ontap-admission")]
    pub webhook_name: String,
    /// How long the garden's API servers wait for an answer.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i32).range(1..=30))]
    pub timeout_seconds: i32,
    /// The extension type whose Shoots are validated; the seed's --extension-type.
    #[arg(long, default_value = "ontap")]
    pub extension_type: String,
    /// Whether a providerConfig may name an image; must match the seed's flag of the same name.
    #[arg(long)]
    pub extension_allow_shoot_images: bool,
    #[arg(long, value_enum, default_value = "json")]
    pub log_format: LogFormat,
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
    /// Who may read /metrics: `kubernetes`, a bearer token the API server authenticates and
    /// authorizes for `get /metrics` (its series name tenants' namespaces and failures); `none`,
    /// whoever reaches the address (a loopback address in a local run).
    #[arg(
        long,
        env = "ONTAP_OPERATOR_METRICS_AUTH",
        value_enum,
        default_value_t = MetricsAuth::Kubernetes
    )]
    pub metrics_auth: MetricsAuth,
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
    /// /healthz fails while a reconcile has been running longer than this: far beyond what its
    /// timeouts allow (ONTAP requests, job waits), so it is stuck and a restart is the way out.
    #[arg(long, env = "ONTAP_OPERATOR_STUCK_RECONCILE_AFTER", value_parser = humantime::parse_duration, default_value = "10m")]
    pub stuck_reconcile_after: Duration,
    /// The controllers to run, comma-separated: `ontap` (OntapCluster and StorageVirtualMachine,
    /// and the Gardener Extension with --extension-type), `kyma` (Kyma and HelmComponent).
    #[arg(
        long,
        env = "ONTAP_OPERATOR_CONTROLLERS",
        value_delimiter = ',',
        default_value = "ontap"
    )]
    pub controllers: Vec<String>,
    /// Scheduling, concurrency and client rate limits of the reconcile engine.
    #[command(flatten)]
    pub engine: engine::EngineArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The parsed command line: the subcommand, and for `run` every flag as parsed, from which each
/// feature reads its own.
pub struct Parsed {
    pub command: Command,
    pub run_flags: Option<clap::ArgMatches>,
}

/// The command line with every feature's flags added to `run`, and the names `--controllers`
/// accepts.
pub fn command() -> clap::Command {
    let listed: Vec<&'static str> = FEATURES
        .iter()
        .filter(|feature| feature.listed())
        .map(|feature| feature.name())
        .collect();
    Cli::command().mut_subcommand("run", |run| {
        let run = run.mut_arg("controllers", |arg| {
            arg.value_parser(clap::builder::PossibleValuesParser::new(listed))
        });
        FEATURES.iter().fold(run, |run, feature| feature.flags(run))
    })
}

/// Parses the process's arguments, exiting with clap's message on bad input.
pub fn parse() -> Parsed {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let run_flags = matches.subcommand_matches("run").cloned();
    Parsed {
        command: cli.command,
        run_flags,
    }
}
