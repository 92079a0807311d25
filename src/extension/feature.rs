//! The Gardener Extension feature: switched on by `--extension-type`, built on the ONTAP
//! feature's connections, with the heartbeat Lease beside it.

use std::time::Duration;

use clap::Args;
use reconcile_engine::feature::{Declarations, Feature, FeatureError, Offline, Setup, parse_flags};

use super::api::{SHOOT_NAMESPACE_ROLE, SHOOT_NAMESPACE_ROLE_LABEL};
use super::config::ConfigDefaults;
use super::controller::{ExtensionSettings, register};
use super::heartbeat::{self, HeartbeatConfig};
use super::imagevector::{ImageVector, ImageVectorError};
use super::shoot::ShootImages;
use crate::ontap::OntapServices;
use crate::ontap::connections::{ClientSettings, ClusterConnections};
use crate::ontap::svm::{Adopters, SeedSecretPrefill, VerifyRequests};

// The feature's flags (no doc comment: clap would make it the `run` command's about text).
#[derive(Clone, Debug, Args)]
pub struct ExtensionArgs {
    /// Run the Gardener Extension controller for Extensions of this type (e.g. `ontap`), with
    /// the heartbeat Lease. Off by default: Extension, Cluster and ManagedResource exist only in
    /// a Gardener seed.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_TYPE")]
    pub extension_type: Option<String>,
    /// The OntapCluster of shoots whose providerConfig names none; default: the only one there is.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_DEFAULT_CLUSTER")]
    pub extension_default_cluster: Option<String>,
    /// Where the StorageVirtualMachines that provision per-project SVMs (metal-stack's layout:
    /// one SVM per project, one account per shoot) live; default: the pod's namespace
    /// (POD_NAMESPACE), else `ontap-operator-system`. The operator must watch it.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_PROJECT_NAMESPACE")]
    pub extension_project_namespace: Option<String>,
    /// Let a shoot's providerConfig name the Trident operator image (`trident.operatorImage`).
    /// Off: every image a shoot runs comes from the image vector, which a landscape overwrites
    /// with the file `IMAGEVECTOR_OVERWRITE` names, and a providerConfig naming one is refused.
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_ALLOW_SHOOT_IMAGES")]
    pub extension_allow_shoot_images: bool,
    /// Namespace of the `gardener-extension-heartbeat` Lease (the extension's own); default: the
    /// pod's namespace (POD_NAMESPACE), else `ontap-operator-system`.
    #[arg(long, env = "ONTAP_OPERATOR_HEARTBEAT_NAMESPACE")]
    pub heartbeat_namespace: Option<String>,
    /// How soon an Extension is checked again while Trident in its shoot has not reported every
    /// delivered backend healthy (Gardener's health checks run every 30 s by default).
    #[arg(long, env = "ONTAP_OPERATOR_EXTENSION_HEALTH_PERIOD", value_parser = humantime::parse_duration, default_value = "30s")]
    pub extension_health_period: Duration,
    /// How often the heartbeat Lease is renewed.
    #[arg(long, env = "ONTAP_OPERATOR_HEARTBEAT_RENEW_INTERVAL", value_parser = humantime::parse_duration, default_value = "30s")]
    pub heartbeat_renew_interval: Duration,
}

impl ExtensionArgs {
    /// The controller's settings for `extension_type`.
    fn settings(
        &self,
        extension_type: String,
        own_namespace: &str,
        images: ShootImages,
    ) -> ExtensionSettings {
        let defaults = ExtensionSettings::new(images);
        ExtensionSettings {
            extension_type,
            default_cluster: self.extension_default_cluster.clone(),
            project_namespace: self
                .extension_project_namespace
                .clone()
                .unwrap_or_else(|| own_namespace.to_owned()),
            health_recheck: self.extension_health_period,
            config_defaults: ConfigDefaults {
                allow_shoot_images: self.extension_allow_shoot_images,
                ..defaults.config_defaults
            },
            ..defaults
        }
    }
}

/// The Gardener Extension feature.
pub struct ExtensionFeature;

fn image_error(source: ImageVectorError) -> FeatureError {
    FeatureError::Other {
        feature: NAME,
        source: source.into(),
    }
}

/// Its name, and the chart switch of its RBAC rules (`extension.enabled`).
pub const NAME: &str = "extension";

impl Feature for ExtensionFeature {
    fn name(&self) -> &'static str {
        NAME
    }

    fn listed(&self) -> bool {
        false
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        ExtensionArgs::augment_args(command)
    }

    fn setup(&self, flags: &clap::ArgMatches, setup: &mut Setup<'_>) -> Result<(), FeatureError> {
        let args: ExtensionArgs = parse_flags(NAME, flags)?;
        let Some(extension_type) = args.extension_type.clone() else {
            return Ok(());
        };
        // Read once: a changed overwrite reaches the shoots with the next rollout (the chart
        // restarts the pods when it changes), as with every Gardener extension.
        let images = ImageVector::embedded_with_env_overwrite()
            .and_then(|vector| ShootImages::from_vector(&vector))
            .map_err(image_error)?;
        let settings = args.settings(extension_type, setup.own_namespace, images);
        let ontap: OntapServices = setup.provided(NAME, crate::ontap::NAME)?;
        // Switching from metal-stack's extension adopts the SVMs it made, and a restore the
        // accounts on them: only the project namespace may adopt SVMs, only it and the shoot
        // namespaces gardenlet labels may adopt accounts, and only while the Extension runs.
        ontap
            .adoption
            .grant(Adopters {
                project_namespace: settings.project_namespace.clone(),
                account_adopters: Some((
                    SHOOT_NAMESPACE_ROLE_LABEL.to_owned(),
                    SHOOT_NAMESPACE_ROLE.to_owned(),
                )),
            })
            .map_err(|held| FeatureError::Other {
                feature: NAME,
                source: format!("adoption is already granted to namespace {held}").into(),
            })?;
        let heartbeat = HeartbeatConfig {
            namespace: args
                .heartbeat_namespace
                .unwrap_or_else(|| setup.own_namespace.to_owned()),
            holder_identity: format!("extension-{}", settings.extension_type),
            renew_interval: args.heartbeat_renew_interval,
        };
        let extension_type = settings.extension_type.clone();
        register(
            setup.manager,
            ontap.connections,
            ontap.verify,
            ontap.prefill,
            settings,
        )?;
        let state = super::metrics::ExtensionStateCollector {
            extensions: setup.manager.cache::<super::api::Extension>()?,
            extension_type,
        };
        setup.registry.register_collector(Box::new(state));
        let client = setup.client();
        setup.spawn_background(Box::new(move |stop| {
            Box::pin(heartbeat::run(client, heartbeat, stop))
        }));
        Ok(())
    }

    fn declarations(&self, offline: &Offline) -> Result<Vec<Declarations>, FeatureError> {
        let images = ShootImages::embedded().map_err(image_error)?;
        let extension = offline.read(Some(NAME), |manager, client| {
            let prefill = SeedSecretPrefill::new(client.clone());
            let connections = ClusterConnections::new(client, ClientSettings::default());
            register(
                manager,
                connections,
                VerifyRequests::default(),
                prefill,
                ExtensionSettings::new(images),
            )
        })?;
        Ok(vec![extension])
    }
}
