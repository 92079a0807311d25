//! Command line. Every flag can also be set through the environment variable named in `--help`.

use std::path::PathBuf;

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
    Run(RunArgs),
    /// Print every CRD this operator owns as multi-document YAML.
    Crds(CrdsArgs),
    /// Print the operator's version.
    Version,
}

#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this folder (named `<plural>.<group>.yaml`) instead of printing.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig file; without it, KUBECONFIG's default rules and then the in-cluster config apply.
    #[arg(long, env = "ONTAP_OPERATOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Log line format.
    #[arg(long, env = "ONTAP_OPERATOR_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Scheduling, concurrency and client rate limits of the reconcile engine.
    #[command(flatten)]
    pub engine: crate::engine::EngineArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
