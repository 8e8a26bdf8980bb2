//! The checked-in `include/persimmon.h` is what cbindgen makes of the
//! source today. On a difference the test fails and says how to regenerate:
//! `PERSIMMON_BLESS_HEADER=1 cargo test -p persimmon-c --test header`
//! (which rewrites the file instead of failing).

use std::path::Path;

#[test]
fn checked_in_header_matches_cbindgen() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = crate_dir.join("include/persimmon.h");
    if std::env::var_os("PERSIMMON_BLESS_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write include/persimmon.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        let line = first_difference(&checked_in, &generated);
        panic!(
            "include/persimmon.h is stale: it differs from what cbindgen makes of src/ \
             (first at line {line}). Regenerate it with\n    \
             PERSIMMON_BLESS_HEADER=1 cargo test -p persimmon-c --test header\n\
             and commit it."
        );
    }
}

fn first_difference(a: &str, b: &str) -> usize {
    let same = a.lines().zip(b.lines()).take_while(|(x, y)| x == y).count();
    same + 1
}
