//! The Kubernetes client: its configuration, and a client-side rate limit with request metrics.
//!
//! client-go limits every client to a QPS with a burst, and a fleet of controllers leans on that
//! to not overwhelm the API server; kube-rs has no such limit. [`ApiRateLimitLayer`] adds it as a
//! tower layer on top of kube's stack, so kube's own retry of 429/503 responses (further down the
//! stack) stays in place and retries do not take a second token. The same layer bounds the
//! writes in flight: the API server refuses mutating requests beyond its own in-flight limit with
//! 429, and a refused write only costs a retry later.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use kube::client::ClientBuilder;
use kube::{Client, Config};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::buffer::BufferLayer;
use tower::{Layer, Service};

use super::metrics::Metrics;
use super::requeue::TokenBucket;

/// Client-side request limits: `qps` requests per second on average, `burst` at once, and at
/// most `max_mutating_in_flight` writes (POST, PUT, PATCH, DELETE) awaiting their response.
/// `qps <= 0` disables the rate limit, `max_mutating_in_flight == 0` the write bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientLimits {
    /// Sustained requests per second; 0 disables limiting.
    pub qps: f32,
    /// Requests allowed at once after an idle period.
    pub burst: u32,
    /// Writes awaiting their response at once; 0 disables the bound.
    pub max_mutating_in_flight: u32,
}

impl Default for ClientLimits {
    /// 1,000 QPS, burst 2,000 — lifecycle-manager's production values for ~5,000 Kymas.
    /// client-go's 5/10 starves a controller that writes a status per object, and the Kyma
    /// experiment's 150/150 was per resource type; this one limiter is shared by every
    /// controller of the process. At this rate the API server's own priority and fairness is
    /// the real guard; the client limit only stops a runaway loop.
    fn default() -> Self {
        ClientLimits {
            qps: 1000.0,
            burst: 2000,
            // By Little's law, the writes in flight that carry the rate above while the API
            // server answers without queuing. More only help once its writes take longer, and
            // then it is queuing already: more only lengthen its queue. Unbounded, 50 Kyma
            // workers creating 8 children each put hundreds of writes in flight and the API
            // server refused the excess with 429; at 100, a small API server spent more CPU per
            // write than at 32 (docs/benchmarks/kyma.md), and the client held a connection with
            // its buffers per write in flight (HTTP/1.1).
            max_mutating_in_flight: 32,
        }
    }
}

/// Builds a [`Client`] from `config` with the rate limit and request metrics layer.
///
/// Must be called inside a tokio runtime (the stack spawns its buffer worker).
pub fn build_client(
    config: Config,
    limits: ClientLimits,
    metrics: Arc<Metrics>,
) -> Result<Client, kube::Error> {
    let layer = ApiRateLimitLayer::new(limits, metrics, host_label(&config.cluster_url));
    Ok(ClientBuilder::try_from(config)?
        // kube's stack is a `BoxService`, which cannot be cloned into the future that waits
        // for a token; a buffer makes it cloneable.
        .with_layer(&BufferLayer::<Request<kube::client::Body>>::new(1024))
        .with_layer(&layer)
        .build())
}

fn host_label(url: &http::Uri) -> String {
    url.authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default()
}

/// Tower layer: waits for a token before each request, and for a write slot before each write
/// (recording both waits in `rest_client_rate_limiter_duration_seconds`), and counts responses
/// in `rest_client_requests_total{code,method,host}`.
///
/// The inner service must be `Clone` (put a `tower::buffer::Buffer` below it).
#[derive(Clone, Debug)]
pub struct ApiRateLimitLayer {
    bucket: Option<Arc<TokenBucket>>,
    writes: Option<Arc<Semaphore>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl ApiRateLimitLayer {
    /// A layer limiting to `limits` and labelling metrics with `host`.
    pub fn new(limits: ClientLimits, metrics: Arc<Metrics>, host: String) -> Self {
        let writes = usize::try_from(limits.max_mutating_in_flight)
            .ok()
            .filter(|n| *n > 0)
            .map(|n| Arc::new(Semaphore::new(n)));
        ApiRateLimitLayer {
            bucket: TokenBucket::new(f64::from(limits.qps), limits.burst).map(Arc::new),
            writes,
            metrics,
            host: host.into(),
        }
    }
}

/// Whether a request changes objects, and so counts against the API server's mutating
/// in-flight limit. Watches and lists, the long-running requests, never do.
fn is_mutating(method: &http::Method) -> bool {
    [
        http::Method::POST,
        http::Method::PUT,
        http::Method::PATCH,
        http::Method::DELETE,
    ]
    .contains(method)
}

impl<S> Layer<S> for ApiRateLimitLayer {
    type Service = ApiRateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ApiRateLimit {
            inner,
            bucket: self.bucket.clone(),
            writes: self.writes.clone(),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

/// The service of [`ApiRateLimitLayer`].
///
/// The token is reserved when the request arrives and waited for inside the request's future,
/// as client-go's limiter does: concurrent requests queue behind each other in arrival order, and
/// each one's recorded wait is its real time in the queue.
#[derive(Clone)]
pub struct ApiRateLimit<S> {
    inner: S,
    bucket: Option<Arc<TokenBucket>>,
    writes: Option<Arc<Semaphore>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ApiRateLimit<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness of the inner service is awaited in the future, after the token, so that a
        // request waiting for its token does not hold a slot of the inner service.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        let reserved = Instant::now();
        let at = self.bucket.as_ref().map(|bucket| bucket.reserve());
        let writes = self
            .writes
            .clone()
            .filter(|_| is_mutating(request.method()));
        let metrics = self.metrics.clone();
        let host = self.host.clone();
        // The clone that was made ready is the one to call, per tower's contract; `take` the
        // ready one and leave a fresh clone behind.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            if let Some(at) = at {
                tokio::time::sleep_until(at).await;
            }
            // Taken after the token, so a write waiting for its token holds no slot; held
            // until the response arrives, as the API server counts it.
            let slot = match writes {
                // The semaphore is never closed, so an error cannot happen; without a slot
                // the request simply goes unbounded.
                Some(writes) => writes.acquire_owned().await.ok(),
                None => None,
            };
            if at.is_some() || slot.is_some() {
                metrics.observe_rate_limiter(&method, &host, reserved.elapsed());
            }
            let result = match std::future::poll_fn(|cx| inner.poll_ready(cx)).await {
                Ok(()) => inner.call(request).await,
                Err(err) => Err(err),
            };
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
    use std::collections::BTreeMap;
    use std::convert::Infallible;
    use std::time::Duration;
    use tower::ServiceExt;

    fn ok_service() -> impl Service<
        Request<()>,
        Response = Response<()>,
        Error = Infallible,
        Future = std::future::Ready<Result<Response<()>, Infallible>>,
    > + Clone
    + Send
    + 'static {
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
        let metrics = Metrics::new(&mut registry, "test");
        let layer = ApiRateLimitLayer::new(
            ClientLimits {
                qps: 10.0,
                burst: 5,
                max_mutating_in_flight: 0,
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
    async fn concurrent_requests_queue_and_record_their_time_in_the_queue() {
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = Metrics::new(&mut registry, "test");
        let layer = ApiRateLimitLayer::new(
            ClientLimits {
                qps: 10.0,
                burst: 5,
                max_mutating_in_flight: 0,
            },
            metrics,
            "h".into(),
        );
        let svc = layer.layer(ok_service());
        let start = Instant::now();
        let calls: Vec<_> = (0..25)
            .map(|_| {
                let mut svc = svc.clone();
                tokio::spawn(async move {
                    svc.ready()
                        .await
                        .expect("ready")
                        .call(Request::new(()))
                        .await
                        .expect("ok");
                    Instant::now()
                })
            })
            .collect();
        let mut done = Vec::new();
        for call in calls {
            done.push(call.await.expect("no panic") - start);
        }
        assert_eq!(done.iter().max(), Some(&Duration::from_secs(2)));
        let text = encode(&registry);
        let sum: f64 = text
            .lines()
            .find(|l| l.starts_with("rest_client_rate_limiter_duration_seconds_sum"))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .expect("sum present");
        // 0.1 + 0.2 + … + 2.0 s for the 20 requests after the burst.
        assert!((sum - 21.0).abs() < 0.01, "{sum}");
    }

    /// A service that answers after 100 ms and records the most reads and the most writes it
    /// had in flight at once.
    #[derive(Clone, Default)]
    struct Slow {
        state: Arc<std::sync::Mutex<BTreeMap<String, (usize, usize)>>>,
    }

    impl Service<Request<()>> for Slow {
        type Response = Response<()>;
        type Error = Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<()>, Infallible>> + Send>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<()>) -> Self::Future {
            let state = self.state.clone();
            let kind = if is_mutating(request.method()) {
                "write"
            } else {
                "read"
            };
            Box::pin(async move {
                {
                    let mut state = state.lock().expect("lock");
                    let (now, peak) = state.entry(kind.to_owned()).or_default();
                    *now += 1;
                    *peak = (*peak).max(*now);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                state
                    .lock()
                    .expect("lock")
                    .entry(kind.to_owned())
                    .or_default()
                    .0 -= 1;
                Ok(Response::new(()))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn writes_in_flight_are_bounded_and_reads_are_not() {
        let layer = ApiRateLimitLayer::new(
            ClientLimits {
                qps: 0.0,
                burst: 0,
                max_mutating_in_flight: 3,
            },
            Arc::new(Metrics::unregistered()),
            "h".into(),
        );
        let slow = Slow::default();
        let svc = layer.layer(slow.clone());
        let start = Instant::now();
        let calls: Vec<_> = ["POST", "PATCH", "PUT", "DELETE", "GET"]
            .iter()
            .flat_map(|m| std::iter::repeat_n(*m, 6))
            .map(|method| {
                let mut svc = svc.clone();
                tokio::spawn(async move {
                    let request = Request::builder()
                        .method(method)
                        .body(())
                        .expect("valid request");
                    svc.ready()
                        .await
                        .expect("ready")
                        .call(request)
                        .await
                        .expect("ok");
                })
            })
            .collect();
        for call in calls {
            call.await.expect("no panic");
        }
        let peaks = slow.state.lock().expect("lock").clone();
        assert_eq!(peaks["write"].1, 3, "{peaks:?}");
        assert_eq!(peaks["read"].1, 6, "reads are not bounded: {peaks:?}");
        // 24 writes, 3 at a time, 100 ms each.
        assert_eq!(Instant::now() - start, Duration::from_millis(800));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_qps_disables() {
        let layer = ApiRateLimitLayer::new(
            ClientLimits {
                qps: 0.0,
                burst: 0,
                max_mutating_in_flight: 0,
            },
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

/// Why no client configuration could be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigLoadError {
    /// The named kubeconfig could not be read or used.
    #[error("reading kubeconfig {path}: {source}")]
    Read {
        /// The kubeconfig file.
        path: std::path::PathBuf,
        /// What was wrong with it.
        source: kube::config::KubeconfigError,
    },
    /// Neither `KUBECONFIG`'s rules nor the in-cluster configuration gave one.
    #[error("no kubeconfig and no in-cluster configuration: {0}")]
    Infer(#[from] kube::config::InferConfigError),
}

/// The client configuration from `kubeconfig`, else the usual `KUBECONFIG` / in-cluster rules,
/// naming the process `user_agent` to the API server.
pub async fn load_config(
    kubeconfig: Option<&std::path::Path>,
    user_agent: &'static str,
) -> Result<Config, ConfigLoadError> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let mut config = match kubeconfig {
        Some(path) => {
            let read = |source| ConfigLoadError::Read {
                path: path.to_owned(),
                source,
            };
            let kubeconfig = Kubeconfig::read_from(path).map_err(read)?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(read)?
        }
        None => Config::infer().await?,
    };
    // kube sends no User-Agent, so the API server would name this process "unknown" in every
    // object's managedFields where a write gives no field manager, and in its audit log.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(user_agent),
    ));
    Ok(config)
}
