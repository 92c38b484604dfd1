//! Symmetry: both positions were written from the same pack bytes and fit the same
//! budget, and neither is more than 1.25 times longer than the other even when both fit
//! (seed `crux.txt`, "Symmetry enforcement": length reading as conviction).

use super::finding;
use crate::crux::contract::{CruxStart, Position};
use crate::crux::words::word_count;
use crate::panel::Finding;

/// The longer position may have at most `RATIO_NUM / RATIO_DEN` times the words of the
/// shorter (1.25, in integers).
pub const RATIO_NUM: usize = 5;
pub const RATIO_DEN: usize = 4;

/// Words of everything the panel reads of a position: thesis, claims and quotes.
pub fn position_words(p: &Position) -> usize {
    word_count(&p.thesis)
        + p.claims
            .iter()
            .map(|c| {
                word_count(&c.text)
                    + c.evidence
                        .iter()
                        .map(|r| word_count(&r.quote))
                        .sum::<usize>()
            })
            .sum::<usize>()
}

pub fn check(s: &CruxStart) -> (Vec<Finding>, String) {
    let mut f = Vec::new();
    let hash = s.pack.content_hash();
    for (pi, p) in s.positions.iter().enumerate() {
        if !p.pack_hash.eq_ignore_ascii_case(&hash) {
            f.push(finding(
                "crux.pack_hash",
                format!("positions[{pi}].pack_hash"),
                format!(
                    "the {} was written from pack {}, but this run's pack is {hash}; both \
                     advocates must get byte-identical evidence, so rewrite it from this pack",
                    p.side.name(),
                    short(&p.pack_hash)
                ),
            ));
        }
    }
    let words: Vec<usize> = s.positions.iter().map(position_words).collect();
    let budget = s.word_budget as usize;
    for (pi, (p, w)) in s.positions.iter().zip(&words).enumerate() {
        if *w > budget {
            f.push(finding(
                "crux.over_budget",
                format!("positions[{pi}]"),
                format!(
                    "the {} has {w} words (counted in code), over the budget of {budget}; cut it",
                    p.side.name()
                ),
            ));
        }
    }
    let (long, short_w) = (
        words.iter().copied().max().unwrap_or(0),
        words.iter().copied().min().unwrap_or(0),
    );
    if long * RATIO_DEN > short_w * RATIO_NUM {
        let longer = words.iter().position(|w| *w == long).unwrap_or(0);
        f.push(finding(
            "crux.length_ratio",
            format!("positions[{longer}]"),
            format!(
                "{long} words against {short_w}: more than 1.25 times the other position, \
                 which a reader takes for conviction; shorten it to at most {} words",
                short_w * RATIO_NUM / RATIO_DEN
            ),
        ));
    }
    let declared: Vec<String> = s
        .positions
        .iter()
        .zip(&words)
        .map(|(p, w)| match p.word_count {
            Some(d) => format!("{} {w} words (declared {d}, not used)", p.side.name()),
            None => format!("{} {w} words", p.side.name()),
        })
        .collect();
    let measured = format!(
        "pack {}; {}; budget {budget}; ratio {:.2}",
        short(&hash),
        declared.join(", "),
        long as f64 / short_w.max(1) as f64
    );
    (f, measured)
}

fn short(h: &str) -> String {
    h.chars().take(12).collect()
}
