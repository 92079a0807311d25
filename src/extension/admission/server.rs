//! `ontap-operator admission`: the webhook server, its certificates and its registration in the
//! garden.
//!
//! Every replica does the same, idempotently, each period: make the certificate Secret current
//! ([`certs::Store::ensure`]), write the `ValidatingWebhookConfiguration` with the CA bundle into
//! the garden, then serve what the Secret holds. Ready means exactly that: a certificate is
//! served and the garden's configuration trusts it, as read back from the garden.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::{Api, Client};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::certs::{self, Policy, Served, Store};
use super::review::{Rules, review, shoot_of};
use crate::cli::AdmissionArgs;
use crate::deploy::USER_AGENT;
use crate::extension::api::ShootView;
use crate::extension::config::ConfigDefaults;

/// The path the garden's API servers post Shoots to.
pub const PATH: &str = "/validate-shoots";
/// The webhook's name in the configuration: unique among the garden's webhooks.
pub const WEBHOOK_NAME: &str = "shoots.admission.ontap.extensions.storage.dev";
/// gardener's `ExtensionLabels` admission plugin labels every Shoot that enables an extension
/// type with this prefix and the type: Gardener's convention for an extension's object selector.
pub const EXTENSION_LABEL_PREFIX: &str = "extensions.extensions.gardener.cloud/";
const FIELD_MANAGER: &str = "ontap-operator-admission";

pub async fn run(args: AdmissionArgs) -> anyhow::Result<()> {
    let _telemetry = crate::runtime::telemetry::init(args.log_format)?;
    let runtime = Client::try_from(
        reconcile_engine::load_config(args.kubeconfig.as_deref(), USER_AGENT).await?,
    )
    .context("the runtime cluster's client")?;
    let garden_kubeconfig = args.garden_kubeconfig.clone().or_else(|| {
        let mounted = std::path::Path::new(GENERIC_GARDEN_KUBECONFIG);
        mounted.exists().then(|| mounted.to_owned())
    });
    let garden = match &garden_kubeconfig {
        Some(path) => {
            Client::try_from(reconcile_engine::load_config(Some(path), USER_AGENT).await?)
                .context("the garden's client")?
        }
        None => runtime.clone(),
    };

    let listener = TcpListener::bind(args.bind_address)
        .await
        .with_context(|| format!("binding {}", args.bind_address))?;
    let local = listener.local_addr()?;
    let url = args
        .webhook_url
        .clone()
        .unwrap_or_else(|| format!("https://{local}{PATH}"));
    let mut names = args.certificate_names.clone();
    if let Some(host) = host_of(&url).filter(|h| !names.contains(h)) {
        names.push(host);
    }
    let store = Store::new(
        runtime,
        &args.namespace,
        &args.certificate_secret,
        Policy {
            ca_validity: args.ca_validity,
            certificate_validity: args.certificate_validity,
            names,
            publication_grace: args.ca_publication_grace,
        },
    );
    let rules = Rules {
        extension_type: args.extension_type.clone(),
        config: ConfigDefaults {
            allow_shoot_images: args.extension_allow_shoot_images,
            strict: true,
            ..ConfigDefaults::default()
        },
    };
    let registration = Registration {
        api: Api::all(garden),
        name: args.webhook_name.clone(),
        url,
        extension_type: args.extension_type.clone(),
        timeout_seconds: args.timeout_seconds,
    };

    let shutdown = CancellationToken::new();
    let resolver = Arc::new(CurrentCertificate::default());
    let ready = Arc::new(AtomicBool::new(false));

    let health = TcpListener::bind(args.health_bind_address)
        .await
        .with_context(|| format!("binding {}", args.health_bind_address))?;
    tracing::info!(address = %health.local_addr()?, "admission health server listening");
    let health_app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready.clone());
    let health_shutdown = shutdown.clone();
    let health_task = tokio::spawn(async move {
        axum::serve(health, health_app)
            .with_graceful_shutdown(health_shutdown.cancelled_owned())
            .await
    });

    // The first certificate before the first connection: nothing is served without one.
    let mut served = loop {
        match keep_current(&store, &registration, &resolver, None).await {
            Ok(served) => break served,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "the admission's certificate or registration is not in place yet; retrying");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(2)) => {}
                    () = shutdown_signal() => return Ok(()),
                }
            }
        }
    };
    ready.store(true, Ordering::SeqCst);
    tracing::info!(address = %local, url = %registration.url, "admission server listening");

    let config = server_config(resolver.clone())?;
    let app = Router::new()
        .route(PATH, post(validate))
        .with_state(Arc::new(rules));
    let serve_shutdown = shutdown.clone();
    let serve_task = tokio::spawn(accept_loop(
        listener,
        TlsAcceptor::from(config),
        app,
        serve_shutdown,
    ));

    loop {
        tokio::select! {
            () = tokio::time::sleep(args.certificate_check_period) => {}
            () = shutdown_signal() => break,
        }
        match keep_current(&store, &registration, &resolver, Some(&served)).await {
            Ok(now_served) => {
                served = now_served;
                ready.store(true, Ordering::SeqCst);
            }
            Err(e) => {
                // Still serving the certificate the garden trusts; unready, so that a rollout
                // stops at this replica until the garden is reached again.
                ready.store(false, Ordering::SeqCst);
                tracing::warn!(error = %format!("{e:#}"), "renewing the admission's certificate or registration failed; retrying");
            }
        }
    }
    shutdown.cancel();
    let _ = serve_task.await;
    let _ = health_task.await;
    Ok(())
}

/// Where gardener-operator mounts the kubeconfig of the virtual garden into an admission's Pods
/// (`gardenerutils.VolumeMountPathGenericKubeconfig`).
pub const GENERIC_GARDEN_KUBECONFIG: &str =
    "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig";

async fn shutdown_signal() {
    let terminate = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// One round: the Secret current, the garden trusting its bundle, the resolver serving its
/// certificate.
async fn keep_current(
    store: &Store,
    registration: &Registration,
    resolver: &CurrentCertificate,
    before: Option<&Served>,
) -> anyhow::Result<Served> {
    let served = match store.ensure(SystemTime::now()).await {
        Ok(served) => served,
        // Another replica renewed first: what it wrote is what to serve.
        Err(certs::CertError::Conflict(_)) => store.ensure(SystemTime::now()).await?,
        Err(e) => return Err(e.into()),
    };
    registration.apply(&served.bundle_pem).await?;
    if served.unpublished {
        store
            .mark_published(SystemTime::now())
            .await
            .or_else(|e| match e {
                certs::CertError::Conflict(_) => Ok(()),
                e => Err(e),
            })?;
    }
    if before.is_none_or(|b| b.cert_pem != served.cert_pem) {
        resolver.set(&served)?;
        tracing::info!("serving the admission's certificate from its Secret");
    }
    Ok(served)
}

/// The webhook configuration in the garden.
struct Registration {
    api: Api<ValidatingWebhookConfiguration>,
    name: String,
    url: String,
    extension_type: String,
    timeout_seconds: i32,
}

impl Registration {
    fn desired(&self, bundle_pem: &str) -> ValidatingWebhookConfiguration {
        ValidatingWebhookConfiguration {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(
                    [(
                        "app.kubernetes.io/name".to_owned(),
                        "gardener-extension-ontap-admission".to_owned(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            webhooks: Some(vec![ValidatingWebhook {
                name: WEBHOOK_NAME.into(),
                admission_review_versions: vec!["v1".into()],
                client_config: WebhookClientConfig {
                    url: Some(self.url.clone()),
                    ca_bundle: Some(ByteString(bundle_pem.as_bytes().to_vec())),
                    service: None,
                },
                rules: Some(vec![RuleWithOperations {
                    api_groups: Some(vec!["core.gardener.cloud".into()]),
                    api_versions: Some(vec!["v1beta1".into()]),
                    operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
                    resources: Some(vec!["shoots".into()]),
                    scope: Some("Namespaced".into()),
                }]),
                object_selector: Some(LabelSelector {
                    match_labels: Some(
                        [(
                            format!("{EXTENSION_LABEL_PREFIX}{}", self.extension_type),
                            "true".to_owned(),
                        )]
                        .into(),
                    ),
                    match_expressions: None,
                }),
                // What Gardener's provider extensions use: a Shoot that enables the type is not
                // admitted unchecked while the webhook cannot be reached.
                failure_policy: Some("Fail".into()),
                match_policy: Some("Equivalent".into()),
                side_effects: "None".into(),
                timeout_seconds: Some(self.timeout_seconds),
                namespace_selector: None,
                match_conditions: None,
            }]),
        }
    }

    async fn apply(&self, bundle_pem: &str) -> anyhow::Result<()> {
        let desired = self.desired(bundle_pem);
        let applied = self
            .api
            .patch(
                &self.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&desired),
            )
            .await
            .with_context(|| {
                format!(
                    "writing the ValidatingWebhookConfiguration {} in the garden",
                    self.name
                )
            })?;
        let trusted = applied
            .webhooks
            .as_ref()
            .and_then(|w| w.first())
            .and_then(|w| w.client_config.ca_bundle.as_ref())
            .is_some_and(|b| b.0 == bundle_pem.as_bytes());
        anyhow::ensure!(
            trusted,
            "the garden's ValidatingWebhookConfiguration {} does not carry the CA bundle after writing it",
            self.name
        );
        Ok(())
    }
}

async fn readyz(State(ready): State<Arc<AtomicBool>>) -> (StatusCode, &'static str) {
    if ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the certificate or its registration in the garden is not current",
        )
    }
}

async fn validate(
    State(rules): State<Arc<Rules>>,
    Json(review_request): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let request: AdmissionRequest<DynamicObject> = match review_request.try_into() {
        Ok(request) => request,
        Err(e) => return Json(AdmissionResponse::invalid(e.to_string()).into_review()),
    };
    Json(verdict(&request, &rules).into_review())
}

fn verdict(request: &AdmissionRequest<DynamicObject>, rules: &Rules) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return response;
    }
    let decode = |o: &Option<DynamicObject>| -> Result<Option<ShootView>, String> {
        o.as_ref()
            .map(|o| {
                serde_json::to_value(o)
                    .and_then(|v| shoot_of(&v))
                    .map_err(|e| format!("the Shoot cannot be read: {e}"))
            })
            .transpose()
    };
    let (new, old) = match (decode(&request.object), decode(&request.old_object)) {
        (Ok(Some(new)), Ok(old)) => (new, old),
        (Err(e), _) | (_, Err(e)) => return response.deny(e),
        (Ok(None), _) => return response.deny("the request carries no Shoot"),
    };
    let refusals = review(&new, old.as_ref(), rules);
    if refusals.is_empty() {
        return response;
    }
    let message = refusals
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    tracing::info!(
        shoot = %format!("{}/{}", new.metadata.namespace, new.metadata.name),
        refused = %message,
        "a Shoot's ontap configuration was refused"
    );
    let mut denied = response.deny(message);
    denied.result.code = 422;
    denied.result.reason = "Invalid".into();
    denied
}

/// The certificate the TLS server presents, replaced when the Secret's changes.
#[derive(Debug, Default)]
struct CurrentCertificate(RwLock<Option<Arc<CertifiedKey>>>);

impl CurrentCertificate {
    fn set(&self, served: &Served) -> anyhow::Result<()> {
        let certs = CertificateDer::pem_slice_iter(served.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("the serving certificate's PEM")?;
        let key = PrivateKeyDer::from_pem_slice(certs::key_pem(served).as_bytes())
            .context("the serving key's PEM")?;
        let provider = provider();
        let signing = provider
            .key_provider
            .load_private_key(key)
            .context("the serving key")?;
        let certified = Arc::new(CertifiedKey::new(certs, signing));
        match self.0.write() {
            Ok(mut current) => *current = Some(certified),
            Err(poisoned) => *poisoned.into_inner() = Some(certified),
        }
        Ok(())
    }
}

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.0.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_config(resolver: Arc<CurrentCertificate>) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    shutdown: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let tls = match acceptor.accept(stream).await {
                Ok(tls) => tls,
                Err(e) => {
                    tracing::debug!(error = %e, "TLS handshake failed");
                    return;
                }
            };
            let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                app.clone().oneshot(req)
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                result = conn => if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                () = shutdown.cancelled() => {}
            }
        });
    }
}

/// The host of an `https://host:port/path` URL, without brackets.
fn host_of(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    Some(host.to_owned()).filter(|h| !h.is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_names_the_host_the_garden_calls() {
        assert_eq!(
            host_of("https://gardener-extension-ontap-admission.garden/validate-shoots").unwrap(),
            "gardener-extension-ontap-admission.garden"
        );
        assert_eq!(host_of("https://127.0.0.1:9443/x").unwrap(), "127.0.0.1");
        assert_eq!(host_of("https://[::1]:9443/x").unwrap(), "::1");
        assert_eq!(host_of("http://plain"), None);
    }
}
