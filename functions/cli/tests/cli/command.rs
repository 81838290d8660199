//! The `sluice` binary run in a folder, as the tests run it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `sluice ARGS` in `dir` with the default backends (no `SLUICE_*` store variables),
/// `stdin` as its input: whether it succeeded, its standard output and error.
pub fn sluice(dir: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .env_remove("SLUICE_METADATA")
        .env_remove("SLUICE_STORAGE")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sluice");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or("").as_bytes()).expect("write stdin");
    drop(input);
    let out = child.wait_with_output().expect("sluice output");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}
