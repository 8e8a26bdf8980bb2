//! The C test program (`tests/c/test_persimmon.c`) and the example
//! (`examples/verify_million.c`), compiled with the system C compiler
//! (`cc -Wall -Wextra -Werror`) against the library cargo built for this
//! test run — statically (`libpersimmon.a`) and dynamically
//! (`libpersimmon.so`) — and run on pools in a scratch directory in
//! /dev/shm.
//!
//! The library is built by asking cargo for it (`cargo build -p
//! persimmon-c --message-format=json`, in this test's profile and target
//! directory): cargo does not build a `cdylib`/`staticlib`-only library for
//! integration tests, and the JSON names the exact files it made, wherever
//! `CARGO_TARGET_DIR` points.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The freshly built `libpersimmon.a` and `libpersimmon.so`.
struct Library {
    static_lib: PathBuf,
    shared_lib: PathBuf,
}

/// Builds the library once per test process.
fn library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(build_library)
}

fn build_library() -> Library {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let result = Command::new(cargo)
        .args(["build", "-p", "persimmon-c", "--message-format=json"])
        .args(profile_args())
        .arg("--manifest-path")
        .arg(crate_dir().join("Cargo.toml"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "cargo build -p persimmon-c failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let files: Vec<PathBuf> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "persimmon")
        .filter(|m| {
            m["manifest_path"]
                .as_str()
                .is_some_and(|p| p.contains("persimmon-c"))
        })
        .flat_map(|m| m["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .collect();
    let find = |suffix: &str| {
        files
            .iter()
            .find(|f| f.to_string_lossy().ends_with(suffix))
            .unwrap_or_else(|| panic!("cargo reported no {suffix}: {files:?}"))
            .clone()
    };
    Library {
        static_lib: find("libpersimmon.a"),
        shared_lib: find("libpersimmon.so"),
    }
}

/// The profile this test was built in, read from its path
/// (`<target>/<dir>/deps/<test>`): `debug` is the test profile.
fn profile_args() -> Vec<String> {
    let exe = std::env::current_exe().expect("the test knows its executable");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    match dir.as_str() {
        "debug" | "" => vec!["--profile".into(), "test".into()],
        "release" => vec!["--release".into()],
        other => vec!["--profile".into(), other.into()],
    }
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Compiles `source` into `out`, linked against the static or the shared
/// library; panics with the compiler's output when it fails.
fn compile(source: &Path, out: &Path, statically: bool) {
    let lib = library();
    let mut cc = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-pthread"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(source)
        .arg("-o")
        .arg(out);
    if statically {
        // The Rust standard library's system dependencies (what rustc
        // --print native-static-libs names for this target).
        cc.arg(&lib.static_lib).args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]);
    } else {
        let dir = lib
            .shared_lib
            .parent()
            .expect("the library is in a directory");
        let rpath = format!("-Wl,-rpath,{}", dir.display());
        cc.arg("-L").arg(dir).arg("-lpersimmon").arg(rpath);
    }
    let result = cc.output().expect("the C compiler `cc` runs");
    assert!(
        result.status.success(),
        "compiling {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
}

/// Runs `program args`; returns its stdout, panicking with both streams
/// when it fails.
fn run(program: &Path, args: &[&Path]) -> String {
    let result = Command::new(program)
        .args(args)
        .output()
        .expect("the compiled program runs");
    let stdout = String::from_utf8_lossy(&result.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "{} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        program.display(),
        result.status
    );
    print!("{stdout}");
    stdout
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("capi-test-")
        .tempdir_in("/dev/shm")
        .expect("a scratch directory in /dev/shm")
}

/// Fewest checks the C test program may report (it ran 280 when written).
const MIN_CHECKS: u32 = 280;

/// Runs the C test program built one way and checks its summary line.
fn c_test_program(statically: bool) {
    let dir = scratch();
    let exe = dir.path().join("test_persimmon");
    compile(
        &crate_dir().join("tests/c/test_persimmon.c"),
        &exe,
        statically,
    );
    let pools = dir.path().join("pools");
    std::fs::create_dir(&pools).expect("create the pool directory");
    let out = run(&exe, &[&pools]);
    let summary = out
        .lines()
        .find(|l| l.starts_with("persimmon C API: "))
        .expect("the C test prints its summary");
    let passed: u32 = summary
        .trim_start_matches("persimmon C API: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the summary starts with the passed count");
    assert!(summary.ends_with(", 0 failed"), "{summary}");
    assert!(passed >= MIN_CHECKS, "only {passed} checks ran: {summary}");
}

#[test]
fn c_test_program_against_the_static_library() {
    c_test_program(true);
}

#[test]
fn c_test_program_against_the_shared_library() {
    c_test_program(false);
}

#[test]
fn verify_million_example_builds_and_verifies_a_small_run() {
    let dir = scratch();
    let exe = dir.path().join("verify_million");
    compile(&crate_dir().join("examples/verify_million.c"), &exe, true);
    let pool = dir.path().join("verify.pool");
    let out = run(&exe, &[&pool, Path::new("20000")]);
    assert!(
        out.contains("20000 put, 20000 in the pool, 0 wrong"),
        "{out}"
    );
    assert!(!pool.exists(), "the example removes its pool");
}

/// The C example of `readme` (a path from the crate directory), as
/// printed, compiles and prints what it promises on a pool named by its
/// argument (`./app [POOL]`).
fn readme_example_runs(readme: &str) {
    let text = std::fs::read_to_string(crate_dir().join(readme)).expect("the README");
    let example = text
        .split("```c\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("{readme} has a C example"));
    let dir = scratch();
    let pool = dir.path().join("app.pool");
    let source = dir.path().join("example.c");
    std::fs::write(&source, example).expect("write the example");
    let exe = dir.path().join("example");
    compile(&source, &exe, false);
    assert_eq!(run(&exe, &[&pool]), "user:1 = Ada\n", "{readme}");
    // Run again, on the pool it made: the same answer.
    assert_eq!(run(&exe, &[&pool]), "user:1 = Ada\n", "{readme}");
    assert!(
        pool.is_file(),
        "the example made its pool in the scratch dir"
    );
}

#[test]
fn readme_examples_build_and_run() {
    readme_example_runs("README.md");
    readme_example_runs("../../README.md");
}
