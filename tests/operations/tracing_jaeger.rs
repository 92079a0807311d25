//! Traces end to end: the real operator exports OTLP to a real Jaeger, and its JSON log lines
//! name the trace they belong to.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::support::jaeger::{Jaeger, parent_id, same_trace_id, tag};
use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;
use serde_json::Value;

const READY_WITHIN: Duration = Duration::from_secs(60);
/// The operator's batch exporter waits up to `OTEL_BSP_SCHEDULE_DELAY` (set to 500 ms below),
/// Jaeger's batch processor 200 ms more.
const EXPORTED_WITHIN: Duration = Duration::from_secs(30);
const STEPS: [&str; 8] = [
    "ClusterReady",
    "SVMReady",
    "TenantNetworkReady",
    "LIFsReady",
    "RoutesReady",
    "AccountReady",
    "SecretReady",
    "LimitsReady",
];

/// What the test found in one Jaeger trace.
struct ReconcileTrace {
    steps: Vec<String>,
    ontap_requests: usize,
}

/// The trace of a reconcile of `object` that ran every step, with at least one ONTAP request
/// span below a step span, if Jaeger has one.
fn find_full_reconcile(traces: &[Value], object: &str) -> Option<ReconcileTrace> {
    traces.iter().find_map(|trace| {
        let spans = trace["spans"].as_array()?;
        let by_id: HashMap<&str, &Value> = spans
            .iter()
            .filter_map(|s| Some((s["spanID"].as_str()?, s)))
            .collect();
        let reconcile = spans.iter().find(|s| {
            s["operationName"] == "reconcile"
                && tag(s, "controller").as_deref() == Some("storagevirtualmachine")
                && tag(s, "object").as_deref() == Some(object)
        })?;
        let reconcile_id = reconcile["spanID"].as_str()?;
        let step_spans: Vec<&Value> = spans
            .iter()
            .filter(|s| {
                s["operationName"] == "step" && parent_id(s).as_deref() == Some(reconcile_id)
            })
            .collect();
        let steps: Vec<String> = step_spans.iter().filter_map(|s| tag(s, "step")).collect();
        if !STEPS.iter().all(|want| steps.iter().any(|s| s == want)) {
            return None;
        }
        let step_ids: HashSet<&str> = step_spans
            .iter()
            .filter_map(|s| s["spanID"].as_str())
            .collect();
        let under_a_step = |span: &Value| {
            let mut parent = parent_id(span);
            // Bounded: a malformed trace must not loop forever.
            for _ in 0..16 {
                let Some(id) = parent else { return false };
                if step_ids.contains(id.as_str()) {
                    return true;
                }
                parent = by_id.get(id.as_str()).and_then(|s| parent_id(s));
            }
            false
        };
        let ontap_requests = spans
            .iter()
            .filter(|s| s["operationName"] == "ontap.request" && under_a_step(s))
            .count();
        (ontap_requests > 0).then_some(ReconcileTrace {
            steps,
            ontap_requests,
        })
    })
}

/// The `trace_id` of the `reconcile` span of `object` in every JSON log line logged inside one:
/// `None` for a line whose reconcile span lacks it.
fn reconcile_log_trace_ids(logs: &str, object: &str) -> Vec<Option<String>> {
    logs.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|line| {
            let reconcile = line["spans"]
                .as_array()?
                .iter()
                .find(|s| s["name"] == "reconcile" && s["object"].as_str() == Some(object))?;
            Some(reconcile["trace_id"].as_str().map(str::to_string))
        })
        .collect()
}

#[tokio::test]
async fn a_reconcile_is_one_trace_with_step_and_ontap_spans_and_its_log_lines_name_it() {
    let jaeger = Jaeger::start();
    let world = SvmWorld::with_env(
        fast_mock(),
        &["--log-format=json"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &jaeger.otlp_endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "500"),
        ],
    )
    .await;
    world.create_svm("traced", 0).await;
    world.wait_ready("traced", READY_WITHIN).await;

    let object = format!(
        "StorageVirtualMachine.v1alpha1.ontap.storage.dev/traced.{}",
        world.env.namespace
    );
    let logs = world.operator.logs();
    let logged = reconcile_log_trace_ids(&logs, &object);
    assert!(
        !logged.is_empty(),
        "no JSON log line inside a reconcile of {object}:\n{}",
        crate::support::tail(&logs, 40)
    );
    assert!(
        logged.iter().all(Option::is_some),
        "a log line inside a reconcile lacks trace_id:\n{}",
        crate::support::tail(&logs, 40)
    );
    let logged: HashSet<String> = logged.into_iter().flatten().collect();

    // The reconcile that created everything logged its changes; later ones find nothing to do
    // and log only at debug. So the trace sought is one the log lines name.
    let found = jaeger
        .wait_for(
            "ontap-operator",
            Some("reconcile"),
            EXPORTED_WITHIN,
            |traces| {
                let named: Vec<Value> = traces
                    .iter()
                    .filter(|t| {
                        t["traceID"]
                            .as_str()
                            .is_some_and(|id| logged.iter().any(|l| same_trace_id(l, id)))
                    })
                    .cloned()
                    .collect();
                find_full_reconcile(&named, &object)
            },
        )
        .await;
    assert!(found.ontap_requests > 0);
    for step in STEPS {
        assert_eq!(
            found.steps.iter().filter(|s| *s == step).count(),
            1,
            "each step once per reconcile: {:?}",
            found.steps
        );
    }

    // The mock's request log records method, path, status and user but not headers, so whether
    // the `traceparent` sent to ONTAP names this trace is not checked here (the client's unit
    // tests check that the header follows the request span's context).
}

/// Spans still buffered when SIGTERM arrives reach Jaeger: the batch delay is far longer than
/// the test, so only the flush at shutdown can deliver them. One tokio worker, as in a pod
/// limited to one CPU, where a flush that blocks its worker waits on itself.
#[tokio::test]
async fn spans_buffered_at_sigterm_are_exported_before_exit() {
    let jaeger = Jaeger::start();
    let mut world = SvmWorld::with_env(
        fast_mock(),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &jaeger.otlp_endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
            ("TOKIO_WORKER_THREADS", "1"),
        ],
    )
    .await;
    world.create_svm("flushed", 0).await;
    world.wait_ready("flushed", READY_WITHIN).await;
    let object = format!(
        "StorageVirtualMachine.v1alpha1.ontap.storage.dev/flushed.{}",
        world.env.namespace
    );
    assert!(
        find_full_reconcile(
            &jaeger
                .traces("ontap-operator", Some("reconcile"), 1000)
                .await,
            &object
        )
        .is_none(),
        "exported before shutdown: OTEL_BSP_SCHEDULE_DELAY was not honoured, the test proves nothing"
    );

    let status = world.operator.terminate(Duration::from_secs(20)).await;
    assert!(
        status.success(),
        "{status}\n{}",
        crate::support::tail(&world.operator.logs(), 20)
    );
    jaeger
        .wait_for(
            "ontap-operator",
            Some("reconcile"),
            Duration::from_secs(5),
            |traces| find_full_reconcile(traces, &object),
        )
        .await;
}
