//! A `panel up --keep` cluster for tests of the user's CLI: start it, wait for the worked
//! example, run `panel` commands against it through its state folder, and stop it with
//! SIGTERM, checking that no process outlives it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{ChildGuard, panel};

/// A `panel` command that finds the cluster through `--state` only.
pub fn user(state: &Path, args: &[&str]) -> Output {
    panel()
        .args(args)
        .arg("--state")
        .arg(state)
        .env_remove("PANEL_ADDR")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run panel")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs and expects success; returns stdout.
pub fn ok(state: &Path, args: &[&str]) -> String {
    let out = user(state, args);
    assert!(
        out.status.success(),
        "panel {args:?} failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

pub fn json(state: &Path, args: &[&str]) -> Value {
    let out = ok(state, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("panel {args:?}: not JSON ({e}):\n{out}"))
}

/// Runs and expects exit status 1; returns stderr.
/// Registers contributor `name` of organisation `org` on the local panel in `state`, with
/// a new key written to `key` (`panel node keygen`, then `panel org register-contributor`
/// endorsed by the organisation's roster key from `panel up`'s PKI).
pub fn register_contributor(state: &Path, name: &str, key: &str, org: &str) {
    let out = panel()
        .args(["node", "keygen", "--out", key])
        .output()
        .expect("run panel node keygen");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let org_key = state.join(format!("pki/orgs/{org}/signing.key"));
    ok(
        state,
        &[
            "org",
            "register-contributor",
            "--name",
            name,
            "--key-file",
            key,
            "--organisation",
            org,
            "--org-key",
            org_key.to_str().expect("a utf-8 path"),
        ],
    );
}

/// `panel appeal` of deb_1's verdict on ground A2 by `author` (signing with `key`) for
/// `side`, targeting thread `target`, with `extra` flags; what it printed.
pub fn appeal_deb_1(
    state: &Path,
    key: &str,
    author: &str,
    side: &str,
    target: &str,
    extra: &[&str],
) -> String {
    let mut args = vec![
        "appeal",
        "--key",
        key,
        "--debate",
        "deb_1",
        "--author",
        author,
        "--side",
        side,
        "--ground",
        "A2",
        "--justification",
        "The panel resolved these challenges before the response filed in time was shown to it.",
        "--target",
        target,
    ];
    args.extend_from_slice(extra);
    ok(state, &args)
}

pub fn fails(state: &Path, args: &[&str]) -> String {
    let out = user(state, args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "panel {args:?} should fail with status 1\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

/// Processes whose command line mentions `needle` (the test's own state folder).
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = text(&cmd).replace('\0', " ");
            if cmd.contains("panel") && cmd.contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

pub struct Cluster {
    guard: ChildGuard,
    pub state: PathBuf,
    log: PathBuf,
}

impl Cluster {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.guard
            .child_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits until cluster.json exists and the worked example's debate is closed.
    pub fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            if let Some(st) = self.exited() {
                panic!("panel up exited early ({st}):\n{}", self.log());
            }
            if self.state.join("cluster.json").exists() {
                let out = user(&self.state, &["debate", "show", "deb_1", "--json"]);
                if out.status.success()
                    && serde_json::from_slice::<Value>(&out.stdout)
                        .is_ok_and(|d| d["phase"] == "closed")
                {
                    return;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(600),
                "the worked example did not close in 600 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// SIGTERM first (panel up stops its children), SIGKILL only as a fallback; then no
    /// process of this test may remain.
    pub fn stop(mut self) {
        self.guard.terminate();
        let start = Instant::now();
        while self.exited().is_none() && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let clean = self.exited().is_some();
        self.guard.kill();
        let needle = self.state.display().to_string();
        let start = Instant::now();
        let mut left = processes_mentioning(&needle);
        while !left.is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(200));
            left = processes_mentioning(&needle);
        }
        for p in &left {
            let _ = Command::new("kill")
                .args(["-KILL", &p.to_string()])
                .status();
        }
        assert!(clean, "panel up did not exit on SIGTERM:\n{}", self.log());
        assert!(
            left.is_empty(),
            "processes outlived panel up after SIGTERM: {left:?}\n{}",
            self.log()
        );
        assert!(
            self.log().contains("all panel processes stopped"),
            "panel up did not report stopping its children:\n{}",
            self.log()
        );
    }
}

pub fn start(dir: &Path, extra: &[&str]) -> Cluster {
    let state = dir.join("st");
    let log = dir.join("up.log");
    let out = std::fs::File::create(&log).expect("log file");
    let err = out.try_clone().expect("log file");
    let mut cmd = panel();
    cmd.args(["up", "--keep", "--state"])
        .arg(&state)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    Cluster {
        guard: ChildGuard::spawn("panel up --keep", cmd),
        state,
        log,
    }
}
