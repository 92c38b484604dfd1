//! The dossier as Markdown (`panel dossier show`) and the content the Quench panel is
//! shown. Nothing nominated, conceded, dissented, unknown, cited or omitted is left out
//! (`seeds/spellweaver-crucible.txt`, "Quench without crowning a winner").

use std::fmt::Write;

use crate::deadlock::DeadlockCauses;
use crate::panel::{Prior, ShownItem, tallies};

use super::branch::{Branch, TerminalStatus};
use super::input::ReportClaim;
use super::quench::Synthesis;
use super::{DossierRun, item};

/// The inert-text notice every rendering carries.
pub const INERT: &str = "This dossier is inert text. It carries no effect authority: it does not decide, bind, deploy, spend or publish anything. The owner may act on it under the owner's own authority, by a separate act.";

/// What the Quench panel sees: the framing, the evidence floor and one item per branch
/// (shuffled per arbiter, so no position always comes first).
pub fn quench_items(run: &DossierRun) -> Vec<ShownItem> {
    let mut out = vec![
        item("framing", framing_text(run)),
        item("evidence floor", evidence_text(run)),
    ];
    for b in &run.branches {
        out.push(item(
            &format!("position: {}", b.advocate.posture),
            branch_text(run, b),
        ));
    }
    out
}

fn framing_text(run: &DossierRun) -> String {
    let fr = &run.framing;
    let mut s = format!(
        "Question: {}\nOwner: {}\n",
        fr.question,
        fr.owner.as_deref().unwrap_or("")
    );
    if let Some(b) = &fr.base {
        let _ = writeln!(s, "Base: {b}");
    }
    s.push_str("Acceptance criteria:\n");
    for c in &fr.acceptance_criteria {
        let _ = writeln!(s, "- {c}");
    }
    for o in &fr.omissions {
        let _ = writeln!(s, "Declared omission: {o}");
    }
    s
}

fn evidence_text(run: &DossierRun) -> String {
    run.framing
        .evidence
        .iter()
        .map(|e| format!("[{}] {} (source: {})", e.id, e.summary, e.source))
        .collect::<Vec<_>>()
        .join("\n")
}

fn branch_text(run: &DossierRun, b: &Branch) -> String {
    let mut s = format!(
        "Position: {}\nStatus: {}\n",
        b.advocate.position,
        status_words(&b.status(&run.projection(b.id()).targets()))
    );
    for c in b.nominated() {
        let _ = writeln!(s, "Strongest claim {}", claim_line(c));
    }
    if let Some(n) = &b.nomination {
        let _ = writeln!(s, "Concession: {}", n.concession);
    }
    for r in b.rebuttals.iter().flatten() {
        let _ = writeln!(
            s,
            "Rebuts {}/{}: {}",
            r.target.advocate, r.target.claim, r.text
        );
    }
    for m in b.report.iter().flat_map(|r| &r.missing_evidence) {
        let _ = writeln!(s, "Missing evidence: {m}");
    }
    s
}

fn claim_line(c: &ReportClaim) -> String {
    let cites = if c.citations.is_empty() {
        "no source".to_string()
    } else {
        c.citations.join(", ")
    };
    let mut s = format!(
        "{}: {} [cites: {cites}; defeated if: {}]",
        c.id, c.text, c.defeat_condition
    );
    for u in &c.unknowns {
        let _ = write!(s, " [UNKNOWN: {u}]");
    }
    s
}

fn status_words(s: &TerminalStatus) -> String {
    match s {
        TerminalStatus::InProgress => "in progress".into(),
        TerminalStatus::Complete => "complete".into(),
        TerminalStatus::IncompleteRebuttal { unanswered } => format!(
            "incomplete rebuttal (unanswered: {})",
            unanswered
                .iter()
                .map(|t| format!("{}/{}", t.advocate, t.claim))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        TerminalStatus::Failed(f) => format!(
            "FAILED ({:?} at {}): {}; its side is missing, not conceded",
            f.status,
            f.phase.name(),
            f.note
        ),
    }
}

/// The dossier; a deadlocked attempt prints its causes where `causes` has them.
pub fn markdown(run: &DossierRun, causes: &DeadlockCauses) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Decision dossier {}\n", run.run_id);
    let _ = writeln!(out, "> {INERT}\n");
    if let Some(r) = &run.retry_of {
        let changed = if r.changed.is_empty() {
            "nothing declared".into()
        } else {
            r.changed
                .iter()
                .map(|c| format!("{c:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "Retry of run `{}` (that run is unchanged). Changed: {changed}. Reason: {}\n",
            r.run_id, r.reason
        );
    }
    framing_section(&mut out, run);
    attribution(&mut out, run);
    clashes(&mut out, run);
    quench_section(&mut out, run, causes);
    if !run.findings.is_empty() {
        let _ = writeln!(out, "## Findings\n");
        for f in &run.findings {
            let _ = writeln!(out, "- `{}` at {}: {}", f.rule, f.at, f.reason);
        }
    }
    out
}

fn framing_section(out: &mut String, run: &DossierRun) {
    let fr = &run.framing;
    let _ = writeln!(out, "## Framing\n");
    let _ = writeln!(out, "- **Question:** {}", fr.question);
    let _ = writeln!(out, "- **Owner:** {}", fr.owner.as_deref().unwrap_or(""));
    if let Some(b) = &fr.base {
        let _ = writeln!(out, "- **Base:** {b}");
    }
    for c in &fr.acceptance_criteria {
        let _ = writeln!(out, "- **Acceptance criterion:** {c}");
    }
    for e in &fr.evidence {
        let _ = writeln!(
            out,
            "- **Evidence `{}`:** {} (source: {})",
            e.id, e.summary, e.source
        );
    }
    for o in &fr.omissions {
        let _ = writeln!(out, "- **Declared omission:** {o}");
    }
    for b in &fr.biases {
        let _ = writeln!(
            out,
            "- **Bias of {}:** {} (defeated if: {})",
            b.holder,
            b.angle,
            b.defeat_condition.as_deref().unwrap_or("")
        );
    }
    let l = fr.limits;
    let _ = writeln!(
        out,
        "- **Limits:** {} claims per report, {} nominated, {} characters per claim, {} characters of projection, {} deadlock re-asks\n",
        l.max_claims,
        l.max_nominated,
        l.max_claim_chars,
        l.max_projection_chars,
        l.deadlock_retries
    );
}

fn attribution(out: &mut String, run: &DossierRun) {
    let _ = writeln!(out, "## Advocates\n");
    let _ = writeln!(
        out,
        "| advocate | posture | model | provider | family | budget | terminal status |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (b, (_, st)) in run.branches.iter().zip(run.statuses()) {
        let a = &b.advocate;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} tokens, {} s, {} chars | {} |",
            a.id,
            a.posture,
            a.model,
            a.provider,
            a.family,
            a.budget.tokens,
            a.budget.seconds,
            a.budget.context_chars,
            status_words(&st)
        );
    }
    out.push('\n');
}

fn clashes(out: &mut String, run: &DossierRun) {
    let _ = writeln!(out, "## Clash I reports\n");
    for b in &run.branches {
        let _ = writeln!(out, "### {} ({})\n", b.id(), b.advocate.posture);
        let _ = writeln!(out, "Position: {}\n", b.advocate.position);
        let Some(r) = &b.report else {
            let _ = writeln!(out, "No report: the branch is missing.\n");
            continue;
        };
        let _ = writeln!(out, "Report `sha256:{}`\n", r.digest);
        for c in &r.claims {
            let _ = writeln!(out, "- {}", claim_line(c));
        }
        for m in &r.missing_evidence {
            let _ = writeln!(out, "- MISSING EVIDENCE: {m}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## Temper: the join\n");
    for b in &run.branches {
        match &b.nomination {
            Some(n) => {
                for c in b.nominated() {
                    let _ = writeln!(out, "- **{}** strongest {}", b.id(), claim_line(c));
                }
                let _ = writeln!(out, "- **{}** concedes: {}", b.id(), n.concession);
            }
            None => {
                let _ = writeln!(out, "- **{}**: no nomination (branch missing)", b.id());
            }
        }
    }
    let _ = writeln!(out, "\n## Clash II rebuttals\n");
    for b in &run.branches {
        match &b.rebuttals {
            Some(rs) if !rs.is_empty() => {
                for r in rs {
                    let cites = if r.citations.is_empty() {
                        "no source".into()
                    } else {
                        r.citations.join(", ")
                    };
                    let _ = writeln!(
                        out,
                        "- **{}** rebuts {}/{}: {} [cites: {cites}]",
                        b.id(),
                        r.target.advocate,
                        r.target.claim,
                        r.text
                    );
                }
            }
            Some(_) => {
                let _ = writeln!(out, "- **{}**: rebutted nothing", b.id());
            }
            None => {
                let _ = writeln!(out, "- **{}**: no rebuttal (branch missing)", b.id());
            }
        }
    }
    out.push('\n');
}

fn quench_section(out: &mut String, run: &DossierRun, causes: &DeadlockCauses) {
    let _ = writeln!(out, "## Quench\n");
    let _ = writeln!(
        out,
        "Each prior's cell counts its arbiters' rulings as yes/no/abstain: prior A, prior B, \
         and arbiters who declared no prior. An attempt that deadlocked was re-asked to a \
         wider panel; its rulings stay here.\n"
    );
    let _ = writeln!(
        out,
        "| question | attempt | outcome | prior A yes/no/abstain | prior B | no prior |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for o in &run.options {
        for a in &o.answers {
            let t = tallies(&a.rulings);
            let cell = |p: Prior| {
                t.iter()
                    .find(|(x, _)| *x == p)
                    .map(|(_, t)| format!("{}/{}/{}", t.yes, t.no, t.abstain))
                    .unwrap_or_default()
            };
            let outcome = causes.outcome(a.outcome, &a.motion_id);
            let _ = writeln!(
                out,
                "| `{}` | {} | {outcome} | {} | {} | {} |",
                a.key,
                a.attempt,
                cell(Prior::A),
                cell(Prior::B),
                cell(Prior::None)
            );
        }
    }
    let verdict = match &run.synthesis {
        Some(Synthesis::Recommend { option }) => format!(
            "**Recommendation: {}** (accepted across priors; the other two refused)",
            option.name()
        ),
        Some(Synthesis::NonDecision { reason }) => format!("**Non-decision:** {reason}"),
        None => format!("Not yet synthesised (phase: {})", run.phase.name()),
    };
    let _ = writeln!(out, "\n{verdict}\n");
    let _ = writeln!(out, "### Strongest surviving dissent\n");
    match run.strongest_dissent() {
        Some(d) => {
            let _ = writeln!(
                out,
                "{} ({:?}, {}) on {}: {}\n",
                d.arbiter_id,
                d.prior,
                d.organisation,
                d.option.name(),
                d.rationale
            );
        }
        None => {
            let _ = writeln!(
                out,
                "None: no counted ruling went against what the panel settled.\n"
            );
        }
    }
    let _ = writeln!(out, "### Conditions that would change the recommendation\n");
    let conds = run.change_conditions();
    if conds.is_empty() {
        let _ = writeln!(
            out,
            "None stated: no dissenting ruling said what would change its answer.\n"
        );
    }
    for c in conds {
        let _ = writeln!(out, "- {c}");
    }
    let dissent = run.dissent();
    if !dissent.is_empty() {
        let _ = writeln!(out, "\n### All dissent\n");
        for d in dissent {
            let said = match d.yes {
                Some(true) => "yes",
                Some(false) => "no",
                None => "abstained",
            };
            let _ = writeln!(
                out,
                "- `{}`: {} ({:?}, {}, {}) said {said} (P(yes) {:.2}): {}",
                d.key,
                d.arbiter_id,
                d.prior,
                d.organisation,
                d.model_family.as_deref().unwrap_or("family not declared"),
                f64::from(d.probability_milli) / 1000.0,
                d.rationale
            );
        }
    }
    out.push('\n');
}
