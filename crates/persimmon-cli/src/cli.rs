//! Command-line syntax (clap derive). The help texts here are the user
//! documentation of the command; keep them in step with the code.
//!
//! Invariants: flag names, defaults and the exit statuses in
//! `AFTER_HELP` are the command's interface (scripts use them); sizes parse
//! with `persimmon::size`, so `--pool-size` takes the spellings the
//! server's config file and the benchmark take.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use persimmon::size::parse_size;
use persimmon::{PointIndex, MAX_BATCH_OPS};
use persimmon_bench::args::{parse_cache_list, CacheList};

use crate::expiry::parse_ttl;
use crate::failure::Failure;

/// Records per atomic batch of `load` unless `--batch` says otherwise: 0.04
/// fences per record (a put costs 2) and, measured, as fast as any size;
/// 10 and 10 000 were slower (BENCHMARKS.md, "Batches, transactions and
/// expiry").
pub const DEFAULT_LOAD_BATCH: usize = 100;

const AFTER_HELP: &str = "\
Exit status: 0 success; 1 key not found (get, ttl, del); 2 error (bad input, \
unreadable file, not a pool, pool in use, scan on a pool without the ordered \
index, ...); 3 check found the pool inconsistent. Errors are printed on stderr \
as `persimmon: <error>`.";

const FORMAT_HELP: &str = "\
Format: one record per line, key<TAB>value<LF>. Inside keys and values the \
escapes \\t (tab), \\n (line feed), \\r (carriage return), \\\\ (backslash) \
and \\xHH (any byte) are decoded; every other byte stands for itself. Lines \
end at LF only (a CR before it is part of the value).";

/// Persimmon: a crash-safe key-value store for persistent memory.
#[derive(Parser, Debug)]
#[command(name = "persimmon", version, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub pool: PoolArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Which pool to open, and how big to make it.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Pool options")]
pub struct PoolArgs {
    /// Pool file. put, load, demo and serve create it when missing; the
    /// other commands need it to exist.
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        default_value = "persimmon.pool"
    )]
    pub pool: PathBuf,

    /// Initial size of a pool this command creates; ignored when the pool
    /// exists. Suffixes K, M, G, T are powers of 1024 [default: 64M]
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_size)]
    pub pool_size: Option<u64>,

    /// Largest size the pool file may grow to while this command runs
    /// (address space for it is reserved at open) [default: 64G]
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_size)]
    pub pool_max: Option<u64>,

    /// Create the pool with the ordered index over the keys, needed by scan
    /// and the server's KRANGE and KPREFIX (writes cost more). Its layout
    /// follows --point-index: with pm, a persistent skiplist; with dram,
    /// leaves of up to 60 record words each, from which the DRAM point
    /// index is rebuilt. Creation only: ignored for an existing pool, which
    /// keeps the setting it was created with
    #[arg(long, global = true)]
    pub ordered_index: bool,

    /// Where a pool this command creates keeps its point index (key to
    /// record): pm, in persistent memory, usable the moment the pool opens;
    /// or dram, in DRAM, which makes point reads touch persistent memory
    /// only for the record but is rebuilt after every open from the ordered
    /// index (which serves point reads, more slowly, until the rebuild is
    /// done); dram needs --ordered-index. Creation only, like
    /// --ordered-index [default: pm]
    #[arg(long, global = true, value_name = "PLACE", value_parser = point_index_parser())]
    pub point_index: Option<PointIndex>,

    /// Create the pool with an SSD tier in this directory (on an ordinary
    /// file system, created if missing): values of at least
    /// --tier-threshold bytes are written there as aligned extents, the
    /// pool keeps their keys, addresses, checksums and unaligned tails.
    /// Creation only; the pool remembers its directory, so later commands
    /// need only --pool (a different directory is refused)
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Values of at least this many bytes go to the SSD tier (with
    /// --data-dir; creation only; at least 4K) [default: 4K]
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_size)]
    pub tier_threshold: Option<u64>,

    /// DRAM for the read cache of values on the SSD tier (ACS); 0 turns it
    /// off [default: 1/8 of RAM, at most 4G]. (`bench` has its own
    /// `--cache-bytes`, a list with percentages; the two share one parser
    /// because clap hands a global's value to the parent under its name)
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_cache_list)]
    pub cache_bytes: Option<CacheList>,
}

impl PoolArgs {
    /// `--cache-bytes` as one size in bytes.
    pub fn cache_bytes(&self) -> Result<Option<u64>, Failure> {
        let bytes = self.cache_bytes.as_ref().map(CacheList::fixed_bytes);
        bytes.transpose().map_err(Failure::error)
    }
}

/// `--point-index`: `pm` or `dram` (clap lists them on a bad value).
fn point_index_parser() -> impl TypedValueParser<Value = PointIndex> {
    PossibleValuesParser::new(["pm", "dram"]).map(|s| {
        s.parse::<PointIndex>()
            .expect("only the possible values get here")
    })
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Store VALUE under KEY, replacing any value it had (durable on exit 0);
    /// with --ttl, the key expires SECS seconds later
    Put(PutArgs),
    /// Print the value of KEY and a newline on stdout; exit 1 when KEY is absent
    Get(KeyArgs),
    /// Print the time KEY has left before it expires, or `no deadline`;
    /// exit 1 when KEY is absent (or expired)
    #[command(
        long_about = "Print the time KEY has left before it expires, as `S.sss s left, expires at \
YYYY-MM-DDTHH:MM:SS.sssZ` (seconds, then the deadline in UTC), or `no deadline` for a key that \
never expires. Exit 1 when KEY is absent or has expired, as get does. Deadlines are set by \
`persimmon put --ttl SECS`."
    )]
    Ttl(KeyArgs),
    /// Delete KEY; exit 1 when KEY was absent
    Del(KeyArgs),
    /// Load key<TAB>value lines from FILE (or stdin) into the pool, --batch
    /// records per atomic batch
    #[command(after_help = FORMAT_HELP)]
    Load(LoadArgs),
    /// Write every record to stdout as key<TAB>value lines, in no particular order
    #[command(
        long_about = "Write every record to stdout as key<TAB>value lines, in no particular order \
(`persimmon scan --values` writes them in key order, on a pool with the ordered index).\n\n\
Tab, line feed and backslash are written as \\t, \\n and \\\\, every byte that \
is not part of valid UTF-8 as \\xHH; valid UTF-8 (non-ASCII included) is \
written as is. `persimmon load` reads this back exactly, for any binary keys \
and values."
    )]
    Dump,
    /// Print keys in ascending byte order (needs a pool created with
    /// --ordered-index)
    #[command(
        long_about = "Print keys in ascending byte order, one per line (with --values: key, a tab, \
the value), from the pool's ordered index; the pool must have been created with \
--ordered-index (exit 2 otherwise).\n\n\
--from is inclusive and --to exclusive: `--from a --to c` prints every key k with \
a <= k < c. --prefix keeps the keys that start with PREFIX; given with --from or --to \
it narrows their range further (the intersection). --rev prints the same keys in \
descending order; --limit stops after N lines (the first N in the chosen order).\n\n\
Keys and values are escaped as dump writes them (\\t, \\n, \\\\ and \\xHH for bytes \
that are not valid UTF-8), so every key prints on one line and `persimmon scan \
--values` output loads back with `persimmon load`. Keys written or deleted while the \
scan runs may or may not appear; every key present for the whole scan is printed \
exactly once, in order.",
        after_help = "Examples:\n  \
persimmon scan --pool P --prefix user: --limit 10\n  \
persimmon scan --pool P --from 2024-01 --to 2024-02 --values\n  \
persimmon scan --pool P --rev --limit 1            # the greatest key\n  \
persimmon scan --pool P -e --prefix 'bin\\x00'      # escapes in the arguments\n  \
persimmon dump --pool OLD | persimmon load --pool NEW --ordered-index   # add an ordered index"
    )]
    Scan(ScanArgs),
    /// Show figures about the pool (keys, sizes, segments, durability, ...)
    Stats(StatsArgs),
    /// Verify the whole pool; exit 3 when it is inconsistent
    #[command(
        long_about = "Verify the whole pool: every index entry names a record with a valid \
CRC in the right place, live bytes and the key count match. Prints a report \
(keys, segments, live bytes, one line per error). Exit 0 when the pool is \
consistent, 3 when it is not, 2 when it cannot be opened (missing, not a \
pool, damaged superblock, in use)."
    )]
    Check,
    /// Benchmark: put N keys, read them back and verify them, reopen the pool
    #[command(
        long_about = "Benchmark and smoke test. Creates the pool (or reopens it; see --fresh), puts N keys (8-digit \
decimal keys such as 00000042, zero-padded further for N above 10^8) with \
VALUE_BYTES-byte values derived from the key, reads every key back and \
verifies its value, then closes and reopens the pool. Reports put and get \
rates, pool bytes per key, the open time (Db::open plus the first get) and the \
persistent-memory work per operation (bytes written, cache-line flushes and \
fences, measured on the calling thread). Exit 0 only when every value \
verified.\n\n\
The pool is left in place for stats or check. A pool on an ordinary file system is \
in the disk domain: each put returns once its write-ahead log (POOL.wal) is synced \
by fdatasync, and the demo puts from one thread, so its put rate there is the \
device's sync rate (concurrent writers share one fdatasync: group commit); use \
/dev/shm or a DAX mount to see memory speed."
    )]
    Demo(DemoArgs),
    /// Benchmark Persimmon against its Baseline, ablation variants and peers
    /// (YCSB, the MPKV paper's experiments), or probe the machine's limits
    #[command(
        long_about = "Benchmark Persimmon against its Baseline, its ablation variants and its \
peers (LMDB, RocksDB) in one process and one run: YCSB core workloads A-F and the \
MPKV paper's experiments (GET ratio, value size, thread sweeps), range scans of N pairs \
(scan:N, items/s), inserts of new keys (insert), atomic batches of N puts (batch:N, keys \
written per second and PM work per key, next to the same keys as N single puts) and batched \
reads of N keys (multiget:N, keys read per second). \
--deadline-fraction F loads a fraction F of the keys with a deadline a day ahead and writes \
them with it, to compare GET and PUT with and without expiry. Scans need ordered reads \
(persimmon-ordered, the pool with the ordered index; persimmon-dram, the same with the point \
index in DRAM; lmdb, rocksdb); the other engines skip scanning workloads with a note. Each engine gets a fresh \
store in its own directory under --pool-dir, is loaded with the same keys, warmed up, then \
timed; every operation is timed individually (HDR histograms). Prints one row per \
(engine, workload, threads, value size) and writes --json, --markdown (tables with the \
first engine's ratio to each other one) and --plot (SVG).\n\n\
--workload restart times reopens instead: each engine is loaded and closed, then reopened \
3 times; it reports the time to open, to the first served GET and range read, to the end of \
Persimmon's background work after open (the DRAM point index's rebuild included) and to full \
GET speed (medians).\n\n\
--probe measures the machine instead: dependent random-load latency on a pool-sized file \
mapping in --pool-dir and non-temporal write bandwidth. --report FILES renders earlier \
JSON results (bench and probe) without running anything.\n\n\
The global --pool-size and --pool-max set Persimmon's initial and largest pool size (and \
LMDB's map size); --pool, --ordered-index and --point-index are not used (the engine names \
choose them). lmdb and rocksdb need a build with \
`--features peers`.",
        after_help = "Examples:\n  \
persimmon bench --engines persimmon,baseline,lmdb,rocksdb --workload get-ratio:0,50,95,100 \
--keys 1000000 --threads 2 --duration-secs 10 --json fig4.json --plot fig4.svg\n  \
persimmon bench --engines persimmon,persimmon-ordered,persimmon-dram --workload restart \
--keys 1000000 --json restart.json\n  \
persimmon bench --probe --json probe.json\n  \
persimmon bench --report fig4.json,probe.json --markdown fig4.md"
    )]
    Bench(Box<persimmon_bench::BenchArgs>),
    /// Serve the pool over the Redis protocol (RESP2/RESP3) until SIGINT,
    /// SIGTERM or SHUTDOWN
    #[command(
        long_about = "Serve the pool over the Redis protocol (RESP2 and RESP3) for unmodified \
Redis clients and tools (redis-cli, redis-benchmark, client libraries). Creates the pool when \
it is missing (with --ordered-index: with the ordered index that KRANGE and KPREFIX need; with \
--point-index dram as well: with its point index in DRAM, rebuilt after every start). \
Prints `persimmon: listening on ADDR (pool P, durability D: an acknowledged write survives S)` once ready and runs \
until SIGINT, SIGTERM or a client's SHUTDOWN, then closes the pool cleanly. Every write is \
durable before its reply is sent, an EXEC as one crash-atomic batch; key deadlines \
(EXPIRE, SET EX) survive a restart.\n\n\
Security as in Redis: binds to loopback by default; without a password, clients from other \
addresses are refused (protected mode); with --requirepass every command but AUTH, HELLO and \
QUIT needs authentication first.",
        after_help = "Config file (TOML, every key optional; flags win over it):\n  \
pool = \"/dev/shm/app.pool\"   pool-size = \"64M\"   pool-max = \"64G\"   ordered-index = false\n  \
point-index = \"pm\"  (or \"dram\": needs ordered-index = true)\n  \
bind = \"127.0.0.1\"   port = 6479   requirepass = \"...\"   protected-mode = true\n  \
maxclients = 10000   proto-max-bulk-len = \"512M\"   client-query-buffer-limit = \"1G\"\n  \
client-output-buffer-limit = \"512M\"   client-output-stall-secs = 60   worker-threads = 2\n  \
databases = 16  (SELECT 0..15; database 0 holds the pool's plain keys)\n  \
replicaof = \"10.0.0.5 6379\"  (follow a master, Persimmon or redis-server; REPLICAOF at run time)\n  \
data-dir = \"/data/tier\"   tier-threshold = \"4K\"   cache-bytes = \"2G\"\n  \
disk-log-size = \"64M\"  (a pool on an ordinary file system: its write-ahead log's ring)\n\n\
Redis commands: COMMAND DOCS lists every one with its summary; docs/redis-suite.md has \
what Redis 7.0.15's own test suite passes."
    )]
    Serve(Box<ServeArgs>),
}

#[derive(Args, Debug)]
pub struct PutArgs {
    /// Key (raw bytes, at most 64 KiB)
    #[arg(value_name = "KEY")]
    pub key: OsString,
    /// Value (raw bytes, at most 64 MiB)
    #[arg(value_name = "VALUE")]
    pub value: OsString,
    /// Decode backslash escapes (\t \n \r \\ \xHH) in KEY and VALUE, as load does
    #[arg(short, long)]
    pub escaped: bool,
    /// Expire the key SECS seconds from now (a whole number, at least 1):
    /// from then on it reads as absent (and is deleted in the background
    /// while a process, such as serve, has the pool open).
    /// Without --ttl the key has no deadline (a put replaces one it had). A
    /// deadline raises the pool to format version 4 (builds before it
    /// cannot open it)
    #[arg(long, value_name = "SECS", value_parser = parse_ttl, allow_hyphen_values = true)]
    pub ttl: Option<u64>,
}

#[derive(Args, Debug)]
pub struct KeyArgs {
    /// Key (raw bytes)
    #[arg(value_name = "KEY")]
    pub key: OsString,
    /// Decode backslash escapes (\t \n \r \\ \xHH) in KEY; get also prints
    /// the value escaped, as dump does
    #[arg(short, long)]
    pub escaped: bool,
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Input file; stdin when absent or `-`
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Records per atomic batch (1 to 100000): each batch is committed
    /// all-or-nothing, so a crash leaves a prefix of whole batches; 1 puts
    /// the records one at a time. Batches of 2 or more raise the pool to
    /// format version 4 (builds before it cannot open it)
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_LOAD_BATCH,
        value_parser = parse_batch,
        allow_hyphen_values = true
    )]
    pub batch: usize,
}

/// `--batch`: 1 to `MAX_BATCH_OPS` records.
fn parse_batch(text: &str) -> Result<usize, String> {
    match text.trim().replace('_', "").parse::<usize>() {
        Ok(n @ 1..=MAX_BATCH_OPS) => Ok(n),
        Ok(0) => Err("a batch holds at least 1 record".into()),
        Ok(_) => Err(format!(
            "a batch holds at most {MAX_BATCH_OPS} records (the engine's limit)"
        )),
        Err(_) => Err(format!(
            "{text:?} is not a whole number of records (digits, `_` allowed)"
        )),
    }
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Print keys from KEY on (inclusive)
    #[arg(long, value_name = "KEY")]
    pub from: Option<OsString>,
    /// Print keys below KEY (exclusive)
    #[arg(long, value_name = "KEY")]
    pub to: Option<OsString>,
    /// Print only keys starting with PREFIX (intersected with --from/--to)
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<OsString>,
    /// Descending order
    #[arg(long)]
    pub rev: bool,
    /// Print at most N keys
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print key<TAB>value lines (the format load reads) instead of keys
    #[arg(long)]
    pub values: bool,
    /// Decode backslash escapes (\t \n \r \\ \xHH) in --from, --to and
    /// --prefix, as load does (the output is always escaped)
    #[arg(short, long)]
    pub escaped: bool,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of keys to put and read back
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub keys: u64,
    /// Size of each value in bytes (suffixes K, M as for --pool-size)
    #[arg(long, value_name = "BYTES", default_value_t = 64, value_parser = parse_size)]
    pub value_bytes: u64,
    /// Start from an empty pool: delete the pool at PATH first if it exists
    /// (only if it is a Persimmon pool no one has open)
    #[arg(long)]
    pub fresh: bool,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// TCP port to listen on; 0 picks a free one [default: 6479]
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Address to listen on [default: 127.0.0.1]
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// Password clients must give (AUTH, or HELLO 3 AUTH default PASSWORD)
    /// before any other command
    #[arg(long, value_name = "PASSWORD")]
    pub requirepass: Option<String>,
    /// A user, as redis.conf's `user` lines: `alice on >pw ~app:* +@read`
    /// (repeatable; not with --aclfile)
    #[arg(long, value_name = "RULES")]
    pub user: Vec<String>,
    /// ACL file of users (`user NAME RULES` lines), loaded at start; ACL
    /// LOAD and ACL SAVE read and write it
    #[arg(long, value_name = "FILE")]
    pub aclfile: Option<PathBuf>,
    /// Most clients connected at once [default: 10000]
    #[arg(long, value_name = "N")]
    pub maxclients: Option<usize>,
    /// TLS port to listen on beside --port (0: none); with --port 0, TLS
    /// only. Needs --tls-cert-file, --tls-key-file and (unless
    /// --tls-auth-clients no) --tls-ca-cert-file or --tls-ca-cert-dir
    #[arg(long, value_name = "N")]
    pub tls_port: Option<u16>,
    /// The server's certificate (PEM; a chain, leaf first)
    #[arg(long, value_name = "FILE")]
    pub tls_cert_file: Option<String>,
    /// The server's private key (PEM, unencrypted)
    #[arg(long, value_name = "FILE")]
    pub tls_key_file: Option<String>,
    /// CA certificates that clients' and the master's certificates are checked against
    #[arg(long, value_name = "FILE")]
    pub tls_ca_cert_file: Option<String>,
    /// A directory of CA certificates (PEM files)
    #[arg(long, value_name = "DIR")]
    pub tls_ca_cert_dir: Option<String>,
    /// Client certificates: yes (required), optional, no [default: yes]
    #[arg(long, value_name = "yes|optional|no")]
    pub tls_auth_clients: Option<String>,
    /// yes: a replica connects to its master over TLS [default: no]
    #[arg(long, value_name = "yes|no")]
    pub tls_replication: Option<String>,
    /// Certificate this server presents as a TLS client (to a master); else --tls-cert-file
    #[arg(long, value_name = "FILE")]
    pub tls_client_cert_file: Option<String>,
    /// Key of --tls-client-cert-file
    #[arg(long, value_name = "FILE")]
    pub tls_client_key_file: Option<String>,
    /// TLS versions allowed: "TLSv1.2 TLSv1.3" [default: both]
    #[arg(long, value_name = "LIST")]
    pub tls_protocols: Option<String>,
    /// TLS 1.2 ciphers (OpenSSL names, e.g. ECDHE-RSA-AES128-GCM-SHA256)
    #[arg(long, value_name = "LIST")]
    pub tls_ciphers: Option<String>,
    /// TLS 1.3 suites (e.g. TLS_AES_128_GCM_SHA256)
    #[arg(long, value_name = "LIST")]
    pub tls_ciphersuites: Option<String>,
    /// TOML configuration file (see below)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Whether --pool was given on the command line (it then wins over the
    /// config file's `pool`); set by `main`.
    #[arg(skip)]
    pub pool_given: bool,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
