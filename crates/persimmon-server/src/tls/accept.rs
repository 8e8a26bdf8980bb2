//! The server side of a TLS handshake, run in the accepted connection's
//! own task so that a client that stalls or sends garbage holds up only
//! itself.
//!
//! Invariants:
//! - A handshake ends within `HANDSHAKE_TIMEOUT`, or the socket is closed.
//! - A client whose first byte does not open a TLS handshake record (a
//!   plain-text client) is closed without a byte sent, as Redis does.
//! - A failed handshake (not TLS, a refused certificate, a timeout) closes
//!   the socket and is logged; at most one line a second is written, with
//!   the count of failures not logged since the last line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::stream::Stream;

/// How long a client has to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Rate-limited log of failed handshakes.
#[derive(Default)]
pub struct FailureLog {
    /// Unix second of the last line written.
    last_second: AtomicU64,
    /// Failures since then that were not logged.
    unlogged: AtomicU64,
}

impl FailureLog {
    fn record(&self, peer: &str, reason: &str) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.last_second.load(Ordering::Relaxed);
        let turn = now != last
            && self
                .last_second
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        if !turn {
            self.unlogged.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let more = self.unlogged.swap(0, Ordering::Relaxed);
        match more {
            0 => eprintln!("persimmon: TLS handshake with {peer} failed: {reason}"),
            n => eprintln!(
                "persimmon: TLS handshake with {peer} failed: {reason} ({n} more failed since the last report)"
            ),
        }
    }
}

/// Runs the handshake of a client accepted on the TLS port; `None` (the
/// socket closed) when it fails or takes too long.
pub async fn accept(
    failures: &FailureLog,
    acceptor: TlsAcceptor,
    tcp: TcpStream,
) -> Option<Stream> {
    let peer = tcp
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let handshake = async {
        if !starts_with_handshake(&tcp).await {
            return Err(std::io::Error::other(
                "not TLS (plain text on the TLS port?)",
            ));
        }
        acceptor.accept(tcp).await
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(tls)) => Some(Stream::Tls(Box::new(tls.into()))),
        Ok(Err(e)) => {
            failures.record(&peer, &e.to_string());
            None
        }
        Err(_) => {
            failures.record(&peer, "timed out");
            None
        }
    }
}

/// Whether the client's first byte opens a TLS handshake record (content
/// type 22). Anything else (a plain-text client) is closed without a
/// reply, as OpenSSL does in Redis, rather than answered with a TLS alert.
async fn starts_with_handshake(tcp: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(tcp.peek(&mut first).await, Ok(1) if first[0] == 0x16)
}
