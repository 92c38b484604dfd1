//! Scoring (SPEC section 9): the four factors, the ledger, the margin and the band.
//!
//! Arithmetic follows the reference engine's evaluation order exactly, in IEEE double:
//! merit = ((E x R) x S) x Q, rows stably sorted (side A first, merit descending), totals
//! summed in sorted order from zero, the margin rounded to nine decimals only for the
//! band comparison. The ledger is O(n log n): dismissals are indexed once instead of
//! scanned per version as the reference does.

use std::collections::HashMap;

use serde::Serialize;

use crate::document::{Band, BySide, Citation, Debate, LedgerRow, Num, Side, Version};

/// SPEC section 5: tier weights. An unknown or missing tier counts as T5.
pub fn tier_weight(tier: Option<&str>) -> f64 {
    match tier {
        Some("T1") => 5.0,
        Some("T2") => 4.0,
        Some("T3") => 3.0,
        Some("T4") => 2.0,
        _ => 1.0,
    }
}

/// SPEC section 9, qualifier weights; an unknown qualifier takes the lowest weight.
pub fn qualifier_weight(q: Option<&str>) -> f64 {
    match q {
        Some("certain") => 1.0,
        Some("probable") => 0.9,
        _ => 0.75,
    }
}

/// SPEC section 9 (survival cap): three opposing dismissals reach it.
pub const SURVIVAL_CAP: f64 = 1.3;

/// SPEC section 5: the claimed weight when verified, else at most T3.
pub fn effective_tier_weight(c: &Citation) -> f64 {
    let claimed = tier_weight(c.tier.as_deref());
    if c.tier_verified == Some(true) {
        claimed
    } else {
        claimed.min(3.0)
    }
}

/// SPEC section 9, E: logical 2, definitional 1, otherwise the strongest effective
/// citation plus 0.5 per extra citation, capped at +1.
pub fn evidence_base(v: &Version) -> f64 {
    match v.kind.as_deref() {
        Some("logical") => 2.0,
        Some("definitional") => 1.0,
        _ => {
            if v.evidence.is_empty() {
                return 0.0;
            }
            let max = v
                .evidence
                .iter()
                .map(effective_tier_weight)
                .fold(f64::NEG_INFINITY, f64::max);
            max + (0.5 * (v.evidence.len() as f64 - 1.0)).min(1.0)
        }
    }
}

/// The four factors and their product for one version.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Merit {
    #[serde(rename = "E")]
    pub e: f64,
    #[serde(rename = "R")]
    pub r: f64,
    #[serde(rename = "S")]
    pub s: f64,
    #[serde(rename = "Q")]
    pub q: f64,
    pub dismissed: u32,
    pub merit: f64,
}

/// Dismissed challenges indexed by the version they target, with the challenger's side,
/// so the ledger counts survival (SPEC section 7: opposing-side dismissals only) without
/// rescanning every challenge per version.
pub struct SurvivalIndex<'a> {
    thread_side: HashMap<&'a str, Option<&'a str>>,
    dismissals: HashMap<&'a str, Vec<Option<&'a str>>>,
}

impl<'a> SurvivalIndex<'a> {
    pub fn new(d: &'a Debate) -> Self {
        let mut thread_side = HashMap::with_capacity(d.threads.len());
        // The reference looks up the first thread carrying the version's threadId.
        for t in &d.threads {
            thread_side
                .entry(t.id.as_str())
                .or_insert(t.side.as_deref());
        }
        let mut dismissals: HashMap<&str, Vec<Option<&str>>> = HashMap::new();
        for c in &d.challenges {
            if c.resolution.as_deref() == Some("dismissed") {
                dismissals
                    .entry(c.version_id.as_str())
                    .or_default()
                    .push(c.side.as_deref());
            }
        }
        Self {
            thread_side,
            dismissals,
        }
    }

    /// Dismissals that count for `v`; with no thread found, every dismissal counts.
    pub fn dismissed(&self, v: &Version) -> u32 {
        let Some(sides) = self.dismissals.get(v.id.as_str()) else {
            return 0;
        };
        match self.thread_side.get(v.thread_id.as_str()) {
            None => sides.len() as u32,
            Some(thread) => sides.iter().filter(|s| *s != thread).count() as u32,
        }
    }
}

/// Direct count, used by merge comparisons (SPEC section 7 survival rule).
pub fn count_dismissed(d: &Debate, v: &Version) -> u32 {
    let thread_side = d.thread(&v.thread_id).map(|t| t.side.as_deref());
    d.challenges
        .iter()
        .filter(|c| {
            c.version_id == v.id
                && c.resolution.as_deref() == Some("dismissed")
                && match thread_side {
                    None => true,
                    Some(side) => c.side.as_deref() != side,
                }
        })
        .count() as u32
}

fn merit_from(v: &Version, dismissed: u32) -> Merit {
    let e = evidence_base(v);
    let r = v.relevance.map_or(1.0, Num::get);
    let s = SURVIVAL_CAP.min(1.0 + 0.1 * dismissed as f64);
    let q = qualifier_weight(v.qualifier.as_deref());
    Merit {
        e,
        r,
        s,
        q,
        dismissed,
        merit: e * r * s * q,
    }
}

/// SPEC section 9: merit = E x R x S x Q for one version (unassigned relevance is 1).
pub fn version_merit(d: &Debate, v: &Version) -> Merit {
    merit_from(v, count_dismissed(d, v))
}

/// The ledger: canonical rows in sorted order and each side's total.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    pub rows: Vec<LedgerRow>,
    pub totals: BySide<f64>,
}

/// SPEC section 9: one row per canonical version, budget applied per side.
///
/// Rows are ranked as 16-byte keys (side rank, merit, position) and only then turned
/// into owned [`LedgerRow`]s: the sort neither moves whole rows nor chases side strings.
pub fn compute_ledger(d: &Debate) -> Ledger {
    let survival = SurvivalIndex::new(d);
    let mut found: Vec<(&crate::document::Thread, &Version, Merit)> =
        Vec::with_capacity(d.threads.len());
    // Distinct side strings in first-seen order (normally just A and B).
    let mut sides: Vec<&str> = Vec::new();
    for t in &d.threads {
        let Some(v) = t.canonical() else { continue };
        if let Some(s) = t.side.as_deref()
            && !sides.contains(&s)
        {
            sides.push(s);
        }
        found.push((t, v, merit_from(v, survival.dismissed(v))));
    }
    // Rank sides in string order (A before B); a missing side sorts last.
    let mut ordered = sides.clone();
    ordered.sort_unstable();
    let rank = |side: Option<&str>| {
        side.and_then(|s| ordered.iter().position(|x| *x == s))
            .map_or(u32::MAX, |r| r as u32)
    };
    let mut keys: Vec<(u32, f64, u32)> = found
        .iter()
        .enumerate()
        .map(|(i, (t, _, m))| (rank(t.side.as_deref()), m.merit, i as u32))
        .collect();
    // Stable: side order first, then merit descending; equal merits keep thread order.
    keys.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal))
    });
    let budget = d.claim_budget.map(|b| b.0.floor().max(0.0));
    let mut totals = BySide { a: 0.0, b: 0.0 };
    let mut counted = BySide {
        a: 0.0f64,
        b: 0.0f64,
    };
    let mut rows = Vec::with_capacity(keys.len());
    for &(_, _, i) in &keys {
        let (t, v, m) = found[i as usize];
        let mut scoring = true;
        if let Some(side) = t.side.as_deref().and_then(Side::parse) {
            if budget.is_some_and(|n| *counted.get(side) >= n) {
                scoring = false;
            } else {
                *counted.get_mut(side) += 1.0;
                *totals.get_mut(side) += m.merit;
            }
        }
        rows.push(LedgerRow {
            side: t.side.clone(),
            thread_id: t.id.clone(),
            thread_title: t.title.clone(),
            version_id: v.id.clone(),
            version_num: v.num,
            assertion: v.assertion.clone(),
            kind: v.kind.clone(),
            qualifier: v.qualifier.clone(),
            scoring: Some(scoring),
            e: Num(m.e),
            r: Num(m.r),
            s: Num(m.s),
            q: Num(m.q),
            dismissed: m.dismissed,
            merit: Num(m.merit),
        });
    }
    Ledger { rows, totals }
}

/// A verdict band with its threshold (SPEC section 9 table).
pub struct BandDef {
    pub key: &'static str,
    pub max: f64,
    pub label: &'static str,
}

/// The bands in order; the first whose threshold exceeds the rounded margin applies.
pub const BANDS: [BandDef; 4] = [
    BandDef {
        key: "unresolved",
        max: 0.10,
        label: "Unresolved: no winner on current evidence",
    },
    BandDef {
        key: "balance",
        max: 0.25,
        label: "Winner on balance of evidence",
    },
    BandDef {
        key: "clear",
        max: 0.50,
        label: "Clear winner",
    },
    BandDef {
        key: "decisive",
        max: f64::INFINITY,
        label: "Decisive winner",
    },
];

/// JavaScript `Math.round`: halves round toward positive infinity.
pub fn js_round(x: f64) -> f64 {
    let r = x.floor();
    if x - r >= 0.5 { r + 1.0 } else { r }
}

/// SPEC section 9: round the margin to nine decimals, then compare strictly.
pub fn verdict_band(margin: f64) -> Band {
    let m = js_round(margin * 1e9) / 1e9;
    let band = BANDS.iter().find(|b| m < b.max).unwrap_or(&BANDS[3]);
    Band {
        key: band.key.into(),
        label: band.label.into(),
    }
}

/// Margin, band, leader and winner of a pair of totals under a burden.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub leader: Option<Side>,
    pub winner: Option<Side>,
    pub margin: f64,
    pub band: Band,
    pub by_burden: bool,
}

/// SPEC section 9: margin = (hi - lo) / hi (0 for an empty ledger); an unresolved margin
/// goes to the side without the burden when one is declared (`byBurden`).
pub fn summarize(totals: &BySide<f64>, burden: &str) -> Summary {
    let (a, b) = (totals.a, totals.b);
    let hi = a.max(b);
    let lo = a.min(b);
    let margin = if hi == 0.0 { 0.0 } else { (hi - lo) / hi };
    let band = verdict_band(margin);
    let leader = if a == b {
        None
    } else if a > b {
        Some(Side::A)
    } else {
        Some(Side::B)
    };
    if band.key != "unresolved" {
        return Summary {
            leader,
            winner: leader,
            margin,
            band,
            by_burden: false,
        };
    }
    match Side::parse(burden) {
        Some(side) => Summary {
            leader,
            winner: Some(side.other()),
            margin,
            band,
            by_burden: true,
        },
        None => Summary {
            leader,
            winner: None,
            margin,
            band,
            by_burden: false,
        },
    }
}
