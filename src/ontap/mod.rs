//! The ONTAP feature (`--controllers ontap`): the OntapCluster controller (connectivity) and the
//! StorageVirtualMachine controller (SVM, LIFs, account, verified seed Secret), sharing one
//! connection to each ONTAP cluster. It provides those connections, the grant of adoption, and
//! the SVM controller's services (verification on request, the seed Secret's pre-fill) to the
//! features that build on it (the Gardener Extension).

pub mod cluster;
pub mod conditions;
pub mod connections;
pub mod inventory;
pub mod metrics;
pub mod svm;
pub mod trident_api;

use std::time::Duration;

use clap::Args;
use kube::runtime::watcher;
use ontap_client::OntapMetrics;
use reconcile_engine::feature::{Declarations, Feature, FeatureError, Offline, Setup, parse_flags};
use reconcile_engine::{Manager, ManagerError};

use cluster::ClusterProbes;
use connections::{ClientSettings, ClusterConnections};
use svm::{AdoptionGrant, SeedSecretPrefill, VerifyRequests};

use crate::api::{OntapCluster, StorageVirtualMachine};

// The feature's flags (no doc comment: clap would make it the `run` command's about text).
#[derive(Clone, Debug, Args)]
pub struct OntapArgs {
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
    /// Requests to one OntapCluster sent at once, and so passes over its StorageVirtualMachines
    /// run at once (a pass sends one request at a time): a cluster that answers slowly holds no
    /// more of the controller's workers than this.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_REQUESTS_PER_CLUSTER", default_value_t = connections::DEFAULT_REQUESTS_PER_CLUSTER,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub ontap_requests_per_cluster: u16,
    /// ONTAP jobs (SVM create, change, delete) the operator runs at once per OntapCluster; ONTAP
    /// itself runs 5 and refuses more.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_SVM_JOBS_PER_CLUSTER", default_value_t = 5,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub ontap_svm_jobs_per_cluster: u16,
    /// How many of an OntapCluster's ONTAP job slots one namespace holds at once (default: all).
    /// Freed slots go to the namespaces waiting in turn either way, so one tenant's batch never
    /// queues another's first SVM behind all of it; a lower cap keeps slots free for others.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_SVM_JOBS_PER_NAMESPACE",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub ontap_svm_jobs_per_namespace: Option<u16>,
    /// How long an OntapCluster's aggregate list is reused for SVM creates (0s: listed for each).
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_AGGREGATES_MAX_AGE", value_parser = humantime::parse_duration, default_value = "30s")]
    pub ontap_aggregates_max_age: Duration,
    /// Ready StorageVirtualMachines an OntapCluster needs before their periodic passes confirm
    /// their SVM and LIFs from paged reads of the cluster's whole inventory (every half sync
    /// period) instead of two lookups each; the login that proves each seed Secret stays.
    #[arg(long, env = "ONTAP_OPERATOR_ONTAP_INVENTORY_MIN_SVMS", default_value_t = connections::DEFAULT_INVENTORY_MIN_SVMS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub ontap_inventory_min_svms: u32,
}

/// What the ONTAP feature offers the features after it.
#[derive(Clone)]
pub struct OntapServices {
    /// The one connection to each ONTAP cluster, with its job slots.
    pub connections: ClusterConnections,
    /// Lets one namespace's StorageVirtualMachines adopt SVMs the operator did not create.
    pub adoption: AdoptionGrant,
    /// Asks the StorageVirtualMachine controller to verify an object now.
    pub verify: VerifyRequests,
    /// Creates a seed Secret holding a password ONTAP already holds, for an object about to
    /// take over its account.
    pub prefill: SeedSecretPrefill,
}

/// The ONTAP feature.
pub struct OntapFeature;

/// Its name in `--controllers`.
pub const NAME: &str = "ontap";

impl Feature for OntapFeature {
    fn name(&self) -> &'static str {
        NAME
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        OntapArgs::augment_args(command)
    }

    fn setup(&self, flags: &clap::ArgMatches, setup: &mut Setup<'_>) -> Result<(), FeatureError> {
        let args: OntapArgs = parse_flags(NAME, flags)?;
        let metrics = OntapMetrics::new();
        metrics.register(setup.registry);
        let settings = ClientSettings {
            request_timeout: args.ontap_request_timeout,
            metrics: Some(metrics),
            credentials_namespace: args
                .credentials_namespace
                .unwrap_or_else(|| setup.own_namespace.to_owned()),
            proxy: args.ontap_proxy,
            requests_per_cluster: usize::from(args.ontap_requests_per_cluster),
            svm_jobs_per_cluster: usize::from(args.ontap_svm_jobs_per_cluster),
            svm_jobs_per_namespace: args.ontap_svm_jobs_per_namespace.map(usize::from),
            aggregates_max_age: args.ontap_aggregates_max_age,
            inventory_min_svms: args.ontap_inventory_min_svms,
        };
        let connections = ClusterConnections::new(setup.client(), settings);
        let clusters = match &args.ontap_cluster_selector {
            Some(selector) => watcher::Config::default().labels(selector),
            None => watcher::Config::default(),
        };
        let probes = ClusterProbes::new(setup.health.clone());
        let services = register(setup.manager, connections, probes, clusters)?;
        let state = metrics::OntapStateCollector {
            svms: setup.manager.cache::<StorageVirtualMachine>()?,
            clusters: setup.manager.cache::<OntapCluster>()?,
        };
        setup.registry.register_collector(Box::new(state));
        setup.provide(services);
        Ok(())
    }

    fn declarations(&self, offline: &Offline) -> Result<Vec<Declarations>, FeatureError> {
        let base = offline.read(None, |manager, client| {
            let connections = ClusterConnections::new(client, ClientSettings::default());
            let probes = ClusterProbes::new(Default::default());
            register(manager, connections, probes, watcher::Config::default()).map(|_| ())
        })?;
        Ok(vec![base])
    }
}

/// Registers the OntapCluster and StorageVirtualMachine controllers on `connections`.
pub(crate) fn register(
    manager: &mut Manager,
    connections: ClusterConnections,
    probes: ClusterProbes,
    clusters: watcher::Config,
) -> Result<OntapServices, ManagerError> {
    cluster::register(manager, connections.clone(), probes, clusters)?;
    let adoption = AdoptionGrant::default();
    let verify = VerifyRequests::default();
    let prefill = SeedSecretPrefill::new(manager.client().clone());
    svm::reconcile::register(
        manager,
        connections.clone(),
        adoption.clone(),
        verify.clone(),
    )?;
    Ok(OntapServices {
        connections,
        adoption,
        verify,
        prefill,
    })
}
