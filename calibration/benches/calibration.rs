//! Criterion benches (BENCHMARKS.md): score 10^6 binary judgments; score 10^4 quantile
//! assessments (100 experts x 100 seed items) with and without the optimised decision
//! maker; fit the bridging model on 1,000 raters x 10,000 items at 5% density.
//! Inputs come from the crate's seeded generator, so every run measures the same data.

use std::hint::black_box;
use std::time::Duration;

use calibration::bridging::{BridgingConfig, LossForm, Rating, fit};
use calibration::cooke::{Alpha, Assessment, CookeModel, Item, LEVELS_5_50_95, Scale};
use calibration::scoring_rules::binary_report;
use calibration::seeded_rng::SplitMix64;
use criterion::{Criterion, criterion_group, criterion_main};

fn binary_data(n: usize) -> (Vec<f64>, Vec<bool>) {
    let mut rng = SplitMix64::new(1);
    let mut f = Vec::with_capacity(n);
    let mut o = Vec::with_capacity(n);
    for _ in 0..n {
        // Forecasts on a 0.01 grid, as arbiters report them; outcomes from a miscalibrated truth.
        let p = (rng.next_f64() * 100.0).round() / 100.0;
        f.push(p);
        o.push(rng.next_f64() < 0.1 + 0.8 * p);
    }
    (f, o)
}

fn cooke_model(experts: usize, items: usize) -> CookeModel {
    let mut rng = SplitMix64::new(2);
    let truth: Vec<f64> = (0..items).map(|_| rng.uniform(10.0, 1000.0)).collect();
    let item_list: Vec<Item> = truth
        .iter()
        .enumerate()
        .map(|(j, &x)| Item {
            id: format!("q{j}"),
            realization: Some(x),
            scale: if j % 3 == 0 { Scale::Log } else { Scale::Uni },
            frozen_range: None,
        })
        .collect();
    let assessments = (0..experts)
        .map(|e| {
            let spread = rng.uniform(0.02, 0.6);
            let values = truth
                .iter()
                .map(|&x| {
                    let centre = x * (1.0 + rng.uniform(-0.3, 0.3));
                    Some(vec![
                        centre * (1.0 - spread),
                        centre,
                        centre * (1.0 + spread),
                    ])
                })
                .collect();
            Assessment {
                id: format!("e{e}"),
                values,
            }
        })
        .collect();
    CookeModel::new(&LEVELS_5_50_95, item_list, assessments, 0.1, 1.0).unwrap()
}

fn bridging_data(raters: usize, items: usize, density: f64) -> Vec<Rating> {
    let mut rng = SplitMix64::new(3);
    let fu: Vec<f64> = (0..raters)
        .map(|u| if u % 2 == 0 { -1.0 } else { 1.0 } * rng.uniform(0.3, 1.0))
        .collect();
    let iu: Vec<f64> = (0..raters).map(|_| rng.uniform(-0.1, 0.1)).collect();
    let fnn: Vec<f64> = (0..items).map(|_| rng.uniform(-0.6, 0.6)).collect();
    let inn: Vec<f64> = (0..items).map(|_| rng.uniform(-0.3, 0.4)).collect();
    let mut ratings = Vec::with_capacity((raters as f64 * items as f64 * density * 1.05) as usize);
    for u in 0..raters {
        for m in 0..items {
            if rng.next_f64() < density {
                let signal = 0.4 + iu[u] + inn[m] + fu[u] * fnn[m] + rng.uniform(-0.2, 0.2);
                let value = if signal > 0.66 {
                    1.0
                } else if signal > 0.33 {
                    0.5
                } else {
                    0.0
                };
                ratings.push(Rating {
                    rater: u,
                    item: m,
                    value,
                });
            }
        }
    }
    ratings
}

fn benches(c: &mut Criterion) {
    let (f, o) = binary_data(1_000_000);
    c.bench_function("binary_report_1e6", |b| {
        b.iter(|| binary_report(black_box(&f), black_box(&o)).unwrap())
    });

    let model = cooke_model(100, 100);
    c.bench_function("cooke_score_1e4_assessments", |b| {
        b.iter(|| black_box(&model).score_experts().unwrap())
    });
    let mut slow = c.benchmark_group("slow");
    slow.sample_size(10)
        .measurement_time(Duration::from_secs(20));
    slow.bench_function("cooke_optimised_dm_1e4_assessments", |b| {
        b.iter(|| black_box(&model).solve(Alpha::Optimised).unwrap())
    });

    let ratings = bridging_data(1_000, 10_000, 0.05);
    for loss in [LossForm::PublishedSum, LossForm::ProductionMean] {
        let config = BridgingConfig {
            loss,
            ..BridgingConfig::default()
        };
        let probe = fit(1_000, 10_000, &ratings, &config).unwrap();
        eprintln!(
            "bridging {loss:?}: {} ratings, {} sweeps, converged {}, gradient norm {:.2e}, loss {:.6}",
            ratings.len(),
            probe.sweeps,
            probe.converged,
            probe.gradient_norm,
            probe.loss
        );
        slow.bench_function(format!("bridging_fit_1000x10000_5pct_{loss:?}"), |b| {
            b.iter(|| fit(1_000, 10_000, black_box(&ratings), &config).unwrap())
        });
    }
    slow.finish();
}

criterion_group!(calibration_benches, benches);
criterion_main!(calibration_benches);
