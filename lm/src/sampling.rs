//! Choosing the next token: greedy at temperature 0, else sampled among the 40 likeliest
//! tokens renormalised at the temperature, with a small deterministic generator
//! (SplitMix64) seeded by the caller, so a sampled completion is reproducible from its
//! seed (the judge derives it from the motion; `panel model serve` takes the request's).

use crate::model::NextToken;

/// How many of the likeliest tokens a sampled pick chooses among.
const TOP_K: usize = 40;

/// Picks tokens for one completion.
pub struct Sampler {
    temperature: f64,
    state: u64,
}

impl Sampler {
    pub fn new(temperature: f64, seed: u64) -> Sampler {
        Sampler {
            temperature,
            state: seed,
        }
    }

    /// The next token after the distribution `next`.
    pub fn pick(&mut self, next: &NextToken) -> u32 {
        if self.temperature <= 0.0 {
            return next.top(1).first().map_or(0, |t| t.0);
        }
        let top = next.top(TOP_K);
        let w: Vec<f64> = top
            .iter()
            .map(|(_, lp)| (lp / self.temperature).exp())
            .collect();
        let mut r = self.next_f64() * w.iter().sum::<f64>();
        for ((id, _), wi) in top.iter().zip(&w) {
            if r < *wi {
                return *id;
            }
            r -= wi;
        }
        top.last().map_or(0, |t| t.0)
    }

    /// SplitMix64, mapped to [0, 1).
    fn next_f64(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}
