//! Logs and traces. Logs go through `tracing` as text or JSON; spans are also OpenTelemetry spans,
//! exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-specific variable) is
//! set, configured by the standard `OTEL_*` variables.

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use tracing::Level;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::cli::LogFormat;

pub const SERVICE_NAME: &str = "ontap-operator";

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("building the OTLP span exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    #[error("installing the tracing subscriber: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
}

/// The product crates whose debug spans are traced: the ONTAP client's request and job spans
/// are debug-level so that they stay out of the logs. The engine's debug spans are not.
const TRACED_CRATES: [&str; 3] = [env!("CARGO_CRATE_NAME"), "ontap_client", "kyma_inventory"];

/// What becomes OpenTelemetry data: every span of the product crates down to debug, and
/// otherwise spans and events from info up — span events are kept to what a default log would
/// show.
fn traced(meta: &tracing::Metadata<'_>) -> bool {
    let ours = TRACED_CRATES
        .iter()
        .any(|name| meta.target().starts_with(name));
    if meta.is_span() && ours {
        return *meta.level() <= Level::DEBUG;
    }
    *meta.level() <= Level::INFO
}

/// Keeps the tracer provider alive; [`Telemetry::shutdown`] flushes the spans still buffered.
pub struct Telemetry {
    provider: SdkTracerProvider,
    exporting: bool,
}

fn otlp_configured() -> bool {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Installs the global subscriber: env filter (`RUST_LOG`, default `info`), the log format, and
/// the OpenTelemetry layer. Spans always get OpenTelemetry trace ids, so log lines can carry them
/// even when nothing is exported.
pub fn init(format: LogFormat) -> Result<Telemetry, TelemetryError> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let resource = Resource::builder().with_service_name(SERVICE_NAME).build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    let exporting = otlp_configured();
    if exporting {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()?;
        builder = builder.with_span_processor(
            BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build(),
        );
    }
    let provider = builder.build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(SERVICE_NAME))
        .with_filter(filter_fn(traced));

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = match format {
        // Colours only for a terminal: in `kubectl logs`, a file or a log collector the escape
        // codes would be noise around every field.
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .boxed(),
    };
    // Per-layer filters: `RUST_LOG` sets how much is logged, not what is traced. As a global
    // filter it dropped the debug-level `ontap.request` and `ontap.job` spans, so traces lacked
    // their ONTAP calls and `traceparent` carried random ids unrelated to the reconcile.
    tracing_subscriber::registry()
        .with(otel)
        .with(fmt.with_filter(filter))
        .try_init()?;
    if exporting {
        tracing::info!("exporting traces over OTLP");
    }
    Ok(Telemetry {
        provider,
        exporting,
    })
}

impl Telemetry {
    /// Flushes and stops the exporter; spans ended before this call are sent.
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown()
            && self.exporting
        {
            tracing::warn!(%error, "flushing traces at shutdown failed");
        }
    }
}

/// Records the span's OpenTelemetry trace id in its `trace_id` field (declared as
/// `trace_id = tracing::field::Empty`), so every log line inside it names the trace.
/// Without an OpenTelemetry layer (unit tests) the field stays empty rather than all zeros.
pub fn record_trace_id(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let otel_span = cx.span();
    let sc = otel_span.span_context();
    if !sc.is_valid() {
        return None;
    }
    let id = sc.trace_id().to_string();
    span.record("trace_id", tracing::field::display(&id));
    Some(id)
}
