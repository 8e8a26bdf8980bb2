//! Server configuration: defaults, the optional TOML file, and what the
//! command line overrides (flags > file > defaults; the CLI applies flags).
//!
//! ```toml
//! # persimmon.toml — every key optional
//! pool = "/dev/shm/app.pool"
//! pool-size = "64M"            # initial size of a pool serve creates (also 1.5G, 1_000M)
//! pool-max = "64G"             # largest size the pool may grow to
//! ordered-index = false        # create the pool with the ordered index (KRANGE, KPREFIX)
//! point-index = "pm"           # or "dram": point index in DRAM, rebuilt after every start
//!                              # from the ordered index (needs ordered-index = true)
//! data-dir = "/data/app-tier" # create the pool with an SSD tier there (large values)
//! tier-threshold = "4K"        # values of at least this size go to the tier
//! cache-bytes = "2G"           # DRAM read cache for the tier (0: off)
//! disk-log-size = "64M"        # a pool on an ordinary file system: its
//!                              # write-ahead log's ring (the most a replay reads)
//! bind = "127.0.0.1"
//! port = 6479                  # 0 beside tls-port: no plain listener
//! tls-port = 6480              # TLS listener (0: none); the other tls-*
//!                              # settings go in [settings]
//! requirepass = "secret"
//! user = ["alice on >pw ~app:* +@read"]  # users (redis.conf's `user` lines)
//! aclfile = "/etc/persimmon/users.acl"  # or users in a file (ACL LOAD/SAVE)
//! protected-mode = true        # no password: refuse non-loopback clients
//! maxclients = 10000
//! proto-max-bulk-len = "512M"
//! client-query-buffer-limit = "1G"
//! client-output-buffer-limit = "512M"
//! client-output-stall-secs = 60
//! worker-threads = 2
//! databases = 16             # SELECT 0..15 (Redis's default)
//! replicaof = "10.0.0.5 6379"  # follow this master (Persimmon or redis-server)
//!
//! # Any other CONFIG SET parameter, applied at start as CONFIG SET would
//! # (CONFIG REWRITE writes the parameters changed at run time here).
//! [settings]
//! maxmemory = "1gb"
//! client-output-buffer-limit = "pubsub 32mb 8mb 60"
//! ```
//!
//! Names follow `redis.conf` where Redis has the setting.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::settings::{yes_no, Settings, OTHER_CLASSES};

/// The engine's size parser, so the server's config file, the CLI and the
/// benchmark accept the same spellings (`64M`, `1.5G`, `1_000M`).
pub use persimmon::size::parse_size;

/// Default port: not Redis's 6379, so both can run side by side.
pub const DEFAULT_PORT: u16 = 6479;

/// Everything `persimmon serve` needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Pool file (created when missing).
    pub pool: PathBuf,
    /// Initial size of a pool the server creates (engine default: 64 MiB).
    pub pool_size: Option<u64>,
    /// Largest size the pool may grow to (engine default: 64 GiB).
    pub pool_max: Option<u64>,
    /// Create the pool with the ordered index, which KRANGE and KPREFIX
    /// need. Creation only: an existing pool keeps its own setting.
    pub ordered_index: bool,
    /// Where a pool the server creates keeps its point index: in persistent
    /// memory (default) or in DRAM, rebuilt from the ordered index after
    /// every start (needs `ordered_index`). Creation only, as above.
    pub point_index: persimmon::PointIndex,
    /// SSD tier directory of a pool the server creates (creation only; the
    /// pool remembers it, a different one is refused).
    pub data_dir: Option<PathBuf>,
    /// Values of at least this many bytes go to the tier (creation only).
    pub tier_threshold: Option<u64>,
    /// DRAM for the tier's read cache (engine default when unset).
    pub cache_bytes: Option<u64>,
    /// The disk domain's write-ahead log ring (`disk-log-size`; `None`:
    /// the engine's default).
    pub disk_log_bytes: Option<u64>,
    /// Address to listen on (default loopback).
    pub bind: IpAddr,
    /// TCP port (default 6479; 0 picks a free port, printed when ready;
    /// 0 with `tls_port` set: no plain listener, as in Redis).
    pub port: u16,
    /// TLS port (`tls-port`; 0: no TLS listener). The other `tls-*`
    /// settings are run-time settings (`settings`).
    pub tls_port: u16,
    /// Password of the `default` user; `None`: no authentication.
    pub requirepass: Option<String>,
    /// Users as `user` lines of `redis.conf` give them (`alice on >pw
    /// ~app:* +@read`), without the word `user`.
    pub users: Vec<String>,
    /// The ACL file (`ACL LOAD`, `ACL SAVE`); not with `users`.
    pub aclfile: Option<PathBuf>,
    /// Without a password, refuse clients that are not on loopback.
    pub protected_mode: bool,
    pub limits: Limits,
    /// Tokio worker threads (default 2).
    pub worker_threads: usize,
    /// Number of databases (`SELECT 0..databases`), 1 to 65536.
    pub databases: usize,
    /// Follow this master (host, port) from the start, as `REPLICAOF` does.
    pub replicaof: Option<(String, u16)>,
    /// The file's `[settings]` table: `CONFIG SET` parameters and values,
    /// applied at start after everything above.
    pub settings: Vec<(String, String)>,
    /// Test hook: treat loopback peers as remote, to exercise protected
    /// mode without sending traffic to any other address.
    #[doc(hidden)]
    pub treat_loopback_as_remote: bool,
}

/// Limits on clients, as Redis promises them.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Most clients connected at once (`-ERR max number of clients reached`).
    pub maxclients: usize,
    /// Largest bulk argument a request may carry (protocol error and close
    /// above it). Values above the engine's 64 MiB limit are parsed but
    /// rejected by the command with an error naming the limit.
    pub proto_max_bulk_len: usize,
    /// Most bytes of not yet executed requests a client may have buffered
    /// (a request being received counts whole); above it the client is
    /// closed.
    pub query_buffer_limit: usize,
    /// Most reply bytes waiting for a client; a client whose pending replies
    /// grow past this is closed.
    pub output_buffer_limit: usize,
    /// A client that reads none of its pending replies for this long is
    /// closed (a slow or stuck reader).
    pub output_stall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            maxclients: 10_000,
            proto_max_bulk_len: 512 << 20,
            query_buffer_limit: 1 << 30,
            output_buffer_limit: 512 << 20,
            output_stall: Duration::from_secs(60),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            pool: PathBuf::from("persimmon.pool"),
            pool_size: None,
            pool_max: None,
            ordered_index: false,
            point_index: persimmon::PointIndex::Pm,
            data_dir: None,
            tier_threshold: None,
            cache_bytes: None,
            disk_log_bytes: None,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            tls_port: 0,
            requirepass: None,
            users: Vec::new(),
            aclfile: None,
            protected_mode: true,
            limits: Limits::default(),
            worker_threads: 2,
            databases: 16,
            replicaof: None,
            settings: Vec::new(),
            treat_loopback_as_remote: false,
        }
    }
}

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// The file's keys; all optional.
#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct FileConfig {
    pool: Option<PathBuf>,
    pool_size: Option<Size>,
    pool_max: Option<Size>,
    ordered_index: Option<bool>,
    point_index: Option<String>,
    data_dir: Option<PathBuf>,
    tier_threshold: Option<Size>,
    cache_bytes: Option<Size>,
    disk_log_size: Option<Size>,
    bind: Option<String>,
    port: Option<u16>,
    tls_port: Option<u16>,
    requirepass: Option<String>,
    user: Option<Vec<String>>,
    aclfile: Option<PathBuf>,
    protected_mode: Option<bool>,
    maxclients: Option<usize>,
    proto_max_bulk_len: Option<Size>,
    client_query_buffer_limit: Option<Size>,
    client_output_buffer_limit: Option<Size>,
    client_output_stall_secs: Option<u64>,
    worker_threads: Option<usize>,
    databases: Option<usize>,
    replicaof: Option<String>,
    settings: Option<std::collections::BTreeMap<String, toml::Value>>,
}

/// A byte count: an integer, or a string such as "64M" (see [`parse_size`]).
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    fn bytes(&self) -> Result<u64, String> {
        match self {
            Size::Bytes(n) => Ok(*n),
            Size::Text(t) => parse_size(t),
        }
    }
}

/// Parses `replicaof = "host port"`.
pub fn parse_replicaof(text: &str) -> Result<(String, u16), String> {
    let mut words = text.split_whitespace();
    match (
        words.next(),
        words.next().map(str::parse::<u16>),
        words.next(),
    ) {
        (Some(host), Some(Ok(port)), None) => Ok((host.to_string(), port)),
        _ => Err(format!("replicaof must be \"host port\", not \"{text}\"")),
    }
}

/// Parses a bind address (`127.0.0.1`, `::1`, `0.0.0.0`, `localhost`).
pub fn parse_bind(text: &str) -> Result<IpAddr, String> {
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    text.parse()
        .map_err(|_| format!("{text:?} is not an IP address to bind to"))
}

impl Config {
    /// Applies the TOML file at `path` over `self`.
    pub fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.apply_toml(&text)
            .map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            })
    }

    /// Applies TOML text over `self`.
    pub fn apply_toml(&mut self, text: &str) -> Result<(), String> {
        let file: FileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let size = |s: &Option<Size>, name: &str| -> Result<Option<u64>, String> {
            s.as_ref()
                .map(|s| s.bytes().map_err(|e| format!("{name}: {e}")))
                .transpose()
        };
        let usize_of = |v: u64, name: &str| -> Result<usize, String> {
            usize::try_from(v).map_err(|_| format!("{name}: {v} is too large"))
        };
        if let Some(p) = file.pool {
            self.pool = p;
        }
        if let Some(s) = size(&file.pool_size, "pool-size")? {
            self.pool_size = Some(s);
        }
        if let Some(s) = size(&file.pool_max, "pool-max")? {
            self.pool_max = Some(s);
        }
        if let Some(o) = file.ordered_index {
            self.ordered_index = o;
        }
        if let Some(p) = &file.point_index {
            self.point_index = p.parse().map_err(|e| format!("point-index: {e}"))?;
        }
        if let Some(d) = file.data_dir {
            self.data_dir = Some(d);
        }
        if let Some(t) = size(&file.tier_threshold, "tier-threshold")? {
            self.tier_threshold = Some(t);
        }
        if let Some(n) = size(&file.disk_log_size, "disk-log-size")? {
            self.disk_log_bytes = Some(n);
        }
        if let Some(c) = size(&file.cache_bytes, "cache-bytes")? {
            self.cache_bytes = Some(c);
        }
        if let Some(b) = &file.bind {
            self.bind = parse_bind(b).map_err(|e| format!("bind: {e}"))?;
        }
        if let Some(p) = file.port {
            self.port = p;
        }
        if let Some(p) = file.tls_port {
            self.tls_port = p;
        }
        if let Some(p) = file.requirepass {
            self.requirepass = if p.is_empty() { None } else { Some(p) };
        }
        if let Some(users) = file.user {
            self.users = users;
        }
        if let Some(path) = file.aclfile {
            self.aclfile = Some(path);
        }
        if let Some(p) = file.protected_mode {
            self.protected_mode = p;
        }
        if let Some(n) = file.maxclients {
            self.limits.maxclients = n;
        }
        if let Some(s) = size(&file.proto_max_bulk_len, "proto-max-bulk-len")? {
            self.limits.proto_max_bulk_len = usize_of(s, "proto-max-bulk-len")?;
        }
        if let Some(s) = size(&file.client_query_buffer_limit, "client-query-buffer-limit")? {
            self.limits.query_buffer_limit = usize_of(s, "client-query-buffer-limit")?;
        }
        if let Some(s) = size(
            &file.client_output_buffer_limit,
            "client-output-buffer-limit",
        )? {
            self.limits.output_buffer_limit = usize_of(s, "client-output-buffer-limit")?;
        }
        if let Some(s) = file.client_output_stall_secs {
            self.limits.output_stall = Duration::from_secs(s);
        }
        if let Some(n) = file.worker_threads {
            self.worker_threads = n;
        }
        if let Some(n) = file.databases {
            self.databases = n;
        }
        if let Some(text) = &file.replicaof {
            self.replicaof = Some(parse_replicaof(text)?);
        }
        for (name, value) in file.settings.unwrap_or_default() {
            let value = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                toml::Value::Boolean(b) => if b { "yes" } else { "no" }.to_string(),
                other => return Err(format!("settings.{name}: {other} is not a value")),
            };
            self.settings.retain(|(n, _)| *n != name);
            self.settings.push((name, value));
        }
        self.validate()
    }

    /// Checks values that cannot work together.
    pub fn validate(&self) -> Result<(), String> {
        if self.limits.maxclients == 0 {
            return Err("maxclients must be at least 1".into());
        }
        if self.limits.proto_max_bulk_len < 1024 {
            return Err("proto-max-bulk-len must be at least 1024 bytes".into());
        }
        if self.limits.query_buffer_limit < 64 << 10 {
            return Err("client-query-buffer-limit must be at least 64K".into());
        }
        if self.limits.output_buffer_limit < 64 << 10 {
            return Err("client-output-buffer-limit must be at least 64K".into());
        }
        if self.limits.output_stall.is_zero() {
            return Err("client-output-stall-secs must be at least 1".into());
        }
        if !(1..=persimmon_types::dbs::MAX_DATABASES).contains(&self.databases) {
            return Err(format!(
                "databases must be between 1 and {}",
                persimmon_types::dbs::MAX_DATABASES
            ));
        }
        if !(1..=64).contains(&self.worker_threads) {
            return Err("worker-threads must be between 1 and 64".into());
        }
        if matches!(&self.requirepass, Some(p) if p.len() > 512) {
            return Err("requirepass is longer than 512 bytes".into());
        }
        Settings::check_table(&self.settings).map_err(|e| format!("[settings]: {e}"))?;
        Ok(())
    }

    /// The run-time parameters this configuration sets, by name, as
    /// `CONFIG GET` shows them (`Settings::new` starts from these).
    pub fn startup_values(&self) -> Vec<(&'static str, String)> {
        let l = &self.limits;
        let pool_dir = self
            .pool
            .parent()
            .map(|p| p.display().to_string())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".into());
        vec![
            ("bind", self.bind.to_string()),
            ("port", self.port.to_string()),
            ("tls-port", self.tls_port.to_string()),
            ("protected-mode", yes_no(self.protected_mode).into()),
            ("requirepass", self.requirepass.clone().unwrap_or_default()),
            ("maxclients", l.maxclients.to_string()),
            ("proto-max-bulk-len", l.proto_max_bulk_len.to_string()),
            (
                "client-query-buffer-limit",
                l.query_buffer_limit.to_string(),
            ),
            (
                "client-output-buffer-limit",
                format!("normal {} 0 0 {OTHER_CLASSES}", l.output_buffer_limit),
            ),
            (
                "client-output-stall-secs",
                l.output_stall.as_secs().to_string(),
            ),
            ("dir", pool_dir),
            ("pool", self.pool.display().to_string()),
            ("ordered-index", yes_no(self.ordered_index).into()),
            ("point-index", self.point_index.name().into()),
            ("worker-threads", self.worker_threads.to_string()),
        ]
    }

    /// Engine options for opening the pool.
    pub fn engine_options(&self) -> Result<persimmon::Options, String> {
        let mut o = persimmon::Options {
            ordered_index: self.ordered_index,
            point_index: self.point_index,
            data_dir: self.data_dir.clone(),
            ..persimmon::Options::default()
        };
        if let Some(t) = self.tier_threshold {
            o.tier_threshold = t;
        }
        if let Some(n) = self.disk_log_bytes {
            o.disk_log_bytes = n;
        }
        if let Some(c) = self.cache_bytes {
            o.cache_bytes = c;
        }
        if let Some(max) = self.pool_max {
            o.pool_bytes_max = max;
        }
        if let Some(size) = self.pool_size {
            if size > o.pool_bytes_max {
                if self.pool_max.is_some() {
                    return Err(format!(
                        "pool-size {size} is larger than pool-max {}",
                        o.pool_bytes_max
                    ));
                }
                o.pool_bytes_max = size;
            }
            o.pool_bytes_initial = size;
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use persimmon::PointIndex;

    #[test]
    fn file_overrides_defaults() {
        let mut c = Config::default();
        c.apply_toml(
            r#"
            pool = "/dev/shm/x.pool"
            port = 7000
            bind = "::1"
            requirepass = "pw"
            pool-size = "128M"
            proto-max-bulk-len = 1048576
            client-output-stall-secs = 5
            tls-port = 7001
            "#,
        )
        .unwrap();
        assert_eq!(c.tls_port, 7001);
        assert!(c
            .startup_values()
            .contains(&("tls-port", "7001".to_string())));
        assert_eq!(c.pool, PathBuf::from("/dev/shm/x.pool"));
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(c.requirepass.as_deref(), Some("pw"));
        assert_eq!(c.pool_size, Some(128 << 20));
        assert_eq!(c.limits.proto_max_bulk_len, 1 << 20);
        assert_eq!(c.limits.output_stall, Duration::from_secs(5));
        assert_eq!(c.limits.maxclients, 10_000);
        assert!(!c.ordered_index);
        assert!(!c.engine_options().unwrap().ordered_index);
        c.apply_toml("ordered-index = true").unwrap();
        assert!(c.ordered_index);
        assert!(c.engine_options().unwrap().ordered_index);
        assert_eq!(c.point_index, PointIndex::Pm);
        assert_eq!(c.engine_options().unwrap().point_index, PointIndex::Pm);
        c.apply_toml("point-index = \"dram\"").unwrap();
        assert_eq!(c.point_index, PointIndex::Dram);
        let o = c.engine_options().unwrap();
        assert_eq!(o.point_index, PointIndex::Dram);
        assert!(o.ordered_index, "an earlier file's setting stays");
        c.apply_toml("point-index = \"pm\"").unwrap();
        assert_eq!(c.engine_options().unwrap().point_index, PointIndex::Pm);
    }

    #[test]
    fn point_index_takes_pm_or_dram_only() {
        let mut c = Config::default();
        for bad in ["\"DRAM \"", "\"nvm\"", "\"\"", "true", "1"] {
            let e = c.apply_toml(&format!("point-index = {bad}")).unwrap_err();
            assert!(
                e.contains("point-index") || e.contains("point_index"),
                "{bad}: {e}"
            );
            assert_eq!(c.point_index, PointIndex::Pm, "{bad}: unchanged");
        }
        let e = c.apply_toml("point-index = \"flash\"").unwrap_err();
        assert!(e.contains("pm or dram"), "{e}");
        // Both keys in one file.
        c.apply_toml("ordered-index = true\npoint-index = \"dram\"")
            .unwrap();
        assert!(c.ordered_index);
        assert_eq!(c.point_index, PointIndex::Dram);
    }

    #[test]
    fn the_settings_table_is_checked_as_config_set_checks() {
        let mut c = Config::default();
        c.apply_toml("[settings]\nmaxmemory = \"2mb\"\ntimeout = 30\nactiverehashing = false")
            .unwrap();
        assert_eq!(
            c.settings,
            vec![
                ("activerehashing".to_string(), "no".to_string()),
                ("maxmemory".to_string(), "2mb".to_string()),
                ("timeout".to_string(), "30".to_string()),
            ]
        );
        let e = c
            .apply_toml("[settings]\nmaxmemory = \"lots\"")
            .unwrap_err();
        assert!(e.contains("maxmemory"), "{e}");
        let e = Config::default()
            .apply_toml("[settings]\nport = 1")
            .unwrap_err();
        assert!(e.contains("immutable"), "{e}");
    }

    #[test]
    fn sizes_are_spelled_as_in_the_cli() {
        let mut c = Config::default();
        c.apply_toml("pool-size = \"1_000M\"").unwrap();
        assert_eq!(c.pool_size, Some(1000 << 20));
        c.apply_toml("pool-max = \"1.5G\"").unwrap();
        assert_eq!(c.pool_max, Some(3 << 29));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        let mut c = Config::default();
        assert!(c
            .apply_toml("prot = 1")
            .unwrap_err()
            .contains("unknown field"));
        assert!(c
            .apply_toml("pool-size = \"12Q\"")
            .unwrap_err()
            .contains("suffix"));
        assert!(c
            .apply_toml("maxclients = 0")
            .unwrap_err()
            .contains("maxclients"));
        assert!(c
            .apply_toml("bind = \"nowhere\"")
            .unwrap_err()
            .contains("bind"));
    }
}
