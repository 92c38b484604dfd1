//! Properties that must hold for every input, not just the reference vectors.

use calibration::agreement::{KappaWeights, cohen_kappa};
use calibration::chi_square::chi_square_sf;
use calibration::cooke::{LEVELS_5_50_95, calibration_score};
use calibration::scoring_rules::{brier_score, murphy_binned, murphy_grouped};
use proptest::prelude::*;

/// Forecasts drawn from a small grid (so groups repeat) or continuously, with outcomes.
fn forecasts() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
    prop::collection::vec(
        (
            prop_oneof![(0u32..=10).prop_map(|k| k as f64 / 10.0), 0.0f64..=1.0,],
            any::<bool>(),
        ),
        1..200,
    )
    .prop_map(|pairs| pairs.into_iter().unzip())
}

proptest! {
    #[test]
    fn brier_is_in_unit_interval((f, o) in forecasts()) {
        let b = brier_score(&f, &o).unwrap();
        prop_assert!((0.0..=1.0).contains(&b));
    }

    #[test]
    fn grouped_murphy_identity((f, o) in forecasts()) {
        let b = brier_score(&f, &o).unwrap();
        let m = murphy_grouped(&f, &o).unwrap();
        prop_assert!((m.reliability - m.resolution + m.uncertainty - b).abs() < 1e-12);
        prop_assert!(m.reliability >= 0.0 && m.resolution >= 0.0);
    }

    #[test]
    fn binned_murphy_identity((f, o) in forecasts(), bins in 1usize..20) {
        let b = brier_score(&f, &o).unwrap();
        let m = murphy_binned(&f, &o, bins).unwrap();
        let rebuilt = m.reliability - m.resolution + m.uncertainty + m.within_bin_variance
            - m.within_bin_covariance;
        prop_assert!((rebuilt - b).abs() < 1e-12);
    }

    #[test]
    fn calibration_score_is_a_probability(
        counts in prop::collection::vec(0usize..30, 4),
        extra in 0usize..5,
        power in 0.1f64..3.0,
    ) {
        prop_assume!(counts.iter().sum::<usize>() > 0);
        let n = counts.iter().sum::<usize>() + extra;
        let c = calibration_score(&counts, &LEVELS_5_50_95, n as f64, power).unwrap();
        prop_assert!((0.0..=1.0).contains(&c), "{c}");
    }

    #[test]
    fn chi_square_tail_is_monotone(a in 0.0f64..200.0, b in 0.0f64..200.0, df in 1u32..12) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (s_lo, s_hi) = (chi_square_sf(lo, df as f64), chi_square_sf(hi, df as f64));
        prop_assert!((0.0..=1.0).contains(&s_lo) && (0.0..=1.0).contains(&s_hi));
        prop_assert!(s_hi <= s_lo + 1e-15);
    }

    #[test]
    fn kappa_of_identical_ratings_is_one(
        ratings in prop::collection::vec(0usize..5, 1..100),
    ) {
        for w in [KappaWeights::Unweighted, KappaWeights::Linear, KappaWeights::Quadratic] {
            prop_assert_eq!(cohen_kappa(&ratings, &ratings, 5, w).unwrap(), 1.0);
        }
    }

    #[test]
    fn kappa_is_at_most_one(
        pairs in prop::collection::vec((0usize..4, 0usize..4), 2..100),
    ) {
        let (a, b): (Vec<usize>, Vec<usize>) = pairs.into_iter().unzip();
        for w in [KappaWeights::Unweighted, KappaWeights::Linear, KappaWeights::Quadratic] {
            let k = cohen_kappa(&a, &b, 4, w).unwrap();
            prop_assert!(k <= 1.0 + 1e-12, "{k}");
        }
    }
}
