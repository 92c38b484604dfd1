//! Local judge: a GGUF model in the node's own process (`panel-lm`), read by its
//! next-token distribution (docs/JUDGES.md "Local").
//!
//! * P(affirmative) is the normalised probability of the answer tokens ("Yes"/"No" in
//!   their spellings that are single tokens) after a fixed prompt (the P(True) reading),
//!   asked in both presentation orders ([`super::prompt`]) and averaged; the ruling's
//!   signed reading keeps the method, the instructions' digest and both values.
//! * Ordinal answers (relevance, tier) are read from the probabilities of the digits;
//!   quantile answers are the only ones read from written text (method "stated").
//! * A short rationale is generated after the answer with a capped token budget.
//! * The model is loaded once per process; the KV cache of the previous prompt is kept,
//!   and a new prompt reuses the positions it shares with it (the instructions, and the
//!   context shared by both presentation orders).
//! * Content the debate supplied has the model's chat markers broken up before it enters
//!   the prompt, so a claim cannot open a turn of its own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use panel_lm::{Cache, LoadOptions, Model, NextToken, SlowFormats};
use panel_proto::pb::{
    Decision, JudgeProvenance, JudgeReading, Motion, MotionKind, OrderReading, Quantile,
};
use panel_proto::ruling_check::{MAX_MODEL_BYTES, MAX_RATIONALE_BYTES, binary_pair};
use sha2::{Digest, Sha256};

use super::prompt::{
    Instructions, Persona, Presentation, Question, Scale, claimed_tier, question, read_binary,
    read_scale,
};
use super::{Judge, JudgeAnswer, JudgeError, Retrieved};

/// Settings of the local judge (`[judge] kind = "local"`).
#[derive(Debug, Clone)]
pub struct LocalSettings {
    pub model: PathBuf,
    /// The lineage the arbiter declares; must be the model's (checked at load).
    pub lineage: String,
    pub persona: Persona,
    /// Sampling temperature of the rationale (0: greedy). The probability never depends
    /// on it.
    pub temperature: f64,
    /// Tokens of rationale generated per ruling (0: none).
    pub rationale_tokens: usize,
    pub slow_formats: SlowFormats,
    pub context: usize,
}

/// Longest retrieved source text put into a prompt, in characters.
const MAX_SOURCE_CHARS: usize = 1500;
/// Positions a new prompt must share with the cached one before reuse is worth a copy.
const MIN_REUSE: usize = 8;

/// The lineage a model's architecture belongs to: Gemma and Qwen are two; the Qwen sizes
/// are one (docs/coordinator/acceptance.md "Declared priors").
pub fn lineage_of(architecture: &str) -> &str {
    match architecture {
        a if a.starts_with("gemma") => "gemma",
        a if a.starts_with("qwen") => "qwen",
        a => a,
    }
}

struct Inner {
    model: Model,
    settings: LocalSettings,
    /// "Yes" and "No" in every spelling that is one token.
    yes: Vec<u32>,
    no: Vec<u32>,
    /// Digit tokens by value 0..=9 (with and without a leading space).
    digits: Vec<Vec<u32>>,
    label: String,
    version: String,
    /// The last prompt's tokens and cache, for prefix reuse; one ruling at a time.
    last: Mutex<Option<(Vec<u32>, Cache)>>,
}

/// The in-process model judge.
#[derive(Clone)]
pub struct LocalJudge {
    inner: Arc<Inner>,
}

fn bad(e: impl std::fmt::Display) -> JudgeError {
    JudgeError::Model(e.to_string())
}

fn single_tokens(model: &Model, words: &[&str]) -> Vec<u32> {
    let mut ids: Vec<u32> = words
        .iter()
        .filter_map(|w| {
            let t = model.text_tokens(w).ok()?;
            (t.len() == 1).then(|| t[0])
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn file_sha256(path: &Path) -> Result<String, JudgeError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(bad)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(bad)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

impl LocalJudge {
    /// Loads the model (seconds: the file is read, slow formats converted, and hashed for
    /// the provenance).
    pub fn load(settings: LocalSettings) -> Result<Self, JudgeError> {
        let opts = LoadOptions {
            slow_formats: settings.slow_formats,
            context: settings.context,
        };
        let model = Model::load(&settings.model, opts).map_err(bad)?;
        let lineage = lineage_of(&model.metadata().architecture).to_owned();
        if !settings.lineage.is_empty() && settings.lineage != lineage {
            return Err(JudgeError::Model(format!(
                "the node declares model_family \"{}\" but {} is a {} model (lineage \"{lineage}\"); \
                 declare model_family = \"{lineage}\" so the panel's lineage rule sees the truth",
                settings.lineage,
                settings.model.display(),
                model.metadata().architecture
            )));
        }
        let yes = single_tokens(&model, &["Yes", " Yes", "yes", " yes", "YES"]);
        let no = single_tokens(&model, &["No", " No", "no", " no", "NO"]);
        if yes.is_empty() || no.is_empty() {
            return Err(JudgeError::Model(format!(
                "{}: \"Yes\" or \"No\" is not a single token of this model; the local judge \
                 cannot read it by next-token probability",
                settings.model.display()
            )));
        }
        let digits = (0..=9)
            .map(|d| single_tokens(&model, &[&d.to_string(), &format!(" {d}")]))
            .collect();
        let md = model.metadata();
        let file = settings
            .model
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sha = file_sha256(&settings.model)?;
        let version = format!(
            "{} {} ({}) sha256={} weights={:?}",
            md.name,
            md.size_label,
            md.architecture,
            &sha[..16],
            settings.slow_formats
        );
        Ok(Self {
            inner: Arc::new(Inner {
                label: truncate(file, MAX_MODEL_BYTES),
                version: truncate(version, MAX_MODEL_BYTES),
                model,
                settings,
                yes,
                no,
                digits,
                last: Mutex::new(None),
            }),
        })
    }

    /// The loaded model (for `panel model serve` and benches).
    pub fn model(&self) -> &Model {
        &self.inner.model
    }

    /// The lineage of the loaded model.
    pub fn lineage(&self) -> &str {
        lineage_of(&self.inner.model.metadata().architecture)
    }
}

/// Counts of one ruling's work, for its provenance.
#[derive(Default)]
struct Work {
    prompt_tokens: u64,
    completion_tokens: u64,
}

impl Inner {
    /// The full prompt text for a user message under `ins`.
    fn prompt(&self, ins: &Instructions, user: &str) -> Result<Vec<u32>, JudgeError> {
        let mut text = self.model.chat_prompt(&ins.text, user).map_err(bad)?;
        if !self.model.has_chat_template() {
            // A base model continues text: end where the one-word answer goes.
            text.push_str("\nAnswer:");
        }
        self.model.prompt_tokens(&text).map_err(bad)
    }

    /// The distribution after `tokens`, reusing the cached positions it shares with the
    /// previous prompt.
    fn feed(&self, tokens: &[u32], work: &mut Work) -> Result<(Cache, NextToken), JudgeError> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let shared = last.as_ref().map_or(0, |(prev, _)| {
            prev.iter().zip(tokens).take_while(|(a, b)| a == b).count()
        });
        let keep = shared.min(tokens.len().saturating_sub(1));
        let mut cache = match last.as_ref() {
            Some((_, c)) if keep >= MIN_REUSE => {
                let mut c = c.clone();
                c.truncate(keep).map_err(bad)?;
                c
            }
            _ => Cache::default(),
        };
        let from = cache.len();
        let next = self.model.feed(&mut cache, &tokens[from..]).map_err(bad)?;
        work.prompt_tokens += (tokens.len() - from) as u64;
        *last = Some((tokens.to_vec(), cache.clone()));
        Ok((cache, next))
    }

    fn rationale(
        &self,
        mut cache: Cache,
        answer: u32,
        seed: u64,
        work: &mut Work,
    ) -> Result<String, JudgeError> {
        let n = self.settings.rationale_tokens;
        if n == 0 {
            return Ok(String::new());
        }
        let mut follow = vec![answer];
        follow.extend(self.model.text_tokens(". Reason:").map_err(bad)?);
        let next = self.model.feed(&mut cache, &follow).map_err(bad)?;
        work.prompt_tokens += follow.len() as u64;
        let (text, used) = self
            .model
            .generate(cache, next, n, self.settings.temperature, seed)
            .map_err(bad)?;
        work.completion_tokens += used as u64;
        Ok(text.trim().to_owned())
    }

    fn binary(
        &self,
        m: &Motion,
        ins: &Instructions,
        orders: &[Presentation],
        work: &mut Work,
    ) -> Result<(JudgeAnswer, JudgeReading), JudgeError> {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Merge);
        let (aff, neg) = binary_pair(kind).unwrap_or((Decision::Accept, Decision::Reject));
        let mut readings = Vec::new();
        let mut first: Option<(Cache, u32)> = None;
        for p in orders {
            let tokens = self.prompt(ins, &p.user)?;
            let (cache, next) = self.feed(&tokens, work)?;
            let (y, n) = (next.mass(&self.yes), next.mass(&self.no));
            if first.is_none() {
                let best = |ids: &[u32]| {
                    ids.iter()
                        .copied()
                        .max_by(|a, b| {
                            next.logprobs[*a as usize].total_cmp(&next.logprobs[*b as usize])
                        })
                        .unwrap_or(0)
                };
                first = Some((
                    cache,
                    if y >= n {
                        best(&self.yes)
                    } else {
                        best(&self.no)
                    },
                ));
            }
            readings.push(read_binary(p, y, n));
        }
        let prob = readings.iter().map(|r| r.p_affirmative).sum::<f64>() / readings.len() as f64;
        let decision = if prob >= 0.5 { aff } else { neg };
        let seed = u64::from_le_bytes(
            Sha256::digest(m.motion_id.as_bytes())[..8]
                .try_into()
                .unwrap_or([0; 8]),
        );
        // An exam answer is scored by its probability alone: no rationale is generated for
        // it, which halves the time of a sitting.
        let text = match first {
            Some((cache, answer)) if kind != MotionKind::Exam => {
                self.rationale(cache, answer, seed, work)?
            }
            _ => String::new(),
        };
        let shown: Vec<String> = readings
            .iter()
            .map(|r| format!("{} {:.3}", r.order, r.p_affirmative))
            .collect();
        let rationale = truncate(
            format!(
                "P(affirmative) {prob:.3} from next-token probabilities ({}). {text}",
                shown.join(", ")
            ),
            MAX_RATIONALE_BYTES,
        );
        let tier = (kind == MotionKind::VerifyTier && decision == aff).then(|| claimed_tier(m));
        let reading = JudgeReading {
            method: "next-token".into(),
            prompt_sha256: ins.sha256.to_vec(),
            orders: readings,
        };
        let answer = JudgeAnswer {
            decision,
            probability: prob.clamp(0.0, 1.0),
            relevance: None,
            tier,
            quantiles: Vec::new(),
            receipt: None,
            rationale,
            provenance: None,
        };
        Ok((answer, reading))
    }

    fn ordinal(
        &self,
        ins: &Instructions,
        user: &str,
        scale: Scale,
        work: &mut Work,
    ) -> Result<(JudgeAnswer, JudgeReading), JudgeError> {
        let tokens = self.prompt(ins, user)?;
        let (_, next) = self.feed(&tokens, work)?;
        let masses: Vec<(u32, f64)> = scale
            .steps()
            .map(|d| (d, next.mass(&self.digits[d as usize])))
            .collect();
        let (step, conf, total) = read_scale(scale, &masses);
        let answer = JudgeAnswer {
            decision: Decision::None,
            probability: conf.clamp(0.0, 1.0),
            relevance: (scale == Scale::Relevance).then_some(step),
            tier: (scale == Scale::Tier).then_some(step),
            quantiles: Vec::new(),
            receipt: None,
            rationale: format!(
                "step {step} read from the digits' next-token probabilities ({})",
                masses
                    .iter()
                    .map(|(d, w)| format!("{d}: {:.3}", w / total.max(f64::MIN_POSITIVE)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            provenance: None,
        };
        let reading = JudgeReading {
            method: "next-token".into(),
            prompt_sha256: ins.sha256.to_vec(),
            orders: vec![OrderReading {
                order: "as-given".into(),
                p_affirmative: answer.probability,
                answer_mass: total.clamp(0.0, 1.0),
            }],
        };
        Ok((answer, reading))
    }

    fn quantiles(
        &self,
        ins: &Instructions,
        user: &str,
        levels: &[f64],
        work: &mut Work,
    ) -> Result<(JudgeAnswer, JudgeReading), JudgeError> {
        let tokens = self.prompt(ins, user)?;
        let (cache, next) = self.feed(&tokens, work)?;
        let (text, used) = self.model.generate(cache, next, 32, 0.0, 0).map_err(bad)?;
        work.completion_tokens += used as u64;
        let numbers: Vec<f64> = text
            .split(|c: char| c == ',' || c.is_whitespace() || c == ';')
            .filter_map(|w| {
                w.trim_matches(|c: char| !c.is_ascii_digit() && c != '.' && c != '-')
                    .parse::<f64>()
                    .ok()
            })
            .filter(|x| x.is_finite())
            .collect();
        let increasing = numbers.len() >= levels.len()
            && numbers[..levels.len()].windows(2).all(|w| w[0] < w[1]);
        let written = truncate(text.trim().replace('\n', " "), 200);
        let answer = if increasing {
            JudgeAnswer {
                decision: Decision::None,
                probability: 0.5,
                relevance: None,
                tier: None,
                quantiles: levels
                    .iter()
                    .zip(&numbers)
                    .map(|(l, v)| Quantile {
                        level: *l,
                        value: *v,
                    })
                    .collect(),
                receipt: None,
                rationale: format!("quantiles as the model wrote them: \"{written}\""),
                provenance: None,
            }
        } else {
            JudgeAnswer {
                decision: Decision::Abstain,
                probability: 0.5,
                relevance: None,
                tier: None,
                quantiles: Vec::new(),
                receipt: None,
                rationale: format!(
                    "abstained: the model wrote \"{written}\", not {} increasing numbers",
                    levels.len()
                ),
                provenance: None,
            }
        };
        let reading = JudgeReading {
            method: "stated".into(),
            prompt_sha256: ins.sha256.to_vec(),
            orders: vec![OrderReading {
                order: "as-given".into(),
                p_affirmative: 0.5,
                answer_mass: 1.0,
            }],
        };
        Ok((answer, reading))
    }

    /// One ruling, on the calling (blocking) thread.
    fn rule(&self, m: &Motion, source: Option<&Retrieved>) -> Result<JudgeAnswer, JudgeError> {
        let started = Instant::now();
        let ins = self.settings.persona.instructions(&m.debate_id);
        let scrub = |s: &str| self.model.scrub(s);
        let mut q = question(m, &scrub);
        if let Some(src) = source {
            let text: String = src.text.chars().take(MAX_SOURCE_CHARS).collect();
            let pre = format!(
                "Text retrieved from the cited source {}:\n{}\n\n",
                src.url,
                scrub(&text)
            );
            if let Question::Binary(orders) = &mut q {
                for o in orders {
                    o.user.insert_str(0, &pre);
                }
            }
        }
        let mut work = Work::default();
        let (mut answer, reading) = match &q {
            Question::Binary(orders) => self.binary(m, &ins, orders, &mut work)?,
            Question::Ordinal { user, scale } => self.ordinal(&ins, user, *scale, &mut work)?,
            Question::Quantiles { user, levels, .. } => {
                self.quantiles(&ins, user, levels, &mut work)?
            }
        };
        answer.provenance = Some(JudgeProvenance {
            judge_kind: "local".into(),
            model: self.label.clone(),
            model_version: self.version.clone(),
            latency_ms: Some(started.elapsed().as_millis() as u64),
            prompt_tokens: Some(work.prompt_tokens),
            completion_tokens: Some(work.completion_tokens),
            requests: 0,
            reading: Some(reading),
        });
        Ok(answer)
    }
}

impl LocalJudge {
    /// One ruling, blocking (tests and benches call it directly).
    pub fn rule_blocking(
        &self,
        m: &Motion,
        source: Option<&Retrieved>,
    ) -> Result<JudgeAnswer, JudgeError> {
        self.inner.rule(m, source)
    }
}

impl Judge for LocalJudge {
    fn kind(&self) -> &'static str {
        "local"
    }

    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        self.decide_with(motion, None)
    }

    fn decide_with<'a>(
        &'a self,
        motion: &'a Motion,
        source: Option<&'a Retrieved>,
    ) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        let inner = self.inner.clone();
        let (m, src) = (motion.clone(), source.cloned());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || inner.rule(&m, src.as_ref()))
                .await
                .map_err(|e| JudgeError::Model(format!("the model thread stopped: {e}")))?
        })
    }

    fn model(&self) -> String {
        self.inner.label.clone()
    }
}
