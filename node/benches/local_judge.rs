//! The local judge measured on this machine (BENCHMARKS.md "Local judge"): for each model
//! file present, time to load, prompt tokens per second, time per ruling and per exam,
//! peak memory, and the model's scores on the shipped exam (every item of
//! exams/default-v2.jsonl, asked as the coordinator asks it); then the two-lineage panel
//! (the mean of a Gemma and a Qwen forecast per item) against its best single model.
//!
//! `cargo bench -p panel-node --features local-judge --bench local_judge` (models from
//! scripts/models.sh). Each model runs in a child process of its own, so its peak RSS is
//! its own. `PANEL_BENCH_WEIGHTS=f32|q8|as-file` picks the slow-format policy;
//! `PANEL_BENCH_PREFILL_ONLY=1 BENCH --one FILE` prints only load and prefill, the half of
//! the llama.cpp ratio that scripts/reference/llama_cpp_prefill.py measures the other of;
//! `PANEL_BENCH_EVERY=K` asks every K-th exam item only (timings on a larger model in
//! minutes; its scores are then over that subset, and the output says so).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use calibration::exam::{Exam, Gold, Tier, load_exam};
use calibration::exam_scoring::{Answer, AnswerValue, score_answers};
use calibration::inert::InertPolicy;
use panel_lm::{Cache, Model, SlowFormats};
use panel_node::judge::local::{LocalJudge, LocalSettings};
use panel_node::judge::prompt::Persona;
use panel_proto::pb::{
    AnswerKind, ContentProjection, ExamItem, Motion, MotionKind, ProjectionItem,
};
use serde_json::{Value, json};

const MODELS: [&str; 3] = [
    "gemma3-270m-q4_k_m.gguf",
    "qwen2.5-coder-0.5b-instruct.gguf",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
];

fn models_dir() -> PathBuf {
    std::env::var_os("PANEL_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/crucible-panel/models")
        })
}

fn exam() -> Exam {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../exams/default-v2.jsonl");
    load_exam(&std::fs::read_to_string(path).expect("exam file")).expect("exam parses")
}

/// The motion the coordinator sends for an exam item (as machine::admission::item_motion
/// builds it), with an item id that names nothing.
fn motion(exam: &Exam, i: usize) -> Motion {
    let item = &exam.items[i];
    let kind = match item.gold {
        Gold::Binary(_) => AnswerKind::Binary,
        Gold::Relevance(_) => AnswerKind::Relevance,
        Gold::Tier(_) => AnswerKind::Tier,
        Gold::Quantity { .. } => AnswerKind::Quantiles,
    };
    let unit = match &item.gold {
        Gold::Quantity { unit, .. } => unit.clone(),
        _ => String::new(),
    };
    Motion {
        motion_id: format!("exam/bench/{i}"),
        debate_id: "exam".into(),
        kind: MotionKind::Exam as i32,
        state_hash: vec![0; 32],
        projection: Some(ContentProjection {
            question: item.question.clone(),
            items: item
                .motion
                .iter()
                .map(|t| ProjectionItem {
                    label: "Motion".into(),
                    text: t.clone(),
                    ..Default::default()
                })
                .collect(),
            exam_item: Some(ExamItem {
                item_id: format!("bench-{i}"),
                question: item.question.clone(),
                answer_kind: kind as i32,
                quantile_levels: if kind == AnswerKind::Quantiles {
                    exam.quantiles.clone()
                } else {
                    Vec::new()
                },
                unit,
                seed: true,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn tier_of(t: u64) -> Tier {
    match t {
        1 => Tier::T1,
        2 => Tier::T2,
        3 => Tier::T3,
        4 => Tier::T4,
        _ => Tier::T5,
    }
}

/// One model, in this (child) process: timings and answers as JSON on stdout.
fn one(path: &Path, weights: SlowFormats) -> Value {
    let started = Instant::now();
    let judge = LocalJudge::load(LocalSettings {
        model: path.to_owned(),
        lineage: String::new(),
        persona: Persona::default(),
        temperature: 0.0,
        rationale_tokens: 24,
        slow_formats: weights,
        context: 2048,
    })
    .expect("model loads");
    let load_s = started.elapsed().as_secs_f64();
    let model: &Model = judge.model();
    // Prompt throughput: one fresh prefill of a fixed 128-token prompt, five times.
    let text = "The committee reviewed the evidence on bus lanes, commute times and air \
                quality in three cities over five years. "
        .repeat(8);
    let mut ids = model.prompt_tokens(&text).expect("tokens");
    ids.truncate(128);
    let mut prefill = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut cache = Cache::default();
        model.feed(&mut cache, &ids).expect("prefill");
        prefill.push(t.elapsed().as_secs_f64());
    }
    let prefill_s = quantile(prefill, 0.5);
    if std::env::var_os("PANEL_BENCH_PREFILL_ONLY").is_some() {
        // The reference ratio's half (scripts/reference/llama_cpp_prefill.py is the other).
        println!(
            "panel-lm {}: load {load_s:.1} s, prefill {} tokens median {:.0} ms = {:.0} tok/s",
            model.name(),
            ids.len(),
            prefill_s * 1000.0,
            ids.len() as f64 / prefill_s
        );
        std::process::exit(0);
    }
    let exam = exam();
    let mut answers = Vec::new();
    let mut per_ruling = Vec::new();
    let every = std::env::var("PANEL_BENCH_EVERY")
        .ok()
        .and_then(|k| k.parse::<usize>().ok())
        .filter(|k| *k > 0)
        .unwrap_or(1);
    let exam_started = Instant::now();
    for i in (0..exam.items.len()).step_by(every) {
        let m = motion(&exam, i);
        let t = Instant::now();
        let a = judge.rule_blocking(&m, None).expect("rules");
        per_ruling.push(t.elapsed().as_secs_f64());
        let item = &exam.items[i];
        let value = match &item.gold {
            Gold::Binary(_) => Some(json!({"p": a.probability})),
            Gold::Relevance(_) => a
                .relevance
                .map(|r| json!({"relevance": f64::from(r) / 4.0})),
            Gold::Tier(_) => a.tier.map(|t| json!({"tier": t})),
            Gold::Quantity { .. } => (!a.quantiles.is_empty()).then(
                || json!({"quantiles": a.quantiles.iter().map(|q| q.value).collect::<Vec<_>>()}),
            ),
        };
        let orders = a
            .provenance
            .as_ref()
            .and_then(|p| p.reading.as_ref())
            .map(|r| r.orders.iter().map(|o| o.p_affirmative).collect::<Vec<_>>())
            .unwrap_or_default();
        answers.push(json!({"item": item.id, "value": value, "orders": orders}));
    }
    let exam_s = exam_started.elapsed().as_secs_f64();
    json!({
        "file": path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "name": model.name(),
        "weights": format!("{weights:?}"),
        "load_s": load_s,
        "prompt_tokens_per_s": ids.len() as f64 / prefill_s,
        "ruling_median_s": quantile(per_ruling.clone(), 0.5),
        "ruling_p90_s": quantile(per_ruling, 0.9),
        "exam_s": exam_s,
        "asked": answers.len(),
        "peak_rss_mb": peak_rss_mb(),
        "answers": answers,
    })
}

/// The exam item an answer of the child's JSON names.
fn item_of<'a>(exam: &'a Exam, a: &Value) -> Option<&'a calibration::exam::ExamItem> {
    let id = a["item"].as_str()?;
    exam.items.iter().find(|i| i.id == id)
}

fn to_answers(arbiter: &str, exam: &Exam, answers: &[Value]) -> Vec<Answer> {
    answers
        .iter()
        .filter_map(|a| {
            let item = item_of(exam, a)?;
            let v = &a["value"];
            let value = match &item.gold {
                Gold::Binary(_) => AnswerValue::Probability(v["p"].as_f64()?),
                Gold::Relevance(_) => AnswerValue::Relevance(v["relevance"].as_f64()?),
                Gold::Tier(_) => AnswerValue::Tier(tier_of(v["tier"].as_u64()?)),
                Gold::Quantity { .. } => AnswerValue::Quantiles(
                    v["quantiles"]
                        .as_array()?
                        .iter()
                        .filter_map(Value::as_f64)
                        .collect(),
                ),
            };
            Some(Answer {
                arbiter: arbiter.into(),
                item: item.id.clone(),
                value,
                line: 0,
            })
        })
        .collect()
}

/// Area under the ROC curve of binary forecasts (ties count half).
fn auc(pairs: &[(f64, bool)]) -> Option<f64> {
    let pos: Vec<f64> = pairs.iter().filter(|p| p.1).map(|p| p.0).collect();
    let neg: Vec<f64> = pairs.iter().filter(|p| !p.1).map(|p| p.0).collect();
    if pos.is_empty() || neg.is_empty() {
        return None;
    }
    let mut s = 0.0;
    for p in &pos {
        for n in &neg {
            s += match p.total_cmp(n) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            };
        }
    }
    Some(s / (pos.len() * neg.len()) as f64)
}

fn report(name: &str, exam: &Exam, answers: &[Answer]) {
    let scores = score_answers(exam, answers, &InertPolicy::default()).expect("scores");
    let Some(s) = scores.first() else { return };
    let pairs: Vec<(f64, bool)> = answers
        .iter()
        .filter_map(|a| match (&a.value, &exam.item(&a.item)?.gold) {
            (AnswerValue::Probability(p), Gold::Binary(g)) => Some((*p, *g)),
            _ => None,
        })
        .collect();
    let yes = pairs.iter().filter(|p| p.0 >= 0.5).count();
    let b = s.binary.as_ref();
    let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}"));
    println!(
        "| {name} | {} | {} | {} | {} | {} | {} | {yes}/{} | {} | {} | {} |",
        b.map_or(0, |b| b.items),
        f(b.map(|b| b.brier)),
        f(b.map(|b| b.base_rate_brier)),
        f(b.map(|b| b.log_score)),
        f(b.map(|b| b.ece)),
        f(auc(&pairs)),
        pairs.len(),
        f(s.quantiles.as_ref().map(|q| q.calibration)),
        f(s.relevance.kappa),
        f(s.tier.kappa),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let weights = match std::env::var("PANEL_BENCH_WEIGHTS").as_deref() {
        Ok("f32") => SlowFormats::F32,
        Ok("as-file") => SlowFormats::AsFile,
        _ => SlowFormats::Q8,
    };
    if let Some(i) = args.iter().position(|a| a == "--one") {
        println!("{}", one(Path::new(&args[i + 1]), weights));
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let mut runs = Vec::new();
    for file in MODELS {
        let path = models_dir().join(file);
        if !path.exists() {
            eprintln!("{file}: not present, skipped (scripts/models.sh)");
            continue;
        }
        eprintln!("{file}: loading and sitting the exam ...");
        let out = Command::new(&exe)
            .arg("--one")
            .arg(&path)
            .output()
            .expect("child runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().rev().find(|l| l.starts_with('{')) else {
            eprintln!("{file}: failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        };
        runs.push(serde_json::from_str::<Value>(line).expect("child JSON"));
    }
    let exam = exam();
    println!(
        "\n| model | weights | load s | prompt tok/s | ruling median s | p90 s | items asked | exam s | peak RSS MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &runs {
        let n = |k: &str| r[k].as_f64().unwrap_or(0.0);
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.2} | {:.2} | {} of {} | {:.0} | {:.0} |",
            r["name"].as_str().unwrap_or(""),
            r["weights"].as_str().unwrap_or(""),
            n("load_s"),
            n("prompt_tokens_per_s"),
            n("ruling_median_s"),
            n("ruling_p90_s"),
            n("asked"),
            exam.items.len(),
            n("exam_s"),
            n("peak_rss_mb"),
        );
    }
    println!(
        "\n| arbiter | binary items | Brier | base-rate Brier | log score | ECE | AUC | said yes | Cooke C | relevance kappa | tier kappa |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut all = Vec::new();
    for r in &runs {
        let name = r["name"].as_str().unwrap_or("").to_owned();
        let list = r["answers"].as_array().cloned().unwrap_or_default();
        report(&name, &exam, &to_answers(&name, &exam, &list));
        all.push((name, list));
    }
    // The two-lineage panel: the mean forecast of the first Gemma and the first Qwen.
    let gemma = all.iter().find(|(n, _)| n.to_lowercase().contains("gemma"));
    let qwen = all.iter().find(|(n, _)| n.to_lowercase().contains("qwen"));
    if let (Some(g), Some(q)) = (gemma, qwen) {
        let pooled: Vec<Answer> =
            g.1.iter()
                .filter_map(|a| {
                    let item = item_of(&exam, a)?;
                    let b = q.1.iter().find(|b| b["item"] == a["item"])?;
                    let (pa, pb) = (a["value"]["p"].as_f64()?, b["value"]["p"].as_f64()?);
                    Some(Answer {
                        arbiter: "panel".into(),
                        item: item.id.clone(),
                        value: AnswerValue::Probability((pa + pb) / 2.0),
                        line: 0,
                    })
                })
                .collect();
        report(
            &format!("two-lineage panel (mean of {} and {})", g.0, q.0),
            &exam,
            &pooled,
        );
    }
    // How far the two presentation orders of one item disagree: the order bias that
    // averaging the orders cancels.
    println!("\n| model | mean abs(as-given - swapped) on binary items |");
    println!("|---|---|");
    for (name, answers) in &all {
        let d: Vec<f64> = answers
            .iter()
            .filter_map(|a| {
                let o = a["orders"].as_array()?;
                (o.len() == 2)
                    .then(|| (o[0].as_f64().unwrap_or(0.0) - o[1].as_f64().unwrap_or(0.0)).abs())
            })
            .collect();
        println!(
            "| {name} | {:.3} |",
            d.iter().sum::<f64>() / d.len().max(1) as f64
        );
    }
}
