//! Persistent dancing variables (PDV): a hot persisted word spread over N
//! shadows in different cache lines, so that consecutive updates flush
//! different lines instead of the same one again and again.
//!
//! After the PDV paper (`../shared/papers/pdv-persistent-dancing-variable.txt`,
//! Yan and Jiang, in Chinese). Its motivation, its data structure and its
//! recovery case split survive the text extraction; its state transition
//! table (Table 2, Figure 4) and parts of Algorithms 2 and 3 do not. What
//! follows is our reconstruction, and the tests in this file prove it.
//!
//! # The variable
//!
//! A value of up to 62 bits ([`MAX_VALUE`]) is kept in N shadows, N from 2 to
//! 64, each an 8-byte word: the value in bits 0..62 and a 2-bit *tag* in bits
//! 62..64. Updates go round-robin: shadow 0, 1, …, N−1, 0, 1, …. Each update
//! is ONE aligned 8-byte store of one shadow, flushed and fenced before
//! [`Pdv::persist`] returns (through the pmem layer for a [`PdvFile`]).
//!
//! Tag 0 means "never written". A *round* is one pass over shadows 0..N−1;
//! round r = 1, 2, … writes tag ((r−1) mod 3) + 1, so round tags cycle
//! 1, 2, 3, 1, 2, 3, …. The state of the writer is (position i of the newest
//! write, round tag t); the next write goes to i+1 with tag t, or, when i+1
//! wraps to 0, to shadow 0 with next(t) (1→2→3→1). [`next_position`] is that
//! transition.
//!
//! # Recovery
//!
//! [`scan_tags`] reads the N tags. All 0: never written. Otherwise the round
//! tag is tag[0] (shadow 0 is written first in every round) and the newest
//! shadow is the last index j of the run of tag[0] at the start, i.e. the
//! shadow just before the *leap* where the tag changes. Behind the leap every
//! shadow must carry one tag: 0 in the first round (tag[0] = 1), prev(t) in a
//! later round. Anything else is an invalid pattern and is reported as an
//! error naming the pattern ([`crate::Error::PdvInvalidPattern`]), never
//! recovered: a 0 at shadow 0 with later shadows written, a second leap, a 0
//! behind a round tag other than 1, a tag behind the leap that is neither 0
//! nor prev(t) (a leap forward, t → next(t)). [`Pdv::recover`] also requires
//! the value bits of never-written shadows to be 0.
//!
//! # Why it is correct (proof sketch)
//!
//! 1. *In-order durability.* Update k+1's store is issued only after update
//!    k's flush and fence returned, and an aligned 8-byte store is failure
//!    atomic. So after a crash the shadows hold exactly the first k updates
//!    for some k ≥ 0 (k counts the updates whose store reached the media:
//!    the completed ones, plus possibly the one in flight). A cache line
//!    evicted early changes nothing: the later stores were not issued yet.
//! 2. *Memory is a function of k.* With q = ⌊(k−1)/N⌋ full rounds before the
//!    newest write and r = (k−1) mod N its shadow, shadows 0..=r carry tag
//!    T(q) = (q mod 3)+1 and the value of their write in round q+1, and
//!    shadows r+1..N−1 carry T(q−1) for q ≥ 1, or 0 for q = 0. So the tag
//!    pattern is one of: all 0 (k = 0); `1^j 0^(N−j)` (first round,
//!    1 ≤ j ≤ N); `t^j p^(N−j)` with p = prev(t) (later rounds, 1 ≤ j ≤ N).
//!    That is 4N patterns out of 4^N; the tests compute this set by running
//!    the writer and check it against every pattern for N ≤ 8.
//! 3. *The leap finds the newest.* tag[0] = T(q), and the first index whose
//!    tag differs from T(q) is r+1, because T(q−1) ≠ T(q) (consecutive round
//!    tags differ) and 0 ≠ T(q). So the scan returns (r, T(q)): exactly the
//!    writer's state after update k, and shadow r holds update k's value.
//! 4. *Continuing is sound.* The next write depends only on (r, T(q)); the
//!    round number q is needed only mod 3, which the tag holds. A writer
//!    restarted from the recovered state therefore writes the same words the
//!    uncrashed writer would have, and step 2 keeps holding.
//!
//! The same argument needs only three distinct tag values (never written,
//! this round, previous round) whatever N is, which is the paper's Theorem 2:
//! 2 tag bits suffice for any N ≥ 2.
//!
//! # Three round tags instead of two
//!
//! Two round tags (1 and 2 alternating, 0 unwritten) would recover every
//! crash just as well: step 3 needs only T(q−1) ≠ T(q), and the fourth tag
//! value is then never valid. With three, the tag behind the leap is
//! *implied* by the tag in front of it (prev(t)), and a shadow's tag tells
//! how many rounds ago (mod 3) it was written, so a shadow that missed a
//! round or two of writes does not pass for a current or a previous-round
//! one. The test `three_round_tags_catch_more_lost_writes` measures both on
//! images in which some shadows kept the content of an earlier moment 1 to
//! 2 rounds back (lost writes: a missing flush, a stale line): three round
//! tags catch 95 % of them, two catch 57 % (N = 2..=6). For a random change
//! of one shadow's tag the two are even (84 % caught; with two round tags
//! the unused fourth value is always caught). A change that is not caught
//! always yields another reachable pattern, which no scan can tell from a
//! real state.
//!
//! # Relation to the paper
//!
//! The paper's recovery (Algorithm 3) counts tags of value 0 (`nb0`), of the
//! "middle" values (`nbx`), of value 3 (`nb3`) and the largest tag (`vm`),
//! then splits: all zero → initialise; no 3 → the newest is the position of
//! the largest tag (its Lemma 2); 3s and middle tags → find the leap
//! (Lemma 3); 3s and more than one 0 → find the leap to 0 (Lemma 4); else
//! invalid input. Its writer (Algorithm 2) keeps a state `s` and one
//! multiplexed counter `c`, and in later states writes tag 3 and then tag 0
//! again; the table of its transitions is garbled beyond recovery. Ours is
//! the simplest machine with the properties the paper proves: state
//! (position i, round tag t), transition i → i+1, t → next(t) at the wrap,
//! 0 reserved for never written, recovery by finding the single leap, and
//! every other pattern reported.
//!
//! # Layouts in a file
//!
//! [`PdvFile`] maps a file through the pmem layer and hands out variables in
//! one of two [`PdvLayout`]s (the paper's sparse and dense pools): *sparse*,
//! each shadow of a variable on its own 64-byte line, lines not shared with
//! any other variable; *dense*, groups of 8 variables share N lines, variable
//! k of a group keeping shadow j at `group_base + j*64 + k*8` (each variable
//! still has its N shadows on N distinct lines). [`PersistedWord`] is the
//! plain alternative: one word, stored, flushed and fenced in place on every
//! update.
//!
//! Invariants:
//! - A variable has one writer: [`Pdv::persist`] takes `&mut self`, and a
//!   [`PdvFile`] refuses a second live handle on any word (claims are
//!   released when the handle drops).
//! - [`Pdv::persist`] stores exactly one shadow word per call and returns
//!   only after it is durable; it never stores a word whose tag is 0.
//! - The volatile state (newest position, value) always equals what
//!   [`scan_tags`] would recover from the shadows right now.

use std::collections::HashSet;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::pmem::{self, Durability, PmemFile, CACHE_LINE_BYTES};

/// Largest value a PDV holds: 62 bits.
pub const MAX_VALUE: u64 = (1 << 62) - 1;
/// Fewest shadows a PDV may have.
pub const MIN_SHADOWS: usize = 2;
/// Most shadows a PDV may have.
pub const MAX_SHADOWS: usize = 64;
/// Round tags in use (1..=3); 0 means "never written".
pub const ROUND_TAGS: u8 = 3;
/// Variables per group of the dense layout: the 8-byte words of a line.
pub const DENSE_GROUP_VARIABLES: u64 = (CACHE_LINE_BYTES / 8) as u64;

const TAG_SHIFT: u32 = 62;
const LINE_BYTES: u64 = CACHE_LINE_BYTES as u64;
const PAGE_BYTES: u64 = 4096;

/// The shadow word holding `value` with `tag`.
#[inline]
fn wrap(value: u64, tag: u8) -> u64 {
    debug_assert!(value <= MAX_VALUE && (1..=3).contains(&tag));
    value | (u64::from(tag) << TAG_SHIFT)
}

/// The tag of a shadow word.
#[inline]
pub fn tag_of(word: u64) -> u8 {
    (word >> TAG_SHIFT) as u8
}

/// The value of a shadow word.
#[inline]
pub fn value_of(word: u64) -> u64 {
    word & MAX_VALUE
}

/// The round tag after `tag` in a cycle of `cycle` round tags.
#[inline]
fn next_tag(tag: u8, cycle: u8) -> u8 {
    tag % cycle + 1
}

/// The round tag before `tag` in a cycle of `cycle` round tags.
#[inline]
fn prev_tag(tag: u8, cycle: u8) -> u8 {
    (tag + cycle - 2) % cycle + 1
}

/// Where a write of a PDV goes (or went): its shadow and its round tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    /// Shadow index, 0..N.
    pub shadow: usize,
    /// Round tag, 1..=3.
    pub round_tag: u8,
}

/// The write after `newest` (None: never written) in a PDV of `shadows`
/// shadows: the state machine's one transition.
pub fn next_position(shadows: usize, newest: Option<Position>) -> Position {
    next_position_in(shadows, newest, ROUND_TAGS)
}

fn next_position_in(shadows: usize, newest: Option<Position>, cycle: u8) -> Position {
    match newest {
        None => Position {
            shadow: 0,
            round_tag: 1,
        },
        Some(p) if p.shadow + 1 >= shadows => Position {
            shadow: 0,
            round_tag: next_tag(p.round_tag, cycle),
        },
        Some(p) => Position {
            shadow: p.shadow + 1,
            round_tag: p.round_tag,
        },
    }
}

/// A tag pattern no crash can leave, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidPattern {
    /// The tags as read, shadow 0 first.
    pub tags: Vec<u8>,
    /// What is wrong with them.
    pub reason: String,
}

impl InvalidPattern {
    /// The tags as text: `1 1 0 3`.
    pub fn pattern(&self) -> String {
        self.tags
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Display for InvalidPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tags [{}]: {}", self.pattern(), self.reason)
    }
}

/// Recovers the newest write from the shadows' tags, shadow 0 first: `None`
/// when nothing was ever written, an error for a pattern no crash can leave.
pub fn scan_tags(tags: &[u8]) -> Result<Option<Position>, InvalidPattern> {
    scan_tags_in(tags, ROUND_TAGS)
}

fn scan_tags_in(tags: &[u8], cycle: u8) -> Result<Option<Position>, InvalidPattern> {
    let bad = |reason: String| {
        Err(InvalidPattern {
            tags: tags.to_vec(),
            reason,
        })
    };
    if !(MIN_SHADOWS..=MAX_SHADOWS).contains(&tags.len()) {
        return bad(format!(
            "{} shadows; a PDV has {MIN_SHADOWS} to {MAX_SHADOWS}",
            tags.len()
        ));
    }
    if let Some(i) = tags.iter().position(|&t| t > cycle) {
        return bad(format!(
            "shadow {i} has tag {}, which no write uses",
            tags[i]
        ));
    }
    let round = tags[0];
    if round == 0 {
        return match tags.iter().position(|&t| t != 0) {
            None => Ok(None),
            Some(i) => bad(format!(
                "shadow 0 was never written but shadow {i} was (every round starts at shadow 0)"
            )),
        };
    }
    let newest = tags.iter().position(|&t| t != round).unwrap_or(tags.len()) - 1;
    let behind = newest + 1;
    if let Some(&older) = tags.get(behind) {
        let previous = prev_tag(round, cycle);
        if older == 0 && round != 1 {
            return bad(format!(
                "shadow {behind} was never written, but shadow 0 carries round tag {round}, \
                 not the first round's 1"
            ));
        }
        if older != 0 && older != previous {
            return bad(format!(
                "shadow {behind} has tag {older} behind round tag {round}; the shadows behind \
                 the newest carry the previous round's tag {previous} (or 0 in the first round)"
            ));
        }
        if let Some(k) = tags[behind..].iter().position(|&t| t != older) {
            return bad(format!(
                "a second leap at shadow {} (tag {} after {older}); a crash leaves at most one",
                behind + k,
                tags[behind + k]
            ));
        }
    }
    Ok(Some(Position {
        shadow: newest,
        round_tag: round,
    }))
}

/// The shadows of one variable: N words, each stored and persisted alone.
///
/// `store_persistent` must be one 8-byte atomic store of the word, made
/// durable (flush + fence) before it returns. Tests use a `Vec<u64>`; a
/// [`PdvFile`] hands out [`FileShadows`], which go through the pmem layer.
pub trait ShadowMemory {
    /// How many shadows (2..=64).
    fn shadows(&self) -> usize;
    /// The word of shadow `index` as it is now.
    fn load(&self, index: usize) -> u64;
    /// Stores `word` into shadow `index` and makes it durable.
    fn store_persistent(&mut self, index: usize, word: u64);
    /// Where the shadows are, for error messages.
    fn location(&self) -> String {
        "shadow memory".into()
    }
}

/// Volatile shadows (for tests and models): every store is "durable" at once.
impl ShadowMemory for Vec<u64> {
    fn shadows(&self) -> usize {
        self.len()
    }
    fn load(&self, index: usize) -> u64 {
        self[index]
    }
    fn store_persistent(&mut self, index: usize, word: u64) {
        self[index] = word;
    }
}

/// A persistent dancing variable over the shadows `M`.
#[derive(Clone, Debug)]
pub struct Pdv<M: ShadowMemory> {
    memory: M,
    shadows: usize,
    newest: Option<Position>,
    value: u64,
}

impl<M: ShadowMemory> Pdv<M> {
    /// Recovers the variable from its shadows (all-zero shadows: a variable
    /// never written, reading 0). Fails on a tag pattern no crash can leave,
    /// naming the pattern, and on a never-written shadow whose value bits
    /// are not 0.
    pub fn recover(memory: M) -> Result<Pdv<M>> {
        let shadows = memory.shadows();
        if !(MIN_SHADOWS..=MAX_SHADOWS).contains(&shadows) {
            return Err(Error::InvalidOptions(format!(
                "{}: a PDV has {MIN_SHADOWS} to {MAX_SHADOWS} shadows, not {shadows}",
                memory.location()
            )));
        }
        let mut words = [0u64; MAX_SHADOWS];
        let mut tags = [0u8; MAX_SHADOWS];
        for (i, (word, tag)) in words.iter_mut().zip(&mut tags).take(shadows).enumerate() {
            *word = memory.load(i);
            *tag = tag_of(*word);
        }
        let (words, tags) = (&words[..shadows], &tags[..shadows]);
        let invalid = |e: InvalidPattern| Error::PdvInvalidPattern {
            location: memory.location(),
            pattern: e.pattern(),
            reason: e.reason,
        };
        let newest = scan_tags(tags).map_err(invalid)?;
        if let Some(i) = (0..shadows).find(|&i| tags[i] == 0 && words[i] != 0) {
            return Err(invalid(InvalidPattern {
                tags: tags.to_vec(),
                reason: format!(
                    "shadow {i} has tag 0 (never written) but value bits {:#x}",
                    words[i]
                ),
            }));
        }
        let value = newest.map_or(0, |p| value_of(words[p.shadow]));
        Ok(Pdv {
            memory,
            shadows,
            newest,
            value,
        })
    }

    /// The current value (0 if never written). Reads no shadow.
    #[inline]
    pub fn get(&self) -> u64 {
        self.value
    }

    /// Whether any value was ever persisted.
    pub fn is_written(&self) -> bool {
        self.newest.is_some()
    }

    /// The newest write's shadow and round tag (None: never written).
    pub fn newest(&self) -> Option<Position> {
        self.newest
    }

    /// Number of shadows.
    pub fn shadows(&self) -> usize {
        self.shadows
    }

    /// Makes `value` the variable's value, durably, with one store of one
    /// shadow (the next one round-robin) and its flush and fence.
    #[inline]
    pub fn persist(&mut self, value: u64) -> Result<()> {
        if value > MAX_VALUE {
            return Err(Error::PdvValueTooLarge {
                value,
                max: MAX_VALUE,
            });
        }
        let next = next_position(self.shadows, self.newest);
        let word = wrap(value, next.round_tag);
        // Durable after this call: this shadow, so the shadows now hold a
        // prefix of the updates ending with this one.
        self.memory.store_persistent(next.shadow, word);
        debug_assert_eq!(self.memory.load(next.shadow), word);
        self.newest = Some(next);
        self.value = value;
        Ok(())
    }

    /// The shadows.
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// Gives the shadows back (a test's "crash": recover from them anew).
    pub fn into_memory(self) -> M {
        self.memory
    }
}

/// How a [`PdvFile`] places the shadows of its variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PdvLayout {
    shadows: usize,
    dense: bool,
}

impl PdvLayout {
    fn new(shadows: usize, dense: bool) -> Result<PdvLayout> {
        if !(MIN_SHADOWS..=MAX_SHADOWS).contains(&shadows) {
            return Err(Error::InvalidOptions(format!(
                "a PDV has {MIN_SHADOWS} to {MAX_SHADOWS} shadows, not {shadows}"
            )));
        }
        Ok(PdvLayout { shadows, dense })
    }

    /// Each shadow on its own line, no line shared with another variable:
    /// variable v keeps shadow j at `(v*N + j) * 64`.
    pub fn sparse(shadows: usize) -> Result<PdvLayout> {
        PdvLayout::new(shadows, false)
    }

    /// Groups of 8 variables share N lines: variable v = 8g + k keeps shadow
    /// j at `g*N*64 + j*64 + k*8`.
    pub fn dense(shadows: usize) -> Result<PdvLayout> {
        PdvLayout::new(shadows, true)
    }

    pub fn shadows(&self) -> usize {
        self.shadows
    }

    pub fn is_dense(&self) -> bool {
        self.dense
    }

    /// `pdv-N-sparse` or `pdv-N-dense`.
    pub fn name(&self) -> String {
        format!(
            "pdv-{}-{}",
            self.shadows,
            if self.dense { "dense" } else { "sparse" }
        )
    }

    /// File offset of shadow 0 of `variable`; shadow j is 64·j bytes after
    /// it in both layouts.
    pub fn base_offset(&self, variable: u64) -> u64 {
        let n = self.shadows as u64;
        if self.dense {
            let (group, k) = (
                variable / DENSE_GROUP_VARIABLES,
                variable % DENSE_GROUP_VARIABLES,
            );
            group * n * LINE_BYTES + k * 8
        } else {
            variable * n * LINE_BYTES
        }
    }

    /// File offset of shadow `shadow` of `variable`.
    pub fn shadow_offset(&self, variable: u64, shadow: usize) -> u64 {
        self.base_offset(variable) + shadow as u64 * LINE_BYTES
    }

    /// Bytes a file needs for variables `0..variables`.
    pub fn bytes_for(&self, variables: u64) -> u64 {
        let per_group = self.shadows as u64 * LINE_BYTES;
        if self.dense {
            variables.div_ceil(DENSE_GROUP_VARIABLES) * per_group
        } else {
            variables * per_group
        }
    }
}

/// A file of persistent variables, mapped through the pmem layer: PDVs in
/// a [`PdvLayout`] and single [`PersistedWord`]s. A fresh file is all zeros,
/// which every variable reads as "never written". Which layout a file was
/// written with is the caller's to remember.
pub struct PdvFile {
    pm: PmemFile,
    path: PathBuf,
    /// Word offsets held by live handles.
    claimed: parking_lot::Mutex<HashSet<u64>>,
}

impl fmt::Debug for PdvFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PdvFile")
            .field("path", &self.path)
            .field("bytes", &self.pm.len())
            .field("durability", &self.pm.durability())
            .finish()
    }
}

impl PdvFile {
    /// Creates a zeroed file of `bytes` (rounded up to whole 4 KiB pages)
    /// at `path`, which must not exist, and maps it.
    pub fn create(path: impl AsRef<Path>, bytes: u64) -> Result<PdvFile> {
        let path = path.as_ref();
        if bytes == 0 {
            return Err(Error::InvalidOptions(format!(
                "{}: a PDV file needs at least one byte",
                path.display()
            )));
        }
        let len = bytes.div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
        if let Err(e) = pmem::allocate_file(&file, len) {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(Error::io(
                format!("allocate {len} bytes for {}", path.display()),
                e,
            ));
        }
        PdvFile::map(file, path)
    }

    /// Opens and maps an existing file made by [`PdvFile::create`].
    pub fn open(path: impl AsRef<Path>) -> Result<PdvFile> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        PdvFile::map(file, path)
    }

    fn map(file: File, path: &Path) -> Result<PdvFile> {
        match pmem::try_lock_exclusive(&file) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Error::Locked {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => return Err(Error::io(format!("lock {}", path.display()), e)),
        }
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
            .len();
        if len == 0 || !len.is_multiple_of(LINE_BYTES) {
            return Err(Error::Truncated {
                path: path.to_path_buf(),
                detail: format!("{len} bytes is not a positive whole number of 64-byte lines"),
            });
        }
        let durability = crate::pmem::detect_durability(&file, false);
        let pm = PmemFile::map(file, len, durability, None, None)?;
        Ok(PdvFile {
            pm,
            path: path.to_path_buf(),
            claimed: parking_lot::Mutex::new(HashSet::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes mapped (the file length).
    pub fn len_bytes(&self) -> u64 {
        self.pm.len()
    }

    /// How far a persisted update survives (power failure, process crash,
    /// or msync on a regular file).
    pub fn durability(&self) -> Durability {
        self.pm.durability()
    }

    /// The cache-line write-back instruction each update uses.
    pub fn flush_instruction(&self) -> &'static str {
        self.pm.flush_instruction().name()
    }

    /// Marks `offsets` as held by a new handle, or says who is in the way.
    fn claim(&self, offsets: &[u64], what: &str) -> Result<()> {
        if let Some(&end) = offsets.iter().max() {
            if end + 8 > self.pm.len() {
                return Err(Error::InvalidOptions(format!(
                    "{}: {what} needs bytes up to {}, the file has {}",
                    self.path.display(),
                    end + 8,
                    self.pm.len()
                )));
            }
        }
        let mut claimed = self.claimed.lock();
        if let Some(o) = offsets.iter().find(|&&o| claimed.contains(&o)) {
            return Err(Error::InvalidOptions(format!(
                "{}: {what}: the word at offset {o:#x} is in use by another live handle",
                self.path.display()
            )));
        }
        claimed.extend(offsets.iter().copied());
        Ok(())
    }

    fn release(&self, offsets: impl Iterator<Item = u64>) {
        let mut claimed = self.claimed.lock();
        for o in offsets {
            claimed.remove(&o);
        }
    }

    /// Variable `variable` of `layout`, recovered from its shadows. The
    /// handle holds the variable's words until dropped.
    pub fn pdv(&self, layout: PdvLayout, variable: u64) -> Result<Pdv<FileShadows<'_>>> {
        let what = format!("variable {variable} of {}", layout.name());
        let offsets: Vec<u64> = (0..layout.shadows())
            .map(|j| layout.shadow_offset(variable, j))
            .collect();
        self.claim(&offsets, &what)?;
        let shadows = FileShadows {
            file: self,
            base: layout.base_offset(variable),
            shadows: layout.shadows(),
            what,
        };
        Pdv::recover(shadows)
    }

    /// A single persisted word at the start of line `line` (offset 64·line),
    /// holding whatever value is there.
    pub fn word(&self, line: u64) -> Result<PersistedWord<'_>> {
        let offset = line * LINE_BYTES;
        self.claim(&[offset], &format!("word on line {line}"))?;
        Ok(PersistedWord {
            file: self,
            offset,
            value: self.pm.load_u64(offset),
        })
    }
}

/// The shadows of one variable in a [`PdvFile`]: shadow j is the word at
/// `base + 64·j`, written with an 8-byte store, a flush of its line and a
/// fence.
pub struct FileShadows<'f> {
    file: &'f PdvFile,
    base: u64,
    shadows: usize,
    what: String,
}

impl FileShadows<'_> {
    #[inline]
    fn offset(&self, index: usize) -> u64 {
        debug_assert!(index < self.shadows);
        self.base + index as u64 * LINE_BYTES
    }
}

impl fmt::Debug for FileShadows<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileShadows({})", self.location())
    }
}

impl ShadowMemory for FileShadows<'_> {
    fn shadows(&self) -> usize {
        self.shadows
    }

    #[inline]
    fn load(&self, index: usize) -> u64 {
        self.file.pm.load_u64(self.offset(index))
    }

    #[inline]
    fn store_persistent(&mut self, index: usize, word: u64) {
        let offset = self.offset(index);
        self.file.pm.store_u64(offset, word);
        // Durable after this fence: this shadow word.
        self.file.pm.persist(offset, 8);
    }

    fn location(&self) -> String {
        format!("{}: {}", self.file.path.display(), self.what)
    }
}

impl Drop for FileShadows<'_> {
    fn drop(&mut self) {
        let (base, n) = (self.base, self.shadows as u64);
        self.file.release((0..n).map(|j| base + j * LINE_BYTES));
    }
}

/// One persisted 64-bit word, updated in place: store, flush, fence of the
/// same line every time (the baseline PDV is measured against).
pub struct PersistedWord<'f> {
    file: &'f PdvFile,
    offset: u64,
    value: u64,
}

impl PersistedWord<'_> {
    /// The current value (as last persisted, or as found when opened).
    #[inline]
    pub fn get(&self) -> u64 {
        self.value
    }

    /// Makes `value` the word's value, durably.
    #[inline]
    pub fn persist(&mut self, value: u64) {
        self.file.pm.store_u64(self.offset, value);
        // Durable after this fence: the word.
        self.file.pm.persist(self.offset, 8);
        self.value = value;
    }
}

impl fmt::Debug for PersistedWord<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PersistedWord({} at {:#x} = {})",
            self.file.path.display(),
            self.offset,
            self.value
        )
    }
}

impl Drop for PersistedWord<'_> {
    fn drop(&mut self) {
        self.file.release(std::iter::once(self.offset));
    }
}

#[cfg(test)]
mod tests {
    //! The state machine's proof by exhaustion (small N) and by random
    //! sampling (N up to 64), on volatile shadows (`Vec<u64>`). The file
    //! layer is tested in `tests/pdv_file_survives_reopen.rs`.

    use std::collections::HashMap;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// The k-th value of a run: distinct for distinct k < 2^62 (an odd
    /// multiplier is a bijection modulo 2^62), spread over all 62 bits.
    fn distinct_value(k: u64) -> u64 {
        k.wrapping_mul(0x9E37_79B9_7F4A_7C15) & MAX_VALUE
    }

    fn tags_of(words: &[u64]) -> Vec<u8> {
        words.iter().map(|&w| tag_of(w)).collect()
    }

    fn fresh(n: usize) -> Pdv<Vec<u64>> {
        Pdv::recover(vec![0; n]).expect("zeroed shadows are a never-written variable")
    }

    /// Every tag pattern the writer can leave in N shadows, with the
    /// position it was in, found by running the real writer for 8 rounds
    /// (the patterns repeat with period 3N after the first round).
    fn reachable(n: usize) -> HashMap<Vec<u8>, Option<Position>> {
        let mut pdv = fresh(n);
        let mut out = HashMap::from([(vec![0; n], None)]);
        for k in 1..=8 * n as u64 {
            pdv.persist(distinct_value(k)).unwrap();
            let tags = tags_of(pdv.memory());
            let before = out.insert(tags.clone(), pdv.newest());
            assert!(
                before.is_none() || before == Some(pdv.newest()),
                "N={n}: pattern {tags:?} reached at two positions"
            );
            if k > 4 * n as u64 {
                assert!(before.is_some(), "N={n}: a new pattern after round 4");
            }
        }
        out
    }

    /// The same at the tag level for a cycle of `cycle` round tags (2 or 3),
    /// as the sequence of patterns after 0, 1, 2, … updates.
    fn tag_states(n: usize, cycle: u8, updates: usize) -> Vec<(Vec<u8>, Option<Position>)> {
        let (mut tags, mut newest) = (vec![0u8; n], None);
        let mut out = vec![(tags.clone(), newest)];
        for _ in 0..updates {
            let p = next_position_in(n, newest, cycle);
            tags[p.shadow] = p.round_tag;
            newest = Some(p);
            out.push((tags.clone(), newest));
        }
        out
    }

    fn all_patterns(n: usize) -> impl Iterator<Item = Vec<u8>> {
        (0..4u64.pow(n as u32))
            .map(move |code| (0..n).map(|i| (code >> (2 * i) & 3) as u8).collect())
    }

    #[test]
    fn pdv_tag_helpers_cycle_one_two_three() {
        assert_eq!([1, 2, 3].map(|t| next_tag(t, ROUND_TAGS)), [2, 3, 1]);
        assert_eq!([1, 2, 3].map(|t| prev_tag(t, ROUND_TAGS)), [3, 1, 2]);
        assert_eq!([1, 2].map(|t| next_tag(t, 2)), [2, 1]);
        assert_eq!([1, 2].map(|t| prev_tag(t, 2)), [2, 1]);
        let w = wrap(MAX_VALUE, 3);
        assert_eq!((tag_of(w), value_of(w)), (3, MAX_VALUE));
        assert_eq!((tag_of(wrap(0, 1)), value_of(wrap(0, 1))), (1, 0));
    }

    #[test]
    fn pdv_reachable_patterns_are_the_4n_documented_shapes() {
        for n in MIN_SHADOWS..=8 {
            let r = reachable(n);
            assert_eq!(r.len(), 4 * n, "N={n}");
            for (tags, newest) in &r {
                let Some(p) = newest else {
                    assert!(tags.iter().all(|&t| t == 0));
                    continue;
                };
                let j = p.shadow + 1;
                assert!(tags[..j].iter().all(|&t| t == p.round_tag), "{tags:?}");
                let behind = &tags[j..];
                let prev = prev_tag(p.round_tag, ROUND_TAGS);
                assert!(
                    behind.iter().all(|&t| t == prev)
                        || (p.round_tag == 1 && behind.iter().all(|&t| t == 0)),
                    "{tags:?} at {p:?}"
                );
            }
        }
    }

    /// Every pattern in {0,1,2,3}^N for N = 2..=8 (87 376 patterns): the
    /// scan accepts exactly the reachable ones, each with the writer's
    /// position, and names the pattern of every other one.
    #[test]
    fn pdv_exhaustive_patterns_recover_iff_reachable() {
        let (mut checked, mut accepted) = (0u64, 0u64);
        for n in MIN_SHADOWS..=8 {
            let r = reachable(n);
            for tags in all_patterns(n) {
                checked += 1;
                match (scan_tags(&tags), r.get(&tags)) {
                    (Ok(got), Some(want)) => {
                        assert_eq!(got, *want, "N={n} {tags:?}");
                        accepted += 1;
                    }
                    (Err(e), None) => {
                        assert_eq!(e.tags, tags);
                        assert!(!e.reason.is_empty());
                        let text = e.to_string();
                        assert!(text.contains(&format!("[{}]", e.pattern())), "{text}");
                    }
                    (Ok(got), None) => panic!("N={n}: unreachable {tags:?} recovered as {got:?}"),
                    (Err(e), Some(want)) => {
                        panic!("N={n}: reachable {tags:?} ({want:?}) refused: {e}")
                    }
                }
            }
        }
        assert_eq!(checked, (2..=8).map(|n| 4u64.pow(n)).sum::<u64>());
        assert_eq!(accepted, (2..=8).map(|n| 4 * n).sum::<u64>());
        println!("pdv exhaustive patterns: {checked} patterns, {accepted} reachable and recovered, the rest refused");
    }

    /// Explores every sequence over {update, crash-and-recover} up to a
    /// length, sharing prefixes (depth-first); at every node it crashes a
    /// copy of the state, which checks the crash point after that sequence.
    struct CrashExplorer {
        max_len: usize,
        next_value: u64,
        /// Sequences explored (= tree nodes, one per distinct sequence).
        sequences: u64,
        /// (sequence, crash point) pairs covered: a sequence of length l has
        /// l + 1 crash points (before the first shadow write, after each).
        pairs: u64,
    }

    impl CrashExplorer {
        /// `pdv` is the state after the sequence so far, `last` the value of
        /// its last completed update (None: never written).
        fn explore(&mut self, pdv: &Pdv<Vec<u64>>, last: Option<u64>, len: usize) {
            // Crash here: the volatile state is lost, recover from memory.
            let recovered = Pdv::recover(pdv.memory().clone()).unwrap_or_else(|e| {
                panic!("crash after a sequence of {len}: {e}");
            });
            assert_eq!(recovered.newest(), pdv.newest(), "after {len} steps");
            assert_eq!(recovered.is_written().then(|| recovered.get()), last);
            assert_eq!(recovered.get(), pdv.get());
            self.sequences += 1;
            self.pairs += len as u64 + 1;
            if len == self.max_len {
                return;
            }
            // Next step: an update (its write is atomic: the crash check of
            // this node is "before", the child's is "after").
            self.next_value += 1;
            let value = distinct_value(self.next_value);
            let mut updated = pdv.clone();
            updated.persist(value).unwrap();
            self.explore(&updated, Some(value), len + 1);
            // Next step: crash and recover, then go on from the recovered
            // variable.
            self.explore(&recovered, last, len + 1);
        }
    }

    /// Every update/crash sequence of length up to L = 3N+3 (so that round
    /// tags wrap 3 → 1) for N = 2..=6, with a crash check after every
    /// prefix: 4 793 339 sequences, 98 608 133 (sequence, crash point)
    /// pairs, all recovering the last completed update.
    #[test]
    fn pdv_exhaustive_update_crash_sequences_recover_the_last_update() {
        let (mut sequences, mut pairs) = (0u64, 0u64);
        for n in MIN_SHADOWS..=6 {
            let max_len = 3 * n + 3;
            let mut x = CrashExplorer {
                max_len,
                next_value: 0,
                sequences: 0,
                pairs: 0,
            };
            x.explore(&fresh(n), None, 0);
            // Complete: 2^(L+1) - 1 sequences, sum of 2^l (l + 1) = L 2^(L+1) + 1 pairs.
            assert_eq!(x.sequences, (1u64 << (max_len + 1)) - 1, "N={n}");
            assert_eq!(
                x.pairs,
                max_len as u64 * (1u64 << (max_len + 1)) + 1,
                "N={n}"
            );
            println!(
                "pdv exhaustive crash check N={n} L={max_len}: {} sequences, {} (sequence, crash point) pairs",
                x.sequences, x.pairs
            );
            sequences += x.sequences;
            pairs += x.pairs;
        }
        println!("pdv exhaustive crash check total: {sequences} sequences, {pairs} (sequence, crash point) pairs, 0 failures");
        assert_eq!((sequences, pairs), (4_793_339, 98_608_133));
    }

    /// Random N up to 64, random update runs, a crash at a random shadow
    /// write (the shadows keep exactly the first k writes), recovery, and on
    /// again from the recovered state, several times per case.
    #[test]
    fn pdv_random_crashes_for_large_n_recover_the_last_landed_update() {
        let mut rng = StdRng::seed_from_u64(0x5EED_0F7D);
        let mut counter = 0u64;
        let mut crashes = 0u64;
        for case in 0..300 {
            let n = if case < 8 {
                MAX_SHADOWS - case % 2
            } else {
                rng.gen_range(MIN_SHADOWS..=MAX_SHADOWS)
            };
            let mut pdv = fresh(n);
            let mut last = None;
            for _epoch in 0..6 {
                let updates = rng.gen_range(0..=4 * n);
                // snapshots[k]: the shadows after the first k writes.
                let mut snapshots = vec![(pdv.memory().clone(), pdv.newest(), last)];
                for _ in 0..updates {
                    counter += 1;
                    let value = distinct_value(counter);
                    pdv.persist(value).unwrap();
                    snapshots.push((pdv.memory().clone(), pdv.newest(), Some(value)));
                }
                let k = rng.gen_range(0..=updates);
                let (memory, newest, value) = snapshots.swap_remove(k);
                pdv = Pdv::recover(memory).unwrap_or_else(|e| panic!("N={n} k={k}: {e}"));
                assert_eq!(pdv.newest(), newest, "N={n} crash after write {k}");
                assert_eq!(pdv.is_written().then(|| pdv.get()), value);
                last = value;
                crashes += 1;
            }
        }
        println!("pdv random crashes: {crashes} crash points over 300 cases, N up to 64");
    }

    /// Changing the tags of one or two shadows of any reachable pattern
    /// (N = 2..=8) either is refused or gives a pattern that is itself
    /// reachable, recovered as the writer's position for it; never an
    /// unreachable pattern recovered.
    #[test]
    fn pdv_damaged_tags_are_refused_or_reachable() {
        let (mut damaged, mut refused) = (0u64, 0u64);
        for n in MIN_SHADOWS..=8 {
            let r = reachable(n);
            let mut check = |tags: &[u8]| {
                damaged += 1;
                match scan_tags(tags) {
                    Err(_) => refused += 1,
                    Ok(got) => assert_eq!(r.get(tags), Some(&got), "N={n} {tags:?}"),
                }
            };
            for original in r.keys() {
                for i in 0..n {
                    for a in (0..4).filter(|&a| a != original[i]) {
                        let mut one = original.clone();
                        one[i] = a;
                        check(&one);
                        for j in i + 1..n {
                            for b in (0..4).filter(|&b| b != original[j]) {
                                let mut two = one.clone();
                                two[j] = b;
                                check(&two);
                            }
                        }
                    }
                }
            }
        }
        println!("pdv damaged tags: {damaged} one- and two-shadow changes, {refused} refused, the rest reachable");
        assert!(refused * 100 > damaged * 95, "{refused} of {damaged}");
    }

    /// Detection rates of three round tags against two (the module header's
    /// figures): lost writes 1 to 2 rounds stale, and random one-tag changes.
    #[test]
    fn three_round_tags_catch_more_lost_writes() {
        // (caught, damaged) per cycle length, index 0: two round tags.
        let mut stale = [(0u64, 0u64); 2];
        let mut one_tag = [(0u64, 0u64); 2];
        for cycle in [2u8, 3] {
            let c = usize::from(cycle - 2);
            for n in MIN_SHADOWS..=6 {
                let states = tag_states(n, cycle, 8 * n);
                let reachable: HashMap<&[u8], Option<Position>> =
                    states.iter().map(|(t, p)| (t.as_slice(), *p)).collect();
                assert_eq!(
                    reachable.len(),
                    (cycle as usize + 1) * n,
                    "cycle {cycle} N={n}"
                );
                let count = |tags: &[u8], truth: &[u8], tally: &mut (u64, u64)| {
                    if tags == truth {
                        return;
                    }
                    tally.1 += 1;
                    match scan_tags_in(tags, cycle) {
                        Err(_) => tally.0 += 1,
                        Ok(got) => assert_eq!(reachable.get(tags), Some(&got), "{tags:?}"),
                    }
                };
                for (k, (truth, _)) in states.iter().enumerate().take(8 * n).skip(4 * n) {
                    // Earlier moments m with n <= k - m < 2n: 1 to 2 rounds back.
                    for (old, _) in &states[k + 1 - 2 * n..=k - n] {
                        for mask in 1u32..1 << n {
                            let image: Vec<u8> = (0..n)
                                .map(|i| if mask >> i & 1 == 1 { old[i] } else { truth[i] })
                                .collect();
                            count(&image, truth, &mut stale[c]);
                        }
                    }
                }
                for truth in reachable.keys() {
                    for i in 0..n {
                        for a in (0..4).filter(|&a| a != truth[i]) {
                            let mut tags = truth.to_vec();
                            tags[i] = a;
                            count(&tags, truth, &mut one_tag[c]);
                        }
                    }
                }
            }
        }
        let rate = |(caught, all): (u64, u64)| caught as f64 / all as f64;
        println!(
            "pdv damage caught, two vs three round tags: lost writes 1-2 rounds stale {:.1} % vs {:.1} %, one-tag changes {:.1} % vs {:.1} %",
            100.0 * rate(stale[0]),
            100.0 * rate(stale[1]),
            100.0 * rate(one_tag[0]),
            100.0 * rate(one_tag[1])
        );
        assert!(rate(stale[1]) > 0.9 && rate(stale[0]) < 0.6, "{stale:?}");
        assert!(
            (rate(one_tag[1]) - rate(one_tag[0])).abs() < 0.02,
            "{one_tag:?}"
        );
    }

    #[test]
    fn pdv_persist_writes_one_shadow_round_robin() {
        let mut pdv = fresh(3);
        let mut previous = pdv.memory().clone();
        for k in 0..10u64 {
            pdv.persist(k + 100).unwrap();
            let now = pdv.memory().clone();
            let changed: Vec<usize> = (0..3).filter(|&i| now[i] != previous[i]).collect();
            assert_eq!(changed, vec![(k % 3) as usize], "update {k}");
            assert_eq!(value_of(now[(k % 3) as usize]), k + 100);
            assert_eq!(pdv.get(), k + 100);
            previous = now;
        }
        // Rounds 1, 2, 3, 4 wrote tags 1, 2, 3, 1.
        assert_eq!(tags_of(pdv.memory()), [1, 3, 3]);
        assert_eq!(
            pdv.newest(),
            Some(Position {
                shadow: 0,
                round_tag: 1
            })
        );
    }

    #[test]
    fn pdv_bad_values_and_sizes_are_errors_not_panics() {
        let mut pdv = fresh(2);
        pdv.persist(MAX_VALUE).unwrap();
        let e = pdv.persist(MAX_VALUE + 1).unwrap_err();
        assert!(
            matches!(e, Error::PdvValueTooLarge { value, max } if value == MAX_VALUE + 1 && max == MAX_VALUE)
        );
        assert!(e.to_string().contains("2^62 - 1"), "{e}");
        assert!(pdv.persist(u64::MAX).is_err());
        assert_eq!(pdv.get(), MAX_VALUE, "a refused value changes nothing");
        assert_eq!(tags_of(pdv.memory()), [1, 0]);

        for n in [0, 1, 65] {
            let e = Pdv::recover(vec![0u64; n]).unwrap_err();
            assert!(matches!(e, Error::InvalidOptions(_)), "{e}");
            assert!(scan_tags(&vec![0; n]).is_err());
        }
        assert!(PdvLayout::sparse(1).is_err() && PdvLayout::dense(65).is_err());
        assert!(
            scan_tags(&[1, 4]).is_err(),
            "tag values above 3 are refused"
        );
    }

    #[test]
    fn pdv_invalid_patterns_are_named_in_the_error() {
        let cases: [(&[u8], &str); 5] = [
            (&[0, 1, 0], "shadow 0 was never written but shadow 1 was"),
            (&[2, 2, 0], "shadow 2 was never written"),
            (&[1, 2, 2], "shadow 1 has tag 2 behind round tag 1"),
            (&[2, 1, 3], "a second leap at shadow 2"),
            (&[1, 0, 3], "a second leap at shadow 2"),
        ];
        for (tags, reason) in cases {
            let words: Vec<u64> = tags.iter().map(|&t| u64::from(t) << TAG_SHIFT).collect();
            let e = Pdv::recover(words).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, Error::PdvInvalidPattern { .. }), "{text}");
            let pattern = tags
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            assert!(text.contains(&format!("[{pattern}]")), "{text}");
            assert!(text.contains(reason), "{text}");
        }
        // Reachable tags, but a never-written shadow with value bits.
        let e = Pdv::recover(vec![wrap(5, 1), 7]).unwrap_err();
        assert!(
            e.to_string()
                .contains("shadow 1 has tag 0 (never written) but value bits 0x7"),
            "{e}"
        );
    }
}
