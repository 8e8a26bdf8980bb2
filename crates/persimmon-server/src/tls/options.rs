//! The `tls-*` settings, read by name and checked: what rustls can do
//! (TLS 1.2 and 1.3, ECDHE with AES-GCM or ChaCha20-Poly1305) and clear
//! errors for what it cannot (older protocols, other ciphers).
//!
//! Invariants:
//! - Every name a setting gives is either mapped to a rustls suite or
//!   version, or refused with an error naming the setting and the name; an
//!   exclusion (`!NAME`, `-NAME`) of something rustls does not have is
//!   satisfied already and accepted.
//! - The lists read are never empty: an empty setting means everything
//!   rustls supports, and a setting that leaves nothing is an error.

use tokio_rustls::rustls::{CipherSuite, SupportedProtocolVersion};

/// Whether a client must present a certificate (`tls-auth-clients`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthClients {
    Yes,
    Optional,
    No,
}

/// The `tls-*` settings a configuration is built from.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    pub port: u16,
    pub cert_file: String,
    pub key_file: String,
    pub client_cert_file: String,
    pub client_key_file: String,
    pub ca_cert_file: String,
    pub ca_cert_dir: String,
    pub auth_clients: AuthClients,
    pub replication: bool,
    pub versions: Vec<&'static SupportedProtocolVersion>,
    /// The cipher suites allowed, TLS 1.3 and TLS 1.2 together.
    pub suites: Vec<CipherSuite>,
    pub prefer_server_ciphers: bool,
    pub session_caching: bool,
    pub session_cache_size: usize,
}

/// TLS 1.3 suites by the names OpenSSL (and `tls-ciphersuites`) uses.
pub const TLS13_SUITES: &[(&str, CipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// TLS 1.2 suites by their OpenSSL names (`tls-ciphers`).
pub const TLS12_SUITES: &[(&str, CipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
];

/// OpenSSL cipher-list words that stand for every suite rustls has.
const EVERY_SUITE_WORDS: &[&str] = &[
    "DEFAULT", "ALL", "HIGH", "SECURE", "ECDHE", "EECDH", "kECDHE", "AESGCM", "CHACHA20",
];

impl TlsOptions {
    /// Reads the settings through `value` (a setting's value by name).
    pub fn read(value: &dyn Fn(&str) -> String) -> Result<TlsOptions, String> {
        let yes = |name: &str| value(name) == "yes";
        let number = |name: &str| value(name).parse::<u64>().unwrap_or(0);
        let auth_clients = match value("tls-auth-clients").as_str() {
            "no" => AuthClients::No,
            "optional" => AuthClients::Optional,
            _ => AuthClients::Yes,
        };
        let versions = protocols(&value("tls-protocols"))?;
        let mut suites = Vec::new();
        if versions.contains(&&tokio_rustls::rustls::version::TLS13) {
            suites.extend(ciphersuites(&value("tls-ciphersuites"))?);
        }
        if versions.contains(&&tokio_rustls::rustls::version::TLS12) {
            suites.extend(ciphers(&value("tls-ciphers"))?);
        }
        Ok(TlsOptions {
            port: u16::try_from(number("tls-port")).unwrap_or(0),
            cert_file: value("tls-cert-file"),
            key_file: value("tls-key-file"),
            client_cert_file: value("tls-client-cert-file"),
            client_key_file: value("tls-client-key-file"),
            ca_cert_file: value("tls-ca-cert-file"),
            ca_cert_dir: value("tls-ca-cert-dir"),
            auth_clients,
            replication: yes("tls-replication"),
            versions,
            suites,
            prefer_server_ciphers: yes("tls-prefer-server-ciphers"),
            session_caching: yes("tls-session-caching"),
            session_cache_size: usize::try_from(number("tls-session-cache-size"))
                .unwrap_or(usize::MAX),
        })
    }
}

/// `tls-protocols`: `TLSv1.2` and/or `TLSv1.3` (empty: both).
fn protocols(text: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    use tokio_rustls::rustls::version::{TLS12, TLS13};
    let mut versions = Vec::new();
    for word in text.split_ascii_whitespace() {
        let version = match word.to_ascii_lowercase().as_str() {
            "tlsv1.2" => &TLS12,
            "tlsv1.3" => &TLS13,
            "tlsv1" | "tlsv1.1" | "sslv2" | "sslv3" => {
                return Err(format!(
                "tls-protocols: {word} is not supported (rustls speaks only TLSv1.2 and TLSv1.3)"
            ))
            }
            _ => return Err(format!("tls-protocols: invalid protocol '{word}'")),
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        versions = vec![&TLS13, &TLS12];
    }
    Ok(versions)
}

/// `tls-ciphersuites`: TLS 1.3 suite names separated by colons (empty:
/// every one rustls has).
fn ciphersuites(text: &str) -> Result<Vec<CipherSuite>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(TLS13_SUITES.iter().map(|s| s.1).collect());
    }
    let mut suites = Vec::new();
    for name in text.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(&(_, suite)) = TLS13_SUITES.iter().find(|s| s.0 == name) else {
            return Err(format!(
                "tls-ciphersuites: '{name}' is not a TLS 1.3 suite rustls supports ({})",
                names(TLS13_SUITES)
            ));
        };
        if !suites.contains(&suite) {
            suites.push(suite);
        }
    }
    Ok(suites)
}

/// `tls-ciphers`: an OpenSSL cipher list for TLS 1.2 (empty: every suite
/// rustls has). Words are separated by `:`, `,` or spaces; `DEFAULT`,
/// `ALL`, `HIGH` (and a few like them) add every suite; a suite's OpenSSL
/// name adds it; `!NAME` and `-NAME` remove it; `+NAME` only reorders in
/// OpenSSL and is accepted.
fn ciphers(text: &str) -> Result<Vec<CipherSuite>, String> {
    let words: Vec<&str> = text
        .split([':', ',', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return Ok(TLS12_SUITES.iter().map(|s| s.1).collect());
    }
    let mut suites: Vec<CipherSuite> = Vec::new();
    for word in words {
        if let Some(name) = word.strip_prefix(['!', '-']) {
            let removed = named(TLS12_SUITES, name);
            suites.retain(|s| !removed.contains(s));
            continue;
        }
        if word.starts_with('+') || word.starts_with('@') {
            continue;
        }
        let added = named(TLS12_SUITES, word);
        if added.is_empty() {
            return Err(format!(
                "tls-ciphers: '{word}' is not a TLS 1.2 cipher rustls supports ({})",
                names(TLS12_SUITES)
            ));
        }
        for suite in added {
            if !suites.contains(&suite) {
                suites.push(suite);
            }
        }
    }
    if suites.is_empty() {
        return Err(format!("tls-ciphers: '{text}' leaves no cipher"));
    }
    Ok(suites)
}

/// The suites a cipher-list word names: one suite, or every suite for the
/// words that mean all of them.
fn named(table: &[(&str, CipherSuite)], word: &str) -> Vec<CipherSuite> {
    if EVERY_SUITE_WORDS
        .iter()
        .any(|w| w.eq_ignore_ascii_case(word))
    {
        return table.iter().map(|s| s.1).collect();
    }
    table
        .iter()
        .filter(|s| s.0.eq_ignore_ascii_case(word))
        .map(|s| s.1)
        .collect()
}

fn names(table: &[(&str, CipherSuite)]) -> String {
    table.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_are_tls12_and_tls13_only() {
        assert_eq!(protocols("").unwrap().len(), 2);
        assert_eq!(protocols("TLSv1.2").unwrap().len(), 1);
        let e = protocols("TLSv1.1 TLSv1.2").unwrap_err();
        assert!(e.contains("TLSv1.1 is not supported"), "{e}");
        assert!(protocols("TLSv9").unwrap_err().contains("invalid"));
    }

    #[test]
    fn cipher_lists_map_openssl_names() {
        assert_eq!(ciphers("").unwrap().len(), TLS12_SUITES.len());
        assert_eq!(ciphers("DEFAULT:-AES128-SHA256").unwrap().len(), 6);
        assert_eq!(
            ciphers("HIGH:!ECDHE-RSA-AES128-GCM-SHA256").unwrap().len(),
            5
        );
        assert_eq!(
            ciphers("ECDHE-RSA-AES256-GCM-SHA384").unwrap(),
            vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]
        );
        let e = ciphers("AES128-SHA256").unwrap_err();
        assert!(e.contains("'AES128-SHA256'"), "{e}");
        assert!(ciphers("-ALL").unwrap_err().contains("leaves no cipher"));
        assert!(ciphersuites("TLS_AES_128_CCM_SHA256").is_err());
        assert_eq!(ciphersuites("TLS_AES_128_GCM_SHA256").unwrap().len(), 1);
    }
}
