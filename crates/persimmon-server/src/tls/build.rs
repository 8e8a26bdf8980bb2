//! rustls's configurations from the `tls-*` options: the server's (the
//! TLS listener) and the client's (a replica's link to its master), with
//! the certificates, keys and CAs read from their PEM files.
//!
//! Invariants:
//! - Every error names the setting (and the file) it comes from; nothing
//!   here panics on a bad file.
//! - Only the `ring` provider is used, restricted to the options' suites
//!   and protocol versions.
//! - An encrypted private key is refused with an error naming
//!   `tls-key-file-pass`: rustls reads unencrypted PKCS#8, PKCS#1 and SEC1
//!   keys only.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::server::{
    NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier,
};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};

use super::options::{AuthClients, TlsOptions};

/// The session cache never holds more than this many sessions (rustls
/// sizes its cache up front; `tls-session-cache-size 0` means no limit in
/// OpenSSL, this one here).
const MAX_SESSION_CACHE: usize = 1 << 20;

/// The server's configuration: its certificate and key, the client
/// certificate policy (`tls-auth-clients`), suites, versions, sessions.
pub fn server_config(o: &TlsOptions) -> Result<ServerConfig, String> {
    let provider = provider(o);
    let certs = certs(&o.cert_file, "tls-cert-file")?;
    let key = key(&o.key_file, "tls-key-file", "tls-key-file-pass")?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&o.versions)
        .map_err(|e| format!("tls-protocols, tls-ciphers, tls-ciphersuites: {e}"))?;
    let builder = match o.auth_clients {
        AuthClients::No => builder.with_no_client_auth(),
        auth => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots(o)?), provider);
            let verifier = match auth {
                AuthClients::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("tls-ca-cert-file: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls-cert-file, tls-key-file: {e}"))?;
    config.ignore_client_order = o.prefer_server_ciphers;
    if o.session_caching {
        let size = match o.session_cache_size {
            0 => MAX_SESSION_CACHE,
            n => n.min(MAX_SESSION_CACHE),
        };
        config.session_storage = ServerSessionMemoryCache::new(size);
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(config)
}

/// The client's configuration for the link to a master: the CA to verify
/// it with, and `tls-client-cert-file`/`-key-file`, or else
/// `tls-cert-file`/`-key-file`, as this side's certificate (none when
/// neither is set).
pub fn client_config(o: &TlsOptions) -> Result<ClientConfig, String> {
    let builder = ClientConfig::builder_with_provider(provider(o))
        .with_protocol_versions(&o.versions)
        .map_err(|e| format!("tls-protocols, tls-ciphers, tls-ciphersuites: {e}"))?
        .with_root_certificates(roots(o)?);
    let (cert, key_file, cert_name, key_name, pass_name) = match o.client_cert_file.is_empty() {
        false => (
            &o.client_cert_file,
            &o.client_key_file,
            "tls-client-cert-file",
            "tls-client-key-file",
            "tls-client-key-file-pass",
        ),
        true => (
            &o.cert_file,
            &o.key_file,
            "tls-cert-file",
            "tls-key-file",
            "tls-key-file-pass",
        ),
    };
    if cert.is_empty() {
        return Ok(builder.with_no_client_auth());
    }
    builder
        .with_client_auth_cert(certs(cert, cert_name)?, key(key_file, key_name, pass_name)?)
        .map_err(|e| format!("{cert_name}, {key_name}: {e}"))
}

/// The `ring` provider with only the options' suites. (rustls 0.23.48
/// deprecates it for want of post-quantum key exchange; it is the provider
/// that builds without aws-lc's C toolchain, which is why it is used.)
#[allow(deprecated)]
fn provider(o: &TlsOptions) -> Arc<CryptoProvider> {
    let mut provider = ring::default_provider();
    provider
        .cipher_suites
        .retain(|s| o.suites.contains(&s.suite()));
    Arc::new(provider)
}

/// The certificates of a PEM file (a chain: the first is the leaf).
fn certs(path: &str, setting: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    if path.is_empty() {
        return Err(format!("{setting} is not set"));
    }
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|items| items.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{setting} {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{setting} {path}: no certificate in the file"));
    }
    Ok(certs)
}

/// The private key of a PEM file.
fn key(path: &str, setting: &str, pass_setting: &str) -> Result<PrivateKeyDer<'static>, String> {
    if path.is_empty() {
        return Err(format!("{setting} is not set"));
    }
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains("ENCRYPTED") {
            format!(
                "{setting} {path}: the key is encrypted and rustls cannot decrypt it \
                 ({pass_setting} is not supported): give an unencrypted key"
            )
        } else {
            format!("{setting} {path}: {e}")
        }
    })
}

/// The CAs peers' certificates are checked against: every certificate of
/// `tls-ca-cert-file` and of the files in `tls-ca-cert-dir`.
fn roots(o: &TlsOptions) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    if !o.ca_cert_file.is_empty() {
        for cert in certs(&o.ca_cert_file, "tls-ca-cert-file")? {
            roots
                .add(cert)
                .map_err(|e| format!("tls-ca-cert-file {}: {e}", o.ca_cert_file))?;
        }
    }
    if !o.ca_cert_dir.is_empty() {
        let dir = &o.ca_cert_dir;
        let entries = std::fs::read_dir(dir).map_err(|e| format!("tls-ca-cert-dir {dir}: {e}"))?;
        for entry in entries.flatten() {
            // Files that are not PEM certificates (hash links to the same
            // file, keys) add nothing.
            let Ok(items) = CertificateDer::pem_file_iter(entry.path()) else {
                continue;
            };
            for cert in items.flatten() {
                let _ = roots.add(cert);
            }
        }
    }
    if roots.is_empty() {
        return Err(
            "either tls-ca-cert-file or tls-ca-cert-dir must name CA certificates to verify peers with"
                .into(),
        );
    }
    Ok(roots)
}
