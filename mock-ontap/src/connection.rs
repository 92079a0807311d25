//! How a request ends its own connection without an answer, as the reset faults need: the
//! connection task hands each request a [`ConnectionControl`], and serves over a [`ResetOnDrop`]
//! stream that closes with `SO_LINGER=0` when asked, so the client sees a TCP reset.
//!
//! Below both the accept loop that creates the control and the fault middleware that uses it,
//! so neither imports the other.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Lets a request end its own connection without an answer.
#[derive(Clone)]
pub struct ConnectionControl {
    kill: CancellationToken,
    hard_reset: Arc<AtomicBool>,
}

impl ConnectionControl {
    /// A control whose `reset` cancels `kill`, the token the connection task ends on.
    pub(crate) fn new(kill: CancellationToken) -> Self {
        Self {
            kill,
            hard_reset: Arc::default(),
        }
    }

    pub(crate) fn reset(&self) {
        self.hard_reset.store(true, Ordering::SeqCst);
        self.kill.cancel();
    }

    /// Cancelled by `reset`, or when the server shuts down.
    pub(crate) fn kill(&self) -> &CancellationToken {
        &self.kill
    }

    /// `stream`, armed to close with a reset once this control's `reset` was called.
    pub(crate) fn guard(&self, stream: TcpStream) -> ResetOnDrop {
        ResetOnDrop {
            stream,
            hard_reset: self.hard_reset.clone(),
        }
    }
}

/// A TCP stream that, when a reset was requested, closes with RST instead of FIN.
pub(crate) struct ResetOnDrop {
    stream: TcpStream,
    hard_reset: Arc<AtomicBool>,
}

impl Drop for ResetOnDrop {
    fn drop(&mut self) {
        if self.hard_reset.load(Ordering::SeqCst)
            && let Err(e) = self.stream.set_zero_linger()
        {
            tracing::debug!(error = %e, "could not arm TCP reset");
        }
    }
}

impl AsyncRead for ResetOnDrop {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ResetOnDrop {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
