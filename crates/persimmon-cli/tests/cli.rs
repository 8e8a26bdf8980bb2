//! End-to-end tests of the `persimmon` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("create a temporary directory")
}

/// Small pools keep the tests light.
fn persimmon(pool: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_persimmon"));
    cmd.args(args)
        .arg("--pool")
        .arg(pool)
        .args(["--pool-size", "4M", "--pool-max", "1G"]);
    cmd
}

fn run(pool: &Path, args: &[&str]) -> Output {
    persimmon(pool, args).output().expect("run persimmon")
}

fn run_with_stdin(pool: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = persimmon(pool, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn persimmon");
    // A command that fails before reading (a bad flag, a pool it may not
    // create) can exit first: a closed pipe is then no test failure.
    match child.stdin.take().unwrap().write_all(stdin) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().expect("wait for persimmon")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

fn pool_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("test.pool")
}

#[test]
fn put_get_del_round_trip_and_exit_codes() {
    let dir = tempdir();
    let pool = pool_in(&dir);

    let o = run(&pool, &["put", "greeting", "hello world"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(&pool, &["get", "greeting"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(o.stdout, b"hello world\n");

    let o = run(&pool, &["put", "greeting", "bonjour"]);
    assert_eq!(code(&o), 0);
    assert_eq!(run(&pool, &["get", "greeting"]).stdout, b"bonjour\n");

    let o = run(&pool, &["get", "absent"]);
    assert_eq!(code(&o), 1);
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).starts_with("persimmon: "), "{}", stderr(&o));
    assert!(stderr(&o).contains("absent"), "{}", stderr(&o));

    let o = run(&pool, &["del", "greeting"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(code(&run(&pool, &["get", "greeting"])), 1);
    let o = run(&pool, &["del", "greeting"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));

    // Escaped keys and values, printed back raw or escaped.
    let o = run(
        &pool,
        &["put", "-e", "bin\\xff\\tkey", "line1\\nline2\\x00"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        run(&pool, &["get", "-e", "bin\\xff\\tkey"]).stdout,
        b"line1\\nline2\x00\n"
    );
    assert_eq!(
        run(&pool, &["get", "--escaped", "bin\\xff\\tkey"]).stdout,
        b"line1\\nline2\x00\n"
    );
    let o = run(&pool, &["get", "bin\\xff\\tkey"]);
    assert_eq!(code(&o), 1, "without -e the backslashes are literal");
}

#[test]
fn errors_exit_2_with_a_message() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    // Commands other than put/load/demo do not create a pool.
    for args in [
        &["get", "k"][..],
        &["del", "k"],
        &["dump"],
        &["stats"],
        &["check"],
        &["scan"],
    ] {
        let o = run(&pool, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    }
    assert!(!pool.exists());

    let big_key = "k".repeat(70_000);
    let o = run(&pool, &["put", &big_key, "v"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("limit"), "{}", stderr(&o));

    let o = run(&pool, &["put", "-e", "bad\\q", "v"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown escape"), "{}", stderr(&o));

    let o = run(
        &pool,
        &["load", dir.path().join("missing.txt").to_str().unwrap()],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("missing.txt"), "{}", stderr(&o));

    let o = persimmon(&pool, &["put", "k", "v"])
        .args(["--pool-size", "1X"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn load_then_dump_round_trips_binary_data() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"plain".to_vec(), b"value".to_vec()),
        (b"tab\there".to_vec(), b"new\nline".to_vec()),
        (
            b"back\\slash".to_vec(),
            b"\\x41 is not an escape here".to_vec(),
        ),
        (b"\xff\xfe\x00\x01".to_vec(), b"\xff".to_vec()),
        (
            "cl\u{e9} \u{1f351}".as_bytes().to_vec(),
            "\u{65e5}\u{672c}".as_bytes().to_vec(),
        ),
        (b"empty value".to_vec(), Vec::new()),
        (Vec::new(), b"empty key".to_vec()),
        (b"cr\r".to_vec(), b"\r\n\t\\".to_vec()),
        (b"truncated utf8 \xe2\x82".to_vec(), b"\xc3(".to_vec()),
    ];
    for i in 0..300u32 {
        let key: Vec<u8> = (0..(i % 17))
            .map(|j| (i * 31 + j * 7) as u8)
            .chain(i.to_le_bytes())
            .collect();
        let value: Vec<u8> = (0..(i % 100)).map(|j| (i ^ (j * 13)) as u8).collect();
        records.push((key, value));
    }
    // Load through our own escaping (checked against the expected bytes
    // below), with a hand-written line using uppercase hex and \r.
    let mut input = Vec::new();
    for (k, v) in &records {
        input.extend(escape(k));
        input.push(b'\t');
        input.extend(escape(v));
        input.push(b'\n');
    }
    input.extend_from_slice(b"hand\\x2Dwritten\tx\\ry\n");
    records.push((b"hand-written".to_vec(), b"x\ry".to_vec()));
    let file = dir.path().join("in.tsv");
    std::fs::write(&file, &input).unwrap();

    let o = run(&pool, &["load", file.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let n = records.len();
    assert!(
        stderr(&o).contains(&format!("loaded {n} records")),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("records/s"), "{}", stderr(&o));

    let o = run(&pool, &["dump"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::str::from_utf8(&o.stdout).is_ok(),
        "dump output is UTF-8"
    );
    let mut dumped = parse_dump(&o.stdout);
    dumped.sort();
    records.sort();
    assert_eq!(dumped, records);

    // The dump loads back into a fresh pool (from stdin) and dumps the same.
    let pool2 = dir.path().join("copy.pool");
    let o = run_with_stdin(&pool2, &["load"], &o.stdout);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut again = parse_dump(&run(&pool2, &["dump"]).stdout);
    again.sort();
    assert_eq!(again, records);
}

/// Reference escaping, written independently of the binary's.
fn escape(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\t' => out.extend_from_slice(b"\\t"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\\' => out.extend_from_slice(b"\\\\"),
                c => out.extend_from_slice(c.to_string().as_bytes()),
            }
        }
        for byte in chunk.invalid() {
            out.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
        }
    }
    out
}

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        match s[i + 1] {
            b't' => out.push(b'\t'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b'\\' => out.push(b'\\'),
            b'x' => {
                let hex = std::str::from_utf8(&s[i + 2..i + 4]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            c => panic!("unexpected escape {c}"),
        }
        i += 2;
    }
    out
}

fn parse_dump(out: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    assert!(out.is_empty() || out.ends_with(b"\n"));
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let fields: Vec<&[u8]> = l.split(|&b| b == b'\t').collect();
            assert_eq!(
                fields.len(),
                2,
                "one tab per line: {:?}",
                String::from_utf8_lossy(l)
            );
            (unescape(fields[0]), unescape(fields[1]))
        })
        .collect()
}

#[test]
fn malformed_load_lines_exit_2_naming_the_line() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let cases: [(&[u8], &str, &str); 5] = [
        (b"a\t1\nb\t2\nno tab here\nd\t4\n", "line 3", "no tab"),
        (b"a\t1\nbad\\q\t2\n", "line 2", "unknown escape"),
        (b"a\t1\nb\t2\nc\t3\\x4\n", "line 3", "hex"),
        (b"a\tb\tc\n", "line 1", "second tab"),
        (b"a\t1\nb\ttrailing\\", "line 2", "backslash"),
    ];
    for (input, line, what) in cases {
        let o = run_with_stdin(&pool, &["load"], input);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.starts_with("persimmon: "), "{e}");
        assert!(e.contains(line), "{e}");
        assert!(e.contains(what), "{e}");
    }
}

#[test]
fn stats_json_has_the_fields_and_the_key_count() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let input: String = (0..1234).map(|i| format!("key{i}\tvalue{i}\n")).collect();
    let o = run_with_stdin(&pool, &["load"], input.as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(code(&run(&pool, &["del", "key7"])), 0);

    let o = run(&pool, &["stats", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats --json is JSON");
    assert_eq!(v["keys"], 1233);
    // --pool-size 4M: the engine rounds down to whole segments.
    assert!(v["pool_bytes"].as_u64().unwrap() >= 3 << 20);
    assert!(v["used_bytes"].as_u64().unwrap() > 0);
    assert!(v["used_bytes"].as_u64() <= v["pool_bytes"].as_u64());
    assert!(v["live_bytes"].as_u64().unwrap() > 0);
    let durability = v["durability"].as_str().unwrap();
    assert!(
        ["power-fail", "disk", "process-crash"].contains(&durability),
        "{durability}"
    );
    for field in [
        "segments_total",
        "index_depth",
        "lanes",
        "flush_instruction",
        "rebuild_done",
    ] {
        assert!(!v[field].is_null(), "{field} missing");
    }
    assert!(v["pmem"]["fences"].is_u64());

    let o = run(&pool, &["stats"]);
    assert_eq!(code(&o), 0);
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("keys") && table.contains("1233"), "{table}");
    assert!(table.contains(durability), "{table}");
}

#[test]
fn check_reports_good_pools_and_rejects_other_files() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    for i in 0..100 {
        assert_eq!(code(&run(&pool, &["put", &format!("k{i}"), "v"])), 0);
    }
    let o = run(&pool, &["check"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = String::from_utf8(o.stdout).unwrap();
    assert!(
        report.contains("keys") && report.contains("100"),
        "{report}"
    );
    assert!(report.contains("consistent"), "{report}");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some text\n").unwrap();
    let o = run(&text, &["check"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("not a Persimmon pool"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&text).unwrap(),
        b"just some text\n",
        "left untouched"
    );

    let big = dir.path().join("zeros.bin");
    std::fs::write(&big, vec![0u8; 3 << 20]).unwrap();
    for args in [&["check"][..], &["get", "k"], &["put", "k", "v"], &["dump"]] {
        let o = run(&big, args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(
            stderr(&o).contains("not a Persimmon pool"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn demo_verifies_its_keys() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let o = run(&pool, &["demo", "--keys", "2000"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = String::from_utf8(o.stdout).unwrap();
    for needle in [
        "puts/s",
        "gets/s",
        "per put",
        "per get",
        "bytes per key",
        "Db::open",
        "all 2000 values verified",
    ] {
        assert!(report.contains(needle), "{needle}: {report}");
    }
    // The pool stays, holds the keys, and checks clean.
    let o = run(&pool, &["stats", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["keys"], 2000);
    assert_eq!(code(&run(&pool, &["check"])), 0);
    assert_eq!(run(&pool, &["get", "00000042"]).stdout.len(), 65);

    // A second run reopens the pool and overwrites the same keys.
    let o = run(&pool, &["demo", "--keys", "500"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = String::from_utf8(o.stdout).unwrap();
    assert!(report.contains("reopened with 2000 keys"), "{report}");
    assert_eq!(code(&run(&pool, &["check"])), 0);
    // --fresh starts over, but deletes only a pool.
    let o = run(&pool, &["demo", "--keys", "10", "--fresh"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&run(&pool, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(v["keys"], 10);
    let text = dir.path().join("precious.txt");
    std::fs::write(&text, "keep me").unwrap();
    let o = run(&text, &["demo", "--keys", "10", "--fresh"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("not a Persimmon pool"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&text).unwrap(), b"keep me");
}

#[test]
fn help_is_available_for_every_command() {
    for cmd in [
        "put", "get", "ttl", "del", "load", "dump", "scan", "stats", "check", "demo", "bench",
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_persimmon"))
            .args([cmd, "--help"])
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{cmd}");
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("--pool"), "{cmd}: {text}");
        assert!(text.contains("--ordered-index"), "{cmd}: {text}");
        assert!(text.contains("--point-index"), "{cmd}: {text}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["scan", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    for needle in [
        "--from",
        "--to",
        "exclusive",
        "--prefix",
        "--rev",
        "--limit",
        "--values",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

/// `persimmon bench` with the interface's exact flags, Persimmon only, for
/// about a second; the JSON holds the agreed fields.
#[test]
fn bench_runs_persimmon_for_a_second_and_writes_json() {
    let dir = tempdir();
    let json = dir.path().join("bench.json");
    let o = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args([
            "bench",
            "--engines",
            "persimmon",
            "--workload",
            "get-ratio:50,95",
        ])
        .args([
            "--keys",
            "20000",
            "--threads",
            "1,2",
            "--duration-secs",
            "0.25",
        ])
        .args(["--warmup-secs", "0.05", "--pool-dir"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run persimmon bench");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("get-ratio:95"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let records = v.as_array().expect("a JSON array");
    assert_eq!(records.len(), 4, "2 workloads × 2 thread counts");
    for r in records {
        for field in [
            "engine",
            "workload",
            "threads",
            "value_size",
            "ops_per_sec",
            "p50_ns",
            "p99_ns",
            "p999_ns",
            "max_ns",
            "pm_bytes_per_op",
            "flushes_per_op",
            "fences_per_op",
        ] {
            assert!(r.get(field).is_some(), "missing {field} in {r}");
        }
        assert_eq!(r["engine"], "persimmon");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn bench_refuses_ycsb_e_and_unknown_engines_clearly() {
    let dir = tempdir();
    let bench = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_persimmon"))
            .arg("bench")
            .args(args)
            .arg("--pool-dir")
            .arg(dir.path())
            .output()
            .expect("run persimmon bench")
    };
    let o = bench(&["--workload", "ycsb-e"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("range scans"), "{}", stderr(&o));

    let o = bench(&["--engines", "persimmon,mysql"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown engine"), "{}", stderr(&o));

    if !cfg!(feature = "rocksdb") {
        let o = bench(&["--engines", "persimmon,rocksdb", "--keys", "10"]);
        assert_eq!(code(&o), 2);
        assert!(stderr(&o).contains("--features peers"), "{}", stderr(&o));
    }
}

/// Lines of a command's stdout.
fn lines(o: &Output) -> Vec<String> {
    assert_eq!(code(o), 0, "{}", stderr(o));
    String::from_utf8(o.stdout.clone())
        .expect("UTF-8 output")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn scan_prints_keys_in_order_with_from_to_prefix_rev_and_limit() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    // `put` creates the pool with the ordered index; `load` then adds to it.
    let o = run(&pool, &["put", "--ordered-index", "user:2", "two"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let input = b"z\tlast\nuser:10\tten\na\tfirst\nuser:1\tone\nuser:3\tthree\nb\tsecond\n";
    let o = run_with_stdin(&pool, &["load"], input);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let scan = |args: &[&str]| lines(&run(&pool, &[&["scan"][..], args].concat()));
    let all = ["a", "b", "user:1", "user:10", "user:2", "user:3", "z"];
    assert_eq!(scan(&[]), all);
    // --from inclusive, --to exclusive.
    assert_eq!(scan(&["--from", "user:2"]), ["user:2", "user:3", "z"]);
    assert_eq!(scan(&["--to", "user:2"]), ["a", "b", "user:1", "user:10"]);
    assert_eq!(
        scan(&["--from", "b", "--to", "user:2"]),
        ["b", "user:1", "user:10"]
    );
    assert!(scan(&["--from", "user:2", "--to", "user:2"]).is_empty());
    assert!(scan(&["--from", "z", "--to", "a"]).is_empty());
    // --prefix, alone and intersected with --from/--to.
    let users = ["user:1", "user:10", "user:2", "user:3"];
    assert_eq!(scan(&["--prefix", "user:"]), users);
    assert_eq!(scan(&["--prefix", "user:1"]), ["user:1", "user:10"]);
    assert_eq!(
        scan(&["--prefix", "user:", "--from", "user:2"]),
        ["user:2", "user:3"]
    );
    assert_eq!(
        scan(&["--prefix", "user:", "--to", "user:2"]),
        ["user:1", "user:10"]
    );
    assert_eq!(
        scan(&["--prefix", "user:", "--from", "a", "--to", "zz"]),
        users
    );
    assert!(scan(&["--prefix", "user:", "--from", "z"]).is_empty());
    assert!(scan(&["--prefix", "nothing"]).is_empty());
    // --rev and --limit.
    let mut reversed = all.to_vec();
    reversed.reverse();
    assert_eq!(scan(&["--rev"]), reversed);
    assert_eq!(scan(&["--rev", "--limit", "2"]), ["z", "user:3"]);
    assert_eq!(scan(&["--limit", "3"]), ["a", "b", "user:1"]);
    assert!(scan(&["--limit", "0"]).is_empty());
    assert_eq!(
        scan(&["--prefix", "user:", "--rev", "--limit", "3", "--to", "user:3"]),
        ["user:2", "user:10", "user:1"]
    );
    // --values: key<TAB>value, the format load reads.
    assert_eq!(
        scan(&["--values", "--prefix", "user:1"]),
        ["user:1\tone", "user:10\tten"]
    );
    assert_eq!(scan(&["--values", "--rev", "--limit", "1"]), ["z\tlast"]);
    // Deleted keys are gone.
    assert_eq!(code(&run(&pool, &["del", "user:10"])), 0);
    assert_eq!(scan(&["--prefix", "user:1"]), ["user:1"]);
    let o = run(&pool, &["scan", "--limit", "-1"]);
    assert_eq!(code(&o), 2, "a negative --limit is a usage error");
}

#[test]
fn scan_values_round_trip_binary_keys_through_load() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"tab\there".to_vec(), b"new\nline".to_vec()),
        (b"back\\slash".to_vec(), b"\\x41".to_vec()),
        (b"\xff\xfe\x00\x01".to_vec(), b"\xff".to_vec()),
        (b"\xff".to_vec(), b"ff".to_vec()),
        (b"\x00".to_vec(), b"zero".to_vec()),
        (
            "cl\u{e9}".as_bytes().to_vec(),
            "\u{65e5}".as_bytes().to_vec(),
        ),
        (b"empty value".to_vec(), Vec::new()),
        (b"cr\r".to_vec(), b"\r\n\t\\".to_vec()),
    ];
    for i in 0..200u32 {
        let key: Vec<u8> = (0..(i % 11)).map(|j| (i * 37 + j * 11) as u8).collect();
        records.push((key, i.to_le_bytes().to_vec()));
    }
    records.sort();
    records.dedup_by(|a, b| a.0 == b.0);
    let mut input = Vec::new();
    for (k, v) in &records {
        input.extend(escape(k));
        input.push(b'\t');
        input.extend(escape(v));
        input.push(b'\n');
    }
    // `load` creates the pool with the ordered index.
    let o = run_with_stdin(&pool, &["load", "--ordered-index"], &input);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    // Byte order, one record per line, escaped as dump escapes.
    let o = run(&pool, &["scan", "--values"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::str::from_utf8(&o.stdout).is_ok(),
        "scan output is UTF-8"
    );
    assert_eq!(
        parse_dump(&o.stdout),
        records,
        "in byte order, every record"
    );
    assert_eq!(o.stdout, input, "the same escaping as dump");
    // Keys only: the same keys, one per line.
    let o = run(&pool, &["scan"]);
    // (The empty key is an empty line.)
    let keys: Vec<Vec<u8>> = o
        .stdout
        .strip_suffix(b"\n")
        .unwrap()
        .split(|&b| b == b'\n')
        .map(unescape)
        .collect();
    assert_eq!(keys.len(), records.len());
    assert!(keys.iter().zip(&records).all(|(k, r)| *k == r.0));

    // scan --values | load into a fresh ordered pool: the same records.
    let scanned = run(&pool, &["scan", "--values"]).stdout;
    let copy = dir.path().join("copy.pool");
    let o = run_with_stdin(&copy, &["load", "--ordered-index"], &scanned);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(run(&copy, &["scan", "--values"]).stdout, scanned);
    let mut dumped = parse_dump(&run(&copy, &["dump"]).stdout);
    dumped.sort();
    assert_eq!(dumped, records);

    // Escaped arguments: a binary prefix and bounds.
    let o = run(&pool, &["scan", "-e", "--prefix", "\\xff", "--values"]);
    let want: Vec<_> = records
        .iter()
        .filter(|(k, _)| k.starts_with(b"\xff"))
        .cloned()
        .collect();
    assert!(want.len() >= 2);
    assert_eq!(parse_dump(&o.stdout), want);
    let o = run(
        &pool,
        &["scan", "--escaped", "--from", "\\x00", "--to", "\\x00\\x00"],
    );
    // NUL is valid UTF-8: printed as is, as dump does.
    assert_eq!(o.stdout, b"\x00\n");
}

#[test]
fn scan_needs_a_pool_with_the_ordered_index() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    assert_eq!(code(&run(&pool, &["put", "k", "v"])), 0);
    let o = run(&pool, &["scan", "--prefix", "k"]);
    assert_eq!(code(&o), 2);
    assert!(o.stdout.is_empty());
    let e = stderr(&o);
    assert!(e.starts_with("persimmon: "), "{e}");
    assert!(e.contains("ordered index"), "{e}");
    assert!(e.contains("--ordered-index"), "{e}");
    // The flag only matters when a pool is created: this one stays as it is.
    assert_eq!(code(&run(&pool, &["put", "--ordered-index", "k2", "v"])), 0);
    assert_eq!(code(&run(&pool, &["scan"])), 2);
    let v: serde_json::Value =
        serde_json::from_slice(&run(&pool, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(v["ordered_index"], false);
    // The way out the message names: copy into a pool created with it.
    let dumped = run(&pool, &["dump"]).stdout;
    let ordered = dir.path().join("ordered.pool");
    let o = run_with_stdin(&ordered, &["load", "--ordered-index"], &dumped);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&run(&ordered, &["scan"])), ["k", "k2"]);
}

#[test]
fn stats_and_check_show_the_ordered_index() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    // demo creates the pool with the ordered index too.
    let o = run(&pool, &["demo", "--keys", "300", "--ordered-index"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        lines(&run(&pool, &["scan", "--limit", "3"])),
        ["00000000", "00000001", "00000002"]
    );
    assert_eq!(
        lines(&run(&pool, &["scan", "--rev", "--limit", "1"])),
        ["00000299"]
    );

    let o = run(&pool, &["stats", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ordered_index"], true);
    assert!(v["ordered_nodes"].as_u64().unwrap() >= 300, "{v}");
    assert!(v["segments_ordered"].as_u64().unwrap() >= 1, "{v}");
    assert!(v["ordered_walk_done"].is_boolean(), "{v}");
    let table = String::from_utf8(run(&pool, &["stats"]).stdout).unwrap();
    assert!(table.contains("ordered index      yes: "), "{table}");
    assert!(table.contains(" ordered, "), "{table}");

    let o = run(&pool, &["check"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = String::from_utf8(o.stdout).unwrap();
    assert!(report.contains("ordered nodes         300\n"), "{report}");
    assert!(report.contains("ordered orphans       0\n"), "{report}");
    assert!(report.contains("consistent"), "{report}");

    // A pool without it says so, and check has no ordered lines.
    let plain = dir.path().join("plain.pool");
    assert_eq!(code(&run(&plain, &["put", "k", "v"])), 0);
    let table = String::from_utf8(run(&plain, &["stats"]).stdout).unwrap();
    assert!(table.contains("ordered index      no"), "{table}");
    let v: serde_json::Value =
        serde_json::from_slice(&run(&plain, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(v["ordered_index"], false);
    assert_eq!(v["ordered_nodes"], 0);
    let report = String::from_utf8(run(&plain, &["check"]).stdout).unwrap();
    assert!(!report.contains("ordered"), "{report}");
}

/// `--point-index dram` (with `--ordered-index`) makes a pool whose point
/// index lives in DRAM: every later command reopens it (rebuilding that
/// index from the ordered index) and finds every key; stats says where the
/// index lives.
#[test]
fn a_pool_created_with_the_dram_point_index_reopens_and_serves() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let input: String = (0..500).map(|i| format!("key{i:04}\tvalue{i}\n")).collect();
    let o = run_with_stdin(
        &pool,
        &["load", "--ordered-index", "--point-index", "dram"],
        input.as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Each command below is a new process: a reopen.
    assert_eq!(code(&run(&pool, &["put", "extra", "x"])), 0);
    assert_eq!(run(&pool, &["get", "key0042"]).stdout, b"value42\n");
    assert_eq!(run(&pool, &["get", "extra"]).stdout, b"x\n");
    assert_eq!(code(&run(&pool, &["get", "key9999"])), 1);
    assert_eq!(code(&run(&pool, &["del", "key0001"])), 0);
    assert_eq!(code(&run(&pool, &["get", "key0001"])), 1);
    assert_eq!(
        lines(&run(&pool, &["scan", "--prefix", "key000"])),
        [
            "key0000", "key0002", "key0003", "key0004", "key0005", "key0006", "key0007", "key0008",
            "key0009"
        ]
    );
    assert_eq!(
        lines(&run(&pool, &["scan", "--rev", "--limit", "2"])),
        ["key0499", "key0498"]
    );
    let o = run(
        &pool,
        &["scan", "--from", "key0100", "--to", "key0102", "--values"],
    );
    assert_eq!(o.stdout, b"key0100\tvalue100\nkey0101\tvalue101\n");

    let o = run(&pool, &["stats", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["point_index"], "dram", "{v}");
    assert_eq!(v["ordered_index"], true, "{v}");
    // stats waits for the rebuild after open.
    assert_eq!(v["point_index_ready"], true, "{v}");
    assert!(v["dram_index_bytes"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["keys"], 500, "{v}");
    let table = String::from_utf8(run(&pool, &["stats"]).stdout).unwrap();
    assert!(table.contains("point index        dram: "), "{table}");
    assert!(table.contains("rebuilt from the ordered index"), "{table}");
    let o = run(&pool, &["check"]);
    assert_eq!(
        code(&o),
        0,
        "{}{}",
        stderr(&o),
        String::from_utf8_lossy(&o.stdout)
    );

    // The placement is chosen at creation: a flag on an existing pool
    // changes nothing.
    assert_eq!(
        code(&run(&pool, &["put", "--point-index", "pm", "k", "v"])),
        0
    );
    let v: serde_json::Value =
        serde_json::from_slice(&run(&pool, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(v["point_index"], "dram", "{v}");

    // demo creates a DRAM pool too, and verifies its reopen.
    let demo = dir.path().join("demo.pool");
    let o = run(
        &demo,
        &[
            "demo",
            "--keys",
            "300",
            "--ordered-index",
            "--point-index",
            "dram",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = String::from_utf8(o.stdout).unwrap();
    assert!(report.contains("point index in dram"), "{report}");
    assert!(report.contains("all 300 values verified"), "{report}");
}

#[test]
fn point_index_flag_errors_exit_2() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    // DRAM needs the ordered index to rebuild from: refused, no pool made.
    for args in [
        &["put", "--point-index", "dram", "k", "v"][..],
        &["demo", "--keys", "10", "--point-index", "dram"],
    ] {
        let o = run(&pool, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.starts_with("persimmon: "), "{e}");
        assert!(e.contains("DRAM point index"), "{e}");
        assert!(e.contains("--ordered-index"), "{e}");
        assert!(!pool.exists(), "{args:?}");
    }
    let o = run_with_stdin(&pool, &["load", "--point-index", "dram"], b"k\tv\n");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!pool.exists());

    // An unknown placement is a usage error naming the choices.
    for bad in ["bogus", "DRAM", ""] {
        let o = run(
            &pool,
            &["put", "--ordered-index", "--point-index", bad, "k", "v"],
        );
        assert_eq!(code(&o), 2, "{bad:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("--point-index"), "{e}");
        assert!(e.contains("pm") && e.contains("dram"), "{e}");
        assert!(!pool.exists());
    }

    // The default and an explicit pm: the PM point index.
    assert_eq!(
        code(&run(
            &pool,
            &["put", "--ordered-index", "--point-index", "pm", "k", "v"]
        )),
        0
    );
    let v: serde_json::Value =
        serde_json::from_slice(&run(&pool, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(v["point_index"], "pm", "{v}");
    assert_eq!(v["point_index_ready"], true, "{v}");
    assert_eq!(v["dram_index_bytes"], 0, "{v}");
    let table = String::from_utf8(run(&pool, &["stats"]).stdout).unwrap();
    assert!(table.contains("point index        pm"), "{table}");
    let plain = dir.path().join("plain.pool");
    assert_eq!(code(&run(&plain, &["put", "k", "v"])), 0);
    let v: serde_json::Value =
        serde_json::from_slice(&run(&plain, &["stats", "--json"]).stdout).unwrap();
    assert_eq!(v["point_index"], "pm", "{v}");
}

fn stats_json(pool: &Path) -> serde_json::Value {
    let o = run(pool, &["stats", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("stats --json is JSON")
}

/// `persimmon ttl` output: seconds left, parsed from `S.sss s left, ...`.
fn seconds_left(o: &Output) -> f64 {
    let text = lines(o).join("\n");
    assert!(text.contains(" s left, expires at 2"), "{text}");
    assert!(text.ends_with('Z'), "{text}");
    text.split(' ')
        .next()
        .unwrap()
        .parse()
        .expect("seconds first")
}

#[test]
fn put_with_ttl_expires_and_ttl_reports_the_time_left() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let o = run(&pool, &["put", "--ttl", "100", "session", "abc"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(run(&pool, &["get", "session"]).stdout, b"abc\n");
    let left = seconds_left(&run(&pool, &["ttl", "session"]));
    assert!((95.0..=100.0).contains(&left), "{left}");

    // A key without a deadline, and a put without --ttl replacing one.
    assert_eq!(code(&run(&pool, &["put", "plain", "v"])), 0);
    assert_eq!(lines(&run(&pool, &["ttl", "plain"])), ["no deadline"]);
    assert_eq!(
        code(&run(&pool, &["put", "-e", "tab\\tkey", "v", "--ttl", "50"])),
        0
    );
    assert!(seconds_left(&run(&pool, &["ttl", "-e", "tab\\tkey"])) <= 50.0);
    assert_eq!(code(&run(&pool, &["put", "-e", "tab\\tkey", "w"])), 0);
    assert_eq!(
        lines(&run(&pool, &["ttl", "-e", "tab\\tkey"])),
        ["no deadline"]
    );

    let o = run(&pool, &["ttl", "absent"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).contains("absent"), "{}", stderr(&o));

    let v = stats_json(&pool);
    assert_eq!(
        v["format_version"], 7,
        "a new pool is at 7 (three-choice buckets), which has deadlines: {v}"
    );
    assert!(v["deadlines_pending"].as_u64().unwrap() >= 1, "{v}");
    assert!(v["keys_expired"].is_u64(), "{v}");
    let table = String::from_utf8(run(&pool, &["stats"]).stdout).unwrap();
    assert!(table.contains("deadlines"), "{table}");

    // A key with a 1 s TTL is gone once the second has passed.
    assert_eq!(code(&run(&pool, &["put", "--ttl", "1", "short", "v"])), 0);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(code(&run(&pool, &["get", "short"])), 1);
    assert_eq!(code(&run(&pool, &["ttl", "short"])), 1);
    assert_eq!(run(&pool, &["get", "session"]).stdout, b"abc\n");
}

#[test]
fn bad_ttls_exit_2_before_any_pool_is_made() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    let far = (persimmon::MAX_DEADLINE_MS / 1000).to_string();
    for (ttl, says) in [
        ("0", "at least 1 second"),
        ("-5", "not a whole number"),
        ("1.5", "not a whole number"),
        ("soon", "not a whole number"),
        (far.as_str(), "9999-12-31T23:59:59.999Z"),
        ("18446744073709551615", "latest deadline"),
        ("18446744073709551616", "not a whole number"),
    ] {
        let o = run(&pool, &["put", "--ttl", ttl, "k", "v"]);
        assert_eq!(code(&o), 2, "{ttl}: {}", stderr(&o));
        assert!(stderr(&o).contains("--ttl"), "{ttl}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{ttl}: {}", stderr(&o));
        assert!(!pool.exists(), "{ttl}");
    }
    // ttl, like get, needs the pool to exist.
    let o = run(&pool, &["ttl", "k"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!pool.exists());
}

/// `key{i}<TAB>value{i}` lines for `range`.
fn numbered(range: std::ops::Range<u32>) -> String {
    range.map(|i| format!("key{i}\tvalue{i}\n")).collect()
}

#[test]
fn load_commits_batches_and_counts_what_it_loaded() {
    let dir = tempdir();
    let input = numbered(0..2500);
    let mut expected = parse_dump(input.as_bytes());
    expected.sort();
    for batch in [None, Some("1"), Some("7")] {
        let pool = dir.path().join(format!("load-{batch:?}.pool"));
        let mut args = vec!["load"];
        args.extend(batch.iter().flat_map(|b| ["--batch", *b]));
        let o = run_with_stdin(&pool, &args, input.as_bytes());
        assert_eq!(code(&o), 0, "{batch:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("loaded 2500 records in"), "{e}");
        assert!(e.contains("records/s"), "{e}");
        let per_batch = batch.unwrap_or("100");
        assert!(e.contains(&format!("up to {per_batch} per batch")), "{e}");
        let mut dumped = parse_dump(&run(&pool, &["dump"]).stdout);
        dumped.sort();
        assert_eq!(dumped, expected, "{batch:?}");
        let v = stats_json(&pool);
        assert_eq!(v["keys"], 2500);
        // A new pool is at version 7 (three-choice buckets), which has
        // batches: a load has nothing to raise.
        assert_eq!(v["format_version"], 7, "{batch:?}: {v}");
    }
    // A later line with the same key wins, inside a batch as across them.
    let pool = dir.path().join("dup.pool");
    let o = run_with_stdin(
        &pool,
        &["load", "--batch", "3"],
        b"a\t1\nb\t2\na\t3\nb\t4\na\t5\n",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("loaded 5 records"), "{}", stderr(&o));
    assert_eq!(run(&pool, &["get", "a"]).stdout, b"5\n");
    assert_eq!(run(&pool, &["get", "b"]).stdout, b"4\n");
}

#[test]
fn a_failed_load_keeps_every_record_before_the_bad_line() {
    let dir = tempdir();
    // A malformed line in the middle of a batch: the records before it
    // are committed, the message names it and counts them.
    let pool = dir.path().join("syntax.pool");
    let mut input = numbered(0..9);
    input.push_str("no tab on line 10\n");
    input.push_str(&numbered(10..20));
    let o = run_with_stdin(&pool, &["load", "--batch", "4"], input.as_bytes());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("line 10"), "{e}");
    assert!(e.contains("records before it stay loaded: 9"), "{e}");
    assert_eq!(stats_json(&pool)["keys"], 9);

    // A record the engine refuses (a key over 64 KiB) on line 6 fails the
    // batch of lines 5 to 8: lines 1 to 5 stay loaded. (From a file: the
    // input is more than a pipe holds, and the load stops before its end.)
    let pool = dir.path().join("engine.pool");
    let mut input = numbered(0..5);
    input.push_str(&format!("{}\tv\n", "k".repeat(70_000)));
    input.push_str(&numbered(6..20));
    let file = dir.path().join("big-key.tsv");
    std::fs::write(&file, &input).unwrap();
    let o = run(&pool, &["load", "--batch", "4", file.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("line 6"), "{e}");
    assert!(e.contains("limit"), "{e}");
    assert!(e.contains("records before it stay loaded: 5"), "{e}");
    let mut dumped = parse_dump(&run(&pool, &["dump"]).stdout);
    dumped.sort();
    let mut expected = parse_dump(numbered(0..5).as_bytes());
    expected.sort();
    assert_eq!(dumped, expected);
}

#[test]
fn bad_batch_sizes_exit_2_with_the_limits() {
    let dir = tempdir();
    let pool = pool_in(&dir);
    for (batch, says) in [
        ("0", "at least 1 record"),
        ("100001", "at most 100000 records"),
        ("ten", "not a whole number"),
        ("-1", "--batch"),
    ] {
        let o = run(&pool, &["load", "--batch", batch]);
        assert_eq!(code(&o), 2, "{batch}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{batch}: {}", stderr(&o));
        assert!(!pool.exists(), "{batch}");
    }
    let o = run_with_stdin(&pool, &["load", "--batch", "100_000"], b"k\tv\n");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}
