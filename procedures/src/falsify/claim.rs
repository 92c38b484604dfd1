//! One claim's way through the three ordered questions, cross-examination and the
//! severity ladder (`seeds/truth-seeking-debate.txt`, "Execution (per claim)").
//!
//! A claim is a small state machine: it waits for a role or for one panel question at a
//! time, so the panel answers the judge's questions in the seed's order and a later
//! question never runs before the one it depends on.

use serde::{Deserialize, Serialize};

use crate::panel::{Finding, PanelOutcome, PanelRuling, ProcedureError, Settlement};

use super::bucket::{Bucket, Outcome, Severity};
use super::input::{FalsifyInput, FormReport, RefuterKind, Role};
use super::start::{ClaimSpec, Ladder, MAX_TEXT, Probes, finding, id_problem, text_problem};

/// The panel questions a round asks, in the order it asks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Judge question 1: did the defender produce a falsifiable form?
    Form,
    /// Cross-examination finding: did the defender redefine a term or retreat?
    Retreat,
    /// Cross-examination finding: did the defender hide behind "it's only a model"?
    Shield,
    /// Judge question 2: is the critic's refuter valid against the form?
    Refuter,
    /// Judge question 3 and the severity check: would this attack have caught the
    /// claim had it been false?
    Severe,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Form => "form",
            Step::Retreat => "retreat",
            Step::Shield => "shield",
            Step::Refuter => "refuter",
            Step::Severe => "severe",
        }
    }
}

/// What a claim waits for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum Stage {
    AwaitForm,
    AwaitCommit,
    AwaitAttack,
    AwaitCriticCross,
    AwaitDefenderCross,
    Asking { step: Step, attempt: u32 },
    Done,
}

/// The critic's attack as submitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attack {
    pub case: String,
    pub commentary: Option<String>,
}

/// One attack round: a critic, its committed refuter and what followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttackRound {
    pub number: u32,
    pub critic: String,
    pub refuter: RefuterKind,
    pub attack: Option<Attack>,
    pub critic_answers: Vec<String>,
    pub defender_answers: Vec<String>,
    pub restated_claim: Option<String>,
    /// The panel found a model-shield; the defender's answers are struck from the
    /// refuter question.
    pub shield: bool,
    pub severity: Severity,
}

/// One settled panel question, every counted ruling kept (dissent is never dropped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub key: String,
    pub motion_id: String,
    pub step: Step,
    /// 0 for the form question, else the attack round.
    pub round: u32,
    pub attempt: u32,
    pub outcome: PanelOutcome,
    pub rulings: Vec<PanelRuling>,
}

/// A claim under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRun {
    pub id: String,
    pub text: String,
    /// The claim whose definitional retreat produced this one.
    pub split_from: Option<String>,
    pub probes: Probes,
    pub form: Option<FormReport>,
    pub rounds: Vec<AttackRound>,
    pub answers: Vec<Answer>,
    pub findings: Vec<Finding>,
    pub stage: Stage,
    pub outcome: Option<Outcome>,
}

/// What settling a question asks of the run beyond this claim.
pub enum Effect {
    None,
    /// Definitional retreat: the redefined claim becomes a new claim with this text.
    Split(String),
}

impl ClaimRun {
    pub fn new(spec: ClaimSpec, split_from: Option<String>) -> ClaimRun {
        ClaimRun {
            id: spec.id,
            text: spec.text,
            split_from,
            probes: spec.probes,
            form: None,
            rounds: Vec::new(),
            answers: Vec::new(),
            findings: Vec::new(),
            stage: Stage::AwaitForm,
            outcome: None,
        }
    }

    /// The form's statement and forbidden list, when the defender gave one.
    pub fn forbidding(&self) -> Option<(&str, &[String])> {
        match &self.form {
            Some(FormReport::Forbidding { statement, forbids }) => {
                Some((statement.as_str(), forbids.as_slice()))
            }
            _ => None,
        }
    }

    pub fn current_round(&self) -> Option<&AttackRound> {
        self.rounds.last()
    }

    /// The probes put to `role`: the standard ones, then the start document's.
    pub fn probes_for(&self, role: Role) -> Vec<String> {
        let (standard, extra): (&[&str], &Vec<String>) = match role {
            Role::Defender => (DEFENDER_PROBES, &self.probes.defender),
            Role::Critic => (CRITIC_PROBES, &self.probes.critic),
        };
        standard
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().cloned())
            .collect()
    }

    /// Takes a role input for this claim, or refuses it leaving the claim unchanged.
    pub fn submit(&mut self, input: FalsifyInput) -> Result<(), ProcedureError> {
        self.check_goalposts(&input)?;
        match (self.stage, input) {
            (Stage::AwaitForm, FalsifyInput::Form { form, .. }) => self.take_form(form),
            (
                Stage::AwaitCommit,
                FalsifyInput::Commit {
                    critic, refuter, ..
                },
            ) => self.take_commit(critic, refuter),
            (Stage::AwaitCommit, FalsifyInput::Attack { .. }) => Err(ProcedureError::refused(
                "falsify.commit_before_argument",
                format!("claim {} attack", self.id),
                "the critic must commit to one refuter type (a commit input) before the attack is accepted",
            )),
            (
                Stage::AwaitAttack,
                FalsifyInput::Attack {
                    critic,
                    case,
                    commentary,
                    ..
                },
            ) => self.take_attack(critic, case, commentary),
            (
                Stage::AwaitCriticCross,
                FalsifyInput::CrossExam {
                    role: Role::Critic,
                    answers,
                    commentary,
                    restated_claim,
                    ..
                },
            ) => self.take_cross(Role::Critic, answers, restated_claim, commentary),
            (
                Stage::AwaitDefenderCross,
                FalsifyInput::CrossExam {
                    role: Role::Defender,
                    answers,
                    commentary,
                    restated_claim,
                    ..
                },
            ) => self.take_cross(Role::Defender, answers, restated_claim, commentary),
            (_, input) => Err(ProcedureError::OutOfOrder {
                input: format!("{} for claim {}", input.kind(), self.id),
                awaiting: self.awaiting_words(),
            }),
        }
    }

    /// A commitment or attack naming a refuter type other than the round's committed
    /// one is goalpost-shifting, whatever stage the round is in.
    fn check_goalposts(&self, input: &FalsifyInput) -> Result<(), ProcedureError> {
        let named = match input {
            FalsifyInput::Commit { refuter, .. } | FalsifyInput::Attack { refuter, .. } => *refuter,
            _ => return Ok(()),
        };
        let open_round = !matches!(
            self.stage,
            Stage::AwaitCommit | Stage::AwaitForm | Stage::Done
        );
        match self.current_round() {
            Some(r) if open_round && r.refuter != named => Err(ProcedureError::refused(
                "falsify.goalpost_shift",
                format!("claim {} round {}", self.id, r.number),
                format!(
                    "the critic committed to {} and now names {}; a round's refuter type cannot change. Argue the committed refuter; a different refuter needs a later round",
                    r.refuter.label(),
                    named.label()
                ),
            )),
            _ => Ok(()),
        }
    }

    fn take_form(&mut self, form: FormReport) -> Result<(), ProcedureError> {
        let at = format!("claim {} form", self.id);
        match &form {
            FormReport::Forbidding { statement, forbids } => {
                let mut found: Vec<Finding> = text_problem(statement, &format!("{at}.statement"))
                    .into_iter()
                    .collect();
                if forbids.is_empty() {
                    found.push(finding(
                        "falsify.form_forbids_nothing",
                        &format!("{at}.forbids"),
                        "a forbidding form lists what it forbids; list at least one observation it rules out, or report kind none honestly",
                    ));
                }
                if forbids.len() > 16 {
                    found.push(finding(
                        "falsify.form_forbids",
                        &format!("{at}.forbids"),
                        "at most 16 forbidden items",
                    ));
                }
                for (i, f) in forbids.iter().enumerate() {
                    found.extend(text_problem(f, &format!("{at}.forbids[{i}]")));
                }
                refuse_if(found)?;
                self.form = Some(form);
                self.stage = Stage::Asking {
                    step: Step::Form,
                    attempt: 1,
                };
            }
            FormReport::None { reason } => {
                refuse_if(
                    text_problem(reason, &format!("{at}.reason"))
                        .into_iter()
                        .collect(),
                )?;
                let record = format!("none — UNFALSIFIABLE: {reason}");
                self.form = Some(form);
                self.finish(Bucket::Unfalsifiable, "falsify.no_form_reported", record);
            }
        }
        Ok(())
    }

    fn take_commit(&mut self, critic: String, refuter: RefuterKind) -> Result<(), ProcedureError> {
        let at = format!("claim {} commit.critic", self.id);
        refuse_if(id_problem(&critic, &at).into_iter().collect())?;
        if self.rounds.iter().any(|r| r.critic == critic) {
            return Err(ProcedureError::refused(
                "falsify.fresh_critic",
                at,
                format!(
                    "critic {critic} already attacked this claim; an escalated round needs a new, more severe critic"
                ),
            ));
        }
        self.rounds.push(AttackRound {
            number: self.rounds.len() as u32 + 1,
            critic,
            refuter,
            attack: None,
            critic_answers: Vec::new(),
            defender_answers: Vec::new(),
            restated_claim: None,
            shield: false,
            severity: Severity::NotRated,
        });
        self.stage = Stage::AwaitAttack;
        Ok(())
    }

    fn take_attack(
        &mut self,
        critic: String,
        case: String,
        commentary: Option<String>,
    ) -> Result<(), ProcedureError> {
        let at = format!("claim {} attack", self.id);
        let round = self.rounds.len() as u32;
        let committed = self
            .current_round()
            .map(|r| r.critic.clone())
            .unwrap_or_default();
        if critic != committed {
            return Err(ProcedureError::refused(
                "falsify.critic_mismatch",
                format!("{at}.critic"),
                format!(
                    "round {round} was committed by critic {committed}, not {critic}; the committed critic attacks"
                ),
            ));
        }
        let mut found: Vec<Finding> = text_problem(&case, &format!("{at}.case"))
            .into_iter()
            .collect();
        found.extend(optional_text(&commentary, &format!("{at}.commentary")));
        refuse_if(found)?;
        self.note_commentary(&commentary, &format!("{at}.commentary"));
        if let Some(r) = self.rounds.last_mut() {
            r.attack = Some(Attack { case, commentary });
        }
        self.stage = Stage::AwaitCriticCross;
        Ok(())
    }

    fn take_cross(
        &mut self,
        role: Role,
        answers: Vec<String>,
        restated_claim: Option<String>,
        commentary: Option<String>,
    ) -> Result<(), ProcedureError> {
        let at = format!("claim {} {} cross-examination", self.id, role.name());
        let probes = self.probes_for(role);
        let mut found = Vec::new();
        if answers.len() != probes.len() {
            found.push(finding(
                "falsify.cross_exam_answers",
                &format!("{at}.answers"),
                &format!(
                    "{} answers to {} probes; answer every probe, in order",
                    answers.len(),
                    probes.len()
                ),
            ));
        }
        for (i, a) in answers.iter().enumerate() {
            found.extend(text_problem(a, &format!("{at}.answers[{i}]")));
        }
        if role == Role::Critic && restated_claim.is_some() {
            found.push(finding(
                "falsify.restate_by_defender",
                &format!("{at}.restated_claim"),
                "only the defender restates the claim; drop restated_claim",
            ));
        }
        found.extend(optional_text(
            &restated_claim,
            &format!("{at}.restated_claim"),
        ));
        found.extend(optional_text(&commentary, &format!("{at}.commentary")));
        refuse_if(found)?;
        self.note_commentary(&commentary, &format!("{at}.commentary"));
        if let Some(r) = self.rounds.last_mut() {
            match role {
                Role::Critic => r.critic_answers = answers,
                Role::Defender => {
                    r.defender_answers = answers;
                    r.restated_claim = restated_claim;
                }
            }
        }
        self.stage = match role {
            Role::Critic => Stage::AwaitDefenderCross,
            Role::Defender => Stage::Asking {
                step: Step::Retreat,
                attempt: 1,
            },
        };
        Ok(())
    }

    /// Persuasiveness creep: rhetoric is kept on the record and never shown to a panel.
    fn note_commentary(&mut self, commentary: &Option<String>, at: &str) {
        if commentary.as_deref().is_some_and(|c| !c.trim().is_empty()) {
            self.findings.push(finding(
                "falsify.persuasiveness_ignored",
                at,
                "commentary is recorded but not shown to the panel: only refuters and forbidding content count",
            ));
        }
    }

    /// The base key of the question the claim is asking, and its attempt.
    pub fn asking(&self) -> Option<(Step, u32, String)> {
        match self.stage {
            Stage::Asking { step, attempt } => {
                let base = match step {
                    Step::Form => format!("{}/form", self.id),
                    _ => format!("{}/r{}/{}", self.id, self.rounds.len(), step.name()),
                };
                Some((step, attempt, base))
            }
            _ => None,
        }
    }

    /// Takes the panel's answer to the question the claim is asking.
    pub fn settle(&mut self, s: &Settlement, ladder: &Ladder) -> Effect {
        let Some((step, attempt, _)) = self.asking() else {
            return Effect::None;
        };
        let round = if step == Step::Form {
            0
        } else {
            self.rounds.len() as u32
        };
        self.answers.push(Answer {
            key: s.key.clone(),
            motion_id: s.motion_id.clone(),
            step,
            round,
            attempt,
            outcome: s.outcome,
            rulings: s.rulings.clone(),
        });
        match s.outcome {
            PanelOutcome::Deadlocked => {
                self.deadlocked(step, attempt, ladder);
                Effect::None
            }
            PanelOutcome::Yes => self.answered(step, true, ladder),
            PanelOutcome::No => self.answered(step, false, ladder),
        }
    }

    fn deadlocked(&mut self, step: Step, attempt: u32, ladder: &Ladder) {
        let at = format!("claim {} question {}", self.id, step.name());
        if attempt <= ladder.deadlock_retries {
            self.findings.push(finding(
                "falsify.deadlock",
                &at,
                &format!("attempt {attempt} deadlocked; the dissent is kept and the question is re-asked with two more seats"),
            ));
            self.stage = Stage::Asking {
                step,
                attempt: attempt + 1,
            };
            return;
        }
        if step == Step::Severe
            && let Some(r) = self.rounds.last_mut()
        {
            r.severity = Severity::Undetermined;
        }
        self.finish(
            Bucket::Deadlocked,
            "falsify.deadlock_exhausted",
            format!("the panel reached no cross-prior agreement on the {} question in {attempt} attempts; the dissent is the record", step.name()),
        );
    }

    fn answered(&mut self, step: Step, yes: bool, ladder: &Ladder) -> Effect {
        match (step, yes) {
            (Step::Form, true) => self.stage = Stage::AwaitCommit,
            (Step::Form, false) => self.finish(
                Bucket::Unfalsifiable,
                "falsify.no_falsifiable_form",
                "none — UNFALSIFIABLE: the panel found that the defender's form forbids nothing an observation could contradict".into(),
            ),
            (Step::Retreat, true) => return self.retreated(),
            (Step::Retreat, false) => self.stage = Stage::Asking { step: Step::Shield, attempt: 1 },
            (Step::Shield, found) => {
                if found {
                    let n = self.rounds.len();
                    if let Some(r) = self.rounds.last_mut() {
                        r.shield = true;
                    }
                    self.findings.push(finding(
                        "falsify.model_shield",
                        &format!("claim {} round {n}", self.id),
                        "the defender answered a refuter aimed at a load-bearing idealization with \"it's only a model\"; the idealization is the claim under test, so the answer is struck from the refuter question",
                    ));
                }
                self.stage = Stage::Asking { step: Step::Refuter, attempt: 1 };
            }
            (Step::Refuter, true) => self.refuted(),
            (Step::Refuter, false) => self.stage = Stage::Asking { step: Step::Severe, attempt: 1 },
            (Step::Severe, true) => self.corroborated(),
            (Step::Severe, false) => self.weak(ladder),
        }
        Effect::None
    }

    fn retreated(&mut self) -> Effect {
        let n = self.rounds.len();
        let text = self
            .current_round()
            .and_then(|r| {
                r.restated_claim
                    .clone()
                    .or_else(|| r.defender_answers.first().cloned())
            })
            .unwrap_or_default();
        self.findings.push(finding(
            "falsify.definitional_retreat",
            &format!("claim {} round {n}", self.id),
            "the defender redefined a term (or retreated to a weaker claim) to escape the attack: the original claim is BROKEN and the redefined claim is a new claim with its own debate",
        ));
        self.finish(
            Bucket::Broken,
            "falsify.definitional_retreat",
            format!("definitional retreat under attack; the redefined claim: {text}"),
        );
        Effect::Split(text)
    }

    fn refuted(&mut self) {
        let Some(r) = self.current_round() else {
            return;
        };
        let case = r
            .attack
            .as_ref()
            .map(|a| a.case.clone())
            .unwrap_or_default();
        let record = format!(
            "{} by {} (round {}): {case}",
            r.refuter.label(),
            r.critic,
            r.number
        );
        if r.refuter == RefuterKind::EmptyForbiddenSet {
            self.finish(
                Bucket::Unfalsifiable,
                "falsify.empty_forbidden_set",
                format!("none — UNFALSIFIABLE: {record}"),
            );
        } else {
            self.finish(Bucket::Broken, "falsify.valid_refuter", record);
        }
    }

    fn corroborated(&mut self) {
        if let Some(r) = self.rounds.last_mut() {
            r.severity = Severity::Severe;
        }
        let held = self
            .forbidding()
            .map(|(_, f)| f.join("; "))
            .unwrap_or_default();
        self.finish(
            Bucket::Corroborated,
            "falsify.survived_severe",
            format!("forbidden and held under a severe attack: {held}"),
        );
    }

    fn weak(&mut self, ladder: &Ladder) {
        let n = self.rounds.len() as u32;
        if let Some(r) = self.rounds.last_mut() {
            r.severity = Severity::Weak;
        }
        let at = format!("claim {} round {n}", self.id);
        if n < ladder.max_rounds {
            self.findings.push(finding(
                "falsify.escalated",
                &at,
                &format!("the attack was weak (it would likely not have caught a false claim); round {} needs a new critic and a wider, fresh panel", n + 1),
            ));
            self.stage = Stage::AwaitCommit;
        } else {
            self.finish(
                Bucket::Untested,
                "falsify.only_weak_attacks",
                format!("survived {n} attacks, all rated weak; a claim that passed only weak tests stays untested"),
            );
        }
    }

    fn finish(&mut self, bucket: Bucket, rule: &str, record: String) {
        self.outcome = Some(Outcome {
            bucket,
            rule: rule.into(),
            record,
            successor: None,
        });
        self.stage = Stage::Done;
    }

    /// What the claim waits for, in words.
    pub fn awaiting_words(&self) -> String {
        let n = self.rounds.len();
        match self.stage {
            Stage::AwaitForm => format!("the defender's form for claim {}", self.id),
            Stage::AwaitCommit => {
                format!("a critic's commit for claim {} round {}", self.id, n + 1)
            }
            Stage::AwaitAttack => format!(
                "the committed critic's attack on claim {} round {n}",
                self.id
            ),
            Stage::AwaitCriticCross => format!(
                "the critic's cross-examination answers on claim {} round {n}",
                self.id
            ),
            Stage::AwaitDefenderCross => format!(
                "the defender's cross-examination answers on claim {} round {n}",
                self.id
            ),
            Stage::Asking { step, .. } => format!(
                "the panel's answer to the {} question on claim {}",
                step.name(),
                self.id
            ),
            Stage::Done => format!("nothing: claim {} is bucketed", self.id),
        }
    }
}

const DEFENDER_PROBES: &[&str] = &[
    "Answer the attack using every term exactly as your form defines it. Do you now give any term a different meaning? If your answer amounts to a different claim, state that claim separately as restated_claim.",
    "Does your answer rest on the form being only a model or an idealization? If so, name the idealization and say whether the attack targets it.",
    "After the attack, does the form still forbid everything it forbade before?",
];

const CRITIC_PROBES: &[&str] = &[
    "Which item of the form's forbidden set does your refuter instantiate (for an empty-forbidden-set refuter: why does no item rule anything out)?",
    "Is your case actual or constructible, and how would a third party check it?",
];

fn refuse_if(found: Vec<Finding>) -> Result<(), ProcedureError> {
    if found.is_empty() {
        Ok(())
    } else {
        Err(ProcedureError::Refused(found))
    }
}

fn optional_text(text: &Option<String>, at: &str) -> Option<Finding> {
    text.as_ref()
        .filter(|t| t.chars().count() > MAX_TEXT)
        .map(|_| {
            finding(
                "falsify.text",
                at,
                &format!("longer than {MAX_TEXT} characters; shorten it"),
            )
        })
}
