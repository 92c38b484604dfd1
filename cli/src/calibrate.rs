//! `panel calibrate`: scores arbiters offline with the `calibration` crate.
//!
//! Exam mode: `panel calibrate --exam exams/default-v1.jsonl --answers answers.jsonl
//! [--svg-dir DIR] [--now 2026-11-30T12:00:00Z] [--json]` scores every arbiter in the answers
//! file, prints one table row per arbiter and the admission decision (failed bars with their
//! scores, re-exam date = now + cooldown), and writes `DIR/<arbiter>.svg`, a reliability
//! diagram. Answers file: one `{"arbiter", "item", "answer"}` object per line (see
//! docs/CALIBRATION.md). Exit status 0 when scored, 2 when the exam or answers are malformed
//! (every bad line is listed with its line number and field).
//!
//! Request mode: `panel calibrate --jsonl` reads one JSON request per stdin line and writes
//! one JSON response per stdout line, in order. Requests: `binary`, `calibration_counts`,
//! `cooke`, `bridging` (docs/CALIBRATION.md), decoded and answered by
//! `calibration::request::answer_line`. A malformed line gets
//! `{"error": "line N: <JSON path>: <problem and fix>"}` and processing continues; the exit
//! status is then 2 at the end, otherwise 0. Blank lines are skipped without output.

use std::fs;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use calibration::admission::{
    AdmissionDecision, AdmissionPolicy, assess, format_score, format_utc,
};
use calibration::exam::{Exam, load_exam};
use calibration::exam_scoring::{ArbiterScores, load_answers, score_answers};
use calibration::inert::InertPolicy;
use calibration::reliability_svg::reliability_svg;
use calibration::request::answer_line;
use calibration::response::ErrorResponse;
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    /// Read one JSON request per stdin line, write one JSON response per line.
    #[arg(long, conflicts_with_all = ["answers", "svg_dir", "json"])]
    jsonl: bool,
    /// The exam (JSONL).
    #[arg(long, default_value = "exams/default-v1.jsonl")]
    exam: PathBuf,
    /// The arbiters' answers (JSONL: arbiter, item, answer).
    #[arg(long, required_unless_present = "jsonl")]
    answers: Option<PathBuf>,
    /// Write one reliability diagram per arbiter here (`<arbiter>.svg`).
    #[arg(long)]
    svg_dir: Option<PathBuf>,
    /// "Now" for the re-exam date: Unix seconds or `YYYY-MM-DDTHH:MM:SSZ`. Defaults to the
    /// system clock.
    #[arg(long)]
    now: Option<String>,
    /// Print one JSON object per arbiter (scores and decision) instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.jsonl {
        return run_jsonl();
    }
    let Some(answers_path) = args.answers.as_ref() else {
        anyhow::bail!("--answers is required unless --jsonl is given");
    };
    let now = match &args.now {
        Some(text) => parse_now(text)?,
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    };
    let exam_text = fs::read_to_string(&args.exam)
        .with_context(|| format!("cannot read the exam {}", args.exam.display()))?;
    let exam = match load_exam(&exam_text) {
        Ok(exam) => exam,
        Err(e) => {
            eprintln!("{}: {e}", args.exam.display());
            return Ok(ExitCode::from(2));
        }
    };
    let answers_text = fs::read_to_string(answers_path)
        .with_context(|| format!("cannot read the answers {}", answers_path.display()))?;
    let answers = match load_answers(&exam, &answers_text) {
        Ok(a) => a,
        Err(errors) => {
            for e in &errors {
                eprintln!("{}: {e}", answers_path.display());
            }
            eprintln!("{} malformed answer line(s); nothing scored", errors.len());
            return Ok(ExitCode::from(2));
        }
    };
    if answers.is_empty() {
        eprintln!("{}: no answers", answers_path.display());
        return Ok(ExitCode::from(2));
    }
    let scores = score_answers(&exam, &answers, &InertPolicy::default())
        .map_err(|e| anyhow::anyhow!("scoring failed: {e}"))?;
    let policy = AdmissionPolicy::default();
    let decisions: Vec<AdmissionDecision> =
        scores.iter().map(|s| assess(&policy, s, now)).collect();
    if let Some(dir) = &args.svg_dir {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for s in &scores {
            let Some(b) = &s.binary else { continue };
            let subtitle = format!(
                "{} binary items, Brier {:.3} (base rate {:.3}), ECE {:.3}",
                b.items, b.brier, b.base_rate_brier, b.ece
            );
            let svg = reliability_svg(
                &format!("Reliability: {}", s.arbiter),
                &subtitle,
                &b.reliability,
            );
            let path = dir.join(format!("{}.svg", file_stem(&s.arbiter)));
            fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        for (s, d) in scores.iter().zip(&decisions) {
            writeln!(out, "{}", json!({"scores": s, "decision": d}))?;
        }
    } else {
        print_table(&mut out, &exam, &scores, &decisions)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A file name derived from an arbiter id: keeps letters, digits, `-`, `_`, `.`.
fn file_stem(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("arbiter{s}")
    } else {
        s
    }
}

/// Unix seconds, or `YYYY-MM-DDTHH:MM:SSZ`.
fn parse_now(text: &str) -> anyhow::Result<i64> {
    if let Ok(n) = text.parse::<i64>() {
        return Ok(n);
    }
    let bad = || anyhow::anyhow!("--now `{text}`: use Unix seconds or YYYY-MM-DDTHH:MM:SSZ");
    let b = text.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| text[r].parse::<i64>().map_err(|_| bad());
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    // Days from civil (H. Hinnant), the inverse of admission::format_utc.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let unix = days * 86_400 + hh * 3600 + mm * 60 + ss;
    if format_utc(unix) != text {
        return Err(bad());
    }
    Ok(unix)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

fn print_table(
    out: &mut impl Write,
    exam: &Exam,
    scores: &[ArbiterScores],
    decisions: &[AdmissionDecision],
) -> io::Result<()> {
    writeln!(
        out,
        "exam {} {} {} ({} items: {} binary, {} relevance, {} tier, {} quantity)",
        exam.name,
        exam.version,
        exam.content_hash,
        exam.items.len(),
        exam.count("binary"),
        exam.count("relevance"),
        exam.count("tier"),
        exam.count("quantity")
    )?;
    writeln!(
        out,
        "{:<16} {:>5} {:>7} {:>7} {:>7} {:>6} {:>9} {:>6} {:>5} {:>6} {:>6} {:>5}  decision",
        "arbiter",
        "ans",
        "brier",
        "base",
        "log",
        "ece",
        "cooke_C",
        "info",
        "seeds",
        "k_rel",
        "k_tier",
        "inert"
    )?;
    for (s, d) in scores.iter().zip(decisions) {
        let b = s.binary.as_ref();
        let q = s.quantiles.as_ref();
        writeln!(
            out,
            "{:<16} {:>5} {:>7} {:>7} {:>7} {:>6} {:>9} {:>6} {:>5} {:>6} {:>6} {:>5}  {}",
            truncate(&s.arbiter, 16),
            s.answered,
            opt(b.map(|b| b.brier), 4),
            opt(b.map(|b| b.base_rate_brier), 4),
            opt(b.map(|b| b.log_score), 4),
            opt(b.map(|b| b.ece), 3),
            q.map_or("-".into(), |q| format!("{:.3e}", q.calibration)),
            opt(q.map(|q| q.information), 3),
            q.map_or(0, |q| q.seeds),
            opt(s.relevance.kappa, 3),
            opt(s.tier.kappa, 3),
            if s.inert() { "yes" } else { "no" },
            if d.admitted { "admitted" } else { "refused" }
        )?;
    }
    for (s, d) in scores.iter().zip(decisions) {
        if !s.missing.is_empty() {
            writeln!(
                out,
                "\n{}: {} item(s) unanswered: {}",
                s.arbiter,
                s.missing.len(),
                s.missing.join(", ")
            )?;
        }
        if d.admitted {
            continue;
        }
        writeln!(
            out,
            "\n{} refused; re-exam not before {}:",
            s.arbiter,
            d.reexam_date.as_deref().unwrap_or("-")
        )?;
        for f in &d.failed {
            writeln!(
                out,
                "  - {} (observed {}, required {}): {}",
                f.bar,
                f.observed.map_or_else(|| "-".to_string(), format_score),
                f.required,
                f.message
            )?;
        }
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

/// The `--jsonl` loop. Decoding, computing and the error text live in
/// `calibration::request` (docs/CALIBRATION.md, section 8); this only moves lines.
fn run_jsonl() -> anyhow::Result<ExitCode> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for (index, raw) in stdin.lock().split(b'\n').enumerate() {
        let raw = raw.context("cannot read standard input")?;
        let text = match answer_line(&raw) {
            None => continue,
            Some(Ok(response)) => serde_json::to_string(&response)?,
            Some(Err(e)) => {
                failed = true;
                let error = ErrorResponse::new(index + 1, &e);
                eprintln!("{}", error.error);
                serde_json::to_string(&error)?
            }
        };
        writeln!(out, "{text}")?;
        // One answer per line as it comes, for a caller that waits on each.
        out.flush()?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_parses_both_forms() {
        assert_eq!(parse_now("0").unwrap(), 0);
        assert_eq!(parse_now("2000-02-29T00:00:00Z").unwrap(), 951_782_400);
        assert!(parse_now("2000-02-30T00:00:00Z").is_err());
        assert!(parse_now("yesterday").is_err());
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("../etc/passwd"), "arbiter.._etc_passwd");
        assert_eq!(file_stem("gpt/4o mini"), "gpt_4o_mini");
    }
}
