//! TLS through a real server: certificates made at test time (rcgen: a
//! CA, a server certificate for localhost and 127.0.0.1, a client
//! certificate, and a second CA's client certificate), a rustls client
//! (blocking, over a std socket) running SET/GET on the `tls-port`,
//! `tls-auth-clients` yes/optional/no, a plain-text client and a garbage
//! sender on the TLS port closed while others are served, a stalled
//! handshake closed at its deadline, a certificate from another CA
//! refused, `CONFIG SET` of a bad certificate refused with the old
//! configuration still serving (and of a good one taking effect), an
//! encrypted key refused at startup naming `tls-key-file-pass`, and a
//! replica following its master over TLS.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestServer;
use persimmon_server::{Config, ServerHandle};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// A CA's certificate and key.
struct Ca {
    cert: Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// Writes a certificate signed by this CA (and its key) as
    /// `<name>.crt` and `<name>.key` in `dir`.
    fn issue(&self, dir: &Path, name: &str, sans: &[&str], server: bool) {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        if server {
            params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::ServerAuth);
        }
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

/// The files of one test: `ca.crt`; `server`, `server2` (both for
/// localhost and 127.0.0.1) and `client` issued by it; `rogue` (a client
/// certificate) issued by another CA, `other-ca.crt`.
struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    fn new() -> Certs {
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::new("Persimmon test CA");
        std::fs::write(dir.path().join("ca.crt"), ca.cert.pem()).unwrap();
        let sans = ["localhost", "127.0.0.1"];
        ca.issue(dir.path(), "server", &sans, true);
        ca.issue(dir.path(), "server2", &sans, true);
        ca.issue(dir.path(), "client", &[], false);
        let other = Ca::new("Another CA");
        std::fs::write(dir.path().join("other-ca.crt"), other.cert.pem()).unwrap();
        other.issue(dir.path(), "rogue", &[], false);
        Certs { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The `tls-*` settings of a server using `server.crt`.
    fn server_settings(&self, auth_clients: &str) -> Vec<(String, String)> {
        vec![
            ("tls-cert-file".into(), self.path("server.crt")),
            ("tls-key-file".into(), self.path("server.key")),
            ("tls-ca-cert-file".into(), self.path("ca.crt")),
            ("tls-auth-clients".into(), auth_clients.into()),
        ]
    }
}

/// A port free now (bound and released; the server binds it next).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server with a plain port and a TLS port (both free ones).
struct TlsServer {
    server: TestServer,
    tls_port: u16,
}

fn tls_server(certs: &Certs, auth_clients: &str) -> TlsServer {
    let tls_port = free_port();
    let settings = certs.server_settings(auth_clients);
    let port = free_port();
    let server = TestServer::start_with(|c| {
        // Not 0: `port 0` beside `tls-port` means no plain listener.
        c.port = port;
        c.tls_port = tls_port;
        c.settings = settings;
    });
    TlsServer { server, tls_port }
}

/// A blocking TLS client speaking RESP.
struct TlsClient {
    stream: BufReader<StreamOwned<ClientConnection, TcpStream>>,
}

/// A client configuration trusting `ca` (a file of `certs`), presenting
/// `identity` (`<name>.crt`/`.key`) when given. (The `ring` provider, as
/// the server uses; rustls deprecates it for want of post-quantum key
/// exchange.)
#[allow(deprecated)]
fn client_config(certs: &Certs, ca: &str, identity: Option<&str>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(certs.path(ca)).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some(name) => {
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_file_iter(certs.path(&format!("{name}.crt")))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
            let key = PrivateKeyDer::from_pem_file(certs.path(&format!("{name}.key"))).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    Arc::new(config)
}

impl TlsClient {
    /// Connects and completes the handshake (from the client's side: a
    /// server refusing the client's certificate says so at the first
    /// read).
    fn connect(port: u16, config: Arc<ClientConfig>) -> std::io::Result<TlsClient> {
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_read_timeout(Some(Duration::from_secs(20)))?;
        let name = ServerName::try_from("localhost").unwrap();
        let conn = ClientConnection::new(config, name).map_err(std::io::Error::other)?;
        let mut stream = StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(TlsClient {
            stream: BufReader::new(stream),
        })
    }

    /// Sends one request; its reply as one line (`-` errors, `+` simple
    /// strings and `$` bulk strings as their text, `(nil)`, arrays'
    /// elements joined by `|`).
    fn command(&mut self, args: &[&str]) -> std::io::Result<String> {
        let words: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let inner = self.stream.get_mut();
        inner.write_all(&common::encode(&words))?;
        inner.flush()?;
        self.reply()
    }

    fn reply(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        if self.stream.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        let (kind, text) = line.split_at(1);
        match kind {
            "$" if text == "-1" => Ok("(nil)".into()),
            "$" => {
                let mut data = vec![0; text.parse::<usize>().unwrap() + 2];
                self.stream.read_exact(&mut data)?;
                data.truncate(data.len() - 2);
                Ok(String::from_utf8_lossy(&data).into_owned())
            }
            "*" => {
                let n: usize = text.parse().unwrap();
                let items: std::io::Result<Vec<String>> = (0..n).map(|_| self.reply()).collect();
                Ok(items?.join("|"))
            }
            _ => Ok(text.to_string()),
        }
    }
}

/// Whether a client of `port` with `config` is served: its PING gets PONG.
fn served(port: u16, config: Arc<ClientConfig>) -> bool {
    TlsClient::connect(port, config)
        .and_then(|mut c| c.command(&["PING"]))
        .is_ok_and(|r| r == "PONG")
}

#[test]
fn set_and_get_over_tls() {
    let certs = Certs::new();
    let s = tls_server(&certs, "yes");
    let mut c = TlsClient::connect(s.tls_port, client_config(&certs, "ca.crt", Some("client")))
        .expect("handshake");
    assert_eq!(c.command(&["SET", "k", "over tls"]).unwrap(), "OK");
    assert_eq!(c.command(&["GET", "k"]).unwrap(), "over tls");
    // A large value crosses many TLS records each way.
    let big = "x".repeat(300_000);
    assert_eq!(c.command(&["SET", "big", &big]).unwrap(), "OK");
    assert_eq!(c.command(&["GET", "big"]).unwrap(), big);
    // The plain port serves the same data.
    let mut plain = s.server.raw();
    assert_eq!(
        plain.command(&[b"GET", b"k"]),
        common::Resp::bulk("over tls")
    );
    assert_eq!(
        c.command(&["CONFIG", "GET", "tls-port"]).unwrap(),
        format!("tls-port|{}", s.tls_port)
    );
}

#[test]
fn port_0_beside_tls_port_listens_on_tls_only() {
    let certs = Certs::new();
    let tls_port = free_port();
    let settings = certs.server_settings("yes");
    let server = TestServer::start_with(|c| {
        c.port = 0;
        c.tls_port = tls_port;
        c.settings = settings;
    });
    assert_eq!(server.addr.port(), tls_port);
    let mut c =
        TlsClient::connect(tls_port, client_config(&certs, "ca.crt", Some("client"))).unwrap();
    assert_eq!(c.command(&["CONFIG", "GET", "port"]).unwrap(), "port|0");
}

#[test]
fn a_client_past_maxclients_reads_the_refusal_over_tls() {
    let certs = Certs::new();
    let tls_port = free_port();
    let settings = certs.server_settings("yes");
    let _server = TestServer::start_with(|c| {
        c.port = free_port();
        c.tls_port = tls_port;
        c.settings = settings;
        c.limits.maxclients = 1;
    });
    let config = client_config(&certs, "ca.crt", Some("client"));
    let mut first = TlsClient::connect(tls_port, config.clone()).unwrap();
    assert_eq!(first.command(&["PING"]).unwrap(), "PONG");
    let mut second = TlsClient::connect(tls_port, config).unwrap();
    assert_eq!(second.reply().unwrap(), "ERR max number of clients reached");
}

#[test]
fn auth_clients_yes_requires_a_certificate_optional_and_no_do_not() {
    let certs = Certs::new();
    let s = tls_server(&certs, "yes");
    let anonymous = client_config(&certs, "ca.crt", None);
    let with_cert = client_config(&certs, "ca.crt", Some("client"));
    assert!(!served(s.tls_port, anonymous.clone()), "yes: refused");
    assert!(served(s.tls_port, with_cert.clone()));
    let mut admin = s.server.raw();
    for mode in ["optional", "no"] {
        let reply = admin.command(&[b"CONFIG", b"SET", b"tls-auth-clients", mode.as_bytes()]);
        assert_eq!(reply, common::Resp::Simple("OK".into()), "{mode}");
        assert!(served(s.tls_port, anonymous.clone()), "{mode}: accepted");
        assert!(
            served(s.tls_port, with_cert.clone()),
            "{mode}: with a certificate"
        );
    }
    admin.command(&[b"CONFIG", b"SET", b"tls-auth-clients", b"yes"]);
    assert!(!served(s.tls_port, anonymous), "yes again: refused");
    let reply = admin.command(&[b"CONFIG", b"SET", b"tls-auth-clients", b"maybe"]);
    assert!(matches!(reply, common::Resp::Error(e) if e.contains("tls-auth-clients")));
}

#[test]
fn a_certificate_from_another_ca_is_refused() {
    let certs = Certs::new();
    let s = tls_server(&certs, "yes");
    assert!(!served(
        s.tls_port,
        client_config(&certs, "ca.crt", Some("rogue"))
    ));
    // Nor does a client that trusts only the other CA accept the server.
    let distrustful = client_config(&certs, "other-ca.crt", Some("client"));
    assert!(TlsClient::connect(s.tls_port, distrustful).is_err());
    assert!(served(
        s.tls_port,
        client_config(&certs, "ca.crt", Some("client"))
    ));
}

#[test]
fn plain_text_and_garbage_on_the_tls_port_are_closed_and_others_served() {
    let certs = Certs::new();
    let s = tls_server(&certs, "yes");
    let good = client_config(&certs, "ca.crt", Some("client"));
    let mut working = TlsClient::connect(s.tls_port, good.clone()).unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], s.tls_port));
    // A plain-text client: closed without a byte (no RESP reply, no TLS
    // alert), as Redis does.
    let mut plain = common::Raw::connect(addr);
    plain.send(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let mut first = [0u8; 1];
    assert_eq!(plain.reader.read(&mut first).unwrap_or(0), 0, "{first:?}");
    // Garbage that looks like nothing: closed too.
    let mut garbage = common::Raw::connect(addr);
    garbage
        .send(&[0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3, 4, 5])
        .unwrap();
    garbage.send(&vec![0xab; 70_000]).unwrap_or(());
    assert!(garbage.closed(), "garbage sender disconnected");
    assert_eq!(working.command(&["SET", "still", "here"]).unwrap(), "OK");
    assert!(served(s.tls_port, good));
}

#[test]
fn a_stalled_handshake_blocks_no_one_and_is_closed_at_its_deadline() {
    let certs = Certs::new();
    let s = tls_server(&certs, "yes");
    let good = client_config(&certs, "ca.crt", Some("client"));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], s.tls_port));
    let stalled: Vec<common::Raw> = (0..20).map(|_| common::Raw::connect(addr)).collect();
    let mut half = common::Raw::connect(addr);
    // The first bytes of a ClientHello, then nothing.
    half.send(&[0x16, 0x03, 0x01, 0x00, 0x80, 0x01]).unwrap();
    let started = Instant::now();
    for _ in 0..5 {
        assert!(served(s.tls_port, good.clone()));
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "others served at once"
    );
    assert!(half.closed(), "closed at the handshake deadline");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(8) && waited < Duration::from_secs(19),
        "{waited:?}"
    );
    drop(stalled);
}

#[test]
fn config_set_of_a_bad_certificate_keeps_the_old_configuration() {
    let certs = Certs::new();
    let s = tls_server(&certs, "yes");
    let good = client_config(&certs, "ca.crt", Some("client"));
    let mut c = TlsClient::connect(s.tls_port, good.clone()).unwrap();
    let missing = certs.path("missing.crt");
    let reply = c
        .command(&["CONFIG", "SET", "tls-cert-file", &missing])
        .unwrap();
    assert!(
        reply.starts_with("ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration"),
        "{reply}"
    );
    assert!(reply.contains("missing.crt"), "{reply}");
    // A file that is not a certificate.
    std::fs::write(certs.path("junk.crt"), "not a certificate\n").unwrap();
    let reply = c
        .command(&["CONFIG", "SET", "tls-cert-file", &certs.path("junk.crt")])
        .unwrap();
    assert!(reply.contains("no certificate"), "{reply}");
    // All or nothing: a good key beside the bad certificate is not kept.
    let reply = c
        .command(&[
            "CONFIG",
            "SET",
            "tls-key-file",
            &certs.path("server2.key"),
            "tls-cert-file",
            &missing,
        ])
        .unwrap();
    assert!(reply.starts_with("ERR"), "{reply}");
    assert_eq!(
        c.command(&["CONFIG", "GET", "tls-cert-file"]).unwrap(),
        format!("tls-cert-file|{}", certs.path("server.crt"))
    );
    assert_eq!(
        c.command(&["CONFIG", "GET", "tls-key-file"]).unwrap(),
        format!("tls-key-file|{}", certs.path("server.key"))
    );
    assert!(
        served(s.tls_port, good.clone()),
        "the old configuration serves"
    );
    // A good pair takes effect for new connections.
    let reply = c
        .command(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &certs.path("server2.crt"),
            "tls-key-file",
            &certs.path("server2.key"),
        ])
        .unwrap();
    assert_eq!(reply, "OK");
    let mut fresh = TlsClient::connect(s.tls_port, good).unwrap();
    let presented = fresh.stream.get_ref().conn.peer_certificates().unwrap()[0].clone();
    let server2 = CertificateDer::pem_file_iter(certs.path("server2.crt"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(presented, server2, "the new certificate is presented");
    assert_eq!(fresh.command(&["PING"]).unwrap(), "PONG");
    assert_eq!(
        c.command(&["PING"]).unwrap(),
        "PONG",
        "the old connection stays"
    );
    // Protocols rustls does not have are refused by name.
    let reply = c
        .command(&["CONFIG", "SET", "tls-protocols", "TLSv1.1 TLSv1.2"])
        .unwrap();
    assert!(reply.contains("TLSv1.1 is not supported"), "{reply}");
    let reply = c
        .command(&["CONFIG", "SET", "tls-ciphers", "DES-CBC3-SHA"])
        .unwrap();
    assert!(reply.contains("'DES-CBC3-SHA'"), "{reply}");
}

#[test]
fn bad_tls_files_or_encrypted_keys_stop_the_start() {
    let certs = Certs::new();
    let encrypted = certs.path("encrypted.key");
    std::fs::write(
        &encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    let start = |settings: Vec<(String, String)>| {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            pool: dir.path().join("p.pool"),
            port: 0,
            tls_port: free_port(),
            pool_size: Some(16 << 20),
            settings,
            ..Config::default()
        };
        match ServerHandle::start(config) {
            Ok(_) => String::from("started"),
            Err(e) => e.to_string(),
        }
    };
    let mut settings = certs.server_settings("yes");
    settings[1].1 = encrypted;
    let e = start(settings);
    assert!(e.contains("tls-key-file-pass"), "{e}");
    let mut settings = certs.server_settings("yes");
    settings.retain(|(n, _)| n != "tls-ca-cert-file");
    let e = start(settings);
    assert!(e.contains("tls-ca-cert-file"), "{e}");
    let mut settings = certs.server_settings("no");
    settings.retain(|(n, _)| n != "tls-ca-cert-file");
    assert_eq!(
        start(settings),
        "started",
        "no client certificates: no CA needed"
    );
}

#[test]
fn a_replica_follows_its_master_over_tls() {
    let certs = Certs::new();
    let master = tls_server(&certs, "yes");
    let mut m = TlsClient::connect(
        master.tls_port,
        client_config(&certs, "ca.crt", Some("client")),
    )
    .unwrap();
    assert_eq!(m.command(&["SET", "before", "1"]).unwrap(), "OK");
    let replica_settings = vec![
        ("tls-replication".to_string(), "yes".to_string()),
        ("tls-ca-cert-file".into(), certs.path("ca.crt")),
        ("tls-client-cert-file".into(), certs.path("client.crt")),
        ("tls-client-key-file".into(), certs.path("client.key")),
    ];
    let master_tls_port = master.tls_port;
    let replica = TestServer::start_with(|c| {
        c.settings = replica_settings;
        c.replicaof = Some(("127.0.0.1".into(), master_tls_port));
    });
    let mut r = replica.raw();
    let get = |r: &mut common::Raw, key: &str| r.command(&[b"GET", key.as_bytes()]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(&mut r, "before") != common::Resp::bulk("1") {
        assert!(Instant::now() < deadline, "full sync over TLS");
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 0..200 {
        let v = i.to_string();
        assert_eq!(m.command(&["SET", &format!("k{i}"), &v]).unwrap(), "OK");
    }
    assert_eq!(m.command(&["WAIT", "1", "10000"]).unwrap(), "1");
    assert_eq!(get(&mut r, "k199"), common::Resp::bulk("199"));
    assert_eq!(get(&mut r, "k0"), common::Resp::bulk("0"));
    let role = m.command(&["ROLE"]).unwrap();
    assert!(role.starts_with("master|"), "{role}");
}
