//! The falsification report as Markdown: one DebateBucketing section per claim, with
//! per-stance tallies and every dissenting ruling (docs/FALSIFY.md, "Output").

use std::fmt::Write;

use crate::deadlock::DeadlockCauses;
use crate::panel::Prior;

use super::FalsifyRun;
use super::bucket::{DebateBucketing, QuestionTally};

/// The report; a deadlocked question prints its causes where `causes` has them.
pub fn markdown(run: &FalsifyRun, causes: &DeadlockCauses) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Falsification run {}\n", run.run_id);
    let _ = writeln!(
        out,
        "Each claim is bucketed by three ordered panel questions (falsifiable form? valid refuter? survived a severe attack?), never by who argued better. An answer counts only with cross-prior agreement.\n"
    );
    for b in run.bucketing() {
        claim_section(&mut out, &b, causes);
    }
    out
}

fn claim_section(out: &mut String, b: &DebateBucketing, causes: &DeadlockCauses) {
    let bucket = b.bucket.map_or("in play", |x| x.name());
    let _ = writeln!(out, "## Claim {}: {bucket}\n", b.claim);
    let _ = writeln!(out, "> {}\n", b.text);
    if let Some(p) = &b.split_from {
        let _ = writeln!(out, "Split from claim {p} by a definitional retreat.\n");
    }
    let _ = writeln!(out, "- **Most-falsifiable form:** {}", b.form);
    for f in &b.forbids {
        let _ = writeln!(out, "  - forbids: {f}");
    }
    if b.committed_refuters.is_empty() {
        let _ = writeln!(out, "- **Committed refuter:** none");
    }
    for c in &b.committed_refuters {
        let _ = writeln!(
            out,
            "- **Committed refuter, round {}:** {} by {} (severity: {})",
            c.round,
            c.refuter.label(),
            c.critic,
            c.severity.label()
        );
    }
    let _ = writeln!(out, "- **Severity of attack:** {}", b.severity.label());
    let rule = b
        .rule
        .as_deref()
        .map(|r| format!(" (`{r}`)"))
        .unwrap_or_default();
    let _ = writeln!(out, "- **Bucket:** {bucket}{rule}");
    if let Some(r) = &b.recorded {
        let _ = writeln!(out, "- **Recorded:** {r}");
    }
    if !b.cross_exam_findings.is_empty() {
        let _ = writeln!(out, "\n### Cross-examination findings\n");
        for f in &b.cross_exam_findings {
            let _ = writeln!(out, "- `{}` at {}: {}", f.rule, f.at, f.reason);
        }
    }
    if !b.questions.is_empty() {
        tallies_table(out, &b.questions, causes);
    }
    dissent(out, &b.questions, causes);
    out.push('\n');
}

fn tallies_table(out: &mut String, qs: &[QuestionTally], causes: &DeadlockCauses) {
    let _ = writeln!(out, "\n### Panel answers (yes/no/abstain per stance)\n");
    let _ = writeln!(
        out,
        "Cells count rulings as yes/no/abstain by the arbiter's declared prior: A, B, or no prior.\n"
    );
    let _ = writeln!(out, "| question | outcome | prior A | prior B | no prior |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for q in qs {
        let cell = |p: Prior| {
            q.tallies
                .iter()
                .find(|(x, _)| *x == p)
                .map(|(_, t)| format!("{}/{}/{}", t.yes, t.no, t.abstain))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            q.key,
            causes.outcome(q.outcome, &q.motion_id),
            cell(Prior::A),
            cell(Prior::B),
            cell(Prior::None)
        );
    }
}

fn dissent(out: &mut String, qs: &[QuestionTally], causes: &DeadlockCauses) {
    let any = qs.iter().any(|q| !q.dissent.is_empty());
    if !any {
        return;
    }
    let _ = writeln!(out, "\n### Dissent\n");
    for q in qs {
        for d in &q.dissent {
            let said = match d.yes {
                Some(true) => "yes",
                Some(false) => "no",
                None => "abstained",
            };
            let _ = writeln!(
                out,
                "- `{}` ({}): {} (prior {:?}) said {said}: {}",
                q.key,
                causes.outcome(q.outcome, &q.motion_id),
                d.arbiter_id,
                d.prior,
                d.rationale
            );
        }
    }
}
