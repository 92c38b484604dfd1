//! The Markdown report of one scenario (docs/SIMULATION.md is these, one per shipped
//! scenario). Images are linked as `{image_dir}/{file}` so the same text works next to
//! the plots and from docs/.

use std::fmt::Write as _;

use crate::bootstrap::Interval;
use crate::plot::Plot;
use crate::report::Report;
use crate::sweep::SweepPoint;

/// Render `r`; `plots` are the files [`crate::plot::plots`] made, found under `image_dir`.
pub fn render(r: &Report, plots: &[Plot], image_dir: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Scenario `{}`\n", r.scenario);
    if !r.description.is_empty() {
        let _ = writeln!(s, "{}\n", r.description.trim());
    }
    let _ = writeln!(
        s,
        "{} motions ({} binary), panels of {} from a pool of {}, seed {}. Intervals are 95% bootstrap intervals.\n",
        r.motions, r.quality.motions, r.seats, r.pool, r.seed
    );
    quality(&mut s, r);
    n_eff_note(&mut s);
    coalitions(&mut s, r);
    self_selection(&mut s, r);
    impostors(&mut s, r);
    relevance(&mut s, r);
    sweep(
        &mut s,
        "Accuracy against panel size",
        "seats",
        &r.by_panel_size,
    );
    sweep(
        &mut s,
        "Accuracy against within-lineage error correlation",
        "ρ",
        &r.by_correlation,
    );
    if !plots.is_empty() {
        let _ = writeln!(s, "### Plots\n");
        for (file, _) in plots {
            let _ = writeln!(s, "![{file}]({image_dir}/{file})");
        }
        s.push('\n');
    }
    s
}

fn quality(s: &mut String, r: &Report) {
    let _ = writeln!(s, "### Verdict quality (binary motions)\n");
    let _ = writeln!(
        s,
        "| estimator | accuracy of answers | coverage | wrong outcomes per motion | Brier |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for e in &r.quality.estimators {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            e.name,
            e.accuracy.show(),
            e.coverage.show(),
            e.wrong_rate.show(),
            e.brier.show()
        );
    }
    let _ = writeln!(
        s,
        "\nBest single member: `{}`. A deadlocked panel gives no answer (coverage) and forecasts 0.5.\n",
        r.best_single_member
    );
}

/// Where the truth-measured n_eff once stood: why this engine has none.
fn n_eff_note(s: &mut String) {
    let _ = writeln!(
        s,
        "The effective number of votes (Kish n_eff) the machine applies is measured against accepted outcomes inside apply and is reported by `--engine apply` (docs/SIMULATION.md \"The machine's own path\").\n"
    );
}

/// The self-selected panels of each coalition, before and after the random sample.
fn self_selection(s: &mut String, r: &Report) {
    if r.self_selection.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Self-selected panels and the random sample
"
    );
    let _ = writeln!(
        s,
        "Panels drawn only from volunteers (every coalition member, each honest arbiter with probability {}), decided under `Policy::independent()`; every accepted outcome is then appealed to random samples of the whole pool, each {} seats wider than the last and without any earlier sitter, for up to {} rounds until one decides; a sample's accepted other answer stands (docs/PANEL.md \"Random-sample appeals\"). The last column decides the same samples by the head-count rule instead.\n",
        crate::self_selection::HONEST_TURNOUT,
        crate::self_selection::SAMPLE_WIDENING,
        crate::self_selection::ROUNDS
    );
    let _ = writeln!(
        s,
        "| coalition | motions | answered | accuracy, self-selected | overridden by a sample | no sample decided | accuracy after the samples | coalition alone carried, before | after | accuracy after, samples by head count |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    let share = |k: usize, n: usize| {
        if n == 0 {
            "n/a".to_string()
        } else {
            format!("{:.3}", k as f64 / n as f64)
        }
    };
    for f in &r.self_selection {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            f.coalition,
            f.motions,
            f.answered,
            share(f.correct, f.answered),
            f.overridden,
            f.undecided_samples,
            share(f.final_correct, f.final_answered),
            f.forced,
            f.final_forced,
            share(f.head_count_correct, f.final_answered)
        );
    }
    let _ = writeln!(s);
}

fn coalitions(s: &mut String, r: &Report) {
    if r.coalitions.is_empty() {
        return;
    }
    let _ = writeln!(s, "### Coalitions: outcomes they alone carried\n");
    if let Some((rerolls, c)) = &r.leader {
        let _ = writeln!(
            s,
            "A leader re-rolls the old batch draw seed {rerolls} times per motion and keeps the panel with the most seats of `{c}`; the unsteerable draw ignores it.\n"
        );
    }
    let _ = writeln!(
        s,
        "| coalition | members | confined to | forced, old rule | forced, independent | forced, independent on steered panel | seats held, old draw | seats held, unsteerable draw |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for c in &r.coalitions {
        let steered = c.forced_new_steered.map_or("n/a".into(), |n| n.to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.members,
            c.confinement.describe(),
            c.forced_old,
            c.forced_new,
            steered,
            c.seats_old.show(),
            c.seats_new.show()
        );
    }
    s.push('\n');
}

fn impostors(s: &mut String, r: &Report) {
    let Some(i) = &r.impostors else { return };
    let _ = writeln!(s, "### Impostors (prior-consistency check)\n");
    let _ = writeln!(
        s,
        "{} windows of {} motions; {} impostor checks and {} honest checks in all (goal: recall at least 0.90 at at most 0.05 false flags). Windows the fit refused: {}.\n",
        i.windows, i.window_motions, i.impostors, i.honest, i.failed_windows
    );
    let _ = writeln!(s, "| rule | recall | false-flag rate | colluders flagged |");
    let _ = writeln!(s, "|---|---|---|---|");
    let _ = writeln!(
        s,
        "| version 2 (`check_priors_v2`) | {} | {} | {} |",
        i.recall.show(),
        i.false_flag_rate.show(),
        i.colluders_flagged
    );
    let _ = writeln!(
        s,
        "| version 1 (`check_priors`) | {} | {} | {} |\n",
        i.recall_v1.show(),
        i.false_flag_rate_v1.show(),
        i.colluders_flagged_v1
    );
}

fn relevance(s: &mut String, r: &Report) {
    let Some(f) = &r.relevance else { return };
    let _ = writeln!(s, "### Relevance motions\n");
    let _ = writeln!(
        s,
        "{} relevance motions. Accepted step exact: old rule {}, independent {} (coverage {}). Inert screen: {} of {} inert arbiters flagged, {} of {} others.\n",
        f.motions,
        f.exact_old.show(),
        f.exact_new.show(),
        f.coverage_new.show(),
        f.inert_flagged,
        f.inert,
        f.others_flagged,
        f.others
    );
}

fn sweep(s: &mut String, title: &str, x: &str, points: &[SweepPoint]) {
    if points.is_empty() {
        return;
    }
    let _ = writeln!(s, "### {title}\n");
    let _ = writeln!(
        s,
        "| {x} | old rule | independent | independent coverage | majority | best single |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    let f = |i: &Interval| i.show();
    for p in points {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            p.x,
            f(&p.old),
            f(&p.independent),
            f(&p.independent_coverage),
            f(&p.majority),
            f(&p.best_single)
        );
    }
    s.push('\n');
}
