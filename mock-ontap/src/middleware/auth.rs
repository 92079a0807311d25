//! HTTP Basic authentication on `/api`: the cluster admin, or an unlocked SVM account whose
//! applications include `http` with `password`.

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{credentials::basic_credentials, error::ApiError, model::Principal, state::MockState};

pub async fn authenticate(
    State(state): State<MockState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some((user, password)) = basic_credentials(req.headers()) else {
        return ApiError::unauthorized().into_response();
    };
    let admin = state.admin();
    let principal = if user == admin.user && password == admin.password {
        Some(Principal::Admin { user })
    } else {
        state.model().0.authenticate(&user, &password)
    };
    match principal {
        Some(principal) => {
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        None => ApiError::unauthorized().into_response(),
    }
}
