//! What a Persimmon store tells of itself, taken from its `Stats`: the SSD
//! tier's counters, the space its keys take, and how far its background
//! work after open has come.
//!
//! Invariants: plain copies of the engine's figures at one moment; only
//! [`TierFigures::since`] combines two of them (counters subtract, space is
//! the later one's). Engines that do not tell have none of them
//! (`Store` returns `None`).

/// An SSD tier's counters since open and its space, as its stats tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierFigures {
    /// ACS cache lookups that found the value, and those that read the SSD.
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Data-file syncs (group commit: one per batch of concurrent writers)
    /// and extents written.
    pub syncs: u64,
    pub extents_written: u64,
    /// Bytes the data files take on the file system, and the extent bytes
    /// live records name.
    pub ssd_bytes: u64,
    pub ssd_live_bytes: u64,
}

impl TierFigures {
    /// The counters from `earlier` to `self` (the space figures are
    /// `self`'s).
    pub fn since(&self, earlier: &TierFigures) -> TierFigures {
        TierFigures {
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            cache_misses: self.cache_misses.saturating_sub(earlier.cache_misses),
            syncs: self.syncs.saturating_sub(earlier.syncs),
            extents_written: self.extents_written.saturating_sub(earlier.extents_written),
            ..*self
        }
    }
}

impl From<&::persimmon::Stats> for TierFigures {
    fn from(s: &::persimmon::Stats) -> TierFigures {
        TierFigures {
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            syncs: s.ssd_syncs,
            extents_written: s.ssd_extents_written,
            ssd_bytes: s.ssd_bytes,
            ssd_live_bytes: s.ssd_live_bytes,
        }
    }
}

/// The space a Persimmon pool's keys take, as its stats tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Space {
    pub keys: u64,
    /// Bytes of segments in use (`Stats::used_bytes`).
    pub used_bytes: u64,
    /// Bytes of records the index references (`Stats::live_bytes`).
    pub live_bytes: u64,
}

impl From<&::persimmon::Stats> for Space {
    fn from(s: &::persimmon::Stats) -> Space {
        let (keys, used_bytes, live_bytes) = (s.keys, s.used_bytes, s.live_bytes);
        Space {
            keys,
            used_bytes,
            live_bytes,
        }
    }
}

/// The background work after open of a Persimmon pool, as its stats tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Background {
    /// Space accounting and the key count are rebuilt (`rebuild_done`).
    pub rebuild_done: bool,
    /// The ordered index's walk after open has ended (true without one).
    pub ordered_walk_done: bool,
    /// The point index answers every point read (always with the PM point
    /// index; with the DRAM one, once it is rebuilt).
    pub point_index_ready: bool,
    /// The point index is in DRAM (`PointIndex::Dram`).
    pub point_index_in_dram: bool,
    /// DRAM the point index occupies (0 unless it is in DRAM).
    pub dram_index_bytes: u64,
}

impl Background {
    /// Everything `Db::wait_for_rebuild` waits for is done.
    pub fn done(&self) -> bool {
        self.rebuild_done && self.ordered_walk_done && self.point_index_ready
    }
}
