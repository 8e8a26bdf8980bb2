//! LZF decompression, for the strings Redis stores compressed.
//!
//! An LZF stream is a sequence of runs, each opened by a control byte:
//! below 32, a literal run of `control + 1` bytes follows; otherwise a back
//! reference copies `length + 2` bytes from `distance + 1` bytes back in the
//! output, the length in the control byte's top three bits (7 meaning "7
//! plus the next byte"), the distance in its low five bits and the next
//! byte.
//!
//! Invariants: every read from the input and every back reference is
//! bounds-checked; the output is never longer than the length the payload
//! declares, and that length is refused before any allocation if the input
//! could not produce it.

use super::value::RdbError;

/// The most output one input byte can produce: a 3-byte back reference
/// copies at most 7 + 255 + 2 = 264 bytes.
const MAX_RATIO: u64 = 88;

/// Decompresses `input`, which must produce exactly `len` bytes.
pub(super) fn decompress(input: &[u8], len: u64) -> Result<Vec<u8>, RdbError> {
    if len > (input.len() as u64).saturating_mul(MAX_RATIO) {
        return Err(RdbError::bad());
    }
    let len = usize::try_from(len).map_err(|_| RdbError::bad())?;
    let mut out = Vec::with_capacity(len);
    let mut at = 0;
    while let Some(&control) = input.get(at) {
        at += 1;
        let control = usize::from(control);
        if control < 32 {
            let literal = input.get(at..at + control + 1).ok_or_else(RdbError::bad)?;
            at += literal.len();
            if out.len() + literal.len() > len {
                return Err(RdbError::bad());
            }
            out.extend_from_slice(literal);
        } else {
            let mut length = control >> 5;
            if length == 7 {
                length += usize::from(next(input, &mut at)?);
            }
            let distance = ((control & 0x1f) << 8) + usize::from(next(input, &mut at)?) + 1;
            copy_back(&mut out, distance, length + 2, len)?;
        }
    }
    if out.len() != len {
        return Err(RdbError::bad());
    }
    Ok(out)
}

fn next(input: &[u8], at: &mut usize) -> Result<u8, RdbError> {
    let byte = *input.get(*at).ok_or_else(RdbError::bad)?;
    *at += 1;
    Ok(byte)
}

/// Appends `count` bytes copied from `distance` bytes back (the source may
/// overlap what is being written, repeating it).
fn copy_back(out: &mut Vec<u8>, distance: usize, count: usize, len: usize) -> Result<(), RdbError> {
    let start = out.len().checked_sub(distance).ok_or_else(RdbError::bad)?;
    if out.len() + count > len {
        return Err(RdbError::bad());
    }
    for i in start..start + count {
        let byte = *out.get(i).ok_or_else(RdbError::bad)?;
        out.push(byte);
    }
    Ok(())
}
