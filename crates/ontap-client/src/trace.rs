//! W3C trace context (`traceparent`) for ONTAP requests.
//!
//! ONTAP ignores the header today, but proxies in front of it and our own request logs (and
//! mock-ontap's) can correlate a request with the reconcile that sent it.

use opentelemetry::trace::TraceContextExt;
use rand::Rng;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Produces the `traceparent` value for a request from its `ontap.request` span. Pluggable so a
/// deployment without OpenTelemetry (or a test) can substitute its own.
pub type TraceparentFn = fn(&tracing::Span) -> String;

/// The default: the span's OpenTelemetry context when a `tracing-opentelemetry` layer is
/// installed (the header then names the request span as parent and carries the sampling flag);
/// otherwise fresh random ids, unsampled, so the header is still valid and unique.
pub fn otel_traceparent(span: &tracing::Span) -> String {
    let cx = span.context();
    let otel_span = cx.span();
    let sc = otel_span.span_context();
    if sc.is_valid() {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    } else {
        random_traceparent()
    }
}

/// A valid `traceparent` with random, non-zero ids and the sampled flag off.
pub fn random_traceparent() -> String {
    let mut rng = rand::rng();
    let trace_id: u128 = rng.random_range(1..=u128::MAX);
    let span_id: u64 = rng.random_range(1..=u64::MAX);
    format!("00-{trace_id:032x}-{span_id:016x}-00")
}

/// Checks the W3C format: version `00`, 32 and 16 lowercase hex digits, neither all zero, and
/// two hex digits of flags.
pub fn is_valid_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    parts.len() == 4
        && parts[0] == "00"
        && hex(parts[1], 32)
        && parts[1].bytes().any(|b| b != b'0')
        && hex(parts[2], 16)
        && parts[2].bytes().any(|b| b != b'0')
        && hex(parts[3], 2)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn random_traceparents_are_valid_and_distinct() {
        let a = random_traceparent();
        let b = random_traceparent();
        assert!(is_valid_traceparent(&a), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn without_otel_layer_falls_back_to_random() {
        let span = tracing::info_span!("x");
        assert!(is_valid_traceparent(&otel_traceparent(&span)));
    }

    #[test]
    fn with_otel_layer_names_the_span_and_its_trace() {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::layer::SubscriberExt;

        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let outer = tracing::info_span!("reconcile");
            let _entered = outer.enter();
            let span = tracing::info_span!("ontap.request");
            let header = otel_traceparent(&span);
            assert!(is_valid_traceparent(&header), "{header}");
            let cx = span.context();
            let sc = cx.span().span_context().clone();
            assert_eq!(header, format!("00-{}-{}-01", sc.trace_id(), sc.span_id()));
            // Same trace as the enclosing reconcile span.
            let outer_trace = outer.context().span().span_context().trace_id();
            assert_eq!(sc.trace_id(), outer_trace);
        });
    }

    #[test]
    fn validator_rejects_bad_values() {
        assert!(is_valid_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(!is_valid_traceparent(bad), "{bad}");
        }
    }
}
