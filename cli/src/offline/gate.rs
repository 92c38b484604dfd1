//! `panel gate`: checks submissions against the Gate (SPEC section 8).
//!
//! One request: `panel gate [FILE]` reads one JSON request `{fields, ctx}` from FILE or
//! standard input and prints the violations readably. Exit status 0 when admissible, 1
//! when refused, 2 when the input is malformed.
//!
//! Many requests: `panel gate --jsonl [FILE]` reads one request per line and writes one
//! JSON response per line, in order:
//! `{"rules": [...], "violations": [{rule, field, excerpt, message, fix}]}`.
//! A malformed line produces `{"error": "line N: <path>: <problem>"}` on its own output
//! line (also written to standard error) and processing continues; the exit status is
//! then 2 at the end, otherwise 0. Blank input lines are skipped without output.
//!
//! `--reference` selects the reference engine's exact G7 behaviour instead of our
//! acronym mode.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use crucible::gate::{self, GateInputError, GateMode, GateRequest, Violation};
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// Read one request per line and write one JSON response per line.
    #[arg(long)]
    jsonl: bool,
    /// Use the reference engine's exact G7 rule (no acronym recognition).
    #[arg(long)]
    reference: bool,
    /// Input file; standard input when absent.
    file: Option<PathBuf>,
}

/// One violation as `--jsonl` reports it.
#[derive(Serialize)]
struct ReportedViolation<'a> {
    rule: gate::RuleId,
    field: &'a str,
    excerpt: &'a str,
    message: &'a str,
    fix: &'a str,
}

#[derive(Serialize)]
struct Response<'a> {
    rules: Vec<gate::RuleId>,
    violations: Vec<ReportedViolation<'a>>,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    error: &'a str,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mode = if args.reference {
        GateMode::Reference
    } else {
        GateMode::Acronyms
    };
    let input: Box<dyn Read> = match &args.file {
        Some(path) => {
            Box::new(File::open(path).with_context(|| format!("cannot open {}", path.display()))?)
        }
        None => Box::new(io::stdin().lock()),
    };
    if args.jsonl {
        run_lines(BufReader::new(input), mode)
    } else {
        run_one(input, mode)
    }
}

fn check(request: &GateRequest, mode: GateMode) -> Vec<Violation> {
    gate::check_with_mode(&request.fields, &request.ctx, mode)
}

fn run_one(mut input: impl Read, mode: GateMode) -> anyhow::Result<ExitCode> {
    let mut raw = Vec::new();
    input
        .read_to_end(&mut raw)
        .context("cannot read the request")?;
    let request = match std::str::from_utf8(&raw) {
        Ok(text) => GateRequest::from_json(text),
        Err(_) => Err(GateInputError::Syntax(
            "the input is not valid UTF-8".to_owned(),
        )),
    };
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!(
                "expected one JSON object {{\"fields\": [{{\"label\", \"text\", ...}}], \"ctx\": {{\"kind\", \"author\", \"side\", ...}}}}"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let violations = check(&request, mode);
    let mut out = io::stdout().lock();
    if violations.is_empty() {
        writeln!(out, "Admissible: no Gate rule is violated.")?;
        return Ok(ExitCode::SUCCESS);
    }
    let ids: Vec<String> = gate::violated_rules(&violations)
        .iter()
        .map(ToString::to_string)
        .collect();
    writeln!(
        out,
        "Refused: {} violation(s) of {}.",
        violations.len(),
        ids.join(", ")
    )?;
    for v in &violations {
        writeln!(out)?;
        writeln!(out, "{} {}", v.rule, v.rule_name)?;
        writeln!(out, "  field:   {}", v.field)?;
        if !v.excerpt.is_empty() {
            writeln!(out, "  excerpt: {}", v.excerpt)?;
        }
        writeln!(out, "  message: {}", v.message)?;
        writeln!(out, "  fix:     {}", v.fix)?;
    }
    Ok(ExitCode::from(1))
}

fn run_lines<R: Read>(mut input: BufReader<R>, mode: GateMode) -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut malformed = 0usize;
    loop {
        // Flush before a read that may block, so a client driving this process one
        // request at a time sees each answer.
        if input.buffer().is_empty() {
            out.flush()?;
        }
        line.clear();
        if input
            .read_until(b'\n', &mut line)
            .context("cannot read input")?
            == 0
        {
            break;
        }
        number += 1;
        let parsed = match std::str::from_utf8(&line) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => GateRequest::from_json(text),
            Err(_) => Err(GateInputError::Syntax(
                "the line is not valid UTF-8".to_owned(),
            )),
        };
        match parsed {
            Ok(request) => {
                let violations = check(&request, mode);
                let response = Response {
                    rules: gate::violated_rules(&violations),
                    violations: violations
                        .iter()
                        .map(|v| ReportedViolation {
                            rule: v.rule,
                            field: &v.field,
                            excerpt: &v.excerpt,
                            message: &v.message,
                            fix: v.fix,
                        })
                        .collect(),
                };
                serde_json::to_writer(&mut out, &response)?;
            }
            Err(e) => {
                malformed += 1;
                let message = format!("line {number}: {e}");
                eprintln!("error: {message}");
                serde_json::to_writer(&mut out, &ErrorLine { error: &message })?;
            }
        }
        out.write_all(b"\n")?;
    }
    out.flush()?;
    if malformed > 0 {
        eprintln!(
            "error: {malformed} malformed line(s); their output lines carry an \"error\" key"
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
