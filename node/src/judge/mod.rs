//! Judges: what decides a motion, behind one trait.
//!
//! * [`scripted::ScriptedJudge`]: deterministic profiles (accuracy, stance bias, position
//!   bias, inert relevance, noise, seed) for tests.
//! * [`simulated::SimulatedJudge`]: declared noise by the simulator's judge model (skill,
//!   lineage, biases, seed), labelled `simulated` on every ruling; the demo's arbiters.
//! * [`command::CommandJudge`]: an external program, motion JSON on stdin, answer JSON
//!   on stdout.
//! * [`llm::LlmJudge`]: an OpenAI-compatible chat-completions endpoint.
//! * `local::LocalJudge` (cargo feature `local-judge`): a GGUF model in the node's own
//!   process, read by its next-token distribution; [`prompt`] is what both it and the
//!   endpoint judge are asked.
//! * Human: no `Judge` impl; motions wait in the durable pending queue until an operator
//!   answers with `panel node rule` (see `service`).
//!
//! A judge only answers; signing, committing and revealing are the [`crate::arbiter`]'s.

pub mod answer_json;
pub mod command;
pub mod llm;
#[cfg(feature = "local-judge")]
pub mod local;
pub mod prompt;
pub mod scripted;
pub mod simulated;

use futures::future::BoxFuture;
use panel_proto::pb::{Decision, JudgeProvenance, Motion, Quantile, RetrievalReceipt};
use thiserror::Error;

/// Whether this build carries the in-process model judge (cargo feature `local-judge`).
pub const LOCAL_JUDGE_BUILT: bool = cfg!(feature = "local-judge");

/// Where the local judge's model files are: `flag`, else `$PANEL_MODELS`, else
/// `~/.cache/crucible-panel/models` (where `scripts/models.sh` puts them).
pub fn models_dir(flag: Option<&std::path::Path>) -> std::path::PathBuf {
    flag.map(std::path::Path::to_path_buf)
        .or_else(|| std::env::var_os("PANEL_MODELS").map(std::path::PathBuf::from))
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/crucible-panel/models")
        })
}

/// A judge's answer to a motion, before the arbiter binds it to the motion and signs.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeAnswer {
    pub decision: Decision,
    /// Credence in the affirmative outcome, in [0, 1] (docs/WIRE.md).
    pub probability: f64,
    pub relevance: Option<u32>,
    pub tier: Option<u32>,
    pub quantiles: Vec<Quantile>,
    pub receipt: Option<RetrievalReceipt>,
    pub rationale: String,
    /// What the judge knows of how it answered (the model's reported name, tokens,
    /// requests); the arbiter completes it with the judge kind and the latency it measured
    /// and signs it with the ruling (docs/WIRE.md "Judge provenance").
    pub provenance: Option<JudgeProvenance>,
}

/// What the node retrieved for a tier-verification motion, given to the judge so its
/// ruling is about the source it read (SPEC section 5: verification means retrieval).
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    /// The address fetched (after redirects).
    pub url: String,
    /// Text extracted from the fetched bytes (HTML tags stripped, whitespace collapsed),
    /// at most [`crate::retrieval::MAX_TEXT_BYTES`].
    pub text: String,
    /// Whether the text was cut at the bound.
    pub truncated: bool,
    /// SHA-256 of the fetched bytes, hex (the receipt the ruling binds).
    pub sha256_hex: String,
}

/// Why a judge gave no answer. Each variant names the judge's failure precisely, so an
/// operator can fix the program, the endpoint or the profile.
#[derive(Debug, Error)]
pub enum JudgeError {
    #[error("judge program could not be started ({program}): {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("judge program {program} did not answer within {timeout_ms} ms and was killed")]
    Timeout { program: String, timeout_ms: u64 },
    #[error("judge program {program} exited with {status}; stderr: {stderr}")]
    ExitStatus {
        program: String,
        status: String,
        stderr: String,
    },
    #[error(
        "judge program {program} wrote more than {limit} bytes on stdout; answers must be small JSON objects"
    )]
    OutputTooLarge { program: String, limit: usize },
    #[error("judge answer is not valid: {0}")]
    BadAnswer(String),
    #[error("judge I/O: no {pipe} pipe to {program}")]
    NoPipe { program: String, pipe: &'static str },
    #[error("judge I/O with {program}: {source}")]
    Io {
        program: String,
        source: std::io::Error,
    },
    #[error("LLM endpoint {url}: {problem}")]
    Endpoint { url: String, problem: String },
    #[error("LLM endpoint {url} failed after {attempts} attempts; last error: {last}")]
    RetriesExhausted {
        url: String,
        attempts: u32,
        last: String,
    },
    #[error("local model judge: {0}")]
    Model(String),
    #[error("scripted judge: {0}")]
    Script(String),
}

/// Something that answers motions.
pub trait Judge: Send + Sync {
    /// "scripted", "command", "llm" (shown in the node's identity).
    fn kind(&self) -> &'static str;
    /// Answers one motion. Must not look at anything but the motion (content projection
    /// only: no authorship ever reaches a judge).
    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>>;
    /// Answers a motion with the source the node retrieved for it (tier verification).
    /// Judges that cannot read a source answer as [`Judge::decide`] does.
    fn decide_with<'a>(
        &'a self,
        motion: &'a Motion,
        source: Option<&'a Retrieved>,
    ) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        let _ = source;
        self.decide(motion)
    }
    /// The model this judge asks for, as the ruling's provenance names it (empty if none).
    fn model(&self) -> String {
        String::new()
    }
}
