//! Logs and traces. Logs go through `tracing` as text or JSON; spans are also OpenTelemetry spans,
//! exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-specific variable) is
//! set, configured by the standard `OTEL_*` variables.

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use tracing_opentelemetry::OpenTelemetrySpanExt;
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
    let otel = tracing_opentelemetry::layer().with_tracer(provider.tracer(SERVICE_NAME));

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(otel)
        .with(fmt)
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
pub fn record_trace_id(span: &tracing::Span) {
    let trace_id = span.context().span().span_context().trace_id();
    span.record("trace_id", tracing::field::display(trace_id));
}
