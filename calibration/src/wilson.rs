//! Wilson's score interval for a binomial proportion (Wilson 1927), and the rows of a
//! reliability table with their yes counts and that interval.
//!
//! With `k` successes in `n` trials, `p = k/n` and `z` the standard normal quantile:
//!
//! `centre = (p + z²/2n) / (1 + z²/n)`,
//! `half = z / (1 + z²/n) · sqrt(p(1 − p)/n + z²/4n²)`,
//! interval `[centre − half, centre + half]`.
//!
//! Why Wilson rather than Wald's `p ± z·sqrt(p(1 − p)/n)`: a reliability bin often holds a
//! handful of forecasts whose outcomes were all yes or all no, where Wald's interval shrinks
//! to a point and claims certainty from three items; Wilson's keeps a width at `p = 0` and
//! `p = 1` and stays inside [0, 1] (Brown, Cai and DasGupta 2001 recommend it for small
//! `n`). Pure: no I/O.

use serde::Serialize;

use crate::agreement::Z_95;
use crate::error::{CalibrationError, Result};
use crate::scoring_rules::ReliabilityBin;

/// A two-sided interval for a proportion, inside [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

/// Wilson's score interval for `successes` of `trials` at normal quantile `z` (1.96 for
/// 95%). Refuses no trials, more successes than trials, and a `z` that is not a positive
/// finite number.
pub fn wilson_interval(successes: usize, trials: usize, z: f64) -> Result<Interval> {
    if trials == 0 {
        return Err(CalibrationError::Degenerate {
            what: "Wilson interval",
            reason: "no trials: a proportion of nothing has no interval".into(),
        });
    }
    if successes > trials {
        return Err(CalibrationError::InvalidParameter {
            what: "Wilson interval",
            reason: format!("{successes} successes in {trials} trials: give at most one per trial"),
        });
    }
    if !(z.is_finite() && z > 0.0) {
        return Err(CalibrationError::InvalidParameter {
            what: "Wilson interval",
            reason: format!("z = {z}: use a positive normal quantile such as 1.96"),
        });
    }
    let bounds = wilson_bounds(successes as f64 / trials as f64, trials as f64, z);
    // At k = 0 and k = n the bound is exactly 0 or 1; the float sum would leave 1e-17 off.
    Ok(Interval {
        lower: if successes == 0 { 0.0 } else { bounds.lower },
        upper: if successes == trials {
            1.0
        } else {
            bounds.upper
        },
    })
}

/// Wilson's bounds for an observed proportion `p` over `n` trials, where `n` may be an
/// effective number (a panel's rulings counted by distinct lineage, machine
/// `confidence.rs`). Uses only arithmetic and one square root, which IEEE 754 rounds
/// exactly, so replicas computing it agree to the bit. The caller checks `n > 0`.
pub fn wilson_bounds(p: f64, n: f64, z: f64) -> Interval {
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Interval {
        lower: (centre - half).max(0.0),
        upper: (centre + half).min(1.0),
    }
}

/// [`wilson_interval`] at 95% ([`Z_95`]).
pub fn wilson_95(successes: usize, trials: usize) -> Result<Interval> {
    wilson_interval(successes, trials, Z_95)
}

/// One reliability bin with how many of its outcomes were yes and the 95% Wilson interval
/// of its observed frequency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliabilityInterval {
    #[serde(flatten)]
    pub bin: ReliabilityBin,
    /// Outcomes in the bin that were yes (`observed_frequency × count`).
    pub yes: usize,
    /// `None` for an empty bin.
    pub wilson_95: Option<Interval>,
}

/// The rows of a reliability table ([`crate::scoring_rules::reliability_table`]) with their
/// yes counts and 95% Wilson intervals. The yes count is recovered from the stored
/// frequency: `yes / count` is one correctly rounded division, so multiplying back and
/// rounding gives `yes` exactly for any count below 2^50. A bin whose frequency is missing,
/// outside [0, 1] or not a whole number of its count is refused.
pub fn reliability_intervals(bins: &[ReliabilityBin]) -> Result<Vec<ReliabilityInterval>> {
    bins.iter()
        .map(|b| {
            if b.count == 0 {
                return Ok(ReliabilityInterval {
                    bin: b.clone(),
                    yes: 0,
                    wilson_95: None,
                });
            }
            let bad = |why: String| CalibrationError::InvalidParameter {
                what: "reliability bin",
                reason: format!("bin {}: {why}: use rows from reliability_table", b.bin),
            };
            let freq = b
                .observed_frequency
                .ok_or_else(|| bad(format!("{} forecasts but no observed frequency", b.count)))?;
            if !(0.0..=1.0).contains(&freq) {
                return Err(bad(format!("observed frequency {freq} is not in [0, 1]")));
            }
            let yes = freq * b.count as f64;
            let rounded = yes.round();
            if (yes - rounded).abs() > 1e-6 {
                return Err(bad(format!(
                    "observed frequency {freq} is not a count out of {}",
                    b.count
                )));
            }
            let yes = rounded as usize;
            Ok(ReliabilityInterval {
                bin: b.clone(),
                yes,
                wilson_95: Some(wilson_95(yes, b.count)?),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoring_rules::reliability_table;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// Values worked from the formula in the module documentation (z = 1.959963984540054);
    /// 5 of 10 gives the textbook [0.2366, 0.7634] and 0 of 10 the rule-of-thumb upper
    /// bound z²/(n + z²) = 0.2775.
    #[test]
    fn wilson_matches_hand_computed_values() {
        let i = wilson_95(5, 10).unwrap();
        assert!(close(i.lower, 0.236_593_090_512_564), "{i:?}");
        assert!(close(i.upper, 0.763_406_909_487_436), "{i:?}");
        let i = wilson_95(0, 10).unwrap();
        assert_eq!(i.lower, 0.0);
        assert!(close(i.upper, 0.277_532_799_862_889_2), "{i:?}");
        let i = wilson_95(10, 10).unwrap();
        assert!(close(i.lower, 0.722_467_200_137_110_7), "{i:?}");
        assert_eq!(i.upper, 1.0);
        let i = wilson_95(27, 32).unwrap();
        assert!(close(i.lower, 0.682_458_504_024_696), "{i:?}");
        assert!(close(i.upper, 0.931_355_797_174_942_9), "{i:?}");
        // A smaller z gives a narrower interval around the same centre.
        let narrow = wilson_interval(5, 10, 1.0).unwrap();
        assert!(narrow.lower > 0.2366 && narrow.upper < 0.7634);
        assert!(close(narrow.lower + narrow.upper, 1.0));
    }

    #[test]
    fn wilson_refuses_what_has_no_interval() {
        assert!(matches!(
            wilson_95(0, 0),
            Err(CalibrationError::Degenerate { .. })
        ));
        assert!(wilson_95(3, 2).is_err());
        assert!(wilson_interval(1, 2, f64::NAN).is_err());
        assert!(wilson_interval(1, 2, 0.0).is_err());
    }

    #[test]
    fn reliability_rows_carry_yes_counts_and_intervals() {
        let forecasts = [0.05, 0.08, 0.15, 0.55, 0.58, 0.59, 0.95];
        let outcomes = [false, false, true, true, false, true, true];
        let table = reliability_table(&forecasts, &outcomes, 10).unwrap();
        let rows = reliability_intervals(&table).unwrap();
        assert_eq!(rows.len(), 10);
        let counts: Vec<(usize, usize)> = rows.iter().map(|r| (r.bin.count, r.yes)).collect();
        assert_eq!(
            counts,
            [
                (2, 0),
                (1, 1),
                (0, 0),
                (0, 0),
                (0, 0),
                (3, 2),
                (0, 0),
                (0, 0),
                (0, 0),
                (1, 1)
            ]
        );
        assert_eq!(rows[2].wilson_95, None, "an empty bin has no interval");
        assert_eq!(rows[5].wilson_95, Some(wilson_95(2, 3).unwrap()));
        // Thirds: 2/3 × 3 is not exactly 2 in floating point, and still recovers 2.
        assert_eq!(rows[5].yes, 2);
        let json = serde_json::to_value(&rows[5]).unwrap();
        assert_eq!(json["count"], 3);
        assert_eq!(json["yes"], 2);
        assert!(json["wilson_95"]["lower"].is_number());
    }

    #[test]
    fn inconsistent_bins_are_refused() {
        let mut table = reliability_table(&[0.5, 0.55], &[true, false], 10).unwrap();
        table[5].observed_frequency = Some(0.3);
        assert!(reliability_intervals(&table).is_err());
        table[5].observed_frequency = None;
        assert!(reliability_intervals(&table).is_err());
    }
}
