//! Fault injection on `/api`: applies the first fault rule that fires to the request, and
//! shapes the broken answer it calls for.
//!
//! The same middleware logs every `/api` request, because it is the only layer that still sees
//! requests a fault cut short.

use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{
    connection::ConnectionControl,
    credentials::basic_credentials,
    error::{ApiError, codes},
    faults::FaultAction,
    model::InjectedFailure,
    requests::{FaultHit, RequestRecord},
    state::MockState,
};

const DEFAULT_MALFORMED_BODY: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
const DEFAULT_MALFORMED_CONTENT_TYPE: &str = "text/html";

/// Middleware on every `/api` route: applies the first firing fault and logs the request.
pub async fn inject(State(state): State<MockState>, req: Request, next: Next) -> Response {
    let mut record = request_record(&req);
    let fired = state.faults().take(req.method(), req.uri().path());
    let Some((id, action)) = fired else {
        let response = next.run(req).await;
        record.status = Some(response.status().as_u16());
        state.requests().push(record);
        return response;
    };
    record.fault = Some(FaultHit {
        id,
        action: action.name(),
    });
    apply(action, state, req, next, record).await
}

/// The log entry of a request, before its answer is known.
fn request_record(req: &Request) -> RequestRecord {
    RequestRecord {
        seq: 0,
        at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        method: req.method().to_string(),
        path: req.uri().path().to_owned(),
        query: req.uri().query().map(str::to_owned),
        status: None,
        user: basic_credentials(req.headers()).map(|(user, _)| user),
        traceparent: header_text(req, "traceparent"),
        user_agent: header_text(req, header::USER_AGENT.as_str()),
        fault: None,
    }
}

/// Answers `req` as the fired `action` says, and logs `record` with the status of the answer
/// the mock produced, if any (an answer lost to `apply_then_reset` still counts).
async fn apply(
    action: FaultAction,
    state: MockState,
    mut req: Request,
    next: Next,
    mut record: RequestRecord,
) -> Response {
    let connection = req.extensions().get::<ConnectionControl>().cloned();
    let response = match action {
        FaultAction::Error {
            status,
            code,
            message,
            target,
        } => ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code,
            message,
            target,
        }
        .into_response(),
        FaultAction::Delay { ms } => return delayed(ms, state, req, next, record).await,
        FaultAction::JobFailure { code, message } => {
            req.extensions_mut()
                .insert(InjectedFailure { code, message });
            next.run(req).await
        }
        FaultAction::Reset => {
            state.requests().push(record);
            return drop_connection(connection).await;
        }
        FaultAction::ApplyThenReset => {
            let lost = next.run(req).await;
            record.status = Some(lost.status().as_u16());
            state.requests().push(record);
            return drop_connection(connection).await;
        }
        FaultAction::Hang => {
            state.requests().push(record);
            return std::future::pending().await;
        }
        FaultAction::Malformed {
            status,
            body,
            content_type,
            apply,
        } => {
            if apply {
                // A proxy mangled the answer of a request the cluster carried out.
                drop(next.run(req).await);
            }
            malformed(status, body, content_type)
        }
        FaultAction::Huge {
            bytes, apply: true, ..
        } => padded(next.run(req).await, bytes).await,
        FaultAction::Huge {
            bytes,
            apply: false,
            status,
        } => huge_error(status.unwrap_or(500), bytes),
    };
    record.status = Some(response.status().as_u16());
    state.requests().push(record);
    response
}

/// Waits `ms`, then handles the request normally and logs it.
async fn delayed(
    ms: u64,
    state: MockState,
    req: Request,
    next: Next,
    mut record: RequestRecord,
) -> Response {
    // A server that has accepted a request finishes it even when the client stops
    // waiting: on a task of its own, a client timeout (which drops this future)
    // cannot cancel it, and the log still records it.
    let handled = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let response = next.run(req).await;
        record.status = Some(response.status().as_u16());
        state.requests().push(record);
        response
    });
    handled.await.unwrap_or_else(|_| {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: codes::INTERNAL_RETRY.into(),
            message: "the delayed request failed in the mock".into(),
            target: None,
        }
        .into_response()
    })
}

fn header_text(req: &Request, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn malformed(status: u16, body: Option<String>, content_type: Option<String>) -> Response {
    let content_type = content_type.unwrap_or_else(|| DEFAULT_MALFORMED_CONTENT_TYPE.into());
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        body.unwrap_or_else(|| DEFAULT_MALFORMED_BODY.into()),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// `len` bytes of `byte`, in chunks that share one buffer, so a gigabyte costs no memory.
fn filler(len: u64, byte: u8) -> impl Iterator<Item = Bytes> {
    const CHUNK: u64 = 64 * 1024;
    let chunk = Bytes::from(vec![byte; CHUNK as usize]);
    let last = chunk.slice(..(len % CHUNK) as usize);
    std::iter::repeat_n(chunk, (len / CHUNK) as usize)
        .chain(std::iter::once(last))
        .filter(|c| !c.is_empty())
}

/// A body streamed without `Content-Length`: the client learns its size only by reading it.
fn streamed(parts: impl Iterator<Item = Bytes> + Send + 'static) -> Body {
    Body::from_stream(futures::stream::iter(
        parts.map(Ok::<_, std::convert::Infallible>),
    ))
}

/// The real answer, followed by whitespace up to `bytes` bytes: still the same JSON.
async fn padded(response: Response, bytes: u64) -> Response {
    let (mut parts, body) = response.into_parts();
    // The mock's own answers are small; this limit only guards against a runaway.
    let answer = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the answer to pad");
            Bytes::new()
        }
    };
    let padding = bytes.saturating_sub(answer.len() as u64);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(
        parts,
        streamed(std::iter::once(answer).chain(filler(padding, b' '))),
    )
}

/// An ONTAP error answer of `bytes` bytes, nearly all of it the message.
fn huge_error(status: u16, bytes: u64) -> Response {
    let head = Bytes::from(format!(
        r#"{{"error":{{"code":"{}","message":""#,
        codes::INTERNAL_RETRY
    ));
    let tail = Bytes::from_static(br#""}}"#);
    let message = bytes.saturating_sub((head.len() + tail.len()) as u64);
    let body = streamed(
        std::iter::once(head)
            .chain(filler(message, b'x'))
            .chain(std::iter::once(tail)),
    );
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Asks the connection task to drop the socket, then waits forever: the task drops this
/// future together with the connection, so no answer is ever written.
async fn drop_connection(connection: Option<ConnectionControl>) -> Response {
    match connection {
        Some(connection) => connection.reset(),
        None => tracing::warn!(
            "reset fault on a connection not served by mock_ontap::serve; hanging instead"
        ),
    }
    std::future::pending().await
}
