//! A bounded log of the `/api` requests the mock saw, for tests that assert call counts.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

pub const CAPACITY: usize = 10_000;

#[derive(Debug, Clone, Serialize)]
pub struct FaultHit {
    pub id: String,
    pub action: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    /// Increases by one per request, also across evictions, so tests can read "what came after".
    pub seq: u64,
    pub at: String,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// `None` when no answer was sent (reset, hang).
    pub status: Option<u16>,
    /// The user name of the request's Basic credentials, valid or not (a 401 status tells).
    /// Never the password, and no other header that could carry a secret.
    pub user: Option<String>,
    /// The W3C trace context the client sent, so tests can follow a trace end to end.
    pub traceparent: Option<String>,
    pub user_agent: Option<String>,
    pub fault: Option<FaultHit>,
}

#[derive(Default)]
pub struct RequestLog {
    entries: VecDeque<RequestRecord>,
    next_seq: u64,
    /// Requests per method and path since the last clear, beyond the log's capacity.
    counts: BTreeMap<(String, String), u64>,
}

impl RequestLog {
    pub fn push(&mut self, mut record: RequestRecord) {
        record.seq = self.next_seq;
        self.next_seq += 1;
        *self
            .counts
            .entry((record.method.clone(), record.path.clone()))
            .or_default() += 1;
        if self.entries.len() == CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(record);
    }

    pub fn iter(&self) -> impl Iterator<Item = &RequestRecord> {
        self.entries.iter()
    }

    /// The `seq` the next request will get: `since=` this value lists what comes after now.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn count(&self, method: &str, path: &str) -> u64 {
        self.counts
            .get(&(method.to_owned(), path.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    pub fn counts(&self) -> impl Iterator<Item = (&str, &str, u64)> {
        self.counts
            .iter()
            .map(|((method, path), n)| (method.as_str(), path.as_str(), *n))
    }

    /// Empties the log and the counts; `seq` keeps increasing.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.counts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RequestRecord {
        RequestRecord {
            seq: 0,
            at: String::new(),
            method: "GET".into(),
            path: "/api/cluster".into(),
            query: None,
            status: Some(200),
            user: None,
            traceparent: None,
            user_agent: None,
            fault: None,
        }
    }

    #[test]
    fn keeps_only_the_newest_entries() {
        let mut log = RequestLog::default();
        for _ in 0..CAPACITY + 5 {
            log.push(record());
        }
        assert_eq!(log.iter().count(), CAPACITY);
        assert_eq!(log.iter().next().map(|r| r.seq), Some(5));
        assert_eq!(log.count("GET", "/api/cluster"), CAPACITY as u64 + 5);
        assert_eq!(log.next_seq(), CAPACITY as u64 + 5);
    }
}
