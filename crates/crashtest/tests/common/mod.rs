//! What the integration tests share: running the crashtest binary.

use std::process::Command;

/// Runs crashtest with `args`; returns (success, stdout).
pub fn crashtest(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(args)
        .output()
        .expect("run crashtest");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}
