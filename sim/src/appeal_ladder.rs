//! The appeal ladder on the machine's path (docs/SIMULATION.md "Appeals"; docs/PANEL.md
//! "Funded appeals"): after a motion's own ladder accepts an answer, the side it went
//! against may appeal it to a fresh panel twice as wide plus one (Kleros' 2n+1: the
//! machine's appeal rounds from rule set 23, falling back as the machine does to n + 2r
//! and then n seats where the pool cannot seat that many), none of whose seats sat on the
//! motion before, decided by `apply` under the same policy. Each round costs the appellant a
//! deposit that doubles (2 credits, then 4, ...). An appeal panel that accepts the other
//! answer overturns the standing one, and the side that now lost may appeal in turn; one
//! that accepts the same answer, deadlocks or cannot be seated leaves it standing.
//!
//! Who appeals is the parties' choice, modelled here and stated as an assumption: each
//! side's party has a private signal about the truth, right with probability
//! [`Appellants::signal_milli`] / 1000, drawn once per motion; the losing party appeals
//! when its signal says its own side is right. Truth reaches only that signal, never the
//! machine: the appeal panels judge from the same noisy rulings as every other panel.

use serde::Serialize;

use crate::gaussian::Rng;

/// Stream tag of the parties' signals (the engines' other tags are 1 to 9).
pub(crate) const SIGNALS: u64 = 10;

/// How the parties appeal: at most `rounds` appeals per motion, each party's signal
/// right with probability `signal_milli` / 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Appellants {
    pub rounds: usize,
    pub signal_milli: u32,
}

impl Appellants {
    /// Nobody appeals: the default of `panel sim` and of the table docs/SIMULATION.md
    /// reproduces, since the parties' behaviour is an assumption measured on request.
    pub const NONE: Appellants = Appellants {
        rounds: 0,
        signal_milli: 800,
    };

    /// The measured setting: two rounds (the machine's funded-appeal terms make a third
    /// cost 8 of a budget of 8), parties right four times in five.
    pub const MEASURED: Appellants = Appellants {
        rounds: 2,
        signal_milli: 800,
    };

    /// The panel sizes appeal round `round` (from 1) tries on a debate of `n` seats,
    /// largest first, as the machine does (`fresh_panel::seat_ladder` from rule set 23):
    /// 2·s(r−1)+1 with s(0) = n, then n + 2r, then n.
    pub fn seats(n: usize, round: usize) -> Vec<usize> {
        let doubled = (0..round).fold(n, |s, _| 2 * s + 1);
        let mut sizes = vec![doubled, n + 2 * round, n];
        sizes.dedup();
        sizes
    }

    /// The deposit of appeal round `round` (from 1), in appeal credits.
    pub fn deposit(round: usize) -> u64 {
        2u64 << (round.saturating_sub(1)).min(32)
    }
}

/// What the parties believe about one motion: whether each side's party thinks its own
/// side is right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parties {
    pub yes_believes_yes: bool,
    pub no_believes_no: bool,
}

impl Parties {
    /// Each party's signal, drawn once per motion: right with the terms' probability.
    pub fn draw(truth: bool, terms: &Appellants, rng: &mut Rng) -> Self {
        let p = f64::from(terms.signal_milli) / 1000.0;
        let yes_sees_truth = rng.chance(p);
        let no_sees_truth = rng.chance(p);
        Parties {
            yes_believes_yes: truth == yes_sees_truth,
            no_believes_no: truth != no_sees_truth,
        }
    }

    /// Whether the side that lost to `standing` appeals it.
    pub fn loser_appeals(&self, standing: bool) -> bool {
        if standing {
            self.no_believes_no
        } else {
            self.yes_believes_yes
        }
    }
}

/// How one accepted outcome fared on the appeal ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppealRecord {
    /// The answer the motion's own ladder accepted.
    pub first: bool,
    /// The answer standing after the appeals.
    pub standing: bool,
    /// Appeals filed, and how many of them got a panel that decided.
    pub filed: usize,
    pub decided: usize,
    /// Seats the appeal panels took, and the deposits paid, in appeal credits.
    pub seats: usize,
    pub deposits: u64,
}

/// The appeal ladder's effect on one policy's accepted binary outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct AppealFigures {
    /// Accepted binary outcomes, and how many were right before and after appeals.
    pub outcomes: usize,
    pub right_before: usize,
    pub right_after: usize,
    /// Outcomes appealed at least once, appeals filed in all, and appeal panels seated
    /// that decided (accepted an answer).
    pub appealed: usize,
    pub filed: usize,
    pub decided: usize,
    /// Outcomes the appeals turned from wrong to right, and from right to wrong.
    pub corrected: usize,
    pub spoiled: usize,
    /// Seats the appeal panels took and deposits paid, in all.
    pub seats: usize,
    pub deposits: u64,
}

impl AppealFigures {
    pub fn add(&mut self, r: &AppealRecord, truth: bool) {
        self.outcomes += 1;
        self.right_before += usize::from(r.first == truth);
        self.right_after += usize::from(r.standing == truth);
        self.appealed += usize::from(r.filed > 0);
        self.filed += r.filed;
        self.decided += r.decided;
        self.corrected += usize::from(r.first != truth && r.standing == truth);
        self.spoiled += usize::from(r.first == truth && r.standing != truth);
        self.seats += r.seats;
        self.deposits += r.deposits;
    }

    /// One Markdown line.
    pub fn line(&self) -> String {
        let n = self.outcomes.max(1) as f64;
        format!(
            "{} accepted outcomes, accuracy {:.3} before appeals and {:.3} after; {} appealed \
             ({} appeals, {} decided by their panel), {} corrected, {} spoiled; {:.2} appeal \
             seats and {:.2} credits per accepted outcome",
            self.outcomes,
            self.right_before as f64 / n,
            self.right_after as f64 / n,
            self.appealed,
            self.filed,
            self.decided,
            self.corrected,
            self.spoiled,
            self.seats as f64 / n,
            self.deposits as f64 / n,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appeal_panels_double_and_deposits_double() {
        assert_eq!(Appellants::seats(5, 1), [11, 7, 5]);
        assert_eq!(Appellants::seats(5, 2), [23, 9, 5]);
        assert_eq!(
            (1..=3).map(Appellants::deposit).collect::<Vec<_>>(),
            [2, 4, 8]
        );
    }

    #[test]
    fn a_party_that_always_sees_the_truth_appeals_only_wrong_outcomes() {
        let terms = Appellants {
            rounds: 2,
            signal_milli: 1000,
        };
        let mut rng = Rng::new(7);
        for truth in [true, false] {
            let p = Parties::draw(truth, &terms, &mut rng);
            assert!(p.loser_appeals(!truth), "a wrong outcome is appealed");
            assert!(!p.loser_appeals(truth), "a right one is not");
        }
    }

    #[test]
    fn figures_count_corrections_and_spoils() {
        let mut f = AppealFigures::default();
        let rec = |first, standing, filed| AppealRecord {
            first,
            standing,
            filed,
            decided: filed,
            seats: 11 * filed,
            deposits: 2 * filed as u64,
        };
        f.add(&rec(false, true, 1), true);
        f.add(&rec(true, false, 1), true);
        f.add(&rec(true, true, 0), true);
        assert_eq!((f.outcomes, f.right_before, f.right_after), (3, 2, 2));
        assert_eq!((f.corrected, f.spoiled, f.appealed), (1, 1, 2));
    }
}
