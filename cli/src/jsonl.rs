//! Shared plumbing of the interop subcommands: read the input (a file or stdin), and run
//! the `--jsonl` loop: one JSON request per line in, one JSON response per line out, in
//! order. A bad line answers `{"error": ...}` and the run ends with status 2.

use std::io::{BufRead, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

/// Exit status for malformed input (documented in README: 2 = bad input).
pub const BAD_INPUT: u8 = 2;

/// Malformed input (exit status 2), as opposed to an I/O failure (status 1).
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Reads the whole input from `path`, or stdin when `path` is absent or `-`.
pub fn read_input(path: Option<&Path>) -> anyhow::Result<String> {
    let (bytes, name) = match path {
        Some(p) if p != Path::new("-") => (
            std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
            p.display().to_string(),
        ),
        _ => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("reading stdin")?;
            (bytes, "stdin".to_string())
        }
    };
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(BadInput(format!(
            "{name} is not valid UTF-8 (byte {}); send UTF-8 JSON",
            e.utf8_error().valid_up_to()
        )))
    })
}

/// Parses JSON text, naming the line and column of a syntax error.
pub fn parse(text: &str) -> Result<Value, String> {
    // The reference engine can write half a surrogate pair when it cuts a log detail;
    // such documents are repaired, not refused (docs/CONFORMANCE.md).
    let text = crucible::migrate::repair_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "invalid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        )
    })
}

/// Runs `answer` on every non-blank stdin line and prints one response line each.
pub fn run_lines(
    mut answer: impl FnMut(Value) -> Result<Value, String>,
) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for (i, raw) in stdin.lock().split(b'\n').enumerate() {
        let raw = raw.context("reading stdin")?;
        let parsed = String::from_utf8(raw)
            .map_err(|e| format!("not valid UTF-8 (byte {})", e.utf8_error().valid_up_to()))
            .map(|l| l.trim_end_matches('\r').to_string());
        if parsed.as_ref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        let response = match parsed.and_then(|line| parse(&line)).and_then(&mut answer) {
            Ok(v) => v,
            Err(msg) => {
                failed = true;
                eprintln!("line {}: {msg}", i + 1);
                json!({ "error": format!("line {}: {msg}", i + 1) })
            }
        };
        serde_json::to_writer(&mut out, &response)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(if failed {
        ExitCode::from(BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints a single answer (pretty) or the error with status 2.
pub fn answer_once(
    text: &str,
    answer: impl FnOnce(Value) -> Result<Value, String>,
) -> anyhow::Result<ExitCode> {
    match parse(text).and_then(answer) {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(msg) => {
            eprintln!("error: {msg}");
            Ok(ExitCode::from(BAD_INPUT))
        }
    }
}
