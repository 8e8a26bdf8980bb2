//! TLS, as Redis 7.0 has it: a second listener (`tls-port`) whose clients
//! speak TLS, replication over TLS (`tls-replication`), and the `tls-*`
//! settings, with rustls (the `ring` provider).
//!
//! - `options`: the `tls-*` settings read and checked (protocols, cipher
//!   names, the client-certificate policy).
//! - `build`: rustls's server and client configurations from the options
//!   and the certificate, key and CA files.
//! - `stream`: a connection's byte stream, plain TCP or TLS.
//! - `accept`: the server side of a handshake, in the connection's task,
//!   with a deadline; failures logged at most once a second.
//!
//! Invariants:
//! - The configuration in force is replaced whole or not at all: a
//!   `CONFIG SET` of a `tls-*` setting builds the new one from every
//!   setting's new value first, and an error (a missing or bad file) leaves
//!   the old one serving (`Settings::set` calls [`TlsState::configure`]
//!   before it stores any value).
//! - A connection takes the configuration in force when it is accepted;
//!   later changes apply to new connections only.
//! - TLS is configured only when it is used (`tls-port` not 0, or
//!   `tls-replication yes`), as in Redis: otherwise the files are not read.

mod accept;
mod build;
mod options;
mod stream;

use std::sync::{Arc, RwLock};

use tokio_rustls::{TlsAcceptor, TlsConnector};

pub use accept::{accept, HANDSHAKE_TIMEOUT};
pub use options::TlsOptions;
pub use stream::Stream;

/// The TLS configurations in force: the server's (for the TLS listener)
/// and the client's (for the link to a master).
#[derive(Default)]
pub struct TlsState {
    server: RwLock<Option<TlsAcceptor>>,
    client: RwLock<Option<TlsConnector>>,
    failures: accept::FailureLog,
}

impl TlsState {
    /// Reads the `tls-*` settings through `value` (a setting's value by
    /// name) and, when TLS is in use, builds and installs the
    /// configurations; on an error nothing changes.
    pub fn configure(&self, value: &dyn Fn(&str) -> String) -> Result<(), String> {
        let options = TlsOptions::read(value)?;
        let server = match options.port != 0 {
            true => Some(TlsAcceptor::from(Arc::new(build::server_config(&options)?))),
            false => None,
        };
        let client = match options.replication {
            true => Some(TlsConnector::from(Arc::new(build::client_config(
                &options,
            )?))),
            false => None,
        };
        *self.server.write().unwrap_or_else(|e| e.into_inner()) = server;
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = client;
        Ok(())
    }

    /// The log of failed handshakes (`accept`).
    pub fn failures(&self) -> &accept::FailureLog {
        &self.failures
    }

    /// The server configuration for a connection accepted now.
    pub fn acceptor(&self) -> Option<TlsAcceptor> {
        self.server
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The client configuration for a link to a master, when
    /// `tls-replication` is on.
    pub fn connector(&self) -> Option<TlsConnector> {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
