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
use calibration::prior_consistency::{Camp, PriorCheckPolicy, check_priors};
use serde_json::Value;

use crate::acceptance::Stance;
use crate::model::{MotionStatus, State};
use crate::reply::{PriorFinding, to_value};

/// Why the prior-consistency check could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriorCheckError {
    #[error("no decided motions with binary rulings yet; run the check after some history")]
    NoHistory,
    #[error("the prior-consistency fit failed: {0}")]
    Fit(#[from] calibration::error::CalibrationError),
}

/// Runs the check and returns `(arbiter id, finding)` for every arbiter with history.
pub fn run(state: &State) -> Result<Vec<(String, Value, Option<Stance>)>, PriorCheckError> {
    let ids: Vec<String> = state.arbiters.iter().map(|(id, _)| id.clone()).collect();
    let index: BTreeMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let key_to_id: BTreeMap<String, String> = state
        .arbiters
        .iter()
        .map(|(id, a)| (a.registration.public_key.clone(), id.clone()))
        .collect();
    // One column per decided debate motion with binary rulings: 1 yes, 0 no.
    let mut columns: Vec<Vec<Option<f64>>> = Vec::new();
    for (_, m) in state.motions.iter() {
        if !matches!(m.status, MotionStatus::Decided(_)) || m.spec.question.is_none() {
            continue;
        }
        let mut col = vec![None; ids.len()];
        for w in &m.rulings {
            let Ok(sr) = w.decode() else { continue };
            let Some(r) = sr.ruling else { continue };
            let Some(id) = key_to_id.get(&hex::encode(&r.arbiter_key)) else {
                continue;
            };
            let Ok(d) = panel_proto::pb::Decision::try_from(r.decision) else {
                continue;
            };
            if let Some(&u) = index.get(id.as_str())
                && panel_proto::ruling_check::binary_pair(
                    panel_proto::pb::MotionKind::try_from(r.kind)
                        .unwrap_or(panel_proto::pb::MotionKind::Unspecified),
                )
                .is_some()
            {
                col[u] = Some(if panel_proto::ruling_check::is_affirmative(d) {
                    1.0
                } else {
                    0.0
                });
            }
        }
        if col.iter().filter(|x| x.is_some()).count() >= 2 {
            columns.push(col);
        }
    }
    if columns.is_empty() {
        return Err(PriorCheckError::NoHistory);
    }
    let ratings: Vec<Vec<Option<f64>>> = (0..ids.len())
        .map(|u| columns.iter().map(|c| c[u]).collect())
        .collect();
    let camps: Vec<Option<Camp>> = state
        .arbiters
        .iter()
        .map(|(_, a)| match a.registration.stance {
            Stance::A => Some(Camp::A),
            Stance::B => Some(Camp::B),
            Stance::None => None,
        })
        .collect();
    let fit = fit_matrix(&ratings, &BridgingConfig::default())?;
    let checks = check_priors(&ratings, &camps, &fit, &PriorCheckPolicy::default())?;
    Ok(checks
        .into_iter()
        .map(|c| {
            let fitted = match (c.flagged, c.declared) {
                (true, Some(Camp::A)) => Some(Stance::B),
                (true, Some(Camp::B)) => Some(Stance::A),
                _ => None,
            };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acceptance::{Acceptance, Dissent, MotionKind};
    use crate::command::{ArbiterRegistration, MotionSpec};
    use crate::model::{Arbiter, Motion};
    use crate::ruling::WireRuling;
    use crucible::motion::Question;
    use panel_proto::pb;

    fn arbiter(state: &mut State, id: &str, key: u8, stance: Stance) {
        state.arbiters.insert(
            id.into(),
            Arbiter {
                registration: ArbiterRegistration {
                    arbiter_id: id.into(),
                    public_key: hex::encode([key; 32]),
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
                    state_hash: "00".repeat(32),
                    seats: votes.len(),
                    min_per_stance: 1,
                    contributors: vec![],
                    author_model_family: None,
                    policy: None,
                    question: Some(Question::AdvancePhase { from: "x".into() }),
                    projection: None,
                    expected: None,
                    procedure: None,
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

    #[test]
    fn no_history_is_a_clear_refusal() {
        let mut s = State::default();
        arbiter(&mut s, "a1", 1, Stance::A);
        assert_eq!(run(&s).unwrap_err(), PriorCheckError::NoHistory);
    }
}
