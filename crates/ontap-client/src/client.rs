//! The HTTP layer: one request with timeout, concurrency limit, tracing, metrics and a size
//! limit on the answer; retries of idempotent requests; pagination; job polling.
//!
//! One file because every piece is a step of the same request path over `Inner`'s private
//! state (endpoint, credentials, limiter, timeouts): split, each would need that state opened
//! to the others.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;
use tracing::{Instrument, field};

use super::config::{Credentials, JobPollConfig, OntapConfig, RetryConfig, TlsVerification};
use super::error::{ApiError, OntapError, Result, TransportFailure};
use super::metrics::OntapMetrics;
use super::model::{self, Collection, JobLink};
use super::trace::TraceparentFn;

const HAL_JSON: &str = "application/hal+json";
/// The longest `return_timeout` ONTAP accepts.
const MAX_RETURN_TIMEOUT_SECONDS: u64 = 120;
/// A runaway `next` chain (a server bug) must not loop forever.
const MAX_PAGES: usize = 10_000;

/// A client for one ONTAP cluster. Cheap to clone: clones share the connection pool and the
/// concurrency limit.
#[derive(Clone)]
pub struct OntapClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    endpoint: Url,
    credentials: Credentials,
    limiter: Semaphore,
    request_timeout: Duration,
    job_poll: JobPollConfig,
    retry: RetryConfig,
    max_response_bytes: usize,
    page_size: u32,
    metrics: Option<OntapMetrics>,
    traceparent: TraceparentFn,
}

impl fmt::Debug for OntapClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OntapClient")
            .field("endpoint", &self.inner.endpoint.as_str())
            .field("username", &self.inner.credentials.username)
            .finish_non_exhaustive()
    }
}

/// Whether a request may be sent again after a transient failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetryMode {
    /// GET, and PATCH/DELETE whose repetition has the same effect.
    Idempotent,
    /// Safe to repeat only when it certainly was not applied (e.g. a password change, which
    /// ONTAP rejects as "reused" the second time).
    UnlessAmbiguous,
    /// POST: never repeated by the client; the caller looks the object up instead.
    Never,
}

impl RetryMode {
    fn allows(self, e: &OntapError) -> bool {
        match self {
            Self::Idempotent => e.is_transient(),
            Self::UnlessAmbiguous => e.is_transient() && !e.is_ambiguous(),
            Self::Never => false,
        }
    }
}

/// A JSON request body. Kept apart from anything logged; the secret it may contain is known so
/// it can be scrubbed from error messages.
pub(crate) struct Body {
    bytes: Vec<u8>,
    secret: Option<SecretString>,
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Body({} bytes)", self.bytes.len())
    }
}

impl Body {
    pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<Self> {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| OntapError::InvalidInput(format!("cannot encode request: {e}")))?;
        Ok(Self {
            bytes,
            secret: None,
        })
    }

    pub(crate) fn with_secret(mut self, secret: &SecretString) -> Self {
        self.secret = Some(secret.clone());
        self
    }
}

pub(crate) struct Request<'a> {
    pub method: Method,
    pub endpoint: &'static str,
    pub url: Url,
    pub body: Option<Body>,
    /// Other credentials than the client's (credential verification).
    pub auth: Option<&'a Credentials>,
    pub retry: RetryMode,
}

impl<'a> Request<'a> {
    pub(crate) fn get(endpoint: &'static str, url: Url) -> Self {
        Self {
            method: Method::GET,
            endpoint,
            url,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Response {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl OntapClient {
    /// Builds a client. Fails on an unusable configuration (endpoint that is not http(s), a CA
    /// bundle without certificates); does not contact the cluster.
    pub fn new(config: OntapConfig) -> Result<Self> {
        match config.endpoint.scheme() {
            "https" => {}
            "http" => tracing::warn!(
                endpoint = %config.endpoint,
                "ONTAP endpoint uses plain HTTP: credentials are sent unencrypted"
            ),
            other => {
                return Err(OntapError::Config(format!(
                    "endpoint scheme {other:?} is not http or https"
                )));
            }
        }
        if config.endpoint.host_str().is_none_or(str::is_empty) {
            return Err(OntapError::Config("endpoint has no host".into()));
        }
        if config.max_concurrent_requests == 0 {
            return Err(OntapError::Config(
                "max_concurrent_requests must be at least 1".into(),
            ));
        }
        if matches!(config.tls, TlsVerification::InsecureSkipVerify) {
            tracing::warn!(
                endpoint = %config.endpoint,
                "TLS verification of the ONTAP endpoint is disabled: credentials can be intercepted"
            );
        }
        let tls = super::tls::client_config(&config.tls)?;
        let builder = match &config.proxy {
            None => reqwest::Client::builder().no_proxy(),
            Some(proxy) => reqwest::Client::builder().proxy(
                reqwest::Proxy::all(proxy.clone())
                    .map_err(|e| OntapError::Config(format!("proxy {proxy}: {e}")))?,
            ),
        };
        let http = builder
            .tls_backend_preconfigured(tls)
            .connect_timeout(config.connect_timeout)
            // Credentials must not follow a redirect anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ontap-operator/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(config.max_concurrent_requests)
            .build()
            .map_err(|e| OntapError::Config(format!("HTTP client: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                endpoint: config.endpoint,
                credentials: config.credentials,
                limiter: Semaphore::new(config.max_concurrent_requests),
                request_timeout: config.request_timeout,
                job_poll: config.job_poll,
                retry: config.retry,
                max_response_bytes: config.max_response_bytes,
                page_size: config.page_size.max(1),
                metrics: config.metrics,
                traceparent: config.traceparent,
            }),
        })
    }

    pub(crate) fn metrics(&self) -> Option<&OntapMetrics> {
        self.inner.metrics.as_ref()
    }

    pub(crate) fn job_poll(&self) -> &JobPollConfig {
        &self.inner.job_poll
    }

    pub fn endpoint(&self) -> &Url {
        &self.inner.endpoint
    }

    /// The URL of an API path given as segments (each percent-encoded on its own, so a name
    /// with `/` stays one segment) and query pairs.
    pub(crate) fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Url> {
        let mut url = self.inner.endpoint.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.path_segments_mut()
            .map_err(|()| OntapError::Config("endpoint cannot have a path".into()))?
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// [`url`](Self::url) for a change that may start a job, asking ONTAP to answer once the
    /// job is done when that takes less than half the request timeout (`return_timeout`; 200
    /// instead of 202): a job polled from outside is seen done only at the next poll, which for
    /// jobs of a few seconds adds a third to their time and a request or two to their cost.
    pub(crate) fn job_url(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Url> {
        let mut url = self.url(segments, query)?;
        let seconds = (self.inner.request_timeout / 2)
            .as_secs()
            .min(MAX_RETURN_TIMEOUT_SECONDS);
        if seconds > 0 {
            url.query_pairs_mut()
                .append_pair("return_timeout", &seconds.to_string());
        }
        Ok(url)
    }

    /// Sends a request, retrying as its [`RetryMode`] allows, and returns a 2xx answer.
    pub(crate) async fn execute(&self, req: &Request<'_>) -> Result<Response> {
        let cfg = &self.inner.retry;
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(cfg.min_delay)
            .with_max_delay(cfg.max_delay)
            .with_max_times(cfg.max_attempts.saturating_sub(1));
        if cfg.jitter {
            backoff = backoff.with_jitter();
        }
        let attempt = AtomicUsize::new(0);
        (|| self.attempt(req, attempt.fetch_add(1, Ordering::Relaxed) + 1))
            .retry(backoff)
            .when(|e| req.retry.allows(e))
            .notify(|e, delay| {
                tracing::debug!(
                    method = %req.method,
                    path = req.endpoint,
                    error = %e,
                    ?delay,
                    "retrying ONTAP request"
                );
                if let Some(m) = &self.inner.metrics {
                    m.observe_retry(req.method.as_str(), req.endpoint);
                }
            })
            .await
    }

    async fn attempt(&self, req: &Request<'_>, attempt: usize) -> Result<Response> {
        let span = tracing::debug_span!(
            "ontap.request",
            method = %req.method,
            path = req.endpoint,
            attempt,
            status = field::Empty,
            ontap_code = field::Empty,
            error = field::Empty,
        );
        let started = Instant::now();
        let result = async {
            // Waiting for a slot does not count against the request timeout.
            let _permit = self
                .inner
                .limiter
                .acquire()
                .await
                .map_err(|_| OntapError::Config("client is shut down".into()))?;
            let timeout = self.inner.request_timeout;
            match tokio::time::timeout(timeout, self.send(req, &span)).await {
                Ok(result) => result,
                Err(_) => Err(OntapError::Timeout {
                    method: req.method.clone(),
                    endpoint: req.endpoint,
                    timeout,
                }),
            }
        }
        .instrument(span.clone())
        .await;
        self.observe(req, &span, &result, started.elapsed());
        result
    }

    fn observe(
        &self,
        req: &Request<'_>,
        span: &tracing::Span,
        result: &Result<Response>,
        elapsed: Duration,
    ) {
        let (status, code) = match result {
            Ok(r) => (r.status.as_u16().to_string(), String::new()),
            Err(e) => (
                e.status()
                    .map_or_else(|| e.kind_label().to_owned(), |s| s.as_u16().to_string()),
                e.ontap_code().unwrap_or_default().to_owned(),
            ),
        };
        match status.parse::<u16>() {
            Ok(code) => span.record("status", code),
            Err(_) => span.record("status", status.as_str()),
        };
        if !code.is_empty() {
            span.record("ontap_code", code.as_str());
        }
        match result {
            Ok(_) => tracing::debug!(parent: span, ?elapsed, "ONTAP request done"),
            Err(e) => {
                span.record("error", field::display(e));
                tracing::debug!(parent: span, ?elapsed, error = %e, "ONTAP request failed");
            }
        }
        if let Some(m) = &self.inner.metrics {
            m.observe_request(
                req.method.as_str(),
                req.endpoint,
                status,
                code,
                elapsed.as_secs_f64(),
            );
        }
    }

    async fn send(&self, req: &Request<'_>, span: &tracing::Span) -> Result<Response> {
        let creds = req.auth.unwrap_or(&self.inner.credentials);
        let mut builder = self
            .inner
            .http
            .request(req.method.clone(), req.url.clone())
            .basic_auth(&creds.username, Some(creds.password.expose_secret()))
            .header(ACCEPT, HAL_JSON);
        let traceparent = (self.inner.traceparent)(span);
        if let Ok(v) = HeaderValue::from_str(&traceparent) {
            builder = builder.header("traceparent", v);
        }
        if let Some(body) = &req.body {
            builder = builder
                .header(CONTENT_TYPE, "application/json")
                .body(body.bytes.clone());
        }
        let response = builder
            .send()
            .await
            .map_err(|e| transport_error(&req.method, req.endpoint, e))?;
        let status = response.status();
        let body = read_limited(
            response,
            self.inner.max_response_bytes,
            &req.method,
            req.endpoint,
        )
        .await?;
        if status.is_success() {
            return Ok(Response { status, body });
        }
        let mut error = ApiError::parse(&body);
        if let (Some(e), Some(secret)) = (
            error.as_mut(),
            req.body.as_ref().and_then(|b| b.secret.as_ref()),
        ) {
            e.redact(secret.expose_secret());
        }
        if let (Some(e), Some(a)) = (error.as_mut(), req.auth) {
            e.redact(a.password.expose_secret());
        }
        if let Some(e) = error.as_mut() {
            e.redact(self.inner.credentials.password.expose_secret());
        }
        Err(OntapError::Api {
            method: req.method.clone(),
            endpoint: req.endpoint,
            status,
            error: error.map(Box::new),
        })
    }

    // -----------------------------------------------------------------------------------------
    // Typed building blocks for the operations.

    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        url: Url,
    ) -> Result<T> {
        let resp = self.execute(&Request::get(endpoint, url)).await?;
        model::decode(&Method::GET, endpoint, resp.status, &resp.body)
    }

    /// Every record of a collection, following `_links.next`.
    pub(crate) async fn get_all<T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        url: Url,
        auth: Option<&Credentials>,
    ) -> Result<Vec<T>> {
        let mut pages = self.pages(endpoint, url, self.inner.page_size);
        pages.auth = auth.cloned();
        let mut records = Vec::new();
        while let Some(page) = pages.next_page().await? {
            records.extend(page);
        }
        Ok(records)
    }

    /// A collection read one page of at most `max_records` at a time, for a caller that paces
    /// its pages instead of sending them back to back.
    fn pages<T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        mut url: Url,
        max_records: u32,
    ) -> Pages<T> {
        url.query_pairs_mut()
            .append_pair("max_records", &max_records.max(1).to_string());
        Pages {
            client: self.clone(),
            endpoint,
            next: Some(url),
            auth: None,
            seen: std::collections::HashSet::new(),
            _records: std::marker::PhantomData,
        }
    }

    /// Every record of the collection at `segments` with `fields`, `max_records` per page: the
    /// one way an operation offers a whole collection to be read page by page.
    pub(crate) fn listing<T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        segments: &[&str],
        fields: &str,
        max_records: u32,
    ) -> Result<Pages<T>> {
        self.listing_where(endpoint, segments, &[], fields, max_records)
    }

    /// [`listing`](Self::listing) of only the records `filters` (exact `field=value` pairs)
    /// select, for a collection most of whose records no caller wants: the filter still spans
    /// every SVM of the cluster.
    pub(crate) fn listing_where<T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        segments: &[&str],
        filters: &[(&str, &str)],
        fields: &str,
        max_records: u32,
    ) -> Result<Pages<T>> {
        let mut query = filters.to_vec();
        query.push(("fields", fields));
        let url = self.url(segments, &query)?;
        Ok(self.pages(endpoint, url, max_records))
    }

    /// Sends a state-changing request and, when ONTAP answers 202, waits for the job to
    /// succeed.
    pub(crate) async fn mutate(&self, req: &Request<'_>) -> Result<()> {
        let resp = self.execute(req).await?;
        if resp.status != StatusCode::ACCEPTED {
            // ONTAP answers a synchronous change with a JSON object (often `{}`) or nothing. A
            // 2xx with anything else came from something in between (a proxy's page) and says
            // nothing about whether ONTAP did it: taking it for success would, on a DELETE,
            // drop the finalizer of an SVM that still exists.
            if !resp.body.iter().all(u8::is_ascii_whitespace) {
                let _: serde_json::Map<String, serde_json::Value> =
                    model::decode(&req.method, req.endpoint, resp.status, &resp.body)?;
            }
            return Ok(());
        }
        let link: JobLink = model::decode(&req.method, req.endpoint, resp.status, &resp.body)?;
        self.wait_for_job(&link.job.uuid).await.map(|_| ())
    }

    /// [`mutate`](Self::mutate) for a POST sent with `return_records=true`: the record ONTAP
    /// created, as its answer carries it (keys and name), so that no lookup has to follow. `None`
    /// when the answer carries no record (a server that ignores the parameter).
    pub(crate) async fn mutate_returning<T: DeserializeOwned>(
        &self,
        req: &Request<'_>,
    ) -> Result<Option<T>> {
        let resp = self.execute(req).await?;
        let created = if !resp.body.is_empty() {
            model::decode::<model::Created<T>>(&req.method, req.endpoint, resp.status, &resp.body)?
                .records
                .into_iter()
                .next()
        } else {
            None
        };
        if resp.status == StatusCode::ACCEPTED {
            let link: JobLink = model::decode(&req.method, req.endpoint, resp.status, &resp.body)?;
            self.wait_for_job(&link.job.uuid).await?;
        }
        Ok(created)
    }
}

/// A collection being read page by page, following `_links.next`
/// ([`OntapClient::svm_pages`], [`OntapClient::interface_pages`]).
pub struct Pages<T> {
    client: OntapClient,
    endpoint: &'static str,
    next: Option<Url>,
    auth: Option<Credentials>,
    seen: std::collections::HashSet<String>,
    _records: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Pages<T> {
    /// Whether another page is to be read.
    pub fn has_next(&self) -> bool {
        self.next.is_some()
    }

    /// The next page's records; `None` once the collection is read. A next link that repeats,
    /// or more than [`MAX_PAGES`] pages, is an error: a server bug must not loop for ever.
    pub async fn next_page(&mut self) -> Result<Option<Vec<T>>> {
        let Some(url) = self.next.take() else {
            return Ok(None);
        };
        let endpoint = self.endpoint;
        let decode_error = |status: StatusCode, reason: String| OntapError::Decode {
            method: Method::GET,
            endpoint,
            status,
            reason,
        };
        if !self.seen.insert(url.to_string()) {
            return Err(decode_error(
                StatusCode::OK,
                "pagination loops: a next link repeats".into(),
            ));
        }
        if self.seen.len() > MAX_PAGES {
            return Err(decode_error(
                StatusCode::OK,
                format!("more than {MAX_PAGES} pages"),
            ));
        }
        let mut req = Request::get(endpoint, url);
        req.auth = self.auth.as_ref();
        let resp = self.client.execute(&req).await?;
        let page: Collection<T> = model::decode(&Method::GET, endpoint, resp.status, &resp.body)?;
        if let Some(href) = page.next_href() {
            self.next = Some(
                model::resolve_next(&self.client.inner.endpoint, href)
                    .map_err(|reason| decode_error(resp.status, reason))?,
            );
        }
        Ok(Some(page.records))
    }
}

fn transport_error(method: &Method, endpoint: &'static str, e: reqwest::Error) -> OntapError {
    // A refused or failed connect never carried the request; anything else may have.
    let failure = if e.is_connect() {
        TransportFailure::Connect
    } else if e.is_timeout() {
        return OntapError::Timeout {
            method: method.clone(),
            endpoint,
            timeout: Duration::ZERO,
        };
    } else if e.is_body() || e.is_decode() {
        TransportFailure::Body
    } else {
        TransportFailure::ConnectionLost
    };
    OntapError::Transport {
        method: method.clone(),
        endpoint,
        failure,
        source: e.without_url(),
    }
}

/// Reads the body up to `limit` bytes; a longer one is an error, read no further.
async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
    method: &Method,
    endpoint: &'static str,
) -> Result<Vec<u8>> {
    let too_large = || OntapError::ResponseTooLarge {
        method: method.clone(),
        endpoint,
        limit,
    };
    let declared = response.content_length().unwrap_or(0);
    if declared > limit as u64 {
        return Err(too_large());
    }
    // Capacity from the declared length only up to a small bound: the header can lie.
    let mut body = Vec::with_capacity((declared as usize).min(64 * 1024));
    loop {
        let chunk = response.chunk().await.map_err(|e| OntapError::Transport {
            method: method.clone(),
            endpoint,
            failure: TransportFailure::Body,
            source: e.without_url(),
        })?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
}
