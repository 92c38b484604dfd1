//! One player for every target a scenario runs on: the engine, the replicated state
//! machine and a live cluster. Sans-I/O in the manner of quinn-proto: the player owns the
//! step order, label binding and resolution, contribution decoding and the paper's
//! verdict check; a [`Target`] only executes what it is handed. In-process targets never
//! wait, so [`play_now`] drives them without a runtime.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{LabelError, Labels, Scenario, Step};
use crate::contribution::Contribution;
use crate::document::{Debate, Side, Verdict};
use crate::motion::{Answer, Question};
use crate::verdict::js_to_fixed;

/// Why a scenario cannot go on. `step` is the index in [`Scenario::steps`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    #[error("scenario step {step}: {source}")]
    Label { step: usize, source: LabelError },
    #[error("scenario step {step}: the contribution does not decode {source}")]
    Contribution { step: usize, source: DecodeError },
    #[error("scenario step {step}: the request is not a question {source}")]
    Request { step: usize, source: DecodeError },
    #[error("verdict {n} was not issued (scenario step {step})")]
    VerdictMissing { step: usize, n: u32 },
    #[error(
        "verdict {n} differs from the paper: expected {expected}; got {got} (scenario step {step})"
    )]
    VerdictDiffers {
        step: usize,
        n: u32,
        expected: Box<Figures>,
        got: Box<Figures>,
    },
    /// [`play_now`] was handed a target that waits: only in-process targets belong there.
    #[error("scenario step {step}: the target is waiting on I/O; await `play` instead")]
    Pending { step: usize },
}

/// JSON that is not the shape a step needs, with the path where it went wrong. Serde
/// buffers internally tagged enums (`op`, `kind`), so inside a contribution or a
/// question the path stops at the root (`.`) and the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct DecodeError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.path.as_str() {
            "." => write!(f, "({})", self.message),
            path => write!(f, "at {path} ({})", self.message),
        }
    }
}

/// The figures the paper prints for a verdict: winner, margin to three places, band.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub winner: Option<Side>,
    pub margin: String,
    pub band: String,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "winner {:?}, margin {}, band {}",
            self.winner, self.margin, self.band
        )
    }
}

impl Figures {
    pub fn of(v: &Verdict) -> Figures {
        Figures {
            winner: v.winner,
            margin: js_to_fixed(v.margin.0, 3),
            band: v.band.key.clone(),
        }
    }
}

/// One contribution to execute, its labels already resolved and its JSON decoded, with
/// the simulation hints for the motions it opens.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission<'a> {
    pub author: &'a str,
    pub side: Side,
    pub contribution: Contribution,
    pub hint: Option<Answer>,
    pub verify: Option<Answer>,
    pub relevance: Option<f64>,
}

/// An expected verdict as the player found it: the target may print it, and decides
/// what a mismatch means (by default the play stops: [`VerdictCheck::enforce`]).
#[derive(Debug)]
pub struct VerdictCheck<'a> {
    pub n: u32,
    /// The verdict the document holds under `n`, if it was issued.
    pub verdict: Option<&'a Verdict>,
    /// The paper's check of it.
    pub result: Result<(), ScenarioError>,
}

impl VerdictCheck<'_> {
    pub fn enforce(self) -> Result<(), ScenarioError> {
        self.result
    }
}

/// What a scenario runs on. Each method executes one thing; the player decides when.
// Our targets are awaited in place, never spawned, so their futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait Target {
    type Error: From<ScenarioError>;

    /// The debate document as it stands, for resolving `$label.thread`.
    async fn document(&mut self) -> Result<Debate, Self::Error>;

    /// Executes a contribution; returns the id it created (a version, challenge or
    /// appeal), if any.
    async fn submit(&mut self, s: Submission<'_>) -> Result<Option<String>, Self::Error>;

    /// Puts a question the document does not raise by itself to the panel.
    async fn ask(&mut self, q: Question, hint: Answer) -> Result<(), Self::Error>;

    /// Asks for a fresh verdict from the current ledger (SPEC section 3.6).
    async fn reissue_verdict(&mut self) -> Result<(), Self::Error>;

    /// Answers, or waits for, every motion the last step left pending.
    async fn settle(&mut self) -> Result<(), Self::Error>;

    /// Sees each expected verdict; the default stops the play when it differs.
    fn verdict(&mut self, check: VerdictCheck<'_>) -> Result<(), Self::Error> {
        check.enforce().map_err(Into::into)
    }
}

/// A scenario part way through: the next step and the labels bound so far.
#[derive(Debug, Clone)]
pub struct Player {
    scenario: Scenario,
    next: usize,
    labels: Labels,
}

impl Player {
    pub fn new(scenario: Scenario) -> Player {
        Player {
            scenario,
            next: 0,
            labels: Labels::default(),
        }
    }

    pub fn labels(&self) -> &Labels {
        &self.labels
    }

    pub fn into_labels(self) -> Labels {
        self.labels
    }

    /// Plays the next step on `t` and returns it; `None` once every step is played.
    /// A submission or request is executed, then settled; an expected verdict is
    /// checked once everything before it has settled.
    pub async fn step<T: Target>(&mut self, t: &mut T) -> Result<Option<&Step>, T::Error> {
        let at = self.next;
        let Some(step) = self.scenario.steps.get(at) else {
            return Ok(None);
        };
        self.next += 1;
        match step {
            Step::Submit {
                label,
                author,
                side,
                contribution,
                hint,
                relevance,
                verify,
            } => {
                let doc = t.document().await?;
                let value = resolve(&self.labels, &doc, contribution, at)?;
                let contribution = decode(value)
                    .map_err(|source| ScenarioError::Contribution { step: at, source })?;
                let created = t
                    .submit(Submission {
                        author,
                        side: *side,
                        contribution,
                        hint: *hint,
                        verify: *verify,
                        relevance: *relevance,
                    })
                    .await?;
                if let (Some(l), Some(id)) = (label, created) {
                    self.labels.bind(l, &id);
                }
                t.settle().await?;
            }
            Step::Request { question, hint } => {
                let doc = t.document().await?;
                let value = resolve(&self.labels, &doc, question, at)?;
                match parse_request(value)
                    .map_err(|source| ScenarioError::Request { step: at, source })?
                {
                    None => t.reissue_verdict().await?,
                    Some(q) => t.ask(q, *hint).await?,
                }
                t.settle().await?;
            }
            Step::ExpectVerdict {
                n,
                winner,
                margin,
                band,
            } => {
                t.settle().await?;
                let doc = t.document().await?;
                let verdict = n.checked_sub(1).and_then(|i| doc.verdicts.get(i as usize));
                let expected = Figures {
                    winner: *winner,
                    margin: margin.clone(),
                    band: band.clone(),
                };
                let result = match verdict.map(Figures::of) {
                    None => Err(ScenarioError::VerdictMissing { step: at, n: *n }),
                    Some(got) if got != expected => Err(ScenarioError::VerdictDiffers {
                        step: at,
                        n: *n,
                        expected: Box::new(expected),
                        got: Box::new(got),
                    }),
                    Some(_) => Ok(()),
                };
                t.verdict(VerdictCheck {
                    n: *n,
                    verdict,
                    result,
                })?;
            }
        }
        Ok(Some(step))
    }

    /// Plays every step left.
    pub async fn finish<T: Target>(&mut self, t: &mut T) -> Result<(), T::Error> {
        while self.step(t).await?.is_some() {}
        Ok(())
    }

    /// [`Player::step`] for a target that never waits.
    pub fn step_now<T: Target>(&mut self, t: &mut T) -> Result<Option<&Step>, T::Error> {
        let at = self.next;
        poll_once(self.step(t)).unwrap_or_else(|| Err(ScenarioError::Pending { step: at }.into()))
    }

    /// [`Player::finish`] for a target that never waits.
    pub fn finish_now<T: Target>(&mut self, t: &mut T) -> Result<(), T::Error> {
        while self.step_now(t)?.is_some() {}
        Ok(())
    }
}

/// Plays a whole scenario on `t`; returns the labels it bound.
pub async fn play<T: Target>(scenario: &Scenario, t: &mut T) -> Result<Labels, T::Error> {
    let mut player = Player::new(scenario.clone());
    player.finish(t).await?;
    Ok(player.into_labels())
}

/// [`play`] for an in-process target (the engine, the state machine), which never waits:
/// each step's future is polled once, and one still pending is
/// [`ScenarioError::Pending`].
pub fn play_now<T: Target>(scenario: &Scenario, t: &mut T) -> Result<Labels, T::Error> {
    let mut player = Player::new(scenario.clone());
    player.finish_now(t)?;
    Ok(player.into_labels())
}

/// A question as a scenario request names it; `reissue-verdict` asks for a fresh
/// verdict after the ledger changed (SPEC section 3.6: new verdicts, never edits).
pub fn parse_request(q: Value) -> Result<Option<Question>, DecodeError> {
    if q.get("kind").and_then(Value::as_str) == Some("reissue-verdict") {
        return Ok(None);
    }
    decode(q).map(Some)
}

fn resolve(labels: &Labels, d: &Debate, v: &Value, step: usize) -> Result<Value, ScenarioError> {
    labels
        .resolve(d, v)
        .map_err(|source| ScenarioError::Label { step, source })
}

fn decode<T: DeserializeOwned>(v: Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(v).map_err(|e| DecodeError {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

fn poll_once<F: Future>(f: F) -> Option<F::Output> {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewDebate;
    use crate::scenario::worked_example;
    use crate::{FixedEnv, Protocol};
    use serde_json::json;

    /// A target that records what it is asked and holds a fresh document.
    struct Recorder {
        doc: Debate,
        seen: Vec<String>,
        wait: bool,
    }

    impl Recorder {
        fn new() -> Recorder {
            Recorder {
                doc: Protocol::new(FixedEnv::new(0, 1)).new_debate(NewDebate::default()),
                seen: Vec::new(),
                wait: false,
            }
        }
    }

    impl Target for Recorder {
        type Error = ScenarioError;
        async fn document(&mut self) -> Result<Debate, ScenarioError> {
            if self.wait {
                std::future::pending::<()>().await;
            }
            Ok(self.doc.clone())
        }
        async fn submit(&mut self, s: Submission<'_>) -> Result<Option<String>, ScenarioError> {
            self.seen.push(format!("submit {}", s.author));
            Ok(Some(format!("id{}", self.seen.len())))
        }
        async fn ask(&mut self, q: Question, _: Answer) -> Result<(), ScenarioError> {
            self.seen.push(format!("ask {}", q.kind()));
            Ok(())
        }
        async fn reissue_verdict(&mut self) -> Result<(), ScenarioError> {
            self.seen.push("reissue".into());
            Ok(())
        }
        async fn settle(&mut self) -> Result<(), ScenarioError> {
            Ok(())
        }
    }

    fn scenario(steps: Vec<Step>) -> Scenario {
        Scenario {
            steps,
            ..worked_example("http://x")
        }
    }

    #[test]
    fn a_missing_verdict_names_its_step() {
        let s = scenario(vec![Step::ExpectVerdict {
            n: 1,
            winner: None,
            margin: "0.000".into(),
            band: "unresolved".into(),
        }]);
        let e = play_now(&s, &mut Recorder::new()).unwrap_err();
        assert_eq!(e, ScenarioError::VerdictMissing { step: 0, n: 1 });
        assert_eq!(e.to_string(), "verdict 1 was not issued (scenario step 0)");
    }

    #[test]
    fn an_unbound_label_and_a_bad_contribution_are_typed() {
        let s = scenario(vec![Step::Request {
            question: json!({"kind": "verify-tier", "threadId": "$b1.thread"}),
            hint: Answer::Yes,
        }]);
        let e = play_now(&s, &mut Recorder::new()).unwrap_err();
        assert!(matches!(e, ScenarioError::Label { step: 0, .. }), "{e}");

        let s = scenario(vec![Step::Submit {
            label: None,
            author: "ada".into(),
            side: Side::A,
            contribution: json!({"op": "thread", "title": "t"}),
            hint: None,
            relevance: None,
            verify: None,
        }]);
        let e = play_now(&s, &mut Recorder::new()).unwrap_err();
        let ScenarioError::Contribution { step: 0, source } = &e else {
            panic!("{e}")
        };
        assert_eq!(source.message, "missing field `claim`", "{e}");
        assert_eq!(
            e.to_string(),
            "scenario step 0: the contribution does not decode (missing field `claim`)"
        );
    }

    #[test]
    fn labels_bind_to_created_ids_and_requests_reach_the_target() {
        let s = scenario(vec![
            Step::Submit {
                label: Some("c1".into()),
                author: "bo".into(),
                side: Side::B,
                contribution: json!({"op": "certify", "ofSide": "B"}),
                hint: None,
                relevance: None,
                verify: None,
            },
            Step::Request {
                question: json!({"kind": "reissue-verdict"}),
                hint: Answer::Yes,
            },
            advance(),
        ]);
        let mut t = Recorder::new();
        let labels = play_now(&s, &mut t).expect("plays");
        assert_eq!(t.seen, ["submit bo", "reissue", "ask advance-phase"]);
        assert_eq!(labels.resolve(&t.doc, &json!("$c1")), Ok(json!("id1")));
    }

    #[test]
    fn play_now_refuses_a_target_that_waits() {
        let s = scenario(vec![advance()]);
        let mut t = Recorder {
            wait: true,
            ..Recorder::new()
        };
        assert_eq!(
            play_now(&s, &mut t).unwrap_err(),
            ScenarioError::Pending { step: 0 }
        );
    }

    fn advance() -> Step {
        Step::Request {
            question: json!({"kind": "advance-phase", "from": "framing"}),
            hint: Answer::Yes,
        }
    }
}
