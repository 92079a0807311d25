//! The admin HTTP servers: `/metrics` on the metrics address, `/healthz` and `/readyz` on the
//! health-probe address (two listeners, as controller-runtime has them, so that probes keep
//! working when metrics are scraped slowly and metrics can be firewalled separately).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::metrics_auth::MetricsAuthorizer;
use reconcile_engine::health::{Health, Report};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Parses a bind address the way controller-runtime's flags take it: `:8080` means every
/// interface, `0` disables the server.
pub fn parse_bind_address(value: &str) -> Result<Option<SocketAddr>, String> {
    if value == "0" {
        return Ok(None);
    }
    let full = if value.starts_with(':') {
        format!("0.0.0.0{value}")
    } else {
        value.to_string()
    };
    full.parse()
        .map(Some)
        .map_err(|e| format!("invalid bind address {value:?}: {e}"))
}

/// `/metrics` of `registry`, for whoever `authorizer` lets read it (`None`: everyone).
pub fn metrics_router(registry: Arc<Registry>, authorizer: Option<MetricsAuthorizer>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state((registry, authorizer))
}

async fn metrics(
    State((registry, authorizer)): State<(Arc<Registry>, Option<MetricsAuthorizer>)>,
    headers: HeaderMap,
) -> Response {
    if let Some(authorizer) = authorizer {
        let status = authorizer.check(&headers).await;
        if status != StatusCode::OK {
            return status.into_response();
        }
    }
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &registry) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], body).into_response(),
        Err(error) => {
            tracing::error!(%error, "encoding metrics failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

pub fn health_router(health: Health) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

#[derive(serde::Deserialize)]
struct ProbeQuery {
    verbose: Option<String>,
}

fn answer(report: Report, kind: &str, query: &ProbeQuery) -> Response {
    let status = if report.healthy() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = if query.verbose.is_some() || !report.healthy() {
        report.verbose(kind)
    } else {
        "ok".to_string()
    };
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn healthz(State(health): State<Health>, Query(query): Query<ProbeQuery>) -> Response {
    answer(health.liveness(), "livez", &query)
}

async fn readyz(State(health): State<Health>, Query(query): Query<ProbeQuery>) -> Response {
    answer(health.readiness(), "readyz", &query)
}

/// Binds now (so a taken port fails start-up with a clear error) and serves until `shutdown`.
pub async fn bind(
    address: SocketAddr,
    router: Router,
    what: &'static str,
) -> anyhow::Result<AdminServer> {
    use anyhow::Context;
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("binding the {what} server to {address}"))?;
    let local = listener.local_addr()?;
    tracing::info!(address = %local, "{what} server listening");
    Ok(AdminServer {
        listener,
        router,
        local,
    })
}

pub struct AdminServer {
    listener: TcpListener,
    router: Router,
    pub local: SocketAddr,
}

impl AdminServer {
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_follow_controller_runtime() {
        assert_eq!(
            parse_bind_address(":8080").unwrap(),
            Some("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9").unwrap(),
            Some("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(parse_bind_address("0").unwrap(), None);
        assert!(parse_bind_address("localhost").is_err());
    }
}
