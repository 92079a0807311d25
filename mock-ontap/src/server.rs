//! The accept loop. It is hand-written rather than `axum::serve` because the reset faults need
//! to close a connection from inside a request: each connection task hands its requests a
//! [`ConnectionControl`] and drops the socket when asked, with `SO_LINGER=0` so the client sees
//! a TCP reset instead of an answer (see [`crate::connection`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use hyper::{Request, body::Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::{TlsAcceptor, rustls::ServerConfig};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::{
    app::router, config::Credentials, config::MockConfig, connection::ConnectionControl,
    state::MockState, tls::TlsIdentity,
};

/// Serves the mock on `listener` (HTTPS when `tls` is given) until `shutdown` is cancelled;
/// cancelling also closes every open connection.
pub async fn serve(
    listener: TcpListener,
    state: MockState,
    tls: Option<Arc<ServerConfig>>,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let app = router(state);
    let acceptor = tls.map(TlsAcceptor::from);
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Usually EMFILE under load; the listener itself is still fine.
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "set_nodelay failed");
        }
        tokio::spawn(connection(
            stream,
            app.clone(),
            acceptor.clone(),
            shutdown.child_token(),
        ));
    }
}

async fn connection(
    stream: TcpStream,
    app: Router,
    acceptor: Option<TlsAcceptor>,
    kill: CancellationToken,
) {
    let control = ConnectionControl::new(kill);
    let io = control.guard(stream);
    let Some(acceptor) = acceptor else {
        return drive(TokioIo::new(io), app, control).await;
    };
    let handshake = tokio::select! {
        () = control.kill().cancelled() => return,
        handshake = acceptor.accept(io) => handshake,
    };
    match handshake {
        Ok(tls) => drive(TokioIo::new(tls), app, control).await,
        Err(e) => tracing::debug!(error = %e, "TLS handshake failed"),
    }
}

async fn drive<I>(io: I, app: Router, control: ConnectionControl)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let kill = control.kill().clone();
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(control.clone());
        app.clone().oneshot(req)
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(io, service);
    tokio::select! {
        result = conn => if let Err(e) = result {
            tracing::debug!(error = %e, "connection ended with an error");
        },
        // Dropping `conn` here drops the socket and any request still in flight.
        () = kill.cancelled() => {}
    }
}

/// A mock running in this process, for tests. Dropping it stops the server.
pub struct MockServer {
    addr: SocketAddr,
    state: MockState,
    tls: Option<TlsIdentity>,
    shutdown: CancellationToken,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl MockServer {
    /// Plain HTTP on an ephemeral port of 127.0.0.1.
    pub async fn start(config: MockConfig) -> anyhow::Result<Self> {
        Self::bind(localhost_any_port(), MockState::new(config)?, None).await
    }

    /// HTTPS with a fresh self-signed certificate on an ephemeral port of 127.0.0.1;
    /// trust [`MockServer::cert_pem`].
    pub async fn start_tls(config: MockConfig) -> anyhow::Result<Self> {
        let identity = TlsIdentity::self_signed()?;
        Self::bind(
            localhost_any_port(),
            MockState::new(config)?,
            Some(identity),
        )
        .await
    }

    pub async fn bind(
        addr: SocketAddr,
        state: MockState,
        tls: Option<TlsIdentity>,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let addr = listener.local_addr()?;
        let server_config = tls.as_ref().map(TlsIdentity::server_config).transpose()?;
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(serve(
            listener,
            state.clone(),
            server_config,
            shutdown.clone(),
        ));
        Ok(Self {
            addr,
            state,
            tls,
            shutdown,
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The PEM certificate to trust, when serving HTTPS.
    pub fn cert_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(TlsIdentity::cert_pem)
    }

    pub fn state(&self) -> &MockState {
        &self.state
    }

    pub fn admin(&self) -> &Credentials {
        self.state.admin()
    }

    /// Stops accepting, closes every connection and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::warn!(error = %e, "mock-ontap server task failed");
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn localhost_any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}
