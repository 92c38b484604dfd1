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
//! `cooke`, `bridging` (docs/CALIBRATION.md). A malformed line gets
//! `{"error": "line N: <JSON path>: <problem and fix>"}` and processing continues; the exit
//! status is then 2 at the end, otherwise 0. Blank lines are skipped without output.

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use calibration::admission::{
    AdmissionDecision, AdmissionPolicy, assess, format_score, format_utc,
};
use calibration::bridging::{BridgingConfig, LossForm, fit_matrix};
use calibration::cooke::{
    Alpha, Assessment, CookeModel, Item, LEVELS_5_50_95, Scale, calibration_score,
};
use calibration::exam::{Exam, json_type, load_exam};
use calibration::exam_scoring::{ArbiterScores, load_answers, score_answers};
use calibration::inert::InertPolicy;
use calibration::reliability_svg::reliability_svg;
use calibration::scoring_rules::binary_report;
use serde_json::{Map, Value, json};

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

// ---------------------------------------------------------------------------------------
// --jsonl requests
// ---------------------------------------------------------------------------------------

/// A request error: the JSON path of the offending value and what to do about it.
struct RequestError {
    path: String,
    message: String,
}

fn rerr(path: impl Into<String>, message: impl Into<String>) -> RequestError {
    RequestError {
        path: path.into(),
        message: message.into(),
    }
}

type Req<T> = Result<T, RequestError>;

fn run_jsonl() -> anyhow::Result<ExitCode> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = false;
    for (index, raw) in stdin.lock().split(b'\n').enumerate() {
        let raw = raw.context("cannot read standard input")?;
        let line = match String::from_utf8(raw) {
            Ok(line) => line,
            Err(_) => {
                failed = true;
                let text = format!("line {}: $: not valid UTF-8: send UTF-8 JSON", index + 1);
                eprintln!("{text}");
                writeln!(out, "{}", json!({ "error": text }))?;
                out.flush()?;
                continue;
            }
        };
        let line = line.strip_suffix('\r').unwrap_or(&line).to_string();
        if line.trim().is_empty() {
            continue;
        }
        let response = match handle_line(&line) {
            Ok(v) => v,
            Err(e) => {
                failed = true;
                let text = format!("line {}: {}: {}", index + 1, e.path, e.message);
                eprintln!("{text}");
                json!({ "error": text })
            }
        };
        writeln!(out, "{response}")?;
        out.flush()?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn handle_line(line: &str) -> Req<Value> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        rerr(
            "$",
            format!("not valid JSON ({e}): send one JSON object per line"),
        )
    })?;
    let Value::Object(obj) = value else {
        return Err(rerr(
            "$",
            format!(
                "must be an object such as {{\"binary\": {{...}}}}, found {}",
                json_type(&value)
            ),
        ));
    };
    if obj.len() != 1 {
        return Err(rerr(
            "$",
            format!(
                "must have exactly one key (the request kind), found {}: use one of binary, calibration_counts, cooke, bridging",
                obj.len()
            ),
        ));
    }
    let Some((kind, body)) = obj.into_iter().next() else {
        return Err(rerr("$", "empty request"));
    };
    let path = format!("$.{kind}");
    let body = as_object(&body, &path)?;
    match kind.as_str() {
        "binary" => binary(body, &path),
        "calibration_counts" => calibration_counts(body, &path),
        "cooke" => cooke(body, &path),
        "bridging" => bridging(body, &path),
        other => Err(rerr(
            "$",
            format!(
                "unknown request `{other}`: use one of binary, calibration_counts, cooke, bridging"
            ),
        )),
    }
}

fn as_object<'a>(v: &'a Value, path: &str) -> Req<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| rerr(path, format!("must be an object, found {}", json_type(v))))
}

fn get<'a>(obj: &'a Map<String, Value>, path: &str, key: &str) -> Req<&'a Value> {
    obj.get(key)
        .ok_or_else(|| rerr(format!("{path}.{key}"), format!("missing: add `\"{key}\"`")))
}

fn array<'a>(v: &'a Value, path: &str) -> Req<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| rerr(path, format!("must be an array, found {}", json_type(v))))
}

fn number(v: &Value, path: &str) -> Req<f64> {
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(rerr(
            path,
            format!("must be a finite number, found {}", json_type(v)),
        )),
    }
}

fn numbers(v: &Value, path: &str) -> Req<Vec<f64>> {
    array(v, path)?
        .iter()
        .enumerate()
        .map(|(i, x)| number(x, &format!("{path}[{i}]")))
        .collect()
}

fn crate_error(path: &str, e: calibration::CalibrationError) -> RequestError {
    rerr(path, e.to_string())
}

fn binary(body: &Map<String, Value>, path: &str) -> Req<Value> {
    let fpath = format!("{path}.forecasts");
    let opath = format!("{path}.outcomes");
    let forecasts = numbers(get(body, path, "forecasts")?, &fpath)?;
    let outcomes_raw = array(get(body, path, "outcomes")?, &opath)?;
    if forecasts.is_empty() {
        return Err(rerr(fpath, "is empty: give at least one forecast"));
    }
    if forecasts.len() != outcomes_raw.len() {
        return Err(rerr(
            opath,
            format!(
                "has {} values but forecasts has {}: give one outcome per forecast",
                outcomes_raw.len(),
                forecasts.len()
            ),
        ));
    }
    for (i, p) in forecasts.iter().enumerate() {
        if !(0.0..=1.0).contains(p) {
            return Err(rerr(
                format!("{fpath}[{i}]"),
                format!("{p} is not a probability: use a number in [0, 1]"),
            ));
        }
    }
    let mut outcomes = Vec::with_capacity(outcomes_raw.len());
    for (i, o) in outcomes_raw.iter().enumerate() {
        outcomes.push(match o.as_f64() {
            Some(0.0) => false,
            Some(1.0) => true,
            _ => {
                return Err(rerr(
                    format!("{opath}[{i}]"),
                    format!("{o} is not an outcome: use 0 or 1"),
                ));
            }
        });
    }
    let r = binary_report(&forecasts, &outcomes).map_err(|e| crate_error(path, e))?;
    let table: Vec<Value> = r
        .reliability_table
        .iter()
        .map(|b| json!({"bin": b.bin, "count": b.count, "mean_forecast": b.mean_forecast, "observed_frequency": b.observed_frequency}))
        .collect();
    Ok(json!({
        "brier": r.brier,
        "log_loss": r.log_loss,
        "murphy": r.murphy,
        "murphy_binned": r.murphy_binned,
        "ece": r.ece,
        "reliability_table": table,
    }))
}

fn calibration_counts(body: &Map<String, Value>, path: &str) -> Req<Value> {
    let cpath = format!("{path}.counts");
    let raw = array(get(body, path, "counts")?, &cpath)?;
    if raw.len() != 4 {
        return Err(rerr(
            cpath,
            format!(
                "has {} values: give 4 counts, one per 5/50/95 inter-quantile bin",
                raw.len()
            ),
        ));
    }
    let mut counts = Vec::with_capacity(4);
    for (i, c) in raw.iter().enumerate() {
        counts.push(c.as_u64().ok_or_else(|| {
            rerr(
                format!("{cpath}[{i}]"),
                format!("{c} is not a count: use a whole number >= 0"),
            )
        })? as usize);
    }
    if counts.iter().sum::<usize>() == 0 {
        return Err(rerr(
            cpath,
            "all counts are zero: at least one realisation is needed",
        ));
    }
    let npath = format!("{path}.n");
    let n = number(get(body, path, "n")?, &npath)?;
    if n <= 0.0 {
        return Err(rerr(npath, "must be > 0 (the number of seed questions)"));
    }
    let c =
        calibration_score(&counts, &LEVELS_5_50_95, n, 1.0).map_err(|e| crate_error(path, e))?;
    Ok(json!({ "calibration": c }))
}

fn cooke(body: &Map<String, Value>, path: &str) -> Req<Value> {
    let qpath = format!("{path}.quantiles");
    let levels = numbers(get(body, path, "quantiles")?, &qpath)?;
    calibration::cooke::validate_levels(&levels).map_err(|e| crate_error(&qpath, e))?;
    let ipath = format!("{path}.items");
    let mut items = Vec::new();
    let mut index_of: HashMap<String, usize> = HashMap::new();
    for (j, it) in array(get(body, path, "items")?, &ipath)?.iter().enumerate() {
        let p = format!("{ipath}[{j}]");
        let o = as_object(it, &p)?;
        let id = get(o, &p, "id")?
            .as_str()
            .ok_or_else(|| rerr(format!("{p}.id"), "must be a string"))?
            .to_string();
        if index_of.insert(id.clone(), j).is_some() {
            return Err(rerr(
                format!("{p}.id"),
                format!("`{id}` appears twice: give every item a distinct id"),
            ));
        }
        let realization = match o.get("realization") {
            None | Some(Value::Null) => None,
            Some(v) => Some(number(v, &format!("{p}.realization"))?),
        };
        let scale = match o.get("scale").map(|s| s.as_str()) {
            None | Some(Some("uni")) => Scale::Uni,
            Some(Some("log")) => Scale::Log,
            _ => return Err(rerr(format!("{p}.scale"), "must be \"uni\" or \"log\"")),
        };
        items.push(Item {
            id,
            realization,
            scale,
            frozen_range: None,
        });
    }
    if items.is_empty() {
        return Err(rerr(ipath, "is empty: give at least one item"));
    }
    let epath = format!("{path}.experts");
    let mut experts = Vec::new();
    for (e, ex) in array(get(body, path, "experts")?, &epath)?
        .iter()
        .enumerate()
    {
        let p = format!("{epath}[{e}]");
        let o = as_object(ex, &p)?;
        let id = get(o, &p, "id")?
            .as_str()
            .ok_or_else(|| rerr(format!("{p}.id"), "must be a string"))?
            .to_string();
        let vpath = format!("{p}.values");
        let vals = as_object(get(o, &p, "values")?, &vpath)?;
        let mut row: Vec<Option<Vec<f64>>> = vec![None; items.len()];
        for (item_id, q) in vals {
            let qp = format!("{vpath}.{item_id}");
            let j = *index_of.get(item_id).ok_or_else(|| {
                rerr(
                    &qp,
                    format!("`{item_id}` is not one of the items: check the id"),
                )
            })?;
            let q = numbers(q, &qp)?;
            if q.len() != levels.len() {
                return Err(rerr(
                    qp,
                    format!(
                        "has {} values: give one per quantile level ({})",
                        q.len(),
                        levels.len()
                    ),
                ));
            }
            if !q.windows(2).all(|w| w[0] < w[1]) {
                return Err(rerr(
                    qp,
                    format!("{q:?} is not strictly increasing: order the quantiles q5 < q50 < q95"),
                ));
            }
            row[j] = Some(q);
        }
        experts.push(Assessment { id, values: row });
    }
    if experts.is_empty() {
        return Err(rerr(epath, "is empty: give at least one expert"));
    }
    let overshoot = match body.get("overshoot") {
        None | Some(Value::Null) => 0.1,
        Some(v) => number(v, &format!("{path}.overshoot"))?,
    };
    let alpha = match body.get("alpha") {
        None | Some(Value::Null) => Alpha::Optimised,
        Some(v) => Alpha::Fixed(number(v, &format!("{path}.alpha"))?),
    };
    let model = CookeModel::new(&levels, items, experts, overshoot, 1.0)
        .map_err(|e| crate_error(path, e))?;
    let result = model.solve(alpha).map_err(|e| crate_error(path, e))?;
    let experts_out: Vec<Value> = result
        .experts
        .iter()
        .zip(&result.combined_scores)
        .map(|(e, c)| {
            json!({
                "id": e.id,
                "calibration": e.calibration,
                "information_seed": e.information_seed,
                "information_all": e.information_all,
                "combined_score": c,
            })
        })
        .collect();
    let mut weights = Map::new();
    for (e, w) in result.experts.iter().zip(&result.weights) {
        weights.insert(e.id.clone(), json!(w));
    }
    Ok(json!({
        "experts": experts_out,
        "weights": weights,
        "dm": {
            "calibration": result.dm.calibration,
            "information_seed": result.dm.information_seed,
            "information_all": result.dm.information_all,
        },
        "optimised_alpha": matches!(alpha, Alpha::Optimised).then_some(result.alpha),
        "alpha": result.alpha,
    }))
}

fn bridging(body: &Map<String, Value>, path: &str) -> Req<Value> {
    let rpath = format!("{path}.ratings");
    let rows = array(get(body, path, "ratings")?, &rpath)?;
    if rows.is_empty() {
        return Err(rerr(rpath, "is empty: give one row of ratings per rater"));
    }
    let mut ratings = Vec::with_capacity(rows.len());
    let mut width = None;
    let mut any = false;
    for (u, row) in rows.iter().enumerate() {
        let p = format!("{rpath}[{u}]");
        let cells = array(row, &p)?;
        match width {
            None => width = Some(cells.len()),
            Some(w) if w != cells.len() => {
                return Err(rerr(
                    p,
                    format!(
                        "has {} items but row 0 has {w}: use null for an unrated item",
                        cells.len()
                    ),
                ));
            }
            _ => {}
        }
        let mut out = Vec::with_capacity(cells.len());
        for (m, c) in cells.iter().enumerate() {
            out.push(match c {
                Value::Null => None,
                v => {
                    any = true;
                    Some(number(v, &format!("{p}[{m}]"))?)
                }
            });
        }
        ratings.push(out);
    }
    if !any {
        return Err(rerr(
            rpath,
            "holds no rating (all null): give at least one value",
        ));
    }
    let lpath = format!("{path}.loss");
    let loss = match body.get("loss").map(|v| v.as_str()) {
        None | Some(Some("published_sum")) => LossForm::PublishedSum,
        Some(Some("production_mean")) => LossForm::ProductionMean,
        _ => {
            return Err(rerr(
                lpath,
                "must be \"published_sum\" or \"production_mean\"",
            ));
        }
    };
    let mut config = BridgingConfig {
        loss,
        ..BridgingConfig::default()
    };
    if let Some(seed) = body.get("seed") {
        config.seed = seed
            .as_u64()
            .ok_or_else(|| rerr(format!("{path}.seed"), "must be a whole number >= 0"))?;
    }
    let fit = fit_matrix(&ratings, &config).map_err(|e| crate_error(path, e))?;
    Ok(json!({
        "loss": fit.loss,
        "mu": fit.mu,
        "rater_intercepts": fit.rater_intercepts,
        "rater_factors": fit.rater_factors,
        "item_intercepts": fit.item_intercepts,
        "item_factors": fit.item_factors,
        "loss_form": loss,
        "sweeps": fit.sweeps,
        "converged": fit.converged,
    }))
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
    fn errors_name_the_path() {
        let e = handle_line(r#"{"binary": {"forecasts": [0.2, 1.5], "outcomes": [0, 1]}}"#)
            .err()
            .unwrap();
        assert_eq!(e.path, "$.binary.forecasts[1]");
        let e = handle_line(r#"{"binary": {"forecasts": [0.2], "outcomes": [2]}}"#)
            .err()
            .unwrap();
        assert_eq!(e.path, "$.binary.outcomes[0]");
        let e = handle_line(r#"{"cooke": {"quantiles": [0.05, 0.5, 0.95], "items": [{"id": "a", "realization": 1}], "experts": [{"id": "e", "values": {"b": [1, 2, 3]}}]}}"#).err().unwrap();
        assert_eq!(e.path, "$.cooke.experts[0].values.b");
        let e = handle_line(r#"{"nope": {}}"#).err().unwrap();
        assert_eq!(e.path, "$");
        assert!(handle_line("[1]").is_err());
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("../etc/passwd"), "arbiter.._etc_passwd");
        assert_eq!(file_stem("gpt/4o mini"), "gpt_4o_mini");
    }
}
