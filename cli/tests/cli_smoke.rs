//! The binary starts and describes itself. Also makes cargo build `panel` before the
//! cross-process tests in `tests/` look for it.

use std::process::Command;

#[test]
fn help_lists_subcommands() {
    let out = Command::new(env!("CARGO_BIN_EXE_panel"))
        .arg("--help")
        .output()
        .expect("run panel --help");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gate"),
        "help lists the gate subcommand: {text}"
    );
}
