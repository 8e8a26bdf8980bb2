//! Every engine this build has (Persimmon and its variants always; LMDB
//! and RocksDB with their features) stores, reads back, overwrites and
//! read-modify-writes through the same `Store` adapter the benchmark uses,
//! so a throughput figure is never the figure of an adapter that drops
//! writes or misses reads. The engines with ordered reads also scan: the
//! pairs come in key order from the start key, as many as asked; the others
//! refuse to scan. Values of 16 KiB to 64 KiB (persimmon-tiered's SSD
//! extents, rocksdb-blob's blobs) read back too.

use persimmon_bench::engines::{self, Batch, EngineKind, OpenConfig};
use persimmon_bench::keys::KeyBuf;

#[test]
fn every_built_engine_reads_its_writes() {
    let root = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let built: Vec<EngineKind> = EngineKind::ALL.into_iter().filter(|k| k.built()).collect();
    assert!(built.len() >= 5);
    for kind in built {
        let dir = root.path().join(kind.name());
        std::fs::create_dir_all(&dir).unwrap();
        let store = engines::open(kind, &OpenConfig::new(dir))
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        assert!(!store.durability().is_empty());

        let mut key = KeyBuf::new(8);
        let mut batch = Batch::new(8, 16, 100);
        for i in 0..100u64 {
            batch.push(key.key(i), &[i as u8; 16]);
        }
        store.load(&batch).unwrap();
        store.finish_load().unwrap();

        let mut out = Vec::new();
        for i in 0..100u64 {
            assert!(store.read(key.key(i), &mut out).unwrap(), "{}", kind.name());
            assert_eq!(out, [i as u8; 16], "{} key {i}", kind.name());
        }
        assert!(!store.read(key.key(1000), &mut out).unwrap());

        // Keys in byte order; scan 5 pairs from the 10th key, and past the end.
        let mut sorted: Vec<u64> = (0..100).collect();
        sorted.sort_by_key(|&i| key.key(i).to_vec());
        if kind.has_ordered_reads() {
            let start = key.key(sorted[10]).to_vec();
            assert_eq!(
                store.scan(&start, 5, &mut out).unwrap(),
                5,
                "{}",
                kind.name()
            );
            let mut last = key.key(sorted[14]).to_vec();
            last.extend_from_slice(&[sorted[14] as u8; 16]);
            assert_eq!(out, last, "{}: out holds the 5th pair", kind.name());
            let near_end = key.key(sorted[97]).to_vec();
            assert_eq!(
                store.scan(&near_end, 10, &mut out).unwrap(),
                3,
                "{}",
                kind.name()
            );
            assert_eq!(store.scan(&[0xFF; 9], 10, &mut out).unwrap(), 0);
        } else {
            assert!(
                store.scan(key.key(0), 5, &mut out).is_err(),
                "{}",
                kind.name()
            );
        }

        store.write(key.key(7), b"seven").unwrap();
        assert!(store.read(key.key(7), &mut out).unwrap());
        assert_eq!(out, b"seven", "{}", kind.name());

        assert!(store
            .read_modify_write(key.key(7), b"eight", &mut out)
            .unwrap());
        assert_eq!(out, b"seven", "{}: the old value is read", kind.name());
        assert!(store.read(key.key(7), &mut out).unwrap());
        assert_eq!(out, b"eight", "{}", kind.name());

        assert!(!store
            .read_modify_write(key.key(2000), b"new", &mut out)
            .unwrap());
        assert!(store.read(key.key(2000), &mut out).unwrap());
        assert_eq!(out, b"new", "{}", kind.name());

        // Values above the tier threshold (SSD extents, blob files), one
        // with an unaligned tail, overwritten once.
        for (i, len) in [(3000u64, 16384usize), (3001, 20_000), (3002, 65536)] {
            for fill in [1u8, 2] {
                let value: Vec<u8> = (0..len).map(|j| (j as u8) ^ fill ^ i as u8).collect();
                store.write(key.key(i), &value).unwrap();
                assert!(store.read(key.key(i), &mut out).unwrap());
                assert!(out == value, "{}: {len}-byte value {fill}", kind.name());
            }
        }
    }
}
