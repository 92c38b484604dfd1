//! The ledger report a reader recomputes from a document: rows, totals, margin, band,
//! leader, winner, `byBurden` and the rationale (the `panel ledger` output).

use serde_json::{Value, json};

use crate::document::{BySide, Debate};
use crate::scoring::{Summary, compute_ledger, summarize};
use crate::verdict::default_rationale;

/// Full ledger report of a document.
pub fn ledger_report(d: &Debate) -> Value {
    let ledger = compute_ledger(d);
    let s = summarize(&ledger.totals, &d.burden);
    let rationale = default_rationale(d, &ledger, &s);
    json!({
        "rows": ledger.rows,
        "totals": {"A": ledger.totals.a, "B": ledger.totals.b},
        "margin": s.margin,
        "band": s.band,
        "winner": s.winner,
        "leader": s.leader,
        "byBurden": s.by_burden,
        "rationale": rationale,
    })
}

/// `summarize` over given totals, as the `{"summarize": {totals, burden}}` request.
pub fn summary_report(totals: &BySide<f64>, burden: &str) -> Value {
    let Summary {
        leader,
        winner,
        margin,
        band,
        by_burden,
    } = summarize(totals, burden);
    json!({"leader": leader, "winner": winner, "margin": margin, "band": band, "byBurden": by_burden})
}
