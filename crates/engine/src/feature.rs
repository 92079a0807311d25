//! Feature sets: a process runs several sets of controllers (one product each), and knows them
//! only through one list of [`Feature`]s.
//!
//! A feature brings everything a process needs of it: its flags (added to the process's command
//! line), its registrations with the [`Manager`], its metrics, its readiness checks, the tasks
//! it runs beside its controllers, and the CRDs and RBAC rules that go into the manifests. The
//! process that embeds the engine iterates the list; it names no feature. This is Gardener's
//! extension library's shape (each controller adds its flags and adds itself to the manager) on
//! the engine's registrations.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::error::BoxError;
use crate::health::Health;
use crate::manager::{Manager, ManagerConfig, ManagerError, NoProbes, offline_client};
use crate::metrics::Metrics;

/// One set of controllers a process may run.
pub trait Feature: Sync {
    /// Its name, in errors and logs, and the value that switches it on in the process's list of
    /// controllers where it is [`listed`](Self::listed).
    fn name(&self) -> &'static str;

    /// Whether the list of controllers switches it on; `false`: its own flags do, in
    /// [`setup`](Self::setup).
    fn listed(&self) -> bool {
        true
    }

    /// Adds the feature's flags to the command that runs the controllers.
    fn flags(&self, command: clap::Command) -> clap::Command;

    /// Reads the feature's flags and wires it into the process: registrations, metrics, checks
    /// and background tasks. Called, in list order, for a listed feature the process was asked
    /// to run and for every feature that is not listed.
    fn setup(&self, flags: &clap::ArgMatches, setup: &mut Setup<'_>) -> Result<(), FeatureError>;

    /// What the feature's controllers declare, read from registrations with a manager that
    /// never connects: one entry per part the installation can switch on by itself. Fails as
    /// [`setup`](Self::setup) does when what the registrations need cannot be made.
    fn declarations(&self, offline: &Offline) -> Result<Vec<Declarations>, FeatureError>;
}

/// What [`Feature::setup`] wires the feature into.
pub struct Setup<'a> {
    /// The manager the feature registers its controllers with.
    pub manager: &'a mut Manager,
    /// Where the feature registers its own metrics.
    pub registry: &'a mut Registry,
    /// The process's readiness and liveness checks.
    pub health: &'a Health,
    /// The namespace the process runs in: the default home of what it keeps for itself
    /// (Leases, credentials).
    pub own_namespace: &'a str,
    /// Tasks that run on every replica, leader or not, until the process stops.
    background: Vec<Background>,
    /// What features set up earlier in the list offer to those after them.
    provided: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

/// A task that runs beside the controllers until the token is cancelled.
pub type Background = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>;

impl<'a> Setup<'a> {
    /// A setup that wires features into `manager`, `registry` and `health`.
    pub fn new(
        manager: &'a mut Manager,
        registry: &'a mut Registry,
        health: &'a Health,
        own_namespace: &'a str,
    ) -> Self {
        Setup {
            manager,
            registry,
            health,
            own_namespace,
            background: Vec::new(),
            provided: HashMap::new(),
        }
    }

    /// Offers `value` to the features after this one in the list (one value per type).
    pub fn provide<T: Any + Clone + Send + Sync>(&mut self, value: T) {
        self.provided.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// What a feature earlier in the list provided; `feature` and `needs` name the asker and
    /// the feature it needs, for the error.
    pub fn provided<T: Any + Clone + Send + Sync>(
        &self,
        feature: &'static str,
        needs: &'static str,
    ) -> Result<T, FeatureError> {
        self.provided
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
            .cloned()
            .ok_or(FeatureError::Needs { feature, needs })
    }

    /// The client the controllers use.
    pub fn client(&self) -> Client {
        self.manager.client().clone()
    }

    /// Runs `task` beside the controllers on every replica (a heartbeat says the process lives,
    /// not that it leads), until the process stops.
    pub fn spawn_background(&mut self, task: Background) {
        self.background.push(task);
    }

    /// The background tasks the features asked for, for the process to start.
    pub fn into_background(self) -> Vec<Background> {
        self.background
    }
}

/// Why a feature could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    /// Its flags did not parse.
    #[error("the flags of {feature}: {source}")]
    Flags {
        /// The feature.
        feature: &'static str,
        /// What clap said.
        source: clap::Error,
    },
    /// Its registrations do not fit together.
    #[error(transparent)]
    Wiring(#[from] ManagerError),
    /// It builds on a feature that does not run.
    #[error("{feature} needs {needs}, which is not running")]
    Needs {
        /// The feature.
        feature: &'static str,
        /// The feature it builds on.
        needs: &'static str,
    },
    /// Anything else that stopped it, with the feature's own words.
    #[error("setting up {feature}: {source}")]
    Other {
        /// The feature.
        feature: &'static str,
        /// Why.
        source: BoxError,
    },
}

/// Reads a feature's flags (a clap `Args` struct) from the parsed command line.
pub fn parse_flags<A: clap::FromArgMatches>(
    feature: &'static str,
    flags: &clap::ArgMatches,
) -> Result<A, FeatureError> {
    A::from_arg_matches(flags).map_err(|source| FeatureError::Flags { feature, source })
}

/// What one part of a feature declares: its CRDs and the ClusterRole rules its controllers need.
#[derive(Clone, Debug, Default)]
pub struct Declarations {
    /// `None`: part of every installation of the process; `Some(x)`: installed only when the
    /// installation switches `x` on (a chart's `x.enabled`).
    pub switch: Option<&'static str>,
    /// Its CRDs, in registration order.
    pub crds: Vec<CustomResourceDefinition>,
    /// The ClusterRole rules its controllers need, merged and sorted.
    pub rules: Vec<PolicyRule>,
}

/// Builds managers that never connect, for reading what registrations declare.
pub struct Offline {
    identity: crate::config::Identity,
}

impl Offline {
    /// Managers whose controllers would report Events as `identity`.
    pub fn new(identity: crate::config::Identity) -> Self {
        Offline { identity }
    }

    /// Runs `register` on a manager that never connects and returns what it declared.
    pub fn read(
        &self,
        switch: Option<&'static str>,
        register: impl FnOnce(&mut Manager, Client) -> Result<(), ManagerError>,
    ) -> Result<Declarations, ManagerError> {
        // The offline client's buffer is a task: outside a runtime, a runtime of our own hosts
        // it for as long as the declarations are read (it never runs: nothing is ever sent).
        let own_runtime = match tokio::runtime::Handle::try_current() {
            Ok(_) => None,
            Err(_) => Some(
                tokio::runtime::Builder::new_current_thread()
                    .build()
                    .map_err(ManagerError::Runtime)?,
            ),
        };
        let _entered = own_runtime.as_ref().map(|runtime| runtime.enter());
        let client = offline_client();
        let config = ManagerConfig {
            namespace: None,
            engine: Default::default(),
            identity: self.identity.clone(),
            stuck_reconcile_after: std::time::Duration::from_secs(600),
        };
        let mut manager = Manager::new(
            client.clone(),
            config,
            Arc::new(Metrics::unregistered()),
            Arc::new(NoProbes),
        );
        register(&mut manager, client)?;
        Ok(Declarations {
            switch,
            crds: manager.crds(),
            rules: manager.rbac_rules(),
        })
    }
}
