//! What a resync of Ready SVMs costs ONTAP, from the mock's request log: the logins that prove
//! seed Secrets, the inventory's collection reads, and anything looked up per object.

use std::time::Duration;

use ontap_operator::ontap::svm::role::TRIDENT_ROLE;
use serde_json::Value;

use super::mock::fast_mock;
use super::poll;
use super::svm::SvmWorld;

const READY_WITHIN: Duration = Duration::from_secs(90);

/// Waits for the first cluster-wide listing of `path` from now on that ONTAP answered: an
/// inventory read, which the refresher makes only once it counts the objects steady. Passes
/// before it read per object, as they do on a cluster whose objects have not been counted
/// steady yet.
pub async fn inventory_read(world: &SvmWorld, path: &str) {
    let from = world.next_seq().await;
    poll("an inventory read", READY_WITHIN, async || {
        requests_since(world, from)
            .await
            .iter()
            .any(|r| {
                let query = r["query"].as_str().unwrap_or_default();
                r["path"] == path && r["status"] == 200 && !looks_up_one_svm(path, query)
            })
            .then_some(())
    })
    .await;
}

/// Whether a request to `path` with `query` looks up one SVM or what belongs to it (by name, by
/// SVM uuid or owner, or an SVM's own path) rather than reading a collection of the whole
/// cluster. The Trident role's name selects no one SVM: every SVM of an object holding it has
/// one, and the inventory reads them (and the accounts holding it) by that name.
fn looks_up_one_svm(path: &str, query: &str) -> bool {
    let query = query.replace(&format!("name={TRIDENT_ROLE}"), "");
    query.contains("name=")
        || query.contains("svm.uuid=")
        || query.contains("owner.uuid=")
        || path.starts_with("/api/svm/svms/")
}

/// The requests ONTAP saw from sequence number `from` on, without the OntapCluster's own probe
/// (on its own schedule).
pub async fn requests_since(world: &SvmWorld, from: u64) -> Vec<Value> {
    world
        .requests()
        .await
        .into_iter()
        .filter(|r| r["seq"].as_u64().is_some_and(|s| s >= from))
        .filter(|r| r["path"] != "/api/cluster")
        .collect()
}

/// The requests ONTAP saw with sequence numbers from `from` up to `to`, to paths that begin
/// with `path`.
pub async fn requests_between(world: &SvmWorld, from: u64, to: u64, path: &str) -> Vec<Value> {
    world
        .requests()
        .await
        .into_iter()
        .filter(|r| {
            r["seq"].as_u64().is_some_and(|s| s >= from && s < to)
                && r["path"].as_str().is_some_and(|p| p.starts_with(path))
        })
        .collect()
}

/// What ONTAP saw in a resync window of Ready SVMs.
pub struct ResyncWindow {
    /// Every request, as `METHOD path?query`.
    pub all: Vec<String>,
    /// Requests as an SVM's account: the logins that prove seed Secrets.
    pub logins: usize,
    /// The admin's lookups of one SVM or what belongs to it ([`looks_up_one_svm`]).
    pub per_object: usize,
    pub writes: usize,
    /// The admin's requests: the inventory's collection reads.
    pub paged: usize,
}

impl ResyncWindow {
    /// Asserts that the window cost ONTAP a login per SVM of `svms` and `collections`
    /// collection reads per half sync period, and nothing per SVM besides.
    pub fn costs_a_login_per_svm(&self, svms: u8, collections: usize) {
        let all = &self.all;
        eprintln!(
            "{:.2} ONTAP requests per SVM in the window: {all:#?}",
            (self.paged + self.logins) as f64 / f64::from(svms)
        );
        assert!(
            self.logins >= usize::from(svms),
            "every SVM's credentials are proven by a login: {all:#?}"
        );
        assert_eq!(
            self.per_object, 0,
            "no SVM, its LIFs or its limits are looked up per object: {all:#?}"
        );
        assert_eq!(self.writes, 0, "a resync writes nothing: {all:#?}");
        assert!(
            self.paged <= collections * 2 * 3,
            "at most {collections} collection reads per half sync period: {all:#?}"
        );
    }
}

/// The requests of the window that starts at sequence number `from` and lasts two sync periods
/// of 4 s (with their jitter), in which every SVM is re-verified at least once; the time
/// passing is the point.
pub async fn resync_window(world: &SvmWorld, from: u64) -> ResyncWindow {
    tokio::time::sleep(Duration::from_secs(9)).await;
    let log = requests_since(world, from).await;
    let describe = |r: &Value| {
        format!(
            "{} {}?{}",
            r["method"].as_str().unwrap_or_default(),
            r["path"].as_str().unwrap_or_default(),
            r["query"].as_str().unwrap_or_default()
        )
    };
    let admin = world.mock.server.admin().user.clone();
    let logins = log.iter().filter(|r| r["user"] != admin.as_str()).count();
    let per_object = log
        .iter()
        .filter(|r| r["user"] == admin.as_str())
        .filter(|r| {
            let query = r["query"].as_str().unwrap_or_default();
            looks_up_one_svm(r["path"].as_str().unwrap_or_default(), query)
        })
        .count();
    ResyncWindow {
        all: log.iter().map(describe).collect(),
        logins,
        per_object,
        writes: log.iter().filter(|r| r["method"] != "GET").count(),
        paged: log.len() - logins,
    }
}

/// A world whose resyncs [`resync_window`] measures: a sync period of 4 s, and its cluster
/// read as an inventory from two steady SVMs on.
pub async fn resync_world() -> SvmWorld {
    let world = SvmWorld::with(
        fast_mock(),
        &["--sync-period=4s", "--ontap-inventory-min-svms=2"],
    )
    .await;
    world.wait_cluster_ready(READY_WITHIN).await;
    world
}
