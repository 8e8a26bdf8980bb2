//! `persimmon_options`: the C form of the engine's `Options`, its defaults,
//! and the conversion that checks it.
//!
//! Invariants: `persimmon_options_init` fills exactly the engine's defaults;
//! a field C can set to a value Rust cannot hold (an unknown point-index
//! code) is refused as `PERSIMMON_INVALID_ARGUMENT`, never transmuted.

use std::ffi::{c_char, c_int};

use engine::{FlushMode, PointIndex};

use crate::call::{guard, Failure};
use crate::raw;
use crate::status::Status;

/// `persimmon_options.point_index`: the point index in persistent memory.
pub const PERSIMMON_POINT_INDEX_PM: u32 = 0;
/// `persimmon_options.point_index`: the point index in DRAM, rebuilt at
/// every open (needs `ordered_index`).
pub const PERSIMMON_POINT_INDEX_DRAM: u32 = 1;

/// Options for `persimmon_open`. Start from `persimmon_options_init`, then
/// change fields. Fields marked *creation* are written into the pool when
/// it is created and ignored when an existing pool is opened.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Create the pool file when it does not exist (default true).
    pub create: bool,
    /// *Creation*: keep the ordered index, which serves `persimmon_range`
    /// and `persimmon_prefix` (default false).
    pub ordered_index: bool,
    /// *Creation*: `PERSIMMON_POINT_INDEX_PM` (default) or
    /// `PERSIMMON_POINT_INDEX_DRAM`.
    pub point_index: u32,
    /// *Creation*: initial size of the pool file in bytes (default 64 MiB).
    pub pool_bytes_initial: u64,
    /// Largest size the pool file may grow to, in bytes (default 64 GiB;
    /// address space for it is reserved at open).
    pub pool_bytes_max: u64,
    /// *Creation*: segment size in bytes, a power of two from 64 KiB to
    /// 64 MiB (default 1 MiB).
    pub segment_bytes: u64,
    /// Log lanes, 1 to 254 (default: 4 per core, at most 64).
    pub lanes: u32,
    /// Run the background log cleaner (default true).
    pub cleaner: bool,
    /// Run the background expiry of keys whose deadline passed (default
    /// true; expired keys read as absent either way).
    pub active_expiry: bool,
    /// Verify every record's checksum on read (default false).
    pub verify_reads: bool,
    /// The platform flushes CPU caches on power loss (eADR): skip cache-line
    /// flushes, keep fences (default false).
    pub eadr: bool,
    /// *Creation*: directory of the SSD tier's data files for large values;
    /// NULL (default): every value lives in the pool. The string is copied
    /// by `persimmon_open`.
    pub data_dir: *const c_char,
    /// *Creation*: values of at least this many bytes go to the SSD tier
    /// (default 4096; only with `data_dir`).
    pub tier_threshold: u64,
    /// Bytes of DRAM for the SSD tier's read cache (0: none; default an
    /// eighth of physical memory, at most 4 GiB).
    pub cache_bytes: u64,
}

impl Options {
    /// The engine's defaults in C form.
    pub fn defaults() -> Options {
        let d = engine::Options::default();
        Options {
            create: d.create,
            ordered_index: d.ordered_index,
            point_index: PERSIMMON_POINT_INDEX_PM,
            pool_bytes_initial: d.pool_bytes_initial,
            pool_bytes_max: d.pool_bytes_max,
            segment_bytes: d.segment_bytes,
            lanes: d.lanes as u32,
            cleaner: d.cleaner,
            active_expiry: d.active_expiry,
            verify_reads: d.verify_reads,
            eadr: d.flush_mode == FlushMode::Eadr,
            data_dir: std::ptr::null(),
            tier_threshold: d.tier_threshold,
            cache_bytes: d.cache_bytes,
        }
    }

    /// The engine's options (the engine checks the ranges at open).
    ///
    /// # Safety
    /// `data_dir` is NULL or a NUL-terminated string.
    pub unsafe fn to_engine(&self) -> Result<engine::Options, Failure> {
        let point_index = match self.point_index {
            PERSIMMON_POINT_INDEX_PM => PointIndex::Pm,
            PERSIMMON_POINT_INDEX_DRAM => PointIndex::Dram,
            other => return Err(Failure::invalid(format!("point_index {other} is unknown"))),
        };
        let data_dir = match self.data_dir.is_null() {
            true => None,
            // SAFETY: non-NULL data_dir is NUL-terminated (caller's contract).
            false => Some(unsafe { raw::path(self.data_dir, "data_dir") }?),
        };
        Ok(engine::Options {
            create: self.create,
            ordered_index: self.ordered_index,
            point_index,
            pool_bytes_initial: self.pool_bytes_initial,
            pool_bytes_max: self.pool_bytes_max,
            segment_bytes: self.segment_bytes,
            lanes: self.lanes as usize,
            cleaner: self.cleaner,
            active_expiry: self.active_expiry,
            verify_reads: self.verify_reads,
            flush_mode: if self.eadr {
                FlushMode::Eadr
            } else {
                FlushMode::Flush
            },
            data_dir,
            tier_threshold: self.tier_threshold,
            cache_bytes: self.cache_bytes,
            ..engine::Options::default()
        })
    }
}

/// Fills `*options` with the defaults (those of the Rust `Options`).
///
/// Returns `PERSIMMON_OK`, or `PERSIMMON_INVALID_ARGUMENT` for NULL.
///
/// Thread safety: any thread; `options` is the caller's memory.
#[no_mangle]
pub unsafe extern "C" fn persimmon_options_init(options: *mut Options) -> c_int {
    guard(|| {
        raw::required(options, "options")?;
        // SAFETY: non-NULL and, by the header's contract, a writable options
        // struct.
        unsafe { raw::set(options, Options::defaults()) };
        Ok(Status::PERSIMMON_OK)
    })
}
