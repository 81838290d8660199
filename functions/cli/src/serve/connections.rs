//! How `sluice serve` holds its connections, so that slow, idle or many clients cannot use up
//! the process's file descriptors or memory:
//!
//! - at most [`Limits::max_connections`] are served at once; more wait in the listen backlog,
//!   not accepted, until one closes;
//! - a request's line and headers must arrive within [`Limits::header_timeout`], counted from
//!   when the connection opens or its previous answer was sent, so a connection that sends
//!   nothing, or half a request, is closed after it;
//! - a request's body must arrive whole within [`Limits::body_timeout`] (408 otherwise) and
//!   hold at most [`MAX_BODY_BYTES`] (413 otherwise);
//! - an answer the client stops reading for [`Limits::body_timeout`] closes the connection.

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::response::IntoResponse;
use axum::Router;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use sluice_http::ApiError;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;
use tower::ServiceExt;

/// Most bytes of a request's body, as axum reads a body whole by default.
pub const MAX_BODY_BYTES: usize = 2 << 20;

/// Pause after the listener fails to accept (out of file descriptors, say) before it tries
/// again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Limits on the connections of a local server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Longest a request's line and headers may take to arrive.
    pub header_timeout: Duration,
    /// Longest a request's body may take to arrive, and an answer may wait on a client that
    /// does not read it.
    pub body_timeout: Duration,
}

/// Serves `router` on `listener` within `limits` until the process ends.
pub async fn serve(listener: TcpListener, router: Router, limits: Limits) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else { return };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "sluice serve: accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(router.clone(), request, limits));
            let io = TokioIo::new(StalledWrites::new(stream, limits.body_timeout));
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(io, service);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "sluice serve: connection closed");
            }
            drop(permit);
        });
    }
}

/// Reads a request's body within the limits, then answers it with `router`.
async fn answer(router: Router, request: Request<Incoming>, limits: Limits) -> Result<Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(limits.body_timeout, Limited::new(body, MAX_BODY_BYTES).collect()).await;
    let refused = |status: StatusCode, error: &'static str, message: String| {
        let mut response = ApiError::new(status, error, "BadRequestException", message).into_response();
        // What is left of the body is never read: the connection cannot carry another request.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        Ok(response)
    };
    let bytes = match read {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<LengthLimitError>() => {
            return refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large",
                format!("request body: more than {MAX_BODY_BYTES} bytes"),
            )
        }
        Ok(Err(e)) => return refused(StatusCode::BAD_REQUEST, "Bad Request", format!("request body: {e}")),
        Err(_) => {
            return refused(
                StatusCode::REQUEST_TIMEOUT,
                "Request Timeout",
                format!("request body: not received within {} s", limits.body_timeout.as_secs()),
            )
        }
    };
    let request = Request::from_parts(parts, Body::from(bytes));
    router.oneshot(request).await
}

/// A connection whose writes fail once one has waited `limit` on a client that does not read.
struct StalledWrites {
    stream: TcpStream,
    limit: Duration,
    waiting: Option<Pin<Box<Sleep>>>,
}

impl StalledWrites {
    fn new(stream: TcpStream, limit: Duration) -> Self {
        Self { stream, limit, waiting: None }
    }

    /// The outcome of a write: a pending one arms the deadline, a finished one clears it.
    fn within_limit<T>(&mut self, cx: &mut Context<'_>, outcome: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if outcome.is_ready() {
            self.waiting = None;
            return outcome;
        }
        let limit = self.limit;
        let deadline = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match Future::poll(deadline.as_mut(), cx) {
            Poll::Ready(()) => {
                self.waiting = None;
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading the answer")))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for StalledWrites {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for StalledWrites {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.within_limit(cx, outcome)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.within_limit(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_flush(cx);
        this.within_limit(cx, outcome)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
