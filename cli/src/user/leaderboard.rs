//! `panel arbiter leaderboard`: every arbiter's and organisation's resolved forecasts (the
//! track records on the cluster) scored by `calibration::leaderboard`, with the count each
//! score rests on and what resolved them (docs/CALIBRATION.md "The leaderboard").

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use calibration::leaderboard::{Forecast, Leaderboard, Standing, leaderboard};
use panel_machine::Arbiter;

use crate::client::cluster::print_json;

/// Every resolved forecast on the arbiters' track records; the question is the motion (or
/// exam item) ruled on, so arbiters who ruled on the same one are compared.
fn forecasts(arbiters: &[Arbiter]) -> Vec<Forecast<'_>> {
    arbiters
        .iter()
        .flat_map(|a| {
            a.recalibration.items.iter().map(move |i| Forecast {
                forecaster: &a.registration.arbiter_id,
                group: &a.registration.organisation,
                question: &i.motion_id,
                probability: i.probability,
                outcome: i.outcome,
            })
        })
        .collect()
}

/// How many resolved items each kind of resolution contributed.
fn resolved_by(arbiters: &[Arbiter]) -> BTreeMap<&'static str, usize> {
    let mut by = BTreeMap::new();
    for i in arbiters.iter().flat_map(|a| &a.recalibration.items) {
        *by.entry(i.resolved_by.kind.as_str()).or_default() += 1;
    }
    by
}

/// Prints the leaderboard of `arbiters`, as a table or as JSON.
pub fn print(arbiters: &[Arbiter], json: bool) -> Result<()> {
    let board = leaderboard(&forecasts(arbiters)).context("scoring the track records")?;
    if json {
        return print_json(&serde_json::to_value(&board)?);
    }
    for line in lines(&board, &resolved_by(arbiters)) {
        println!("{line}");
    }
    Ok(())
}

fn lines(board: &Leaderboard, by: &BTreeMap<&'static str, usize>) -> Vec<String> {
    if board.forecasters.is_empty() {
        return vec![
            "no resolved forecasts yet: exam items held back from admission, appeals and sources later verified resolve them (docs/CALIBRATION.md)".into(),
        ];
    }
    let mut out = vec![
        "leaderboard on resolved forecasts (log scores, higher is better):".into(),
        "  baseline = 100 x (1 + log2 p) per forecast, 0 = a coin, 100 = certain and right".into(),
        "  peer = 100 x (ln p - the others' mean ln p) on the same question, 0 = as good as the others".into(),
        "  n = resolved forecasts; q = questions with other forecasters (the peer score's count)".into(),
        String::new(),
    ];
    out.extend(table("arbiter", &board.forecasters));
    out.push(String::new());
    out.extend(table("organisation", &board.groups));
    let kinds: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
    out.push(String::new());
    out.push(format!("resolved by: {}", kinds.join(", ")));
    out
}

fn table(heading: &str, rows: &[Standing]) -> Vec<String> {
    let mut out = vec![format!(
        "{:>4}  {:<16} {:>5} {:>9} {:>9} {:>5} {:>6}",
        "rank", heading, "n", "baseline", "peer", "q", "Brier"
    )];
    for (i, s) in rows.iter().enumerate() {
        out.push(format!(
            "{:>4}  {:<16} {:>5} {:>9.1} {:>9} {:>5} {:>6.3}",
            i + 1,
            s.name,
            s.resolved,
            s.baseline,
            s.peer
                .map_or_else(|| "-".to_string(), |p| format!("{p:.1}")),
            s.peer_questions,
            s.brier
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_board_says_what_resolves_forecasts() {
        let board = leaderboard(&[]).unwrap();
        let l = lines(&board, &BTreeMap::new());
        assert_eq!(l.len(), 1);
        assert!(
            l[0].contains("held back") && l[0].contains("appeals"),
            "{l:?}"
        );
    }

    #[test]
    fn rows_show_their_counts_beside_their_scores() {
        let fs = [
            Forecast {
                forecaster: "a1",
                group: "north",
                question: "q",
                probability: 0.9,
                outcome: true,
            },
            Forecast {
                forecaster: "a2",
                group: "south",
                question: "q",
                probability: 0.6,
                outcome: true,
            },
        ];
        let board = leaderboard(&fs).unwrap();
        let by = BTreeMap::from([("exam-held-back", 2)]);
        let text = lines(&board, &by).join("\n");
        assert!(text.contains("   1  a1                   1"), "{text}");
        assert!(text.contains("resolved by: exam-held-back 2"), "{text}");
        assert!(text.contains("organisation"), "{text}");
    }
}
