//! `process_resident_memory_bytes` and `process_cpu_seconds_total`, read from `/proc` at scrape
//! time like the Prometheus Go client does, so dashboards built for controller-runtime work.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

#[derive(Debug, Default)]
pub struct ProcessCollector;

/// Kernel clock ticks per second; 100 on every Linux platform Kubernetes runs on.
const CLOCK_TICKS: f64 = 100.0;
const PAGE_SIZE: i64 = 4096;

/// (resident bytes, CPU seconds) of this process, when /proc can be read.
pub fn sample() -> Option<(i64, f64)> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident_pages: i64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may contain spaces; fields are counted after its closing parenthesis.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((resident_pages * PAGE_SIZE, (utime + stime) / CLOCK_TICKS))
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some((resident, cpu)) = sample() else {
            return Ok(());
        };
        let gauge = ConstGauge::new(resident);
        gauge.encode(encoder.encode_descriptor(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            None,
            gauge.metric_type(),
        )?)?;
        let counter = ConstCounter::new(cpu);
        counter.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            counter.metric_type(),
        )?)?;
        Ok(())
    }
}

/// `ontap_operator_ready` and `ontap_operator_readiness_check{check}`: what `/readyz` would
/// answer, evaluated at scrape time, so that Prometheus sees a failing readiness without probing
/// the pod itself. Check names are fixed in code (`apiserver`, `leader-election`, one per cache
/// kind), so the label is bounded.
pub struct ReadinessCollector {
    pub health: reconcile_engine::health::Health,
}

impl std::fmt::Debug for ReadinessCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadinessCollector").finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct CheckLabels {
    check: String,
}

impl Collector for ReadinessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let report = self.health.readiness();
        let ready = ConstGauge::new(i64::from(report.healthy()));
        ready.encode(encoder.encode_descriptor(
            &format!("{}_ready", crate::deploy::METRIC_PREFIX),
            "1 while the readiness probe (/readyz) passes, else 0",
            None,
            ready.metric_type(),
        )?)?;
        let checks = prometheus_client::metrics::family::Family::<
            CheckLabels,
            prometheus_client::metrics::gauge::Gauge,
        >::default();
        for (check, result) in &report.checks {
            checks
                .get_or_create(&CheckLabels {
                    check: check.clone(),
                })
                .set(i64::from(result.is_ok()));
        }
        checks.encode(encoder.encode_descriptor(
            &format!("{}_readiness_check", crate::deploy::METRIC_PREFIX),
            "1 while the named readiness check passes, else 0",
            None,
            checks.metric_type(),
        )?)
    }
}
