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

/// Reads the whole input from `path`, or stdin when `path` is absent or `-`.
pub fn read_input(path: Option<&Path>) -> anyhow::Result<String> {
    let mut text = String::new();
    match path {
        Some(p) if p != Path::new("-") => {
            text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading stdin")?;
        }
    }
    Ok(text)
}

/// Parses JSON text, naming the line and column of a syntax error.
pub fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| {
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
    for (i, line) in stdin.lock().lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let response = match parse(&line).and_then(&mut answer) {
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
