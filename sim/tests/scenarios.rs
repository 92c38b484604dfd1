//! The simulator's promises (docs/SIMULATION.md): keyed scenario errors, determinism for a
//! seed, zero forced outcomes for confined coalitions under `Policy::independent()`,
//! nine correlated judges voting no better than their best one, and a small run that
//! renders its report.

use panel_sim::{Options, parse, run};

fn shipped(name: &str) -> panel_sim::Scenario {
    let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("shipped scenario");
    parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn small(name: &str, motions: usize) -> panel_sim::Report {
    let mut s = shipped(name);
    s.analysis.bootstrap = 40;
    s.analysis.history_motions = 300;
    s.analysis.history_windows = 2;
    run(
        &s,
        Options {
            motions: Some(motions),
            sweeps: false,
        },
    )
}

const MINIMAL: &str = r#"
name = "t"
seed = 1
[[family]]
name = "f"
error_correlation = 0.1
[[group]]
name = "g"
count = 4
stance = "A"
organisation = "o{i}"
family = "f"
"#;

#[test]
fn every_shipped_scenario_parses() {
    let dir = format!("{}/scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("scenarios dir") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 12, "{n} scenarios");
}

#[test]
fn parsing_errors_name_the_key() {
    assert!(parse(MINIMAL).is_ok());
    let cases = [
        (
            MINIMAL.replace("count = 4", "count = \"four\""),
            "group[0].count",
        ),
        (
            MINIMAL.replace("count = 4", "count = 4\naccuracy = 1.5"),
            "group[0].accuracy",
        ),
        (
            MINIMAL.replace("family = \"f\"\n", "family = \"nope\"\n"),
            "group[0].family",
        ),
        (
            MINIMAL.replace("seed = 1", "seed = 1\n[panel]\nseats = 1"),
            "panel.seats",
        ),
        (
            MINIMAL.replace("seed = 1", "seed = 1\n[world]\nbase_rate = 2.0"),
            "world.base_rate",
        ),
        (
            MINIMAL.replace("count = 4", "count = 4\ncolour = 3"),
            "group[0].colour",
        ),
        (
            MINIMAL.replace("count = 4", "count = 4\ncoalition = \"x\""),
            "group[0].target",
        ),
        (
            MINIMAL.replace(
                "seed = 1",
                "seed = 1\n[leader]\nrerolls = 4\nfavours = \"x\"",
            ),
            "leader.favours",
        ),
        (
            MINIMAL.replace("error_correlation = 0.1", "error_correlation = 1.5"),
            "family[0].error_correlation",
        ),
    ];
    for (text, key) in cases {
        let err = parse(&text).expect_err(key);
        assert!(err.to_string().contains(key), "{key}: {err}");
    }
    let err = parse("name = \"x\"\nseed = 1\ngroup = []").expect_err("no groups");
    assert_eq!(err.key(), "group");
    assert!(err.to_string().contains("add at least one"), "{err}");
}

#[test]
fn a_run_is_deterministic_for_a_seed() {
    let a = small("coalition-one-organisation", 600);
    let b = small("coalition-one-organisation", 600);
    // Debug text, so that undefined (NaN) figures compare equal too.
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let mut s = shipped("coalition-one-organisation");
    s.seed += 1;
    s.analysis.bootstrap = 40;
    s.analysis.history_windows = 1;
    let c = run(
        &s,
        Options {
            motions: Some(600),
            sweeps: false,
        },
    );
    assert_ne!(a.quality, c.quality, "the seed must matter");
}

#[test]
fn confined_coalitions_force_nothing_under_the_independence_policy() {
    for name in [
        "coalition-one-stance",
        "coalition-one-organisation",
        "coalition-one-lineage",
        "steering-leader",
    ] {
        let r = small(name, 3_000);
        assert!(!r.coalitions.is_empty());
        for c in &r.coalitions {
            let conf = &c.confinement;
            assert!(
                conf.one_stance || conf.one_organisation || conf.one_lineage,
                "{c:?}"
            );
            assert_eq!(c.forced_new, 0, "{name}: {c:?}");
            assert_eq!(c.forced_new_steered.unwrap_or(0), 0, "{name}: {c:?}");
        }
        // The old rule lets the organisation and lineage coalitions through.
        if name.contains("organisation") || name.contains("lineage") {
            assert!(r.coalitions[0].forced_old > 0, "{name}: {:?}", r.coalitions);
        }
    }
}

#[test]
fn the_steering_leader_gains_seats_only_under_the_old_draw() {
    let r = small("steering-leader", 2_000);
    let c = &r.coalitions[0];
    assert!(c.seats_old.low > c.seats_new.high, "{c:?}");
}

/// Nine judges in three strongly correlated lineages add little to one another: their
/// majority is about as accurate as the best of them.
#[test]
fn nine_correlated_judges_vote_about_as_well_as_their_best_one() {
    let r = small("nine-judges", 3_000);
    let e = &r.quality.estimators;
    let (majority, single) = (e[2].accuracy.estimate, e[3].accuracy.estimate);
    assert!(
        (majority - single).abs() < 0.03,
        "majority {majority}, best single {single}"
    );
}

#[test]
fn a_small_run_renders_its_report_and_plots() {
    let mut s = shipped("baseline");
    s.analysis.bootstrap = 20;
    s.analysis.sweep_motions = 300;
    s.analysis.history_motions = 200;
    s.analysis.history_windows = 1;
    s.analysis.sweep_seats = vec![3, 5];
    s.analysis.sweep_correlations = vec![0.0, 0.5];
    let r = run(
        &s,
        Options {
            motions: Some(500),
            sweeps: true,
        },
    );
    let plots = panel_sim::plot::plots(&r);
    let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"accuracy-by-panel-size.svg"), "{names:?}");
    assert!(names.contains(&"accuracy-by-correlation.svg"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("reliability-")),
        "{names:?}"
    );
    for (_, svg) in &plots {
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
    let md = panel_sim::markdown::render(&r, &plots, "img");
    assert!(
        md.contains("## Scenario `baseline`") && md.contains("](img/accuracy-by-panel-size.svg)")
    );
    // The n_eff the machine applies is the apply engine's figure, not measured against truth.
    assert!(
        md.contains("`--engine apply`") && !md.contains("n_eff |"),
        "{md}"
    );
    assert!(serde_json::to_string(&r).is_ok());
}

/// Version 2 of the prior-consistency check on a few 400-motion windows: it finds the
/// false declarations, and flags neither lineages that straddle the stances (version 1
/// flags 30% of the nine judges) nor the honest half of a stance a colluding camp shares.
#[test]
fn version_2_of_the_prior_check_finds_impostors_and_spares_lineages_and_camps() {
    let windows = |name: &str, n: usize| {
        let mut s = shipped(name);
        s.analysis.bootstrap = 20;
        s.analysis.history_motions = 400;
        s.analysis.history_windows = n;
        let r = run(
            &s,
            Options {
                motions: Some(400 * n),
                sweeps: false,
            },
        );
        r.impostors.expect("declared camps")
    };
    let fp = windows("false-priors", 4);
    assert!(fp.recall.estimate >= 0.75, "{fp:?}");
    assert_eq!(fp.false_flag_rate.estimate, 0.0, "{fp:?}");
    let sy = windows("sybils", 3);
    assert_eq!(sy.recall.estimate, 1.0, "{sy:?}");
    for name in ["nine-judges", "coalition-one-stance"] {
        let f = windows(name, 3);
        assert_eq!(f.false_flag_rate.estimate, 0.0, "{name}: {f:?}");
        assert!(f.false_flag_rate_v1.estimate > 0.2, "{name}: {f:?}");
    }
}

/// docs/PANEL.md "Random-sample appeals": where panels are drawn from volunteers, a
/// spread camp that always volunteers meets every independence rule and decides every
/// outcome it carries wrongly; random samples of the whole pool, appealed to on every
/// accepted outcome (up to three rounds), override some of them and leave fewer outcomes
/// the camp alone carried. The override is bounded by how rarely the independence rule
/// answers at all (docs/SIMULATION.md "Self-selection").
#[test]
fn a_random_sample_overrides_a_self_selected_coalition() {
    let r = small("coalition-self-selected", 1_500);
    let f = r.self_selection.first().expect("the camp's figures");
    assert!(f.answered > 100, "{f:?}");
    assert!(
        f.correct * 10 < f.answered,
        "the camp decides wrongly: {f:?}"
    );
    assert!(f.overridden > 0, "{f:?}");
    assert!(f.final_correct > f.correct, "{f:?}");
    assert!(f.final_forced < f.forced, "{f:?}");
    assert!(f.overridden + f.undecided_samples <= f.answered, "{f:?}");
    // A camp confined to one stance decides next to nothing even from volunteers.
    let r = small("coalition-one-stance", 1_500);
    let f = r.self_selection.first().expect("the camp's figures");
    assert!(f.answered * 20 < f.motions, "{f:?}");
}
