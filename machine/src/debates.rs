//! Debates inside the replicated state: each record holds a Crucible document (spec
//! mode), the environment its writers consume, the acceptance policy, who contributed,
//! and which of the protocol's questions are open as motions or already settled.
//!
//! Pure: called from `apply::apply` with the leader-stamped time; ids come from
//! per-debate counters, so every replica and an offline verifier get the same document.

use crate::log::refusal_code::RefusalCode;
use std::collections::{BTreeMap, BTreeSet};

use crucible::contribution::Contribution;
use crucible::document::Debate;
use crucible::env::Env;
use crucible::gate::{self, GateRefusal};
use crucible::model::NewDebate;
use crucible::motion::{Answer, Projection, Question, pending, projection, settle};
use crucible::{Protocol, Refusal};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::rules::acceptance::{self, Decision, MotionKind, Policy, Stance};

/// The environment a debate's writers consume: the entry's stamped time (advanced by one
/// millisecond per tick so log order stays visible) and per-prefix id counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DebateEnv {
    pub time_ms: i64,
    pub counters: BTreeMap<String, u64>,
}

impl Env for DebateEnv {
    fn now(&mut self) -> i64 {
        let t = self.time_ms;
        self.time_ms += 1;
        t
    }

    fn new_id(&mut self, prefix: &str) -> String {
        let n = self.counters.entry(prefix.to_string()).or_insert(0);
        *n += 1;
        format!("{prefix}_{n}")
    }
}

/// A debate and its panel bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateRecord {
    pub debate: Debate,
    pub env: DebateEnv,
    pub policy: Policy,
    /// Seats per motion and the minimum per stance.
    pub seats: usize,
    pub min_per_stance: usize,
    /// Simulation mode: motions carry the expected answer for scripted judges.
    pub simulation: bool,
    /// Every author name that wrote to the debate.
    pub contributors: BTreeSet<String>,
    /// Hex keys that signed a contribution to the debate. Recusal is keyed to these, not
    /// to names: an arbiter holding (or having held) one of them is never drawn onto the
    /// debate's panels, while an unsigned name proves nothing and excludes nobody.
    #[serde(default)]
    pub contributor_keys: BTreeSet<crate::rules::hex_bytes::PublicKeyBytes>,
    /// Model family each contributor declared, if any.
    pub author_families: BTreeMap<String, String>,
    /// Question key -> open motion id.
    pub open: BTreeMap<String, String>,
    /// Motion id -> the question it asks.
    pub questions: BTreeMap<String, Question>,
    /// Question keys already answered (or given up after a deadlock).
    pub settled: BTreeSet<String>,
    /// Simulation hints by created id.
    pub hints: BTreeMap<String, Answer>,
    pub verify_hints: BTreeMap<String, Answer>,
    pub relevance_hints: BTreeMap<String, f64>,
    /// Count of explicit requests, to give repeated requests distinct keys.
    pub requests: u64,
    /// Deadlocks per question key; each one widens the next panel by two seats.
    #[serde(default)]
    pub deadlocks: BTreeMap<String, u32>,
    /// Questions ended without a panel because no fresh one could be drawn, with the
    /// reason (`fresh_panel`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exhausted: BTreeMap<String, String>,
    /// Appeals that no fresh panel can seat yet, with the reason and what would seat one
    /// (rule set [`APPEALS_WAIT`](crate::rules::APPEALS_WAIT)): they stay pending and are
    /// asked again after every write to the debate, instead of being denied.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub waiting: BTreeMap<String, String>,
    /// Arbiter id -> its signed stance for this debate (`ClientCommand::DeclareStance`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub declared_stances: BTreeMap<String, DeclaredStance>,
    /// Arbiter id -> the prior-consistency check's last finding on its declaration for
    /// this debate (rule set `DECLARED_CAMPS`; `priors::run_by_claim`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prior_checks: BTreeMap<String, crate::debates::PriorFinding>,
    /// Arbiter id -> the camp it is seated under in this debate because the check
    /// confirmed that it rules against its declaration.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fitted_stances: BTreeMap<String, Stance>,
    /// Appeals put to a random sample of the whole admitted population
    /// (`sample_appeals.rs`, rule set 22).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub sample_appeals: BTreeSet<String>,
}

/// An arbiter's stance for one debate, as its signed declaration set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredStance {
    pub stance: Stance,
    pub credence_permille: u16,
    /// Log index of the `DeclareStance` entry.
    pub log_index: u64,
}

/// Why a debate write was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DebateError {
    #[error(
        "debate {0} does not exist; find its id with `panel debate list`, or open a debate with `panel debate new`"
    )]
    UnknownDebate(String),
    #[error(
        "{0}: {fixes}; fix the text and submit again (`panel gate` checks fields offline)",
        fixes = gate_fixes(.0)
    )]
    Gate(#[from] GateRefusal),
    #[error("{0}")]
    Protocol(#[from] Refusal),
    #[error(
        "motion {0} asks no debate question, so it settles nothing in a debate; `panel motion show {0}` shows what it asks"
    )]
    NoQuestion(String),
    #[error(
        "debate {debate} cannot advance from {from}: {}; ask again once it holds (`panel debate show {debate}` shows the phase, claims and pending versions)",
        reason.message
    )]
    AdvanceRefused {
        debate: String,
        from: String,
        reason: Refusal,
    },
}

/// Each violation's rule, field and fix, so the refusal says how to mend the text.
fn gate_fixes(r: &GateRefusal) -> String {
    r.violations
        .iter()
        .map(|v| format!("{} in {}: {}", v.rule.as_str(), v.field, v.fix))
        .collect::<Vec<_>>()
        .join("; ")
}

impl DebateError {
    pub fn code(&self) -> RefusalCode {
        match self {
            DebateError::UnknownDebate(_) => RefusalCode::UnknownDebate,
            DebateError::Gate(_) => RefusalCode::GateRefused,
            DebateError::Protocol(r) => RefusalCode::Engine(r.code),
            DebateError::NoQuestion(_) => RefusalCode::NoQuestion,
            DebateError::AdvanceRefused { reason, .. } => RefusalCode::Engine(reason.code),
        }
    }
}

/// A question to open as a motion, with what the panel is shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToOpen {
    pub debate_id: String,
    pub question: Question,
    pub kind: MotionKind,
    pub projection: Projection,
    pub state_hash: crate::rules::hex_bytes::DigestBytes,
    pub expected: Option<Answer>,
}

/// SHA-256 of the document's JSON (struct key order is fixed). Rulings bind it.
/// Written through `Value`'s `Display`, which cannot fail, so the hashed bytes are never
/// a stand-in: the same compact bytes `serde_json::to_vec` writes.
pub fn state_hash(d: &Debate) -> crate::rules::hex_bytes::DigestBytes {
    crate::rules::hex_bytes::DigestBytes::new(
        Sha256::digest(d.to_json().to_string().as_bytes()).to_vec(),
    )
}

/// The acceptance rule's kind for a protocol question.
pub fn motion_kind(q: &Question) -> MotionKind {
    match q {
        Question::Merge { .. } => MotionKind::Merge,
        Question::VerifyTier { .. } => MotionKind::TierVerification,
        Question::ResolveChallenge { .. } => MotionKind::Challenge,
        Question::AssignRelevance { .. } => MotionKind::Relevance,
        Question::CertifySteelman { .. } => MotionKind::Steelman,
        Question::AdvancePhase { .. } => MotionKind::Phase,
        Question::AdmitAppeal { .. } => MotionKind::Appeal,
    }
}

/// Relevance steps on the wire are 1..=4 for 0.25..=1.0.
pub fn relevance_value(step: u8) -> f64 {
    f64::from(step.clamp(1, 4)) * 0.25
}

pub fn relevance_step(value: f64) -> u8 {
    (value * 4.0).round().clamp(1.0, 4.0) as u8
}

/// The answer an accepted outcome gives to the question.
pub fn answer_of(outcome: &acceptance::Outcome) -> Answer {
    match outcome {
        acceptance::Outcome::Decided(Decision::Yes) => Answer::Yes,
        acceptance::Outcome::Decided(Decision::No) => Answer::No,
        acceptance::Outcome::Relevance(step) => Answer::Relevance(relevance_value(*step)),
        acceptance::Outcome::TierVerified { decision, .. } => match decision {
            Decision::Yes => Answer::Yes,
            Decision::No => Answer::No,
        },
    }
}

impl DebateRecord {
    fn protocol(&mut self, time_ms: u64) -> Protocol<DebateEnv> {
        let mut env = std::mem::take(&mut self.env);
        env.time_ms = env.time_ms.max(time_ms as i64);
        Protocol::new(env)
    }

    fn put_back(&mut self, p: Protocol<DebateEnv>) {
        self.env = p.env;
    }

    /// The simulated answer for a question, when the debate is a simulation.
    pub fn expected(&self, q: &Question) -> Option<Answer> {
        if !self.simulation {
            return None;
        }
        Some(match q {
            Question::AssignRelevance { version_id, .. } => {
                Answer::Relevance(self.relevance_hints.get(version_id).copied().unwrap_or(1.0))
            }
            Question::Merge { version_id, .. } => {
                self.hints.get(version_id).copied().unwrap_or(Answer::Yes)
            }
            Question::VerifyTier { version_id, .. } => self
                .verify_hints
                .get(version_id)
                .copied()
                .unwrap_or(Answer::Yes),
            Question::ResolveChallenge { challenge_id } => {
                self.hints.get(challenge_id).copied().unwrap_or(Answer::No)
            }
            _ => Answer::Yes,
        })
    }

    /// Questions that need a motion now: pending in the document and not yet open.
    pub fn to_open(&self) -> Vec<ToOpen> {
        let hash = state_hash(&self.debate);
        pending(&self.debate, &self.settled)
            .into_iter()
            .filter(|q| !self.open.contains_key(&q.key()))
            .filter_map(|q| {
                let projection = projection(&self.debate, &q).ok()?;
                Some(ToOpen {
                    debate_id: self.debate.id.clone(),
                    kind: motion_kind(&q),
                    expected: self.expected(&q),
                    question: q,
                    projection,
                    state_hash: hash.clone(),
                })
            })
            .collect()
    }

    /// An explicit request (tier verification of a merged version, a phase advance),
    /// keyed apart from earlier requests for the same question.
    pub fn request(
        &mut self,
        q: Question,
        expected: Option<Answer>,
    ) -> Result<ToOpen, DebateError> {
        let projection = projection(&self.debate, &q)?;
        if let (Question::VerifyTier { version_id, .. }, Some(a)) = (&q, expected) {
            self.verify_hints.insert(version_id.clone(), a);
        }
        self.requests += 1;
        Ok(ToOpen {
            debate_id: self.debate.id.clone(),
            kind: motion_kind(&q),
            expected: if self.simulation {
                expected.or(Some(Answer::Yes))
            } else {
                None
            },
            question: q,
            projection,
            state_hash: state_hash(&self.debate),
        })
    }

    /// Whether a panel asked to advance from `from` could have its yes applied now: the
    /// debate is in that phase and the phase's prerequisites hold (SPEC section 6). From
    /// rule set [`CHECKED_ADVANCES`](crate::rules::CHECKED_ADVANCES) a request that fails
    /// this is refused before a panel is spent on it.
    pub fn check_advance(&self, from: &str) -> Result<(), DebateError> {
        let refused = |reason| DebateError::AdvanceRefused {
            debate: self.debate.id.clone(),
            from: from.to_owned(),
            reason,
        };
        if self.debate.phase != from {
            return Err(refused(Refusal::new(
                crucible::Code::PhaseNotAdvanceable,
                format!("the debate is in {}, not {from}", self.debate.phase),
            )));
        }
        crucible::phase::phase_prereq(&self.debate).map_err(refused)
    }

    /// Whether a panel may be asked to conclude the appeal review in progress (a
    /// `--advance appeal-review`): only when the review may conclude now (SPEC section 12:
    /// this cycle's challenges resolved, no candidate left on a reopened thread). From
    /// rule set [`CONCLUDED_REVIEWS`](crate::rules::CONCLUDED_REVIEWS).
    pub fn check_conclude(&self) -> Result<(), DebateError> {
        crucible::appeal::review_prereq(&self.debate)
            .map(|_| ())
            .map_err(|reason| DebateError::AdvanceRefused {
                debate: self.debate.id.clone(),
                from: crucible::document::phase::APPEAL_REVIEW.to_owned(),
                reason,
            })
    }

    /// Whether a fresh verdict may be issued now: only once the debate has reached its
    /// verdict (the verdict phase, or closed), never mid-debate. From rule set
    /// [`CHECKED_ADVANCES`](crate::rules::CHECKED_ADVANCES).
    pub fn check_reissue(&self) -> Result<(), DebateError> {
        use crucible::document::phase;
        if [phase::VERDICT, phase::CLOSED].contains(&self.debate.phase.as_str()) {
            return Ok(());
        }
        Err(DebateError::Protocol(Refusal::new(
            crucible::Code::PhaseNotAdvanceable,
            format!(
                "debate {} is in {}; a fresh verdict is issued only in the verdict phase or once closed (ask the panel to advance: `panel ask --debate {} --advance {}`)",
                self.debate.id, self.debate.phase, self.debate.id, self.debate.phase
            ),
        )))
    }

    /// Applies an accepted answer through the engine; returns what the ledger change
    /// leaves pending.
    pub fn settle(
        &mut self,
        time_ms: u64,
        motion_id: &str,
        answer: Answer,
        rationale: &str,
    ) -> Result<(), DebateError> {
        let q = self
            .questions
            .get(motion_id)
            .cloned()
            .ok_or_else(|| DebateError::NoQuestion(motion_id.to_owned()))?;
        self.settle_question(time_ms, &q, answer, rationale)
    }

    fn settle_question(
        &mut self,
        time_ms: u64,
        q: &Question,
        answer: Answer,
        rationale: &str,
    ) -> Result<(), DebateError> {
        let mut p = self.protocol(time_ms);
        let r = settle(&mut p, &mut self.debate, q, answer, rationale, "panel");
        self.put_back(p);
        self.open.remove(&q.key());
        self.settled.insert(q.key());
        r.map_err(DebateError::from)
    }

    /// Ends `q` without a panel when no fresh one can be drawn (`fresh_panel`): an appeal
    /// is denied with `reason` as its rationale, so the verdict stands; any other question
    /// is given up, its ledger unchanged, as after its last deadlock.
    pub fn exhaust(&mut self, time_ms: u64, q: &Question, reason: &str) -> Result<(), DebateError> {
        self.exhausted.insert(q.key(), reason.to_owned());
        match q {
            Question::AdmitAppeal { .. } => self.settle_question(time_ms, q, Answer::No, reason),
            _ => {
                self.open.remove(&q.key());
                self.settled.insert(q.key());
                Ok(())
            }
        }
    }

    /// A motion withdrawn before its close (its seats' organisation was removed): the
    /// question is open again, to be asked under a new motion, and no deadlock is counted
    /// against it, since no panel failed to answer it.
    pub fn withdrawn(&mut self, q: &Question) {
        self.open.remove(&q.key());
    }

    /// A deadlocked motion changes nothing (its dissent stays on the record). Questions
    /// whose "no" changes nothing (verification, certification over an objection, an
    /// advance) are settled as unchanged; the others are asked again to a panel two seats
    /// wider, at most three times.
    pub fn deadlocked(&mut self, _motion_id: &str, q: &Question) {
        let key = q.key();
        self.open.remove(&key);
        let n = self.deadlocks.entry(key.clone()).or_insert(0);
        *n += 1;
        let give_up = *n >= 3
            || matches!(
                q,
                Question::VerifyTier { .. }
                    | Question::CertifySteelman { .. }
                    | Question::AdvancePhase { .. }
            );
        if give_up {
            self.settled.insert(key);
        }
    }

    /// The declared model family of the author behind a question, so the draw can keep
    /// same-family arbiters off it.
    pub fn author_family_for(&self, q: &Question) -> Option<String> {
        let author = match q {
            Question::Merge {
                thread_id,
                version_id,
            }
            | Question::AssignRelevance {
                thread_id,
                version_id,
            }
            | Question::VerifyTier {
                thread_id,
                version_id,
                ..
            } => self
                .debate
                .thread(thread_id)
                .and_then(|t| t.version(version_id))
                .and_then(|v| v.author.clone()),
            Question::ResolveChallenge { challenge_id } => self
                .debate
                .challenge(challenge_id)
                .and_then(|c| c.author.clone()),
            Question::AdmitAppeal { appeal_id } => {
                self.debate.appeal(appeal_id).and_then(|a| a.author.clone())
            }
            _ => None,
        }?;
        self.author_families.get(&author).cloned()
    }

    /// The declared model families of every author a question is about: the authors of
    /// every version of the thread it concerns, of a challenge and its response and of
    /// the challenged thread, of an appeal and of everything it contests. The draw keeps
    /// arbiters of these lineages off the question's panel (docs/coordinator/acceptance.md
    /// "Declared priors"), so no author's relatives judge any part of its work.
    pub fn involved_author_families(&self, q: &Question) -> BTreeSet<String> {
        let doc = &self.debate;
        let mut authors: BTreeSet<String> = BTreeSet::new();
        let thread_authors = |thread_id: &str, out: &mut BTreeSet<String>| {
            if let Some(t) = doc.thread(thread_id) {
                out.extend(t.versions.iter().filter_map(|v| v.author.clone()));
            }
        };
        let challenge_authors = |c: &crucible::document::Challenge, out: &mut BTreeSet<String>| {
            out.extend(c.author.clone());
            out.extend(c.response.as_ref().and_then(|r| r.author.clone()));
        };
        match q {
            Question::Merge { thread_id, .. }
            | Question::AssignRelevance { thread_id, .. }
            | Question::VerifyTier { thread_id, .. } => thread_authors(thread_id, &mut authors),
            Question::ResolveChallenge { challenge_id } => {
                if let Some(c) = doc.challenge(challenge_id) {
                    challenge_authors(c, &mut authors);
                    thread_authors(&c.thread_id, &mut authors);
                }
            }
            Question::AdmitAppeal { appeal_id } => {
                if let Some(a) = doc.appeal(appeal_id) {
                    authors.extend(a.author.clone());
                    for t in &a.target_thread_ids {
                        thread_authors(t, &mut authors);
                        for c in doc.challenges.iter().filter(|c| &c.thread_id == t) {
                            challenge_authors(c, &mut authors);
                        }
                    }
                }
            }
            Question::CertifySteelman { .. } | Question::AdvancePhase { .. } => {}
        }
        authors
            .into_iter()
            .filter_map(|a| self.author_families.get(&a))
            .map(|f| f.trim().to_lowercase())
            .filter(|f| !f.is_empty())
            .collect()
    }

    /// Issues a fresh verdict from the current ledger (SPEC 3.7: a new verdict, the
    /// earlier ones untouched).
    pub fn reissue_verdict(&mut self, time_ms: u64, actor: &str) -> u32 {
        let mut p = self.protocol(time_ms);
        let n = p.issue_verdict(&mut self.debate, None, None, Some(actor));
        self.put_back(p);
        n
    }
}

/// Creates a debate record (phase framing).
pub fn create(
    debate_id: &str,
    time_ms: u64,
    input: NewDebate,
    policy: Policy,
    seats: usize,
    min_per_stance: usize,
    simulation: bool,
) -> DebateRecord {
    let mut env = DebateEnv {
        time_ms: time_ms as i64,
        counters: BTreeMap::new(),
    };
    // The document id is the coordinator's, not a per-debate counter.
    let mut p = Protocol::new(std::mem::take(&mut env));
    let mut debate = p.new_debate(input);
    debate.id = debate_id.to_string();
    let mut env = p.env;
    env.counters.remove("deb");
    DebateRecord {
        debate,
        env,
        policy,
        seats,
        min_per_stance,
        simulation,
        contributors: BTreeSet::new(),
        contributor_keys: BTreeSet::new(),
        author_families: BTreeMap::new(),
        open: BTreeMap::new(),
        questions: BTreeMap::new(),
        settled: BTreeSet::new(),
        hints: BTreeMap::new(),
        verify_hints: BTreeMap::new(),
        relevance_hints: BTreeMap::new(),
        requests: 0,
        deadlocks: BTreeMap::new(),
        exhausted: BTreeMap::new(),
        waiting: BTreeMap::new(),
        declared_stances: BTreeMap::new(),
        prior_checks: BTreeMap::new(),
        fitted_stances: BTreeMap::new(),
        sample_appeals: BTreeSet::new(),
    }
}

/// Simulation hints a contributor may attach (honoured only in simulation debates).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubmissionHints {
    pub answer: Option<Answer>,
    pub verify: Option<Answer>,
    pub relevance: Option<f64>,
}

/// Runs the Gate, then the spec-mode writer. Returns the created id, if any.
pub fn contribute(
    rec: &mut DebateRecord,
    time_ms: u64,
    author: &str,
    side: &str,
    model_family: Option<&str>,
    c: &Contribution,
    hints: &SubmissionHints,
) -> Result<Option<String>, DebateError> {
    let (fields, ctx) = c.gate_input(author, side);
    gate::admit(&fields, &ctx)?;
    let mut p = rec.protocol(time_ms);
    let r = c.apply(&mut p, &mut rec.debate, author, side);
    rec.put_back(p);
    let created = r?;
    rec.contributors.insert(author.to_string());
    if let Some(f) = model_family {
        rec.author_families
            .insert(author.to_string(), f.to_string());
    }
    if let Some(id) = &created
        && rec.simulation
    {
        if let Some(a) = hints.answer {
            rec.hints.insert(id.clone(), a);
        }
        if let Some(a) = hints.verify {
            rec.verify_hints.insert(id.clone(), a);
        }
        if let Some(r) = hints.relevance {
            rec.relevance_hints.insert(id.clone(), r);
        }
    }
    Ok(created)
}

/// One arbiter's prior-consistency finding, kept on the arbiter (`prior_check`): the
/// decided motions the fit used and the calibration crate's check, as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorFinding {
    pub motions: usize,
    pub check: Value,
}
