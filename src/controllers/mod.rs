//! The controllers, each on the reconcile engine: OntapCluster (connectivity) and
//! StorageVirtualMachine (SVM, LIFs, account, verified seed Secret). Each module declares its
//! registration; [`register_all`] is the one list of them. The Gardener Extension controller
//! ([`extension`]) and the Kyma inventory controllers ([`kyma`]) join them when enabled.

pub mod cluster;
pub mod connections;
pub mod extension;
pub mod kyma;
mod reasons;
pub mod svm;

use kube::Client;
use kube::runtime::watcher;

use crate::engine::{Manager, ManagerError};
use crate::runtime::health::Health;
use cluster::ClusterProbes;
use connections::{ClientSettings, ClusterConnections};

/// Which objects this process is responsible for.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// Only this namespace's StorageVirtualMachines and seed Secrets.
    pub namespace: Option<String>,
    /// Only the OntapClusters matching this label selector.
    pub cluster_selector: Option<String>,
}

/// What the controllers need besides the manager.
pub struct ControllerContext {
    pub client: Client,
    pub ontap: ClientSettings,
    pub health: Health,
    pub scope: Scope,
    /// The Gardener Extension controller's settings; `None`: not running (its kinds exist only
    /// in a Gardener seed).
    pub extension: Option<extension::controller::ExtensionSettings>,
    /// Whether the ONTAP controllers (OntapCluster, StorageVirtualMachine) run.
    pub ontap_enabled: bool,
    /// The Kyma controllers' settings; `None`: not running.
    pub kyma: Option<kyma::KymaSettings>,
}

/// Registers every controller of the operator with `manager`.
pub fn register_all(
    manager: &mut Manager,
    context: &ControllerContext,
) -> Result<(), ManagerError> {
    if let Some(settings) = &context.kyma {
        kyma::register(manager, context.client.clone(), settings)?;
    }
    if !context.ontap_enabled {
        return Ok(());
    }
    let connections = ClusterConnections::new(context.client.clone(), context.ontap.clone());
    let clusters = match &context.scope.cluster_selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    cluster::register(
        manager,
        connections.clone(),
        ClusterProbes::new(context.health.clone()),
        clusters,
    )?;
    // Adopting an SVM the operator did not create is the Extension's switch from metal-stack's
    // extension: only its project namespace may ask for it, and only when it runs.
    let adopt_namespace = context
        .extension
        .as_ref()
        .map(|settings| settings.project_namespace.clone());
    svm::reconcile::register(manager, connections.clone(), adopt_namespace)?;
    if let Some(settings) = &context.extension {
        extension::controller::register(manager, connections, settings.clone())?;
    }
    Ok(())
}
