//! The process around the controllers, in four stages: **build** (Kubernetes client, metrics,
//! readiness, the manager with every feature of [`FEATURES`] set up), **serve** (the admin
//! servers), **lead** (leader election, then the controllers) and **drain** (graceful shutdown).
//! It names no feature: what a feature adds comes through the features list.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use kube::Client;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use reconcile_engine::feature::{Background, Setup};
use reconcile_engine::health::{Health, Leadership, LeadershipState, Probe};
use reconcile_engine::{
    ClientLimits, EngineConfig, Identity, Manager, ManagerConfig, Metrics, build_client,
    load_config,
};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::cli::{MetricsAuth, RunArgs};
use crate::deploy::{METRIC_PREFIX, REPORTER_DOMAIN, USER_AGENT, own_namespace};
use crate::features::FEATURES;

pub mod admin;
pub mod leader;
pub mod metrics_auth;
pub mod process_metrics;
pub mod telemetry;

use leader::{LeaderElection, LeaderElectionConfig, LeaderElectionError};

/// How often the API server is asked an authenticated question for `/readyz`, and how old the
/// last answer may be: together they turn `/readyz` 503 within 15 s of the API server going away.
const APISERVER_PROBE_INTERVAL: Duration = Duration::from_secs(2);
const APISERVER_PROBE_TIMEOUT: Duration = Duration::from_secs(5);
const APISERVER_PROBE_MAX_AGE: Duration = Duration::from_secs(10);

/// The engine's identity in this operator: its Event reporter, and trace ids from OpenTelemetry.
pub fn identity() -> Identity {
    Identity {
        reporter_domain: REPORTER_DOMAIN.to_owned(),
        instance: std::env::var("POD_NAME").ok(),
        trace_id: Some(Arc::new(telemetry::record_trace_id)),
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

/// Runs the controllers until SIGTERM or SIGINT; `flags` holds every feature's flags.
pub async fn run(args: RunArgs, flags: clap::ArgMatches) -> anyhow::Result<()> {
    let telemetry = telemetry::init(args.log_format)?;
    let result = run_until_signal(args, flags).await;
    if let Err(error) = &result {
        tracing::error!("{error:#}");
    }
    telemetry.shutdown();
    result
}

async fn run_until_signal(args: RunArgs, flags: clap::ArgMatches) -> anyhow::Result<()> {
    let (process, manager) = build(&args, &flags).await?;
    let servers = serve(&args, &process).await?;
    let (outcome, controllers) = lead(&args, &process, manager).await;
    drain(&args, process, controllers, servers, outcome).await
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

/// Everything the process built before it serves and leads.
struct Process {
    client: Client,
    /// The Lease's own client, outside the controllers' rate limit and write slots: a renewal
    /// queued behind a burst of the controllers' writes would arrive after the fence and end
    /// leadership under exactly the load a leader exists to carry.
    lease_client: Client,
    registry: Arc<Registry>,
    health: Health,
    leadership: LeadershipState,
    leader_status: Family<LeaseLabels, Gauge>,
    /// Stops the admin servers, the probes and the features' background tasks.
    stop: CancellationToken,
}

/// Builds the client, the metrics, the readiness checks and the manager with every feature set
/// up, and starts the caches and the features' background tasks.
async fn build(args: &RunArgs, flags: &clap::ArgMatches) -> anyhow::Result<(Process, Manager)> {
    let mut registry = Registry::default();
    let engine_metrics = Metrics::new(&mut registry, METRIC_PREFIX);
    let config = load_config(args.kubeconfig.as_deref(), USER_AGENT).await?;
    let lease_client =
        Client::try_from(config.clone()).context("building the Lease's Kubernetes client")?;
    let client = build_client(
        config,
        ClientLimits::from(&args.engine),
        engine_metrics.clone(),
    )
    .context("building the Kubernetes client")?;
    check_credentials(&client).await?;

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
    add_process_checks(&client, &health, &leadership, &stop);
    registry.register_collector(Box::new(process_metrics::ReadinessCollector {
        health: health.clone(),
    }));
    let mut manager = Manager::new(
        client.clone(),
        ManagerConfig {
            namespace: args.namespace.clone(),
            engine: EngineConfig::from(&args.engine),
            identity: identity(),
            stuck_reconcile_after: args.stuck_reconcile_after,
        },
        engine_metrics,
        Arc::new(health.clone()),
    );
    let own_namespace = own_namespace();
    let mut setup = Setup::new(&mut manager, &mut registry, &health, &own_namespace);
    let asked = |name: &str| args.controllers.iter().any(|listed| listed == name);
    for feature in FEATURES {
        if feature.listed() && !asked(feature.name()) {
            continue;
        }
        feature
            .setup(flags, &mut setup)
            .with_context(|| format!("setting up {}", feature.name()))?;
    }
    start_background(setup.into_background(), &stop);
    // Before leadership is known, so that a standby that takes over has warm caches.
    manager.start_caches();
    let process = Process {
        client,
        lease_client,
        registry: Arc::new(registry),
        health,
        leadership,
        leader_status,
        stop,
    };
    Ok((process, manager))
}

/// A wrong kubeconfig should fail here with a clear message; an API server that is merely down
/// is left to /readyz and the retries of the controllers.
async fn check_credentials(client: &Client) -> anyhow::Result<()> {
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
    Ok(())
}

/// The process's own readiness: the API server answers, and leadership is settled.
fn add_process_checks(
    client: &Client,
    health: &Health,
    leadership: &LeadershipState,
    stop: &CancellationToken,
) {
    let apiserver = Probe::new(APISERVER_PROBE_MAX_AGE);
    health.add_readiness("apiserver", {
        let probe = apiserver.clone();
        move || probe.check()
    });
    health.add_readiness("leader-election", {
        let leadership = leadership.clone();
        move || leadership.check()
    });
    spawn_apiserver_probe(client.clone(), apiserver, stop.clone());
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

fn start_background(tasks: Vec<Background>, stop: &CancellationToken) {
    for task in tasks {
        tokio::spawn(task(stop.clone()));
    }
}

/// Starts the metrics and health-probe servers; they run until the process stops.
async fn serve(args: &RunArgs, process: &Process) -> anyhow::Result<JoinSet<std::io::Result<()>>> {
    let mut servers = JoinSet::new();
    let admin = [
        (
            &args.metrics_bind_address,
            admin::metrics_router(
                process.registry.clone(),
                (args.metrics_auth == MetricsAuth::Kubernetes)
                    .then(|| metrics_auth::MetricsAuthorizer::new(process.client.clone())),
            ),
            "metrics",
        ),
        (
            &args.health_probe_bind_address,
            admin::health_router(process.health.clone()),
            "health probe",
        ),
    ];
    for (address, router, what) in admin {
        let Some(address) = admin::parse_bind_address(address).map_err(anyhow::Error::msg)? else {
            continue;
        };
        let server = admin::bind(address, router, what).await?;
        let stop = process.stop.clone();
        servers.spawn(async move { server.serve(async move { stop.cancelled().await }).await });
    }
    Ok(servers)
}

/// The controllers' task once they run, and what stops them.
struct Controllers {
    task: Option<JoinHandle<()>>,
    stop: CancellationToken,
    election: Option<LeaderElection>,
}

/// Waits for leadership (when elected), runs the controllers, and returns at the first signal or
/// when leadership is lost.
async fn lead(
    args: &RunArgs,
    process: &Process,
    manager: Manager,
) -> (anyhow::Result<()>, Controllers) {
    let mut controllers = Controllers {
        task: None,
        stop: CancellationToken::new(),
        election: None,
    };
    let outcome = async {
        // A standby exports 0, so that "no replica leads" is a sum below 1, not a missing series.
        process
            .leader_status
            .get_or_create(&lease_labels(args))
            .set(0);
        controllers.election = elect(args, process).await?;
        let signal = shutdown_signal();
        tokio::pin!(signal);
        if let Some(election) = controllers.election.as_mut() {
            tokio::select! {
                result = &mut signal => return result,
                acquired = election.acquired() => acquired?,
            }
        }
        process
            .leader_status
            .get_or_create(&lease_labels(args))
            .set(1);
        tracing::info!("running controllers");
        controllers.task = Some(start_controllers(process, manager, &controllers.stop));
        match controllers.election.as_mut() {
            Some(election) => tokio::select! {
                result = &mut signal => result,
                lost = election.lost() => Err(lost.into()),
            },
            None => (&mut signal).await,
        }
    }
    .await;
    (outcome, controllers)
}

fn lease_labels(args: &RunArgs) -> LeaseLabels {
    LeaseLabels {
        name: args.leader_election_id.clone(),
    }
}

/// Starts leader election with `--leader-elect`; without it this process leads alone.
async fn elect(args: &RunArgs, process: &Process) -> anyhow::Result<Option<LeaderElection>> {
    if !args.leader_elect {
        process.leadership.set(Leadership::Disabled);
        return Ok(None);
    }
    let config = LeaderElectionConfig {
        namespace: args
            .leader_election_namespace
            .clone()
            .unwrap_or_else(own_namespace),
        lease_name: args.leader_election_id.clone(),
        identity: LeaderElectionConfig::default_identity(),
        lease_duration: args.lease_duration,
        renew_before: args.lease_renew_before,
    };
    let election = LeaderElection::start(
        process.lease_client.clone(),
        config,
        process.leadership.clone(),
    )
    .await?;
    Ok(Some(election))
}

/// Runs the manager's controllers in a task of their own, with a liveness check that fails if
/// they stop while nobody asked them to.
fn start_controllers(
    process: &Process,
    manager: Manager,
    stop: &CancellationToken,
) -> JoinHandle<()> {
    let running = Arc::new(AtomicBool::new(true));
    process.health.add_liveness("controllers", {
        let running = running.clone();
        let stop = stop.clone();
        move || {
            if running.load(Ordering::Acquire) || stop.is_cancelled() {
                Ok(())
            } else {
                Err("the controllers stopped".into())
            }
        }
    });
    let stop = stop.clone();
    tokio::spawn(async move {
        manager.run(stop.cancelled_owned()).await;
        running.store(false, Ordering::Release);
    })
}

/// Stops taking work, lets running reconciles finish within `--shutdown-timeout` (aborting those
/// that do not), then gives the Lease up and stops the servers. A lost Lease grants no such bound: another replica may
/// already act, so everything in flight is dropped at once.
async fn drain(
    args: &RunArgs,
    process: Process,
    controllers: Controllers,
    mut servers: JoinSet<std::io::Result<()>>,
    outcome: anyhow::Result<()>,
) -> anyhow::Result<()> {
    controllers.stop.cancel();
    let lost = matches!(
        outcome
            .as_ref()
            .map_err(|e| e.downcast_ref::<LeaderElectionError>()),
        Err(Some(LeaderElectionError::Lost(_)))
    );
    if let Some(mut task) = controllers.task {
        let finished = !lost
            && tokio::time::timeout(args.shutdown_timeout, &mut task)
                .await
                .is_ok();
        // Passes still running past the timeout are aborted, and awaited, before the Lease is
        // given up: a detached pass could still write to ONTAP while the next leader acts.
        if !finished {
            if !lost {
                tracing::warn!(
                    timeout = ?args.shutdown_timeout,
                    "reconciles still running after --shutdown-timeout are aborted"
                );
            }
            task.abort();
            let _ = task.await;
        }
    }
    process
        .leader_status
        .get_or_create(&lease_labels(args))
        .set(0);
    if let Some(election) = controllers.election {
        let _ = tokio::time::timeout(Duration::from_secs(5), election.release()).await;
    }
    process.stop.cancel();
    while let Some(joined) = servers.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "admin server failed"),
            Err(error) => tracing::warn!(%error, "admin server task failed"),
        }
    }
    outcome
}
