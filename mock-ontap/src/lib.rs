//! A fake NetApp ONTAP REST server for tests. The faithful endpoints and the fault-injection API
//! arrive with their own issue; this skeleton only answers `GET /api/cluster`.

use std::sync::Arc;

use axum::{Json, Router, routing::get};
use serde_json::json;

/// Shared state of one fake cluster.
#[derive(Clone, Default)]
pub struct MockState {
    inner: Arc<Cluster>,
}

#[derive(Default)]
struct Cluster {
    name: String,
}

impl MockState {
    pub fn new(cluster_name: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Cluster {
                name: cluster_name.into(),
            }),
        }
    }
}

/// The HTTP routes of the fake cluster, for in-process tests and for the binary.
pub fn router(state: MockState) -> Router {
    Router::new().route(
        "/api/cluster",
        get(move || {
            let name = state.inner.name.clone();
            async move { Json(json!({ "name": name, "version": { "full": "NetApp Release 9.16.1", "generation": 9, "major": 16, "minor": 1 } })) }
        }),
    )
}
