//! HTTP Basic authentication on `/api`: the cluster admin, or an unlocked SVM account whose
//! applications include `http` with `password`; then the account's REST role, if it holds one:
//! a request its privileges do not grant answers 403 code `6` "not authorized for that
//! command", as ONTAP answers it.

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
    let Some(principal) = principal else {
        return ApiError::unauthorized().into_response();
    };
    if matches!(principal, Principal::Svm { .. })
        && state
            .model()
            .0
            .role_denies(&principal, req.method(), req.uri().path())
    {
        return ApiError::forbidden().into_response();
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}
