//! HTTP Basic credentials as a request carries them. Pure parsing, apart from the auth
//! middleware, so the request log (which records the user name of every request, valid or not)
//! reads them without importing authentication.

use base64::Engine;
use hyper::{HeaderMap, header};

/// The user and password of an `Authorization: Basic …` header; `None` when there is none or it
/// does not parse.
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
