//! The decision dossier, driven through the `Procedure` trait as the machine drives it.

use panel_procedures::dossier::{
    self, ClaimRef, DossierInput, DossierRun, DossierStart, FailStatus, Phase, Rebuttal,
    Recommendation, RequestedResult, Synthesis, TerminalStatus,
};
use panel_procedures::{
    PanelOutcome, PanelRuling, Prior, Procedure, ProcedureError, Run, RunInput, RunStart,
    Settlement, StartContext,
};
use proptest::prelude::*;

fn ctx(run_id: &str, simulation: bool) -> StartContext {
    StartContext {
        run_id: run_id.into(),
        seed: 11,
        simulation,
    }
}

fn rules(s: DossierStart) -> Vec<(String, String)> {
    match DossierRun::start(s, &ctx("run-d1", false)) {
        Err(ProcedureError::Refused(f)) => f.into_iter().map(|f| (f.rule, f.at)).collect(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn has(found: &[(String, String)], rule: &str, at: &str) -> bool {
    found.iter().any(|(r, a)| r == rule && a == at)
}

#[test]
fn the_demo_start_is_accepted() {
    let run = DossierRun::start(dossier::demo_start(), &ctx("run-d1", true)).unwrap();
    assert_eq!(run.phase, Phase::ClashI);
    assert_eq!(run.awaiting().len(), 3);
    assert_eq!(dossier::demo_inputs().len(), 9);
}

#[test]
fn refuses_a_question_without_an_owner() {
    let mut s = dossier::demo_start();
    s.framing.owner = Some("  ".into());
    assert!(has(&rules(s), "dossier.no_owner", "framing.owner"));
}

#[test]
fn refuses_duplicate_and_caricature_positions() {
    let mut s = dossier::demo_start();
    s.advocates[2].posture = "Migrate".into();
    assert!(has(
        &rules(s),
        "dossier.duplicate_position",
        "advocates[2].position"
    ));
    let mut s = dossier::demo_start();
    s.advocates[1].stated_by = "migrate-now".into();
    assert!(has(
        &rules(s),
        "dossier.caricature_position",
        "advocates[1].stated_by"
    ));
    let mut s = dossier::demo_start();
    s.advocates[2].position = "Just wait.".into();
    assert!(has(
        &rules(s),
        "dossier.caricature_position",
        "advocates[2].position"
    ));
    let mut s = dossier::demo_start();
    s.advocates.truncate(1);
    assert!(has(&rules(s), "dossier.too_few_positions", "advocates"));
}

#[test]
fn refuses_an_evidence_floor_that_does_not_fit() {
    let mut s = dossier::demo_start();
    s.advocates[1].budget.context_chars = 200;
    let found = rules(s);
    assert!(has(
        &found,
        "dossier.evidence_floor_fit",
        "advocates[1].budget.context_chars"
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    let mut s = dossier::demo_start();
    s.framing.evidence.clear();
    assert!(has(
        &rules(s),
        "dossier.evidence_floor_fit",
        "framing.evidence"
    ));
}

#[test]
fn refuses_a_bias_without_a_defeat_condition() {
    let mut s = dossier::demo_start();
    s.framing.biases[3].defeat_condition = None;
    assert!(has(
        &rules(s),
        "dossier.bias_without_defeat",
        "framing.biases[3].defeat_condition"
    ));
}

#[test]
fn refuses_a_lead_who_is_also_an_advocate() {
    let mut s = dossier::demo_start();
    s.framing.arbiters = vec!["arb-7".into(), "model-beta-medium".into(), "defer".into()];
    let found = rules(s);
    assert!(has(
        &found,
        "dossier.lead_is_advocate",
        "framing.arbiters[1]"
    ));
    assert!(has(
        &found,
        "dossier.lead_is_advocate",
        "framing.arbiters[2]"
    ));
    assert!(!has(
        &found,
        "dossier.lead_is_advocate",
        "framing.arbiters[0]"
    ));
}

#[test]
fn refuses_a_result_that_would_gain_authority_by_majority() {
    let mut s = dossier::demo_start();
    s.framing.requested = RequestedResult::BindingDecision;
    assert!(has(
        &rules(s),
        "dossier.authority_by_majority",
        "framing.requested"
    ));
    let mut s = dossier::demo_start();
    s.framing.effects = vec!["deploy the migration".into()];
    assert!(has(
        &rules(s),
        "dossier.authority_by_majority",
        "framing.effects[0]"
    ));
    let mut s = dossier::demo_start();
    s.framing.question =
        "Which database should we use, decided by majority vote of the panel?".into();
    assert!(has(
        &rules(s),
        "dossier.authority_by_majority",
        "framing.question"
    ));
}

#[test]
fn refuses_oversized_documents_and_reports_malformed_paths() {
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(dossier::MAX_START_BYTES));
    let e = DossierStart::from_json(big.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("dossier.document_size"));
    let e = DossierStart::from_json(br#"{"framing": {"question": 3}}"#).unwrap_err();
    assert!(e.to_string().contains("framing.question"), "{e}");
}

fn started() -> DossierRun {
    DossierRun::start(dossier::demo_start(), &ctx("run-d1", false)).unwrap()
}

/// Submits the demo inputs, skipping those of `skip` advocates.
fn through_clashes(run: &mut DossierRun, skip: &[&str]) {
    for i in dossier::demo_inputs() {
        if !skip.contains(&i.advocate()) {
            run.submit(i).unwrap();
        }
    }
}

fn ruling(id: &str, prior: Prior, yes: bool, p: u16, why: &str) -> PanelRuling {
    PanelRuling {
        arbiter_id: id.into(),
        prior,
        organisation: format!("org-{id}"),
        model_family: Some("delta".into()),
        yes: Some(yes),
        probability_milli: p,
        rationale: why.into(),
        presented: Vec::new(),
    }
}

fn settle(run: &mut DossierRun, key: &str, outcome: PanelOutcome, rulings: Vec<PanelRuling>) {
    run.settle(&Settlement {
        key: key.into(),
        motion_id: format!("m-{key}"),
        outcome,
        rulings,
    })
    .unwrap();
}

fn agree(yes: bool) -> Vec<PanelRuling> {
    let p = if yes { 850 } else { 150 };
    vec![
        ruling("a1", Prior::A, yes, p, "agree"),
        ruling("b1", Prior::B, yes, p, "agree"),
    ]
}

/// Dissent is what the seed preserves: rulings against what the Quench settled. A yes on
/// the recommended option from an attempt that deadlocked agrees with the
/// recommendation; the no beside it is dissent, and only a dissenter's own "would change
/// if" becomes a condition (docs/DOSSIER.md; once a defect of the `panel up` dossier).
#[test]
fn dissent_is_against_the_recommendation_and_conditions_are_the_dissenters_own() {
    let mut run = started();
    through_clashes(&mut run, &[]);
    settle(&mut run, "quench/now", PanelOutcome::No, agree(false));
    settle(
        &mut run,
        "quench/prepare",
        PanelOutcome::Deadlocked,
        vec![
            ruling("a1", Prior::A, true, 1000, "Preparing first is safest."),
            ruling(
                "b3",
                Prior::B,
                false,
                200,
                "Too slow. Would change if the rehearsal finds no gaps.",
            ),
        ],
    );
    settle(
        &mut run,
        "quench/prepare/a2",
        PanelOutcome::Yes,
        agree(true),
    );
    settle(&mut run, "quench/reject", PanelOutcome::No, agree(false));
    assert_eq!(
        run.synthesis,
        Some(Synthesis::Recommend {
            option: Recommendation::Prepare
        })
    );
    let dissent = run.dissent();
    let who: Vec<&str> = dissent.iter().map(|d| d.arbiter_id.as_str()).collect();
    assert_eq!(who, ["b3"], "only the no on PREPARE dissents: {dissent:?}");
    let strongest = run.strongest_dissent().expect("dissent");
    assert_eq!(strongest.yes, Some(false));
    assert_eq!(
        run.change_conditions(),
        ["b3 (prior B on PREPARE): the rehearsal finds no gaps."]
    );
    // Supporters' rationales never become conditions.
    let md = run.render_markdown();
    assert!(!md.contains("- a1"), "{md}");
    assert!(!md.contains('‰'), "{md}");

    // A unanimous Quench says that there is no dissent.
    let mut quiet = started();
    through_clashes(&mut quiet, &[]);
    settle(&mut quiet, "quench/now", PanelOutcome::No, agree(false));
    settle(&mut quiet, "quench/prepare", PanelOutcome::Yes, agree(true));
    settle(&mut quiet, "quench/reject", PanelOutcome::No, agree(false));
    assert!(quiet.dissent().is_empty());
    let md = quiet.render_markdown();
    assert!(
        md.contains("None: no counted ruling went against what the panel settled."),
        "{md}"
    );
    assert!(md.contains("None stated"), "{md}");
}

#[test]
fn a_complete_run_recommends_and_preserves_dissent() {
    let mut run = started();
    through_clashes(&mut run, &[]);
    assert_eq!(run.phase, Phase::Quench);
    let pending = run.pending();
    let keys: Vec<&str> = pending.iter().map(|q| q.key.as_str()).collect();
    assert_eq!(keys, ["quench/now", "quench/prepare", "quench/reject"]);
    for q in &pending {
        assert!(q.shuffle_items);
        assert!(
            q.exclude.contains(&"migrate-now".to_string()),
            "advocates stay off the panel"
        );
        assert!(
            q.items
                .iter()
                .any(|i| i.text.contains("Concession: Deferring keeps"))
        );
    }
    let mut now = agree(false);
    now.push(ruling("a2", Prior::A, true, 900, "The incident record is the bigger risk. Would change if: the full-size rehearsal is not done by 15 October."));
    settle(&mut run, "quench/now", PanelOutcome::No, now);
    let mut prepare = agree(true);
    prepare.push(ruling("b2", Prior::B, false, 50, "Preparing is deferring by another name; would change if the legal review clears this month."));
    settle(&mut run, "quench/prepare", PanelOutcome::Yes, prepare);
    assert!(!run.finished());
    settle(&mut run, "quench/reject", PanelOutcome::No, agree(false));
    assert!(run.finished());
    assert_eq!(
        run.synthesis,
        Some(Synthesis::Recommend {
            option: Recommendation::Prepare
        })
    );
    assert_eq!(run.summary(), "dossier: PREPARE");
    let strongest = run.strongest_dissent().unwrap();
    assert_eq!(
        strongest.arbiter_id, "b2",
        "the recommended option's dissent comes first"
    );
    let conds = run.change_conditions();
    assert_eq!(conds.len(), 2);
    assert!(
        conds
            .iter()
            .any(|c| c.ends_with("the legal review clears this month."))
    );
    let md = run.render_markdown();
    assert!(md.contains("inert text"));
    assert!(md.contains("**Recommendation: PREPARE**"));
    assert!(md.contains("Preparing is deferring by another name"));
    assert!(md.contains("The incident record is the bigger risk"));
    assert!(md.contains("| migrate-now | migrate | model-alpha-large | provider-one | alpha |"));
    assert!(md.contains("UNKNOWN: whether sync time scales linearly to 4.1 TB"));
    assert!(md.contains("Declared omission"));
    for (_, st) in run.statuses() {
        assert!(matches!(
            st,
            TerminalStatus::Complete | TerminalStatus::IncompleteRebuttal { .. }
        ));
    }
    // defer rebutted only two of the four projected claims: visible as incomplete
    let defer = run
        .statuses()
        .into_iter()
        .find(|(id, _)| id == "defer")
        .unwrap()
        .1;
    assert!(
        matches!(defer, TerminalStatus::IncompleteRebuttal { ref unanswered } if unanswered.len() == 2)
    );
}

#[test]
fn a_failed_branch_stays_visible_and_is_not_completed_by_anyone() {
    let mut run = started();
    run.submit(DossierInput::Fail {
        advocate: "defer".into(),
        status: FailStatus::Timeout,
        note: "no report within 300 s".into(),
    })
    .unwrap();
    assert!(!run.awaiting().iter().any(|a| a.role == "advocate:defer"));
    let before = run.clone();
    let e = run
        .submit(
            dossier::demo_inputs()
                .into_iter()
                .find(|i| i.advocate() == "defer")
                .unwrap(),
        )
        .unwrap_err();
    assert!(matches!(e, ProcedureError::Refused(ref f) if f[0].rule == "dossier.branch_failed"));
    assert_eq!(run, before);
    // the others' inputs, minus rebuttals aimed at the missing branch
    for i in dossier::demo_inputs() {
        let i = match i {
            DossierInput::Rebut {
                advocate,
                rebuttals,
            } => DossierInput::Rebut {
                advocate,
                rebuttals: rebuttals
                    .into_iter()
                    .filter(|r| r.target.advocate != "defer")
                    .collect(),
            },
            other => other,
        };
        if i.advocate() != "defer" {
            run.submit(i).unwrap();
        }
    }
    assert_eq!(run.phase, Phase::Quench);
    assert!(
        run.projection("migrate-now")
            .claims
            .iter()
            .all(|c| c.target.advocate != "defer")
    );
    let item = run.pending()[0]
        .items
        .iter()
        .find(|i| i.label == "position: defer")
        .cloned()
        .unwrap();
    assert!(item.text.contains("FAILED (Timeout at Clash I)"));
    for key in ["quench/now", "quench/prepare", "quench/reject"] {
        settle(&mut run, key, PanelOutcome::No, agree(false));
    }
    assert!(
        matches!(run.synthesis, Some(Synthesis::NonDecision { .. })),
        "non-decision is valid"
    );
    let md = run.render_markdown();
    assert!(md.contains("No report: the branch is missing."));
    assert!(md.contains("FAILED (Timeout at Clash I): no report within 300 s"));
    assert!(md.contains("**Non-decision:** the panel refused all three options"));
}

#[test]
fn every_branch_failing_is_a_non_decision_without_a_panel() {
    let mut run = started();
    for a in ["migrate-now", "upgrade-in-place", "defer"] {
        run.submit(DossierInput::Fail {
            advocate: a.into(),
            status: FailStatus::Error,
            note: "adapter error".into(),
        })
        .unwrap();
    }
    assert!(run.finished());
    assert!(run.pending().is_empty());
    assert!(matches!(run.synthesis, Some(Synthesis::NonDecision { .. })));
}

#[test]
fn a_retry_references_the_first_run_and_never_rewrites_it() {
    let mut first = started();
    through_clashes(&mut first, &[]);
    for key in ["quench/now", "quench/reject"] {
        settle(&mut first, key, PanelOutcome::No, agree(false));
    }
    settle(&mut first, "quench/prepare", PanelOutcome::Yes, agree(true));
    let kept = first.clone();
    let kept_md = first.render_markdown();
    let retry = dossier::demo_retry_start(&first.run_id);
    let second = DossierRun::start(retry.clone(), &ctx("run-d2", false)).unwrap();
    assert_eq!(second.retry_of.as_ref().unwrap().run_id, "run-d1");
    assert_eq!(first, kept);
    assert_eq!(first.render_markdown(), kept_md);
    let md = second.render_markdown();
    assert!(md.contains("Retry of run `run-d1` (that run is unchanged). Changed: evidence."));
    assert!(md.contains("Full-size rehearsal (4.1 TB)"));
    let e = DossierRun::start(retry, &ctx("run-d1", false)).unwrap_err();
    assert!(
        matches!(e, ProcedureError::Refused(ref f) if f.iter().any(|f| f.rule == "dossier.retry_self"))
    );
}

#[test]
fn advocates_see_evidence_not_siblings_and_rebut_only_their_projection() {
    let mut run = started();
    let inputs = dossier::demo_inputs();
    run.submit(inputs[0].clone()).unwrap();
    let brief = run.brief("upgrade-in-place").unwrap();
    assert!(brief.projection.is_none() && brief.own_report.is_none());
    assert!(
        !serde_json::to_string(&brief)
            .unwrap()
            .contains("38 minutes of write unavailability per incident")
    );
    for i in &inputs[1..6] {
        run.submit(i.clone()).unwrap();
    }
    assert_eq!(run.phase, Phase::ClashII);
    let p = run.brief("defer").unwrap().projection.unwrap();
    let targets: Vec<String> = p
        .claims
        .iter()
        .map(|c| format!("{}/{}", c.target.advocate, c.target.claim))
        .collect();
    assert_eq!(
        targets,
        [
            "migrate-now/toil",
            "migrate-now/cutover",
            "upgrade-in-place/auto-failover",
            "upgrade-in-place/cost"
        ]
    );
    let before = run.clone();
    let bad = |advocate: &str, claim: &str| DossierInput::Rebut {
        advocate: "defer".into(),
        rebuttals: vec![Rebuttal {
            target: ClaimRef {
                advocate: advocate.into(),
                claim: claim.into(),
            },
            text: "no".into(),
            citations: vec![],
        }],
    };
    for (a, c) in [
        ("migrate-now", "support"),
        ("defer", "freeze"),
        ("nobody", "x"),
    ] {
        let e = run.submit(bad(a, c)).unwrap_err();
        assert!(
            matches!(e, ProcedureError::Refused(ref f) if f[0].rule == "dossier.rebuttal_outside_projection"),
            "{a}/{c}"
        );
    }
    assert_eq!(run, before);
}

#[test]
fn phase_and_content_rules_refuse_bad_advocate_input() {
    let mut run = started();
    let e = run
        .submit(DossierInput::Nominate {
            advocate: "defer".into(),
            strongest: vec!["freeze".into()],
            concession: "c".into(),
        })
        .unwrap_err();
    assert!(matches!(e, ProcedureError::OutOfOrder { .. }));
    let mut r = dossier::demo_inputs().remove(0);
    if let DossierInput::Report { claims, .. } = &mut r {
        claims[0].citations.push("e99".into());
        claims[1].defeat_condition = " ".into();
    }
    let e = run.submit(r).unwrap_err();
    let ProcedureError::Refused(f) = e else {
        panic!()
    };
    let got: Vec<&str> = f.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(
        got,
        ["dossier.citation_unknown", "dossier.claim_defeat_condition"]
    );
    assert_eq!(
        f[0].at,
        "advocate migrate-now report.claims[0].citations[1]"
    );
    for i in dossier::demo_inputs().into_iter().take(3) {
        run.submit(i).unwrap();
    }
    let e = run
        .submit(DossierInput::Nominate {
            advocate: "defer".into(),
            strongest: vec!["toil".into()],
            concession: "c".into(),
        })
        .unwrap_err();
    assert!(matches!(e, ProcedureError::Refused(ref f) if f[0].rule == "dossier.nominate_own"));
    let e = run
        .submit(DossierInput::Nominate {
            advocate: "defer".into(),
            strongest: vec!["freeze".into()],
            concession: "".into(),
        })
        .unwrap_err();
    assert!(
        matches!(e, ProcedureError::Refused(ref f) if f[0].rule == "dossier.concession_required")
    );
    assert!(
        run.settle(&Settlement {
            key: "quench/now".into(),
            motion_id: "m".into(),
            outcome: PanelOutcome::Yes,
            rulings: vec![]
        })
        .is_err()
    );
}

#[test]
fn a_deadlocked_option_is_reasked_wider_then_ends_in_non_decision_with_dissent() {
    let mut run = started();
    through_clashes(&mut run, &[]);
    let split = || {
        vec![
            ruling("a1", Prior::A, true, 800, "act now"),
            ruling("b1", Prior::B, false, 200, "not before the peak"),
        ]
    };
    settle(&mut run, "quench/now", PanelOutcome::Deadlocked, split());
    let q = run
        .pending()
        .into_iter()
        .find(|q| q.key.starts_with("quench/now"))
        .unwrap();
    assert_eq!((q.key.as_str(), q.extra_seats), ("quench/now/a2", 2));
    settle(&mut run, "quench/now/a2", PanelOutcome::Deadlocked, split());
    settle(&mut run, "quench/now/a3", PanelOutcome::Deadlocked, split());
    settle(&mut run, "quench/prepare", PanelOutcome::Yes, agree(true));
    settle(&mut run, "quench/reject", PanelOutcome::No, agree(false));
    assert!(run.finished());
    assert!(
        matches!(run.synthesis, Some(Synthesis::NonDecision { ref reason }) if reason.contains("NOW"))
    );
    // NOW settled nothing, so its split rulings dissent from no answer; they stay on the
    // run with every attempt, and the accepted PREPARE had no ruling against it.
    assert!(run.dissent().is_empty(), "{:?}", run.dissent());
    let kept: usize = run
        .options
        .iter()
        .filter(|o| o.option == Recommendation::Now)
        .flat_map(|o| o.answers.iter())
        .map(|a| a.rulings.len())
        .sum();
    assert_eq!(kept, 6, "every deadlocked ruling is kept");
    assert_eq!(
        run.findings
            .iter()
            .filter(|f| f.rule == "dossier.deadlock")
            .count(),
        2
    );
}

#[test]
fn two_accepted_options_are_a_non_decision_not_a_tie_break() {
    let mut run = started();
    through_clashes(&mut run, &[]);
    settle(&mut run, "quench/now", PanelOutcome::Yes, agree(true));
    settle(&mut run, "quench/prepare", PanelOutcome::Yes, agree(true));
    settle(&mut run, "quench/reject", PanelOutcome::No, agree(false));
    assert!(
        matches!(run.synthesis, Some(Synthesis::NonDecision { ref reason }) if reason.contains("NOW and PREPARE"))
    );
}

#[test]
fn the_demo_fixture_drives_a_whole_run_with_scripted_judges() {
    let mut run = Run::start(
        RunStart::Dossier(dossier::demo_start()),
        &ctx("run-d1", true),
    )
    .unwrap();
    for i in dossier::demo_inputs() {
        run.submit(RunInput::Dossier(i)).unwrap();
    }
    let pending = run.pending();
    assert_eq!(pending.len(), 3);
    for q in pending {
        let e = q.expected.clone().unwrap();
        let outcome = if e.yes {
            PanelOutcome::Yes
        } else {
            PanelOutcome::No
        };
        let rulings = vec![
            ruling("a", Prior::A, e.yes, 700, &e.rationale),
            ruling("b", Prior::B, e.yes, 700, &e.rationale),
        ];
        run.settle(&Settlement {
            key: q.key,
            motion_id: "m".into(),
            outcome,
            rulings,
        })
        .unwrap();
    }
    assert!(run.finished());
    assert_eq!(run.summary(), "dossier: PREPARE");
    let md = run.render_markdown();
    if std::env::var("SHOW_MD").is_ok() {
        println!("{md}");
    }
    assert!(md.contains("## Temper: the join"));
    let back: Run = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
    assert_eq!(back, run);
    let Run::Dossier(d) = &run else { panic!() };
    assert_eq!(
        d.advocate_identities()
            .iter()
            .map(|a| a.family.as_str())
            .collect::<Vec<_>>(),
        ["alpha", "beta", "gamma"]
    );
}

proptest! {
    /// Whatever the panel answers, the Quench ends within its bound, and a
    /// recommendation appears exactly when one option is accepted and the others refused.
    #[test]
    fn any_quench_answers_end_within_bounds(outcomes in proptest::collection::vec(0u8..3, 15)) {
        let mut run = started();
        through_clashes(&mut run, &[]);
        let mut it = outcomes.into_iter();
        let mut motions = 0;
        while !run.finished() {
            let q = run.pending().remove(0);
            let o = match it.next().unwrap_or(1) { 0 => PanelOutcome::Yes, 1 => PanelOutcome::No, _ => PanelOutcome::Deadlocked };
            let r = if o == PanelOutcome::Deadlocked { vec![ruling("a", Prior::A, true, 700, "x"), ruling("b", Prior::B, false, 300, "y")] } else { agree(o == PanelOutcome::Yes) };
            settle(&mut run, &q.key, o, r);
            motions += 1;
            prop_assert!(motions <= 9);
        }
        let finals: Vec<PanelOutcome> = run.options.iter().map(|o| o.settled.unwrap()).collect();
        let yes = finals.iter().filter(|o| **o == PanelOutcome::Yes).count();
        let dead = finals.contains(&PanelOutcome::Deadlocked);
        let recommended = matches!(run.synthesis, Some(Synthesis::Recommend { .. }));
        prop_assert_eq!(recommended, yes == 1 && !dead);
    }
}
