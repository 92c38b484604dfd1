//! The shipped models, loaded for real: tokenizers against independent reference ids,
//! the forward pass against facts a working model knows, the prefix cache against a
//! fresh pass. The files come from `scripts/models.sh` (docs/JUDGES.md "Local"), which
//! `bash scripts/test` runs; a missing file fails the test unless `PANEL_SKIP_MISSING=1`.

use std::path::PathBuf;

use panel_lm::{Cache, LoadOptions, Model};
use serde_json::Value;

fn models_dir() -> PathBuf {
    std::env::var_os("PANEL_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache/crucible-panel/models")
        })
}

fn model(file: &str) -> Option<Model> {
    let path = models_dir().join(file);
    if !path.exists() {
        assert!(
            std::env::var("PANEL_SKIP_MISSING").as_deref() == Ok("1"),
            "{} is missing: run `bash scripts/test` (it fetches the models with scripts/models.sh), or set PANEL_SKIP_MISSING=1 to skip this test",
            path.display()
        );
        eprintln!(
            "skipping: {} not found (scripts/models.sh fetches it)",
            path.display()
        );
        return None;
    }
    Some(Model::load(&path, LoadOptions::default()).expect("model loads"))
}

const GEMMA: &str = "gemma3-270m-q4_k_m.gguf";
const QWEN: &str = "qwen2.5-coder-0.5b-instruct.gguf";

fn vectors(name: &str) -> Vec<(String, Vec<u32>)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testvectors/lm")
        .join(name);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ids = c["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap() as u32);
            (c["text"].as_str().unwrap().to_owned(), ids.collect())
        })
        .collect()
}

fn check_tokenizer(m: &Model, file: &str, special: bool) {
    let mut wrong = Vec::new();
    let cases = vectors(file);
    for (text, want) in &cases {
        let got = m.tokenizer().encode(text, special).unwrap();
        if &got != want {
            wrong.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

#[test]
fn gemma_tokenizer_matches_sentencepiece() {
    let Some(m) = model(GEMMA) else { return };
    check_tokenizer(&m, "gemma3-tokens.json", false);
}

#[test]
fn qwen_tokenizer_matches_tiktoken() {
    let Some(m) = model(QWEN) else { return };
    check_tokenizer(&m, "qwen2-tokens.json", true);
}

fn top_after(m: &Model, prompt: &str, k: usize) -> Vec<String> {
    let ids = m.prompt_tokens(prompt).unwrap();
    let (_, next) = m.next_token(&ids).unwrap();
    next.top(k)
        .iter()
        .map(|(id, _)| m.tokenizer().decode(&[*id]).trim().to_owned())
        .collect()
}

#[test]
fn both_models_know_a_capital() {
    for file in [GEMMA, QWEN] {
        let Some(m) = model(file) else { continue };
        let top = top_after(&m, "The capital of France is", 5);
        assert!(top.iter().any(|t| t == "Paris"), "{file}: {top:?}");
    }
}

#[test]
fn gemma_perplexity_on_plain_english_is_that_of_a_working_model() {
    // With SiLU in place of Gemma 3's GELU (candle-transformers 0.11.1) this paragraph
    // scores about twice as high; a broken norm or rope scores in the hundreds.
    let Some(m) = model(GEMMA) else { return };
    let text = "The library opens at nine in the morning and closes at six in the evening. \
                On weekends it keeps shorter hours, and on public holidays it is closed. \
                Members may borrow up to ten books at a time for three weeks.";
    let ids = m.prompt_tokens(text).unwrap();
    let mut cache = Cache::default();
    let mut next = m.feed(&mut cache, &ids[..1]).unwrap();
    let mut nll = 0.0;
    for &id in &ids[1..] {
        nll -= next.logprobs[id as usize];
        next = m.feed(&mut cache, &[id]).unwrap();
    }
    let ppl = (nll / (ids.len() - 1) as f64).exp();
    eprintln!("gemma perplexity {ppl:.2} over {} tokens", ids.len() - 1);
    assert!(ppl < 14.0, "perplexity {ppl}");
}

#[test]
fn a_reused_prefix_gives_the_distribution_of_a_fresh_pass() {
    for file in [GEMMA, QWEN] {
        let Some(m) = model(file) else { continue };
        let a = m.prompt_tokens("Question: is water wet? Answer:").unwrap();
        let (prefix, rest) = a.split_at(4);
        let (mut cache, _) = m.next_token(prefix).unwrap();
        let reused = m.feed(&mut cache, rest).unwrap();
        let (_, fresh) = m.next_token(&a).unwrap();
        let diff = reused
            .logprobs
            .iter()
            .zip(&fresh.logprobs)
            .map(|(x, y)| (x - y).abs())
            .take(300_000)
            .fold(0.0, f64::max);
        assert!(diff < 1e-2, "{file}: max log-prob difference {diff}");
    }
}
