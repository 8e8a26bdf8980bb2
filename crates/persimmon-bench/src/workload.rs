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
//! | E | 95 % scan, 5 % insert | refused: no range scans yet |
//! | F | 50 % read, 50 % read-modify-write | zipfian |
//!
//! The MPKV paper's experiments (its §4; uniform keys):
//! `get-ratio:R` is R % GET and the rest PUT of existing keys (Figure 4,
//! and Figures 6–7 at 50 % and 95 % over a thread sweep); `value-size:B` is
//! 50 % GET with B-byte values (Figure 5).

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
}

/// Proportions of each operation; they add up to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub read_modify_write: f64,
}

impl Mix {
    const fn new(read: f64, update: f64, insert: f64, read_modify_write: f64) -> Mix {
        Mix {
            read,
            update,
            insert,
            read_modify_write,
        }
    }

    /// The operation for a uniform draw `u` in `[0, 1)`.
    pub fn choose(&self, u: f64) -> Op {
        if u < self.read {
            Op::Read
        } else if u < self.read + self.update {
            Op::Update
        } else if u < self.read + self.update + self.insert {
            Op::Insert
        } else if self.read_modify_write > 0.0 {
            Op::ReadModifyWrite
        } else if self.update > 0.0 {
            // Rounding at u close to 1.
            Op::Update
        } else {
            Op::Read
        }
    }
}

/// A workload named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadSpec {
    /// YCSB core workload `a`..=`f` (not `e`).
    Ycsb(char),
    /// This percentage of GETs, the rest PUTs of existing keys.
    GetRatio(u32),
    /// 50 % GET, 50 % PUT with values of this many bytes.
    ValueSize(usize),
}

impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadSpec::Ycsb(c) => write!(f, "ycsb-{c}"),
            WorkloadSpec::GetRatio(r) => write!(f, "get-ratio:{r}"),
            WorkloadSpec::ValueSize(b) => write!(f, "value-size:{b}"),
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
            WorkloadSpec::Ycsb('f') => Mix::new(0.5, 0.0, 0.0, 0.5),
            WorkloadSpec::Ycsb(other) => unreachable!("ycsb-{other} is refused when parsed"),
            WorkloadSpec::GetRatio(r) => {
                let read = f64::from(*r) / 100.0;
                Mix::new(read, 1.0 - read, 0.0, 0.0)
            }
            WorkloadSpec::ValueSize(_) => Mix::new(0.5, 0.5, 0.0, 0.0),
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

    /// The value size: `value-size:B` sets its own, the others use
    /// `default_bytes` (`--value-size`).
    pub fn value_size(&self, default_bytes: usize) -> usize {
        match self {
            WorkloadSpec::ValueSize(b) => *b,
            _ => default_bytes,
        }
    }

    /// Percentage of reads (GETs) in the mix.
    pub fn get_percent(&self) -> f64 {
        self.mix().read * 100.0
    }
}

/// Parses a comma-separated list of workloads. A bare number continues the
/// family before it: `get-ratio:0,50,95,100`, `value-size:64,256,1K,4K`.
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
                        "workload {item:?}: a bare number must follow get-ratio:R or value-size:B"
                    ))
                }
            },
            None => (item.clone(), None),
        };
        match (name.as_str(), arg) {
            ("ycsb", None) => {
                out.extend("abcdf".chars().map(WorkloadSpec::Ycsb));
                family = None;
            }
            ("ycsb-e", None) => {
                return Err(
                    "ycsb-e needs range scans, which Persimmon does not have yet (the ordered \
                     index is still to come); use ycsb-a, -b, -c, -d or -f"
                        .into(),
                )
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
                        format!("get-ratio:{r}: the ratio is a whole percentage from 0 to 100")
                    })?;
                out.push(WorkloadSpec::GetRatio(r));
                family = Some("get-ratio");
            }
            ("value-size", Some(b)) => {
                let bytes = crate::args::parse_size(&b)?;
                if bytes == 0 || bytes > persimmon::MAX_VALUE_BYTES as u64 {
                    return Err(format!(
                        "value-size:{b}: values are 1 to {} bytes",
                        persimmon::MAX_VALUE_BYTES
                    ));
                }
                out.push(WorkloadSpec::ValueSize(bytes as usize));
                family = Some("value-size");
            }
            _ => {
                return Err(format!(
                    "unknown workload {item:?}: use ycsb-a … ycsb-f (not e), ycsb (= a,b,c,d,f), \
                     get-ratio:R (R = 0..100) or value-size:B, in a comma list"
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
            "abcdf".chars().map(WorkloadSpec::Ycsb).collect::<Vec<_>>()
        );
        assert_eq!(
            parse_workloads("YCSB-A, ycsb-f").unwrap(),
            [WorkloadSpec::Ycsb('a'), WorkloadSpec::Ycsb('f')]
        );
        assert_eq!(WorkloadSpec::GetRatio(95).to_string(), "get-ratio:95");
        assert_eq!(WorkloadSpec::ValueSize(4096).value_size(64), 4096);
        assert_eq!(WorkloadSpec::Ycsb('a').value_size(64), 64);
    }

    #[test]
    fn bad_workloads_are_refused_with_a_reason() {
        let e = parse_workloads("ycsb-e").unwrap_err();
        assert!(e.contains("range scans"), "{e}");
        assert!(parse_workloads("ycsb-g").is_err());
        assert!(parse_workloads("get-ratio:101").is_err());
        assert!(parse_workloads("get-ratio:x").is_err());
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
    }
}
