//! Error correlations measured from ruling history, as a replica could measure them: only
//! arbiters seated together on a decided binary motion are compared, over the first
//! history window (docs/SIMULATION.md "n_eff"). The panel's and the supporters' Kish
//! effective numbers come from these (`calibration::independence`).

use calibration::independence::{ErrorCoincidence, kish_n_eff};

use crate::population::Population;
use crate::simulation::MotionRecord;

/// Fewer co-seated motions than this and a pair's correlation is not trusted.
const MIN_PAIR_MOTIONS: u64 = 15;

/// Pairwise error correlations of the pool.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorCorrelations {
    matrix: Vec<Vec<f64>>,
}

impl ErrorCorrelations {
    /// Measure on `history`. A pair seen too rarely (or whose errors do not vary) falls
    /// back to its declared lineages: 1 when it declared the same one, else 0, the
    /// assumption the lineage rule makes.
    pub fn measure(pop: &Population, history: &[MotionRecord]) -> Self {
        let n = pop.arbiters.len();
        let mut counts = vec![vec![ErrorCoincidence::default(); n]; n];
        for r in history.iter().filter(|r| r.gold.is_none()) {
            for (x, &i) in r.seated_new.iter().enumerate() {
                let wi = r.rulings[i].yes != r.truth;
                for &j in &r.seated_new[x + 1..] {
                    let wj = r.rulings[j].yes != r.truth;
                    counts[i][j].add(wi, wj);
                }
            }
        }
        let mut matrix = vec![vec![1.0; n]; n];
        for i in 0..n {
            for j in i + 1..n {
                let c = if counts[i][j].motions >= MIN_PAIR_MOTIONS {
                    counts[i][j].correlation()
                } else {
                    None
                };
                let same_lineage =
                    pop.arbiters[i].declared_family == pop.arbiters[j].declared_family;
                let rho = c.unwrap_or(f64::from(u8::from(same_lineage)));
                matrix[i][j] = rho;
                matrix[j][i] = rho;
            }
        }
        Self { matrix }
    }

    /// Kish's effective number of the given pool members.
    pub fn n_eff(&self, members: &[usize]) -> f64 {
        kish_n_eff(members.len(), |a, b| self.matrix[members[a]][members[b]])
    }

    /// The mean correlation over distinct pairs of `members`.
    pub fn mean_pair(&self, members: &[usize]) -> Option<f64> {
        let mut sum = 0.0;
        let mut k = 0usize;
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                sum += self.matrix[i][j];
                k += 1;
            }
        }
        (k > 0).then(|| sum / k as f64)
    }
}
