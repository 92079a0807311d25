//! The process around the controllers: Kubernetes client, telemetry, admin servers, readiness,
//! leader election and graceful shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::cli::{ControllerSet, RunArgs};
use crate::controllers::connections::ClientSettings;
use crate::controllers::extension::controller::ExtensionSettings;
use crate::controllers::extension::heartbeat::{self, HeartbeatConfig};
use crate::controllers::kyma::KymaSettings;
use crate::controllers::kyma::render::RenderMetrics;
use crate::controllers::{self, ControllerContext, Scope};
use crate::engine::{
    ClientLimits, EngineConfig, Identity, Manager, ManagerConfig, Metrics, build_client,
};
use crate::ontap::OntapMetrics;

pub mod admin;
pub mod engine_flags;
pub mod health;
pub mod leader;
pub mod process_metrics;
pub mod telemetry;

use health::{Health, Leadership, LeadershipState, Probe};
use leader::{LeaderElection, LeaderElectionConfig};

/// How often the API server is asked an authenticated question for `/readyz`, and how old the
/// last answer may be: together they turn `/readyz` 503 within 15 s of the API server going away.
const APISERVER_PROBE_INTERVAL: Duration = Duration::from_secs(2);
const APISERVER_PROBE_TIMEOUT: Duration = Duration::from_secs(5);
const APISERVER_PROBE_MAX_AGE: Duration = Duration::from_secs(10);

/// The prefix of the engine's own metrics (`ontap_operator_step_duration_seconds`, …).
pub const METRIC_PREFIX: &str = "ontap_operator";

/// The domain of the Events' reporting controller (`ontap.storage.dev/storagevirtualmachine`).
pub const REPORTER_DOMAIN: &str = "ontap.storage.dev";

/// The engine's identity in this operator: its Event reporter, and trace ids from OpenTelemetry.
pub fn identity() -> Identity {
    Identity {
        reporter_domain: REPORTER_DOMAIN.to_owned(),
        instance: std::env::var("POD_NAME").ok(),
        trace_id: Some(Arc::new(telemetry::record_trace_id)),
    }
}

/// Builds the Kubernetes client from `--kubeconfig`, else the usual `KUBECONFIG` / in-cluster rules.
pub async fn kube_config(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<Config> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))
        }
        None => Config::infer()
            .await
            .context("no kubeconfig and no in-cluster configuration"),
    }?;
    // kube sends no User-Agent, so the API server would name this process "unknown" in every
    // object's managedFields where a write gives no field manager, and in its audit log.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    Ok(config)
}

/// What the operator calls itself to the API server; the API server takes the part before the
/// `/` as the field manager of writes that name none.
pub const USER_AGENT: &str = concat!("ontap-operator/", env!("CARGO_PKG_VERSION"));

/// The operator's own namespace: the pod's (POD_NAMESPACE), else the one its manifests use.
fn own_namespace() -> String {
    std::env::var("POD_NAMESPACE").unwrap_or_else(|_| crate::manifests::NAMESPACE.into())
}

/// The Extension controller's settings, when `--extension-type` enables it.
fn extension_settings(args: &RunArgs) -> Option<ExtensionSettings> {
    let extension_type = args.extension_type.clone()?;
    let mut settings = ExtensionSettings {
        extension_type,
        default_cluster: args.extension_default_cluster.clone(),
        project_namespace: args
            .extension_project_namespace
            .clone()
            .unwrap_or_else(own_namespace),
        ..ExtensionSettings::default()
    };
    if let Some(image) = &args.trident_operator_image {
        settings.images.trident_operator = image.clone();
    }
    Some(settings)
}

/// The Kyma controllers' settings, when `--controllers` names them.
fn kyma_settings(args: &RunArgs, metrics: &RenderMetrics) -> Option<KymaSettings> {
    args.controllers
        .contains(&ControllerSet::Kyma)
        .then(|| KymaSettings {
            helm: args.helm.clone(),
            time_scale: args.kyma_time_scale,
            progress_interval: args.kyma_progress_interval,
            render_metrics: metrics.clone(),
        })
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
    let telemetry = telemetry::init(args.log_format)?;
    let result = run_until_signal(args).await;
    if let Err(error) = &result {
        tracing::error!("{error:#}");
    }
    telemetry.shutdown();
    result
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

/// Asks the API server an authenticated question (API discovery is refused to anonymous users)
/// and publishes the answer for `/readyz`.
fn spawn_apiserver_probe(client: Client, probe: Probe, stop: CancellationToken) {
    tokio::spawn(async move {
        loop {
            let result = match tokio::time::timeout(
                APISERVER_PROBE_TIMEOUT,
                client.list_core_api_versions(),
            )
            .await
            {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(error)) => Err(format!("API server request failed: {error}")),
                Err(_) => Err(format!(
                    "API server did not answer within {}s",
                    APISERVER_PROBE_TIMEOUT.as_secs()
                )),
            };
            probe.record(result);
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(APISERVER_PROBE_INTERVAL) => {}
            }
        }
    });
}

async fn run_until_signal(args: RunArgs) -> anyhow::Result<()> {
    let mut registry = Registry::default();
    let engine_metrics = Metrics::new(&mut registry, METRIC_PREFIX);
    let ontap_metrics = OntapMetrics::new();
    ontap_metrics.register(&mut registry);
    let kyma_render_metrics = RenderMetrics::default();
    if args.controllers.contains(&ControllerSet::Kyma) {
        kyma_render_metrics.register(&mut registry);
    }
    let config = kube_config(args.kubeconfig.as_deref()).await?;
    let client = build_client(
        config,
        ClientLimits::from(&args.engine),
        engine_metrics.clone(),
    )
    .context("building the Kubernetes client")?;
    // A wrong kubeconfig should fail here with a clear message; an API server that is merely
    // down is left to /readyz and the retries of the controllers.
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(version)) => {
            tracing::info!(server = %version.git_version, "connected to the API server")
        }
        Ok(Err(kube::Error::Api(status))) if status.code == 401 => {
            anyhow::bail!(
                "the API server rejected our credentials: {}",
                status.message
            )
        }
        Ok(Err(error)) => tracing::warn!(%error, "API server not reachable yet"),
        Err(_) => tracing::warn!("API server did not answer within 10s"),
    }

    let stop = CancellationToken::new();
    let health = Health::new();
    let leadership = LeadershipState::default();
    registry.register_collector(Box::new(process_metrics::ProcessCollector));
    let leader_status = Family::<LeaseLabels, Gauge>::default();
    registry.register(
        "leader_election_master_status",
        "1 while this process holds the leader election lease, else 0",
        leader_status.clone(),
    );
    let registry = Arc::new(registry);

    let apiserver = Probe::new(APISERVER_PROBE_MAX_AGE);
    health.add_readiness("apiserver", {
        let p = apiserver.clone();
        move || p.check()
    });
    health.add_readiness("leader-election", {
        let l = leadership.clone();
        move || l.check()
    });
    spawn_apiserver_probe(client.clone(), apiserver, stop.clone());
    let scope = Scope {
        namespace: args.namespace.clone(),
        cluster_selector: args.ontap_cluster_selector.clone(),
    };
    let mut manager = Manager::new(
        client.clone(),
        ManagerConfig {
            namespace: scope.namespace.clone(),
            engine: EngineConfig::from(&args.engine),
            identity: identity(),
            stuck_reconcile_after: args.stuck_reconcile_after,
        },
        engine_metrics.clone(),
        Arc::new(health.clone()),
    );
    controllers::register_all(
        &mut manager,
        &ControllerContext {
            client: client.clone(),
            ontap: ClientSettings {
                request_timeout: args.ontap_request_timeout,
                metrics: Some(ontap_metrics.clone()),
                credentials_namespace: args
                    .credentials_namespace
                    .clone()
                    .unwrap_or_else(own_namespace),
                proxy: args.ontap_proxy.clone(),
                svm_jobs_per_cluster: usize::from(args.ontap_svm_jobs_per_cluster),
                aggregates_max_age: args.ontap_aggregates_max_age,
            },
            health: health.clone(),
            scope,
            extension: extension_settings(&args),
            ontap_enabled: args.controllers.contains(&ControllerSet::Ontap),
            kyma: kyma_settings(&args, &kyma_render_metrics),
        },
    )
    .context("wiring the controllers")?;
    if let Some(settings) = extension_settings(&args) {
        let config = HeartbeatConfig {
            namespace: args
                .heartbeat_namespace
                .clone()
                .unwrap_or_else(own_namespace),
            holder_identity: format!("extension-{}", settings.extension_type),
            renew_interval: args.heartbeat_renew_interval,
        };
        // Every replica renews it: it says the process lives, not that it leads.
        tokio::spawn(heartbeat::run(client.clone(), config, stop.clone()));
    }
    // Before leadership is known, so that a standby that takes over has warm caches.
    manager.start_caches();

    let mut servers = tokio::task::JoinSet::new();
    let admin = [
        (
            &args.metrics_bind_address,
            admin::metrics_router(registry.clone()),
            "metrics",
        ),
        (
            &args.health_probe_bind_address,
            admin::health_router(health.clone()),
            "health probe",
        ),
    ];
    for (address, router, what) in admin {
        let Some(address) = admin::parse_bind_address(address).map_err(anyhow::Error::msg)? else {
            continue;
        };
        let server = admin::bind(address, router, what).await?;
        let stop = stop.clone();
        servers.spawn(async move { server.serve(async move { stop.cancelled().await }).await });
    }

    let lease_labels = LeaseLabels {
        name: args.leader_election_id.clone(),
    };
    let mut election = if args.leader_elect {
        let namespace = args
            .leader_election_namespace
            .clone()
            .unwrap_or_else(own_namespace);
        let config = LeaderElectionConfig {
            namespace,
            lease_name: args.leader_election_id.clone(),
            identity: LeaderElectionConfig::default_identity(),
            lease_duration: args.lease_duration,
            renew_before: args.lease_renew_before,
        };
        Some(LeaderElection::start(client.clone(), config, leadership.clone()).await?)
    } else {
        leadership.set(Leadership::Disabled);
        None
    };

    let signal = shutdown_signal();
    tokio::pin!(signal);
    let controllers_stop = CancellationToken::new();
    let mut controllers: Option<tokio::task::JoinHandle<()>> = None;
    let outcome: anyhow::Result<()> = async {
        if let Some(election) = election.as_mut() {
            tokio::select! {
                result = &mut signal => return result,
                acquired = election.acquired() => acquired?,
            }
        }
        leader_status.get_or_create(&lease_labels).set(1);
        tracing::info!("running controllers");
        let stop = controllers_stop.clone();
        let running = Arc::new(AtomicBool::new(true));
        health.add_liveness("controllers", {
            let running = running.clone();
            let stop = controllers_stop.clone();
            move || {
                if running.load(Ordering::Acquire) || stop.is_cancelled() {
                    Ok(())
                } else {
                    Err("the controllers stopped".into())
                }
            }
        });
        controllers = Some(tokio::spawn(async move {
            manager.run(stop.cancelled_owned()).await;
            running.store(false, Ordering::Release);
        }));
        match election.as_mut() {
            Some(election) => tokio::select! {
                result = &mut signal => result,
                lost = election.lost() => Err(lost.into()),
            },
            None => (&mut signal).await,
        }
    }
    .await;

    // Stop taking work, let running reconciles finish within the bound, then give the lease up.
    // A lost Lease grants no such bound: another replica may already act, so everything in
    // flight is dropped at once.
    controllers_stop.cancel();
    let lost = matches!(
        outcome
            .as_ref()
            .map_err(|e| e.downcast_ref::<leader::LeaderElectionError>()),
        Err(Some(leader::LeaderElectionError::Lost(_)))
    );
    if let Some(controllers) = controllers {
        if lost {
            controllers.abort();
            let _ = controllers.await;
        } else {
            let _ = tokio::time::timeout(args.shutdown_timeout, controllers).await;
        }
    }
    leader_status.get_or_create(&lease_labels).set(0);
    if let Some(election) = election {
        let _ = tokio::time::timeout(Duration::from_secs(5), election.release()).await;
    }
    stop.cancel();
    while let Some(joined) = servers.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "admin server failed"),
            Err(error) => tracing::warn!(%error, "admin server task failed"),
        }
    }
    outcome
}
