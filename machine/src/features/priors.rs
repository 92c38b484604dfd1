//! The prior-consistency check over the ruling history (calibration digest: bridging
//! model plus binomial confirmation). Declared priors are claims; this measures them.
//! An arbiter is flagged only when both the screen (its fitted factor sits nearer the
//! other camp) and the confirmation (it sides with the other camp on contested motions
//! more than chance) agree; a flagged arbiter is then seated under its fitted camp, so a
//! camp cannot pass as two by relabelling some of its members.
//!
//! Pure: computed in `apply` from the decided motions on the record.

use std::collections::BTreeMap;

use calibration::bridging::{BridgingConfig, fit_matrix};
use calibration::prior_consistency::{Camp, PriorCheck, PriorCheckPolicy, check_priors};
use calibration::prior_consistency_v2::{PriorCheckPolicyV2, check_priors_v2};
use serde_json::Value;

use crate::debates::PriorFinding;
use crate::model::{Motion, MotionStatus, State};
use crate::reply::to_value;
use crate::rules::acceptance::Stance;

/// Why the prior-consistency check could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriorCheckError {
    #[error("no decided motions with binary rulings yet; run the check after some history")]
    NoHistory,
    #[error("the prior-consistency fit failed: {0}")]
    Fit(#[from] calibration::error::CalibrationError),
}

/// The binary votes on one decided motion: `(arbiter id, yes)` for every ruling of a
/// registered key on a yes/no kind; anything else on the record is passed over.
fn binary_votes<'a>(
    m: &'a Motion,
    key_to_id: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = (&'a str, bool)> + 'a {
    m.rulings.iter().filter_map(move |w| {
        let r = w.decode().ok()?.ruling?;
        let id = key_to_id.get(&hex::encode(&r.arbiter_key))?;
        let d = panel_proto::pb::Decision::try_from(r.decision).ok()?;
        let kind = panel_proto::pb::MotionKind::try_from(r.kind)
            .unwrap_or(panel_proto::pb::MotionKind::Unspecified);
        panel_proto::ruling_check::binary_pair(kind)?;
        Some((id.as_str(), panel_proto::ruling_check::is_affirmative(d)))
    })
}

fn key_to_id(state: &State) -> BTreeMap<String, String> {
    state
        .arbiters
        .iter()
        .map(|(id, a)| (a.registration.public_key.to_hex(), id.clone()))
        .collect()
}

/// The calibration crate's camp for a stance (none for no stance).
pub fn camp(stance: Stance) -> Option<Camp> {
    match stance {
        Stance::A => Some(Camp::A),
        Stance::B => Some(Camp::B),
        Stance::None => None,
    }
}

/// The camp a flagged check's arbiter is reseated under: the other one.
fn fitted(c: &PriorCheck) -> Option<Stance> {
    match (c.flagged, c.declared) {
        (true, Some(Camp::A)) => Some(Stance::B),
        (true, Some(Camp::B)) => Some(Stance::A),
        _ => None,
    }
}

/// Runs the check as rule sets below [`DECLARED_CAMPS`](crate::rules::DECLARED_CAMPS) ran it, and returns `(arbiter id,
/// finding, fitted camp)` for every registered arbiter: one rater per arbiter, its
/// registered stance as its camp, every decided debate motion in motion-id order. Kept
/// exactly so records applied under those rule sets replay.
pub fn run(state: &State) -> Result<Vec<(String, Value, Option<Stance>)>, PriorCheckError> {
    let ids: Vec<String> = state.arbiters.iter().map(|(id, _)| id.clone()).collect();
    let index: BTreeMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let key_to_id = key_to_id(state);
    // One column per decided debate motion with binary rulings: 1 yes, 0 no.
    // In motion-id order, held and retired alike (these rule sets read the whole history).
    let mut by_id: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    state.motions.for_each(|m| {
        if !matches!(m.status, MotionStatus::Decided(_)) || m.spec.question.is_none() {
            return;
        }
        let mut col = vec![None; ids.len()];
        for (id, yes) in binary_votes(m, &key_to_id) {
            if let Some(&u) = index.get(id) {
                col[u] = Some(if yes { 1.0 } else { 0.0 });
            }
        }
        if col.iter().filter(|x| x.is_some()).count() >= 2 {
            by_id.insert(m.spec.motion_id.clone(), col);
        }
    });
    let columns: Vec<Vec<Option<f64>>> = by_id.into_values().collect();
    if columns.is_empty() {
        return Err(PriorCheckError::NoHistory);
    }
    let ratings: Vec<Vec<Option<f64>>> = (0..ids.len())
        .map(|u| columns.iter().map(|c| c[u]).collect())
        .collect();
    let camps: Vec<Option<Camp>> = state
        .arbiters
        .iter()
        .map(|(_, a)| camp(a.registration.stance))
        .collect();
    let fit = fit_matrix(&ratings, &BridgingConfig::default())?;
    let checks = check_priors(&ratings, &camps, &fit, &PriorCheckPolicy::default())?;
    Ok(checks
        .into_iter()
        .map(|c| {
            let fitted = fitted(&c);
            (
                ids[c.arbiter].clone(),
                to_value(&PriorFinding {
                    motions: columns.len(),
                    check: to_value(&c),
                }),
                fitted,
            )
        })
        .collect())
}

pub use crate::model::motion_table::PRIOR_CHECK_WINDOW;

/// Fewest yes/no rulings in the window for a claim to be checked: below it the
/// confirmation cannot reach significance (docs/CALIBRATION.md), and each rater left out
/// keeps the check's matrix, and its cost in apply, small.
pub const MIN_CLAIM_RULINGS: usize = 10;

/// Whose claim a rater's rulings are measured against: an arbiter's registered stance
/// (debates that seat by registration), or its signed declaration for one debate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Claim {
    Registered {
        arbiter_id: String,
    },
    Declared {
        arbiter_id: String,
        debate_id: String,
    },
}

/// One claim's finding.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimFinding {
    pub claim: Claim,
    pub finding: PriorFinding,
    /// The camp the claim's arbiter is reseated under, when the check confirmed that it
    /// rules with the other one.
    pub fitted: Option<Stance>,
}

/// Runs the check from rule set [`DECLARED_CAMPS`](crate::rules::DECLARED_CAMPS) on, with the calibration crate's
/// version-2 rule (`prior_consistency_v2`: pairwise agreement with every judge of each
/// camp, clones counted once, suspects set aside, false discoveries controlled across
/// claims; docs/SIMULATION.md "Impostors"): one rater per claim (an
/// arbiter's registered stance, or its declaration for a debate that seats by
/// declarations), over the last [`PRIOR_CHECK_WINDOW`] decided debate motions in the
/// order they were decided. A declared rater's camp is its signed stance for that debate
/// (none if it declared none); it is judged only on that debate's motions, against that
/// debate's other declarations: each declaring debate is checked on its own (its camps
/// are about its own resolution), and the registered labels together on the motions
/// that seat by them. Checking per debate also keeps the pairwise work linear in the
/// number of debates.
pub fn run_by_claim(state: &State) -> Result<Vec<ClaimFinding>, PriorCheckError> {
    let key_to_id = key_to_id(state);
    // Held motions only: a replica never retires a motion inside the window
    // (`MotionTable::retirable`), so this is the window of the whole history.
    let mut decided: Vec<(u64, &str, &Motion)> = state
        .motions
        .iter_held()
        .filter(|(_, m)| matches!(m.status, MotionStatus::Decided(_)))
        .filter(|(_, m)| m.spec.question.is_some())
        .map(|(id, m)| (m.decided_log_index.unwrap_or(0), id.as_str(), m))
        .collect();
    // The window in decided order: select it in linear time (every check runs in apply
    // and the history only grows), then order just those motions.
    let by_decision =
        |a: &(u64, &str, &Motion), b: &(u64, &str, &Motion)| (a.0, a.1).cmp(&(b.0, b.1));
    let first = decided.len().saturating_sub(PRIOR_CHECK_WINDOW);
    if first > 0 {
        decided.select_nth_unstable_by(first, by_decision);
    }
    let recent = &mut decided[first..];
    recent.sort_unstable_by(by_decision);
    // Each motion's votes by claim, in blocks: a declaring debate's motions test that
    // debate's declarations (its camps are about its resolution), the other motions the
    // registered labels. Claims of different blocks never rule on the same motion.
    let mut blocks: BTreeMap<Option<&str>, Vec<MotionVotes>> = BTreeMap::new();
    for (_, _, m) in recent {
        let declared = crate::features::declared_priors::governing_debate(state, &m.spec).is_some();
        let col: Vec<(Claim, bool)> = binary_votes(m, &key_to_id)
            .map(|(id, yes)| {
                let claim = if declared {
                    Claim::Declared {
                        arbiter_id: id.to_owned(),
                        debate_id: m.spec.debate_id.clone(),
                    }
                } else {
                    Claim::Registered {
                        arbiter_id: id.to_owned(),
                    }
                };
                (claim, yes)
            })
            .collect();
        let block = declared.then_some(m.spec.debate_id.as_str());
        blocks.entry(block).or_default().push(col);
    }
    let mut findings = Vec::new();
    let mut checked = false;
    for (_, votes) in blocks {
        if let Some(block) = check_block(state, votes)? {
            findings.extend(block);
            checked = true;
        }
    }
    if !checked {
        return Err(PriorCheckError::NoHistory);
    }
    Ok(findings)
}

/// One motion's yes/no votes, by the claim each tests.
type MotionVotes = Vec<(Claim, bool)>;

/// Checks one block's claims (`None`: too little history in it). A claim with too few
/// rulings in the window can confirm nothing; leaving it out bounds the matrix.
fn check_block(
    state: &State,
    mut votes: Vec<MotionVotes>,
) -> Result<Option<Vec<ClaimFinding>>, PriorCheckError> {
    let mut counts: BTreeMap<&Claim, usize> = BTreeMap::new();
    for (claim, _) in votes.iter().flatten() {
        *counts.entry(claim).or_insert(0) += 1;
    }
    let mut raters: BTreeMap<Claim, usize> = counts
        .into_iter()
        .filter(|(_, n)| *n >= MIN_CLAIM_RULINGS)
        .map(|(claim, _)| (claim.clone(), 0))
        .collect();
    for (u, slot) in raters.values_mut().enumerate() {
        *slot = u;
    }
    for col in &mut votes {
        col.retain(|(claim, _)| raters.contains_key(claim));
    }
    votes.retain(|col| col.len() >= 2);
    if votes.is_empty() {
        return Ok(None);
    }
    let mut ratings = vec![vec![None; votes.len()]; raters.len()];
    for (j, col) in votes.iter().enumerate() {
        for (claim, yes) in col {
            ratings[raters[claim]][j] = Some(if *yes { 1.0 } else { 0.0 });
        }
    }
    let claims: Vec<Claim> = raters.into_keys().collect();
    let camps: Vec<Option<Camp>> = claims.iter().map(|c| claimed_camp(state, c)).collect();
    let fit = fit_matrix(&ratings, &BridgingConfig::default())?;
    let checks = check_priors_v2(&ratings, &camps, &fit, &PriorCheckPolicyV2::default())?;
    Ok(Some(
        checks
            .into_iter()
            .map(|c| ClaimFinding {
                claim: claims[c.arbiter].clone(),
                fitted: fitted(&c),
                finding: PriorFinding {
                    motions: ratings[c.arbiter].iter().flatten().count(),
                    check: to_value(&c),
                },
            })
            .collect(),
    ))
}

/// The camp a claim states: the registered stance, or the signed declaration.
fn claimed_camp(state: &State, claim: &Claim) -> Option<Camp> {
    match claim {
        Claim::Registered { arbiter_id } => state
            .arbiters
            .get(arbiter_id)
            .and_then(|a| camp(a.registration.stance)),
        Claim::Declared {
            arbiter_id,
            debate_id,
        } => state
            .debates
            .get(debate_id)
            .and_then(|d| d.declared_stances.get(arbiter_id))
            .and_then(|s| camp(s.stance)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{ArbiterRegistration, MotionSpec};
    use crate::model::{Arbiter, Motion};
    use crate::rules::acceptance::{Acceptance, Dissent, MotionKind};
    use crate::rules::ruling::WireRuling;
    use crucible::motion::Question;
    use panel_proto::pb;

    fn arbiter(state: &mut State, id: &str, key: u8, stance: Stance) {
        state.arbiters.insert(
            id.into(),
            Arbiter {
                registration: ArbiterRegistration {
                    arbiter_id: id.into(),
                    public_key: hex::encode([key; 32]).into(),
                    organisation: "org".into(),
                    model_family: "f".into(),
                    stance,
                    endpoint: String::new(),
                    attestation: None,
                    lineage: None,
                },
                admitted: true,
                score_milli: 0,
                registered_at_ms: 0,
                exam: None,
                prior_check: None,
                key_history: Vec::new(),
                fitted_stance: None,
                revoked: None,
                recalibration: Default::default(),
            },
        );
    }

    fn motion(state: &mut State, n: usize, votes: &[(u8, bool)]) {
        let id = format!("m{n:03}");
        let rulings = votes
            .iter()
            .map(|(key, yes)| {
                WireRuling::encode(&pb::SignedRuling {
                    ruling: Some(pb::Ruling {
                        motion_id: id.clone(),
                        kind: pb::MotionKind::Merge as i32,
                        decision: if *yes {
                            pb::Decision::Accept
                        } else {
                            pb::Decision::Reject
                        } as i32,
                        arbiter_key: vec![*key; 32],
                        ..Default::default()
                    }),
                    ..Default::default()
                })
            })
            .collect();
        state.motions.insert(
            id.clone(),
            Motion {
                spec: MotionSpec {
                    motion_id: id,
                    debate_id: "deb_1".into(),
                    kind: MotionKind::Merge,
                    state_hash: "00".repeat(32).into(),
                    seats: votes.len(),
                    min_per_stance: 1,
                    contributors: vec![],
                    author_model_family: None,
                    policy: None,
                    question: Some(Question::AdvancePhase { from: "x".into() }),
                    projection: None,
                    expected: None,
                    procedure: None,
                    final_panel_of: None,
                },
                seats: vec![],
                draw_seed: 0,
                opened_at_ms: 0,
                opened_log_index: n as u64,
                status: MotionStatus::Decided(Acceptance::Deadlocked(Dissent {
                    reasons: vec![],
                    tallies: BTreeMap::new(),
                    ignored: vec![],
                })),
                rulings,
                reveals: vec![],
                decided_log_index: Some(n as u64),
                round: None,
                independence: None,
                effect_refused: None,
                confidence: None,
                finality: None,
                beacon: None,
                precedent: None,
                fresh_panel: None,
                last_word: None,
            },
        );
    }

    #[test]
    fn an_arbiter_declaring_a_but_ruling_with_b_is_flagged_and_seated_as_b() {
        let mut s = State::default();
        for (id, key, stance) in [
            ("a1", 1, Stance::A),
            ("a2", 2, Stance::A),
            ("a3", 3, Stance::A),
            ("a4", 4, Stance::A),
            ("b1", 5, Stance::B),
            ("b2", 6, Stance::B),
            ("b3", 7, Stance::B),
        ] {
            arbiter(&mut s, id, key, stance);
        }
        // 40 contested motions: camp A votes one way, camp B the other; "a4" always
        // votes with B. Ten uncontested motions everyone agrees on.
        for n in 0..50 {
            let a_yes = n % 2 == 0;
            let contested = n < 40;
            let b_yes = if contested { !a_yes } else { a_yes };
            let votes = [
                (1, a_yes),
                (2, a_yes),
                (3, a_yes),
                (4, b_yes),
                (5, b_yes),
                (6, b_yes),
                (7, b_yes),
            ];
            motion(&mut s, n, &votes);
        }
        let findings = run(&s).expect("check runs");
        let fitted: BTreeMap<String, Option<Stance>> =
            findings.iter().map(|(id, _, f)| (id.clone(), *f)).collect();
        assert_eq!(fitted["a4"], Some(Stance::B), "{findings:?}");
        for id in ["a1", "a2", "a3", "b1", "b2", "b3"] {
            assert_eq!(fitted[id], None, "{id} rules with its declared camp");
        }
    }

    /// Motion `n` of `debate`, decided with `votes` (key, yes).
    fn debate_motion(state: &mut State, debate: &str, n: usize, votes: &[(u8, bool)]) {
        motion(state, n, votes);
        let id = format!("m{n:03}");
        if let Some(m) = state.motions.get_mut(&id) {
            m.spec.debate_id = debate.into();
            m.spec.policy = state.debates.get(debate).map(|d| d.policy.clone());
        }
    }

    fn declaring_debate(state: &mut State, id: &str, declared: &[(&str, Stance)]) {
        let mut d = crate::debates::create(
            id,
            0,
            crucible::model::NewDebate {
                resolution: "r".into(),
                pos_a: "a".into(),
                pos_b: "b".into(),
                burden: None,
                claim_budget: None,
            },
            crate::rules::acceptance::Policy::independent(),
            7,
            1,
            false,
        );
        for (arbiter, stance) in declared {
            d.declared_stances.insert(
                (*arbiter).into(),
                crate::debates::DeclaredStance {
                    stance: *stance,
                    credence_permille: 900,
                    log_index: 1,
                },
            );
        }
        state.debates.insert(id.into(), d);
    }

    /// From rule set DECLARED_CAMPS each declaration is its own claim: "x" declares A in
    /// both debates, rules with A in deb_1 and with B in deb_2; only its deb_2 declaration
    /// is found false, and it is reseated under B there only. Its registered label (B)
    /// is never read on a debate that seats by declarations.
    #[test]
    fn each_declaration_is_checked_on_its_own_debate() {
        let mut s = State::default();
        let pool = [
            ("a1", 1, Stance::A),
            ("a2", 2, Stance::A),
            ("a3", 3, Stance::A),
            ("b1", 5, Stance::B),
            ("b2", 6, Stance::B),
            ("b3", 7, Stance::B),
            ("x", 4, Stance::B),
        ];
        for (id, key, _) in pool {
            arbiter(&mut s, id, key, Stance::B);
        }
        let declared: Vec<(&str, Stance)> = pool
            .iter()
            .map(|(id, _, st)| (*id, if *id == "x" { Stance::A } else { *st }))
            .collect();
        declaring_debate(&mut s, "deb_1", &declared);
        declaring_debate(&mut s, "deb_2", &declared);
        for n in 0..100 {
            let debate = if n < 50 { "deb_1" } else { "deb_2" };
            let a_yes = n % 2 == 0;
            let contested = n % 5 != 0;
            let b_yes = if contested { !a_yes } else { a_yes };
            let x_yes = if n < 50 { a_yes } else { b_yes };
            // Each judge errs on its own tenth of the motions: distinct judges, not clones.
            let own = |k: u8, yes: bool| {
                (n * 7 + usize::from(k) * 13) % 10 == 0 && !yes
                    || (n * 7 + usize::from(k) * 13) % 10 != 0 && yes
            };
            let votes = [
                (1, own(1, a_yes)),
                (2, own(2, a_yes)),
                (3, own(3, a_yes)),
                (4, own(4, x_yes)),
                (5, own(5, b_yes)),
                (6, own(6, b_yes)),
                (7, own(7, b_yes)),
            ];
            debate_motion(&mut s, debate, n, &votes);
        }
        let findings = run_by_claim(&s).expect("check runs");
        let flagged: Vec<&Claim> = findings
            .iter()
            .filter(|f| f.fitted.is_some())
            .map(|f| &f.claim)
            .collect();
        assert_eq!(
            flagged,
            [&Claim::Declared {
                arbiter_id: "x".into(),
                debate_id: "deb_2".into()
            }],
            "{findings:?}"
        );
        assert!(
            findings
                .iter()
                .all(|f| matches!(f.claim, Claim::Declared { .. })),
            "no registered label is read on debates that seat by declarations"
        );

        // Applied: reseated under B in deb_2 only, on the record's reply.
        s.rules = crate::rules::DECLARED_CAMPS;
        let reply = crate::apply::arbiters::check_priors(&mut s, (0, 0)).expect("check applies");
        assert!(reply.flagged.is_empty(), "{reply:?}");
        assert_eq!(reply.flagged_declarations.len(), 1, "{reply:?}");
        let x = &s.arbiters.get("x").expect("registered").clone();
        let seat =
            |d: &str| crate::features::declared_priors::seating_stance("x", x, s.debates.get(d));
        assert_eq!(seat("deb_1"), Stance::A);
        assert_eq!(seat("deb_2"), Stance::B);
    }

    /// The window: only the last PRIOR_CHECK_WINDOW decided motions are read.
    #[test]
    fn the_check_reads_a_bounded_window_of_recent_motions() {
        let mut s = State::default();
        for (id, key) in [("a1", 1), ("a2", 2), ("b1", 5), ("b2", 6)] {
            arbiter(&mut s, id, key, if key < 5 { Stance::A } else { Stance::B });
        }
        arbiter(&mut s, "rare", 9, Stance::A);
        for n in 0..PRIOR_CHECK_WINDOW + 30 {
            let mut votes = vec![(1, true), (2, true), (5, false), (6, false)];
            // "rare" rules on too few of the window's motions to be checked at all.
            if n + MIN_CLAIM_RULINGS > PRIOR_CHECK_WINDOW + 30 {
                votes.push((9, true));
            }
            motion(&mut s, n, &votes);
        }
        let findings = run_by_claim(&s).expect("check runs");
        assert_eq!(findings.len(), 4, "{findings:?}");
        for f in &findings {
            assert_eq!(f.finding.motions, PRIOR_CHECK_WINDOW, "{f:?}");
        }
    }

    /// What one scheduled check costs in apply at the window's size: 1,000 motions over
    /// 20 debates, 10 declared arbiters each, 7 seats a motion (200 claims). Prints the
    /// time; run with `cargo test --release -p panel-machine -- --ignored --nocapture
    /// prior_check_cost` (BENCHMARKS.md "Prior-consistency check").
    #[test]
    #[ignore = "prints a cost figure; run on demand"]
    fn prior_check_cost() {
        let mut s = State::default();
        for k in 0..40u8 {
            arbiter(&mut s, &format!("j{k}"), k + 1, Stance::None);
        }
        for d in 0..20usize {
            let pool: Vec<u8> = (0..10).map(|i| ((d * 3 + i) % 40) as u8).collect();
            let declared: Vec<(String, Stance)> = pool
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    (
                        format!("j{k}"),
                        if i % 2 == 0 { Stance::A } else { Stance::B },
                    )
                })
                .collect();
            let declared: Vec<(&str, Stance)> =
                declared.iter().map(|(id, st)| (id.as_str(), *st)).collect();
            declaring_debate(&mut s, &format!("deb_{d}"), &declared);
            for m in 0..50usize {
                let n = d * 50 + m;
                let votes: Vec<(u8, bool)> = (0..7)
                    .map(|seat| {
                        let i = (m + seat * 3) % 10;
                        let side_a = i % 2 == 0;
                        let noise = (n * 7 + i * 13) % 10 == 0;
                        (pool[i] + 1, (side_a == (m % 2 == 0)) != noise)
                    })
                    .collect();
                debate_motion(&mut s, &format!("deb_{d}"), n, &votes);
            }
        }
        let t = std::time::Instant::now();
        let findings = run_by_claim(&s).expect("check runs");
        println!(
            "prior check by claim: {} claims over {PRIOR_CHECK_WINDOW} motions in {:.1} ms",
            findings.len(),
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    #[test]
    fn no_history_is_a_clear_refusal() {
        let mut s = State::default();
        arbiter(&mut s, "a1", 1, Stance::A);
        assert_eq!(run(&s).unwrap_err(), PriorCheckError::NoHistory);
        assert_eq!(run_by_claim(&s).unwrap_err(), PriorCheckError::NoHistory);
    }
}
