//! CPU persistence instructions: cache-line flush, store fence and
//! non-temporal copies, chosen once from CPUID.
//!
//! Invariants:
//! - `flush_line` writes nothing; it only asks the CPU to write a dirty line
//!   back. Durability needs a later `sfence` (`store_fence`).
//! - `nt_copy` leaves every byte it wrote either in a non-temporal store
//!   (ordered by the next `sfence`) or in a flushed line: after it, one fence
//!   makes the whole range durable.

/// The cache-line write-back instruction in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushInstruction {
    /// `clwb`: writes the line back and keeps it cached (best).
    Clwb,
    /// `clflushopt`: writes back and evicts, unordered.
    Clflushopt,
    /// `clflush`: writes back and evicts, serialising.
    Clflush,
    /// eADR: caches are in the persistence domain; no flush is issued.
    None,
}

impl FlushInstruction {
    pub fn name(self) -> &'static str {
        match self {
            FlushInstruction::Clwb => "clwb",
            FlushInstruction::Clflushopt => "clflushopt",
            FlushInstruction::Clflush => "clflush",
            FlushInstruction::None => "none (eADR)",
        }
    }
}

/// The non-temporal copy routine in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NtCopy {
    Avx512,
    Avx2,
    Sse2,
    /// No streaming stores: plain copy followed by flushes.
    Plain,
}

impl NtCopy {
    pub fn name(self) -> &'static str {
        match self {
            NtCopy::Avx512 => "avx512",
            NtCopy::Avx2 => "avx2",
            NtCopy::Sse2 => "sse2",
            NtCopy::Plain => "plain",
        }
    }
}

pub const CACHE_LINE_BYTES: usize = 64;

/// Picks the best flush instruction the CPU has: `clwb` > `clflushopt` > `clflush`.
#[cfg(target_arch = "x86_64")]
pub fn detect_flush() -> FlushInstruction {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    // CPUID is always available on x86_64; leaf 7 exists when leaf 0 says so.
    let max_leaf = __cpuid(0).eax;
    if max_leaf >= 7 {
        let leaf7 = __cpuid_count(7, 0);
        if leaf7.ebx & (1 << 24) != 0 {
            return FlushInstruction::Clwb;
        }
        if leaf7.ebx & (1 << 23) != 0 {
            return FlushInstruction::Clflushopt;
        }
    }
    FlushInstruction::Clflush
}

#[cfg(not(target_arch = "x86_64"))]
pub fn detect_flush() -> FlushInstruction {
    FlushInstruction::None
}

#[cfg(target_arch = "x86_64")]
pub fn detect_nt() -> NtCopy {
    if std::arch::is_x86_feature_detected!("avx512f") {
        NtCopy::Avx512
    } else if std::arch::is_x86_feature_detected!("avx2") {
        NtCopy::Avx2
    } else {
        NtCopy::Sse2
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn detect_nt() -> NtCopy {
    NtCopy::Plain
}

/// Writes back the cache line holding `p`.
///
/// # Safety
/// `p` must point into a live mapping.
#[inline(always)]
pub unsafe fn flush_line(kind: FlushInstruction, p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller guarantees `p` is mapped; these instructions only
    // write the line back and never fault on a mapped address.
    unsafe {
        match kind {
            FlushInstruction::Clwb => {
                core::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags))
            }
            FlushInstruction::Clflushopt => {
                core::arch::asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags))
            }
            FlushInstruction::Clflush => core::arch::x86_64::_mm_clflush(p),
            FlushInstruction::None => {}
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (kind, p);
}

/// Starts loading the cache line of `r` (DRAM state such as a lock word):
/// a hint, with no effect the program can observe.
#[inline(always)]
pub fn prefetch_ref<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the address of a live reference; a prefetch reads nothing
    // the program can observe and cannot fault.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Orders all earlier stores, flushes and non-temporal stores before later ones.
#[inline(always)]
pub fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no memory-safety preconditions.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Copies `src` to `dst` with streaming stores for the 64-byte-aligned body.
/// The unaligned head and tail are copied normally and their lines flushed
/// with `flush` (so one fence afterwards makes everything durable).
///
/// # Safety
/// `dst..dst+src.len()` must be writable, mapped memory not overlapping `src`.
pub unsafe fn nt_copy(kind: NtCopy, flush: FlushInstruction, dst: *mut u8, src: &[u8]) {
    let len = src.len();
    let start = dst as usize;
    let body_start = (start + CACHE_LINE_BYTES - 1) & !(CACHE_LINE_BYTES - 1);
    let end = start + len;
    let body_end = end & !(CACHE_LINE_BYTES - 1);
    if kind == NtCopy::Plain || body_start >= body_end {
        // SAFETY: caller guarantees the ranges are valid and disjoint.
        unsafe {
            core::ptr::copy_nonoverlapping(src.as_ptr(), dst, len);
            let mut line = start & !(CACHE_LINE_BYTES - 1);
            while line < end {
                flush_line(flush, line as *const u8);
                line += CACHE_LINE_BYTES;
            }
        }
        return;
    }
    let head = body_start - start;
    let body = body_end - body_start;
    let tail = end - body_end;
    // SAFETY: head, body and tail partition `dst..dst+len`, which the caller
    // guarantees is valid; `src` has the same length.
    unsafe {
        if head > 0 {
            core::ptr::copy_nonoverlapping(src.as_ptr(), dst, head);
            flush_line(flush, dst);
        }
        let body_src = src.as_ptr().add(head);
        let body_dst = body_start as *mut u8;
        match kind {
            #[cfg(target_arch = "x86_64")]
            NtCopy::Avx512 => stream_avx512(body_dst, body_src, body),
            #[cfg(target_arch = "x86_64")]
            NtCopy::Avx2 => stream_avx2(body_dst, body_src, body),
            #[cfg(target_arch = "x86_64")]
            NtCopy::Sse2 => stream_sse2(body_dst, body_src, body),
            _ => core::ptr::copy_nonoverlapping(body_src, body_dst, body),
        }
        if tail > 0 {
            core::ptr::copy_nonoverlapping(
                src.as_ptr().add(head + body),
                body_end as *mut u8,
                tail,
            );
            flush_line(flush, body_end as *const u8);
        }
    }
}

/// # Safety
/// `dst` 64-byte aligned, `len` a multiple of 64, ranges valid; AVX-512F present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn stream_avx512(dst: *mut u8, src: *const u8, len: usize) {
    use core::arch::x86_64::*;
    let mut i = 0;
    while i < len {
        // SAFETY: in bounds per the function contract; unaligned load allowed.
        unsafe {
            let v = _mm512_loadu_si512(src.add(i) as *const _);
            _mm512_stream_si512(dst.add(i) as *mut _, v);
        }
        i += 64;
    }
}

/// # Safety
/// `dst` 64-byte aligned, `len` a multiple of 64, ranges valid; AVX2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn stream_avx2(dst: *mut u8, src: *const u8, len: usize) {
    use core::arch::x86_64::*;
    let mut i = 0;
    while i < len {
        // SAFETY: in bounds per the function contract; 32-byte aligned stores.
        unsafe {
            let a = _mm256_loadu_si256(src.add(i) as *const __m256i);
            let b = _mm256_loadu_si256(src.add(i + 32) as *const __m256i);
            _mm256_stream_si256(dst.add(i) as *mut __m256i, a);
            _mm256_stream_si256(dst.add(i + 32) as *mut __m256i, b);
        }
        i += 64;
    }
}

/// # Safety
/// `dst` 64-byte aligned, `len` a multiple of 64, ranges valid.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_sse2(dst: *mut u8, src: *const u8, len: usize) {
    use core::arch::x86_64::*;
    let mut i = 0;
    while i < len {
        // SAFETY: in bounds per the function contract; 16-byte aligned stores.
        unsafe {
            for k in 0..4 {
                let v = _mm_loadu_si128(src.add(i + 16 * k) as *const __m128i);
                _mm_stream_si128(dst.add(i + 16 * k) as *mut __m128i, v);
            }
        }
        i += 64;
    }
}
