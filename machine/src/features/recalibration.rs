//! Recalibration from resolved outcomes (docs/CALIBRATION.md), inside the deterministic
//! `apply`: when a motion's outcome establishes the truth of an earlier question, the
//! earlier rulings are scored against it and kept on each arbiter's track record
//! (`calibration::recalibration`); an arbiter whose record fails the admission bars is
//! flagged and no longer drawn until it is examined again. docs/CALIBRATION.md,
//! "Recalibration from resolved outcomes", gives the rules and their reasons.
//!
//! What resolves an earlier motion, and nothing else does:
//! * **a source later verified**: an accepted tier verification (the acceptance rule
//!   requires agreeing retrieval receipts from arbiters of both stances) resolves every
//!   earlier, already decided motion that asked the same question (same debate, thread,
//!   version and citation index), whether that motion deadlocked or was decided. Its
//!   answer (verified or not) is the truth. It is the truth about the bytes both stances
//!   retrieved, so an earlier ruling is scored only when it carries a receipt of those
//!   same bytes: a ruling without a receipt judged whether the source could be fetched
//!   then, and a receipt of other bytes judged another document.
//! * **an appeal decision**: an appeal motion whose answer the document took (the appeal
//!   is admitted or denied in the SPEC document) resolves the challenges it contests. An
//!   appeal names target threads, not challenges (SPEC section 12), so the link is made
//!   from the document: the challenges on the target threads, resolved outside this
//!   appeal's own review, whose resolution went against the appellant's side (upheld on
//!   one of its claims, or dismissed when it filed the challenge). A denied appeal leaves
//!   every such resolution standing: each is confirmed. An admitted appeal contests them:
//!   when exactly one challenge fits, its resolution is overturned (truth = the opposite);
//!   when several fit, the appeal does not say which one was wrong, so none is scored and
//!   the challenges are reported as ambiguous.
//!
//! Never from agreement with the majority alone: a motion's acceptance by its own panel
//! changes no track record (the pure crate refuses an item resolved by its own motion),
//! and a later panel's answer counts only through the two routes above.
//!
//! The scored probability is the one inside the arbiter's signed ruling (its credence in
//! the affirmative: uphold, verified), found on the earlier motion's record by the key of
//! a seated arbiter. Abstentions carry no forecast and are skipped.

use std::collections::{BTreeMap, BTreeSet};

use calibration::recalibration::{RecalibrationPolicy, Resolution, ResolutionKind, ResolvedItem};
use crucible::document::Side;
use crucible::motion::Question;
use panel_proto::pb;
use serde::Serialize;

use crate::debates::DebateRecord;
use crate::model::{Motion, MotionStatus, State};
use crate::reply::{RecalibrationReply, ResolvedScored};
use crate::rules::acceptance::{Acceptance, Decision, Outcome};

/// An earlier motion and the truth a later outcome established for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolved {
    pub motion_id: String,
    /// `true` for "yes" (the challenge should be upheld, the tier is verified).
    pub truth: bool,
    /// For a source verification: the content hash of the verified bytes; only rulings
    /// whose receipt names these bytes are scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<crate::rules::hex_bytes::DigestBytes>,
}

/// What one decided motion resolves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Findings {
    pub by: Resolution,
    pub resolved: Vec<Resolved>,
    /// Challenges an admitted appeal contests together, so none can be scored.
    pub ambiguous_challenges: Vec<String>,
}

/// What the decided motion `motion_id` resolves; `None` when it resolves nothing (it
/// deadlocked, or it is not a tier verification or an appeal). Reads only.
pub fn findings(state: &State, motion_id: &str) -> Option<Findings> {
    let m = state.motions.get(motion_id)?;
    let MotionStatus::Decided(Acceptance::Accepted { outcome, .. }) = &m.status else {
        return None;
    };
    let q = m.spec.question.as_ref()?;
    let rec = state.debates.get(&m.spec.debate_id)?;
    let decided_earlier = |id: &str| {
        id != motion_id
            && state
                .motions
                .get(id)
                .is_some_and(|e| matches!(e.status, MotionStatus::Decided(_)))
    };
    match (q, outcome) {
        (
            Question::VerifyTier { .. },
            Outcome::TierVerified {
                decision,
                content_hash,
            },
        ) => {
            let key = q.key();
            let resolved = rec
                .questions
                .iter()
                .filter(|(id, other)| other.key() == key && decided_earlier(id))
                .map(|(id, _)| Resolved {
                    motion_id: id.clone(),
                    truth: *decision == Decision::Yes,
                    content_hash: Some(content_hash.clone()),
                })
                .collect();
            Some(Findings {
                by: Resolution {
                    motion_id: motion_id.to_string(),
                    kind: ResolutionKind::SourceVerified,
                },
                resolved,
                ambiguous_challenges: Vec::new(),
            })
        }
        (Question::AdmitAppeal { appeal_id }, Outcome::Decided(_)) => {
            let (contested, admitted) = contested_challenges(rec, appeal_id)?;
            let by = Resolution {
                motion_id: motion_id.to_string(),
                kind: ResolutionKind::Appeal,
            };
            if admitted && contested.len() > 1 {
                return Some(Findings {
                    by,
                    resolved: Vec::new(),
                    ambiguous_challenges: contested.into_iter().map(|(id, _)| id).collect(),
                });
            }
            let mut resolved = Vec::new();
            for (challenge_id, upheld) in contested {
                let truth = if admitted { !upheld } else { upheld };
                resolved.extend(
                    rec.questions
                        .iter()
                        .filter(|(id, other)| {
                            matches!(other, Question::ResolveChallenge { challenge_id: c } if *c == challenge_id)
                                && decided_earlier(id)
                        })
                        .map(|(id, _)| Resolved {
                            motion_id: id.clone(),
                            truth,
                            content_hash: None,
                        }),
                );
            }
            Some(Findings {
                by,
                resolved,
                ambiguous_challenges: Vec::new(),
            })
        }
        _ => None,
    }
}

/// The challenges an appeal contests, each with whether it was upheld, and whether the
/// appeal was admitted. `None` while the document has not taken a decision on it.
fn contested_challenges(
    rec: &DebateRecord,
    appeal_id: &str,
) -> Option<(Vec<(String, bool)>, bool)> {
    let d = &rec.debate;
    let a = d.appeal(appeal_id)?;
    let admitted = match a.status.as_str() {
        "admitted" | "resolved" => true,
        "denied" => false,
        _ => return None,
    };
    let appellant = a.side.as_deref().and_then(Side::parse)?;
    let targets: BTreeSet<&str> = a.target_thread_ids.iter().map(String::as_str).collect();
    let contested = d
        .challenges
        .iter()
        .filter(|c| targets.contains(c.thread_id.as_str()))
        .filter(|c| c.appeal_id.as_deref() != Some(appeal_id))
        .filter_map(|c| {
            let upheld = match c.resolution.as_deref() {
                Some("upheld") => true,
                Some("dismissed") => false,
                _ => return None,
            };
            let against_appellant = if upheld {
                d.thread(&c.thread_id).and_then(|t| t.side()) == Some(appellant)
            } else {
                c.side.as_deref().and_then(Side::parse) == Some(appellant)
            };
            against_appellant.then(|| (c.id.clone(), upheld))
        })
        .collect();
    Some((contested, admitted))
}

/// A seated arbiter's signed forecast on a motion.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedForecast {
    /// Credence in "yes", as signed.
    pub probability: f64,
    /// SHA-256 of the bytes its receipt names, if it attached one.
    pub receipt: Option<crate::rules::hex_bytes::DigestBytes>,
}

/// Each seated arbiter's credence in "yes" as signed in its ruling on `m` (first ruling
/// per arbiter; abstentions and rulings by keys without a seat are skipped).
pub fn signed_forecasts(state: &State, m: &Motion) -> BTreeMap<String, SignedForecast> {
    let seated: BTreeMap<Vec<u8>, &str> = m
        .seats
        .iter()
        .filter_map(|s| {
            let a = state.arbiters.get(&s.arbiter_id)?;
            let key = a.registration.public_key.bytes().ok()?.into_owned();
            Some((key, s.arbiter_id.as_str()))
        })
        .collect();
    let mut out = BTreeMap::new();
    for w in &m.rulings {
        let Ok(sr) = w.decode() else { continue };
        let Some(r) = sr.ruling.as_ref() else {
            continue;
        };
        if r.decision == pb::Decision::Abstain as i32 || !(0.0..=1.0).contains(&r.probability) {
            continue;
        }
        if let Some(id) = seated.get(&r.arbiter_key) {
            out.entry((*id).to_string())
                .or_insert_with(|| SignedForecast {
                    probability: r.probability,
                    receipt: r
                        .receipt
                        .as_ref()
                        .map(|x| crate::rules::hex_bytes::DigestBytes::new(x.sha256.clone())),
                });
        }
    }
    out
}

/// Called by `apply` once a motion's outcome is recorded and its answer settled. Scores
/// what the outcome resolves and flags arbiters that fail the bars. Returns what it did
/// for the reply, or `None` when the outcome resolves nothing (the reply is unchanged).
pub fn on_outcome(state: &mut State, motion_id: &str) -> Option<RecalibrationReply> {
    let f = findings(state, motion_id)?;
    if f.resolved.is_empty() && f.ambiguous_challenges.is_empty() {
        return None;
    }
    let policy = RecalibrationPolicy::default();
    let mut scored_rows = Vec::with_capacity(f.resolved.len());
    let mut touched = BTreeSet::new();
    for r in &f.resolved {
        let forecasts = state
            .motions
            .get(&r.motion_id)
            .map(|m| signed_forecasts(state, &m))
            .unwrap_or_default();
        let mut scored = Vec::new();
        for (arbiter_id, forecast) in forecasts {
            if r.content_hash.is_some() && forecast.receipt != r.content_hash {
                continue;
            }
            let item = ResolvedItem {
                motion_id: r.motion_id.clone(),
                probability: forecast.probability,
                outcome: r.truth,
                resolved_by: f.by.clone(),
            };
            if let Some(a) = state.arbiters.get_mut(&arbiter_id)
                && a.recalibration.record(item).unwrap_or(false)
            {
                touched.insert(arbiter_id.clone());
                scored.push(arbiter_id);
            }
        }
        scored_rows.push(ResolvedScored {
            motion_id: r.motion_id.clone(),
            truth: r.truth,
            scored,
        });
    }
    let mut flagged = Vec::new();
    for id in touched {
        if let Some(a) = state.arbiters.get_mut(&id)
            && a.recalibration.reassess(&policy, &f.by).unwrap_or(false)
        {
            flagged.push(id);
        }
    }
    Some(RecalibrationReply {
        by: f.by,
        resolved: scored_rows,
        ambiguous_challenges: f.ambiguous_challenges,
        flagged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::apply_batch;
    use crate::command::{ClientCommand, InternalCommand, ItemReply, Query, TestCommand};
    use crate::debates::SubmissionHints;
    use crate::model::motion_table::{MemoryArchive, MotionArchive};
    use crate::read::record;
    use crate::rules::acceptance::Stance;
    use crate::testkit::exam::{digests, exam_answers, exam_motions, exam_reveals};
    use crate::testkit::fixtures::cmd;
    use crate::testkit::keys::log_key as test_log_key;
    use crate::testkit::{Driver as Sim, EIGHTEEN, SIX, Vote, hinted};
    use crucible::motion::Answer;
    use ed25519_dalek::SigningKey;
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn challenge_motions(sim: &Sim, debate_id: &str, challenge_id: &str) -> Vec<String> {
        sim.motions_asking(
            debate_id,
            |q| matches!(q, Question::ResolveChallenge { challenge_id: c } if c == challenge_id),
        )
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn a_later_source_verification_resolves_the_earlier_decided_motion() {
        let mut sim = Sim::new(&SIX);
        let judge = |m: &Motion, _: &str| hinted(m, 0.8);
        let (d, labels) = sim.worked_example(true, &judge);
        let b1 = labels
            .resolve(sim.doc(&d), &json!("$b1"))
            .expect("label")
            .as_str()
            .expect("id")
            .to_string();
        let verifications = sim.motions_asking(
            &d,
            |q| matches!(q, Question::VerifyTier { version_id, .. } if *version_id == b1),
        );
        assert_eq!(verifications.len(), 2, "{verifications:?}");
        // Order by when they were opened: the first answered "not T1", the later one,
        // with both stances' receipts, "T1 as claimed".
        let mut by_open = verifications.clone();
        by_open.sort_by_key(|id| sim.state.motions.get(id).map(|m| m.opened_log_index));
        let (earlier, later) = (&by_open[0], &by_open[1]);
        let items = sim.items_on(earlier);
        assert_eq!(
            items.keys().cloned().collect::<BTreeSet<_>>(),
            sim.seated_on(earlier),
            "exactly the arbiters seated on the earlier motion are scored"
        );
        for item in items.values() {
            close(item.probability, 0.2); // the credence each had signed
            assert!(
                item.outcome,
                "the source was later verified at its claimed tier"
            );
            assert_eq!(item.resolved_by.motion_id, *later);
            assert_eq!(item.resolved_by.kind, ResolutionKind::SourceVerified);
        }
        // The resolving motion's own panel is not scored by its own acceptance, and
        // nothing else in the debate resolved anything.
        assert!(sim.items_on(later).is_empty());
        assert_eq!(sim.total_items(), items.len());
        // Four items are far below the bars' minimum: nobody is flagged.
        assert!(
            sim.state
                .arbiters
                .iter()
                .all(|(_, a)| !a.recalibration.is_flagged())
        );
    }

    /// A debate in construction with one claim citing a T1 source: its verification
    /// motion opens by itself.
    fn cited_claim(sim: &mut Sim, citations: usize) -> (String, String, String) {
        let d = sim.debate();
        sim.ask(
            &d,
            &Question::AdvancePhase {
                from: "framing".into(),
            },
            Some(Answer::Yes),
        );
        sim.answer_all(&d, &|m: &Motion, _: &str| hinted(m, 0.9));
        let evidence: Vec<Value> = (0..citations)
            .map(|i| json!({"source": format!("Registry report {i}"), "url": format!("http://source.test/report-{i}.txt"), "tier": "T1"}))
            .collect();
        let v = sim.contribute(
            &d,
            "ada",
            "A",
            crate::testkit::fixtures::registry_claim(evidence),
            SubmissionHints::default(),
        );
        let version = v["created"].as_str().expect("version id").to_string();
        let thread = sim.doc(&d).threads[0].id.clone();
        (d, thread, version)
    }

    #[test]
    fn a_deadlocked_verification_is_resolved_by_a_later_one_with_both_stances_receipts() {
        let mut sim = Sim::new(&SIX);
        let (d, thread, version) = cited_claim(&mut sim, 1);
        let q = Question::VerifyTier {
            thread_id: thread,
            version_id: version,
            citation_index: 0,
        };
        let first = sim.motions_asking(&d, |x| *x == q);
        assert_eq!(first.len(), 1);
        // Stance B brings no receipt and a3 fetched other bytes: the rule deadlocks,
        // whatever the votes say.
        let credence = |arbiter: &str| if arbiter.starts_with('a') { 0.7 } else { 0.4 };
        let fetched = |arbiter: &str| match arbiter {
            "a3" => Some(9),
            a if a.starts_with('a') => Some(7),
            _ => None,
        };
        let one_sided = |_: &Motion, a: &str| Vote {
            yes: true,
            p: credence(a),
            relevance: None,
            receipt: fetched(a),
        };
        let r = sim.answer(&first[0], &one_sided);
        assert!(r["verdict"]["Deadlocked"].is_object(), "{r}");
        assert!(r.get("recalibration").is_none());
        assert_eq!(sim.total_items(), 0);
        // Later both stances retrieve the same bytes and find it is not T1.
        let later = sim.ask(&d, &q, Some(Answer::No));
        let both = |_: &Motion, _: &str| Vote {
            yes: false,
            p: 0.1,
            relevance: None,
            receipt: Some(7),
        };
        let r = sim.answer(&later, &both);
        assert!(
            r["verdict"]["Accepted"]["outcome"]["TierVerified"].is_object(),
            "{r}"
        );
        assert_eq!(r["recalibration"]["by"]["motion_id"], json!(later));
        assert_eq!(r["recalibration"]["by"]["kind"], json!("source-verified"));
        let items = sim.items_on(&first[0]);
        // Only the seated arbiters whose receipt names the verified bytes are scored: no
        // receipt judged retrievability, other bytes judged another document.
        let same_bytes: BTreeSet<String> = sim
            .seated_on(&first[0])
            .into_iter()
            .filter(|a| fetched(a) == Some(7))
            .collect();
        assert!(!same_bytes.is_empty());
        assert_eq!(items.keys().cloned().collect::<BTreeSet<_>>(), same_bytes);
        for (arbiter, item) in &items {
            close(item.probability, credence(arbiter));
            assert!(!item.outcome);
        }
        assert_eq!(sim.total_items(), items.len());
        // A third verification adds nothing for the first motion (its first resolution
        // stands) and scores the second one.
        let third = sim.ask(&d, &q, Some(Answer::Yes));
        sim.answer(&third, &|_: &Motion, _: &str| Vote {
            yes: true,
            p: 0.6,
            relevance: None,
            receipt: Some(7),
        });
        assert_eq!(sim.items_on(&first[0]), items);
        assert_eq!(sim.items_on(&later).len(), sim.seated_on(&later).len());
        assert!(
            sim.items_on(&later)
                .values()
                .all(|i| i.outcome && i.probability == 0.1)
        );
    }

    /// Every read a query or an apply makes answers the same whether decided motions are
    /// held or retired to the archive (`motion_table`): the same replies entry by entry,
    /// the same query answers, and the same state once the archive is read back.
    #[test]
    fn retired_motions_read_and_apply_as_held_ones() {
        fn play(retire: Option<usize>) -> (Sim, String, Option<Arc<MemoryArchive>>) {
            let mut sim = Sim::new(&EIGHTEEN);
            let archive = retire.map(|w| sim.retire_into(w));
            let (d, labels) = sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
            sim.appeal(&d, &labels, "bo", "B", &["a1", "a2"], false);
            (sim, d, archive)
        }
        let (plain, d, _) = play(None);
        // The prior check's window as a replica keeps it, and nothing held at all: the
        // scenario runs no prior check, so even that must answer the same.
        for window in [crate::features::priors::PRIOR_CHECK_WINDOW, 0] {
            let (mut retired, d2, archive) = play(Some(window));
            let archive = archive.expect("archive");
            assert_eq!(d, d2);
            assert_eq!(plain.replies, retired.replies, "window {window}");
            if window == 0 {
                assert!(
                    retired.state.motions.held_count() < plain.state.motions.len() / 4,
                    "{} of {} held",
                    retired.state.motions.held_count(),
                    plain.state.motions.len()
                );
            }
            let mut ids = Vec::new();
            plain
                .state
                .motions
                .for_each(|m| ids.push(m.spec.motion_id.clone()));
            let mut queries = vec![
                Query::Stats,
                Query::Debates,
                Query::Debate {
                    debate_id: d.clone(),
                },
                Query::DebateMotions {
                    debate_id: d.clone(),
                },
                Query::Motions { limit: None },
                Query::Motions { limit: Some(3) },
                Query::Export,
                Query::Runs,
            ];
            queries.extend(ids.into_iter().map(|motion_id| Query::Motion { motion_id }));
            for q in &queries {
                assert_eq!(
                    crate::read::query::query(&plain.state, q),
                    crate::read::query::query(&retired.state, q),
                    "{q:?}"
                );
            }
            let mut all = Vec::new();
            archive.for_each(&mut |m| all.push(m));
            retired.state.motions.restore(all);
            assert_eq!(
                serde_json::to_value(&plain.state).expect("state"),
                serde_json::to_value(&retired.state).expect("state")
            );
        }
    }

    #[test]
    fn a_denied_appeal_confirms_the_challenge_outcomes_it_contests() {
        let mut sim = Sim::new(&EIGHTEEN);
        let (d, labels) = sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
        assert_eq!(sim.total_items(), 0);
        // Side B appeals on A's two threads, where its three challenges were dismissed.
        let reply = sim.appeal(&d, &labels, "bo", "B", &["a1", "a2"], false);
        assert_eq!(sim.doc(&d).appeals[0].status, "denied");
        assert_eq!(reply["recalibration"]["by"]["kind"], json!("appeal"));
        let contested: Vec<String> = sim
            .doc(&d)
            .challenges
            .iter()
            .filter(|c| c.side.as_deref() == Some("B"))
            .map(|c| c.id.clone())
            .collect();
        assert_eq!(contested.len(), 3);
        let mut scored = 0;
        for c in &contested {
            for m in challenge_motions(&sim, &d, c) {
                let items = sim.items_on(&m);
                assert_eq!(
                    items.keys().cloned().collect::<BTreeSet<_>>(),
                    sim.seated_on(&m)
                );
                for item in items.values() {
                    close(item.probability, 0.2);
                    assert!(!item.outcome, "the dismissal stands");
                    assert_eq!(item.resolved_by.kind, ResolutionKind::Appeal);
                }
                scored += items.len();
            }
        }
        assert_eq!(scored, 12, "three challenge motions, four seats each");
        // A's challenges (on B's threads) are not what B appeals.
        assert_eq!(sim.total_items(), scored);
    }

    #[test]
    fn an_admitted_appeal_overturns_the_one_challenge_it_contests() {
        let mut sim = Sim::new(&EIGHTEEN);
        let (d, labels) = sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
        // Side B appeals on B2's thread, where A's challenge was upheld.
        sim.appeal(&d, &labels, "bo", "B", &["b2"], true);
        assert_eq!(sim.doc(&d).phase, "appeal-review");
        let b2_thread = labels
            .resolve(sim.doc(&d), &json!("$b2.thread"))
            .expect("label");
        let upheld: Vec<String> = sim
            .doc(&d)
            .challenges
            .iter()
            .filter(|c| json!(c.thread_id) == b2_thread)
            .map(|c| c.id.clone())
            .collect();
        assert_eq!(upheld.len(), 1);
        let motions = challenge_motions(&sim, &d, &upheld[0]);
        assert_eq!(motions.len(), 1);
        let items = sim.items_on(&motions[0]);
        assert_eq!(items.len(), 4);
        for item in items.values() {
            close(item.probability, 0.8);
            assert!(!item.outcome, "the upheld challenge is overturned");
        }
        assert_eq!(sim.total_items(), 4);
    }

    #[test]
    fn an_admitted_appeal_contesting_several_challenges_scores_none() {
        let mut sim = Sim::new(&EIGHTEEN);
        let (d, labels) = sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
        let reply = sim.appeal(&d, &labels, "bo", "B", &["a1", "a2"], true);
        assert_eq!(
            reply["recalibration"]["ambiguous_challenges"]
                .as_array()
                .map(Vec::len),
            Some(3),
            "{reply}"
        );
        assert_eq!(sim.total_items(), 0);
    }

    /// From rule set `APPEALS_WAIT` an appeal that no fresh panel can seat is not denied:
    /// it waits with its reason, naming who can end the wait, and opens once arbiters who
    /// have not sat on what it contests can serve (docs/PANEL.md "Fresh panels": no appeal is lost by
    /// bookkeeping).
    #[test]
    fn an_appeal_no_fresh_panel_can_seat_waits_instead_of_being_denied() {
        let mut sim = Sim::new(&SIX);
        let (d, labels) = sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
        sim.rules = Some(crate::rules::CURRENT);
        let targets: Vec<Value> = ["a1", "a2"]
            .iter()
            .map(|t| {
                labels
                    .resolve(sim.doc(&d), &json!(format!("${t}.thread")))
                    .expect("label")
            })
            .collect();
        let v = sim.contribute(
            &d,
            "bo",
            "B",
            json!({"op": "appeal", "ground": "A2", "justification": "The panel resolved these challenges before the response filed in time was shown to it.", "evidence": [], "targetThreadIds": targets}),
            SubmissionHints::default(),
        );
        assert_eq!(v["opened"], json!([]), "all six sat: no fresh panel");
        assert_eq!(sim.doc(&d).appeals[0].status, "filed", "not denied");
        let rec = sim.state.debates.get(&d).expect("debate");
        let reason = rec
            .waiting
            .values()
            .next()
            .expect("a waiting appeal")
            .clone();
        assert!(reason.contains("waiting for a panel"), "{reason}");
        assert!(
            reason.contains(&format!("panel arbiter declare --debate {d}")),
            "{reason}"
        );
        assert!(rec.exhausted.is_empty(), "nothing given up");
        // Six arbiters who sat on nothing join; the next write to the debate seats it.
        for (id, stance, org) in [
            ("a7", Stance::A, "o6"),
            ("a8", Stance::A, "o7"),
            ("a9", Stance::A, "o8"),
            ("b7", Stance::B, "o6"),
            ("b8", Stance::B, "o7"),
            ("b9", Stance::B, "o8"),
        ] {
            sim.add_arbiter(id, stance, org);
        }
        let v = sim.ok(ClientCommand::ReissueVerdict {
            debate_id: d.clone(),
            author: "x".into(),
        });
        let opened: Vec<String> = serde_json::from_value(v["opened"].clone()).expect("ids");
        assert!(
            opened.iter().any(|id| matches!(
                sim.state
                    .motions
                    .get(id)
                    .and_then(|m| m.spec.question.clone()),
                Some(Question::AdmitAppeal { .. })
            )),
            "{opened:?}"
        );
        assert!(
            sim.state
                .debates
                .get(&d)
                .expect("debate")
                .waiting
                .is_empty()
        );
    }

    #[test]
    fn agreement_with_the_majority_alone_changes_no_track_record() {
        let mut sim = Sim::new(&SIX);
        // Every panel unanimous and nearly certain, the whole worked example long (tier
        // verifications with both stances' receipts included), but nothing resolves a
        // question a second time.
        let (d, _) = sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.99));
        let accepted = sim
            .state
            .motions
            .iter_held()
            .filter(|(_, m)| matches!(&m.status, MotionStatus::Decided(v) if v.is_accepted()))
            .count();
        assert!(accepted >= 20, "{accepted} accepted motions");
        assert!(!sim.doc(&d).verdicts.is_empty());
        // A raw motion decided 4-0 as well.
        sim.ok(TestCommand::OpenMotion(cmd(json!({
            "motion_id": "raw-1", "debate_id": "raw", "kind": "Merge",
            "state_hash": "ab".repeat(32), "seats": 4, "min_per_stance": 2,
        }))));
        let r = sim.answer("raw-1", &|_: &Motion, _: &str| Vote {
            yes: true,
            p: 0.99,
            relevance: None,
            receipt: None,
        });
        assert!(r["verdict"]["Accepted"].is_object(), "{r}");
        for (id, a) in sim.state.arbiters.iter() {
            assert!(a.recalibration.is_empty(), "{id}: {:?}", a.recalibration);
            let row = serde_json::to_value(a).expect("json");
            assert!(
                row.get("recalibration").is_none(),
                "an empty record is not serialised"
            );
        }
        for e in sim.state.record.iter() {
            if let ItemReply::Applied(v) = &e.reply {
                assert!(v.get("recalibration").is_none(), "{v}");
            }
        }
    }

    fn refused_exam(reply: ItemReply<crate::reply::Reply>) -> String {
        match reply {
            ItemReply::Refused { code, message } => {
                assert_eq!(code, "exam_refused", "{message}");
                message
            }
            other => panic!("an exam that should be refused applied: {other:?}"),
        }
    }

    /// Rule set `EXAM_MOTIONS`: an exam counts only with the signed motions its answers
    /// bind, each exactly one of the exam's items, so a driver (the leader) cannot examine
    /// an arbiter on content of its choosing, or submit answers to motions it hides.
    #[test]
    fn exam_answers_count_only_with_the_exam_motions_they_answer() {
        let mut sim = Sim::new(&SIX[..4]);
        sim.rules = Some(crate::rules::MEASURED_ERRORS);
        let key = SigningKey::from_bytes(&[41; 32]);
        sim.ok(ClientCommand::RegisterArbiter(cmd(json!({
            "arbiter_id": "new", "public_key": hex::encode(key.verifying_key().to_bytes()),
            "organisation": "o9", "model_family": "fam-new", "stance": Stance::A,
        }))));
        let honest = exam_motions("new", |_| {});
        let wire = |ms: &[pb::Motion]| ms.iter().map(crate::rules::signed_motion::encode).collect();
        let exam = |reveals: Vec<crate::rules::hex_bytes::RevealBytes>,
                    motions: Vec<crate::rules::signed_motion::WireMotion>| {
            InternalCommand::SubmitExam {
                arbiter_id: "new".into(),
                reveals,
                motions,
                sitting: None,
            }
        };

        // Answers bound to the motions, but the motions left out.
        let why =
            refused_exam(sim.write(exam(exam_answers(&key, "new", &digests(&honest)), vec![])));
        assert!(why.contains("carries no signed motion"), "{why}");
        // Unbound (v1) answers with the motions: each ruling must bind its motion.
        let why = refused_exam(sim.write(exam(exam_reveals(&key, "new"), wire(&honest))));
        assert!(why.contains("does not answer"), "{why}");
        // A motion whose question the driver rewrote (easier, or misleading), signed and
        // answered as it was put: refused, whoever signed it.
        let first = &crate::features::admission::default_exam()
            .expect("exam")
            .items[0]
            .id;
        let altered = exam_motions("new", |m| {
            if m.motion_id.ends_with(first.as_str())
                && let Some(p) = m.projection.as_mut()
            {
                p.question = "Is water wet?".into();
            }
        });
        let why = refused_exam(sim.write(exam(
            exam_answers(&key, "new", &digests(&altered)),
            wire(&altered),
        )));
        assert!(why.contains("differs from item"), "{why}");
        // Answers bound to another round's motions (other deadlines) than those carried.
        let other_round = exam_motions("new", |m| m.reveal_deadline_unix_ms += 1);
        let why = refused_exam(sim.write(exam(
            exam_answers(&key, "new", &digests(&other_round)),
            wire(&honest),
        )));
        assert!(why.contains("does not answer"), "{why}");
        // A motion of another arbiter's exam.
        let foreign = exam_motions("a1", |_| {});
        let why = refused_exam(sim.write(exam(
            exam_answers(&key, "new", &digests(&honest)),
            wire(&foreign),
        )));
        assert!(why.contains("is not an item of new's exam"), "{why}");
        assert!(!sim.state.arbiters.get("new").expect("new").admitted);

        // An older leader's unstamped batch cannot switch the rule off.
        sim.rules = None;
        let why = refused_exam(sim.write(exam(exam_reveals(&key, "new"), vec![])));
        assert!(
            why.contains("carries no signed motion") || why.contains("does not answer"),
            "{why}"
        );

        // The honest submission: every answer bound to the exam motion it answers.
        let v = sim.ok(exam(
            exam_answers(&key, "new", &digests(&honest)),
            wire(&honest),
        ));
        assert_eq!(v["admitted"], json!(true), "{}", v["exam"]["decision"]);
        // Every entry names the rule set it applied under, and the record replays.
        let last = sim.state.record.iter().last().expect("entry");
        assert_eq!(last.rules, Some(crate::rules::MEASURED_ERRORS));
        let log_key = test_log_key();
        let bundle = record::export(&sim.state, Some(&log_key));
        record::verify(&bundle).expect("the record replays under its rule sets");
        // A record whose rule set drops after it rose is not what replicas wrote.
        let mut forged = bundle.clone();
        let at = forged
            .entries
            .iter()
            .position(|e| e.rules.is_some())
            .expect("a stamped entry");
        for e in forged.entries.iter_mut().skip(at + 1) {
            e.rules = None;
        }
        let err = record::verify(&forged).expect_err("a dropped rule set is refused");
        assert!(
            err.to_string().contains("never lowers the rule set"),
            "{err}"
        );
    }

    fn open_raw(sim: &mut Sim, id: &str) -> ItemReply<crate::reply::Reply> {
        sim.write(TestCommand::OpenMotion(cmd(json!({
            "motion_id": id, "debate_id": "raw", "kind": "Merge",
            "state_hash": "ab".repeat(32), "seats": 4, "min_per_stance": 2,
        }))))
    }

    #[test]
    fn a_badly_calibrated_arbiter_is_flagged_and_not_drawn_until_reexamined() {
        // Four arbiters and four seats: everyone sits on every motion.
        let four = [SIX[0], SIX[1], SIX[3], SIX[4]];
        let mut sim = Sim::new(&four);
        let n = RecalibrationPolicy::default().min_resolved;
        let (d, thread, version) = cited_claim(&mut sim, n);
        let truth = |i: u32| i.is_multiple_of(2);
        let index = |m: &Motion| match &m.spec.question {
            Some(Question::VerifyTier { citation_index, .. }) => *citation_index,
            _ => panic!("not a verification"),
        };
        // a1 says 0.9 on everything; the others track the truth. All fetch the same
        // bytes, but the stances split, so every first verification deadlocks.
        let first = move |m: &Motion, a: &str| Vote {
            yes: a.starts_with('a'),
            p: if a == "a1" {
                0.9
            } else if truth(index(m)) {
                0.85
            } else {
                0.15
            },
            relevance: None,
            receipt: Some(7),
        };
        let firsts = sim.motions_asking(&d, |q| matches!(q, Question::VerifyTier { .. }));
        assert_eq!(firsts.len(), n);
        for id in &firsts {
            let r = sim.answer(id, &first);
            assert!(r["verdict"]["Deadlocked"].is_object());
        }
        let settle = move |m: &Motion, _: &str| Vote {
            yes: truth(index(m)),
            p: 0.5,
            relevance: None,
            receipt: Some(7),
        };
        for i in 0..n as u32 {
            let q = Question::VerifyTier {
                thread_id: thread.clone(),
                version_id: version.clone(),
                citation_index: i,
            };
            let later = sim.ask(&d, &q, None);
            let r = sim.answer(&later, &settle);
            let flagged = r["recalibration"]["flagged"].clone();
            if i + 1 < n as u32 {
                assert_eq!(flagged, json!([]), "item {i}: below the minimum");
            } else {
                assert_eq!(
                    flagged,
                    json!(["a1"]),
                    "the {n}th item crosses the bars: {r}"
                );
            }
        }
        let a1 = sim.state.arbiters.get("a1").expect("a1");
        let flag = a1.recalibration.flag.as_ref().expect("flagged");
        // 15 yes and 15 no at 0.9: Brier (15*0.01 + 15*0.81)/30 = 0.41 against 0.25;
        // log score -(ln 0.9 + ln 0.1)/2 = 1.2040.
        let bars: Vec<&str> = flag
            .assessment
            .failed
            .iter()
            .map(|f| f.bar.as_str())
            .collect();
        assert_eq!(bars, ["brier_skill", "log_score"]);
        let s = flag.assessment.scores.expect("scores");
        assert_eq!((s.count, s.yes), (30, 15));
        assert!((s.brier - 0.41).abs() < 1e-12);
        assert!((s.log_score + (0.9f64.ln() + 0.1f64.ln()) / 2.0).abs() < 1e-12);
        assert!(a1.admitted, "flagging does not revoke admission");
        for other in ["a2", "b1", "b2"] {
            let a = sim.state.arbiters.get(other).expect("arbiter");
            assert_eq!(a.recalibration.items.len(), n);
            assert!(!a.recalibration.is_flagged(), "{other}");
        }
        // Three drawable arbiters cannot fill four seats.
        let r = open_raw(&mut sim, "after-flag");
        assert!(
            matches!(&r, ItemReply::Refused { code, .. } if code == "draw_failed"),
            "{r:?}"
        );
        // With a fifth arbiter the panels fill, never with a1.
        sim.add_arbiter("a3", Stance::A, "o3");
        for k in 0..12 {
            let id = format!("flagged-{k}");
            assert!(matches!(open_raw(&mut sim, &id), ItemReply::Applied(_)));
            assert!(
                !sim.seated_on(&id).contains("a1"),
                "a flagged arbiter was drawn"
            );
        }
        // A re-exam clears the flag, keeps the history and puts a1 back in the draw.
        let reveals = exam_reveals(&sim.keys["a1"], "a1");
        let v = sim.ok(InternalCommand::SubmitExam {
            arbiter_id: "a1".into(),
            reveals,
            motions: vec![],
            sitting: None,
        });
        assert_eq!(v["admitted"], json!(true), "{}", v["exam"]["decision"]);
        let a1 = sim.state.arbiters.get("a1").expect("a1");
        assert!(!a1.recalibration.is_flagged());
        assert_eq!(a1.recalibration.items.len(), n);
        assert!(a1.recalibration.window().is_empty());
        let drawn = (0..12).any(|k| {
            let id = format!("reexamined-{k}");
            assert!(matches!(open_raw(&mut sim, &id), ItemReply::Applied(_)));
            sim.seated_on(&id).contains("a1")
        });
        assert!(drawn, "a re-examined arbiter is drawn again");
    }

    /// Under a policy that schedules it, the prior-consistency check runs by itself every
    /// N decided motions, inside apply: its findings are in the deciding entry's reply and
    /// on every arbiter, with nobody sending `CheckPriors`, and the record still verifies.
    #[test]
    fn a_scheduled_prior_check_runs_by_itself_on_the_record() {
        let mut sim = Sim::new(&SIX);
        sim.policy =
            Some(json!({"quorum": null, "min_net_support_per_side": 1, "prior_check_every": 4}));
        sim.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
        let checks: Vec<Value> = sim
            .state
            .record
            .iter()
            .filter_map(|e| match &e.reply {
                ItemReply::Applied(v) => v.get("prior_check").cloned(),
                _ => None,
            })
            .collect();
        assert!(checks.len() >= 2, "{checks:?}");
        assert!(
            checks
                .iter()
                .all(|c| c["after_decided_motions"].as_u64().unwrap_or(1) % 4 == 0),
            "{checks:?}"
        );
        assert!(
            !sim.state
                .record
                .iter()
                .any(|e| e.command.kind() == "CheckPriors"),
            "nobody asked for a check"
        );
        assert!(
            checks.iter().any(|c| c.get("result").is_some()),
            "no scheduled check ran to the end: {checks:?}"
        );
        assert_eq!(
            checks.iter().any(|c| c.get("result").is_some()),
            sim.state
                .arbiters
                .iter()
                .any(|(_, a)| a.prior_check.is_some()),
            "findings are on the arbiters exactly when a scheduled check ran: {checks:?}"
        );
        let log_key = test_log_key();
        let bundle = crate::read::record::export(&sim.state, Some(&log_key));
        crate::read::record::verify(&bundle).expect("the record verifies");
        // Without the schedule no check runs.
        let mut plain = Sim::new(&SIX);
        plain.worked_example(false, &|m: &Motion, _: &str| hinted(m, 0.8));
        assert!(plain.state.record.iter().all(|e| match &e.reply {
            ItemReply::Applied(v) => v.get("prior_check").is_none(),
            _ => true,
        }));
    }

    #[test]
    fn replay_is_deterministic_and_the_record_verifies_offline() {
        let mut sim = Sim::new(&EIGHTEEN);
        let (d, labels) = sim.worked_example(true, &|m: &Motion, _: &str| hinted(m, 0.8));
        sim.appeal(&d, &labels, "bo", "B", &["b2"], true);
        assert!(sim.total_items() > 4);
        // The same commands on two fresh states give equal states.
        let mut a = State::default();
        let mut b = State::default();
        for (i, batch) in sim.batches.iter().enumerate() {
            apply_batch(
                &mut a,
                i as u64 + 1,
                batch,
                &panel_proto::VerifiedMemo::default(),
            );
            apply_batch(
                &mut b,
                i as u64 + 1,
                batch,
                &panel_proto::VerifiedMemo::default(),
            );
        }
        let json_of = |s: &State| serde_json::to_value(s).expect("json");
        assert_eq!(json_of(&a), json_of(&b));
        assert_eq!(json_of(&a), json_of(&sim.state));
        // `panel verify` re-applies the record and compares the arbiters, track records
        // included.
        let log_key = test_log_key();
        let bundle = record::export(&sim.state, Some(&log_key));
        record::verify(&bundle).expect("the record verifies");
        // A track record edited in the export is caught.
        let mut forged = bundle.clone();
        let row = forged
            .arbiters
            .iter_mut()
            .find(|a| a.get("recalibration").is_some())
            .expect("a scored arbiter");
        row["recalibration"]["items"][0]["probability"] = json!(0.5);
        let e = record::verify(&forged).unwrap_err();
        assert!(matches!(e, record::Failure::Arbiters { .. }), "{e}");
    }
}
