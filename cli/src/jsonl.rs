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

/// Malformed input (exit status 2), as opposed to an I/O failure (status 1): `main`
/// finds it in the error chain to pick the status.
#[derive(Debug, thiserror::Error)]
#[error("{input} is not valid UTF-8 (byte {byte}); send UTF-8 JSON")]
pub struct BadInput {
    /// The file's path, or `stdin`.
    input: String,
    /// How many bytes are valid before the first invalid one.
    byte: usize,
}

/// Text that is not JSON, with the line and column of the syntax error.
#[derive(Debug, thiserror::Error)]
#[error("invalid JSON at line {line}, column {column}: {error}", line = .error.line(), column = .error.column())]
pub struct InvalidJson {
    error: serde_json::Error,
}

/// Why one request got `{"error": ...}` instead of an answer: its line is not UTF-8, not
/// JSON, or `E`, the subcommand's own refusal.
#[derive(Debug, thiserror::Error)]
enum RequestError<E> {
    #[error("not valid UTF-8 (byte {0})")]
    NotUtf8(usize),
    #[error(transparent)]
    Json(#[from] InvalidJson),
    #[error("{0}")]
    Refused(E),
}

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
        anyhow::anyhow!(BadInput {
            input: name,
            byte: e.utf8_error().valid_up_to(),
        })
    })
}

/// Parses JSON text, naming the line and column of a syntax error.
pub fn parse(text: &str) -> Result<Value, InvalidJson> {
    // The reference engine can write half a surrogate pair when it cuts a log detail;
    // such documents are repaired, not refused (docs/CONFORMANCE.md).
    let text = crucible::migrate::repair_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|error| InvalidJson { error })
}

/// Runs `answer` on every non-blank stdin line and prints one response line each; a
/// refusal (`E`) is written as the line's `{"error": ...}`.
pub fn run_lines<E: std::fmt::Display>(
    mut answer: impl FnMut(Value) -> Result<Value, E>,
) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for (i, raw) in stdin.lock().split(b'\n').enumerate() {
        let raw = raw.context("reading stdin")?;
        let parsed = String::from_utf8(raw)
            .map_err(|e| RequestError::NotUtf8(e.utf8_error().valid_up_to()))
            .map(|l| l.trim_end_matches('\r').to_string());
        if parsed.as_ref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        let response = match parsed
            .and_then(|line| Ok(parse(&line)?))
            .and_then(|v| answer(v).map_err(RequestError::Refused))
        {
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
pub fn answer_once<E: std::fmt::Display>(
    text: &str,
    answer: impl FnOnce(Value) -> Result<Value, E>,
) -> anyhow::Result<ExitCode> {
    match parse(text)
        .map_err(RequestError::Json)
        .and_then(|v| answer(v).map_err(RequestError::Refused))
    {
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
