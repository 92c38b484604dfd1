//! The decision aid a crux run prints (seed `crux.txt`: "Crux never gates; it produces a
//! decision aid"): the accepted crux and what would resolve it, whether a verdict is
//! warranted now with per-stance tallies, the dissent, and the record that makes the
//! run auditable (pack hash, checks, seed, presented-first order).

use std::fmt::Write;

use super::CruxRun;
use super::convergence::{CandidateStatus, Mediation, OrderAudit, Stage, VerdictAnswer};
use crate::deadlock::DeadlockCauses;
use crate::panel::{PanelOutcome, Prior, Tally};

/// One line for listings.
pub fn summary(run: &CruxRun) -> String {
    let med = &run.mediation;
    match (med.stage, run.accepted(), &med.verdict, &med.deadlock) {
        (Stage::Done, Some(c), Some(v), _) => format!(
            "crux accepted: {} — verdict now: {}",
            c.crux,
            verdict_word(v.answer)
        ),
        (Stage::Done, _, _, Some(why)) => format!("crux deadlocked: {why}"),
        (Stage::Mediating, ..) => "crux: waiting for the panel's crux reports".into(),
        (Stage::Converging, ..) => "crux: the panel is weighing the proposed cruxes".into(),
        (Stage::Verdict, Some(c), ..) => {
            format!("crux accepted: {} — verdict question open", c.crux)
        }
        _ => "crux: in progress".into(),
    }
}

fn verdict_word(a: VerdictAnswer) -> &'static str {
    match a {
        VerdictAnswer::Warranted => "warranted",
        VerdictAnswer::NotWarranted => "not warranted, resolve the crux first",
        VerdictAnswer::Deadlocked => "deadlocked",
    }
}

/// The run as Markdown; a deadlocked question prints its causes where `causes` has them.
pub fn markdown(run: &CruxRun, causes: &DeadlockCauses) -> String {
    let mut out = String::new();
    let m = &run.materials;
    let _ = writeln!(out, "# Crux: {}\n", m.decision.trim());
    let _ = writeln!(out, "{}\n", summary(run));
    crux_section(run, &mut out, causes);
    deadlocks_section(&run.mediation, &mut out, causes);
    dissent_section(run, &mut out);
    record_section(run, &mut out);
    out
}

fn tally_table(out: &mut String, tallies: &[(Prior, Tally)]) {
    let _ = writeln!(
        out,
        "| declared prior | yes | no | abstain |\n|---|---|---|---|"
    );
    for (p, t) in tallies {
        let name = match p {
            Prior::A => "A (optimist)",
            Prior::B => "B (pessimist)",
            Prior::None => "none",
        };
        let _ = writeln!(out, "| {name} | {} | {} | {} |", t.yes, t.no, t.abstain);
    }
    out.push('\n');
}

fn crux_section(run: &CruxRun, out: &mut String, causes: &DeadlockCauses) {
    let med = &run.mediation;
    match run.accepted() {
        Some(c) => {
            let _ = writeln!(out, "## Accepted crux\n\n> {}\n", c.crux);
            let _ = writeln!(
                out,
                "**Why both positions depend on it.** {}\n",
                c.why_both_depend
            );
            let _ = writeln!(out, "**What would resolve it.** {}\n", c.resolved_by);
            let _ = writeln!(
                out,
                "Proposed by {} arbiter(s); accepted by the panel with {} yes:\n",
                c.proposed_by.len(),
                c.support
            );
            tally_table(out, &c.tallies);
        }
        None => {
            let _ = writeln!(out, "## No accepted crux\n");
            if let Some(why) = &med.deadlock {
                let _ = writeln!(
                    out,
                    "Recorded deadlock: {why}. Nothing is decided; every \
                                       arbiter's crux below is dissent.\n"
                );
            }
        }
    }
    if let Some(v) = &med.verdict {
        let _ = writeln!(
            out,
            "## Is a verdict warranted now?\n\n**{}**\n",
            verdict_word(v.answer)
        );
        tally_table(out, &v.tallies);
    }
    for c in med
        .candidates
        .iter()
        .filter(|c| c.status != CandidateStatus::Accepted)
    {
        let status = match c.status {
            CandidateStatus::Rejected => "rejected".to_string(),
            CandidateStatus::Deadlocked => motion_of(med, &c.ask.key()).map_or_else(
                || "deadlocked".to_string(),
                |m| causes.outcome(PanelOutcome::Deadlocked, m),
            ),
            CandidateStatus::Open => "open".to_string(),
            CandidateStatus::Accepted => "accepted".to_string(),
        };
        let _ = writeln!(
            out,
            "- Proposed crux ({status}, {} yes): {}",
            c.support, c.crux
        );
    }
    for n in &med.notes {
        let _ = writeln!(out, "- Note: {n}");
    }
    out.push('\n');
}

/// The motion that settled `key` last (a re-ask has its own key).
fn motion_of<'a>(med: &'a Mediation, key: &str) -> Option<&'a str> {
    med.settlements
        .iter()
        .rev()
        .find(|s| s.key == key)
        .map(|s| s.motion_id.as_str())
}

/// Every question the panel deadlocked on, with why where the causes are known.
fn deadlocks_section(med: &Mediation, out: &mut String, causes: &DeadlockCauses) {
    let dead: Vec<_> = med
        .settlements
        .iter()
        .filter(|s| s.outcome == PanelOutcome::Deadlocked)
        .collect();
    if dead.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Deadlocked questions
"
    );
    for s in dead {
        let _ = writeln!(
            out,
            "- `{}` (motion {}): {}",
            s.key,
            s.motion_id,
            causes.outcome(s.outcome, &s.motion_id)
        );
    }
    out.push('\n');
}

fn dissent_section(run: &CruxRun, out: &mut String) {
    let med = &run.mediation;
    if med.reports.is_empty() {
        return;
    }
    let accepted = run.accepted().map(|c| c.crux.as_str());
    let _ = writeln!(out, "## Every arbiter's crux (dissent kept)\n");
    for r in &med.reports {
        let crux = r.report.as_ref().map_or("(no report)".to_string(), |rep| {
            rep.primary_crux.trim().to_string()
        });
        let mark = if !r.gate.is_empty() {
            let rules: Vec<&str> = r.gate.iter().map(|f| f.rule.as_str()).collect();
            format!(" — gate failure: {}", rules.join(", "))
        } else if Some(crux.as_str()) == accepted {
            String::new()
        } else {
            " — dissent".to_string()
        };
        let _ = writeln!(
            out,
            "- {} (prior {:?}, {}, {}): {crux}{mark}",
            r.arbiter_id, r.prior, r.organisation, r.key
        );
    }
    if let Some(v) = &med.verdict {
        for r in &v.rulings {
            let _ = writeln!(
                out,
                "- verdict, {} (prior {:?}): {} — {}",
                r.arbiter_id,
                r.prior,
                match r.yes {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "abstain",
                },
                r.rationale.trim()
            );
        }
    }
    out.push('\n');
}

fn record_section(run: &CruxRun, out: &mut String) {
    let m = &run.materials;
    let _ = writeln!(out, "## Record\n");
    let _ = writeln!(out, "- run {}, seed {}", m.run_id, m.seed);
    let _ = writeln!(
        out,
        "- evidence pack {} ({} items)",
        m.pack_hash,
        m.pack.items.len()
    );
    for a in &m.advocates {
        let _ = writeln!(
            out,
            "- {} advocate: {} ({}, family {}); kept off the panel",
            a.side.name(),
            a.model,
            a.provider,
            a.family
        );
    }
    for c in &m.checks {
        let _ = writeln!(
            out,
            "- check {}: {} ({})",
            c.family,
            if c.passed { "passed" } else { "FAILED" },
            c.measured
        );
    }
    for r in &run.mediation.reports {
        let order = match r.order {
            OrderAudit::Recorded => "derived from the draw seed and the arbiter's key",
            OrderAudit::Malformed => "MALFORMED: not an order of the items shown",
            OrderAudit::NotRecorded => "not recorded",
        };
        let _ = writeln!(
            out,
            "- {} on {} was shown first: {} (order {order})",
            r.arbiter_id,
            r.key,
            r.presented.first().map_or("?", String::as_str)
        );
    }
}
