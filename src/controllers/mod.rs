//! The controllers, each on the reconcile engine: OntapCluster (connectivity) and
//! StorageVirtualMachine (SVM, LIFs, account, verified seed Secret).

pub mod cluster;
pub mod connections;
pub mod extension;
pub mod svm;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};

use crate::api::{OntapCluster, StorageVirtualMachine};
use crate::engine::{Change, Controller, EngineConfig, Metrics, SharedCache};
use crate::runtime::health::{Health, SyncFlag};
use cluster::{ClusterProbes, ClusterReconciler, REVERIFY_EVERY};
use connections::{ClientSettings, ClusterConnections};
use svm::reconcile::SvmReconciler;
use svm::seed_secret::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

/// The watched objects, shared by the controllers. Started before leadership is known, so a
/// standby that takes over has warm caches.
#[derive(Clone)]
pub struct Caches {
    pub clusters: SharedCache<OntapCluster>,
    pub svms: SharedCache<StorageVirtualMachine>,
    /// Only the seed Secrets (by label): caching every Secret of the cluster would cost memory
    /// and widen what a memory dump of the operator reveals.
    pub secrets: SharedCache<Secret>,
}

/// Which objects this process is responsible for.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// Only this namespace's StorageVirtualMachines and seed Secrets.
    pub namespace: Option<String>,
    /// Only the OntapClusters matching this label selector.
    pub cluster_selector: Option<String>,
}

impl Caches {
    pub fn spawn(client: &Client, scope: &Scope) -> Self {
        fn api<K>(client: &Client, namespace: &Option<String>) -> Api<K>
        where
            K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
        {
            match namespace {
                Some(ns) => Api::namespaced(client.clone(), ns),
                None => Api::all(client.clone()),
            }
        }
        let clusters = match &scope.cluster_selector {
            Some(selector) => watcher::Config::default().labels(selector),
            None => watcher::Config::default(),
        };
        Self {
            clusters: SharedCache::spawn(Api::all(client.clone()), clusters),
            svms: SharedCache::spawn(api(client, &scope.namespace), watcher::Config::default()),
            secrets: SharedCache::spawn(
                api(client, &scope.namespace),
                watcher::Config::default()
                    .labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")),
            ),
        }
    }

    /// One readiness check per cache: `/readyz` fails until every initial list is in.
    pub fn register_readiness(&self, health: &Health) {
        fn track<K>(health: &Health, name: &str, cache: &SharedCache<K>)
        where
            K: kube::Resource<DynamicType = ()>
                + Clone
                + std::fmt::Debug
                + serde::de::DeserializeOwned
                + Send
                + Sync
                + 'static,
        {
            let flag = SyncFlag::default();
            health.add_readiness(format!("cache/{name}"), {
                let flag = flag.clone();
                move || flag.check()
            });
            let cache = cache.clone();
            tokio::spawn(async move {
                cache.wait_until_ready().await;
                flag.mark_synced();
            });
        }
        track(health, "ontapclusters", &self.clusters);
        track(health, "storagevirtualmachines", &self.svms);
        track(health, "secrets", &self.secrets);
    }
}

/// Everything the controllers need besides the caches.
pub struct ControllerContext {
    pub client: Client,
    pub engine: EngineConfig,
    pub ontap: ClientSettings,
    pub metrics: Arc<Metrics>,
    pub health: Health,
    /// A reconcile running longer than this fails the liveness check.
    pub stuck_reconcile_after: Duration,
}

/// A stream naming every cached object again every `period`: periodic re-verification for
/// what no watch event announces (a remote system's state).
fn every<K>(
    cache: SharedCache<K>,
    period: Duration,
) -> impl futures::Stream<Item = ObjectRef<K>> + Send
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    tokio_stream_interval(period).flat_map(move |_| {
        futures::stream::iter(
            cache
                .store()
                .state()
                .iter()
                .map(|o| ObjectRef::from_obj(&**o))
                .collect::<Vec<_>>(),
        )
    })
}

fn tokio_stream_interval(period: Duration) -> impl futures::Stream<Item = ()> + Send {
    futures::stream::unfold(
        tokio::time::interval_at(tokio::time::Instant::now() + period, period),
        |mut interval| async move {
            interval.tick().await;
            Some(((), interval))
        },
    )
}

/// The SVMs that use a cluster, whenever that cluster changes (e.g. becomes Ready).
fn svms_of_changed_clusters(
    clusters: SharedCache<OntapCluster>,
    svms: SharedCache<StorageVirtualMachine>,
) -> impl futures::Stream<Item = ObjectRef<StorageVirtualMachine>> + Send {
    let changes = receiver_stream(clusters.subscribe());
    changes.flat_map(move |change| {
        let name = match &change {
            Change::Applied(c) | Change::Deleted(c) => c.name_any(),
        };
        let refs: Vec<_> = svms
            .store()
            .state()
            .iter()
            .filter(|s| s.spec.cluster_ref.name == name)
            .map(|s| ObjectRef::from_obj(&**s))
            .collect();
        futures::stream::iter(refs)
    })
}

fn receiver_stream<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Runs the OntapCluster and StorageVirtualMachine controllers until `stop` is cancelled, then
/// lets running reconciles finish.
pub async fn run(
    caches: &Caches,
    context: ControllerContext,
    stop: tokio_util::sync::CancellationToken,
) {
    let connections = ClusterConnections::new(context.client.clone(), context.ontap.clone());
    let probes = ClusterProbes::new(context.health.clone());

    // A deleted cluster takes its readiness check and its cached client along.
    let mut cluster_changes = caches.clusters.subscribe();
    let forget = {
        let probes = probes.clone();
        let connections = connections.clone();
        tokio::spawn(async move {
            while let Some(change) = cluster_changes.recv().await {
                if let Change::Deleted(cluster) = change {
                    probes.remove(&cluster.name_any());
                    connections.forget(&cluster.name_any());
                }
            }
        })
    };

    let clusters = Controller::new(
        "ontapcluster",
        ClusterReconciler {
            connections: connections.clone(),
            probes,
        },
        &caches.clusters,
        context.client.clone(),
        context.engine.clone(),
        context.metrics.clone(),
    )
    .triggers(every(caches.clusters.clone(), REVERIFY_EVERY));
    let svms = Controller::new(
        "storagevirtualmachine",
        SvmReconciler {
            kube: context.client.clone(),
            clusters: caches.clusters.clone(),
            connections,
        },
        &caches.svms,
        context.client.clone(),
        context.engine.clone(),
        context.metrics.clone(),
    )
    .owns(&caches.secrets)
    .triggers(svms_of_changed_clusters(
        caches.clusters.clone(),
        caches.svms.clone(),
    ));

    for (name, in_flight) in [
        ("ontapcluster", clusters.in_flight()),
        ("storagevirtualmachine", svms.in_flight()),
    ] {
        let limit = context.stuck_reconcile_after;
        context
            .health
            .add_liveness(format!("reconcile-{name}"), move || {
                match in_flight.oldest() {
                    Some(age) if age > limit => Err(format!(
                        "a {name} reconcile has been running for {}s (limit {}s)",
                        age.as_secs(),
                        limit.as_secs()
                    )),
                    _ => Ok(()),
                }
            });
    }

    tokio::join!(
        clusters.run(stop.clone().cancelled_owned()),
        svms.run(stop.cancelled_owned())
    );
    forget.abort();
}
