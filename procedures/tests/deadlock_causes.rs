//! A deadlocked question says why: each procedure's report prints the causes a shell
//! collected from the motions' records beside the outcome (a unanimous tally labelled
//! "deadlocked" names the condition that failed), and without them prints the bare word
//! it always did. The run itself is untouched: causes live beside it.

use std::collections::VecDeque;

use panel_procedures::{
    DeadlockCause, DeadlockCauses, PanelOutcome, PanelRuling, Prior, Run, RunInput, RunStart,
    Settlement, StartContext, crux, dossier, falsify,
};

fn ctx() -> StartContext {
    StartContext {
        run_id: "run-d1".into(),
        seed: 11,
        simulation: true,
    }
}

/// Two yes rulings from arbiters of prior A only: unanimous, and still short of the
/// cross-stance agreement, so the machine records a deadlock.
fn one_stance(key: &str, motion_id: &str) -> Settlement {
    let ruling = |id: &str| PanelRuling {
        arbiter_id: id.into(),
        prior: Prior::A,
        organisation: "northwind".into(),
        model_family: None,
        yes: Some(true),
        probability_milli: 900,
        rationale: "holds".into(),
        presented: Vec::new(),
    };
    Settlement {
        key: key.into(),
        motion_id: motion_id.into(),
        outcome: PanelOutcome::Deadlocked,
        rulings: vec![ruling("arb-a1"), ruling("arb-a2")],
    }
}

/// Drives a run to its end, every question deadlocking on one stance; returns the run
/// and the causes a shell would have read from the motions.
fn deadlock_everything(start: RunStart, inputs: Vec<RunInput>) -> (Run, DeadlockCauses) {
    let mut run = Run::start(start, &ctx()).expect("the demo starts");
    let mut inputs = VecDeque::from(inputs);
    let mut causes = DeadlockCauses::default();
    let mut n = 0;
    for _ in 0..500 {
        if run.finished() {
            break;
        }
        if let Some(q) = run.pending().into_iter().next() {
            n += 1;
            let motion = format!("m_{n}");
            causes.insert(&motion, vec![DeadlockCause::OneStanceOnly]);
            run.settle(&one_stance(&q.key, &motion))
                .expect("a deadlock is an answer every procedure takes");
            continue;
        }
        if !run.awaiting().is_empty()
            && let Some(input) = inputs.pop_front()
        {
            // An input the deadlocks made moot is refused; the next one may fit.
            let _ = run.submit(input);
            continue;
        }
        break;
    }
    assert!(n > 0, "no question was asked");
    (run, causes)
}

fn check(run: &Run, causes: &DeadlockCauses) {
    let bare = run.render_markdown();
    let said = run.render_markdown_with(causes);
    assert!(bare.contains("deadlocked"), "{bare}");
    assert!(
        said.contains("deadlocked (support from one stance only)"),
        "{said}"
    );
    // Every outcome cell or line that says deadlocked says why.
    for line in said.lines() {
        for (i, _) in line.match_indices("deadlocked") {
            let rest = &line[i + "deadlocked".len()..];
            let explained = rest.starts_with(" (support from one stance only)");
            let prose = rest.starts_with(';')
                || rest.starts_with(" was re-asked")
                || rest.starts_with(" on every attempt")
                || rest.starts_with(")")
                || rest.starts_with(":");
            assert!(
                explained || prose || !line.contains('|'),
                "a table cell says a bare deadlocked: {line}"
            );
        }
    }
}

#[test]
fn a_falsification_report_says_why_each_question_deadlocked() {
    let inputs = falsify::demo_inputs()
        .into_iter()
        .map(RunInput::Falsify)
        .collect();
    let (run, causes) = deadlock_everything(RunStart::Falsify(falsify::demo_start()), inputs);
    check(&run, &causes);
}

#[test]
fn a_dossier_says_why_a_unanimous_attempt_deadlocked() {
    let inputs = dossier::demo_inputs()
        .into_iter()
        .map(RunInput::Dossier)
        .collect();
    let (run, causes) = deadlock_everything(RunStart::Dossier(dossier::demo_start()), inputs);
    let said = run.render_markdown_with(&causes);
    assert!(
        said.contains("| deadlocked (support from one stance only) | 2/0/0 |"),
        "the 2/0/0 row names its cause: {said}"
    );
    check(&run, &causes);
}

#[test]
fn a_crux_report_lists_its_deadlocked_questions_with_why() {
    let start = crux::decode_start(crux::eval::BASELINE.as_bytes()).expect("baseline start");
    let (run, causes) = deadlock_everything(RunStart::Crux(start), Vec::new());
    let said = run.render_markdown_with(&causes);
    assert!(said.contains("## Deadlocked questions"), "{said}");
    assert!(
        said.contains("(motion m_1): deadlocked (support from one stance only)"),
        "{said}"
    );
}

#[test]
fn the_causes_are_not_part_of_the_run() {
    let inputs = falsify::demo_inputs()
        .into_iter()
        .map(RunInput::Falsify)
        .collect();
    let (run, _) = deadlock_everything(RunStart::Falsify(falsify::demo_start()), inputs);
    let json = serde_json::to_string(&run).expect("a run serialises");
    assert!(
        !json.contains("one_stance") && !json.contains("motion_id\":\"m_1\",\"tallies"),
        "records written before causes were shown must replay to the same runs"
    );
}
