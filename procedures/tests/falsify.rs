//! Falsification buckets, driven through the `Procedure` trait as the machine drives it.

use panel_procedures::falsify::{
    self, Bucket, FalsifyInput, FalsifyRun, FalsifyStart, FormReport, RefuterKind, Role, Severity,
    Stage,
};
use panel_procedures::{
    PanelOutcome, PanelRuling, Prior, Procedure, ProcedureError, Run, RunStart, Settlement,
    StartContext,
};
use proptest::prelude::*;

fn ctx(simulation: bool) -> StartContext {
    StartContext {
        run_id: "run-f1".into(),
        seed: 7,
        simulation,
    }
}

fn start(claims: &[(&str, &str)]) -> FalsifyStart {
    let claims: Vec<serde_json::Value> = claims
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "text": text}))
        .collect();
    serde_json::from_value(serde_json::json!({ "claims": claims })).unwrap()
}

fn ruling(id: &str, prior: Prior, yes: Option<bool>, why: &str) -> PanelRuling {
    PanelRuling {
        arbiter_id: id.into(),
        prior,
        organisation: format!("org-{id}"),
        model_family: None,
        yes,
        probability_milli: if yes == Some(true) { 800 } else { 200 },
        rationale: why.into(),
        presented: Vec::new(),
    }
}

/// A settlement of `key`: agreement across priors, or a split along them.
fn settlement(key: &str, outcome: PanelOutcome, tag: &str) -> Settlement {
    let rulings = match outcome {
        PanelOutcome::Yes | PanelOutcome::No => {
            let yes = Some(outcome == PanelOutcome::Yes);
            vec![
                ruling(&format!("{tag}-a1"), Prior::A, yes, "agree"),
                ruling(&format!("{tag}-b1"), Prior::B, yes, "agree"),
                ruling(
                    &format!("{tag}-b2"),
                    Prior::B,
                    Some(outcome != PanelOutcome::Yes),
                    "minority view",
                ),
            ]
        }
        PanelOutcome::Deadlocked => vec![
            ruling(
                &format!("{tag}-a1"),
                Prior::A,
                Some(true),
                "the form stakes out an observable",
            ),
            ruling(
                &format!("{tag}-b1"),
                Prior::B,
                Some(false),
                "it forbids nothing measurable",
            ),
        ],
    };
    Settlement {
        key: key.into(),
        motion_id: format!("m-{key}"),
        outcome,
        rulings,
    }
}

fn answer(run: &mut FalsifyRun, key: &str, outcome: PanelOutcome) {
    let keys: Vec<String> = run.pending().into_iter().map(|q| q.key).collect();
    assert!(
        keys.contains(&key.to_string()),
        "{key} not pending; pending {keys:?}"
    );
    run.settle(&settlement(key, outcome, key)).unwrap();
}

fn form(claim: &str) -> FalsifyInput {
    FalsifyInput::Form {
        claim: claim.into(),
        form: FormReport::Forbidding {
            statement: "Under load L, latency stays below 5 ms".into(),
            forbids: vec!["a p99 of 5 ms or more under load L".into()],
        },
    }
}

fn commit(claim: &str, critic: &str, refuter: RefuterKind) -> FalsifyInput {
    FalsifyInput::Commit {
        claim: claim.into(),
        critic: critic.into(),
        refuter,
    }
}

fn attack(claim: &str, critic: &str, refuter: RefuterKind, case: &str) -> FalsifyInput {
    FalsifyInput::Attack {
        claim: claim.into(),
        critic: critic.into(),
        refuter,
        case: case.into(),
        commentary: None,
    }
}

fn cross(run: &FalsifyRun, claim: &str, role: Role, restated: Option<&str>) -> FalsifyInput {
    let n = run.probes(claim, role).unwrap().len();
    FalsifyInput::CrossExam {
        claim: claim.into(),
        role,
        answers: (0..n)
            .map(|i| format!("{} answer {i}", role.name()))
            .collect(),
        restated_claim: restated.map(Into::into),
        commentary: None,
    }
}

/// Commit, attack and both cross-examinations for one round.
fn round(run: &mut FalsifyRun, claim: &str, critic: &str, case: &str) {
    run.submit(commit(claim, critic, RefuterKind::Counterexample))
        .unwrap();
    run.submit(attack(claim, critic, RefuterKind::Counterexample, case))
        .unwrap();
    let c = cross(run, claim, Role::Critic, None);
    run.submit(c).unwrap();
    let d = cross(run, claim, Role::Defender, None);
    run.submit(d).unwrap();
}

fn bucket(run: &FalsifyRun, claim: &str) -> Option<Bucket> {
    run.claim(claim)
        .and_then(|c| c.outcome.as_ref())
        .map(|o| o.bucket)
}

fn started(claims: &[(&str, &str)]) -> FalsifyRun {
    FalsifyRun::start(start(claims), &ctx(false)).unwrap()
}

fn refused_rule(e: ProcedureError) -> Vec<String> {
    match e {
        ProcedureError::Refused(f) => f.into_iter().map(|f| f.rule).collect(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_vague_claim_ends_unfalsifiable() {
    let mut run = started(&[("c1", "The unification is elegant.")]);
    run.submit(FalsifyInput::Form {
        claim: "c1".into(),
        form: FormReport::Forbidding {
            statement: "The unification is elegant in every sense that matters.".into(),
            forbids: vec!["the unification being inelegant".into()],
        },
    })
    .unwrap();
    answer(&mut run, "c1/form", PanelOutcome::No);
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Unfalsifiable));
    assert!(run.finished());
    let b = &run.bucketing()[0];
    assert_eq!(b.rule.as_deref(), Some("falsify.no_falsifiable_form"));
    assert!(b.committed_refuters.is_empty());
    assert!(run.render_markdown().contains("## Claim c1: UNFALSIFIABLE"));
}

#[test]
fn an_honest_no_form_report_is_the_verdict_without_a_panel() {
    let mut run = started(&[("c1", "The unification is elegant.")]);
    run.submit(FalsifyInput::Form {
        claim: "c1".into(),
        form: FormReport::None {
            reason: "elegance names no observation".into(),
        },
    })
    .unwrap();
    assert!(run.pending().is_empty());
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Unfalsifiable));
    assert!(run.bucketing()[0].form.starts_with("none"));
}

#[test]
fn a_valid_counterexample_ends_broken_with_the_refutation_recorded() {
    let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    round(
        &mut run,
        "c1",
        "critic-1",
        "run 88 measured p99 7.2 ms under load L",
    );
    answer(&mut run, "c1/r1/retreat", PanelOutcome::No);
    answer(&mut run, "c1/r1/shield", PanelOutcome::No);
    answer(&mut run, "c1/r1/refuter", PanelOutcome::Yes);
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Broken));
    let b = &run.bucketing()[0];
    assert_eq!(b.rule.as_deref(), Some("falsify.valid_refuter"));
    assert!(b.recorded.as_deref().unwrap().contains("p99 7.2 ms"));
    assert_eq!(b.committed_refuters[0].refuter, RefuterKind::Counterexample);
    assert!(
        b.cross_exam_findings
            .iter()
            .any(|f| f.rule == "falsify.no_retreat")
    );
    // per-stance tallies: A 1 yes, B 1 yes 1 no on the refuter question
    let q = b
        .questions
        .iter()
        .find(|q| q.key == "c1/r1/refuter")
        .unwrap();
    assert_eq!(q.tallies[0].1.yes, 1);
    assert_eq!((q.tallies[1].1.yes, q.tallies[1].1.no), (1, 1));
    assert_eq!(q.dissent.len(), 1);
}

#[test]
fn a_valid_empty_forbidden_set_refuter_is_unfalsifiable_not_broken() {
    let mut run = started(&[("c1", "Markets are efficient.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    run.submit(commit("c1", "k", RefuterKind::EmptyForbiddenSet))
        .unwrap();
    run.submit(attack(
        "c1",
        "k",
        RefuterKind::EmptyForbiddenSet,
        "every price path fits",
    ))
    .unwrap();
    let c = cross(&run, "c1", Role::Critic, None);
    run.submit(c).unwrap();
    let d = cross(&run, "c1", Role::Defender, None);
    run.submit(d).unwrap();
    answer(&mut run, "c1/r1/retreat", PanelOutcome::No);
    answer(&mut run, "c1/r1/shield", PanelOutcome::No);
    answer(&mut run, "c1/r1/refuter", PanelOutcome::Yes);
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Unfalsifiable));
}

#[test]
fn a_weak_attack_escalates_to_a_wider_panel_without_its_severity_judges_and_severe_survival_corroborates()
 {
    let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    round(&mut run, "c1", "critic-1", "a light load test");
    answer(&mut run, "c1/r1/retreat", PanelOutcome::No);
    answer(&mut run, "c1/r1/shield", PanelOutcome::No);
    answer(&mut run, "c1/r1/refuter", PanelOutcome::No);
    answer(&mut run, "c1/r1/severe", PanelOutcome::No);
    assert_eq!(
        bucket(&run, "c1"),
        None,
        "weak survival is not corroboration"
    );
    assert_eq!(run.claim("c1").unwrap().stage, Stage::AwaitCommit);
    assert!(run.awaiting()[0].role == "critic");
    // the same critic may not take the escalated round
    let e = run
        .submit(commit("c1", "critic-1", RefuterKind::Counterexample))
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.fresh_critic"]);
    round(&mut run, "c1", "critic-2", "production replay at load L");
    let q = &run.pending()[0];
    assert_eq!(q.key, "c1/r2/retreat");
    assert_eq!(q.extra_seats, 2);
    assert!(q.exclude.contains(&"c1/r1/severe-b2".to_string()));
    // only the panel that judged the first attack weak is kept off the escalated round
    assert!(!q.exclude.contains(&"c1/r1/retreat-a1".to_string()));
    assert!(!q.exclude.iter().any(|x| x.starts_with("c1/form")));
    answer(&mut run, "c1/r2/retreat", PanelOutcome::No);
    answer(&mut run, "c1/r2/shield", PanelOutcome::No);
    answer(&mut run, "c1/r2/refuter", PanelOutcome::No);
    answer(&mut run, "c1/r2/severe", PanelOutcome::Yes);
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Corroborated));
    let b = &run.bucketing()[0];
    assert_eq!(b.severity, Severity::Severe);
    assert_eq!(b.committed_refuters[0].severity, Severity::Weak);
    assert!(
        b.recorded
            .as_deref()
            .unwrap()
            .contains("a p99 of 5 ms or more")
    );
    assert!(
        b.cross_exam_findings
            .iter()
            .any(|f| f.rule == "falsify.escalated")
    );
}

#[test]
fn only_weak_attacks_up_the_ladder_stay_untested() {
    let mut s = start(&[("c1", "The filter keeps p99 under 5 ms.")]);
    s.escalation.max_rounds = 2;
    let mut run = FalsifyRun::start(s, &ctx(false)).unwrap();
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    for r in 1..=2 {
        round(&mut run, "c1", &format!("critic-{r}"), "a light load test");
        for step in ["retreat", "shield", "refuter", "severe"] {
            answer(&mut run, &format!("c1/r{r}/{step}"), PanelOutcome::No);
        }
    }
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Untested));
    assert_eq!(
        run.bucketing()[0].rule.as_deref(),
        Some("falsify.only_weak_attacks")
    );
    assert!(run.finished());
}

#[test]
fn a_definitional_retreat_breaks_the_claim_and_splits_off_the_redefined_one() {
    let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    run.submit(commit("c1", "k", RefuterKind::Counterexample))
        .unwrap();
    run.submit(attack(
        "c1",
        "k",
        RefuterKind::Counterexample,
        "p99 7 ms under L",
    ))
    .unwrap();
    let c = cross(&run, "c1", Role::Critic, None);
    run.submit(c).unwrap();
    let d = cross(
        &run,
        "c1",
        Role::Defender,
        Some("By 'p99' we meant p99 of cache hits only."),
    );
    run.submit(d).unwrap();
    answer(&mut run, "c1/r1/retreat", PanelOutcome::Yes);
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Broken));
    let o = run.claim("c1").unwrap().outcome.clone().unwrap();
    assert_eq!(o.rule, "falsify.definitional_retreat");
    assert_eq!(o.successor.as_deref(), Some("c1.v2"));
    let new = run.claim("c1.v2").unwrap();
    assert_eq!(new.text, "By 'p99' we meant p99 of cache hits only.");
    assert_eq!(new.split_from.as_deref(), Some("c1"));
    assert_eq!(new.stage, Stage::AwaitForm);
    assert!(!run.finished());
    assert!(
        run.awaiting()
            .iter()
            .any(|a| a.role == "defender" && a.what.contains("c1.v2"))
    );
    assert!(run.render_markdown().contains("Split from claim c1"));
}

#[test]
fn a_critic_changing_its_refuter_type_is_refused_as_goalpost_shifting() {
    let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    let e = run
        .submit(attack("c1", "k", RefuterKind::Counterexample, "early"))
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.commit_before_argument"]);
    run.submit(commit("c1", "k", RefuterKind::Counterexample))
        .unwrap();
    let before = run.clone();
    let e = run
        .submit(attack(
            "c1",
            "k",
            RefuterKind::DerivationError,
            "the premises do not imply it",
        ))
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.goalpost_shift"]);
    let e = run
        .submit(commit("c1", "k", RefuterKind::EmptyForbiddenSet))
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.goalpost_shift"]);
    assert_eq!(run, before, "refused inputs leave the run unchanged");
    run.submit(attack("c1", "k", RefuterKind::Counterexample, "p99 7 ms"))
        .unwrap();
    let e = run
        .submit(attack("c1", "k", RefuterKind::DerivationError, "again"))
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.goalpost_shift"]);
}

#[test]
fn a_deadlock_keeps_dissent_reasks_wider_and_ends_deadlocked_when_exhausted() {
    let mut s = start(&[("c1", "The filter keeps p99 under 5 ms.")]);
    s.escalation.deadlock_retries = 1;
    let mut run = FalsifyRun::start(s, &ctx(false)).unwrap();
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Deadlocked);
    let q = &run.pending()[0];
    assert_eq!(q.key, "c1/form/a2");
    assert_eq!(q.extra_seats, 2);
    answer(&mut run, "c1/form/a2", PanelOutcome::Deadlocked);
    assert_eq!(bucket(&run, "c1"), Some(Bucket::Deadlocked));
    let b = &run.bucketing()[0];
    assert_eq!(b.questions.len(), 2);
    assert!(
        b.questions.iter().all(|q| q.dissent.len() == 2),
        "every ruling is dissent"
    );
    let md = run.render_markdown();
    assert!(md.contains("it forbids nothing measurable"));
    assert!(md.contains("DEADLOCKED"));
}

#[test]
fn a_model_shield_is_struck_from_the_refuter_question() {
    let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    round(&mut run, "c1", "k", "at realistic key skew p99 is 9 ms");
    answer(&mut run, "c1/r1/retreat", PanelOutcome::No);
    answer(&mut run, "c1/r1/shield", PanelOutcome::Yes);
    let q = &run.pending()[0];
    assert_eq!(q.key, "c1/r1/refuter");
    let d = q
        .items
        .iter()
        .find(|i| i.label == "defender cross-examination")
        .unwrap();
    assert!(d.text.starts_with("struck"));
    assert!(!d.text.contains("defender answer"));
    assert!(
        run.claim("c1")
            .unwrap()
            .findings
            .iter()
            .any(|f| f.rule == "falsify.model_shield")
    );
}

#[test]
fn rhetoric_is_recorded_but_never_shown_to_a_panel() {
    let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    run.submit(commit("c1", "k", RefuterKind::Counterexample))
        .unwrap();
    run.submit(FalsifyInput::Attack {
        claim: "c1".into(),
        critic: "k".into(),
        refuter: RefuterKind::Counterexample,
        case: "p99 7 ms".into(),
        commentary: Some("Everyone knows this team overclaims.".into()),
    })
    .unwrap();
    let c = cross(&run, "c1", Role::Critic, None);
    run.submit(c).unwrap();
    let d = cross(&run, "c1", Role::Defender, None);
    run.submit(d).unwrap();
    let shown = serde_json::to_string(&run.pending()).unwrap();
    assert!(!shown.contains("overclaims"));
    assert!(
        run.claim("c1")
            .unwrap()
            .findings
            .iter()
            .any(|f| f.rule == "falsify.persuasiveness_ignored")
    );
}

#[test]
fn start_refusals_name_rule_and_path() {
    let e = FalsifyRun::start(start(&[]), &ctx(false)).unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.claims"]);
    let e = FalsifyRun::start(
        start(&[("c1", "x"), ("c1", "y"), ("bad id", " ")]),
        &ctx(true),
    )
    .unwrap_err();
    let ProcedureError::Refused(f) = e else {
        panic!()
    };
    let rules: Vec<(&str, &str)> = f.iter().map(|f| (f.rule.as_str(), f.at.as_str())).collect();
    assert!(rules.contains(&("falsify.claim_id_unique", "claims[1].id")));
    assert!(rules.contains(&("falsify.id", "claims[2].id")));
    assert!(rules.contains(&("falsify.text", "claims[2].text")));
    assert!(rules.contains(&("falsify.simulation_required", "simulation")));
    let mut s = start(&[("c1", "x")]);
    s.escalation.max_rounds = 9;
    assert_eq!(
        refused_rule(FalsifyRun::start(s, &ctx(false)).unwrap_err()),
        vec!["falsify.ladder"]
    );
}

#[test]
fn oversized_and_malformed_documents_are_refused_by_name() {
    let big = format!(
        "{{\"claims\": [], \"pad\": \"{}\"}}",
        "x".repeat(falsify::MAX_START_BYTES)
    );
    let e = FalsifyStart::from_json(big.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("falsify.document_size"));
    let e = FalsifyStart::from_json(br#"{"claims": [{"id": "c1", "txt": "x"}]}"#).unwrap_err();
    assert!(e.to_string().contains("claims[0]"), "{e}");
}

#[test]
fn wrong_inputs_and_unknown_questions_are_refused() {
    let mut run = started(&[("c1", "x")]);
    let e = run.submit(form("nope")).unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.unknown_claim"]);
    let e = run
        .submit(commit("c1", "k", RefuterKind::Counterexample))
        .unwrap_err();
    assert!(matches!(e, ProcedureError::OutOfOrder { .. }));
    let e = run
        .settle(&settlement("c1/form", PanelOutcome::Yes, "x"))
        .unwrap_err();
    assert!(matches!(e, ProcedureError::UnknownQuestion(_)));
    let e = run
        .submit(FalsifyInput::Form {
            claim: "c1".into(),
            form: FormReport::Forbidding {
                statement: "s".into(),
                forbids: vec![],
            },
        })
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.form_forbids_nothing"]);
    run.submit(form("c1")).unwrap();
    answer(&mut run, "c1/form", PanelOutcome::Yes);
    run.submit(commit("c1", "k", RefuterKind::Counterexample))
        .unwrap();
    run.submit(attack("c1", "k", RefuterKind::Counterexample, "case"))
        .unwrap();
    let e = run
        .submit(FalsifyInput::CrossExam {
            claim: "c1".into(),
            role: Role::Critic,
            answers: vec!["only one".into()],
            restated_claim: None,
            commentary: None,
        })
        .unwrap_err();
    assert_eq!(refused_rule(e), vec!["falsify.cross_exam_answers"]);
}

/// Drives a run the way the demo does: submit the next scripted input when the run
/// accepts it, otherwise answer every pending question as the script says.
fn drive(run: &mut Run, inputs: Vec<panel_procedures::RunInput>) -> usize {
    let mut inputs = inputs.into_iter().peekable();
    let mut motions = 0;
    for _ in 0..500 {
        if let Some(next) = inputs.peek().cloned() {
            match run.submit(next) {
                Ok(()) => {
                    inputs.next();
                    continue;
                }
                Err(ProcedureError::OutOfOrder { .. }) => {}
                Err(e) => panic!("scripted input refused: {e}"),
            }
        }
        let pending = run.pending();
        if pending.is_empty() {
            break;
        }
        for q in pending {
            let e = q
                .expected
                .clone()
                .expect("simulation questions carry expected answers");
            let outcome = if e.yes {
                PanelOutcome::Yes
            } else {
                PanelOutcome::No
            };
            let s = Settlement {
                key: q.key.clone(),
                motion_id: format!("m{motions}"),
                outcome,
                rulings: vec![
                    PanelRuling {
                        rationale: e.rationale.clone(),
                        ..ruling("a", Prior::A, Some(e.yes), "")
                    },
                    PanelRuling {
                        rationale: e.rationale.clone(),
                        ..ruling("b", Prior::B, Some(e.yes), "")
                    },
                ],
            };
            motions += 1;
            run.settle(&s).unwrap();
        }
    }
    assert!(inputs.next().is_none(), "every scripted input was taken");
    motions
}

#[test]
fn the_demo_fixture_drives_a_whole_run_with_scripted_judges() {
    let mut run = Run::start(RunStart::Falsify(falsify::demo_start()), &ctx(true)).unwrap();
    let inputs = falsify::demo_inputs()
        .into_iter()
        .map(panel_procedures::RunInput::Falsify)
        .collect::<Vec<_>>();
    assert_eq!(inputs.len(), 15);
    let motions = drive(&mut run, inputs);
    assert!(run.finished());
    assert_eq!(motions, 14);
    assert_eq!(
        run.summary(),
        "falsify: batch-size BROKEN, retry-policy UNFALSIFIABLE, bloom-filter CORROBORATED"
    );
    let md = run.render_markdown();
    if std::env::var("SHOW_MD").is_ok() {
        println!("{md}");
    }
    assert!(md.contains("77.0% top-1"));
    assert!(
        !md.contains("folklore"),
        "commentary stays out of the report's evidence"
    );
    let Run::Falsify(f) = &run else { panic!() };
    assert!(f.pending().is_empty());
    let back: Run = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
    assert_eq!(back, run);
}

#[test]
fn simulation_questions_always_carry_expected_answers_and_others_never() {
    let mut sim = FalsifyRun::start(falsify::demo_start(), &ctx(true)).unwrap();
    let mut live = FalsifyRun::start(falsify::demo_start(), &ctx(false)).unwrap();
    for r in [&mut sim, &mut live] {
        r.submit(falsify::demo_inputs().remove(0)).unwrap();
    }
    assert!(sim.pending().iter().all(|q| q.expected.is_some()));
    assert!(live.pending().iter().all(|q| q.expected.is_none()));
}

proptest! {
    /// Whatever the panel answers, a claim ends in a bucket within the ladder's bound,
    /// never corroborated without a severe rating, and every motion key is fresh.
    #[test]
    fn any_answers_end_in_a_bucket_within_bounds(outcomes in proptest::collection::vec(0u8..3, 60)) {
        let mut run = started(&[("c1", "The filter keeps p99 under 5 ms.")]);
        run.submit(form("c1")).unwrap();
        let mut keys = std::collections::BTreeSet::new();
        let mut critics = 0;
        let mut it = outcomes.into_iter();
        for _ in 0..200 {
            if run.finished() { break; }
            if let Some(c) = run.claims.iter().find(|c| c.stage == Stage::AwaitCommit).map(|c| c.id.clone()) {
                critics += 1;
                round(&mut run, &c, &format!("critic-{critics}"), "case");
                continue;
            }
            if let Some(c) = run.claims.iter().find(|c| c.stage == Stage::AwaitForm).map(|c| c.id.clone()) {
                run.submit(form(&c)).unwrap();
                continue;
            }
            let q = run.pending().remove(0);
            prop_assert!(keys.insert(q.key.clone()), "key {} asked twice", q.key);
            let o = match it.next().unwrap_or(1) { 0 => PanelOutcome::Yes, 1 => PanelOutcome::No, _ => PanelOutcome::Deadlocked };
            run.settle(&settlement(&q.key, o, &q.key)).unwrap();
        }
        prop_assert!(run.finished());
        for b in run.bucketing() {
            if b.bucket == Some(Bucket::Corroborated) {
                prop_assert_eq!(b.severity, Severity::Severe);
            }
            prop_assert!(b.committed_refuters.len() <= 3);
        }
    }
}
