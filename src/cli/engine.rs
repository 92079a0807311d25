//! The reconcile engine's command-line flags, flattened into `ontap-operator run`.

use std::time::Duration;

use clap::Args;

use reconcile_engine::{ClientLimits, EngineConfig};

/// The engine's flags, flattened into `ontap-operator run`.
#[derive(Clone, Debug, Args)]
pub struct EngineArgs {
    /// Re-verify every object at least this often, even without events (plus up to 10% jitter).
    #[arg(long, env = "ONTAP_OPERATOR_SYNC_PERIOD", value_parser = humantime::parse_duration, default_value = "10m")]
    pub sync_period: Duration,
    /// Reconciles running at once, per controller.
    #[arg(long, env = "ONTAP_OPERATOR_MAX_CONCURRENT_RECONCILES", default_value_t = 50,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_reconciles: u16,
    /// Kubernetes API requests per second (client-side token bucket); 0 disables the limit.
    #[arg(long, env = "ONTAP_OPERATOR_KUBE_API_QPS", default_value_t = 1000.0)]
    pub kube_api_qps: f32,
    /// Kubernetes API requests allowed in a burst.
    #[arg(long, env = "ONTAP_OPERATOR_KUBE_API_BURST", default_value_t = 2000)]
    pub kube_api_burst: u32,
    /// Kubernetes API writes (POST, PUT, PATCH, DELETE) awaiting their response at once; 0
    /// disables the bound.
    #[arg(
        long,
        env = "ONTAP_OPERATOR_KUBE_API_MAX_MUTATING_IN_FLIGHT",
        default_value_t = 32
    )]
    pub kube_api_max_mutating_in_flight: u32,
    /// First retry delay after a failed reconcile; doubles per consecutive failure.
    #[arg(long, env = "ONTAP_OPERATOR_BACKOFF_BASE", value_parser = humantime::parse_duration, default_value = "1s")]
    pub backoff_base: Duration,
    /// Longest retry delay after failed reconciles.
    #[arg(long, env = "ONTAP_OPERATOR_BACKOFF_MAX", value_parser = humantime::parse_duration, default_value = "1000s")]
    pub backoff_max: Duration,
    /// Reconcile starts per second, per controller; 0 disables the limit.
    #[arg(long, env = "ONTAP_OPERATOR_RECONCILE_RATE", default_value_t = 1000.0)]
    pub reconcile_rate: f64,
    /// Reconcile starts allowed in a burst, per controller.
    #[arg(long, env = "ONTAP_OPERATOR_RECONCILE_BURST", default_value_t = 2000)]
    pub reconcile_burst: u32,
    /// Reconciles per controller that may wait without holding a worker (for a slot of an ONTAP
    /// cluster's job limit); beyond it an object waits in line and is queued again when one leaves.
    #[arg(
        long,
        env = "ONTAP_OPERATOR_MAX_PARKED_RECONCILES",
        default_value_t = 2000
    )]
    pub max_parked_reconciles: u32,
}

impl From<&EngineArgs> for EngineConfig {
    fn from(args: &EngineArgs) -> Self {
        EngineConfig {
            sync_period: args.sync_period,
            max_concurrent_reconciles: args.max_concurrent_reconciles,
            backoff_base: args.backoff_base,
            backoff_max: args.backoff_max,
            reconcile_rate: args.reconcile_rate,
            reconcile_burst: args.reconcile_burst,
            max_parked_reconciles: args.max_parked_reconciles,
            ..EngineConfig::default()
        }
    }
}

impl From<&EngineArgs> for ClientLimits {
    fn from(args: &EngineArgs) -> Self {
        ClientLimits {
            qps: args.kube_api_qps,
            burst: args.kube_api_burst,
            max_mutating_in_flight: args.kube_api_max_mutating_in_flight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        engine: EngineArgs,
    }

    #[test]
    fn flag_defaults_match_config_defaults() {
        let cli = Cli::try_parse_from(["x"]).expect("defaults parse");
        assert_eq!(EngineConfig::from(&cli.engine), EngineConfig::default());
        assert_eq!(ClientLimits::from(&cli.engine), ClientLimits::default());
    }

    #[test]
    fn flags_parse_durations_and_reject_zero_workers() {
        let cli = Cli::try_parse_from([
            "x",
            "--sync-period",
            "90s",
            "--backoff-max",
            "5m",
            "--kube-api-qps",
            "0",
        ])
        .expect("parses");
        let config = EngineConfig::from(&cli.engine);
        assert_eq!(config.sync_period, Duration::from_secs(90));
        assert_eq!(config.backoff_max, Duration::from_secs(300));
        assert_eq!(ClientLimits::from(&cli.engine).qps, 0.0);
        assert!(Cli::try_parse_from(["x", "--max-concurrent-reconciles", "0"]).is_err());
    }
}
