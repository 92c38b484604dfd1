//! The panel questions a crux run asks, with what each arbiter is shown: positions and
//! pack as items in a per-arbiter order (seed `crux.txt`, "Order randomization"), and,
//! in simulation runs, the scripted answer.

use super::contract::{Position, Side};
use super::convergence::{Asking, Candidate, Mediation};
use super::materials::{Materials, PACK_LABEL};
use crate::panel::{AnswerShape, Expected, PanelQuestion, ShownItem};

/// The question for one pending ask.
pub fn question(asking: &Asking, med: &Mediation, m: &Materials) -> PanelQuestion {
    match asking {
        Asking::Report(ask) => PanelQuestion {
            key: ask.key(),
            prompt: report_prompt(m),
            items: materials_items(m),
            shape: AnswerShape::CruxReport,
            extra_seats: ask.extra_seats(),
            exclude: Vec::new(),
            shuffle_items: true,
            expected: expected_report(m),
        },
        Asking::Candidate(i, ask) => {
            let c = med.candidates.get(*i);
            PanelQuestion {
                key: ask.key(),
                prompt: format!(
                    "Decision: {}\nIs this the single unknown both positions depend on, such \
                     that resolving it would end their disagreement? Candidate crux: {}",
                    m.decision,
                    c.map_or("", |c| c.crux.as_str())
                ),
                items: with_crux("candidate crux", c, m),
                shape: AnswerShape::YesNo,
                extra_seats: ask.extra_seats(),
                exclude: Vec::new(),
                shuffle_items: true,
                expected: expected_yes_no(
                    m,
                    |s| s.crux_confirmed,
                    [
                        "this is the unknown both positions depend on",
                        "this is not the unknown both positions depend on",
                    ],
                ),
            }
        }
        Asking::Verdict(ask) => {
            let c = med.accepted.and_then(|i| med.candidates.get(i));
            PanelQuestion {
                key: ask.key(),
                prompt: format!(
                    "Decision: {}\nGiven the accepted crux ({}), is a verdict on the decision \
                     warranted now, before the crux is resolved?",
                    m.decision,
                    c.map_or("", |c| c.crux.as_str())
                ),
                items: with_crux("accepted crux", c, m),
                shape: AnswerShape::YesNo,
                extra_seats: ask.extra_seats(),
                exclude: Vec::new(),
                shuffle_items: true,
                expected: expected_yes_no(
                    m,
                    |s| s.verdict_warranted.unwrap_or(s.report.verdict_warranted),
                    [
                        "a verdict is warranted now",
                        "the verdict should wait until the crux is resolved",
                    ],
                ),
            }
        }
    }
}

fn report_prompt(m: &Materials) -> String {
    format!(
        "Decision: {}\nTwo advocates argued this from the same evidence pack without seeing \
         each other. Name the crux: the single concrete, checkable unknown that, if resolved, \
         would end their disagreement; say why both positions depend on it and what would \
         resolve it; then answer yes if a verdict is warranted now, no if it should wait for \
         the crux. Return a crux report (docs/schemas/crux/crux-report.schema.json) as your \
         rationale; a vague crux does not count.",
        m.decision
    )
}

/// Both positions and the pack, in their listed order (the machine shuffles per arbiter).
fn materials_items(m: &Materials) -> Vec<ShownItem> {
    let mut items: Vec<ShownItem> = [Side::Optimist, Side::Pessimist]
        .into_iter()
        .filter_map(|s| m.position(s))
        .map(|p| ShownItem {
            label: p.side.label(),
            text: render_position(p),
        })
        .collect();
    items.push(ShownItem {
        label: PACK_LABEL.into(),
        text: render_pack(m),
    });
    items
}

fn with_crux(label: &str, c: Option<&Candidate>, m: &Materials) -> Vec<ShownItem> {
    let mut items = vec![ShownItem {
        label: label.into(),
        text: c.map_or(String::new(), |c| {
            format!(
                "{}\nWhy both positions depend on it: {}\nWhat would resolve it: {}",
                c.crux, c.why_both_depend, c.resolved_by
            )
        }),
    }];
    items.extend(materials_items(m));
    items
}

/// A position as the panel reads it: thesis, then each claim with its label,
/// confidence and quoted evidence.
pub fn render_position(p: &Position) -> String {
    let mut out = format!("{}\n", p.thesis.trim());
    for c in &p.claims {
        out.push_str(&format!(
            "\n[{}] ({}, confidence {:.2}) {}\n",
            c.id,
            c.inference.name(),
            c.confidence,
            c.text.trim()
        ));
        for r in &c.evidence {
            out.push_str(&format!("  {}: \"{}\"\n", r.item, r.quote.trim()));
        }
    }
    out
}

fn render_pack(m: &Materials) -> String {
    m.pack
        .items
        .iter()
        .map(|i| format!("[{}] {}: {}", i.id, i.source, i.text.trim()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn expected_report(m: &Materials) -> Option<Expected> {
    let sim = m.simulation.as_ref().filter(|_| m.simulation_run)?;
    Some(Expected {
        yes: sim.report.verdict_warranted,
        rationale: serde_json::to_string(&sim.report).unwrap_or_default(),
    })
}

fn expected_yes_no(
    m: &Materials,
    answer: impl Fn(&super::contract::Simulation) -> bool,
    [if_yes, if_no]: [&str; 2],
) -> Option<Expected> {
    let sim = m.simulation.as_ref().filter(|_| m.simulation_run)?;
    let yes = answer(sim);
    Some(Expected {
        yes,
        rationale: format!("Scripted judge: {}.", if yes { if_yes } else { if_no }),
    })
}
