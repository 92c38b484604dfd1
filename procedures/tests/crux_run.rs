//! A crux run driven the way the machine drives it: `Run::start`, then `pending` and
//! `settle` until finished, with rulings written here (not the eval's scripted panel).

use panel_procedures::crux::{
    self, CandidateStatus, CruxReport, CruxStart, OrderAudit, Side, VerdictAnswer, eval,
};
use panel_procedures::{
    AnswerShape, ContractError, PanelOutcome, PanelQuestion, PanelRuling, Prior, Procedure,
    ProcedureError, Run, RunStart, Settlement, StartContext, presentation_order,
};

fn baseline() -> CruxStart {
    crux::decode_start(eval::BASELINE.as_bytes()).unwrap()
}

fn ctx(simulation: bool) -> StartContext {
    StartContext {
        run_id: "run-7".into(),
        seed: 99,
        simulation,
    }
}

fn report(crux: &str, warranted: bool) -> String {
    serde_json::to_string(&CruxReport {
        primary_crux: crux.into(),
        why_both_depend: "The optimist's cost case needs the fleet to grow past 1,900 devices; \
                          the pessimist's case needs it to stay near 700 devices."
            .into(),
        resolved_by: "The signing status of the two pending municipal contracts from sales.".into(),
        verdict_warranted: warranted,
        leaning: None,
    })
    .unwrap()
}

const CRUX_A: &str = "Whether the two pending municipal contracts are signed, growing the \
                      device fleet toward 1,900 devices";
const CRUX_B: &str = "Whether migration of existing inspection records fits inside the \
                      two-engineer, five-month build estimate";

/// One ruling per (arbiter, prior, yes, rationale), with the order the seed gives.
fn settle_with(
    q: &PanelQuestion,
    outcome: PanelOutcome,
    votes: &[(&str, Prior, Option<bool>, String)],
) -> Settlement {
    let labels: Vec<String> = q.items.iter().map(|i| i.label.clone()).collect();
    Settlement {
        key: q.key.clone(),
        motion_id: format!("m-{}", q.key),
        outcome,
        rulings: votes
            .iter()
            .enumerate()
            .map(|(i, (id, prior, yes, rationale))| PanelRuling {
                arbiter_id: id.to_string(),
                prior: *prior,
                organisation: format!("org-{}", i % 3),
                model_family: Some(
                    ["fixture-family-c", "fixture-family-d", "fixture-family-e"][i % 3].into(),
                ),
                yes: *yes,
                probability_milli: 700,
                rationale: rationale.clone(),
                presented: presentation_order(99, &q.key, id, labels.len())
                    .into_iter()
                    .map(|j| labels[j].clone())
                    .collect(),
            })
            .collect(),
    }
}

fn only(run: &Run) -> PanelQuestion {
    let p = run.pending();
    assert_eq!(
        p.len(),
        1,
        "{:?}",
        p.iter().map(|q| &q.key).collect::<Vec<_>>()
    );
    p.into_iter().next().unwrap()
}

fn crux_run(run: &Run) -> &crux::CruxRun {
    match run {
        Run::Crux(r) => r,
        _ => panic!("not a crux run"),
    }
}

#[test]
fn a_full_run_reaches_an_accepted_crux_with_dissent_kept() {
    let mut run = Run::start(RunStart::Crux(baseline()), &ctx(false)).unwrap();
    assert!(run.awaiting().is_empty());
    let q = only(&run);
    assert_eq!(q.key, "crux/report");
    assert_eq!(q.shape, AnswerShape::CruxReport);
    assert!(q.shuffle_items);
    assert!(q.expected.is_none(), "not a simulation run");
    let labels: Vec<&str> = q.items.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(
        labels,
        ["position: optimist", "position: pessimist", "evidence pack"]
    );

    // Three name crux A, one crux B, one returns a vague crux with a confident verdict.
    let votes = vec![
        ("arb-1", Prior::A, Some(false), report(CRUX_A, false)),
        ("arb-2", Prior::B, Some(false), report(CRUX_A, false)),
        (
            "arb-3",
            Prior::None,
            Some(false),
            report(&format!("{CRUX_A}, within three years"), false),
        ),
        ("arb-4", Prior::B, Some(false), report(CRUX_B, false)),
        (
            "arb-5",
            Prior::A,
            Some(true),
            report("It depends on many factors.", true),
        ),
    ];
    run.settle(&settle_with(&q, PanelOutcome::No, &votes))
        .unwrap();
    let r = crux_run(&run);
    assert_eq!(r.mediation.reports.len(), 5);
    assert!(
        r.mediation
            .reports
            .iter()
            .all(|x| x.order == OrderAudit::Recorded)
    );
    let failed: Vec<_> = r.mediation.reports.iter().filter(|x| !x.counts()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].gate[0].rule, "crux.gate.vague_verdict");

    let pending = run.pending();
    let keys: Vec<&str> = pending.iter().map(|q| q.key.as_str()).collect();
    assert_eq!(
        keys,
        ["crux/candidate/1", "crux/candidate/2"],
        "deduplicated, by support"
    );
    assert!(pending[0].prompt.contains("municipal contracts"));
    let yes = |y: bool| {
        vec![
            ("arb-6", Prior::A, Some(y), "r".to_string()),
            ("arb-7", Prior::B, Some(y), "r".to_string()),
            ("arb-8", Prior::None, Some(y), "r".to_string()),
        ]
    };
    run.settle(&settle_with(&pending[1], PanelOutcome::No, &yes(false)))
        .unwrap();
    assert!(!run.finished());
    run.settle(&settle_with(&pending[0], PanelOutcome::Yes, &yes(true)))
        .unwrap();
    let q = only(&run);
    assert_eq!(q.key, "crux/verdict");
    assert!(
        q.prompt
            .contains("is a verdict on the decision warranted now")
    );
    run.settle(&settle_with(&q, PanelOutcome::No, &yes(false)))
        .unwrap();
    assert!(run.finished());
    assert!(run.pending().is_empty());

    let r = crux_run(&run);
    assert!(r.accepted().unwrap().crux.contains("municipal contracts"));
    assert_eq!(
        r.mediation.verdict.as_ref().unwrap().answer,
        VerdictAnswer::NotWarranted
    );
    assert_eq!(r.mediation.candidates[1].status, CandidateStatus::Rejected);
    assert!(
        run.summary()
            .starts_with("crux accepted: Whether the two pending")
    );
    let md = run.render_markdown();
    for needle in [
        "## Accepted crux",
        "What would resolve it",
        "not warranted",
        "| A (optimist) |",
        "arb-4",
        "dissent",
        "gate failure: crux.gate.vague_verdict",
        "was shown first",
        r.materials.pack_hash.as_str(),
    ] {
        assert!(md.contains(needle), "missing {needle} in\n{md}");
    }
    // Settling a question that is no longer pending is refused, the run unchanged.
    let before = run.clone();
    let err = run
        .settle(&settle_with(&q, PanelOutcome::Yes, &yes(true)))
        .unwrap_err();
    assert!(matches!(err, ProcedureError::UnknownQuestion(k) if k == "crux/verdict"));
    assert_eq!(run, before);
}

#[test]
fn a_run_ends_in_a_recorded_deadlock_after_bounded_reasks() {
    let mut run = Run::start(RunStart::Crux(baseline()), &ctx(false)).unwrap();
    let q = only(&run);
    let votes = vec![
        ("arb-1", Prior::A, Some(false), report(CRUX_A, false)),
        ("arb-2", Prior::B, Some(false), report(CRUX_B, false)),
    ];
    run.settle(&settle_with(&q, PanelOutcome::Deadlocked, &votes))
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..10 {
        let pending = run.pending();
        if pending.is_empty() {
            break;
        }
        for q in pending {
            seen.push((q.key.clone(), q.extra_seats));
            let split = vec![
                ("arb-3", Prior::A, Some(true), "yes".to_string()),
                ("arb-4", Prior::B, Some(false), "no".to_string()),
            ];
            run.settle(&settle_with(&q, PanelOutcome::Deadlocked, &split))
                .unwrap();
        }
    }
    assert!(run.finished());
    assert!(
        seen.contains(&("crux/candidate/1/r2".to_string(), 4)),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|(k, _)| k.ends_with("/r3")),
        "at most two re-asks"
    );
    let r = crux_run(&run);
    assert!(r.accepted().is_none());
    assert!(
        r.mediation
            .deadlock
            .as_ref()
            .unwrap()
            .contains("accepted none")
    );
    let md = run.render_markdown();
    assert!(md.contains("Recorded deadlock"));
    assert!(
        md.contains(CRUX_A) && md.contains(CRUX_B),
        "every arbiter's crux kept"
    );
    assert!(run.summary().starts_with("crux deadlocked"));
}

#[test]
fn gate_failures_in_every_round_end_the_run_without_a_crux() {
    let mut run = Run::start(RunStart::Crux(baseline()), &ctx(false)).unwrap();
    for round in 0..3 {
        let q = only(&run);
        assert_eq!(q.extra_seats, 2 * round);
        let votes = vec![
            (
                "arb-1",
                Prior::A,
                Some(true),
                report("More research is needed.", true),
            ),
            ("arb-2", Prior::B, Some(true), "not json".to_string()),
        ];
        run.settle(&settle_with(&q, PanelOutcome::Yes, &votes))
            .unwrap();
    }
    assert!(run.finished());
    let r = crux_run(&run);
    assert!(
        r.accepted().is_none(),
        "no confident verdict on a vague crux is accepted"
    );
    let rules: Vec<&str> = r
        .mediation
        .reports
        .iter()
        .flat_map(|x| x.gate.iter().map(|f| f.rule.as_str()))
        .collect();
    assert!(rules.contains(&"crux.gate.vague_verdict"));
    assert!(rules.contains(&"crux.gate.malformed"));
}

#[test]
fn simulation_runs_carry_expected_answers_and_finish_with_scripted_judges() {
    let mut run = crux::CruxRun::start(baseline(), &ctx(true)).unwrap();
    let q = &run.pending()[0];
    let e = q.expected.as_ref().unwrap();
    let rep: CruxReport = serde_json::from_str(&e.rationale).unwrap();
    assert_eq!(e.yes, rep.verdict_warranted);
    assert!(
        matches!(eval::simulate(&mut run), eval::Observed::Passed(c) if c.contains("municipal"))
    );
    assert!(run.render_markdown().contains("derived from the draw seed"));
}

#[test]
fn a_simulation_run_without_a_script_is_refused() {
    let mut s = baseline();
    s.simulation = None;
    let err = Run::start(RunStart::Crux(s), &ctx(true)).unwrap_err();
    assert!(matches!(err, ProcedureError::Refused(f) if f[0].rule == "crux.simulation"));
}

#[test]
fn advocate_families_are_exposed_and_required() {
    let run = crux::CruxRun::start(baseline(), &ctx(false)).unwrap();
    assert_eq!(
        run.advocate_families(),
        ["fixture-family-a", "fixture-family-b"]
    );
    let mut s = baseline();
    s.advocates.retain(|a| a.side == Side::Optimist);
    let err = Run::start(RunStart::Crux(s), &ctx(false)).unwrap_err();
    match err {
        ProcedureError::Refused(f) => {
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].rule, "crux.advocates");
            assert!(f[0].reason.contains("pessimist"));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn malformed_json_is_refused_with_its_path() {
    let bad = eval::BASELINE.replacen(
        "\"inference\": \"direct_read\"",
        "\"inference\": \"guess\"",
        1,
    );
    match crux::decode_start(bad.as_bytes()).unwrap_err() {
        ContractError::Malformed { path, problem, .. } => {
            assert_eq!(path, "positions[0].claims[0].inference");
            assert!(problem.contains("guess"), "{problem}");
        }
        e => panic!("{e}"),
    }
    let typo = eval::BASELINE.replacen("\"thesis\"", "\"theses\"", 1);
    match crux::decode_start(typo.as_bytes()).unwrap_err() {
        ContractError::Malformed { path, .. } => assert_eq!(path, "positions[0].theses"),
        e => panic!("{e}"),
    }
    let huge = vec![b' '; crux::MAX_START_BYTES + 1];
    assert!(matches!(
        crux::decode_start(&huge).unwrap_err(),
        ContractError::Rule { rule, .. } if rule.starts_with("crux.size")
    ));
}

#[test]
fn the_eval_blocks_or_catches_every_bad_debate_with_no_false_positives() {
    let r = eval::run_eval();
    assert!(r.cases.len() >= 15);
    assert!(r.clean >= 11, "baseline and at least ten controls");
    assert_eq!(r.bad_escaped, 0, "{}", r.to_markdown());
    assert_eq!(r.false_positives, 0, "{}", r.to_markdown());
    assert_eq!(r.mismatches, 0, "{}", r.to_markdown());
    assert!(r.bad_caught >= 1, "the vague crux is caught at the gate");
    assert_eq!(r.bad, r.bad_blocked + r.bad_caught);
    let md = r.to_markdown();
    assert!(md.contains("0 false positives"));
}
