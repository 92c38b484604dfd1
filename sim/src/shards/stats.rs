//! Percentiles of simulated latencies.
//!
//! Nearest rank on the sorted sample, the definition the benches print, so a model's p99
//! and a bench's p99 mean the same thing.

use super::engine::Us;

/// The `q` quantile (0 < q <= 1) of `sorted` in milliseconds, by nearest rank; `None` for
/// an empty sample.
pub fn percentile_ms(sorted: &[Us], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    let ix = rank.clamp(1, n) - 1;
    sorted.get(ix).map(|us| *us as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<Us> = (1..=100).map(|i| i * 1000).collect();
        assert_eq!(percentile_ms(&v, 0.5), Some(50.0));
        assert_eq!(percentile_ms(&v, 0.99), Some(99.0));
        assert_eq!(percentile_ms(&v, 1.0), Some(100.0));
        assert_eq!(percentile_ms(&[], 0.5), None);
        assert_eq!(percentile_ms(&[7000], 0.99), Some(7.0));
    }
}
