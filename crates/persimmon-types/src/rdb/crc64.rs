//! Redis's CRC64: the Jones polynomial (0xad93d23594c935a9), reflected
//! input and output, initial value 0, no final xor. `crc64(b"123456789")`
//! is 0xe9c6d914c4b8d9ca.
//!
//! Invariant: the table is built at compile time; the checksum is a pure
//! function of the bytes.

/// The Jones polynomial, bit-reversed (the table works LSB first).
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const TABLE: [u64; 256] = table();

const fn table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// The checksum of `bytes`, as Redis's `crc64(0, bytes, len)`.
pub(super) fn crc64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |crc, &b| {
        TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}
