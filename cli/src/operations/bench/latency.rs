//! Latency percentiles over one run's samples (nearest rank), in milliseconds. Pure.

use serde::Serialize;

/// p50, p99 and p99.9 of one milestone over the decisions that reached it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// Decisions the figure is over.
    pub n: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    /// The percentiles of `samples`; `None` when there are none.
    pub fn of(samples: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut v: Vec<f64> = samples.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            v[i]
        };
        Some(Self {
            n: v.len(),
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            p999_ms: rank(0.999),
            max_ms: v[v.len() - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let p = Percentiles::of((1..=1000).map(f64::from)).expect("samples");
        assert_eq!(
            (p.n, p.p50_ms, p.p99_ms, p.p999_ms, p.max_ms),
            (1000, 500.0, 990.0, 999.0, 1000.0)
        );
        assert!(Percentiles::of([]).is_none());
    }
}
