//! The engines the benchmark can run: their names on the command line and
//! in the results, and what each one's adapter can do.
//!
//! Invariants: [`EngineKind::ALL`] lists every engine once, in the order
//! `--engines` help and the results use; a capability (`has_*`, `on_data_dir`,
//! `splits_values`) is true only where the engine's adapter implements it,
//! since the run skips or refuses work by these answers and never calls a
//! [`Store`](super::store::Store) method an engine lacks.

use crate::error::{Error, Result};

/// An engine the benchmark can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Persimmon with all three MPKV mechanisms (the default options).
    Persimmon,
    /// The default options plus the ordered index (`ordered_index: true`):
    /// the pool keeps a persistent skiplist over the keys.
    PersimmonOrdered,
    /// The ordered index plus the point index in DRAM
    /// (`point_index: PointIndex::Dram`): rebuilt from the ordered index
    /// after every open, which serves point reads until then.
    PersimmonDram,
    /// `PersimmonDram` with the ordered index as the skiplist of format
    /// versions 2–5 (`ordered_layout: OrderedLayout::Skiplist`) instead of
    /// leaves: what the leaves replaced, for comparison.
    PersimmonDramSkiplist,
    /// `Options::baseline()`: the MPKV paper's Baseline, all mechanisms off.
    Baseline,
    /// All mechanisms but the volatile lock table.
    NoVolatileLocks,
    /// All mechanisms but lock-free reads (two-phase atomic write).
    NoLockFreeReads,
    /// All mechanisms but concurrent write elimination.
    NoWriteElimination,
    /// LMDB through `heed` (feature `lmdb`).
    Lmdb,
    /// RocksDB through `rocksdb` (feature `rocksdb`).
    Rocksdb,
    /// The default options with the SSD tier (`Options::data_dir`): values
    /// of at least `--tier-threshold` bytes in data files, the ACS read
    /// cache in DRAM.
    PersimmonTiered,
    /// RocksDB with blob files (its key-value separation: values of at
    /// least `--tier-threshold` bytes in blob files; feature `rocksdb`).
    RocksdbBlob,
}

/// Alias in `--engines` for the Baseline and the three one-off variants.
const ABLATION: [EngineKind; 4] = [
    EngineKind::Baseline,
    EngineKind::NoVolatileLocks,
    EngineKind::NoLockFreeReads,
    EngineKind::NoWriteElimination,
];

impl EngineKind {
    pub const ALL: [EngineKind; 12] = [
        EngineKind::Persimmon,
        EngineKind::PersimmonOrdered,
        EngineKind::PersimmonDram,
        EngineKind::PersimmonDramSkiplist,
        EngineKind::PersimmonTiered,
        EngineKind::Baseline,
        EngineKind::NoVolatileLocks,
        EngineKind::NoLockFreeReads,
        EngineKind::NoWriteElimination,
        EngineKind::Lmdb,
        EngineKind::Rocksdb,
        EngineKind::RocksdbBlob,
    ];

    /// The name used on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Persimmon => "persimmon",
            EngineKind::PersimmonOrdered => "persimmon-ordered",
            EngineKind::PersimmonDram => "persimmon-dram",
            EngineKind::PersimmonDramSkiplist => "persimmon-dram-skiplist",
            EngineKind::Baseline => "baseline",
            EngineKind::NoVolatileLocks => "no-volatile-locks",
            EngineKind::NoLockFreeReads => "no-lock-free-reads",
            EngineKind::NoWriteElimination => "no-write-elimination",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::PersimmonTiered => "persimmon-tiered",
            EngineKind::RocksdbBlob => "rocksdb-blob",
        }
    }

    /// Whether the engine reads keys in order, so it can run scans
    /// ([`Store::scan`]).
    ///
    /// [`Store::scan`]: super::store::Store::scan
    pub fn has_ordered_reads(self) -> bool {
        matches!(
            self,
            EngineKind::PersimmonOrdered
                | EngineKind::PersimmonDram
                | EngineKind::PersimmonDramSkiplist
                | EngineKind::Lmdb
                | EngineKind::Rocksdb
                | EngineKind::RocksdbBlob
        )
    }

    /// Whether the engine's adapter commits atomic batches
    /// ([`Store::write_batch`]).
    ///
    /// [`Store::write_batch`]: super::store::Store::write_batch
    pub fn has_batches(self) -> bool {
        self.is_persimmon()
    }

    /// Whether the engine's adapter writes keys with deadlines
    /// ([`Store::write_with_deadline`]).
    ///
    /// [`Store::write_with_deadline`]: super::store::Store::write_with_deadline
    pub fn has_expiry(self) -> bool {
        self.is_persimmon()
    }

    /// Whether the engine is Persimmon (or one of its variants).
    pub fn is_persimmon(self) -> bool {
        !self.is_rocksdb() && self != EngineKind::Lmdb
    }

    /// Whether the engine is RocksDB (with blob files or without).
    pub fn is_rocksdb(self) -> bool {
        matches!(self, EngineKind::Rocksdb | EngineKind::RocksdbBlob)
    }

    /// Whether the engine keeps data on the SSD, in `--data-dir` when it
    /// is given: persimmon-tiered its data files, the peers everything.
    pub fn on_data_dir(self) -> bool {
        !self.is_persimmon() || self == EngineKind::PersimmonTiered
    }

    /// Whether the engine keeps values of at least `--tier-threshold`
    /// bytes apart from the keys (persimmon-tiered's SSD extents,
    /// rocksdb-blob's blob files).
    pub fn splits_values(self) -> bool {
        matches!(self, EngineKind::PersimmonTiered | EngineKind::RocksdbBlob)
    }

    /// Whether the engine has a DRAM cache that `--cache-bytes` sizes
    /// (persimmon-tiered's ACS cache, RocksDB's block cache).
    pub fn has_cache(self) -> bool {
        self.is_rocksdb() || self == EngineKind::PersimmonTiered
    }

    /// Whether this build has the engine's adapter.
    pub fn built(self) -> bool {
        let lmdb_ok = self != EngineKind::Lmdb || cfg!(feature = "lmdb");
        let rocksdb_ok = !self.is_rocksdb() || cfg!(feature = "rocksdb");
        lmdb_ok && rocksdb_ok
    }

    /// Parses `persimmon,baseline,lmdb,...` (`ablation` stands for baseline
    /// and the three no-* variants). Duplicates are dropped, order is kept.
    pub fn parse_list(text: &str) -> Result<Vec<EngineKind>, String> {
        let mut out: Vec<EngineKind> = Vec::new();
        for raw in text.split(',') {
            let name = raw.trim().to_ascii_lowercase();
            let kinds: Vec<EngineKind> = if name == "ablation" {
                ABLATION.to_vec()
            } else {
                match EngineKind::ALL.iter().find(|k| k.name() == name) {
                    Some(k) => vec![*k],
                    None => {
                        let names: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                        return Err(format!(
                            "unknown engine {name:?}: use {} or ablation (= baseline and the three no-* variants)",
                            names.join(", ")
                        ));
                    }
                }
            };
            for k in kinds {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        Ok(out)
    }

    /// An error unless this build has the adapter.
    pub fn check_built(self) -> Result<()> {
        if self.built() {
            return Ok(());
        }
        let feature = if self.is_rocksdb() { "rocksdb" } else { "lmdb" };
        Err(Error::usage(format!(
            "this build has no {} adapter: the peers are behind cargo features; rebuild with \
             `cargo build --release -p persimmon-cli --features peers` (or --features {feature})",
            self.name(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lists_parse_with_the_ablation_alias() {
        assert_eq!(
            EngineKind::parse_list("persimmon, ablation,lmdb,baseline").unwrap(),
            vec![
                EngineKind::Persimmon,
                EngineKind::Baseline,
                EngineKind::NoVolatileLocks,
                EngineKind::NoLockFreeReads,
                EngineKind::NoWriteElimination,
                EngineKind::Lmdb,
            ]
        );
        let e = EngineKind::parse_list("persimmon,sqlite").unwrap_err();
        assert!(e.contains("sqlite") && e.contains("rocksdb"), "{e}");
        for k in EngineKind::ALL {
            assert_eq!(EngineKind::parse_list(k.name()).unwrap(), vec![k]);
        }
    }

    #[test]
    fn only_the_ordered_engines_scan() {
        let scanning: Vec<&str> = EngineKind::ALL
            .into_iter()
            .filter(|k| k.has_ordered_reads())
            .map(EngineKind::name)
            .collect();
        assert_eq!(
            scanning,
            [
                "persimmon-ordered",
                "persimmon-dram",
                "persimmon-dram-skiplist",
                "lmdb",
                "rocksdb",
                "rocksdb-blob"
            ]
        );
        assert_eq!(
            EngineKind::parse_list("persimmon-ordered,persimmon").unwrap(),
            [EngineKind::PersimmonOrdered, EngineKind::Persimmon]
        );
        assert_eq!(
            EngineKind::parse_list("persimmon-dram").unwrap(),
            [EngineKind::PersimmonDram]
        );
        assert!(!ABLATION.iter().any(|k| k.has_ordered_reads()));
    }

    #[test]
    fn missing_peer_adapters_say_how_to_build_them() {
        if !cfg!(feature = "rocksdb") {
            for kind in [EngineKind::Rocksdb, EngineKind::RocksdbBlob] {
                let e = kind.check_built().unwrap_err().to_string();
                assert!(e.contains("--features peers"), "{e}");
                assert!(e.contains(kind.name()), "{e}");
            }
        }
        assert!(EngineKind::Persimmon.check_built().is_ok());
        assert!(EngineKind::PersimmonTiered.check_built().is_ok());
    }

    #[test]
    fn the_tier_engines_parse_and_say_where_their_data_lives() {
        assert_eq!(
            EngineKind::parse_list("persimmon-tiered,rocksdb-blob,lmdb").unwrap(),
            [
                EngineKind::PersimmonTiered,
                EngineKind::RocksdbBlob,
                EngineKind::Lmdb
            ]
        );
        let on_ssd: Vec<&str> = EngineKind::ALL
            .into_iter()
            .filter(|k| k.on_data_dir())
            .map(EngineKind::name)
            .collect();
        assert_eq!(
            on_ssd,
            ["persimmon-tiered", "lmdb", "rocksdb", "rocksdb-blob"]
        );
        let cached: Vec<&str> = EngineKind::ALL
            .into_iter()
            .filter(|k| k.has_cache())
            .map(EngineKind::name)
            .collect();
        assert_eq!(cached, ["persimmon-tiered", "rocksdb", "rocksdb-blob"]);
        let tiered = EngineKind::PersimmonTiered;
        assert!(tiered.is_persimmon() && tiered.has_batches() && tiered.has_expiry());
        assert!(!tiered.has_ordered_reads());
        assert!(EngineKind::RocksdbBlob.is_rocksdb() && !EngineKind::RocksdbBlob.is_persimmon());
        let e = EngineKind::parse_list("persimmon-tierd").unwrap_err();
        assert!(
            e.contains("persimmon-tiered") && e.contains("rocksdb-blob"),
            "{e}"
        );
    }
}
