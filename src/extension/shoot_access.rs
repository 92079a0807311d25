//! Reading the shoot, as Gardener's extension library does for health checks that need it
//! (`util.NewClientForShoot`): with the kubeconfig in the shoot namespace's Secret
//! `gardener-internal` (the shoot API server's in-cluster address), else `gardener`. gardenlet
//! keeps both, with a token its resource manager renews; this operator writes nothing in the
//! shoot through them (the ManagedResources do that) and only reads what Trident reports.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Api, Client, Config, ResourceExt};

use crate::deploy::USER_AGENT;

/// The shoot access Secrets in the order Gardener's library tries them.
pub const SHOOT_ACCESS_SECRETS: [&str; 2] = ["gardener-internal", "gardener"];
const KUBECONFIG_KEY: &str = "kubeconfig";
/// A shoot whose API server does not answer must not hold a pass of the seed's controller long.
const SHOOT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ShootAccessError {
    #[error("reading the shoot access Secret {name}: {source}")]
    Read {
        name: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("no shoot access Secret (gardener-internal or gardener) in {namespace}")]
    Missing { namespace: String },
    #[error("the shoot access Secret {name} has no kubeconfig")]
    NoKubeconfig { name: &'static str },
    #[error("the kubeconfig of the shoot access Secret {name} is unusable: {source}")]
    Kubeconfig {
        name: &'static str,
        #[source]
        source: KubeconfigError,
    },
    #[error("a client for the shoot from the Secret {name}: {source}")]
    Client {
        name: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// Clients for the shoots, one per shoot namespace, made again when its access Secret changes
/// (a renewed token, a moved API server).
#[derive(Clone, Default)]
pub struct ShootClients {
    /// By shoot namespace.
    made: Arc<Mutex<HashMap<String, MadeClient>>>,
}

/// A client and the version of the access Secret it was made from.
struct MadeClient {
    secret: &'static str,
    resource_version: String,
    client: Client,
}

impl ShootClients {
    /// A client for the shoot whose control plane is in `namespace` of the seed.
    pub async fn client(&self, seed: &Client, namespace: &str) -> Result<Client, ShootAccessError> {
        let (name, secret) = access_secret(seed, namespace).await?;
        let resource_version = secret.resource_version().unwrap_or_default();
        if let Some(made) = self.lock().get(namespace)
            && made.secret == name
            && made.resource_version == resource_version
        {
            return Ok(made.client.clone());
        }
        let client = client_from(name, &secret).await?;
        let made = MadeClient {
            secret: name,
            resource_version,
            client: client.clone(),
        };
        self.lock().insert(namespace.to_string(), made);
        Ok(client)
    }

    /// Drops the client of a shoot namespace whose Extension is gone.
    pub fn forget(&self, namespace: &str) {
        self.lock().remove(namespace);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, MadeClient>> {
        self.made.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn access_secret(
    seed: &Client,
    namespace: &str,
) -> Result<(&'static str, Secret), ShootAccessError> {
    let secrets: Api<Secret> = Api::namespaced(seed.clone(), namespace);
    for name in SHOOT_ACCESS_SECRETS {
        let found = secrets
            .get_opt(name)
            .await
            .map_err(|source| ShootAccessError::Read { name, source })?;
        if let Some(secret) = found {
            return Ok((name, secret));
        }
    }
    Err(ShootAccessError::Missing {
        namespace: namespace.to_string(),
    })
}

async fn client_from(name: &'static str, secret: &Secret) -> Result<Client, ShootAccessError> {
    let text = secret
        .data
        .as_ref()
        .and_then(|data| data.get(KUBECONFIG_KEY))
        .and_then(|bytes| String::from_utf8(bytes.0.clone()).ok())
        .ok_or(ShootAccessError::NoKubeconfig { name })?;
    let kubeconfig = Kubeconfig::from_yaml(&text)
        .map_err(|source| ShootAccessError::Kubeconfig { name, source })?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| ShootAccessError::Kubeconfig { name, source })?;
    config.connect_timeout = Some(SHOOT_TIMEOUT);
    config.read_timeout = Some(SHOOT_TIMEOUT);
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    Client::try_from(config).map_err(|source| ShootAccessError::Client { name, source })
}
