//! PDV file story: variables persisted through a real `PdvFile` on
//! `/dev/shm` (sparse and dense layouts, and plain persisted words) are
//! recovered after the file is dropped and reopened, keep going from there,
//! sit at the offsets the layouts promise, cost one flush and one fence per
//! update, and damaged shadows are reported with their pattern while the
//! other variables of the file still recover.

use std::path::{Path, PathBuf};

use persimmon::pdv::{tag_of, value_of, PdvFile, PdvLayout, MAX_VALUE};
use persimmon::pmem::thread_counters;
use persimmon::Error;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("create a temporary directory")
}

fn layouts() -> Vec<PdvLayout> {
    let mut out = Vec::new();
    for n in [2, 3, 8, 64] {
        out.push(PdvLayout::sparse(n).unwrap());
        out.push(PdvLayout::dense(n).unwrap());
    }
    out
}

/// Variable v gets 5v + 3 updates (so the variables stop at different
/// shadows and rounds), with values that name the variable and the update.
fn value(variable: u64, update: u64) -> u64 {
    (variable << 40 | update) & MAX_VALUE
}

fn updates(variable: u64, n: usize, epoch: u64) -> u64 {
    (5 * variable + 3 + epoch * n as u64) % (4 * n as u64 + 1)
}

fn word_at(path: &Path, offset: u64) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    let at = offset as usize;
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn pdv_variables_survive_drop_and_reopen_in_both_layouts() {
    let dir = scratch();
    const VARIABLES: u64 = 19; // two full dense groups and part of a third
    for layout in layouts() {
        let path: PathBuf = dir.path().join(format!("{}.pdv", layout.name()));
        let mut expected = vec![None; VARIABLES as usize];
        for epoch in 0..3u64 {
            let file = if epoch == 0 {
                PdvFile::create(&path, layout.bytes_for(VARIABLES)).unwrap()
            } else {
                PdvFile::open(&path).unwrap()
            };
            assert!(file.len_bytes() >= layout.bytes_for(VARIABLES));
            let mut vars: Vec<_> = (0..VARIABLES)
                .map(|v| file.pdv(layout, v).unwrap())
                .collect();
            for (v, pdv) in vars.iter().enumerate() {
                assert_eq!(
                    pdv.is_written().then(|| pdv.get()),
                    expected[v],
                    "{} variable {v} after reopen {epoch}",
                    layout.name()
                );
            }
            // Interleave the variables' updates, as threads sharing dense
            // lines would.
            let n = layout.shadows();
            let most = (0..VARIABLES).map(|v| updates(v, n, epoch)).max().unwrap();
            for u in 0..most {
                for (v, pdv) in vars.iter_mut().enumerate() {
                    let v64 = v as u64;
                    if u < updates(v64, n, epoch) {
                        let x = value(v64, epoch * 1000 + u);
                        pdv.persist(x).unwrap();
                        expected[v] = Some(x);
                    }
                }
            }
            for (v, pdv) in vars.iter().enumerate() {
                assert_eq!(Some(pdv.get()), expected[v].or(Some(0)));
            }
        }
        // The newest shadow of each variable is where the layout says.
        let file = PdvFile::open(&path).unwrap();
        let mut newest = Vec::new();
        for v in 0..VARIABLES {
            let pdv = file.pdv(layout, v).unwrap();
            if let Some(p) = pdv.newest() {
                let n = layout.shadows() as u64;
                let offset = if layout.is_dense() {
                    (v / 8) * 64 * n + p.shadow as u64 * 64 + (v % 8) * 8
                } else {
                    (v * n + p.shadow as u64) * 64
                };
                assert_eq!(layout.shadow_offset(v, p.shadow), offset);
                newest.push((offset, p.round_tag, expected[v as usize].unwrap()));
            }
        }
        drop(file);
        assert!(!newest.is_empty());
        for (offset, tag, value) in newest {
            let word = word_at(&path, offset);
            assert_eq!(
                (tag_of(word), value_of(word)),
                (tag, value),
                "{}",
                layout.name()
            );
        }
    }
}

#[test]
fn pdv_shadows_of_one_variable_are_on_distinct_lines_not_shared_when_sparse() {
    for layout in layouts() {
        let n = layout.shadows();
        let lines =
            |v: u64| -> Vec<u64> { (0..n).map(|j| layout.shadow_offset(v, j) / 64).collect() };
        for v in 0..20 {
            let mine = lines(v);
            let mut dedup = mine.clone();
            dedup.sort_unstable();
            dedup.dedup();
            assert_eq!(dedup.len(), n, "{} variable {v}", layout.name());
            for w in 0..20 {
                if w == v {
                    continue;
                }
                let shared = lines(w).iter().filter(|l| mine.contains(l)).count();
                let same_group = v / 8 == w / 8;
                let want = if layout.is_dense() && same_group {
                    n
                } else {
                    0
                };
                assert_eq!(shared, want, "{} variables {v} and {w}", layout.name());
            }
            assert!(layout.shadow_offset(v, n - 1) + 8 <= layout.bytes_for(v + 1));
        }
    }
}

#[test]
fn pdv_update_is_one_store_one_flush_one_fence() {
    let dir = scratch();
    let path = dir.path().join("counters.pdv");
    let layout = PdvLayout::sparse(16).unwrap();
    let file = PdvFile::create(&path, layout.bytes_for(1) + 64).unwrap();
    let mut pdv = file.pdv(layout, 0).unwrap();
    let mut word = file.word(16).unwrap();
    for (what, ops) in [("pdv", 0), ("word", 1)] {
        let before = thread_counters();
        for k in 0..1000 {
            if ops == 0 {
                pdv.persist(k).unwrap();
            } else {
                word.persist(k);
            }
        }
        let d = thread_counters().since(&before);
        assert_eq!(d.fences, 1000, "{what}");
        assert_eq!(d.bytes_written, 8000, "{what}");
        if cfg!(target_arch = "x86_64") {
            assert_eq!(d.flushes, 1000, "{what}: one clwb/clflushopt per update");
        }
    }
    assert_eq!((pdv.get(), word.get()), (999, 999));
}

#[test]
fn pdv_persisted_word_survives_reopen() {
    let dir = scratch();
    let path = dir.path().join("words.pdv");
    {
        let file = PdvFile::create(&path, 4 * 64).unwrap();
        let mut w = file.word(3).unwrap();
        assert_eq!(w.get(), 0);
        w.persist(u64::MAX);
        w.persist(42);
    }
    let file = PdvFile::open(&path).unwrap();
    assert_eq!(file.word(3).unwrap().get(), 42);
    assert_eq!(word_at(&path, 3 * 64), 42);
}

#[test]
fn pdv_damaged_shadow_is_reported_and_other_variables_recover() {
    let dir = scratch();
    let path = dir.path().join("damaged.pdv");
    let layout = PdvLayout::dense(4).unwrap();
    {
        let file = PdvFile::create(&path, layout.bytes_for(8)).unwrap();
        for v in 0..8 {
            let mut pdv = file.pdv(layout, v).unwrap();
            for k in 0..6 {
                pdv.persist(v * 100 + k).unwrap();
            }
        }
    }
    // Six updates of four shadows: tags [2 2 1 1]. Make variable 5's
    // shadow 3 a leap forward: [2 2 1 3].
    let offset = layout.shadow_offset(5, 3);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = offset as usize;
    let word = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(tag_of(word), 1);
    let damaged = value_of(word) | 3 << 62;
    bytes[at..at + 8].copy_from_slice(&damaged.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let file = PdvFile::open(&path).unwrap();
    let e = file.pdv(layout, 5).unwrap_err();
    assert!(matches!(e, Error::PdvInvalidPattern { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("[2 2 1 3]"), "{text}");
    assert!(text.contains("variable 5 of pdv-4-dense"), "{text}");
    assert!(text.contains("damaged.pdv"), "{text}");
    for v in (0..8).filter(|&v| v != 5) {
        let pdv = file.pdv(layout, v).unwrap();
        assert_eq!(pdv.get(), v * 100 + 5);
    }
    // The refused variable's words were released (the error is the
    // pattern again, not "in use").
    assert!(matches!(
        file.pdv(layout, 5),
        Err(Error::PdvInvalidPattern { .. })
    ));
}

#[test]
fn pdv_file_misuse_gets_clear_errors() {
    let dir = scratch();
    let path = dir.path().join("misuse.pdv");
    let layout = PdvLayout::sparse(4).unwrap();
    let file = PdvFile::create(&path, layout.bytes_for(2)).unwrap();
    assert_eq!(file.len_bytes(), 4096, "rounded up to a page");

    // One live handle per variable (and per word).
    let first = file.pdv(layout, 0).unwrap();
    let e = file.pdv(layout, 0).unwrap_err();
    assert!(
        e.to_string().contains("in use by another live handle"),
        "{e}"
    );
    let e = file.word(2).unwrap_err();
    assert!(e.to_string().contains("in use"), "{e}");
    drop(first);
    file.pdv(layout, 0).unwrap();
    assert!(file.word(2).is_ok());

    // A variable past the end of the file.
    let e = file.pdv(layout, 1000).unwrap_err();
    assert!(e.to_string().contains("the file has 4096"), "{e}");
    assert!(file.word(64).is_err() && file.word(63).is_ok());

    // A value wider than 62 bits.
    let mut v = file.pdv(layout, 1).unwrap();
    assert!(matches!(
        v.persist(MAX_VALUE + 1),
        Err(Error::PdvValueTooLarge { .. })
    ));

    // Create refuses an existing file; a second open is refused while held.
    assert!(PdvFile::create(&path, 4096).is_err());
    assert!(matches!(PdvFile::open(&path), Err(Error::Locked { .. })));
    assert!(PdvFile::open(dir.path().join("missing.pdv")).is_err());
    assert!(PdvFile::create(dir.path().join("empty.pdv"), 0).is_err());
    std::fs::write(dir.path().join("odd.pdv"), [0u8; 100]).unwrap();
    assert!(matches!(
        PdvFile::open(dir.path().join("odd.pdv")),
        Err(Error::Truncated { .. })
    ));
}
