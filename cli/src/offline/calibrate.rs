//! `panel calibrate`: scores arbiters offline with the `calibration` crate.
//!
//! Exam mode: `panel calibrate --answers answers.jsonl [--exam FILE] [--svg-dir DIR]
//! [--now 2026-11-30T12:00:00Z] [--json]` scores every arbiter in the answers file the way a
//! sealed sitting scores it (machine/src/features/exam_sitting.rs), so the decision here is the
//! service's:
//! * without `--exam`, on the pool built into the binary, the one the service seals when
//!   it has no private pools (`panel_machine::features::exam_sitting::embedded_pool`,
//!   exams/default-v2.jsonl), so it works from any directory;
//! * on the items the arbiter answered, with every probe group it answered any item of taken
//!   whole, as a sitting's draw holds groups whole: a file that answers a sitting's draw is
//!   scored on that draw, and a variant left out fails its bar as in the sitting;
//! * with the probes (`score_probes`) under the service's skill bar,
//!   `AdmissionPolicy::with_bias_probes` and `assess_with_probes`. An exam with no probe
//!   group (default-v1) cannot be sat by the service; it is scored on the default bars,
//!   and the output says so.
//!
//! It prints one table row per arbiter, the probes' results, each arbiter's reliability
//! table (count, yes count and 95% Wilson interval per bin) and the admission decision
//! (failed bars with their scores, re-exam date = now + cooldown), and writes
//! `DIR/<arbiter>.svg`, a reliability diagram with the same intervals. Answers file: one
//! `{"arbiter", "item", "answer"}` object per line (see docs/CALIBRATION.md). Exit status 0
//! when scored, 2 when the exam or answers are malformed (every bad line is listed with its
//! line number and field).
//!
//! Request mode: `panel calibrate --jsonl` reads one JSON request per stdin line and writes
//! one JSON response per stdout line, in order. Requests: `binary`, `calibration_counts`,
//! `cooke`, `bridging` (docs/CALIBRATION.md), decoded and answered by
//! `calibration::request::answer_line`. A malformed line gets
//! `{"error": "line N: <JSON path>: <problem and fix>"}` and processing continues; the exit
//! status is then 2 at the end, otherwise 0. Blank lines are skipped without output.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use calibration::admission::{
    AdmissionDecision, AdmissionPolicy, assess_with_probes, format_score, format_utc,
};
use calibration::bias_probes::{ProbeScores, score_probes};
use calibration::exam::{Exam, ProbeGroup, load_exam};
use calibration::exam_hold_back;
use calibration::exam_scoring::{Answer, ArbiterScores, load_answers, score_arbiter};
use calibration::inert::InertPolicy;
use calibration::probe_text::ProbeCells;
use calibration::reliability_svg::reliability_svg;
use calibration::request::answer_line;
use calibration::response::ErrorResponse;
use calibration::wilson::{ReliabilityInterval, reliability_intervals};
use panel_machine::features::exam_sitting::embedded_pool;
use serde_json::json;

use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    /// Read one JSON request per stdin line, write one JSON response per line.
    #[arg(long, conflicts_with_all = ["answers", "svg_dir", "json", "exam"])]
    jsonl: bool,
    /// The exam (JSONL). Default: the pool built into this binary, the one the service
    /// seals when it has no private pools (exams/default-v2.jsonl).
    #[arg(long)]
    exam: Option<PathBuf>,
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
    #[command(flatten)]
    output: OutputArgs,
    /// Score as a sitting of rule set 14 does, for a sitting's export (answers in asking
    /// order): the last answered plain binary items above the 30-item floor, at most 8,
    /// are held back from the decision (docs/CALIBRATION.md "Held-back items and topics").
    #[arg(long)]
    hold_back: bool,
}

/// One arbiter scored as a sitting scores it.
struct Examined {
    /// Items counted as asked (answered, probe groups whole), held-back ones included.
    asked: usize,
    /// Binary items left out of the decision, as a sitting holds them back for the track
    /// record (the sheet's last plain binary answers above the floor).
    held_back: Vec<String>,
    scores: ArbiterScores,
    probes: ProbeScores,
    reliability: Vec<ReliabilityInterval>,
    decision: AdmissionDecision,
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
    let from_file;
    let (exam, source): (&Exam, String) = match &args.exam {
        None => {
            let pool = embedded_pool()
                .map_err(Clone::clone)
                .context("the pool built into panel does not load")?;
            (
                &pool.exam,
                "built into panel (exams/default-v2.jsonl, the pool the service seals when it has no private pools)".into(),
            )
        }
        Some(path) => {
            let text = fs::read_to_string(path)
                .with_context(|| format!("cannot read the exam {}", path.display()))?;
            from_file = match load_exam(&text) {
                Ok(exam) => exam,
                Err(e) => {
                    eprintln!("{}: {e}", path.display());
                    return Ok(ExitCode::from(2));
                }
            };
            (&from_file, path.display().to_string())
        }
    };
    let groups = match exam.probe_groups() {
        Ok(groups) => groups,
        Err(e) => {
            eprintln!("{source}: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // The service's skill bar needs probe pairs; a pool without them cannot be sat there,
    // and would fail every probe bar as unmeasured here, so it gets the default bars.
    let policy = if groups.is_empty() {
        AdmissionPolicy::default()
    } else {
        AdmissionPolicy::with_bias_probes()
    };
    let answers_text = fs::read_to_string(answers_path)
        .with_context(|| format!("cannot read the answers {}", answers_path.display()))?;
    let answers = match load_answers(exam, &answers_text) {
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
    let examined = by_arbiter(&answers)
        .into_iter()
        .map(|(arbiter, sheet)| {
            let held = if args.hold_back {
                held_back_in_sheet_order(exam, &sheet)
            } else {
                Vec::new()
            };
            examine(exam, &groups, &policy, arbiter, (&sheet, &held), now)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(dir) = &args.svg_dir {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for e in &examined {
            let s = &e.scores;
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
    if args.output.json {
        for e in &examined {
            let line = json!({
                "scores": e.scores,
                "asked": e.asked,
                "held_back": e.held_back,
                "probes": e.probes,
                "reliability": e.reliability,
                "policy": policy,
                "decision": e.decision,
            });
            writeln!(out, "{line}")?;
        }
    } else {
        let header = Header {
            exam,
            source: &source,
            groups: groups.len(),
            policy: &policy,
        };
        print_table(&mut out, &header, &examined)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Answers by arbiter, in order of first appearance (as `score_answers` orders them).
fn by_arbiter(answers: &[Answer]) -> Vec<(&str, Vec<&Answer>)> {
    let mut order: Vec<&str> = Vec::new();
    let mut sheets: BTreeMap<&str, Vec<&Answer>> = BTreeMap::new();
    for a in answers {
        let sheet = sheets.entry(a.arbiter.as_str()).or_default();
        if sheet.is_empty() {
            order.push(&a.arbiter);
        }
        sheet.push(a);
    }
    order
        .into_iter()
        .map(|id| (id, sheets.remove(id).unwrap_or_default()))
        .collect()
}

/// The items counted as asked, in exam order: those answered, and every member of a probe
/// group any item of which was answered. Offline there is no draw; a sitting's draw holds
/// groups whole, so this is the draw of a file that answers one.
fn asked_items(exam: &Exam, groups: &[ProbeGroup], sheet: &[&Answer]) -> Vec<String> {
    let mut asked: HashSet<&str> = sheet.iter().map(|a| a.item.as_str()).collect();
    for g in groups {
        if g.members().any(|m| asked.contains(m)) {
            asked.extend(g.members());
        }
    }
    exam.items
        .iter()
        .filter(|i| asked.contains(i.id.as_str()))
        .map(|i| i.id.clone())
        .collect()
}

/// The items a sitting would hold back from this sheet's admission score
/// (`calibration::exam_hold_back`): the sheet's answers are taken in the order given, which
/// for a sitting's export is the asking order of the draw.
fn held_back_in_sheet_order(exam: &Exam, sheet: &[&Answer]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for a in sheet {
        if !order.contains(&a.item) {
            order.push(a.item.clone());
        }
    }
    exam_hold_back::held_back(exam, &order)
}

/// One arbiter, as `exam_sitting::reveal` scores a held exam (with `--hold-back`, as rule
/// set 14 does: the `held` items are left out of the decision): the scores on the sub-exam
/// of the items asked (with the pool's content hash), the probes on the pool with the
/// asked list, and the decision from the same calibration functions and policy.
fn examine(
    exam: &Exam,
    groups: &[ProbeGroup],
    policy: &AdmissionPolicy,
    arbiter: &str,
    (sheet, held): (&[&Answer], &[String]),
    now: i64,
) -> anyhow::Result<Examined> {
    let asked: Vec<String> = asked_items(exam, groups, sheet)
        .into_iter()
        .filter(|id| !held.contains(id))
        .collect();
    let scored: Vec<&Answer> = sheet
        .iter()
        .filter(|a| !held.contains(&a.item))
        .copied()
        .collect();
    let sheet = scored.as_slice();
    let asked_exam = Exam {
        items: exam
            .items
            .iter()
            .filter(|i| asked.contains(&i.id))
            .cloned()
            .collect(),
        ..exam.clone()
    };
    let scores = score_arbiter(&asked_exam, arbiter, sheet, &InertPolicy::default())
        .with_context(|| format!("scoring {arbiter} failed"))?;
    let probes = score_probes(exam, Some(&asked), sheet)
        .with_context(|| format!("scoring {arbiter}'s bias probes failed"))?;
    let decision = assess_with_probes(policy, &scores, Some(&probes), now);
    let reliability = match &scores.binary {
        Some(b) => reliability_intervals(&b.reliability)
            .with_context(|| format!("{arbiter}'s reliability table does not check"))?,
        None => Vec::new(),
    };
    Ok(Examined {
        asked: asked.len() + held.len(),
        held_back: held.to_vec(),
        scores,
        probes,
        reliability,
        decision,
    })
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

/// What the table's header names: the exam, where it came from, and the bars.
struct Header<'a> {
    exam: &'a Exam,
    source: &'a str,
    groups: usize,
    policy: &'a AdmissionPolicy,
}

/// The policy's bars in words, read from its fields (so the text follows the policy).
fn bars(policy: &AdmissionPolicy) -> String {
    let mut bars = Vec::new();
    if policy.min_quantile_seeds > 0 {
        bars.push(format!("quantile seeds >= {}", policy.min_quantile_seeds));
    }
    if policy.min_calibration > 0.0 {
        bars.push(format!("Cooke C >= {}", policy.min_calibration));
    }
    if policy.min_binary_items > 0 {
        bars.push(format!("binary items >= {}", policy.min_binary_items));
    }
    if policy.require_brier_skill {
        bars.push("Brier < base-rate Brier".into());
    }
    if policy.max_log_score.is_finite() {
        bars.push(format!("log score < {:.4}", policy.max_log_score));
    }
    if policy.reject_inert {
        bars.push("not inert".into());
    }
    if let Some(max) = policy.max_order_flip_rate {
        bars.push(format!("order flip rate <= {max}"));
    }
    if let Some(max) = policy.max_consequence_shift {
        bars.push(format!("|consequence shift| <= {max}"));
    }
    if let Some(min) = policy.min_kappa_lower {
        bars.push(format!("kappa vs gold, lower 95% bound >= {min}"));
    }
    format!(
        "{}; re-exam after {} days",
        bars.join(", "),
        policy.cooldown_seconds / 86_400
    )
}

fn print_table(out: &mut impl Write, h: &Header<'_>, examined: &[Examined]) -> io::Result<()> {
    let exam = h.exam;
    writeln!(
        out,
        "exam {} {} {} ({} items: {} binary, {} relevance, {} tier, {} quantity; {} probe groups)",
        exam.name,
        exam.version,
        exam.content_hash,
        exam.items.len(),
        exam.count("binary"),
        exam.count("relevance"),
        exam.count("tier"),
        exam.count("quantity"),
        h.groups
    )?;
    writeln!(out, "source: {}", h.source)?;
    if h.policy.uses_probes() {
        writeln!(
            out,
            "bars (the service's, with the bias probes): {}",
            bars(h.policy)
        )?;
    } else {
        writeln!(
            out,
            "bars (default; this exam has no probe groups, so the probe bars cannot be measured, and the service examines only on pools with probe groups): {}",
            bars(h.policy)
        )?;
    }
    writeln!(
        out,
        "asked: the items each arbiter answered, probe groups whole (as in a sitting's draw)\n"
    )?;
    writeln!(
        out,
        "{:<16} {:>5} {:>5} {:>7} {:>7} {:>7} {:>6} {:>9} {:>6} {:>5} {:>6} {:>6} {:>5}  decision",
        "arbiter",
        "asked",
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
    for e in examined {
        let (s, d) = (&e.scores, &e.decision);
        let b = s.binary.as_ref();
        let q = s.quantiles.as_ref();
        writeln!(
            out,
            "{:<16} {:>5} {:>5} {:>7} {:>7} {:>7} {:>6} {:>9} {:>6} {:>5} {:>6} {:>6} {:>5}  {}",
            truncate(&s.arbiter, 16),
            e.asked,
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
    print_probes(out, h.groups, examined)?;
    print_reliability(out, examined)?;
    for e in examined {
        let (s, d) = (&e.scores, &e.decision);
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

/// The bias probes, one row per arbiter: each variant against its base question, with
/// Wilson intervals on the rates and the Wald interval `score_probes` gives kappa.
fn print_probes(out: &mut impl Write, groups: usize, examined: &[Examined]) -> io::Result<()> {
    if groups == 0 {
        return writeln!(out, "\nbias probes: none (this exam has no probe groups)");
    }
    writeln!(
        out,
        "\nbias probes (each variant paired with its base question; 95% intervals: Wilson for rates, Wald for kappa)"
    )?;
    writeln!(
        out,
        "{:<16} {:<11} {:<22} {:<21} {:<21} {:<28} objective correct",
        "arbiter",
        "order flips",
        "order flip rate",
        "padding |shift|",
        "consequence shift",
        "kappa vs gold (questions)"
    )?;
    for e in examined {
        let c = ProbeCells::of(&e.probes);
        writeln!(
            out,
            "{:<16} {:<11} {:<22} {:<21} {:<21} {:<28} {}",
            truncate(&e.scores.arbiter, 16),
            c.order_flips,
            c.order_flip_rate,
            c.padding,
            c.consequence,
            c.kappa,
            c.objective
        )?;
    }
    for e in examined {
        let p = &e.probes;
        let unanswered: Vec<String> = [&p.order_swapped, &p.padded, &p.consequence]
            .into_iter()
            .filter(|v| !v.unanswered.is_empty())
            .map(|v| {
                format!(
                    "{} {} of {}",
                    v.variant.name(),
                    v.unanswered.len(),
                    v.groups
                )
            })
            .collect();
        if !unanswered.is_empty() {
            writeln!(
                out,
                "{}: probe pairs unanswered (a barred variant's groups are named under its refusal): {}",
                e.scores.arbiter,
                unanswered.join("; ")
            )?;
        }
    }
    Ok(())
}

/// Each arbiter's reliability table: forecasts per bin, yes outcomes, mean forecast,
/// observed frequency and its 95% Wilson interval (the SVG draws the same whiskers).
fn print_reliability(out: &mut impl Write, examined: &[Examined]) -> io::Result<()> {
    writeln!(
        out,
        "\nreliability of binary forecasts (n forecasts and yes outcomes per bin; 95% Wilson interval of the observed frequency)"
    )?;
    for e in examined {
        if e.reliability.is_empty() {
            writeln!(out, "{}: no binary item answered", e.scores.arbiter)?;
            continue;
        }
        writeln!(out, "{}", e.scores.arbiter)?;
        for line in reliability_lines(&e.reliability) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A reliability table as text, one line a bin after a header: its range, forecasts,
/// yes outcomes, mean forecast, observed frequency and 95% Wilson interval. Shared by
/// `panel calibrate` and `panel up`'s exam refusals.
pub(crate) fn reliability_lines(rows: &[ReliabilityInterval]) -> Vec<String> {
    let mut lines = vec![format!(
        "  {:<11} {:>4} {:>4} {:>7} {:>9}  95% interval",
        "bin", "n", "yes", "mean_p", "observed"
    )];
    for r in rows {
        let b = &r.bin;
        let close = if b.upper >= 1.0 { ']' } else { ')' };
        lines.push(format!(
            "  {:<11} {:>4} {:>4} {:>7} {:>9}  {}",
            format!("[{:.1}, {:.1}{close}", b.lower, b.upper.min(1.0)),
            b.count,
            r.yes,
            opt(b.mean_forecast, 3),
            opt(b.observed_frequency, 3),
            r.wilson_95.map_or_else(
                || "-".to_string(),
                |i| format!("[{:.3}, {:.3}]", i.lower, i.upper)
            )
        ));
    }
    lines
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
