//! A bounded log of the `/api` requests the mock saw, for tests that assert call counts.

use std::collections::VecDeque;

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
    pub user: Option<String>,
    pub fault: Option<FaultHit>,
}

#[derive(Default)]
pub struct RequestLog {
    entries: VecDeque<RequestRecord>,
    next_seq: u64,
}

impl RequestLog {
    pub fn push(&mut self, mut record: RequestRecord) {
        record.seq = self.next_seq;
        self.next_seq += 1;
        if self.entries.len() == CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(record);
    }

    pub fn iter(&self) -> impl Iterator<Item = &RequestRecord> {
        self.entries.iter()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
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
    }
}
