//! The DRAM map of the leaves (low key → leaf), and its copy kept beside the
//! pool across a clean close so that an open needs no rebuild.
//!
//! The map is a *base*, a sorted flat array fixed at open (from the copy, or
//! from the leaf headers), plus an *overlay* (a concurrent skip map) of the
//! leaves split off since. Leaves are never freed, so an entry of the base
//! stays true; a lookup takes the greater of the two answers.
//!
//! The copy (`<pool>.leaves`) is a cache, not part of the pool: written at a
//! clean close (to a temporary name, then renamed), it is used only when
//! its pool id matches, its tag equals the open count of the session that
//! closed the pool cleanly, and its CRC verifies; anything else (a crash, a
//! missing or foreign file, an older build that opened the pool since) and
//! the map is rebuilt from the leaf headers.
//!
//! Copy layout: magic `PMLEAFD1` (8), pool id (16), tag (8), count n (8),
//! CRC32C of what follows (4), 4 zero bytes; then n entries of (leaf u64,
//! key offset u32, key length u32) in key order; then the keys.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use crossbeam_skiplist::SkipMap;

const MAGIC: &[u8; 8] = b"PMLEAFD1";
const HEAD: usize = 48;
const ENTRY: usize = 16;

/// A sorted, immutable array of (low key, leaf) in one buffer (the copy's
/// layout from its entries on).
#[derive(Default)]
struct Base {
    buf: Vec<u8>,
    n: usize,
}

impl Base {
    fn build(mut pairs: Vec<(Vec<u8>, u64)>) -> Base {
        pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let n = pairs.len();
        let keys: usize = pairs.iter().map(|p| p.0.len()).sum();
        let mut buf = Vec::with_capacity(n * ENTRY + keys);
        let mut at = (n * ENTRY) as u32;
        for (k, leaf) in &pairs {
            buf.extend_from_slice(&leaf.to_le_bytes());
            buf.extend_from_slice(&at.to_le_bytes());
            buf.extend_from_slice(&(k.len() as u32).to_le_bytes());
            at += k.len() as u32;
        }
        for (k, _) in &pairs {
            buf.extend_from_slice(k);
        }
        Base { buf, n }
    }

    /// Validates a buffer of `n` entries read from a copy.
    fn from_buf(buf: Vec<u8>, n: usize) -> Option<Base> {
        if buf.len() < n.checked_mul(ENTRY)? {
            return None;
        }
        let base = Base { buf, n };
        for i in 0..n {
            let (off, len) = base.span(i);
            if off.checked_add(len)? > base.buf.len() || off < n * ENTRY {
                return None;
            }
            if i > 0 && base.key(i - 1) >= base.key(i) {
                return None;
            }
        }
        Some(base)
    }

    fn span(&self, i: usize) -> (usize, usize) {
        let e = &self.buf[i * ENTRY..(i + 1) * ENTRY];
        (
            u32::from_le_bytes(e[8..12].try_into().unwrap()) as usize,
            u32::from_le_bytes(e[12..16].try_into().unwrap()) as usize,
        )
    }

    fn key(&self, i: usize) -> &[u8] {
        let (off, len) = self.span(i);
        &self.buf[off..off + len]
    }

    fn leaf(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.buf[i * ENTRY..i * ENTRY + 8].try_into().unwrap())
    }

    fn get(&self, i: usize) -> (Vec<u8>, u64) {
        (self.key(i).to_vec(), self.leaf(i))
    }

    /// Index of the first key `>= key` (`> key` when `strict`).
    fn lower(&self, key: &[u8], strict: bool) -> usize {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let k = self.key(mid);
            if k < key || (strict && k == key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The map of one open pool's leaves.
pub(crate) struct LeafDir {
    base: Base,
    overlay: SkipMap<Vec<u8>, u64>,
}

fn larger(a: Option<(Vec<u8>, u64)>, b: Option<(Vec<u8>, u64)>) -> Option<(Vec<u8>, u64)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if x.0 >= y.0 { x } else { y }),
        (x, y) => x.or(y),
    }
}

fn smaller(a: Option<(Vec<u8>, u64)>, b: Option<(Vec<u8>, u64)>) -> Option<(Vec<u8>, u64)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if x.0 <= y.0 { x } else { y }),
        (x, y) => x.or(y),
    }
}

fn pair(e: crossbeam_skiplist::map::Entry<'_, Vec<u8>, u64>) -> (Vec<u8>, u64) {
    (e.key().clone(), *e.value())
}

impl LeafDir {
    /// A map of `pairs` (any order).
    pub fn from_pairs(pairs: Vec<(Vec<u8>, u64)>) -> LeafDir {
        LeafDir {
            base: Base::build(pairs),
            overlay: SkipMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.base.n + self.overlay.len()
    }

    pub fn insert(&self, low: Vec<u8>, leaf: u64) {
        self.overlay.insert(low, leaf);
    }

    /// The entry with the greatest low key `<= key` (`< key` when `strict`).
    pub fn floor(&self, key: &[u8], strict: bool) -> Option<(Vec<u8>, u64)> {
        let i = self.base.lower(key, !strict);
        let b = (i > 0).then(|| self.base.get(i - 1));
        let bound = if strict {
            Bound::Excluded(key)
        } else {
            Bound::Included(key)
        };
        larger(b, self.overlay.upper_bound(bound).map(pair))
    }

    /// The entry with the least low key `> key` (`>= key` unless `strict`).
    pub fn ceil(&self, key: &[u8], strict: bool) -> Option<(Vec<u8>, u64)> {
        let i = self.base.lower(key, strict);
        let b = (i < self.base.n).then(|| self.base.get(i));
        let bound = if strict {
            Bound::Excluded(key)
        } else {
            Bound::Included(key)
        };
        smaller(b, self.overlay.lower_bound(bound).map(pair))
    }

    pub fn first(&self) -> Option<(Vec<u8>, u64)> {
        smaller(
            (self.base.n > 0).then(|| self.base.get(0)),
            self.overlay.front().map(pair),
        )
    }

    pub fn last(&self) -> Option<(Vec<u8>, u64)> {
        larger(
            (self.base.n > 0).then(|| self.base.get(self.base.n - 1)),
            self.overlay.back().map(pair),
        )
    }

    /// A leaf sharing its low key with another one in the base (damage),
    /// if any.
    pub fn shared_low(&self) -> Option<u64> {
        (1..self.base.n)
            .find(|&i| self.base.key(i - 1) == self.base.key(i))
            .map(|i| self.base.leaf(i))
    }

    /// Every leaf the map names (in no particular order), without copying
    /// keys.
    pub fn leaf_offsets(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.base.n)
            .map(|i| self.base.leaf(i))
            .chain(self.overlay.iter().map(|e| *e.value()))
    }

    /// Every entry, in key order.
    pub fn all(&self) -> Vec<(Vec<u8>, u64)> {
        let mut v: Vec<(Vec<u8>, u64)> = (0..self.base.n).map(|i| self.base.get(i)).collect();
        v.extend(self.overlay.iter().map(pair));
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }

    // -------------------------------------------------------- the copy

    /// Where the copy of the map of the pool at `pool` lives.
    pub fn copy_path(pool: &Path) -> PathBuf {
        let mut p = pool.as_os_str().to_owned();
        p.push(".leaves");
        PathBuf::from(p)
    }

    /// Writes the copy (tagged `tag`) for a clean close. Best effort: a
    /// copy that is missing or torn is not used.
    pub fn save(&self, pool: &Path, pool_id: &[u8; 16], tag: u64) -> std::io::Result<()> {
        let all = self.all();
        let base = Base::build(all);
        let mut out = Vec::with_capacity(HEAD + base.buf.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(pool_id);
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&(base.n as u64).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&base.buf).to_le_bytes());
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(&base.buf);
        let path = Self::copy_path(pool);
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, &out)?;
        std::fs::rename(&tmp, &path)
    }

    /// The map from the copy beside the pool, if there is a valid one for
    /// this pool and tag.
    pub fn load(pool: &Path, pool_id: &[u8; 16], tag: u64) -> Option<LeafDir> {
        let bytes = std::fs::read(Self::copy_path(pool)).ok()?;
        if bytes.len() < HEAD || &bytes[0..8] != MAGIC || bytes[8..24] != pool_id[..] {
            return None;
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        if word(24) != tag {
            return None;
        }
        let n = usize::try_from(word(32)).ok()?;
        let crc = u32::from_le_bytes(bytes[40..44].try_into().unwrap());
        if crc32c::crc32c(&bytes[HEAD..]) != crc {
            return None;
        }
        let base = Base::from_buf(bytes[HEAD..].to_vec(), n)?;
        Some(LeafDir {
            base,
            overlay: SkipMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn base_and_overlay_answer_as_one_map() {
        let d = LeafDir::from_pairs(vec![(k("m"), 3), (k(""), 1), (k("f"), 2)]);
        d.insert(k("h"), 4);
        d.insert(k("z"), 5);
        assert_eq!(d.floor(b"g", false), Some((k("f"), 2)));
        assert_eq!(d.floor(b"h", false), Some((k("h"), 4)));
        assert_eq!(d.floor(b"h", true), Some((k("f"), 2)));
        assert_eq!(d.floor(b"", true), None);
        assert_eq!(d.ceil(b"f", true), Some((k("h"), 4)));
        assert_eq!(d.ceil(b"h", true), Some((k("m"), 3)));
        assert_eq!(d.ceil(b"z", true), None);
        assert_eq!(d.first(), Some((k(""), 1)));
        assert_eq!(d.last(), Some((k("z"), 5)));
        assert_eq!(d.len(), 5);
        assert_eq!(d.shared_low(), None);
        let twice = LeafDir::from_pairs(vec![(k(""), 1), (k("f"), 2), (k("f"), 3)]);
        assert!(matches!(twice.shared_low(), Some(2 | 3)));
    }

    #[test]
    fn the_copy_is_used_only_for_its_pool_and_tag_and_when_whole() {
        let dir = tempfile::tempdir().unwrap();
        let pool = dir.path().join("p.pool");
        let d = LeafDir::from_pairs(vec![(k(""), 64), (k("b"), 1088)]);
        d.insert(k("c"), 2112);
        d.save(&pool, &[7; 16], 5).unwrap();
        let back = LeafDir::load(&pool, &[7; 16], 5).expect("a valid copy");
        assert_eq!(back.all(), d.all());
        assert!(LeafDir::load(&pool, &[8; 16], 5).is_none(), "another pool");
        assert!(
            LeafDir::load(&pool, &[7; 16], 6).is_none(),
            "another session"
        );
        let path = LeafDir::copy_path(&pool);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(LeafDir::load(&pool, &[7; 16], 5).is_none(), "torn copy");
    }
}
