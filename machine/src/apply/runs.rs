//! Procedure-run commands (docs/PROCEDURES.md): starting a run (its deterministic checks
//! run here, in apply, so every replica and `panel verify` refuse the same inputs), a
//! role's input, and, from the motion close, the panel's answer handed back to the run.
//! Each may open motions for the questions the run then asks.

use panel_procedures::{PanelQuestion, Run, StartContext};

use crate::apply::error::{ApplyError, non_empty};
use crate::command::MotionSpec;
use crate::model::ApplyCtx;
use crate::model::{Motion, State};
use crate::reply::{Reply, RunInputReply, RunSettledReply, StartRunReply};
use crate::rules::acceptance::Acceptance;
use crate::rules::ruling::WireRuling;
use crate::runs::{self, RulingView, RunInputSubmission, RunMotion, RunRecord, RunRequest};

/// Runs a replica holds before new runs are refused (each holds its documents in
/// memory on every replica).
pub const MAX_RUNS: usize = 10_000;

fn run_mut<'a>(state: &'a mut State, id: &str) -> Result<&'a mut RunRecord, ApplyError> {
    state
        .runs
        .get_mut(id)
        .ok_or_else(|| ApplyError::UnknownRun(id.to_owned()))
}

pub(super) fn start_run(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    req: &RunRequest,
) -> Result<Reply, ApplyError> {
    non_empty("convener", &req.convener)?;
    crate::features::breakers::refuse_if_paused(state, crate::log::breaker_order::Scope::Motions)?;
    crate::features::run_convener::check(state, req, client_id, request_id, ctx.memo)?;
    if state.runs.len() >= MAX_RUNS {
        return Err(ApplyError::TooManyRuns { max: MAX_RUNS });
    }
    if let Some(earlier) = &req.retry_of
        && !state.runs.contains(earlier)
    {
        return Err(ApplyError::UnknownRun(earlier.clone()));
    }
    let floors = crate::features::charter_rules::floors(state.charter.as_ref());
    let policy = match &req.policy {
        Some(p) => p.clone(),
        // From the beacon's rule set on, a chartered group's run without a policy keeps
        // the head-count rule its seats were sized for, but its panels are drawn by the
        // beacon, never from the leader's batch seed (docs/SECURITY.md "The beacon").
        None if state.rules >= crate::rules::BEACON_DRAW && state.charter.is_some() => {
            crate::rules::acceptance::Policy {
                independence: crate::rules::acceptance::Independence {
                    unsteerable_draw: true,
                    ..Default::default()
                },
                ..Default::default()
            }
        }
        None => crate::rules::acceptance::Policy::default(),
    };
    crate::features::charter_rules::check_policy(&floors, &policy, req.min_per_stance)?;
    let run_id = format!("run_{}", state.runs.len() + 1);
    let start_ctx = StartContext {
        run_id: run_id.clone(),
        seed: run_seed(state, ctx, &run_id, req)?,
        simulation: req.simulation,
    };
    let run = Run::start(req.start.clone(), &start_ctx)?;
    let role_keys = if req.role_keys.is_empty() && state.v2_rules {
        Default::default()
    } else {
        crate::features::run_roles::check_start(&run, &req.role_keys)?
    };
    families_leave_a_panel(state, &run, req.min_per_stance.max(1))?;
    let kind = run.kind();
    state.runs.insert(
        run_id.clone(),
        RunRecord {
            run,
            convener: req.convener.clone(),
            started_at_ms: ctx.time_ms,
            started_log_index: ctx.log_index,
            policy,
            seats: req.seats.max(2),
            min_per_stance: req.min_per_stance.max(1),
            simulation: req.simulation,
            retry_of: req.retry_of.clone(),
            role_keys,
            start_signature: req
                .signature
                .as_ref()
                .map(crate::features::run_convener::canonical),
            open: Default::default(),
            questions: Default::default(),
            settled: Vec::new(),
            refused_settlements: Default::default(),
            abandoned: Vec::new(),
        },
    );
    let opened = open_pending(state, ctx, &run_id);
    Ok(Reply::from(StartRunReply {
        run_id,
        kind,
        opened,
    }))
}

pub(super) fn submit_input(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    sub: &RunInputSubmission,
) -> Result<Reply, ApplyError> {
    let rec = run_mut(state, &sub.run_id)?;
    crate::features::run_roles::check_input(&rec.role_keys, sub, client_id, request_id, ctx.memo)?;
    // A refused input leaves the run as it was: submit on a copy, keep it only if taken.
    let mut run = rec.run.clone();
    run.submit(sub.input.clone())?;
    rec.run = run;
    let opened = open_pending(state, ctx, &sub.run_id);
    Ok(Reply::from(RunInputReply {
        run_id: sub.run_id.clone(),
        opened,
    }))
}

/// Refuses a run whose advocates' model families leave too few admitted arbiters of
/// either stance to seat its panels (crux.txt: the mediator is "on a different model
/// family than the debaters"), naming the families and the fix, rather than starting a
/// run no panel could ever answer.
fn families_leave_a_panel(
    state: &State,
    run: &Run,
    min_per_stance: usize,
) -> Result<(), ApplyError> {
    let families = run.excluded_families();
    if families.is_empty() {
        return Ok(());
    }
    let eligible = |stance: crate::rules::acceptance::Stance, exclude: bool| {
        state
            .arbiters
            .iter()
            .filter(|(_, a)| a.admitted && !a.recalibration.is_flagged())
            .filter(|(_, a)| a.seated_stance() == stance)
            .filter(|(_, a)| {
                !exclude
                    || !families
                        .iter()
                        .any(|f| f.eq_ignore_ascii_case(a.registration.model_family.trim()))
            })
            .count()
    };
    let seatable = |exclude: bool| {
        eligible(crate::rules::acceptance::Stance::A, exclude) >= min_per_stance
            && eligible(crate::rules::acceptance::Stance::B, exclude) >= min_per_stance
    };
    // Only the families' own effect is refused here: a pool too small for any panel
    // leaves the run waiting for admissions, as a debate's motions wait.
    if seatable(true) || !seatable(false) {
        return Ok(());
    }
    let (a, b) = (
        eligible(crate::rules::acceptance::Stance::A, true),
        eligible(crate::rules::acceptance::Stance::B, true),
    );
    Err(panel_procedures::ProcedureError::refused(
        "run.advocate_families",
        "advocates",
        format!(
            "arbiters of the advocates' model families ({}) never sit on this run, which leaves {a} admitted arbiter(s) of stance A and {b} of stance B, fewer than the {min_per_stance} per stance a panel needs; admit arbiters of other families or have other families advocate",
            families.join(", ")
        ),
    )
    .into())
}

/// Arbiters never seated on a run's question: those the question excludes (earlier
/// panels, for a fresh one) and those of a model family the run keeps off its panels
/// (the advocates' families: crux.txt, "a mediator, on a different model family").
fn excluded(state: &State, run: &Run, q: &PanelQuestion) -> Vec<String> {
    let families = run.excluded_families();
    let mut out: Vec<String> = q.exclude.clone();
    out.extend(
        state
            .arbiters
            .iter()
            .filter(|(_, a)| {
                let f = a.registration.model_family.trim();
                !f.is_empty() && families.iter().any(|x| x.eq_ignore_ascii_case(f))
            })
            .map(|(id, _)| id.clone()),
    );
    out.sort();
    out.dedup();
    out
}

/// A run's seed: under the beacon's rule set a hash of the run's id and start, so neither
/// the leader's batch seed nor its stamps choose it; before, the batch-derived seed.
fn run_seed(
    state: &State,
    ctx: &ApplyCtx,
    run_id: &str,
    req: &RunRequest,
) -> Result<u64, ApplyError> {
    if state.rules < crate::rules::BEACON_DRAW {
        return Ok(ctx.derive_seed(run_id));
    }
    let start = crate::authorship::json_digest("the run's start", &req.start)?;
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"crucible-panel/run-seed/v1\0");
    h.update((run_id.len() as u64).to_be_bytes());
    h.update(run_id.as_bytes());
    h.update(start);
    Ok(crate::model::seed_of(h))
}

fn open_question(
    state: &mut State,
    ctx: &ApplyCtx,
    run_id: &str,
    q: PanelQuestion,
    n: u32,
) -> Result<String, ApplyError> {
    // A paused federation opens nothing; the question waits for the pause to end.
    crate::features::breakers::refuse_if_paused(state, crate::log::breaker_order::Scope::Motions)?;
    let rec = state
        .runs
        .get(run_id)
        .ok_or_else(|| ApplyError::UnknownRun(run_id.to_owned()))?;
    let motion_id = ctx.new_id("mot", n);
    let rec_seats = rec.seats;
    let spec = MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: run_id.to_owned(),
        kind: crate::rules::acceptance::MotionKind::Procedure,
        state_hash: runs::state_hash(&rec.run).map_err(|e| ApplyError::Unencodable {
            what: "the run's state",
            reason: e.to_string(),
        })?,
        seats: rec.seats + q.extra_seats as usize,
        min_per_stance: rec.min_per_stance,
        contributors: excluded(state, &rec.run, &q),
        author_model_family: None,
        policy: Some(rec.policy.clone()),
        question: None,
        projection: Some(crucible::motion::Projection {
            question: q.prompt.clone(),
            resolution: String::new(),
            items: q
                .items
                .iter()
                .map(|i| crucible::motion::ProjectionItem {
                    label: i.label.clone(),
                    text: i.text.clone(),
                    side: None,
                    citations: Vec::new(),
                })
                .collect(),
        }),
        expected: None,
        procedure: Some(RunMotion {
            run_id: run_id.to_owned(),
            key: q.key.clone(),
            shape: q.shape,
            shuffle_items: q.shuffle_items,
            labels: q.items.iter().map(|i| i.label.clone()).collect(),
            expected: if rec.simulation {
                q.expected.clone()
            } else {
                None
            },
        }),
        final_panel_of: None,
    };
    // A fresh panel's exclusions still hold at the fallback size.
    super::motion_open::open_widened(state, ctx, &spec, rec_seats)?;
    if let Some(rec) = state.runs.get_mut(run_id) {
        rec.open.insert(q.key.clone(), motion_id.clone());
        rec.questions.insert(motion_id.clone(), q);
    }
    Ok(motion_id)
}

/// Opens a motion for every question the run asks now. A question whose panel cannot be
/// drawn yet (too few eligible arbiters) stays pending and is tried after the next write.
pub(super) fn open_pending(state: &mut State, ctx: &ApplyCtx, run_id: &str) -> Vec<String> {
    let Some(rec) = state.runs.get(run_id) else {
        return Vec::new();
    };
    let mut opened = Vec::new();
    for (i, q) in rec.to_open().into_iter().enumerate() {
        if let Ok(id) = open_question(state, ctx, run_id, q, 2000 + i as u32) {
            opened.push(id);
        }
    }
    opened
}

/// Hands a decided procedure motion back to its run: the settlement from every counted
/// ruling (with the order each arbiter was shown the items), then what the run asks next.
pub(super) fn settle_motion(
    state: &mut State,
    ctx: &ApplyCtx,
    motion_id: &str,
    verdict: &Acceptance,
) -> Option<RunSettledReply> {
    let motion = state.motions.get(motion_id)?;
    let m = motion.spec.procedure.clone()?;
    let settlement = {
        let views = ruling_views(state, &motion);
        runs::settlement(&m, motion_id, motion.draw_seed, verdict, &views)
    };
    let v2_rules = state.v2_rules;
    let rec = state.runs.get_mut(&m.run_id)?;
    rec.open.remove(&m.key);
    let settled = if v2_rules {
        settle_once(rec, &settlement)
    } else {
        settle_bounded(rec, &settlement)
    };
    rec.settled.push(runs::SettledQuestion {
        key: m.key.clone(),
        motion_id: motion_id.to_owned(),
        outcome: settlement.outcome,
    });
    let opened = open_pending(state, ctx, &m.run_id);
    Some(RunSettledReply {
        run_id: m.run_id,
        key: m.key,
        outcome: settlement.outcome,
        settled: settled.map(|()| true).map_err(|e| e.to_string()),
        opened,
    })
}

/// Hands the settlement to the run; a refused one leaves the run as it was.
fn settle_once(
    rec: &mut RunRecord,
    settlement: &panel_procedures::Settlement,
) -> Result<(), panel_procedures::ProcedureError> {
    let mut run = rec.run.clone();
    run.settle(settlement)?;
    rec.run = run;
    Ok(())
}

/// Hands the settlement to the run; a refused one leaves the run as it was and the
/// question is asked again, at most [`runs::MAX_REFUSED_SETTLEMENTS`] times: then the run
/// is told the question deadlocked, and if it refuses that too the question is abandoned.
fn settle_bounded(
    rec: &mut RunRecord,
    settlement: &panel_procedures::Settlement,
) -> Result<(), panel_procedures::ProcedureError> {
    let Err(refused) = settle_once(rec, settlement) else {
        return Ok(());
    };
    let count = rec
        .refused_settlements
        .entry(settlement.key.clone())
        .or_default();
    *count += 1;
    if *count < runs::MAX_REFUSED_SETTLEMENTS {
        return Err(refused);
    }
    let deadlock = panel_procedures::Settlement {
        outcome: panel_procedures::PanelOutcome::Deadlocked,
        rulings: Vec::new(),
        ..settlement.clone()
    };
    let mut run = rec.run.clone();
    if run.settle(&deadlock).is_ok() {
        rec.run = run;
    } else {
        rec.abandoned.push(settlement.key.clone());
    }
    Err(refused)
}

/// The motion's counted rulings, each with the seat that signed it.
fn ruling_views<'a>(state: &State, motion: &'a Motion) -> Vec<RulingView<'a>> {
    let mut out = Vec::new();
    for wire in &motion.rulings {
        let Ok(sr) = WireRuling::decode(wire) else {
            continue;
        };
        let Some(r) = sr.ruling else { continue };
        let key_hex = hex::encode(&r.arbiter_key);
        let Some((seat, arbiter)) = motion.seats.iter().find_map(|s| {
            let a = state.arbiters.get(&s.arbiter_id)?;
            a.holds_or_held(&key_hex).then_some((s, a))
        }) else {
            continue;
        };
        out.push(RulingView {
            seat,
            arbiter_key: crate::rules::hex_bytes::PublicKeyBytes::from_hex(&key_hex),
            model_family: Some(arbiter.registration.model_family.clone())
                .filter(|f| !f.trim().is_empty()),
            decision: r.decision(),
            probability: r.probability,
            rationale: r.rationale.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_procedures::{PanelOutcome, PanelRuling, Prior, RunStart, Settlement, crux};

    fn crux_record() -> RunRecord {
        let start = crux::decode_start(crux::eval::BASELINE.as_bytes()).expect("baseline");
        let ctx = StartContext {
            run_id: "run_1".into(),
            seed: 7,
            simulation: true,
        };
        RunRecord::started(Run::start(RunStart::Crux(start), &ctx).expect("start"), "c")
    }

    /// An answer the procedure refuses is asked again only a bounded number of times:
    /// then the run takes the question as deadlocked and moves on, so no question holds
    /// panels for ever.
    #[test]
    fn a_refused_answer_is_re_asked_a_bounded_number_of_times() {
        let mut rec = crux_record();
        let key = rec.run.pending()[0].key.clone();
        let ruling = PanelRuling {
            arbiter_id: "a".into(),
            prior: Prior::A,
            organisation: "north".into(),
            model_family: None,
            yes: Some(true),
            probability_milli: 900,
            rationale: String::new(),
            presented: Vec::new(),
        };
        let oversized = Settlement {
            key: key.clone(),
            motion_id: "m".into(),
            outcome: PanelOutcome::Yes,
            rulings: vec![ruling; crux::MAX_RULINGS + 1],
        };
        let before = rec.run.clone();
        for _ in 1..runs::MAX_REFUSED_SETTLEMENTS {
            assert!(settle_bounded(&mut rec, &oversized).is_err());
            assert_eq!(rec.run, before, "a refused answer changed the run");
            assert!(rec.to_open().iter().any(|q| q.key == key), "not re-asked");
        }
        assert!(settle_bounded(&mut rec, &oversized).is_err());
        assert_ne!(rec.run, before, "the run did not take the deadlock");
        assert!(rec.abandoned.is_empty());
        assert_eq!(rec.refused_settlements[&key], runs::MAX_REFUSED_SETTLEMENTS);
    }
}
