//! Workloads: the operation mix, the value size and the default key
//! distribution of each benchmark point.
//!
//! YCSB core workloads (`ycsb-a` … `ycsb-f`, YCSB's `workloads/workload[a-f]`):
//!
//! | workload | mix | default keys |
//! |---|---|---|
//! | A | 50 % read, 50 % update | zipfian |
//! | B | 95 % read, 5 % update | zipfian |
//! | C | 100 % read | zipfian |
//! | D | 95 % read, 5 % insert | latest |
//! | E | 95 % scan, 5 % insert | zipfian (scan start) |
//! | F | 50 % read, 50 % read-modify-write | zipfian |
//!
//! A YCSB E scan reads 1 to 100 pairs (uniform; YCSB's default
//! `maxscanlength=100`, `scanlengthdistribution=uniform`) from an existing
//! key in key order. Scans need an engine with ordered reads
//! ([`crate::engines::EngineKind::has_ordered_reads`]); the run skips the
//! others for scanning workloads.
//!
//! Scans and inserts on their own: `scan:N` is 100 % scans of exactly N
//! pairs from a uniformly chosen existing key (`scan:10,100,1000` makes one
//! figure, items per second against N); `insert` is 100 % puts of new keys
//! (what the ordered index costs a writer).
//!
//! Atomic batches: `batch:N` is 100 % batches of N puts of existing keys
//! (N consecutive key indices from a chosen one, so N distinct keys, spread
//! over the key space by the scramble), each committed with one atomic
//! `Db::write`; its throughput counts keys written per second, and the run
//! measures the same keys as N single puts next to it
//! (`batch:1,10,100,1000` makes one figure against N).
//!
//! Batched reads: `multiget:N` is 100 % reads of N uniformly chosen
//! existing keys at once (Persimmon's `Db::get_many`, LMDB's N gets in one
//! read transaction, RocksDB's `multi_get`); its throughput counts keys read
//! per second (items/s), its operations are the batches
//! (`multiget:1,4,16,64` makes one figure against N).
//!
//! The MPKV paper's experiments (its §4; uniform keys):
//! `get-ratio:R` is R % GET and the rest PUT of existing keys (Figure 4,
//! and Figures 6–7 at 50 % and 95 % over a thread sweep); `value-size:B` is
//! 50 % GET with B-byte values (Figure 5).
//!
//! `pdv` is not a key-value workload: it is the persistent dancing variable
//! microbenchmark ([`crate::pdv`]), persisted updates of one variable per
//! thread, and runs alone.
//!
//! `restart` measures the reopen of a loaded store instead of a timed mix:
//! time to open, to the first served GET and range read, and to full GET
//! speed ([`crate::restart`]); it runs alone too.

use std::fmt;

use crate::distribution::Distribution;

/// One operation of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read an existing key.
    Read,
    /// Overwrite an existing key.
    Update,
    /// Insert a new key.
    Insert,
    /// Read a key and write it back, atomically.
    ReadModifyWrite,
    /// Read pairs in key order from an existing key.
    Scan,
    /// Write N existing keys (one atomic batch, or N single puts).
    Batch,
    /// Read N existing keys at once (one batched read).
    MultiGet,
}

/// Proportions of each operation; they add up to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub read_modify_write: f64,
    pub scan: f64,
    pub batch: f64,
    pub multiget: f64,
}

impl Mix {
    const fn new(read: f64, update: f64, insert: f64, read_modify_write: f64) -> Mix {
        Mix {
            read,
            update,
            insert,
            read_modify_write,
            scan: 0.0,
            batch: 0.0,
            multiget: 0.0,
        }
    }

    /// The same mix with this share of scans.
    const fn with_scan(self, scan: f64) -> Mix {
        Mix { scan, ..self }
    }

    /// The same mix with this share of batches.
    const fn with_batch(self, batch: f64) -> Mix {
        Mix { batch, ..self }
    }

    /// The same mix with this share of batched reads.
    const fn with_multiget(self, multiget: f64) -> Mix {
        Mix { multiget, ..self }
    }

    /// The operation for a uniform draw `u` in `[0, 1)`.
    pub fn choose(&self, u: f64) -> Op {
        let shares = [
            (Op::Read, self.read),
            (Op::Update, self.update),
            (Op::Insert, self.insert),
            (Op::Scan, self.scan),
            (Op::Batch, self.batch),
            (Op::MultiGet, self.multiget),
            (Op::ReadModifyWrite, self.read_modify_write),
        ];
        let mut below = 0.0;
        for (op, share) in shares {
            below += share;
            if u < below {
                return op;
            }
        }
        // Rounding at u close to 1: the last operation in the mix.
        shares
            .iter()
            .rev()
            .find(|(_, share)| *share > 0.0)
            .map_or(Op::Read, |(op, _)| *op)
    }
}

/// YCSB's default `maxscanlength`: a YCSB E scan reads 1 to this many pairs.
pub const YCSB_MAX_SCAN_LENGTH: usize = 100;

/// Most pairs a `scan:N` workload may ask for.
pub const MAX_SCAN_LENGTH: usize = 1_000_000;

/// Most keys a `multiget:N` workload may read at once.
pub const MAX_MULTIGET_KEYS: usize = 100_000;

/// How many pairs a scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanLength {
    /// Uniform in `1..=max` (YCSB's `scanlengthdistribution=uniform`).
    Uniform { max: usize },
    /// Exactly this many (fewer only at the end of the key space).
    Exactly(usize),
}

impl ScanLength {
    /// The length of the next scan.
    pub fn choose(&self, rng: &mut impl rand::Rng) -> usize {
        match *self {
            ScanLength::Uniform { max } => rng.gen_range(1..=max.max(1)),
            ScanLength::Exactly(n) => n,
        }
    }
}

/// A workload named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadSpec {
    /// YCSB core workload `a`..=`f`.
    Ycsb(char),
    /// Scans of exactly this many pairs, nothing else.
    Scan(usize),
    /// Puts of new keys, nothing else.
    Insert,
    /// Atomic batches of this many puts of existing keys, nothing else.
    Batch(usize),
    /// Batched reads of this many existing keys, nothing else.
    MultiGet(usize),
    /// This percentage of GETs, the rest PUTs of existing keys.
    GetRatio(u32),
    /// 50 % GET, 50 % PUT with values of this many bytes.
    ValueSize(usize),
    /// The PDV microbenchmark: persisted updates of one 8-byte variable per
    /// thread ([`crate::pdv`]); every operation is an update.
    Pdv,
    /// Reopen a loaded store and time it to first served requests and to
    /// full speed ([`crate::restart`]); the GETs it times are all reads.
    Restart,
}

impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadSpec::Ycsb(c) => write!(f, "ycsb-{c}"),
            WorkloadSpec::Scan(n) => write!(f, "scan:{n}"),
            WorkloadSpec::Insert => write!(f, "insert"),
            WorkloadSpec::Batch(n) => write!(f, "batch:{n}"),
            WorkloadSpec::MultiGet(n) => write!(f, "multiget:{n}"),
            WorkloadSpec::GetRatio(r) => write!(f, "get-ratio:{r}"),
            WorkloadSpec::ValueSize(b) => write!(f, "value-size:{b}"),
            WorkloadSpec::Pdv => write!(f, "pdv"),
            WorkloadSpec::Restart => write!(f, "restart"),
        }
    }
}

impl WorkloadSpec {
    /// The operation mix.
    pub fn mix(&self) -> Mix {
        match self {
            WorkloadSpec::Ycsb('a') => Mix::new(0.5, 0.5, 0.0, 0.0),
            WorkloadSpec::Ycsb('b') => Mix::new(0.95, 0.05, 0.0, 0.0),
            WorkloadSpec::Ycsb('c') => Mix::new(1.0, 0.0, 0.0, 0.0),
            WorkloadSpec::Ycsb('d') => Mix::new(0.95, 0.0, 0.05, 0.0),
            WorkloadSpec::Ycsb('e') => Mix::new(0.0, 0.0, 0.05, 0.0).with_scan(0.95),
            WorkloadSpec::Ycsb('f') => Mix::new(0.5, 0.0, 0.0, 0.5),
            WorkloadSpec::Ycsb(other) => unreachable!("ycsb-{other} is refused when parsed"),
            WorkloadSpec::Scan(_) => Mix::new(0.0, 0.0, 0.0, 0.0).with_scan(1.0),
            WorkloadSpec::Insert => Mix::new(0.0, 0.0, 1.0, 0.0),
            WorkloadSpec::Batch(_) => Mix::new(0.0, 0.0, 0.0, 0.0).with_batch(1.0),
            WorkloadSpec::MultiGet(_) => Mix::new(0.0, 0.0, 0.0, 0.0).with_multiget(1.0),
            WorkloadSpec::GetRatio(r) => {
                let read = f64::from(*r) / 100.0;
                Mix::new(read, 1.0 - read, 0.0, 0.0)
            }
            WorkloadSpec::ValueSize(_) => Mix::new(0.5, 0.5, 0.0, 0.0),
            WorkloadSpec::Pdv => Mix::new(0.0, 1.0, 0.0, 0.0),
            WorkloadSpec::Restart => Mix::new(1.0, 0.0, 0.0, 0.0),
        }
    }

    /// The key distribution when `--distribution` does not say: YCSB's own
    /// (zipfian; latest for D), uniform for the MPKV experiments.
    pub fn default_distribution(&self, theta: f64) -> Distribution {
        match self {
            WorkloadSpec::Ycsb('d') => Distribution::Latest { theta },
            WorkloadSpec::Ycsb(_) => Distribution::Zipfian { theta },
            _ => Distribution::Uniform,
        }
    }

    /// Whether the mix scans, so that only engines with ordered reads can
    /// run it.
    pub fn scans(&self) -> bool {
        self.mix().scan > 0.0
    }

    /// Keys one batch writes: N for `batch:N`, 0 for workloads without
    /// batches.
    pub fn batch_keys(&self) -> usize {
        match self {
            WorkloadSpec::Batch(n) => *n,
            _ => 0,
        }
    }

    /// Keys one batched read reads: N for `multiget:N`, 0 for workloads
    /// without batched reads.
    pub fn multiget_keys(&self) -> usize {
        match self {
            WorkloadSpec::MultiGet(n) => *n,
            _ => 0,
        }
    }

    /// How many pairs each scan reads: `scan:N` exactly N, else YCSB's
    /// default (uniform 1 to 100).
    pub fn scan_length(&self) -> ScanLength {
        match self {
            WorkloadSpec::Scan(n) => ScanLength::Exactly(*n),
            _ => ScanLength::Uniform {
                max: YCSB_MAX_SCAN_LENGTH,
            },
        }
    }

    /// The value size: `value-size:B` sets its own, the others use
    /// `default_bytes` (`--value-size`).
    pub fn value_size(&self, default_bytes: usize) -> usize {
        match self {
            WorkloadSpec::ValueSize(b) => *b,
            WorkloadSpec::Pdv => 8,
            _ => default_bytes,
        }
    }

    /// Percentage of reads (GETs, single or batched) in the mix.
    pub fn get_percent(&self) -> f64 {
        let mix = self.mix();
        (mix.read + mix.multiget) * 100.0
    }
}

/// Parses a comma-separated list of workloads. A bare number continues the
/// family before it: `get-ratio:0,50,95,100`, `value-size:64,256,1K,4K`,
/// `scan:10,100,1000`, `multiget:1,4,16,64`.
pub fn parse_workloads(text: &str) -> Result<Vec<WorkloadSpec>, String> {
    let mut out = Vec::new();
    let mut family: Option<&str> = None;
    for raw in text.split(',') {
        let item = raw.trim().to_ascii_lowercase();
        if item.is_empty() {
            return Err(format!("empty item in workload list {text:?}"));
        }
        let (name, arg) = match item.split_once(':') {
            Some((name, arg)) => (name.to_string(), Some(arg.to_string())),
            None if item.starts_with(|c: char| c.is_ascii_digit()) => match family {
                Some(f) => (f.to_string(), Some(item.clone())),
                None => {
                    return Err(format!(
                        "workload {item:?}: a bare number must follow get-ratio:R, value-size:B, \
                         scan:N, batch:N or multiget:N"
                    ))
                }
            },
            None => (item.clone(), None),
        };
        match (name.as_str(), arg) {
            ("ycsb", None) => {
                out.extend("abcdef".chars().map(WorkloadSpec::Ycsb));
                family = None;
            }
            ("insert", None) => {
                out.push(WorkloadSpec::Insert);
                family = None;
            }
            ("pdv", None) => {
                out.push(WorkloadSpec::Pdv);
                family = None;
            }
            ("restart", None) => {
                out.push(WorkloadSpec::Restart);
                family = None;
            }
            (y, None) if y.len() == 6 && y.starts_with("ycsb-") => {
                let c = y.as_bytes()[5] as char;
                if !('a'..='f').contains(&c) {
                    return Err(format!("unknown YCSB workload {y:?} (ycsb-a to ycsb-f)"));
                }
                out.push(WorkloadSpec::Ycsb(c));
                family = None;
            }
            ("get-ratio", Some(r)) => {
                let r: u32 = r
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .filter(|r| *r <= 100)
                    .ok_or_else(|| {
                        let hint = if r.contains('.') {
                            " (not a fraction: get-ratio:100 is all GETs, get-ratio:95 95 %)"
                        } else {
                            ""
                        };
                        format!(
                            "get-ratio:{r}: the ratio is a whole percentage from 0 to 100{hint}"
                        )
                    })?;
                out.push(WorkloadSpec::GetRatio(r));
                family = Some("get-ratio");
            }
            ("value-size", Some(b)) => {
                let bytes = persimmon::size::parse_size(&b)?;
                if bytes == 0 || bytes > persimmon::MAX_VALUE_BYTES as u64 {
                    return Err(format!(
                        "value-size:{b}: values are 1 to {} bytes",
                        persimmon::MAX_VALUE_BYTES
                    ));
                }
                out.push(WorkloadSpec::ValueSize(bytes as usize));
                family = Some("value-size");
            }
            ("scan", Some(n)) => {
                let n: usize = n
                    .replace('_', "")
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_SCAN_LENGTH).contains(n))
                    .ok_or_else(|| {
                        format!("scan:{n}: a scan reads 1 to {MAX_SCAN_LENGTH} pairs (digits)")
                    })?;
                out.push(WorkloadSpec::Scan(n));
                family = Some("scan");
            }
            ("batch", Some(n)) => {
                let n: usize = n
                    .replace('_', "")
                    .parse()
                    .ok()
                    .filter(|n| (1..=persimmon::MAX_BATCH_OPS).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "batch:{n}: a batch writes 1 to {} keys (digits; the engine's limit)",
                            persimmon::MAX_BATCH_OPS
                        )
                    })?;
                out.push(WorkloadSpec::Batch(n));
                family = Some("batch");
            }
            ("multiget", Some(n)) => {
                let n: usize = n
                    .replace('_', "")
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_MULTIGET_KEYS).contains(n))
                    .ok_or_else(|| {
                        format!("multiget:{n}: a batched read reads 1 to {MAX_MULTIGET_KEYS} keys (digits)")
                    })?;
                out.push(WorkloadSpec::MultiGet(n));
                family = Some("multiget");
            }
            _ => {
                return Err(format!(
                    "unknown workload {item:?}: use ycsb-a … ycsb-f, ycsb (= a to f), \
                     get-ratio:R (R = 0..100), value-size:B, scan:N, batch:N, multiget:N or \
                     insert, in a comma list; or pdv or restart alone"
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    fn observed(mix: &Mix, draws: usize) -> HashMap<Op, f64> {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut n: HashMap<Op, usize> = HashMap::new();
        for _ in 0..draws {
            *n.entry(mix.choose(rng.gen())).or_default() += 1;
        }
        n.into_iter()
            .map(|(op, c)| (op, c as f64 / draws as f64))
            .collect()
    }

    #[test]
    fn mixes_match_their_ratios() {
        let cases = [
            ("ycsb-a", vec![(Op::Read, 0.5), (Op::Update, 0.5)]),
            ("ycsb-b", vec![(Op::Read, 0.95), (Op::Update, 0.05)]),
            ("ycsb-c", vec![(Op::Read, 1.0)]),
            ("ycsb-d", vec![(Op::Read, 0.95), (Op::Insert, 0.05)]),
            ("ycsb-e", vec![(Op::Scan, 0.95), (Op::Insert, 0.05)]),
            ("scan:10", vec![(Op::Scan, 1.0)]),
            ("insert", vec![(Op::Insert, 1.0)]),
            ("batch:10", vec![(Op::Batch, 1.0)]),
            ("multiget:16", vec![(Op::MultiGet, 1.0)]),
            ("ycsb-f", vec![(Op::Read, 0.5), (Op::ReadModifyWrite, 0.5)]),
            ("get-ratio:0", vec![(Op::Update, 1.0)]),
            ("get-ratio:95", vec![(Op::Read, 0.95), (Op::Update, 0.05)]),
            ("value-size:256", vec![(Op::Read, 0.5), (Op::Update, 0.5)]),
        ];
        for (name, expected) in cases {
            let spec = parse_workloads(name).unwrap()[0];
            let got = observed(&spec.mix(), 200_000);
            assert_eq!(got.len(), expected.len(), "{name}: {got:?}");
            for (op, p) in expected {
                let q = got.get(&op).copied().unwrap_or(0.0);
                assert!((p - q).abs() < 0.005, "{name}: {op:?} {q}, expected {p}");
            }
        }
    }

    #[test]
    fn choose_never_leaves_the_mix() {
        let spec = WorkloadSpec::GetRatio(0);
        assert_eq!(spec.mix().choose(0.999_999_999), Op::Update);
        assert_eq!(
            WorkloadSpec::Ycsb('c').mix().choose(0.999_999_999),
            Op::Read
        );
        for u in [0.0, 0.5, 0.999_999_999, 1.0 - f64::EPSILON] {
            let op = WorkloadSpec::Ycsb('e').mix().choose(u);
            assert!(matches!(op, Op::Scan | Op::Insert), "{u}: {op:?}");
            assert_eq!(WorkloadSpec::Scan(10).mix().choose(u), Op::Scan);
            assert_eq!(WorkloadSpec::Insert.mix().choose(u), Op::Insert);
        }
    }

    #[test]
    fn lists_and_families_parse() {
        assert_eq!(
            parse_workloads("get-ratio:0,50,95,100").unwrap(),
            [0, 50, 95, 100].map(WorkloadSpec::GetRatio)
        );
        assert_eq!(
            parse_workloads("value-size:64,128,1K,4KiB").unwrap(),
            [64, 128, 1024, 4096].map(WorkloadSpec::ValueSize)
        );
        assert_eq!(
            parse_workloads("ycsb").unwrap(),
            "abcdef".chars().map(WorkloadSpec::Ycsb).collect::<Vec<_>>()
        );
        assert_eq!(
            parse_workloads("ycsb-e,scan:10,100,1_000,insert").unwrap(),
            [
                WorkloadSpec::Ycsb('e'),
                WorkloadSpec::Scan(10),
                WorkloadSpec::Scan(100),
                WorkloadSpec::Scan(1000),
                WorkloadSpec::Insert
            ]
        );
        assert_eq!(WorkloadSpec::Scan(100).to_string(), "scan:100");
        assert_eq!(WorkloadSpec::Insert.to_string(), "insert");
        assert_eq!(
            parse_workloads("batch:1,10,1_000,100000").unwrap(),
            [1, 10, 1000, 100_000].map(WorkloadSpec::Batch)
        );
        assert_eq!(WorkloadSpec::Batch(100).to_string(), "batch:100");
        assert_eq!(
            parse_workloads("multiget:1,4,16,64").unwrap(),
            [1, 4, 16, 64].map(WorkloadSpec::MultiGet)
        );
        assert_eq!(
            parse_workloads("get-ratio:100,MULTIGET:16").unwrap(),
            [WorkloadSpec::GetRatio(100), WorkloadSpec::MultiGet(16)]
        );
        assert_eq!(WorkloadSpec::MultiGet(16).to_string(), "multiget:16");
        assert_eq!(WorkloadSpec::MultiGet(16).multiget_keys(), 16);
        assert_eq!(WorkloadSpec::MultiGet(16).batch_keys(), 0);
        assert_eq!(WorkloadSpec::Batch(16).multiget_keys(), 0);
        assert_eq!(WorkloadSpec::MultiGet(16).get_percent(), 100.0);
        assert!(!WorkloadSpec::MultiGet(16).scans());
        assert_eq!(
            WorkloadSpec::MultiGet(16).default_distribution(0.99),
            Distribution::Uniform
        );
        assert_eq!(WorkloadSpec::Batch(100).batch_keys(), 100);
        assert_eq!(WorkloadSpec::Insert.batch_keys(), 0);
        assert_eq!(WorkloadSpec::Batch(100).get_percent(), 0.0);
        assert!(!WorkloadSpec::Batch(100).scans());
        assert!(WorkloadSpec::Ycsb('e').scans() && WorkloadSpec::Scan(1).scans());
        assert!(!WorkloadSpec::Ycsb('d').scans() && !WorkloadSpec::Insert.scans());
        assert_eq!(
            parse_workloads("YCSB-A, ycsb-f").unwrap(),
            [WorkloadSpec::Ycsb('a'), WorkloadSpec::Ycsb('f')]
        );
        assert_eq!(WorkloadSpec::GetRatio(95).to_string(), "get-ratio:95");
        assert_eq!(WorkloadSpec::ValueSize(4096).value_size(64), 4096);
        assert_eq!(WorkloadSpec::Ycsb('a').value_size(64), 64);
        assert_eq!(parse_workloads("PDV").unwrap(), [WorkloadSpec::Pdv]);
        assert_eq!(WorkloadSpec::Pdv.to_string(), "pdv");
        assert_eq!(WorkloadSpec::Pdv.value_size(64), 8);
        assert_eq!(WorkloadSpec::Pdv.get_percent(), 0.0);
        assert_eq!(parse_workloads("restart").unwrap(), [WorkloadSpec::Restart]);
        assert_eq!(WorkloadSpec::Restart.to_string(), "restart");
        assert_eq!(WorkloadSpec::Restart.get_percent(), 100.0);
        assert!(!WorkloadSpec::Restart.scans());
        assert_eq!(WorkloadSpec::Restart.value_size(64), 64);
    }

    #[test]
    fn bad_workloads_are_refused_with_a_reason() {
        assert!(parse_workloads("ycsb-g").is_err());
        assert!(parse_workloads("scan:0").is_err());
        assert!(parse_workloads("scan:1K").is_err());
        assert!(parse_workloads("scan").is_err());
        assert!(parse_workloads("batch:0").is_err());
        assert!(parse_workloads("batch:100001")
            .unwrap_err()
            .contains("1 to 100000 keys"));
        assert!(parse_workloads("batch").is_err());
        assert!(parse_workloads("multiget").is_err());
        assert!(parse_workloads("multiget:0").is_err());
        assert!(parse_workloads("multiget:1K").is_err());
        assert!(parse_workloads("multiget:100001")
            .unwrap_err()
            .contains("1 to 100000 keys"));
        assert!(parse_workloads("multiget:16,x").is_err());
        assert!(parse_workloads("insert:5").is_err());
        assert!(parse_workloads("restart:3").is_err());
        assert!(parse_workloads("get-ratio:101").is_err());
        assert!(parse_workloads("get-ratio:x").is_err());
        assert!(parse_workloads("get-ratio:1.0")
            .unwrap_err()
            .contains("get-ratio:100 is all GETs"));
        assert!(parse_workloads("50").unwrap_err().contains("bare number"));
        assert!(parse_workloads("value-size:0").is_err());
        assert!(parse_workloads("nope")
            .unwrap_err()
            .contains("unknown workload"));
        assert!(parse_workloads("ycsb-a,").is_err());
    }

    #[test]
    fn default_distributions_follow_ycsb_and_the_paper() {
        let t = 0.99;
        assert_eq!(
            WorkloadSpec::Ycsb('a').default_distribution(t),
            Distribution::Zipfian { theta: t }
        );
        assert_eq!(
            WorkloadSpec::Ycsb('d').default_distribution(t),
            Distribution::Latest { theta: t }
        );
        assert_eq!(
            WorkloadSpec::GetRatio(50).default_distribution(t),
            Distribution::Uniform
        );
        assert_eq!(
            WorkloadSpec::Ycsb('e').default_distribution(t),
            Distribution::Zipfian { theta: t }
        );
        assert_eq!(
            WorkloadSpec::Scan(10).default_distribution(t),
            Distribution::Uniform
        );
    }

    #[test]
    fn scan_lengths_follow_ycsb_or_the_workload() {
        let mut rng = SmallRng::seed_from_u64(5);
        let e = WorkloadSpec::Ycsb('e').scan_length();
        assert_eq!(e, ScanLength::Uniform { max: 100 });
        let lengths: Vec<usize> = (0..20_000).map(|_| e.choose(&mut rng)).collect();
        assert_eq!(lengths.iter().min(), Some(&1));
        assert_eq!(lengths.iter().max(), Some(&100));
        let mean = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
        assert!((mean - 50.5).abs() < 1.5, "mean {mean}");
        assert_eq!(
            WorkloadSpec::Scan(1000).scan_length().choose(&mut rng),
            1000
        );
    }
}
