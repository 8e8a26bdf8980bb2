//! Persimmon and its ablation variants: the default options (all three MPKV
//! mechanisms), `Options::baseline()` (none), and each mechanism switched
//! off alone; and `persimmon-ordered`, the default options with the
//! ordered index (a persistent skiplist over the keys, linked by every put
//! of a new key), and `persimmon-dram`, the same with the point index in
//! DRAM (rebuilt from the ordered index after every open): the variants
//! that can scan; and `persimmon-tiered`, the default options with the SSD
//! tier (`Options::data_dir`, `tier_threshold`, `cache_bytes` from the
//! run's `--data-dir`, `--tier-threshold` and `--cache-bytes`).
//!
//! Only persimmon-tiered has a data directory, so only it has an ACS cache:
//! the other variants open with `cache_bytes = 0`, as they ran before the
//! tier existed.
//!
//! After the load phase ([`Store::finish_load`]) the adapter waits for the
//! pool's background work after open (`Db::wait_for_rebuild`), so a timed
//! phase never runs next to it.
//!
//! Batches ([`Store::write_batch`]) are one `WriteBatch` committed with
//! `Db::write`, built inside the timed call as a user would build it;
//! deadlines go through `Db::put_with_deadline` and
//! `WriteBatch::put_with_deadline`. A batched read
//! ([`Store::read_many`], `multiget:N`) is one `Db::get_many_with`.

use std::path::PathBuf;

use persimmon::size::human_bytes;
use persimmon::{Db, Mechanisms, Options, OrderedLayout, PointIndex, Update, WriteBatch};

use super::batch::Batch;
use super::figures::{Background, Space, TierFigures};
use super::kind::EngineKind;
use super::store::{OpenConfig, Store};
use crate::disk::filesystem_of;
use crate::error::{Error, Result};

/// A Persimmon pool in its engine directory.
pub struct PersimmonStore {
    name: &'static str,
    mechanisms: Mechanisms,
    /// persimmon-tiered's SSD tier settings (`None` for the other variants).
    tier: Option<Tier>,
    db: Db,
}

/// The SSD tier settings a persimmon-tiered store was opened with.
struct Tier {
    data_dir: PathBuf,
    threshold_bytes: u64,
    cache_bytes: u64,
    cache_policy: Option<persimmon::CachePolicy>,
}

impl Tier {
    /// The settings of `config`'s store; creates its data directory.
    fn create(config: &OpenConfig) -> Result<Tier> {
        let data_dir = config
            .data_dir
            .clone()
            .unwrap_or_else(|| config.dir.join("data"));
        std::fs::create_dir_all(&data_dir).map_err(|e| Error::file("create", &data_dir, e))?;
        Ok(Tier {
            data_dir,
            threshold_bytes: config.tier_threshold,
            cache_bytes: config
                .cache_bytes
                .unwrap_or_else(persimmon::default_cache_bytes),
            cache_policy: config.cache_policy,
        })
    }

    /// `options` with this tier.
    fn apply(&self, options: Options) -> Options {
        Options {
            data_dir: Some(self.data_dir.clone()),
            tier_threshold: self.threshold_bytes,
            cache_bytes: self.cache_bytes,
            cache_policy: self.cache_policy.unwrap_or(options.cache_policy),
            ..options
        }
    }

    /// The tier's part of the durability settings, with the figures the
    /// engine's stats `s` give (I/O mode, cache policy).
    fn describe(&self, s: &persimmon::Stats) -> String {
        let fs = filesystem_of(&self.data_dir).unwrap_or_else(|| "unknown file system".into());
        let io = if s.ssd_direct_io {
            "O_DIRECT"
        } else {
            "buffered (no O_DIRECT here)"
        };
        format!(
            "; SSD tier: values >= {} B in data files in {} ({fs}, {io}), each value's aligned \
             part an extent written and synced (group commit: one fdatasync for the concurrent \
             writers) before the pool record that points to it is published, the unaligned tail \
             in the record; ACS read cache {} in DRAM, policy {} (filled on a miss, updated on \
             writes)",
            self.threshold_bytes,
            self.data_dir.display(),
            human_bytes(self.cache_bytes),
            s.cache_policy,
        )
    }
}

/// The engine options of `kind` (a Persimmon variant).
pub fn options(kind: EngineKind) -> Options {
    let all = Mechanisms::ALL;
    let mechanisms = match kind {
        EngineKind::Baseline => return Options::baseline(),
        EngineKind::NoVolatileLocks => Mechanisms {
            volatile_lock_table: false,
            ..all
        },
        EngineKind::NoLockFreeReads => Mechanisms {
            lock_free_reads: false,
            ..all
        },
        EngineKind::NoWriteElimination => Mechanisms {
            write_elimination: false,
            ..all
        },
        EngineKind::Persimmon => all,
        EngineKind::PersimmonOrdered => {
            return Options {
                ordered_index: true,
                ..Options::default()
            }
        }
        EngineKind::PersimmonDram => {
            return Options {
                ordered_index: true,
                point_index: PointIndex::Dram,
                ..Options::default()
            }
        }
        EngineKind::PersimmonDramSkiplist => {
            return Options {
                ordered_index: true,
                point_index: PointIndex::Dram,
                ordered_layout: OrderedLayout::Skiplist,
                ..Options::default()
            }
        }
        EngineKind::PersimmonTiered => all,
        EngineKind::Lmdb | EngineKind::Rocksdb | EngineKind::RocksdbBlob => {
            unreachable!("not a Persimmon variant")
        }
    };
    Options {
        mechanisms,
        ..Options::default()
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

impl PersimmonStore {
    pub fn open(kind: EngineKind, config: &OpenConfig) -> Result<PersimmonStore> {
        let options = Options {
            pool_bytes_initial: config.pool_bytes_initial,
            pool_bytes_max: config.pool_bytes_max.max(config.pool_bytes_initial),
            cache_bytes: 0,
            ..options(kind)
        };
        let tier = match kind {
            EngineKind::PersimmonTiered => Some(Tier::create(config)?),
            _ => None,
        };
        let options = match &tier {
            Some(t) => t.apply(options),
            None => options,
        };
        let mechanisms = options.mechanisms;
        let path = config.dir.join("persimmon.pool");
        let db = Db::open(&path, options).map_err(|e| Error::engine(kind.name(), e))?;
        Ok(PersimmonStore {
            name: kind.name(),
            mechanisms,
            tier,
            db,
        })
    }

    fn fail(&self, e: persimmon::Error) -> Error {
        Error::engine(self.name, e)
    }
}

impl Store for PersimmonStore {
    fn durability(&self) -> String {
        let s = self.db.stats();
        let m = self.mechanisms;
        let ordered = match self.db.ordered_layout() {
            Some(OrderedLayout::Skiplist) => {
                "; ordered index on (a persistent skiplist: a put of a new key also links a \
                 node, overwrites do not; a scan = Db::scan_with from the start key, pairs \
                 copied out)"
            }
            Some(OrderedLayout::Leaves) => {
                "; ordered index on (leaves of record words: a put of a new key reserves an \
                 entry, a full leaf splits; a scan = Db::scan_with from the start key, pairs \
                 copied out)"
            }
            None => "",
        };
        let point = match self.db.point_index() {
            PointIndex::Pm => "; point index in PM",
            PointIndex::Dram => {
                "; point index in DRAM (not persisted: rebuilt from the ordered index after \
                 every open, which serves point reads until then; a point read touches PM only \
                 for the record)"
            }
        };
        format!(
            "pool durability {} (flush {}, nt copy {}); a put or update is durable on return \
             (record flushed and fenced, then slot flushed and fenced); {} lanes; mechanisms: \
             volatile lock table {}, lock-free reads {}, write elimination {}{ordered}{point}{tier}",
            s.durability.name(),
            s.flush_instruction,
            s.nt_copy,
            s.lanes,
            on_off(m.volatile_lock_table),
            on_off(m.lock_free_reads),
            on_off(m.write_elimination),
            tier = self
                .tier
                .as_ref()
                .map(|t| t.describe(&s))
                .unwrap_or_default(),
        )
    }

    fn load(&self, batch: &Batch) -> Result<()> {
        for (key, value, deadline) in batch.iter_with_deadlines() {
            self.write_expiring(key, value, deadline)?;
        }
        Ok(())
    }

    fn finish_load(&self) -> Result<()> {
        self.db.wait_for_rebuild();
        Ok(())
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let found = self
            .db
            .get_with(key, |v| {
                out.clear();
                out.extend_from_slice(v);
            })
            .map_err(|e| self.fail(e))?;
        Ok(found.is_some())
    }

    fn read_many(&self, keys: &[&[u8]], out: &mut Vec<u8>) -> Result<u64> {
        let mut found = 0;
        self.db
            .get_many_with(keys, |_, v| {
                if let Some(v) = v {
                    out.clear();
                    out.extend_from_slice(v);
                    found += 1;
                }
            })
            .map_err(|e| self.fail(e))?;
        Ok(found)
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put(key, value).map_err(|e| self.fail(e))
    }

    fn write_with_deadline(&self, key: &[u8], value: &[u8], deadline_ms: u64) -> Result<()> {
        self.db
            .put_with_deadline(key, value, deadline_ms)
            .map_err(|e| self.fail(e))
    }

    fn write_batch(&self, batch: &Batch) -> Result<()> {
        let mut b = WriteBatch::new();
        for (key, value, deadline) in batch.iter_with_deadlines() {
            match deadline {
                Some(d) => b.put_with_deadline(key, value, d),
                None => b.put(key, value),
            };
        }
        self.db.write(&b).map_err(|e| self.fail(e))
    }

    fn read_modify_write(&self, key: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.db
            .update(key, |old| {
                out.clear();
                if let Some(old) = old {
                    out.extend_from_slice(old);
                }
                (Update::Put(value.to_vec()), old.is_some())
            })
            .map_err(|e| self.fail(e))
    }

    fn scan(&self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        self.db
            .scan_with(start.., count, |key, value| {
                out.clear();
                out.extend_from_slice(key);
                out.extend_from_slice(value);
                true
            })
            .map_err(|e| self.fail(e))
    }

    fn eliminated_writes(&self) -> u64 {
        self.db.stats().eliminated_puts
    }

    fn background(&self) -> Option<Background> {
        let s = self.db.stats();
        Some(Background {
            rebuild_done: s.rebuild_done,
            ordered_walk_done: s.ordered_walk_done,
            point_index_ready: s.point_index_ready,
            point_index_in_dram: s.point_index == PointIndex::Dram,
            dram_index_bytes: s.dram_index_bytes,
        })
    }

    fn wait_for_background(&self) {
        self.db.wait_for_rebuild();
    }

    fn space(&self) -> Option<Space> {
        Some(Space::from(&self.db.stats()))
    }

    fn cache_bytes(&self) -> u64 {
        self.tier.as_ref().map_or(0, |t| t.cache_bytes)
    }

    fn tier(&self) -> Option<TierFigures> {
        self.tier.as_ref()?;
        Some(TierFigures::from(&self.db.stats()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_switches_off_exactly_its_mechanism() {
        assert_eq!(options(EngineKind::Persimmon).mechanisms, Mechanisms::ALL);
        assert_eq!(options(EngineKind::Baseline).mechanisms, Mechanisms::NONE);
        let off = |k| {
            let m: Mechanisms = options(k).mechanisms;
            [
                m.volatile_lock_table,
                m.lock_free_reads,
                m.write_elimination,
            ]
        };
        assert_eq!(off(EngineKind::NoVolatileLocks), [false, true, true]);
        assert_eq!(off(EngineKind::NoLockFreeReads), [true, false, true]);
        assert_eq!(off(EngineKind::NoWriteElimination), [true, true, false]);
        assert!(options(EngineKind::PersimmonOrdered).ordered_index);
        assert_eq!(
            options(EngineKind::PersimmonOrdered).mechanisms,
            Mechanisms::ALL
        );
        assert!(!options(EngineKind::Persimmon).ordered_index);
        let dram = options(EngineKind::PersimmonDram);
        assert!(dram.ordered_index);
        assert_eq!(dram.point_index, PointIndex::Dram);
        assert_eq!(dram.mechanisms, Mechanisms::ALL);
        assert_eq!(
            options(EngineKind::PersimmonTiered).mechanisms,
            Mechanisms::ALL
        );
        for k in EngineKind::ALL.into_iter().filter(|k| k.is_persimmon()) {
            if !matches!(
                k,
                EngineKind::PersimmonDram | EngineKind::PersimmonDramSkiplist
            ) {
                assert_eq!(options(k).point_index, PointIndex::Pm, "{k:?}");
            }
        }
    }
}
