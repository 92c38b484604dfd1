//! A cross-process test's folder: each process it starts logs to `ROOT/logs/NAME.log`,
//! a failure message carries the tail of every log, and a wait for a condition names what
//! it waited for, with those tails, when it times out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The log file of process `name` under `root/logs`, opened twice (stdout and stderr).
pub fn log_file(root: &Path, name: &str) -> (std::fs::File, std::fs::File) {
    std::fs::create_dir_all(root.join("logs")).expect("a logs folder");
    let f = std::fs::File::create(root.join("logs").join(format!("{name}.log"))).expect("a log");
    let g = f.try_clone().expect("a second handle");
    (f, g)
}

/// The last 40 lines of every log under `root/logs`, for failure messages.
pub fn logs(root: &Path) -> String {
    let mut out = String::new();
    if let Ok(dir) = std::fs::read_dir(root.join("logs")) {
        let mut paths: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            out.push_str(&format!("\n==== {} (last 40 lines)\n", p.display()));
            for l in tail.into_iter().rev() {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}

/// `panel ARGS`, its stdout decoded as JSON, or its stderr.
pub fn run_json(args: &[&str]) -> Result<Value, String> {
    let out = crate::panel().args(args).output().expect("run panel");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {:?}", out.stdout))
}

/// Polls `f` every 100 ms until it gives a value; panics after `deadline` with `what`
/// and the logs.
pub fn poll<T>(root: &Path, what: &str, deadline: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < deadline,
            "timed out: {what}{}",
            logs(root)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
