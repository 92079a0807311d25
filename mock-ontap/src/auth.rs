//! HTTP Basic authentication on `/api`: the cluster admin, or an unlocked SVM account whose
//! applications include `http` with `password`.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use base64::Engine;

use crate::{error::ApiError, model::Principal, state::MockState};

pub fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

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
