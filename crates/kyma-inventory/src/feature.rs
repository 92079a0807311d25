//! The Kyma feature (`--controllers kyma`): its flags, its two controllers and its render
//! metrics, as one entry of the operator's features list.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use reconcile_engine::feature::{Declarations, Feature, FeatureError, Offline, Setup, parse_flags};

use crate::render::RenderMetrics;
use crate::{KymaSettings, register};

// The feature's flags (no doc comment: clap would make it the `run` command's about text).
#[derive(Clone, Debug, Args)]
pub struct KymaArgs {
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
    /// How many `helm template` processes may run at once (each holds tens of MiB).
    #[arg(long, env = "ONTAP_OPERATOR_KYMA_MAX_RENDERS", default_value_t = crate::render::DEFAULT_MAX_RENDERS, value_parser = clap::value_parser!(u16).range(1..))]
    pub kyma_max_renders: u16,
}

/// The Kyma feature.
pub struct KymaFeature;

/// Its name in `--controllers`, and the chart switch of its RBAC rules (`kyma.enabled`).
pub const NAME: &str = "kyma";

impl Feature for KymaFeature {
    fn name(&self) -> &'static str {
        NAME
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        KymaArgs::augment_args(command)
    }

    fn setup(&self, flags: &clap::ArgMatches, setup: &mut Setup<'_>) -> Result<(), FeatureError> {
        let args: KymaArgs = parse_flags(NAME, flags)?;
        let render_metrics = RenderMetrics::default();
        render_metrics.register(setup.registry);
        let settings = KymaSettings {
            helm: args.helm,
            time_scale: args.kyma_time_scale,
            progress_interval: args.kyma_progress_interval,
            render_metrics,
            max_renders: usize::from(args.kyma_max_renders),
        };
        let client = setup.client();
        register(setup.manager, client, &settings)?;
        Ok(())
    }

    fn declarations(&self, offline: &Offline) -> Result<Vec<Declarations>, FeatureError> {
        let kyma = offline.read(Some(NAME), |manager, client| {
            register(manager, client, &KymaSettings::default())
        })?;
        Ok(vec![kyma])
    }
}
