//! The simulator running the machine (docs/SIMULATION.md "The machine's own path"):
//! every simulated motion goes through `panel_machine::apply_batch` on one
//! replicated state, driven by `panel_machine::testkit`.
//!
//! For a scenario the engine registers the pool as arbiters (organisation, declared
//! lineage, registered stance), admits them by one sealed exam sitting whose answers come
//! from each judge's model (`exam_answers`; or, as an option, by the test command
//! `SetAdmission`), creates one debate per policy
//! (`Policy::independent()` and `Policy::default()`), has every arbiter with a declared
//! camp declare it on each debate (`DeclareStance`), and for each motion opens a raw test
//! motion in each debate (`OpenMotion`: the machine draws the panel from its own seed),
//! runs the commit-reveal round (`LogCommitments`, `SubmitReveal` per seat, `CloseMotion`)
//! with each seat's ruling from the judge model, and reads the machine's outcome,
//! deadlock reasons and confidence off the motion. On request the parties then appeal
//! accepted answers to wider fresh panels, decided by apply the same way
//! (`appeal_ladder`). The measured-n_eff rule runs inside
//! apply as the policies say. The prior-consistency check does not: it reads only
//! motions that ask a debate question (`priors::run_by_claim`), and these are raw test
//! motions, so neither its schedule nor its reseating is exercised yet.
//!
//! Truth reaches the machine only through the judges' noisy rulings (as on a live panel
//! of simulated judges, docs/JUDGES.md "Simulated"); the motions carry no hint. Time and
//! the batch seeds come from [`ReplicaOptions`] and the scenario seed.

use panel_machine::MotionStatus;
use panel_machine::RefusalCode;
use panel_machine::testkit::{Driver, KitError, Schedule, Vote};
use panel_machine::{Acceptance, Decision, MotionKind, Outcome, Policy, Stance};
use panel_machine::{ItemReply, MotionSpec, TestCommand};
use thiserror::Error;

use crate::appeal_ladder::{AppealRecord, Appellants, Parties};
use crate::gaussian::Rng;
use crate::judge::Ruling;
use crate::panel::Verdict;
use crate::population::Population;
use crate::scenario::Scenario;
use crate::simulation::{ERRORS, Run, WORLD};
use crate::world::draw_motion;

/// Stream tag of the leader's batch seeds (the direct engine's tags are 1 to 3).
const BATCH_SEEDS: u64 = 5;

/// A step of the run the machine refused where the engine expects it to apply.
#[derive(Debug, Error)]
pub enum ReplicaError {
    #[error("setting up arbiter {arbiter}: {source}")]
    Arbiter { arbiter: String, source: KitError },
    #[error("the exam sitting: {source}")]
    Exam { source: KitError },
    #[error("creating the {policy} debate: {source}")]
    Debate {
        policy: &'static str,
        source: KitError,
    },
    #[error("motion {motion}: {source}")]
    Motion { motion: String, source: KitError },
    #[error("motion {0} was closed but is not decided")]
    Undecided(String),
    #[error("a policy does not encode: {0}")]
    Policy(#[from] serde_json::Error),
}

/// How the pool is admitted before the first motion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Admission {
    /// One sealed sitting of the embedded pool, every judge answering its own draw
    /// (`exam_answers`); the machine admits whom its bars pass.
    Exam,
    /// The test command `SetAdmission`: everyone admitted, no exam.
    TestCommand,
    /// One sealed sitting for the record, then everyone admitted by the test command:
    /// each sitter's held-back exam items, scored against the revealed gold, start its
    /// track record, which is what the weighted pool weighs (`weighted_pool.rs`).
    ExamRecord,
}

/// What the caller injects: when the first batch is stamped and the step between
/// batches (the leader's clock), how many motions to run, and how the pool is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaOptions {
    pub start_ms: u64,
    pub step_ms: u64,
    pub motions: usize,
    pub admission: Admission,
    /// How many panels a motion may be asked of: after a deadlock it is asked again of a
    /// fresh panel [`WIDENING`] seats wider, drawn from arbiters not yet seated on it,
    /// until answered, no panel can be drawn, or this many asks (then not proven).
    pub asks: usize,
    /// How the parties appeal an accepted binary outcome (`appeal_ladder`); zero rounds:
    /// nobody appeals.
    pub appeals: Appellants,
}

/// The machine's own ladder for a debate question (`debates.rs`, `fresh_panel.rs`): a
/// question deadlocked three times is given up, each re-ask two seats wider and disjoint
/// from every earlier panel on it.
pub const LADDER_ASKS: usize = 3;
pub const WIDENING: usize = panel_machine::features::fresh_panel::WIDENING;

/// The first batch's default stamp (1 January 2027, UTC) and step: one second per entry,
/// so a round's commit and reveal windows fit between two entries.
pub const START_MS: u64 = 1_798_761_600_000;
pub const STEP_MS: u64 = 1000;

/// Motions `panel sim --engine apply` runs unless told otherwise: every motion is about
/// ten entries, so the scenarios' 50,000 would take minutes each.
pub const DEFAULT_MOTIONS: usize = 2000;

/// The two acceptance policies the engine runs side by side, each in its own debate.
pub const POLICIES: [&str; 3] = ["independent", "default", "weighted"];

fn policy(name: &str) -> Policy {
    match name {
        "independent" => Policy::independent(),
        "weighted" => Policy::weighted(),
        _ => Policy::default(),
    }
}

/// What the machine decided on one motion under one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineVerdict {
    /// Pool indices of the seats the machine drew for the last ask.
    pub seated: Vec<usize>,
    /// Pool indices of the first panel's seats (the baselines judge with these).
    pub first_seated: Vec<usize>,
    /// Panels the motion was asked of (1 when the first answered or no re-ask was drawn).
    pub asks: usize,
    pub verdict: Verdict,
    /// The deadlock's reasons, by name (`SplitGroup`, `CorrelatedSupport`, ...).
    pub reasons: Vec<String>,
    /// The machine's probability of yes for an accepted binary outcome (its
    /// `confidence`, turned toward yes).
    pub p_yes: Option<f64>,
    /// Under the weighted pool, what equal weights give yes (`equal_weights_milli`).
    pub equal_p_yes: Option<f64>,
    /// The recorded 90% interval of the accepted outcome's probability.
    pub interval: Option<(f64, f64)>,
    /// Pool indices of everyone seated on the motion, over every ask.
    pub sat: Vec<usize>,
    /// How an accepted binary outcome fared on the appeal ladder (`appeal_ladder`).
    pub appeal: Option<AppealRecord>,
}

impl MachineVerdict {
    fn no_panel() -> Self {
        MachineVerdict {
            seated: Vec::new(),
            first_seated: Vec::new(),
            asks: 1,
            verdict: Verdict::NoPanel,
            reasons: vec!["NoPanel".into()],
            p_yes: None,
            equal_p_yes: None,
            interval: None,
            sat: Vec::new(),
            appeal: None,
        }
    }
}

/// One simulated motion run through the machine under each policy of [`POLICIES`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaMotion {
    pub truth: bool,
    /// The true relevance step of a relevance motion.
    pub gold: Option<u8>,
    /// Every pool member's ruling (for the baselines), in pool order.
    pub rulings: Vec<Ruling>,
    /// In the order of [`POLICIES`].
    pub verdicts: Vec<MachineVerdict>,
}

/// A scenario run through the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaRun {
    /// Pool members the machine admitted before the first motion.
    pub admitted: usize,
    pub motions: Vec<ReplicaMotion>,
}

/// The scenario's pool registered, admitted and declared on one debate per policy.
struct Replica<'a> {
    driver: Driver,
    population: &'a Population,
    debates: Vec<String>,
}

impl<'a> Replica<'a> {
    fn set_up(s: &Scenario, pop: &'a Population, o: &ReplicaOptions) -> Result<Self, ReplicaError> {
        let mut driver = Driver::with_schedule(Schedule {
            start_ms: o.start_ms,
            step_ms: o.step_ms,
            seed_base: Rng::stream(s.seed, BATCH_SEEDS).next_u64(),
        });
        // Outcomes carry the machine's confidence from the current rule set on.
        driver.rules = Some(panel_machine::rules::CURRENT);
        for a in &pop.arbiters {
            let fail = |source| ReplicaError::Arbiter {
                arbiter: a.id.clone(),
                source,
            };
            driver
                .try_register(&a.id, &a.organisation, &a.declared_family, a.declared)
                .map_err(fail)?;
            if o.admission == Admission::TestCommand {
                driver.try_admit_without_exam(&a.id).map_err(fail)?;
            }
        }
        if o.admission != Admission::TestCommand {
            let answers = crate::exam_answers::judgements(s, pop);
            let ids: Vec<String> = pop.arbiters.iter().map(|a| a.id.clone()).collect();
            driver
                .try_sealed_exam(&ids, |id, item| {
                    pop.index_of(id)
                        .and_then(|i| answers.get(&item.id).map(|p| p[i]))
                        .unwrap_or(0.5)
                })
                .map_err(|source| ReplicaError::Exam { source })?;
        }
        if o.admission == Admission::ExamRecord {
            for a in &pop.arbiters {
                if !driver.state.arbiters.get(&a.id).is_some_and(|r| r.admitted) {
                    driver.try_admit_without_exam(&a.id).map_err(|source| {
                        ReplicaError::Arbiter {
                            arbiter: a.id.clone(),
                            source,
                        }
                    })?;
                }
            }
        }
        let mut debates = Vec::new();
        for name in POLICIES {
            let p = serde_json::to_value(policy(name))?;
            let id = driver
                .try_debate_under(Some(p))
                .map_err(|source| ReplicaError::Debate {
                    policy: name,
                    source,
                })?;
            for a in pop.arbiters.iter().filter(|a| a.declared != Stance::None) {
                driver
                    .try_declare(&a.id, &id, a.declared, 750)
                    .map_err(|source| ReplicaError::Arbiter {
                        arbiter: a.id.clone(),
                        source,
                    })?;
            }
            debates.push(id);
        }
        Ok(Replica {
            driver,
            population: pop,
            debates,
        })
    }

    /// Opens motion `ask.id` in debate `d` under `name`'s policy, `ask.seats` wide, with
    /// `ask.kept_off` never seated (the simulator's re-ask: a raw motion has no question
    /// for the machine's own ladder to widen, so the earlier sitters are kept off as
    /// contributors are); `false` when the machine could not draw a panel.
    fn open(
        &mut self,
        ask: &Ask,
        d: usize,
        name: &str,
        kind: MotionKind,
        s: &Scenario,
        author_family: Option<String>,
    ) -> Result<bool, ReplicaError> {
        let id = ask.id.as_str();
        let spec = MotionSpec {
            motion_id: id.into(),
            debate_id: self.debates[d].clone(),
            kind,
            state_hash: format!("{:064x}", self.driver.batches.len()).into(),
            seats: ask.seats,
            min_per_stance: s.panel.min_per_stance,
            contributors: ask.kept_off.clone(),
            author_model_family: author_family,
            policy: Some(policy(name)),
            question: None,
            projection: None,
            expected: None,
            procedure: None,
            final_panel_of: None,
        };
        match self.driver.write(TestCommand::OpenMotion(Box::new(spec))) {
            ItemReply::Applied(_) => Ok(true),
            ItemReply::Refused {
                code: RefusalCode::DrawFailed,
                ..
            } => Ok(false),
            ItemReply::Refused { code, message } => Err(ReplicaError::Motion {
                motion: id.into(),
                source: KitError::Refused { code, message },
            }),
        }
    }

    /// Runs the round of open motion `id` with the pool's `rulings`; what it decided.
    fn decide(&mut self, id: &str, rulings: &[Ruling]) -> Result<MachineVerdict, ReplicaError> {
        let pop = self.population;
        let vote = |_: &panel_machine::Motion, arbiter: &str| {
            let r = pop.index_of(arbiter).map(|i| rulings[i]);
            r.map_or(
                Vote {
                    yes: false,
                    p: 0.5,
                    relevance: None,
                    receipt: None,
                },
                |r| Vote {
                    yes: r.yes,
                    p: f64::from(r.p_yes),
                    relevance: r.relevance.map(u32::from),
                    receipt: None,
                },
            )
        };
        let fail = |source| ReplicaError::Motion {
            motion: id.into(),
            source,
        };
        self.driver.try_decide_by_round(id, vote).map_err(fail)?;
        let m = self.driver.motion(id).map_err(fail)?;
        let seated: Vec<usize> = m
            .seats
            .iter()
            .filter_map(|s| pop.index_of(&s.arbiter_id))
            .collect();
        let MotionStatus::Decided(acceptance) = &m.status else {
            return Err(ReplicaError::Undecided(id.into()));
        };
        let sure = m
            .confidence
            .map(|c| f64::from(c.probability_milli) / 1000.0);
        let equal = m
            .confidence
            .and_then(|c| c.equal_weights_milli)
            .map(|e| f64::from(e) / 1000.0);
        let interval = m.confidence.map(|c| {
            (
                f64::from(c.low_milli) / 1000.0,
                f64::from(c.high_milli) / 1000.0,
            )
        });
        Ok(match acceptance {
            Acceptance::Accepted { outcome, .. } => {
                let (verdict, p_yes, equal_p_yes) = match outcome {
                    Outcome::Decided(d) | Outcome::TierVerified { decision: d, .. } => {
                        let yes = *d == Decision::Yes;
                        let toward_yes = |p: f64| if yes { p } else { 1.0 - p };
                        (
                            Verdict::Decided(yes),
                            sure.map(toward_yes),
                            equal.map(toward_yes),
                        )
                    }
                    Outcome::Relevance(v) => (Verdict::Relevance(*v), None, None),
                };
                MachineVerdict {
                    first_seated: seated.clone(),
                    seated,
                    asks: 1,
                    verdict,
                    reasons: Vec::new(),
                    p_yes,
                    equal_p_yes,
                    interval,
                    sat: Vec::new(),
                    appeal: None,
                }
            }
            Acceptance::Deadlocked(dissent) => MachineVerdict {
                first_seated: seated.clone(),
                seated,
                asks: 1,
                verdict: Verdict::Deadlocked,
                reasons: dissent.reasons.iter().map(reason_name).collect(),
                p_yes: None,
                equal_p_yes: None,
                interval: None,
                sat: Vec::new(),
                appeal: None,
            },
        })
    }
}

/// One ask of the ladder: the motion id, its width and who is kept off.
struct Ask {
    id: String,
    seats: usize,
    kept_off: Vec<String>,
}

/// A simulated motion as one policy's debate asks it.
struct Asked<'a> {
    motion: usize,
    debate: usize,
    policy: &'a str,
    kind: MotionKind,
    author: Option<String>,
}

impl Replica<'_> {
    /// Asks a motion up to `asks` times: after each deadlock again, [`WIDENING`] seats
    /// wider, of a panel disjoint from every earlier one on it; the last verdict, with
    /// the first panel's seats and the number of asks.
    fn ladder(
        &mut self,
        q: &Asked<'_>,
        s: &Scenario,
        asks: usize,
        rulings: &[Ruling],
    ) -> Result<MachineVerdict, ReplicaError> {
        let mut kept_off: Vec<String> = Vec::new();
        let mut sat: Vec<usize> = Vec::new();
        let mut first_seated = None;
        let mut last = MachineVerdict::no_panel();
        for step in 0..asks.max(1) {
            let ask = Ask {
                id: match step {
                    0 => format!("{}-{}", q.policy, q.motion),
                    n => format!("{}-{}-ask{}", q.policy, q.motion, n + 1),
                },
                seats: s.panel.seats + WIDENING * step,
                kept_off: kept_off.clone(),
            };
            if !self.open(&ask, q.debate, q.policy, q.kind, s, q.author.clone())? {
                // No fresh panel: the motion ends as its last ask left it.
                break;
            }
            let mut v = self.decide(&ask.id, rulings)?;
            let first = first_seated.get_or_insert_with(|| v.seated.clone());
            v.first_seated = first.clone();
            v.asks = step + 1;
            sat.extend(v.seated.iter().copied());
            v.sat = sat.clone();
            kept_off.extend(
                v.seated
                    .iter()
                    .map(|&i| self.population.arbiters[i].id.clone()),
            );
            let done = v.verdict != Verdict::Deadlocked;
            last = v;
            if done {
                break;
            }
        }
        Ok(last)
    }
}

impl Replica<'_> {
    /// The appeal ladder on accepted answer `first` of motion `q` (`appeal_ladder`): while
    /// the side it went against believes its own side right, it appeals, up to the terms'
    /// rounds, to a fresh panel as wide as the machine would seat (`Appellants::seats`),
    /// none of whose seats sat on the motion before; an appeal panel accepting the other
    /// answer overturns the standing one. Every panel is drawn and decided by apply under
    /// the motion's policy.
    #[allow(clippy::too_many_arguments)]
    fn appeal(
        &mut self,
        q: &Asked<'_>,
        s: &Scenario,
        v: &MachineVerdict,
        first: bool,
        parties: Parties,
        terms: Appellants,
        rulings: &[Ruling],
    ) -> Result<AppealRecord, ReplicaError> {
        let mut rec = AppealRecord {
            first,
            standing: first,
            filed: 0,
            decided: 0,
            seats: 0,
            deposits: 0,
        };
        let mut kept_off: Vec<String> = v
            .sat
            .iter()
            .map(|&i| self.population.arbiters[i].id.clone())
            .collect();
        for round in 1..=terms.rounds {
            if !parties.loser_appeals(rec.standing) {
                break;
            }
            rec.filed += 1;
            rec.deposits += Appellants::deposit(round);
            let id = format!("{}-{}-appeal{round}", q.policy, q.motion);
            let mut seated = false;
            for seats in Appellants::seats(s.panel.seats, round) {
                let ask = Ask {
                    id: id.clone(),
                    seats,
                    kept_off: kept_off.clone(),
                };
                if self.open(&ask, q.debate, q.policy, q.kind, s, q.author.clone())? {
                    seated = true;
                    break;
                }
            }
            if !seated {
                // No fresh panel at all: the machine would keep the appeal pending; here
                // the standing answer stays.
                break;
            }
            let a = self.decide(&id, rulings)?;
            rec.seats += a.seated.len();
            kept_off.extend(
                a.seated
                    .iter()
                    .map(|&i| self.population.arbiters[i].id.clone()),
            );
            match a.verdict {
                Verdict::Decided(answer) => {
                    rec.decided += 1;
                    if answer == rec.standing {
                        break;
                    }
                    rec.standing = answer;
                }
                _ => break,
            }
        }
        Ok(rec)
    }
}

/// The variant name of a deadlock reason, as the record's JSON tags it.
fn reason_name(r: &panel_machine::DeadlockReason) -> String {
    match serde_json::to_value(r) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Object(o)) => o.keys().next().cloned().unwrap_or_default(),
        _ => String::from("unknown"),
    }
}

/// Runs `o.motions` motions of scenario `s` through the machine. The world and the
/// rulings come from the same streams as the direct engine's (`simulation::Run`), so the
/// two engines judge the same motions with the same rulings.
pub fn run(s: &Scenario, o: &ReplicaOptions) -> Result<ReplicaRun, ReplicaError> {
    let pop = Population::build(s);
    let mut replica = Replica::set_up(s, &pop, o)?;
    let admitted = replica
        .driver
        .state
        .arbiters
        .iter()
        .filter(|(_, a)| a.admitted)
        .count();
    let direct = Run {
        scenario: s,
        population: &pop,
        motions: o.motions,
        seats: s.panel.seats,
        stream: 0,
    };
    let mut world = Rng::stream(s.seed, WORLD);
    let mut errors = Rng::stream(s.seed, ERRORS);
    let mut signals = Rng::stream(s.seed, crate::appeal_ladder::SIGNALS);
    let families = pop.families.len();
    let mut out = Vec::with_capacity(o.motions);
    for k in 0..o.motions {
        let m = draw_motion(&s.world, families, &mut world);
        let rulings = direct.rule_all(&m, &mut errors);
        let kind = if m.relevance.is_some() {
            MotionKind::Relevance
        } else {
            MotionKind::Merge
        };
        // The author's family is kept off the panel only when the author declared it.
        let author = m
            .author_family
            .filter(|_| m.author_declared)
            .map(|f| pop.families[f].0.clone());
        // Drawn for every motion, so the world and the rulings do not depend on it.
        let parties = Parties::draw(m.truth, &o.appeals, &mut signals);
        let mut verdicts = Vec::with_capacity(POLICIES.len());
        for (d, name) in POLICIES.iter().enumerate() {
            let asked = Asked {
                motion: k,
                debate: d,
                policy: name,
                kind,
                author: author.clone(),
            };
            let mut v = replica.ladder(&asked, s, o.asks, &rulings)?;
            if let (Verdict::Decided(first), None) = (v.verdict, m.relevance) {
                v.appeal =
                    Some(replica.appeal(&asked, s, &v, first, parties, o.appeals, &rulings)?);
            }
            verdicts.push(v);
        }
        out.push(ReplicaMotion {
            truth: m.truth,
            gold: m.relevance,
            rulings,
            verdicts,
        });
    }
    Ok(ReplicaRun {
        admitted,
        motions: out,
    })
}
