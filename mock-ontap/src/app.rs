//! The whole application, both route trees on one state. Its own module rather than the crate
//! root so the accept loop, which serves it, need not import the root that re-exports the loop.

use axum::Router;

use crate::{admin, api, state::MockState};

/// All routes: `/api/…` (authenticated, faultable, logged) and `/_mock/…` (test control).
///
/// Served with [`serve`](crate::serve) (or [`MockServer`](crate::MockServer)), reset faults
/// close the TCP connection; under a plain `axum::serve` they cannot, and hang instead.
pub fn router(state: MockState) -> Router {
    Router::new()
        .merge(api::routes(state.clone()))
        .merge(admin::routes())
        .with_state(state)
}
