//! One load run and what it measured.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::Client;

use crate::apiserver::{WRITE_VERBS, apiserver_requests, difference};
use crate::sample::{create_kymas, ensure_namespace, sample_kyma, sample_name};
use crate::watch::SuccessWatch;
use test_support::process::{CpuMeter, proc_status_kb};

/// The `p`-th percentile (0–100) of `sorted`, nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// What a load run measured.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    pub kymas: usize,
    pub created_in: Duration,
    pub all_success_after: Duration,
    /// From each Kyma's create to its first `success`, sorted.
    pub per_kyma: Vec<Duration>,
    pub single_kyma: Duration,
    pub peak_rss_kib: Option<u64>,
    /// The operator's CPU time from the first create until all succeeded.
    pub operator_cpu: Option<Duration>,
    /// API server requests during the run, by verb.
    pub requests_by_verb: BTreeMap<String, f64>,
    /// API server requests during the run, by verb, resource, subresource and response code
    /// (429s are requests the API server's in-flight limit refused and the client retried).
    pub requests_by_resource: BTreeMap<String, f64>,
}

impl LoadReport {
    /// Writes during the run.
    pub fn writes(&self) -> f64 {
        self.requests_by_verb
            .iter()
            .filter(|(v, _)| WRITE_VERBS.contains(&v.as_str()))
            .map(|(_, n)| n)
            .sum()
    }

    /// The report as lines of text.
    pub fn lines(&self) -> Vec<String> {
        let ratio = self.all_success_after.as_secs_f64() / self.single_kyma.as_secs_f64().max(1e-9);
        let mut lines = vec![
            format!("Kymas                    {}", self.kymas),
            format!(
                "created in               {:.1} s",
                self.created_in.as_secs_f64()
            ),
            format!(
                "all success after        {:.1} s = {ratio:.2} x the single-Kyma time ({:.1} s)",
                self.all_success_after.as_secs_f64(),
                self.single_kyma.as_secs_f64()
            ),
            format!(
                "per Kyma                 p50 {:.1} s, p99 {:.1} s, max {:.1} s",
                percentile(&self.per_kyma, 50.0).as_secs_f64(),
                percentile(&self.per_kyma, 99.0).as_secs_f64(),
                percentile(&self.per_kyma, 100.0).as_secs_f64()
            ),
        ];
        if let Some(cpu) = self.operator_cpu {
            lines.push(format!(
                "operator CPU             {:.1} s = {:.2} cores while the Kymas ran",
                cpu.as_secs_f64(),
                cpu.as_secs_f64() / self.all_success_after.as_secs_f64().max(1e-9)
            ));
        }
        if let Some(kib) = self.peak_rss_kib {
            lines.push(format!(
                "operator peak RSS        {:.1} MiB",
                kib as f64 / 1024.0
            ));
        }
        lines.push(format!(
            "API server writes        {:.0} = {:.1} per Kyma",
            self.writes(),
            self.writes() / self.kymas.max(1) as f64
        ));
        lines.push("API server requests by verb".to_owned());
        for (verb, n) in &self.requests_by_verb {
            lines.push(format!("  {n:>9.0} {verb}"));
        }
        lines.push("API server requests by verb, resource, subresource, code".to_owned());
        for (key, n) in &self.requests_by_resource {
            lines.push(format!("  {n:>9.0} {key}"));
        }
        lines
    }
}

/// Creates `count` sample Kymas in `namespace` and, with `wait`, waits for all to succeed.
pub async fn run_load(
    client: &Client,
    namespace: &str,
    count: usize,
    rate: f64,
    wait: Option<Duration>,
    operator_pid: Option<u32>,
    single_kyma: Duration,
) -> anyhow::Result<LoadReport> {
    ensure_namespace(client, namespace).await?;
    let names: Vec<String> = (1..=count).map(sample_name).collect();
    let kymas = names.iter().map(|n| sample_kyma(n, namespace)).collect();
    let by_verb = |client: Client| async move { apiserver_requests(&client, &["verb"]).await };
    let by_resource = |client: Client| async move {
        apiserver_requests(&client, &["verb", "resource", "subresource", "code"]).await
    };
    let verbs_before = by_verb(client.clone()).await.unwrap_or_default();
    let resources_before = by_resource(client.clone()).await.unwrap_or_default();
    let watch = SuccessWatch::start(client, namespace);
    let cpu = operator_pid.map(|pid| CpuMeter::start(&[("operator", pid)]));
    let start = Instant::now();
    let sent = create_kymas(client, kymas, rate).await?;
    let created_in = start.elapsed();
    let mut report = LoadReport {
        kymas: count,
        created_in,
        single_kyma,
        ..LoadReport::default()
    };
    if let Some(timeout) = wait {
        let seen = watch
            .wait_all(&names, timeout, |done| {
                println!(
                    "kyma-load: {:>5.0} s: {done}/{count} success",
                    start.elapsed().as_secs_f64()
                );
            })
            .await
            .map_err(|done| {
                anyhow::anyhow!("only {done}/{count} Kymas reached success within {timeout:?}")
            })?;
        report.operator_cpu = cpu.and_then(|meter| meter.stop().of("operator"));
        report.all_success_after = seen
            .values()
            .map(|at| at.duration_since(start))
            .max()
            .unwrap_or_default();
        let mut per_kyma: Vec<Duration> = seen
            .iter()
            .filter_map(|(name, at)| Some(at.saturating_duration_since(*sent.get(name)?)))
            .collect();
        per_kyma.sort();
        report.per_kyma = per_kyma;
    }
    report.peak_rss_kib = operator_pid.and_then(|pid| proc_status_kb(pid, "VmHWM"));
    report.requests_by_verb = difference(
        &verbs_before,
        &by_verb(client.clone()).await.unwrap_or_default(),
    );
    report.requests_by_resource = difference(
        &resources_before,
        &by_resource(client.clone()).await.unwrap_or_default(),
    );
    Ok(report)
}
