//! The process around the controllers: Kubernetes client, logging, signals.

use std::time::Duration;

use anyhow::Context;
use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use crate::cli::{LogFormat, RunArgs};

/// Builds the Kubernetes client from `--kubeconfig`, else the usual `KUBECONFIG` / in-cluster rules.
pub async fn kube_client(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<Client> {
    Client::try_from(kube_config(kubeconfig).await?).context("building the Kubernetes client")
}

/// Loads the client configuration from `--kubeconfig`, else the usual `KUBECONFIG` / in-cluster
/// rules.
pub async fn kube_config(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<Config> {
    Ok(match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))?
        }
        None => Config::infer()
            .await
            .context("no kubeconfig and no in-cluster configuration")?,
    })
}

pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Resolves on the first SIGTERM or SIGINT.
pub async fn shutdown_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
        result = tokio::signal::ctrl_c() => {
            result.context("waiting for SIGINT")?;
            tracing::info!("SIGINT received, shutting down");
        }
    }
    Ok(())
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    init_logging(args.log_format);
    // Served by the admin server once it exists; until then the metrics are only recorded.
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = crate::engine::Metrics::new(&mut registry);
    let client = crate::engine::build_client(
        kube_config(args.kubeconfig.as_deref()).await?,
        (&args.engine).into(),
        metrics,
    )
    .context("building the Kubernetes client")?;
    // Fail fast and loudly when the API server is unreachable or rejects our credentials,
    // instead of starting controllers that would only log watch errors.
    let version = tokio::time::timeout(Duration::from_secs(30), client.apiserver_version())
        .await
        .context("timed out reaching the API server")?
        .context("reaching the API server")?;
    tracing::info!(server = %version.git_version, "connected to the API server");
    shutdown_signal().await
}
