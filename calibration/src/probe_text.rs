//! The bias probes as a person reads them: each measure with its 95% interval, as short
//! text cells, shared by `panel calibrate`, `panel arbiter show` and the dashboard so the
//! three say the same thing in the same words (docs/CALIBRATION.md "Probe scores").

use crate::bias_probes::{ProbeScores, VariantPairs};
use crate::wilson::{Interval, wilson_95};

/// `x [lo, hi]` with three decimals.
fn with_interval(x: f64, i: Option<Interval>) -> String {
    match i {
        Some(i) => format!("{x:.3} [{:.3}, {:.3}]", i.lower, i.upper),
        None => format!("{x:.3}"),
    }
}

/// A variant's mean shift (signed or absolute) and its flips out of its pairs.
fn shift(pairs: &VariantPairs, value: Option<f64>, signed: bool) -> String {
    let flips = format!("({}/{} flips)", pairs.flips, pairs.pairs);
    match value {
        Some(v) if signed => format!("{v:+.3} {flips}"),
        Some(v) => format!("{v:.3} {flips}"),
        None => format!("- {flips}"),
    }
}

/// One arbiter's bias-probe figures as text, each rate with its 95% interval (Wilson for
/// rates, Wald for kappa).
pub struct ProbeCells {
    pub order_flips: String,
    pub order_flip_rate: String,
    pub padding: String,
    pub consequence: String,
    pub kappa: String,
    pub objective: String,
}

impl ProbeCells {
    pub fn of(p: &ProbeScores) -> Self {
        let o = &p.order_swapped;
        let order_flip_rate = o.flip_rate.map_or_else(
            || "-".to_string(),
            |r| with_interval(r, wilson_95(o.flips, o.pairs).ok()),
        );
        let kappa = p.kappa.as_ref().map_or_else(
            || "-".to_string(),
            |k| {
                let i = k
                    .lower
                    .zip(k.upper)
                    .map(|(lower, upper)| Interval { lower, upper });
                format!("{} ({})", with_interval(k.kappa, i), k.items)
            },
        );
        let ob = &p.objective;
        let objective = ob.accuracy.map_or_else(
            || format!("{}/{}", ob.correct, ob.answered),
            |a| {
                let i = wilson_95(ob.correct, ob.answered).ok();
                format!("{}/{} {}", ob.correct, ob.answered, with_interval(a, i))
            },
        );
        ProbeCells {
            order_flips: format!("{}/{}", o.flips, o.pairs),
            order_flip_rate,
            padding: shift(&p.padded, p.padding_shift(), false),
            consequence: shift(&p.consequence, p.consequence_shift(), true),
            kappa,
            objective,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_carry_their_intervals_and_missing_measures_a_dash() {
        assert_eq!(with_interval(0.5, None), "0.500");
        let i = Interval {
            lower: 0.1,
            upper: 0.9,
        };
        assert_eq!(with_interval(0.5, Some(i)), "0.500 [0.100, 0.900]");
    }
}
