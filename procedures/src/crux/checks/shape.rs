//! Shape: sizes within bounds, ids well formed and unique, one position per side,
//! confidences in range, both advocates' families named (docs/CRUX.md, "Shape rules").

use std::collections::BTreeSet;

use super::{claim_at, finding};
use crate::crux::contract::{CruxStart, Side};
use crate::panel::Finding;

pub const MAX_ITEMS: usize = 200;
pub const MAX_ITEM_BYTES: usize = 20_000;
pub const MAX_TEXT_BYTES: usize = 4_000;
pub const MAX_CLAIMS: usize = 40;
pub const MAX_REFS: usize = 8;
pub const MIN_BUDGET: u32 = 50;
pub const MAX_BUDGET: u32 = 5_000;

pub fn check(s: &CruxStart) -> Vec<Finding> {
    let mut f = Vec::new();
    sizes(s, &mut f);
    pack_ids(s, &mut f);
    sides(s, &mut f);
    claims(s, &mut f);
    advocates(s, &mut f);
    if !(MIN_BUDGET..=MAX_BUDGET).contains(&s.word_budget) {
        f.push(finding(
            "crux.budget_range",
            "word_budget",
            format!(
                "{} words; give a budget between {MIN_BUDGET} and {MAX_BUDGET}",
                s.word_budget
            ),
        ));
    }
    if s.decision.trim().is_empty() {
        f.push(finding(
            "crux.decision",
            "decision",
            "empty; state the decision as a question",
        ));
    }
    f
}

fn too_long(f: &mut Vec<Finding>, at: String, text: &str, max: usize) {
    if text.len() > max {
        f.push(finding(
            "crux.size",
            at,
            format!("{} bytes, more than {max}; shorten it", text.len()),
        ));
    }
}

fn sizes(s: &CruxStart, f: &mut Vec<Finding>) {
    too_long(f, "decision".into(), &s.decision, MAX_TEXT_BYTES);
    if s.pack.items.len() > MAX_ITEMS {
        f.push(finding(
            "crux.size",
            "pack.items",
            format!(
                "{} items, more than {MAX_ITEMS}; split the pack",
                s.pack.items.len()
            ),
        ));
    }
    for (i, item) in s.pack.items.iter().enumerate() {
        too_long(
            f,
            format!("pack.items[{i}].text"),
            &item.text,
            MAX_ITEM_BYTES,
        );
        too_long(
            f,
            format!("pack.items[{i}].source"),
            &item.source,
            MAX_TEXT_BYTES,
        );
    }
    for (pi, p) in s.positions.iter().enumerate() {
        too_long(
            f,
            format!("positions[{pi}].thesis"),
            &p.thesis,
            MAX_TEXT_BYTES,
        );
        if p.claims.len() > MAX_CLAIMS {
            f.push(finding(
                "crux.size",
                format!("positions[{pi}].claims"),
                format!("{} claims, more than {MAX_CLAIMS}", p.claims.len()),
            ));
        }
        for (ci, c) in p.claims.iter().enumerate() {
            too_long(f, claim_at(pi, ci, c), &c.text, MAX_TEXT_BYTES);
            if c.evidence.len() > MAX_REFS {
                f.push(finding(
                    "crux.size",
                    claim_at(pi, ci, c),
                    format!("{} references, more than {MAX_REFS}", c.evidence.len()),
                ));
            }
            for (ri, r) in c.evidence.iter().enumerate() {
                too_long(
                    f,
                    format!("positions[{pi}].claims[{ci}].evidence[{ri}].quote"),
                    &r.quote,
                    MAX_TEXT_BYTES,
                );
            }
        }
    }
}

fn well_formed_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn pack_ids(s: &CruxStart, f: &mut Vec<Finding>) {
    if s.pack.items.is_empty() {
        f.push(finding(
            "crux.pack_empty",
            "pack.items",
            "no items; both advocates need evidence to argue from",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, item) in s.pack.items.iter().enumerate() {
        if !well_formed_id(&item.id) {
            f.push(finding(
                "crux.item_id",
                format!("pack.items[{i}].id"),
                "use 1 to 64 letters, digits, '-', '_' or '.'",
            ));
        } else if !seen.insert(item.id.as_str()) {
            f.push(finding(
                "crux.item_id",
                format!("pack.items[{i}].id"),
                format!("{} is used twice; give every item its own id", item.id),
            ));
        }
        if item.text.trim().is_empty() {
            f.push(finding(
                "crux.item_text",
                format!("pack.items[{i}].text"),
                "empty; remove the item or give its text",
            ));
        }
    }
}

fn sides(s: &CruxStart, f: &mut Vec<Finding>) {
    let got: Vec<Side> = s.positions.iter().map(|p| p.side).collect();
    let mut sorted = got.clone();
    sorted.sort();
    if sorted != [Side::Optimist, Side::Pessimist] {
        let names: Vec<&str> = got.iter().map(|s| s.name()).collect();
        f.push(finding(
            "crux.sides",
            "positions",
            format!(
                "got [{}]; submit exactly two positions, one optimist and one pessimist",
                names.join(", ")
            ),
        ));
    }
}

fn claims(s: &CruxStart, f: &mut Vec<Finding>) {
    let mut ids = BTreeSet::new();
    for (pi, p) in s.positions.iter().enumerate() {
        if p.thesis.trim().is_empty() {
            f.push(finding(
                "crux.thesis",
                format!("positions[{pi}].thesis"),
                "empty; state the position in a sentence",
            ));
        }
        if p.claims.is_empty() {
            f.push(finding(
                "crux.claims",
                format!("positions[{pi}].claims"),
                "no claims; a position argues through claims with evidence",
            ));
        }
        for (ci, c) in p.claims.iter().enumerate() {
            let at = format!("positions[{pi}].claims[{ci}].id");
            if !well_formed_id(&c.id) {
                f.push(finding(
                    "crux.claim_id",
                    at,
                    "use 1 to 64 letters, digits, '-', '_' or '.'",
                ));
            } else if !ids.insert(c.id.as_str()) {
                f.push(finding(
                    "crux.claim_id",
                    at,
                    format!("{} is used twice in the document; ids are unique", c.id),
                ));
            }
            if c.text.trim().is_empty() {
                f.push(finding(
                    "crux.claim_text",
                    claim_at(pi, ci, c),
                    "empty; state the claim",
                ));
            }
            if !(c.confidence.is_finite() && (0.0..=1.0).contains(&c.confidence)) {
                f.push(finding(
                    "crux.confidence_range",
                    claim_at(pi, ci, c),
                    format!("confidence {}; give a number from 0 to 1", c.confidence),
                ));
            }
        }
    }
}

fn advocates(s: &CruxStart, f: &mut Vec<Finding>) {
    for side in [Side::Optimist, Side::Pessimist] {
        let named: Vec<_> = s.advocates.iter().filter(|a| a.side == side).collect();
        let ok = named.len() == 1
            && named.iter().all(|a| {
                !a.family.trim().is_empty()
                    && !a.model.trim().is_empty()
                    && a.family.len() <= 200
                    && a.model.len() <= 200
                    && a.provider.len() <= 200
            });
        if !ok {
            f.push(finding(
                "crux.advocates",
                "advocates",
                format!(
                    "the {} advocate's model family is missing (found {} entries for that side); \
                     name exactly one advocate per side with its model and family, so the \
                     panel can be drawn from other families",
                    side.name(),
                    named.len()
                ),
            ));
        }
    }
}
