//! The simulator running the machine (docs/SIMULATION.md "The machine's own path"):
//! outcome counts add up, an honest pool gets answers, and a confined coalition forces
//! no outcome against the truth through `apply` where the direct engine says so.

use panel_sim::panel::Verdict;
use panel_sim::replica::{self, Admission, POLICIES, ReplicaOptions};
use panel_sim::replica_figures::measure;
use panel_sim::{Options, parse, run};

fn shipped(name: &str) -> panel_sim::Scenario {
    let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("shipped scenario");
    let mut s = parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    s.analysis.bootstrap = 40;
    s.analysis.history_motions = 300;
    s.analysis.history_windows = 2;
    s
}

fn options(motions: usize) -> ReplicaOptions {
    ReplicaOptions {
        start_ms: replica::START_MS,
        step_ms: replica::STEP_MS,
        motions,
        admission: Admission::TestCommand,
        asks: replica::LADDER_ASKS,
        appeals: panel_sim::appeal_ladder::Appellants::NONE,
    }
}

#[test]
fn an_honest_pool_gets_answers_through_apply_and_the_counts_add_up() {
    let s = shipped("baseline");
    let o = options(120);
    let run = replica::run(&s, &o).expect("the machine applies every step");
    assert_eq!(run.admitted, 24);
    let motions = &run.motions;
    assert_eq!(motions.len(), 120);
    for m in motions {
        assert_eq!(m.verdicts.len(), POLICIES.len());
        for v in &m.verdicts {
            // The first panel has the scenario's seats; each re-ask two more, and none
            // of the earlier sitters.
            assert!(
                v.first_seated.is_empty() || v.first_seated.len() == s.panel.seats,
                "{v:?}"
            );
            assert_eq!(
                v.seated.len(),
                v.first_seated.len() + 2 * (v.asks - 1),
                "{v:?}"
            );
            if v.asks > 1 {
                assert!(
                    v.seated.iter().all(|i| !v.first_seated.contains(i)),
                    "{v:?}"
                );
            }
            // A motion without an outcome says why; an accepted one gives no reason.
            match v.verdict {
                Verdict::Deadlocked | Verdict::NoPanel => assert!(!v.reasons.is_empty(), "{v:?}"),
                _ => assert!(v.reasons.is_empty(), "{v:?}"),
            }
        }
    }
    let r = measure(&s, &run, &o);
    assert_eq!(r.policies.len(), 3);
    let binary = motions.iter().filter(|m| m.gold.is_none()).count();
    for f in &r.policies {
        assert_eq!(f.motions, binary);
        assert_eq!(f.accepted + f.deadlocked + f.no_panel, f.motions, "{f:?}");
        assert_eq!(f.with_confidence, f.accepted, "{f:?}");
        let cover = f.machine.coverage.estimate;
        assert!((cover - f.accepted as f64 / f.motions as f64).abs() < 1e-12);
        // An honest pool: what is accepted is mostly right.
        assert!(f.machine.accuracy.estimate > 0.8, "{f:?}");
    }
    let default = &r.policies[1];
    assert!(default.machine.coverage.estimate > 0.2, "{default:?}");
    assert!(r.policies[0].accepted > 0, "{:?}", r.policies[0]);
    // The weighted pool answers most honest motions, the ladder adding to the first
    // panel's answers, and answers more than the independent head count.
    let weighted = &r.policies[2];
    assert_eq!(weighted.policy, "weighted");
    assert!(weighted.machine.coverage.estimate > 0.6, "{weighted:?}");
    assert!(weighted.accepted > r.policies[0].accepted, "{weighted:?}");
    assert!(weighted.by_ask.len() > 1, "{:?}", weighted.by_ask);
    let by_ask: usize = weighted.by_ask.iter().map(|a| a.answered).sum();
    assert_eq!(by_ask, weighted.accepted);
    // The same world and rulings give the same outcomes.
    assert_eq!(replica::run(&s, &o).expect("rerun"), run);
}

#[test]
fn a_confined_coalition_forces_nothing_against_the_truth_through_apply() {
    for name in ["coalition-one-stance", "coalition-one-organisation"] {
        let s = shipped(name);
        let direct = run(
            &s,
            Options {
                motions: Some(300),
                sweeps: false,
            },
        );
        assert!(
            direct.coalitions.iter().all(|c| c.forced_new == 0),
            "{name}"
        );
        let o = options(300);
        let r = measure(&s, &replica::run(&s, &o).expect("applies"), &o);
        for f in [&r.policies[0], &r.policies[2]] {
            assert!(!f.forced.is_empty(), "{name}: a coalition");
            for (c, n) in &f.forced {
                assert_eq!(
                    *n, 0,
                    "{name}: coalition {c} forced outcomes through apply under {}",
                    f.policy
                );
            }
        }
    }
}

/// The pool sits a sealed exam through apply, answered by the judge model; the machine's
/// bars (kappa against gold among them) admit only some of the baseline's judges, of
/// accuracy 0.70 to 0.80, and panels are drawn from those alone.
#[test]
fn the_exam_admits_through_apply_and_only_the_admitted_sit() {
    let s = shipped("baseline");
    let o = ReplicaOptions {
        admission: Admission::Exam,
        ..options(20)
    };
    let run = replica::run(&s, &o).expect("the sitting and the motions apply");
    assert!(run.admitted > 0 && run.admitted < 24, "{}", run.admitted);
    for m in &run.motions {
        for v in &m.verdicts {
            assert!(v.seated.len() <= run.admitted, "{v:?}");
        }
    }
}

/// `exam-record`: a sitting for the record, then everyone admitted; each sitter's
/// held-back items are on its track record, which the weighted pool reads.
#[test]
fn a_sitting_for_the_record_starts_every_track_record_and_admits_everyone() {
    let s = shipped("baseline");
    let o = ReplicaOptions {
        admission: Admission::ExamRecord,
        ..options(10)
    };
    let run = replica::run(&s, &o).expect("the sitting and the motions apply");
    assert_eq!(run.admitted, 24);
    let r = measure(&s, &run, &o);
    assert_eq!(
        r.policies[2].motions,
        run.motions.iter().filter(|m| m.gold.is_none()).count()
    );
}
