//! `persimmon serve` from the command line: the listening line, flags over
//! the config file over defaults, bad settings refused, SIGTERM closing the
//! pool cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn serve(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn persimmon serve")
}

fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

fn addr_of(line: &str) -> String {
    line.strip_prefix("persimmon: listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Sends one inline command; returns the first reply line.
fn ask(addr: &str, command: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("{command}\r\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    line
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

#[test]
fn config_file_sets_the_pool_and_flags_win_over_it() {
    let dir = tempdir();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        "pool = \"from-file.pool\"\nport = 1\nrequirepass = \"filepw\"\npool-size = \"8M\"\n",
    )
    .unwrap();
    // The file's pool and password; the flag's port.
    let mut child = serve(
        &["--config", config.to_str().unwrap(), "--port", "0"],
        dir.path(),
    );
    let line = first_line(&mut child);
    assert!(line.contains("(pool from-file.pool, durability "), "{line}");
    let addr = addr_of(&line);
    assert_eq!(ask(&addr, "PING"), "-NOAUTH Authentication required.\r\n");
    assert_eq!(ask(&addr, "AUTH filepw"), "+OK\r\n");
    child.kill().unwrap();
    child.wait().unwrap();
    // --pool and --requirepass on the command line win.
    let mut child = serve(
        &[
            "--config",
            config.to_str().unwrap(),
            "--port",
            "0",
            "--pool",
            "flag.pool",
            "--requirepass",
            "flagpw",
        ],
        dir.path(),
    );
    let line = first_line(&mut child);
    assert!(line.contains("(pool flag.pool, "), "{line}");
    let addr = addr_of(&line);
    assert_eq!(ask(&addr, "AUTH filepw").chars().next(), Some('-'));
    assert_eq!(ask(&addr, "AUTH flagpw"), "+OK\r\n");
    // SIGTERM closes the pool cleanly and exits 0.
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("persimmon: pool flag.pool closed"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SIGTERM received"));
    assert!(dir.path().join("flag.pool").exists());
}

#[test]
fn default_pool_is_in_the_working_directory() {
    let dir = tempdir();
    let mut child = serve(&["--port", "0"], dir.path());
    let line = first_line(&mut child);
    assert!(
        line.starts_with("persimmon: listening on 127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("(pool persimmon.pool, durability "), "{line}");
    let addr = addr_of(&line);
    assert_eq!(ask(&addr, "SET k v"), "+OK\r\n");
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"SHUTDOWN\r\n").unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "SHUTDOWN sends no reply");
    assert!(child.wait().unwrap().success());
    assert!(dir.path().join("persimmon.pool").exists());
    // The CLI reads what the server wrote: its 1-byte type tag, then the value.
    let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["get", "k"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"\x01v\n");
}

#[test]
fn bad_settings_are_refused_with_a_message() {
    let dir = tempdir();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "no-such-key = 1\n").unwrap();
    for (args, needle) in [
        (vec!["--config", bad.to_str().unwrap()], "unknown field"),
        (vec!["--config", "/nonexistent.toml"], "/nonexistent.toml"),
        (vec!["--bind", "not-an-ip", "--port", "0"], "--bind"),
        (vec!["--maxclients", "0", "--port", "0"], "maxclients"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
            .arg("serve")
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A port in use is a clear error too.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["serve", "--port", &port])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen on"));
}

/// Sends one inline command; returns the first `n` reply lines.
fn ask_lines(addr: &str, command: &str, n: usize) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("{command}\r\n").as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    let mut text = String::new();
    for _ in 0..n {
        reader.read_line(&mut text).unwrap();
    }
    text
}

/// Stops the server with SHUTDOWN and waits for it to close the pool.
fn shutdown(addr: &str, mut child: Child) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"SHUTDOWN\r\n").unwrap();
    let _ = s.read_to_end(&mut Vec::new());
    assert!(child.wait().unwrap().success());
}

#[test]
fn serve_creates_an_ordered_pool_from_the_flag_or_the_config_file() {
    let dir = tempdir();
    // The global flag.
    let mut child = serve(
        &["--port", "0", "--ordered-index", "--pool", "flag.pool"],
        dir.path(),
    );
    let addr = addr_of(&first_line(&mut child));
    assert_eq!(ask(&addr, "SET b 2"), "+OK\r\n");
    assert_eq!(ask(&addr, "SET a 1"), "+OK\r\n");
    assert_eq!(
        ask_lines(&addr, "KRANGE - +", 5),
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    shutdown(&addr, child);
    // The CLI scans what the server wrote.
    let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["scan", "--pool", "flag.pool"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.stdout,
        b"a\nb\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The config file's `ordered-index = true`.
    let config = dir.path().join("ordered.toml");
    std::fs::write(&config, "pool = \"file.pool\"\nordered-index = true\n").unwrap();
    let mut child = serve(
        &["--config", config.to_str().unwrap(), "--port", "0"],
        dir.path(),
    );
    let addr = addr_of(&first_line(&mut child));
    assert_eq!(ask(&addr, "SET user:1 x"), "+OK\r\n");
    assert_eq!(
        ask_lines(&addr, "KPREFIX user:", 3),
        "*1\r\n$6\r\nuser:1\r\n"
    );
    shutdown(&addr, child);

    // Neither: KRANGE says what is missing.
    let mut child = serve(&["--port", "0", "--pool", "plain.pool"], dir.path());
    let addr = addr_of(&first_line(&mut child));
    let reply = ask(&addr, "KRANGE - +");
    assert!(
        reply.starts_with("-ERR KRANGE needs the ordered index")
            && reply.contains("--ordered-index"),
        "{reply}"
    );
    shutdown(&addr, child);
}

/// Reads a whole INFO reply (a bulk string) of `section`.
fn info(addr: &str, section: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("INFO {section}\r\n").as_bytes())
        .unwrap();
    let mut reader = BufReader::new(s);
    let mut len = String::new();
    reader.read_line(&mut len).unwrap();
    let n: usize = len.trim_end().trim_start_matches('$').parse().unwrap();
    let mut body = vec![0u8; n + 2];
    reader.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

#[test]
fn serve_creates_a_dram_point_index_from_the_flag_or_the_config_file() {
    let dir = tempdir();
    // The global flags.
    let mut child = serve(
        &[
            "--port",
            "0",
            "--ordered-index",
            "--point-index",
            "dram",
            "--pool",
            "flag.pool",
        ],
        dir.path(),
    );
    let addr = addr_of(&first_line(&mut child));
    assert_eq!(ask(&addr, "SET b 2"), "+OK\r\n");
    assert_eq!(ask(&addr, "SET a 1"), "+OK\r\n");
    assert_eq!(
        ask_lines(&addr, "CONFIG GET point-index", 5),
        "*2\r\n$11\r\npoint-index\r\n$4\r\ndram\r\n"
    );
    assert!(info(&addr, "persistence").contains("point_index:dram\r\n"));
    shutdown(&addr, child);
    // Restarted without the flags: the pool keeps its placement.
    let mut child = serve(&["--port", "0", "--pool", "flag.pool"], dir.path());
    let addr = addr_of(&first_line(&mut child));
    assert_eq!(ask_lines(&addr, "GET a", 2), "$1\r\n1\r\n");
    assert_eq!(
        ask_lines(&addr, "KRANGE - +", 5),
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    let text = info(&addr, "persistence");
    assert!(text.contains("point_index:dram\r\n"), "{text}");
    shutdown(&addr, child);
    // The CLI reads what the server wrote, and sees the placement.
    let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["stats", "--json", "--pool", "flag.pool"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["point_index"], "dram");

    // The config file's keys.
    let config = dir.path().join("dram.toml");
    std::fs::write(
        &config,
        "pool = \"file.pool\"\nordered-index = true\npoint-index = \"dram\"\n",
    )
    .unwrap();
    let mut child = serve(
        &["--config", config.to_str().unwrap(), "--port", "0"],
        dir.path(),
    );
    let addr = addr_of(&first_line(&mut child));
    assert_eq!(ask(&addr, "SET user:1 x"), "+OK\r\n");
    assert!(info(&addr, "persistence").contains("point_index:dram\r\n"));
    shutdown(&addr, child);

    // The flag wins over the file: pm.
    let config = dir.path().join("pm.toml");
    std::fs::write(
        &config,
        "pool = \"pm.pool\"\nordered-index = true\npoint-index = \"dram\"\n",
    )
    .unwrap();
    let mut child = serve(
        &[
            "--config",
            config.to_str().unwrap(),
            "--port",
            "0",
            "--point-index",
            "pm",
        ],
        dir.path(),
    );
    let addr = addr_of(&first_line(&mut child));
    assert!(info(&addr, "persistence").contains("point_index:pm\r\n"));
    shutdown(&addr, child);
}

#[test]
fn bad_point_index_settings_are_refused() {
    let dir = tempdir();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "point-index = \"nvm\"\n").unwrap();
    let dram_only = dir.path().join("dram-only.toml");
    std::fs::write(&dram_only, "point-index = \"dram\"\n").unwrap();
    for (args, needles) in [
        (
            vec!["--config", bad.to_str().unwrap()],
            &["point-index", "pm or dram"][..],
        ),
        (
            vec!["--point-index", "bogus", "--port", "0"],
            &["--point-index", "dram"],
        ),
        (
            vec!["--point-index", "dram", "--port", "0", "--pool", "x.pool"],
            &["DRAM point index", "--ordered-index"],
        ),
        (
            vec!["--config", dram_only.to_str().unwrap(), "--port", "0"],
            &["DRAM point index", "ordered index"],
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
            .arg("serve")
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        for needle in needles {
            assert!(err.contains(needle), "{args:?}: {needle}: {err}");
        }
    }
    assert!(!dir.path().join("x.pool").exists());
    assert!(!dir.path().join("persimmon.pool").exists());
}

#[test]
fn the_default_pool_on_an_ordinary_file_system_is_in_the_disk_domain() {
    // The target directory sits on the project's file system, not tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut child = serve(&["--port", "0"], dir.path());
    let line = first_line(&mut child);
    if line.contains("durability process-crash") {
        eprintln!("skipped: the target directory is on tmpfs ({line})");
        shutdown(&addr_of(&line), child);
        return;
    }
    assert!(
        line.contains(
            "(pool persimmon.pool, durability disk: an acknowledged write survives \
             a process crash and power loss)"
        ),
        "{line}"
    );
    let addr = addr_of(&line);
    let field = |text: &str, name: &str| -> u64 {
        let prefix = format!("{name}:");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("INFO lacks {name}: {text}"))
            .trim()
            .parse()
            .unwrap()
    };
    let before = info(&addr, "persistence");
    assert!(before.contains("durability:disk\r\n"), "{before}");
    for i in 0..20 {
        assert_eq!(ask(&addr, &format!("SET k{i} v{i}")), "+OK\r\n");
    }
    let after = info(&addr, "persistence");
    assert!(
        field(&after, "log_syncs") > field(&before, "log_syncs"),
        "each acknowledged SET waited for a sync of the log: {after}"
    );
    assert!(field(&after, "log_appended_bytes") > field(&before, "log_appended_bytes"));
    assert!(field(&after, "log_capacity_bytes") > 0);
    assert!(dir.path().join("persimmon.pool.wal").exists());
    shutdown(&addr, child);
    let out = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["get", "k19"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"\x01v19\n");
}
