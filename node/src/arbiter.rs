//! The arbiter: a judge behind a signing key. Decide, sign, commit; independent of any
//! transport, so the gRPC server here and an outbound connection to a coordinator can
//! both drive it. `seal` takes time and salt as arguments; `decide` fetches the cited
//! source of a verify-tier motion first (`retrieval`), gives the judge its text, and stamps
//! the receipt with the wall clock of the fetch.
//!
//! `decide` is bounded: at most `max_concurrent_judgements` judge calls run at once (the
//! rest wait their turn), and a call that has not answered by the motion's commit deadline
//! is dropped (an LLM request in flight is cancelled), since its answer could not be
//! committed anyway.

use std::sync::Arc;
use std::time::{Duration, Instant};

use panel_proto::commit_reveal::{self, CommitRevealError, MotionWindow};
use panel_proto::pb::{ArbiterIdentity, Commitment, Motion, Reveal, Ruling, SignedRuling};
use panel_proto::round::Clock;
use panel_proto::ruling_check::RulingError;
use panel_proto::{SigningKey, VerifyingKey, fingerprint, sign_ruling};
use thiserror::Error;

use crate::clock::SystemClock;
use crate::judge::{Judge, JudgeAnswer, JudgeError};
use crate::retrieval::Retriever;

/// The largest index at most `max` that is a character boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// Why the arbiter will not rule on a motion.
#[derive(Debug, Error)]
pub enum ArbiterError {
    #[error("motion is malformed: {0}")]
    BadMotion(#[source] CommitRevealError),
    #[error("this arbiter is backed by a human; answer with `panel node rule`")]
    HumanJudge,
    #[error("the node is shutting down")]
    ShuttingDown,
    #[error("this arbiter ({0}) is not on the motion's panel")]
    NotOnPanel(String),
    #[error(
        "commit window of motion {motion_id:?} closed at {deadline_ms} ms (now {now_ms} ms); \
         too late to commit"
    )]
    CommitWindowClosed {
        motion_id: String,
        deadline_ms: i64,
        now_ms: i64,
    },
    #[error("judge failed: {0}")]
    Judge(#[from] JudgeError),
    #[error(
        "the judge did not answer motion {motion_id:?} before its commit deadline ({window_ms} \
         ms were left when it was asked{queued}); a slow judge needs a longer commit window: \
         the coordinator's operator sets `--commit-window KIND=MS` (or --exam-window-ms for \
         exams), docs/JUDGES.md \"Windows for slow judges\""
    )]
    TooSlow {
        motion_id: String,
        window_ms: i64,
        /// Set when the call waited for a free judgement slot.
        queued: String,
    },
    #[error("judge answer cannot be signed: {0}")]
    Ruling(#[from] RulingError),
    #[error(transparent)]
    Commit(#[from] CommitRevealError),
}

/// A signed ruling, its salt and its commitment: what a node stores after `Commit`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sealed {
    pub signed: SignedRuling,
    pub salt: [u8; 32],
    pub commitment: Commitment,
}

impl Sealed {
    /// The reveal message that opens the commitment.
    pub fn reveal(&self) -> Reveal {
        Reveal {
            signed_ruling: Some(self.signed.clone()),
            salt: self.salt.to_vec(),
            commitment: Some(self.commitment.clone()),
        }
    }
}

/// Builds the unsigned ruling that answers `m` with `a` (arbiter key and time given),
/// bound to `m`'s motion digest.
pub fn ruling_from(
    m: &Motion,
    a: &JudgeAnswer,
    arbiter_key: &[u8],
    issued_at_unix_ms: i64,
) -> Ruling {
    Ruling {
        motion_id: m.motion_id.clone(),
        debate_id: m.debate_id.clone(),
        kind: m.kind,
        state_hash: m.state_hash.clone(),
        decision: a.decision as i32,
        probability: a.probability,
        relevance: a.relevance,
        tier: a.tier,
        quantiles: a.quantiles.clone(),
        receipt: a.receipt.clone(),
        rationale: a.rationale.clone(),
        provenance: a.provenance.clone(),
        arbiter_key: arbiter_key.to_vec(),
        issued_at_unix_ms,
        // Envelope v2: the ruling names the one signed motion it answers (docs/WIRE.md,
        // "Ruling, envelope version 2"), so it cannot be presented as the answer to other
        // content, deadlines or seats under the same id.
        motion_digest: panel_proto::motion_digest(m).to_vec(),
    }
}

/// Judge calls running at once by default (`max_concurrent_judgements`).
pub const DEFAULT_MAX_CONCURRENT_JUDGEMENTS: usize = 4;

/// A judge bound to a key and a declared identity.
pub struct Arbiter {
    key: SigningKey,
    judge: Option<Arc<dyn Judge>>,
    identity: ArbiterIdentity,
    retriever: Retriever,
    /// One permit per judge call that may run at once.
    judgements: Arc<tokio::sync::Semaphore>,
    /// How long the judge is declared to take (`declared_latency_ms`): a motion whose
    /// commit window leaves less is still judged, with a warning naming the fix.
    declared_latency: Option<Duration>,
    /// The node's clock (`crate::clock`), read for every deadline check and receipt.
    clock: Arc<dyn Clock>,
}

impl Arbiter {
    /// `judge` is `None` for a human-backed arbiter: answers then come from
    /// [`Arbiter::seal`] with an operator's answer.
    pub fn new(
        key: SigningKey,
        judge: Option<Arc<dyn Judge>>,
        mut identity: ArbiterIdentity,
    ) -> Self {
        let vk = key.verifying_key();
        identity.public_key = vk.to_bytes().to_vec();
        identity.fingerprint = fingerprint(&vk);
        identity.judge_kind = judge.as_ref().map_or("human", |j| j.kind()).to_owned();
        Self {
            key,
            judge,
            identity,
            retriever: Retriever::system(),
            judgements: Arc::new(tokio::sync::Semaphore::new(
                DEFAULT_MAX_CONCURRENT_JUDGEMENTS,
            )),
            declared_latency: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// Runs the arbiter on another clock (tests that move time themselves).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Now, on the arbiter's clock (Unix ms).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The node's limits and retrieval settings (node.toml `max_concurrent_judgements`,
    /// `declared_latency_ms`, `[retrieval]`).
    pub fn with_limits(
        mut self,
        retriever: Retriever,
        max_concurrent_judgements: usize,
        declared_latency: Option<Duration>,
    ) -> Self {
        self.retriever = retriever;
        self.judgements = Arc::new(tokio::sync::Semaphore::new(
            max_concurrent_judgements.max(1),
        ));
        self.declared_latency = declared_latency;
        self
    }

    pub fn identity(&self) -> &ArbiterIdentity {
        &self.identity
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    pub fn is_human(&self) -> bool {
        self.judge.is_none()
    }

    /// Answers a coordinator's link challenge (docs/WIRE.md "Arbiter link"): proof that
    /// this node holds the key registered for `arbiter_id`. The key never leaves here.
    pub fn sign_link_hello(
        &self,
        challenge: &panel_proto::pb::LinkChallenge,
        arbiter_id: &str,
    ) -> Result<panel_proto::pb::LinkHello, panel_proto::link::HelloError> {
        panel_proto::link::sign_hello(&self.key, challenge, arbiter_id)
    }

    /// Signs a stance declaration for this arbiter (`declare.rs`). The key never leaves.
    pub fn sign_declaration(
        &self,
        claim: &panel_proto::stance_declaration::DeclarationClaim<'_>,
    ) -> Result<Vec<u8>, panel_proto::stance_declaration::DeclarationError> {
        panel_proto::stance_declaration::sign_declaration(claim, &self.key)
    }

    /// Checks that a motion is well formed, still open for commitments at `now_ms`, and
    /// that this arbiter sits on its panel (an empty panel list means any arbiter).
    pub fn check_motion(&self, m: &Motion, now_ms: i64) -> Result<MotionWindow, ArbiterError> {
        let w = MotionWindow::from_motion(m).map_err(ArbiterError::BadMotion)?;
        if let Some(panel) = &w.panel
            && !panel.contains(&self.key.verifying_key().to_bytes())
        {
            return Err(ArbiterError::NotOnPanel(self.identity.fingerprint.clone()));
        }
        if w.round().check_commit(&m.motion_id, now_ms).is_err() {
            return Err(ArbiterError::CommitWindowClosed {
                motion_id: m.motion_id.clone(),
                deadline_ms: w.commit_deadline_ms,
                now_ms,
            });
        }
        Ok(w)
    }

    /// Asks the judge (after retrieving the source of a tier-verification motion), within
    /// the node's concurrency limit and the motion's commit window, and completes the
    /// answer's provenance with the judge kind, model and measured latency. A human-backed
    /// arbiter has no judge to ask.
    pub async fn decide(&self, m: &Motion) -> Result<JudgeAnswer, ArbiterError> {
        let Some(j) = &self.judge else {
            return Err(ArbiterError::HumanJudge);
        };
        let window_ms = m.commit_deadline_unix_ms.saturating_sub(self.now_ms());
        if let Some(declared) = self.declared_latency
            && (window_ms.max(0) as u128) < declared.as_millis()
        {
            tracing::warn!(
                window_ms,
                declared_latency_ms = declared.as_millis() as u64,
                "the commit window left is shorter than this judge's declared latency; ask the \
                 coordinator's operator for a longer window for this motion kind \
                 (--commit-window KIND=MS, docs/JUDGES.md)"
            );
        }
        let queued = std::sync::atomic::AtomicBool::new(false);
        let work = async {
            let _permit = match self.judgements.try_acquire() {
                Ok(p) => p,
                Err(_) => {
                    queued.store(true, std::sync::atomic::Ordering::Relaxed);
                    self.judgements
                        .acquire()
                        .await
                        .map_err(|_| ArbiterError::ShuttingDown)?
                }
            };
            let retrieval = self.retriever.retrieve_for(m, || self.now_ms()).await;
            let source = retrieval
                .as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(crate::retrieval::Fetched::retrieved);
            let shown = self.as_shown(m);
            let started = Instant::now();
            let answer = j
                .decide_with(shown.as_ref().unwrap_or(m), source.as_ref())
                .await?;
            let latency = started.elapsed();
            let mut answer = crate::retrieval::bind(m, answer, retrieval.as_ref());
            let mut p = answer.provenance.take().unwrap_or_default();
            p.judge_kind = j.kind().to_owned();
            if p.model.is_empty() {
                p.model = j.model();
            }
            p.model.truncate(floor_char_boundary(
                &p.model,
                panel_proto::ruling_check::MAX_MODEL_BYTES,
            ));
            p.latency_ms = Some(u64::try_from(latency.as_millis()).unwrap_or(u64::MAX));
            answer.provenance = Some(p);
            Ok(answer)
        };
        let left = Duration::from_millis(window_ms.max(0) as u64);
        match tokio::time::timeout(left, work).await {
            Ok(r) => r,
            Err(_) => Err(ArbiterError::TooSlow {
                motion_id: m.motion_id.clone(),
                window_ms,
                queued: if queued.load(std::sync::atomic::Ordering::Relaxed) {
                    ", and it first waited for a free judgement slot \
                     (max_concurrent_judgements)"
                        .into()
                } else {
                    String::new()
                },
            }),
        }
    }

    /// A procedure motion that shuffles its items, in the order this arbiter is shown
    /// them (docs/PROCEDURES.md, "Presentation order": derived from the logged draw seed,
    /// the question key and this arbiter's key, so the record says what each seat saw).
    /// `None` for every other motion. The ruling still binds the motion as signed.
    pub fn as_shown(&self, m: &Motion) -> Option<Motion> {
        let proj = m.projection.as_ref()?;
        let q = proj.procedure.as_ref().filter(|q| q.shuffle_items)?;
        let me = hex::encode(self.identity.public_key.as_slice());
        let order = panel_procedures::presentation_order(
            q.presentation_seed,
            &q.key,
            &me,
            proj.items.len(),
        );
        let mut shown = m.clone();
        if let Some(p) = shown.projection.as_mut() {
            p.items = order
                .iter()
                .filter_map(|i| proj.items.get(*i).cloned())
                .collect();
        }
        Some(shown)
    }

    /// Binds an answer to the motion, signs it, and commits to it with `salt`.
    pub fn seal(
        &self,
        m: &Motion,
        answer: &JudgeAnswer,
        now_ms: i64,
        salt: [u8; 32],
    ) -> Result<Sealed, ArbiterError> {
        let ruling = ruling_from(m, answer, &self.identity.public_key, now_ms);
        let signed = sign_ruling(&self.key, ruling)?;
        let commitment = commit_reveal::commit(&self.key, &signed, &salt, now_ms)?;
        Ok(Sealed {
            signed,
            salt,
            commitment,
        })
    }

    /// Check, decide, seal: the whole commit step for machine judges.
    pub async fn commit(
        &self,
        m: &Motion,
        now_ms: i64,
        salt: [u8; 32],
    ) -> Result<Sealed, ArbiterError> {
        self.check_motion(m, now_ms)?;
        let answer = self.decide(m).await?;
        self.seal(m, &answer, now_ms, salt)
    }
}
