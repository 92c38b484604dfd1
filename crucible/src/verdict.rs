//! Verdicts (SPEC section 11): frozen, append-only, with a rationale derived from the
//! ledger alone.

use crate::document::{BySide, Debate, LedgerRow, Num, Side, Verdict, status};
use crate::env::Env;
use crate::protocol::Protocol;
use crate::scoring::{Ledger, Summary, compute_ledger, summarize};

/// JavaScript `Number.prototype.toFixed`: exact binary ties round away from zero
/// (1.125 -> "1.13"), where Rust's formatter rounds them to even.
pub fn js_to_fixed(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let wide = format!("{:.*}", digits + 30, x.abs());
    let (head, tail) = wide.split_at(wide.len() - 30);
    let is_tie = tail.starts_with('5') && tail[1..].bytes().all(|b| b == b'0');
    let mut out = if is_tie {
        // Round the magnitude up: add one unit in the last kept place.
        let unit = 10f64.powi(-(digits as i32));
        let bumped: f64 = head.parse::<f64>().unwrap_or(0.0) + unit;
        format!("{:.*}", digits, bumped)
    } else {
        format!("{:.*}", digits, x.abs())
    };
    if x < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
}

/// The default rationale: built only from the ledger, the totals, the positions, the
/// winner, the margin and the band, so any reader can recompute it (SPEC section 11).
pub fn default_rationale(d: &Debate, ledger: &Ledger, s: &Summary) -> String {
    let t = &ledger.totals;
    let pct = js_to_fixed(s.margin * 100.0, 1);
    let rows_of = |side: Side| {
        ledger
            .rows
            .iter()
            .filter(move |r| r.side == Some(side.as_str()))
    };
    let mut out = String::new();
    match (s.band.key.as_str(), s.winner) {
        ("unresolved", _) | (_, None) => {
            out.push_str(&format!(
                "Ledger totals: Side A {}, Side B {}; margin {pct}%, under the 10% threshold, so the ledger itself names no winner. ",
                js_to_fixed(t.a, 2),
                js_to_fixed(t.b, 2)
            ));
            if s.by_burden
                && let Some(w) = s.winner
            {
                out.push_str(&format!(
                    "Side {} carried the burden of proof and did not meet it, so Side {w} is recorded as winner by burden. ",
                    w.other()
                ));
            }
        }
        (_, Some(w)) => {
            let l = w.other();
            out.push_str(&format!(
                "Verdict for Side {w} ({}), band: {}. Side {w} totals {} over {} standing claim(s); Side {l} totals {} over {}; margin {pct}%. ",
                d.positions.get(w),
                s.band.label.to_lowercase(),
                js_to_fixed(*t.get(w), 2),
                rows_of(w).count(),
                js_to_fixed(*t.get(l), 2),
                rows_of(l).count(),
            ));
        }
    }
    for side in [Side::A, Side::B] {
        if let Some(top) = rows_of(side).next() {
            out.push_str(&format!(
                "Strongest standing claim for Side {side}: \"{}\" at merit {}. ",
                top.assertion.unwrap_or(""),
                js_to_fixed(top.merit.0, 2)
            ));
        }
    }
    let demoted: usize = d
        .threads
        .iter()
        .map(|t| {
            t.versions
                .iter()
                .filter(|v| v.status == status::DEMOTED)
                .count()
        })
        .sum();
    if demoted > 0 {
        out.push_str(&format!(
            "{demoted} version(s) lost upheld challenges and were demoted; they stay on the record and score zero. "
        ));
    }
    out.push_str(
        "Every figure above is merit = evidence tier x relevance x survival x qualifier, summed over each side's canonical claims.",
    );
    out
}

impl<E: Env> Protocol<E> {
    /// SPEC section 11: freezes the ledger into a new verdict; earlier verdicts are never
    /// touched. `rationale` overrides the generated text when given.
    pub fn issue_verdict(
        &mut self,
        d: &mut Debate,
        via_appeal_id: Option<&str>,
        rationale: Option<&str>,
        actor: Option<&str>,
    ) -> u32 {
        let ledger = compute_ledger(d);
        let summary = summarize(&ledger.totals, &d.burden);
        let n = d.verdicts.len() as u32 + 1;
        let issued = self.env.now();
        let text = match rationale.filter(|r| !r.is_empty()) {
            Some(r) => r.to_string(),
            None => default_rationale(d, &ledger, &summary),
        };
        // The verdict owns its rows: later edits of the debate must not reach them.
        let frozen: Vec<LedgerRow> = ledger.rows.iter().map(LedgerRow::to_owned_row).collect();
        let totals = ledger.totals;
        let detail = match summary.winner {
            Some(w) => format!("v{n}: side-{w}:{}", summary.band.key),
            None => format!("v{n}: unresolved"),
        };
        d.verdicts.push(Verdict {
            n,
            issued_at: Some(Num(issued as f64)),
            winner: summary.winner,
            totals: BySide {
                a: Num(totals.a),
                b: Num(totals.b),
            },
            margin: Num(summary.margin),
            band: summary.band,
            rationale: text,
            ledger: frozen,
            by_burden: summary.by_burden,
            via_appeal_id: via_appeal_id.filter(|a| !a.is_empty()).map(str::to_string),
        });
        self.add_log(
            d,
            Some(actor.unwrap_or("arbiter")),
            None,
            "verdict-issued",
            detail,
        );
        n
    }
}
