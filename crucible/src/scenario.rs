//! The paper's worked verdict (section 4) as a panel scenario: the submissions the
//! contributors make, the requests they file, and, for simulation only, the answer each
//! motion should get. One [`Player`] plays it on every target: the engine here (a panel
//! that always answers as hinted, which the engine-only path and the tests use), the
//! replicated state machine in its tests, and the live cluster of `panel up`.
//!
//! Ids are not known in advance: a step may carry a `label`, and later steps refer to
//! `$label` (the version, challenge or appeal it created) or `$label.thread`.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::document::{Debate, Side};
use crate::env::Env;
use crate::error::Refusal;
use crate::model::NewDebate;
use crate::motion::{Answer, Question, pending, settle};
use crate::protocol::Protocol;

mod player;
pub use player::{
    DecodeError, Figures, Player, ScenarioError, Submission, Target, VerdictCheck, parse_request,
    play, play_now,
};

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    /// A contributor's write. `hint` is the answer the motion it opens should get;
    /// `relevance` is the weight its claim should receive at adjudication.
    Submit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        author: String,
        side: Side,
        contribution: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hint: Option<Answer>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        relevance: Option<f64>,
        /// The answer verification motions on this submission's citations should get.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verify: Option<Answer>,
    },
    /// A participant asks the panel a question the document does not raise by itself
    /// (tier verification, phase advance).
    Request { question: Value, hint: Answer },
    /// The latest verdict, as the paper prints it.
    ExpectVerdict {
        n: u32,
        winner: Option<Side>,
        margin: String,
        band: String,
    },
}

/// A whole scenario: the framing and the steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub resolution: String,
    pub pos_a: String,
    pub pos_b: String,
    pub burden: String,
    pub claim_budget: Option<f64>,
    pub steps: Vec<Step>,
}

/// Resolves `$label` and `$label.thread` references in a step's JSON.
#[derive(Debug, Default, Clone)]
pub struct Labels {
    ids: HashMap<String, String>,
}

impl Labels {
    pub fn bind(&mut self, label: &str, id: &str) {
        self.ids.insert(label.to_string(), id.to_string());
    }

    pub fn resolve(&self, d: &Debate, v: &Value) -> Result<Value, LabelError> {
        Ok(match v {
            Value::String(s) if s.starts_with('$') => Value::String(self.id(d, s)?),
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| self.resolve(d, x))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), self.resolve(d, x)?)))
                    .collect::<Result<_, _>>()?,
            ),
            other => other.clone(),
        })
    }

    /// The id one reference names: `$label` the id it was bound to, `$label.thread` the
    /// thread holding that version; anything else is itself.
    pub fn id(&self, d: &Debate, reference: &str) -> Result<String, LabelError> {
        let Some(r) = reference.strip_prefix('$') else {
            return Ok(reference.to_string());
        };
        let (label, thread) = match r.strip_suffix(".thread") {
            Some(l) => (l, true),
            None => (r, false),
        };
        let id = self.ids.get(label).ok_or_else(|| LabelError::Unbound {
            label: label.to_string(),
        })?;
        if !thread {
            return Ok(id.clone());
        }
        d.threads
            .iter()
            .find(|t| t.versions.iter().any(|v| &v.id == id))
            .map(|t| t.id.clone())
            .ok_or_else(|| LabelError::NoThread { id: id.clone() })
    }
}

/// A `$label` reference that names nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabelError {
    #[error("scenario label {label:?} is not bound yet")]
    Unbound { label: String },
    #[error("no thread holds {id}")]
    NoThread { id: String },
}

fn claim(
    kind: &str,
    assertion: &str,
    grounds: &str,
    warrant: &str,
    evidence: Value,
    qualifier: &str,
) -> Value {
    json!({"type": kind, "assertion": assertion, "grounds": grounds, "warrant": warrant, "evidence": evidence, "qualifier": qualifier})
}

fn submit(
    label: Option<&str>,
    author: &str,
    side: Side,
    contribution: Value,
    hint: Option<Answer>,
    relevance: Option<f64>,
) -> Step {
    Step::Submit {
        label: label.map(str::to_string),
        author: author.into(),
        side,
        contribution,
        hint,
        relevance,
        verify: None,
    }
}

fn with_verify(mut step: Step, answer: Answer) -> Step {
    if let Step::Submit { verify, .. } = &mut step {
        *verify = Some(answer);
    }
    step
}

fn advance(from: &str) -> Step {
    Step::Request {
        question: json!({"kind": "advance-phase", "from": from}),
        hint: Answer::Yes,
    }
}

fn challenge(
    label: &str,
    target: &str,
    ground: &str,
    text: &str,
    author: &str,
    side: Side,
    upheld: bool,
) -> Step {
    submit(
        Some(label),
        author,
        side,
        json!({"op": "challenge", "threadId": format!("${target}.thread"), "versionId": format!("${target}"), "ground": ground, "text": text}),
        Some(if upheld { Answer::Yes } else { Answer::No }),
        None,
    )
}

/// The worked verdict of the paper's section 4. `source_base` is where the citations
/// live (the local file server of `panel up`, or any placeholder for the pure runner).
/// Rows: A1 = verified T2 (4) x 1.0 x 1.1 x 0.9 = 3.96; A2 = logical 2 x 1.0 x 1.2 x
/// 1.0 = 2.40; B1 = claimed T1, 3 until verified, x 1.0 x 1.1 x 1.0 = 3.30; B2 = a
/// logical repair 2 x 0.5 x 1.0 x 0.9 = 0.90.
pub fn worked_example(source_base: &str) -> Scenario {
    let a1_url = format!("{source_base}/a1-trial-tabulation.txt");
    let b1_url = format!("{source_base}/b1-systematic-review.txt");
    let a1 = claim(
        "empirical",
        "Firms in a national four-day week trial reported stable or higher output per employee.",
        "The national statistics office tabulated output per employee for participating firms before and during the trial.",
        "If output per employee held or rose while hours fell, the shorter week did not cost output.",
        json!([{"source": "National statistics office trial tabulation", "url": a1_url, "tier": "T2"}]),
        "probable",
    );
    let a2 = claim(
        "logical",
        "Fewer consecutive working hours reduce fatigue-related errors per hour worked.",
        "Error rates per hour rise with the length of a working day in the cited occupational literature.",
        "If errors per hour fall with shorter weeks, output per hour rises.",
        json!([]),
        "certain",
    );
    let b1 = claim(
        "empirical",
        "Reductions in scheduled hours show no pooled effect on output per employee.",
        "A systematic review pools studies of reduced scheduled hours and reports no significant change in output per employee.",
        "If the pooled effect is null, the trial gains reflect selection of volunteer firms.",
        json!([{"source": "Systematic review of working-time reductions", "url": b1_url, "tier": "T1"}]),
        "certain",
    );
    let b2 = claim(
        "logical",
        "A compressed week always raises coordination costs that cancel any gain.",
        "Meetings and handovers must fit into fewer shared days.",
        "If coordination time grows, output per employee cannot rise.",
        json!([]),
        "probable",
    );
    let b2_repair = claim(
        "logical",
        "A compressed week raises coordination costs for teams that share deadlines.",
        "Meetings and handovers must fit into fewer shared days.",
        "If coordination time grows, part of any per-hour gain is absorbed.",
        json!([]),
        "probable",
    );
    use Side::{A, B};
    let yes = Some(Answer::Yes);
    let steps = vec![
        advance("framing"),
        // A1's T2 source is retrievable: verified before merge review (SPEC section 10).
        with_verify(
            submit(
                Some("a1"),
                "ada",
                A,
                json!({"op": "thread", "title": "Trial output data", "claim": a1}),
                yes,
                Some(1.0),
            ),
            Answer::Yes,
        ),
        submit(
            Some("a2"),
            "ada",
            A,
            json!({"op": "thread", "title": "Fatigue mechanism", "claim": a2}),
            yes,
            Some(1.0),
        ),
        // B1's T1 source cannot be retrieved yet: verification fails; it scores at T3.
        with_verify(
            submit(
                Some("b1"),
                "bo",
                B,
                json!({"op": "thread", "title": "Meta-analysis of hours", "claim": b1}),
                yes,
                Some(1.0),
            ),
            Answer::No,
        ),
        submit(
            Some("b2"),
            "bo",
            B,
            json!({"op": "thread", "title": "Coordination cost", "claim": b2}),
            yes,
            Some(1.0),
        ),
        advance("construction"),
        challenge(
            "c1",
            "a1",
            "relevance",
            "Output per employee in volunteer firms does not bear on office work in general.",
            "bo",
            B,
            false,
        ),
        submit(
            None,
            "ada",
            A,
            json!({"op": "respond", "challengeId": "$c1", "text": "The trial covered office firms across sectors, which is the population of the resolution."}),
            None,
            None,
        ),
        challenge(
            "c2",
            "a2",
            "warrant-failure",
            "Fatigue reduction per hour need not translate into output per employee.",
            "bo",
            B,
            false,
        ),
        challenge(
            "c3",
            "a2",
            "relevance",
            "Error rates are a quality measure rather than an output measure.",
            "bo",
            B,
            false,
        ),
        challenge(
            "c4",
            "b1",
            "warrant-failure",
            "A null pooled effect does not establish selection of volunteer firms.",
            "ada",
            A,
            false,
        ),
        challenge(
            "c5",
            "b2",
            "warrant-failure",
            "The claim asserts an invariable cost without premises that establish it.",
            "ada",
            A,
            true,
        ),
        submit(
            Some("b2r"),
            "bo",
            B,
            json!({"op": "version", "threadId": "$b2.thread", "claim": b2_repair}),
            yes,
            Some(0.5),
        ),
        advance("challenge"),
        submit(
            None,
            "bo",
            B,
            json!({"op": "steelman", "ofSide": "A", "text": "The affirmative holds that national trial statistics show output per employee held or rose under a shorter week, and that less fatigue raises output per hour."}),
            None,
            None,
        ),
        submit(
            None,
            "ada",
            A,
            json!({"op": "certify", "ofSide": "A"}),
            None,
            None,
        ),
        submit(
            None,
            "ada",
            A,
            json!({"op": "steelman", "ofSide": "B", "text": "The negative holds that pooled evidence shows no effect on output per employee and that coordination costs absorb per-hour gains."}),
            None,
            None,
        ),
        submit(
            None,
            "bo",
            B,
            json!({"op": "certify", "ofSide": "B"}),
            None,
            None,
        ),
        advance("steelman"),
        advance("adjudication"),
        Step::ExpectVerdict {
            n: 1,
            winner: Some(A),
            margin: "0.340".into(),
            band: "clear".into(),
        },
        // The paper's one change: B1's source is now retrieved and confirmed at T1.
        Step::Request {
            question: json!({"kind": "verify-tier", "threadId": "$b1.thread", "versionId": "$b1", "citationIndex": 0}),
            hint: Answer::Yes,
        },
        Step::Request {
            question: json!({"kind": "reissue-verdict"}),
            hint: Answer::Yes,
        },
        Step::ExpectVerdict {
            n: 2,
            winner: None,
            margin: "0.006".into(),
            band: "unresolved".into(),
        },
        advance("verdict"),
    ];
    Scenario {
        resolution: "Resolved: a four-day working week at equal pay raises output per employee in office work.".into(),
        pos_a: "Affirmative: output per employee rises".into(),
        pos_b: "Negative: output per employee does not rise".into(),
        burden: "shared".into(),
        claim_budget: Some(3.0),
        steps,
    }
}

/// Simulation hints gathered from a scenario's steps, keyed by created id.
#[derive(Debug, Default, Clone)]
pub struct Hints {
    pub answer: HashMap<String, Answer>,
    pub verify: HashMap<String, Answer>,
    pub relevance: HashMap<String, f64>,
}

impl Hints {
    /// The hinted answer to a question (defaults: merge yes, dismiss, relevance 1).
    pub fn answer_for(&self, q: &Question) -> Answer {
        match q {
            Question::AssignRelevance { version_id, .. } => {
                Answer::Relevance(self.relevance.get(version_id).copied().unwrap_or(1.0))
            }
            Question::Merge { version_id, .. } => {
                self.answer.get(version_id).copied().unwrap_or(Answer::Yes)
            }
            Question::VerifyTier { version_id, .. } => {
                self.verify.get(version_id).copied().unwrap_or(Answer::Yes)
            }
            Question::ResolveChallenge { challenge_id } => {
                self.answer.get(challenge_id).copied().unwrap_or(Answer::No)
            }
            _ => Answer::Yes,
        }
    }

    /// Records a submission's hints under the id it created.
    pub fn record(&mut self, id: &str, s: &Submission<'_>) {
        if let Some(h) = s.hint {
            self.answer.insert(id.to_string(), h);
        }
        if let Some(r) = s.relevance {
            self.relevance.insert(id.to_string(), r);
        }
        if let Some(v) = s.verify {
            self.verify.insert(id.to_string(), v);
        }
    }
}

/// Why the engine stopped a scenario: a writer refused, or the scenario itself is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Label(#[from] LabelError),
}

/// A scenario being played on the engine by a panel that always answers as hinted: the
/// player and what the panel knows (the debate, the hints, the questions settled).
#[derive(Debug, Clone)]
pub struct HintedRun {
    player: Player,
    panel: HintedPanel,
}

#[derive(Debug, Clone)]
struct HintedPanel {
    debate: Debate,
    hints: Hints,
    settled: BTreeSet<String>,
}

/// The engine target: the writers of one [`Protocol`] over one debate.
struct Engine<'a, E: Env> {
    p: &'a mut Protocol<E>,
    panel: &'a mut HintedPanel,
}

const RATIONALE: &str = "Panel answer (simulated).";

impl<E: Env> Target for Engine<'_, E> {
    type Error = EngineError;

    async fn document(&mut self) -> Result<Debate, EngineError> {
        Ok(self.panel.debate.clone())
    }

    async fn submit(&mut self, s: Submission<'_>) -> Result<Option<String>, EngineError> {
        let d = &mut self.panel.debate;
        let created = s.contribution.apply(self.p, d, s.author, s.side.as_str())?;
        if let Some(id) = &created {
            self.panel.hints.record(id, &s);
        }
        Ok(created)
    }

    async fn ask(&mut self, q: Question, hint: Answer) -> Result<(), EngineError> {
        Ok(settle(
            self.p,
            &mut self.panel.debate,
            &q,
            hint,
            RATIONALE,
            "panel",
        )?)
    }

    async fn reissue_verdict(&mut self) -> Result<(), EngineError> {
        self.p
            .issue_verdict(&mut self.panel.debate, None, None, Some("panel"));
        Ok(())
    }

    async fn settle(&mut self) -> Result<(), EngineError> {
        let HintedPanel {
            debate: d,
            hints,
            settled,
        } = &mut *self.panel;
        while let Some(q) = pending(d, settled).into_iter().next() {
            settle(self.p, d, &q, hints.answer_for(&q), RATIONALE, "panel")?;
            settled.insert(q.key());
        }
        Ok(())
    }
}

impl HintedRun {
    /// Opens the scenario's debate (phase framing).
    pub fn start<E: Env>(p: &mut Protocol<E>, s: &Scenario) -> HintedRun {
        let debate = p.new_debate(NewDebate {
            resolution: s.resolution.clone(),
            pos_a: s.pos_a.clone(),
            pos_b: s.pos_b.clone(),
            burden: Some(s.burden.clone()),
            claim_budget: s.claim_budget,
        });
        HintedRun {
            player: Player::new(s.clone()),
            panel: HintedPanel {
                debate,
                hints: Hints::default(),
                settled: BTreeSet::new(),
            },
        }
    }

    pub fn debate(&self) -> &Debate {
        &self.panel.debate
    }

    /// The debate the rest of the run writes to; a caller may swap in its own copy.
    pub fn debate_mut(&mut self) -> &mut Debate {
        &mut self.panel.debate
    }

    pub fn labels(&self) -> &Labels {
        self.player.labels()
    }

    /// Plays the next step and returns it; `None` once the scenario is over.
    pub fn step<E: Env>(&mut self, p: &mut Protocol<E>) -> Result<Option<&Step>, EngineError> {
        self.player.step_now(&mut Engine {
            p,
            panel: &mut self.panel,
        })
    }

    /// Plays every step left.
    pub fn finish<E: Env>(&mut self, p: &mut Protocol<E>) -> Result<(), EngineError> {
        self.player.finish_now(&mut Engine {
            p,
            panel: &mut self.panel,
        })
    }
}

/// Plays a scenario with a panel that always answers as hinted: the engine-only path of
/// the demo and the reference result the distributed panel must reproduce.
pub fn run_with_hinted_panel<E: Env>(
    p: &mut Protocol<E>,
    s: &Scenario,
) -> Result<Debate, EngineError> {
    let mut run = HintedRun::start(p, s);
    run.finish(p)?;
    Ok(run.panel.debate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FixedEnv;
    use crate::verdict::js_to_fixed;

    #[test]
    fn hinted_panel_reproduces_the_papers_two_verdicts() {
        let mut p = Protocol::new(FixedEnv::new(0, 1000));
        let d = run_with_hinted_panel(&mut p, &worked_example("http://127.0.0.1:1"))
            .expect("scenario runs");
        assert_eq!(d.verdicts.len(), 2);
        let v1 = &d.verdicts[0];
        assert_eq!(js_to_fixed(v1.totals.a.0, 2), "6.36");
        assert_eq!(js_to_fixed(v1.totals.b.0, 2), "4.20");
        assert_eq!(js_to_fixed(v1.margin.0, 3), "0.340");
        assert_eq!(v1.band.key, "clear");
        assert_eq!(v1.winner, Some(Side::A));
        let v2 = &d.verdicts[1];
        assert_eq!(js_to_fixed(v2.totals.b.0, 2), "6.40");
        assert_eq!(js_to_fixed(v2.margin.0, 3), "0.006");
        assert_eq!(v2.band.key, "unresolved");
        assert_eq!(v2.winner, None);
        assert_eq!(d.phase, "closed");
    }

    #[test]
    fn a_verdict_other_than_the_papers_stops_the_engine_at_its_step() {
        let mut s = worked_example("http://127.0.0.1:1");
        let at = s
            .steps
            .iter()
            .position(|st| matches!(st, Step::ExpectVerdict { .. }))
            .expect("an expected verdict");
        if let Step::ExpectVerdict { margin, .. } = &mut s.steps[at] {
            *margin = "0.341".into();
        }
        let mut p = Protocol::new(FixedEnv::new(0, 1000));
        let e = run_with_hinted_panel(&mut p, &s).unwrap_err();
        assert!(
            matches!(&e, EngineError::Scenario(ScenarioError::VerdictDiffers { step, n: 1, .. }) if *step == at),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "verdict 1 differs from the paper: expected winner Some(A), margin 0.341, band clear; got winner Some(A), margin 0.340, band clear (scenario step {at})"
            )
        );
    }
}
