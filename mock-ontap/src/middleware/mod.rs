//! The axum layers on every `/api` route. They sit above the state they read and below the
//! routes that install them; the fault rules and credential parsing they apply live lower down,
//! so nothing below imports a middleware.

pub mod auth;
pub mod inject;
