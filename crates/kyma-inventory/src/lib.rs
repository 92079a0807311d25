//! The Kyma inventory feature (`--controllers kyma`, [`feature`]): Kyma, which keeps one HelmComponent
//! per listed component, and HelmComponent, which renders the component's chart and simulates
//! its installation — the Go Kyma operator experiment, on the reconcile engine.

pub mod api;
pub mod component;
pub mod feature;
pub mod kyma;
pub mod render;

use std::path::PathBuf;
use std::time::Duration;

use kube::Client;

use component::Lifecycle;
use reconcile_engine::{Manager, ManagerError};
use render::{RenderMetrics, Renderer};

/// The 18 components of the experiment's `sample-data.sh`, in its order.
pub const STANDARD_COMPONENTS: &[&str] = &[
    "istio",
    "cluster-essentials",
    "certificates",
    "istio-resources",
    "logging",
    "tracing",
    "kiali",
    "monitoring",
    "eventing",
    "ory",
    "api-gateway",
    "service-catalog",
    "service-catalog-addons",
    "rafter",
    "helm-broker",
    "cluster-users",
    "serverless",
    "application-connector",
];

/// The namespace `sample-data.sh` gives a standard component, if any.
pub fn standard_namespace(component: &str) -> Option<&'static str> {
    match component {
        "istio" | "certificates" => Some("istio-system"),
        "application-connector" => Some("kyma-integration"),
        _ => None,
    }
}

/// The Kyma controllers' settings.
#[derive(Clone, Debug)]
pub struct KymaSettings {
    /// The helm binary (a path, or a name looked up on `PATH`).
    pub helm: PathBuf,
    /// Every lifecycle duration (and the progress interval) is divided by this.
    pub time_scale: f64,
    /// `waitingFor` is refreshed once, this long or more after a Kyma began reconciling.
    pub progress_interval: Duration,
    /// Where the render metrics are recorded.
    pub render_metrics: RenderMetrics,
    /// How many helm processes may run at once.
    pub max_renders: usize,
}

impl Default for KymaSettings {
    fn default() -> Self {
        KymaSettings {
            helm: PathBuf::from("helm"),
            time_scale: 1.0,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            render_metrics: RenderMetrics::default(),
            max_renders: usize::from(render::DEFAULT_MAX_RENDERS),
        }
    }
}

/// The default of `--kyma-progress-interval`: a standard Kyma takes 67 s, so its one refresh
/// of `waitingFor` comes about halfway — three status writes with `reconciling` and `success`.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(40);

/// Registers the Kyma and HelmComponent controllers.
pub fn register(
    manager: &mut Manager,
    client: Client,
    settings: &KymaSettings,
) -> Result<(), ManagerError> {
    let lifecycle = Lifecycle {
        time_scale: settings.time_scale,
    };
    let renderer = Renderer::new(
        settings.helm.clone(),
        settings.max_renders,
        settings.render_metrics.clone(),
    );
    component::register(manager, renderer, lifecycle)?;
    kyma::register(manager, client, lifecycle, settings.progress_interval)
}
