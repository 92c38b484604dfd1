//! Scoring (SPEC section 9): the four factors, the ledger, the margin and the band.
//!
//! Arithmetic follows the reference engine's evaluation order exactly, in IEEE double:
//! merit = ((E x R) x S) x Q, rows stably sorted (side A first, merit descending), totals
//! summed in sorted order from zero, the margin rounded to nine decimals only for the
//! band comparison. The ledger is O(n log n): dismissals are indexed once instead of
//! scanned per version as the reference does.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use serde::Serialize;

use crate::document::{
    Band, BySide, Challenge, Citation, Debate, LedgerRow, Num, Side, Thread, Version,
};

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

/// A side as the survival rule compares it (SPEC section 7), decoded once so that counting
/// compares small values instead of re-reading side strings scattered through the
/// document. Equality matches that of the `Option<&str>` it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SideKey<'a> {
    Missing,
    A,
    B,
    Other(&'a str),
}

impl<'a> SideKey<'a> {
    fn of(side: Option<&'a str>) -> Self {
        match side {
            None => SideKey::Missing,
            Some("A") => SideKey::A,
            Some("B") => SideKey::B,
            Some(other) => SideKey::Other(other),
        }
    }
}

/// End of a list in [`Dismissals::nodes`].
const NIL: u32 = u32::MAX;

/// Dismissed challenges by the version they target, with each challenger's side, so
/// survival is counted without rescanning every challenge per version.
struct Dismissals<'a> {
    /// Each targeted version's most recent node in `nodes`.
    heads: HashMap<&'a str, u32>,
    /// (challenger side, previous node for the same version or [`NIL`]): one list per
    /// version inside a single vector instead of a vector per version.
    nodes: Vec<(SideKey<'a>, u32)>,
}

impl<'a> Dismissals<'a> {
    fn new(challenges: &'a [Challenge]) -> Self {
        let mut heads = HashMap::with_capacity(challenges.len());
        let mut nodes = Vec::new();
        for c in challenges {
            if c.resolution.as_deref() == Some("dismissed") {
                let next = nodes.len() as u32;
                let prev = heads.insert(c.version_id.as_str(), next).unwrap_or(NIL);
                nodes.push((SideKey::of(c.side.as_deref()), prev));
            }
        }
        Self { heads, nodes }
    }

    fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The list of dismissals targeting the version `id`, if any.
    fn head(&self, id: &str) -> Option<u32> {
        self.heads.get(id).copied()
    }

    /// Counts the list from `node`, leaving out challengers on the side of the version's
    /// thread; with no thread (`None`), every dismissal counts.
    fn count(&self, mut node: u32, thread: Option<SideKey<'_>>) -> u32 {
        let mut n = 0;
        // Each node points only to an earlier one, so the walk ends.
        while let Some(&(side, prev)) = self.nodes.get(node as usize) {
            if thread != Some(side) {
                n += 1;
            }
            node = prev;
        }
        n
    }
}

/// Dismissed challenges indexed by the version they target, with the challenger's side,
/// so survival (SPEC section 7: opposing-side dismissals only) is counted without
/// rescanning every challenge per version.
pub struct SurvivalIndex<'a> {
    /// Side of the first thread carrying each id: the reference looks a version's thread
    /// up by `threadId` and takes the first match.
    thread_side: HashMap<&'a str, SideKey<'a>>,
    dismissals: Dismissals<'a>,
}

impl<'a> SurvivalIndex<'a> {
    pub fn new(d: &'a Debate) -> Self {
        let dismissals = Dismissals::new(&d.challenges);
        let mut thread_side = HashMap::new();
        if !dismissals.is_empty() {
            thread_side.reserve(d.threads.len());
            for t in &d.threads {
                thread_side
                    .entry(t.id.as_str())
                    .or_insert(SideKey::of(t.side.as_deref()));
            }
        }
        Self {
            thread_side,
            dismissals,
        }
    }

    /// Dismissals that count for `v`; with no thread found, every dismissal counts.
    pub fn dismissed(&self, v: &Version) -> u32 {
        self.dismissals.head(&v.id).map_or(0, |head| {
            let thread = self.thread_side.get(v.thread_id.as_str()).copied();
            self.dismissals.count(head, thread)
        })
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
    let q = qualifier_weight(v.qualifier.as_deref());
    merit_of(e, r, q, dismissed)
}

/// The product in the reference's order, ((E x R) x S) x Q.
fn merit_of(e: f64, r: f64, q: f64, dismissed: u32) -> Merit {
    let s = SURVIVAL_CAP.min(1.0 + 0.1 * dismissed as f64);
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

/// A canonical version that some dismissal targets, counted once every thread is seen.
struct Pending<'a> {
    /// Position of its row in document order.
    row: u32,
    head: u32,
    version: &'a Version,
    /// Index of the thread it was found in, that thread's side, and whether its
    /// `threadId` names that thread (almost always).
    thread: u32,
    thread_side: SideKey<'a>,
    own: bool,
}

/// For each pending version, the side of the first thread carrying its `threadId` (the
/// reference's `threads.find`), or `None` when no thread carries it.
///
/// Works from the keyed hash of every thread id taken in the ledger's pass: no map the
/// size of the debate is built, and thread ids are read again only to confirm a match
/// away from the version's own thread. A 64-bit collision (not forceable: the key is
/// random) falls back to a linear search.
fn first_thread_sides<'a>(
    threads: &'a [Thread],
    id_hashes: &[u64],
    hasher: &RandomState,
    pending: &[Pending<'a>],
) -> Vec<Option<SideKey<'a>>> {
    if pending.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<u64> = pending
        .iter()
        .map(|p| match id_hashes.get(p.thread as usize) {
            Some(&h) if p.own => h,
            _ => hasher.hash_one(p.version.thread_id.as_str()),
        })
        .collect();
    let mut first: HashMap<u64, u32> = wanted.iter().map(|&h| (h, NIL)).collect();
    for (k, h) in id_hashes.iter().enumerate() {
        if let Some(f) = first.get_mut(h)
            && *f == NIL
        {
            *f = k as u32;
        }
    }
    let by_search = |id: &str| {
        threads
            .iter()
            .find(|t| t.id == id)
            .map(|t| SideKey::of(t.side.as_deref()))
    };
    pending
        .iter()
        .zip(&wanted)
        .map(|(p, h)| {
            let k = first.get(h).copied().unwrap_or(NIL);
            if k == NIL {
                return None;
            }
            if k == p.thread && p.own {
                return Some(p.thread_side);
            }
            let id = p.version.thread_id.as_str();
            match threads.get(k as usize) {
                Some(t) if t.id == id => Some(SideKey::of(t.side.as_deref())),
                _ => by_search(id),
            }
        })
        .collect()
}

/// The ledger: canonical rows in sorted order and each side's total. Rows borrow their
/// strings from the debate; [`LedgerRow::to_owned_row`] copies one out.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger<'a> {
    pub rows: Vec<LedgerRow<&'a str>>,
    pub totals: BySide<f64>,
}

/// SPEC section 9: one row per canonical version, budget applied per side.
///
/// Rows borrow from the document and are built in one walk of the threads in document
/// order (at 100,000 threads the document is about 150 MB, so memory access, not
/// arithmetic, sets the cost). They are ranked as 16-byte keys (side rank, merit,
/// position), so the sort neither moves whole rows nor reads side strings, and are then
/// put in key order in place.
pub fn compute_ledger(d: &Debate) -> Ledger<'_> {
    let dismissals = Dismissals::new(&d.challenges);
    // One keyed hash per thread id, for `first_thread_sides`; none are needed when no
    // challenge was dismissed.
    let hasher = RandomState::new();
    let mut id_hashes = Vec::new();
    if !dismissals.is_empty() {
        id_hashes.reserve(d.threads.len());
    }
    let mut pending: Vec<Pending<'_>> = Vec::new();
    let mut unsorted: Vec<LedgerRow<&str>> = Vec::with_capacity(d.threads.len());
    // Key: (index of the side in first-seen order, later its rank; merit; row position).
    let mut keys: Vec<(u32, f64, u32)> = Vec::with_capacity(d.threads.len());
    // Distinct side strings with their first-seen index (normally just A and B); a map
    // so that a document with many distinct sides stays O(n log n).
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    for (at_thread, t) in d.threads.iter().enumerate() {
        if !dismissals.is_empty() {
            id_hashes.push(hasher.hash_one(t.id.as_str()));
        }
        let Some(v) = t.canonical() else { continue };
        let side = t.side.as_deref();
        let side_idx = side.map_or(u32::MAX, |s| {
            let next = seen.len() as u32;
            *seen.entry(s).or_insert(next)
        });
        let m = merit_from(v, 0);
        let row = unsorted.len() as u32;
        if let Some(head) = dismissals.head(&v.id) {
            pending.push(Pending {
                row,
                head,
                version: v,
                thread: at_thread as u32,
                own: v.thread_id == t.id,
                thread_side: SideKey::of(side),
            });
        }
        keys.push((side_idx, m.merit, row));
        unsorted.push(LedgerRow {
            side,
            thread_id: &t.id,
            thread_title: t.title.as_deref(),
            version_id: &v.id,
            version_num: v.num,
            assertion: v.assertion.as_deref(),
            kind: v.kind.as_deref(),
            qualifier: v.qualifier.as_deref(),
            scoring: None,
            e: Num(m.e),
            r: Num(m.r),
            s: Num(m.s),
            q: Num(m.q),
            dismissed: m.dismissed,
            merit: Num(m.merit),
        });
    }
    // Survival needs every thread seen: a version may name a thread further down.
    let thread_sides = first_thread_sides(&d.threads, &id_hashes, &hasher, &pending);
    for (p, thread) in pending.iter().zip(thread_sides) {
        let dismissed = dismissals.count(p.head, thread);
        let at = p.row as usize;
        if let (Some(row), Some(key)) = (unsorted.get_mut(at), keys.get_mut(at)) {
            let m = merit_of(row.e.0, row.r.0, row.q.0, dismissed);
            row.s = Num(m.s);
            row.dismissed = dismissed;
            row.merit = Num(m.merit);
            key.1 = m.merit;
        }
    }
    // Rank sides in string order (A before B; the map iterates in that order); a missing
    // side sorts last. The parsed side of each rank decides which total a row feeds.
    let mut rank_of_seen = vec![0u32; seen.len()];
    let mut side_of_rank = Vec::with_capacity(seen.len());
    for (rank, (s, idx)) in seen.iter().enumerate() {
        rank_of_seen[*idx as usize] = rank as u32;
        side_of_rank.push(Side::parse(s));
    }
    for k in &mut keys {
        if let Some(rank) = rank_of_seen.get(k.0 as usize) {
            k.0 = *rank;
        }
    }
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
    let mut rows = unsorted;
    into_key_order(&mut rows, &mut keys);
    for (row, &(rank, merit, _)) in rows.iter_mut().zip(&keys) {
        let mut scoring = true;
        if let Some(side) = side_of_rank.get(rank as usize).copied().flatten() {
            if budget.is_some_and(|n| *counted.get(side) >= n) {
                scoring = false;
            } else {
                *counted.get_mut(side) += 1.0;
                *totals.get_mut(side) += merit;
            }
        }
        row.scoring = Some(scoring);
    }
    Ledger { rows, totals }
}

/// Reorders `rows` so that position i holds the row that was at `keys[i].2`, following
/// each cycle of the permutation (placed positions are marked [`NIL`]): one buffer the size
/// of the ledger instead of a second, sorted copy.
fn into_key_order<T: Copy>(rows: &mut [T], keys: &mut [(u32, f64, u32)]) {
    for start in 0..rows.len().min(keys.len()) {
        let first = keys[start].2;
        if first == NIL || first as usize == start {
            continue;
        }
        let held = rows[start];
        let mut at = start;
        loop {
            let from = std::mem::replace(&mut keys[at].2, NIL) as usize;
            if from == start {
                rows[at] = held;
                break;
            }
            rows[at] = rows[from];
            at = from;
        }
    }
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
