//! Client-side rate limit and request metrics for the Kubernetes client.
//!
//! client-go limits every client to a QPS with a burst, and a fleet of controllers leans on that
//! to not overwhelm the API server; kube-rs has no such limit. [`ApiRateLimitLayer`] adds it as a
//! tower layer on top of kube's stack, so kube's own retry of 429/503 responses (further down the
//! stack) stays in place and retries do not take a second token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use kube::client::ClientBuilder;
use kube::{Client, Config};
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

use super::metrics::Metrics;
use super::requeue::TokenBucket;

/// Client-side request limits: `qps` requests per second on average, `burst` at once.
/// `qps <= 0` disables the limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientLimits {
    /// Sustained requests per second; 0 disables limiting.
    pub qps: f32,
    /// Requests allowed at once after an idle period.
    pub burst: u32,
}

impl Default for ClientLimits {
    /// 50 QPS, burst 100: client-go's 5/10 starves a controller that writes a status per object
    /// (the Kyma experiment needed 150/150 at 4,000 parents); above a few hundred the API server's
    /// own priority and fairness is the better guard.
    fn default() -> Self {
        ClientLimits {
            qps: 50.0,
            burst: 100,
        }
    }
}

/// Builds a [`Client`] from `config` with the rate limit and request metrics layer.
pub fn build_client(
    config: Config,
    limits: ClientLimits,
    metrics: Arc<Metrics>,
) -> Result<Client, kube::Error> {
    let layer = ApiRateLimitLayer::new(limits, metrics, host_label(&config.cluster_url));
    Ok(ClientBuilder::try_from(config)?.with_layer(&layer).build())
}

fn host_label(url: &http::Uri) -> String {
    url.authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default()
}

/// Tower layer: waits for a token before each request (recording the wait in
/// `rest_client_rate_limiter_duration_seconds`) and counts responses in
/// `rest_client_requests_total{code,method,host}`.
#[derive(Clone, Debug)]
pub struct ApiRateLimitLayer {
    bucket: Option<Arc<TokenBucket>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl ApiRateLimitLayer {
    /// A layer limiting to `limits` and labelling metrics with `host`.
    pub fn new(limits: ClientLimits, metrics: Arc<Metrics>, host: String) -> Self {
        ApiRateLimitLayer {
            bucket: TokenBucket::new(f64::from(limits.qps), limits.burst).map(Arc::new),
            metrics,
            host: host.into(),
        }
    }
}

impl<S> Layer<S> for ApiRateLimitLayer {
    type Service = ApiRateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ApiRateLimit {
            inner,
            bucket: self.bucket.clone(),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
            permit: Permit::None,
        }
    }
}

/// The service of [`ApiRateLimitLayer`].
///
/// The wait happens in `poll_ready`, like tower's own `RateLimit`: kube's client puts a `Buffer`
/// in front of the stack, so requests wait in arrival order and the inner service (which is not
/// `Clone`) never has to move into a future.
pub struct ApiRateLimit<S> {
    inner: S,
    bucket: Option<Arc<TokenBucket>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
    permit: Permit,
}

enum Permit {
    None,
    Waiting {
        sleep: Pin<Box<Sleep>>,
        waited: Duration,
    },
    Ready {
        waited: Duration,
    },
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ApiRateLimit<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(bucket) = &self.bucket {
            if matches!(self.permit, Permit::None) {
                let now = Instant::now();
                let at = bucket.reserve();
                let waited = at.saturating_duration_since(now);
                self.permit = if waited.is_zero() {
                    Permit::Ready { waited }
                } else {
                    Permit::Waiting {
                        sleep: Box::pin(tokio::time::sleep_until(at)),
                        waited,
                    }
                };
            }
            if let Permit::Waiting { sleep, waited } = &mut self.permit {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.permit = Permit::Ready { waited: *waited };
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        if let Permit::Ready { waited } = std::mem::replace(&mut self.permit, Permit::None) {
            self.metrics
                .observe_rate_limiter(&method, &self.host, waited);
        }
        let metrics = self.metrics.clone();
        let host = self.host.clone();
        let future = self.inner.call(request);
        Box::pin(async move {
            let result = future.await;
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            metrics
                .rest_client_requests_total(&code, &method, &host)
                .inc();
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::ServiceExt;

    fn ok_service() -> impl Service<
        Request<()>,
        Response = Response<()>,
        Error = Infallible,
        Future = std::future::Ready<Result<Response<()>, Infallible>>,
    > {
        tower::service_fn(|_req: Request<()>| std::future::ready(Ok(Response::new(()))))
    }

    fn encode(registry: &prometheus_client::registry::Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).expect("encodes");
        out
    }

    #[tokio::test(start_paused = true)]
    async fn holds_the_configured_qps_and_exports_wait_and_counts() {
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = Metrics::new(&mut registry);
        let layer = ApiRateLimitLayer::new(
            ClientLimits {
                qps: 10.0,
                burst: 5,
            },
            metrics,
            "api:6443".into(),
        );
        let mut svc = layer.layer(ok_service());
        let start = Instant::now();
        for _ in 0..25 {
            let req = Request::builder()
                .method("PATCH")
                .body(())
                .expect("valid request");
            svc.ready()
                .await
                .expect("ready")
                .call(req)
                .await
                .expect("ok");
        }
        // 5 at once, then 20 more at 10/s.
        let elapsed = Instant::now() - start;
        assert!(
            elapsed.abs_diff(Duration::from_secs(2)) < Duration::from_millis(5),
            "{elapsed:?}"
        );
        let text = encode(&registry);
        assert!(
            text.contains(
                r#"rest_client_requests_total{code="200",method="PATCH",host="api:6443"} 25"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"rest_client_rate_limiter_duration_seconds_count{verb="PATCH",host="api:6443"} 25"#),
            "{text}"
        );
        // Sequential callers: each of the 20 after the burst waits one 100 ms slot.
        let sum_line = text
            .lines()
            .find(|l| l.starts_with("rest_client_rate_limiter_duration_seconds_sum"))
            .expect("sum present");
        let sum: f64 = sum_line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("number");
        assert!(
            (sum - 2.0).abs() < 0.01,
            "each waited ~100 ms after the burst: {sum}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn zero_qps_disables() {
        let layer = ApiRateLimitLayer::new(
            ClientLimits { qps: 0.0, burst: 0 },
            Arc::new(Metrics::unregistered()),
            "h".into(),
        );
        let mut svc = layer.layer(ok_service());
        let start = Instant::now();
        for _ in 0..1000 {
            let req = Request::new(());
            svc.ready()
                .await
                .expect("ready")
                .call(req)
                .await
                .expect("ok");
        }
        assert_eq!(Instant::now(), start);
    }
}
