//! What a command prints besides its result (`--quiet`, `--json`). Narration (what `panel
//! up` is doing) goes to stdout, or to stderr when the command's result is one JSON
//! document on stdout (`--json`); `--quiet` silences narration, notes and progress, and
//! leaves results and errors.

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);
static JSON: AtomicBool = AtomicBool::new(false);

/// The `--json` flag of every command that can print its result as JSON, flattened into
/// each command's arguments (`#[command(flatten)] output: OutputArgs`).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct OutputArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Set once from the global `--quiet` flag.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Set by a command whose result is JSON on stdout: narration moves to stderr.
pub fn set_json(json: bool) {
    JSON.store(json, Ordering::Relaxed);
}

pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Narration: stdout, or stderr under `--json`, nothing under `--quiet`.
macro_rules! say {
    ($($arg:tt)*) => {
        if !$crate::output::quiet() {
            if $crate::output::json() {
                eprintln!($($arg)*);
            } else {
                println!($($arg)*);
            }
        }
    };
}

/// A result: printed even under `--quiet` (stdout, or stderr under `--json`, where the
/// JSON document is the result). `panel up`'s verdicts and record path are results.
macro_rules! result {
    ($($arg:tt)*) => {
        if $crate::output::json() {
            eprintln!($($arg)*);
        } else {
            println!($($arg)*);
        }
    };
}

/// A note on stderr (what was started, what was written), nothing under `--quiet`.
macro_rules! note {
    ($($arg:tt)*) => {
        if !$crate::output::quiet() {
            eprintln!($($arg)*);
        }
    };
}

pub(crate) use {note, result, say};
