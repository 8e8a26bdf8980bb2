//! `persimmon serve`: the RESP server (crate `persimmon-server`) behind a
//! few lines: settings are the defaults, then the config file, then flags.
//!
//! Invariant: a flag wins over the config file only when it was given;
//! `--pool`'s default in particular never overrides the file's `pool`
//! ([`note_pool_source`] records whether it was given).

use std::io::Write;

use clap::parser::ValueSource;
use clap::ArgMatches;

use crate::cli::{Cli, Command, PoolArgs, ServeArgs};
use crate::failure::Failure;

/// Records whether `--pool` came from the command line (its default must
/// not override a config file's `pool`).
pub fn note_pool_source(cli: &mut Cli, matches: &ArgMatches) {
    if let Command::Serve(args) = &mut cli.command {
        let source = matches
            .subcommand_matches("serve")
            .and_then(|m| m.value_source("pool"))
            .or_else(|| matches.value_source("pool"));
        args.pool_given = source == Some(ValueSource::CommandLine);
    }
}

/// The `--tls-*` flags given, as run-time settings by name.
fn tls_settings(args: &ServeArgs) -> Vec<(&'static str, &String)> {
    [
        ("tls-cert-file", &args.tls_cert_file),
        ("tls-key-file", &args.tls_key_file),
        ("tls-ca-cert-file", &args.tls_ca_cert_file),
        ("tls-ca-cert-dir", &args.tls_ca_cert_dir),
        ("tls-auth-clients", &args.tls_auth_clients),
        ("tls-replication", &args.tls_replication),
        ("tls-client-cert-file", &args.tls_client_cert_file),
        ("tls-client-key-file", &args.tls_client_key_file),
        ("tls-protocols", &args.tls_protocols),
        ("tls-ciphers", &args.tls_ciphers),
        ("tls-ciphersuites", &args.tls_ciphersuites),
    ]
    .into_iter()
    .filter_map(|(name, value)| value.as_ref().map(|v| (name, v)))
    .collect()
}

pub fn run(pool: &PoolArgs, args: ServeArgs) -> Result<(), Failure> {
    let mut config = persimmon_server::Config::default();
    if let Some(path) = &args.config {
        config
            .apply_file(path)
            .map_err(|e| Failure::error(e.to_string()))?;
    }
    if args.pool_given || args.config.is_none() {
        config.pool = pool.pool.clone();
    }
    if pool.pool_size.is_some() {
        config.pool_size = pool.pool_size;
    }
    if pool.pool_max.is_some() {
        config.pool_max = pool.pool_max;
    }
    if pool.ordered_index {
        config.ordered_index = true;
    }
    if pool.data_dir.is_some() {
        config.data_dir = pool.data_dir.clone();
    }
    if pool.tier_threshold.is_some() {
        config.tier_threshold = pool.tier_threshold;
    }
    if let Some(c) = pool.cache_bytes()? {
        config.cache_bytes = Some(c);
    }
    if let Some(place) = pool.point_index {
        config.point_index = place;
    }
    if let Some(port) = args.port {
        config.port = port;
    }
    if let Some(bind) = &args.bind {
        config.bind = persimmon_server::parse_bind(bind)
            .map_err(|e| Failure::error(format!("--bind: {e}")))?;
    }
    if let Some(port) = args.tls_port {
        config.tls_port = port;
    }
    for (name, value) in tls_settings(&args) {
        config.settings.retain(|(n, _)| n != name);
        config.settings.push((name.to_string(), value.clone()));
    }
    if let Some(password) = args.requirepass {
        config.requirepass = (!password.is_empty()).then_some(password);
    }
    if !args.user.is_empty() {
        config.users = args.user;
    }
    if let Some(path) = args.aclfile {
        config.aclfile = Some(path);
    }
    if let Some(n) = args.maxclients {
        config.limits.maxclients = n;
    }
    config.validate().map_err(Failure::error)?;
    let pool_path = config.pool.clone();
    // Whoever started the server may stop reading its output after the
    // listening line: a closed stdout must not stop (or panic) the server.
    persimmon_server::run(config, args.config.clone(), |ready| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "persimmon: {ready}").and_then(|()| out.flush());
    })
    .map_err(|e| Failure::error(e.to_string()))?;
    let _ = writeln!(
        std::io::stdout(),
        "persimmon: pool {} closed",
        pool_path.display()
    );
    Ok(())
}
