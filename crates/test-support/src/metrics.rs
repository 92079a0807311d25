//! The one Prometheus text parser of the tests: samples with their labels, and sums over them.

use std::collections::BTreeMap;

/// One sample line of a Prometheus text exposition.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    fn has(&self, labels: &[(&str, &str)]) -> bool {
        labels.iter().all(|(k, v)| self.label(k) == Some(*v))
    }
}

/// Every sample of `text`; comments and lines that do not parse are skipped.
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(parse_line)
        .collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let (series, value) = line.trim().rsplit_once(' ')?;
    let value = value.parse::<f64>().ok()?;
    let (name, labels) = match series.split_once('{') {
        Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}')?)?),
        None => (series, BTreeMap::new()),
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// `a="x",b="y"`; values may contain escaped quotes and commas.
fn parse_labels(mut text: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    while !text.is_empty() {
        let (key, rest) = text.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => value.push(chars.next()?.1),
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.trim_start_matches(',').to_owned(), value);
        text = rest[end + 1..].trim_start_matches(',');
    }
    Some(labels)
}

/// The sum of the samples of metric `name` whose labels include every pair of `labels`.
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(text)
        .iter()
        .filter(|s| s.name == name && s.has(labels))
        .map(|s| s.value)
        .sum()
}

/// Sums of the samples of `name` by the values of the labels in `by` (`+`-separated, joined
/// with a space); all samples under "" when `by` is empty.
pub fn metric_sums(text: &str, name: &str, by: &str) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    for sample in samples(text).into_iter().filter(|s| s.name == name) {
        let key = if by.is_empty() {
            String::new()
        } else {
            by.split('+')
                .filter_map(|label| sample.label(label))
                .collect::<Vec<_>>()
                .join(" ")
        };
        *sums.entry(key).or_default() += sample.value;
    }
    sums
}

/// Kubernetes writes a process has sent, by its client metrics (`rest_client_requests_total`).
pub fn kube_writes(text: &str) -> f64 {
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|m| metric_sum(text, "rest_client_requests_total", &[("method", m)]))
        .sum()
}
