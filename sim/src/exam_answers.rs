//! How the simulated judges answer the calibration exam (docs/SIMULATION.md "The
//! machine's own path"): each binary item of the embedded pool is a motion of the world
//! whose truth is the item's gold, with no contested lean and no author, and every judge
//! rules on it by the judge model (`judge::rule`), with its biases, its lineage's shared
//! error and its own. A colluder answers the exam honestly (an exam motion says it is
//! one, so a coalition gains nothing by failing it); a sybil answers as its original.
//!
//! The variants of a bias probe (docs/CALIBRATION.md "Bias probes") ask one question, so
//! they share one draw of every error: the order-swapped variant differs only in which
//! option comes first (the judge's position bias), the padded one only in which is longer
//! (its verbosity bias), and the consequence sentence moves nothing the model knows.

use std::collections::BTreeMap;

use calibration::exam::{Gold, ProbeVariant};
use panel_machine::features::exam_sitting::embedded_pool;

use crate::gaussian::Rng;
use crate::judge::rule;
use crate::population::{Arbiter, Population};
use crate::scenario::Scenario;
use crate::world::Motion;

/// Stream tag of the exam's errors (the direct engine's tags are 1 to 3).
const EXAM_ERRORS: u64 = 6;

/// Each binary item's probability of yes from every judge, in pool order, by item id.
/// Empty when the embedded pool does not load (the machine would refuse the sitting too).
pub fn judgements(s: &Scenario, pop: &Population) -> BTreeMap<String, Vec<f64>> {
    let Ok(pool) = embedded_pool() else {
        return BTreeMap::new();
    };
    let mut rng = Rng::stream(s.seed, EXAM_ERRORS);
    let honest: Vec<Arbiter> = pop
        .arbiters
        .iter()
        .map(|a| Arbiter {
            target: None,
            ..a.clone()
        })
        .collect();
    let families = pop.families.len();
    // One draw per question: a probe group's, or the item's own.
    let mut draws: BTreeMap<String, (Motion, Vec<f64>)> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for item in &pool.exam.items {
        let Gold::Binary(truth) = item.gold else {
            continue;
        };
        let question = item
            .probe
            .as_ref()
            .map_or_else(|| item.id.clone(), |p| format!("probe/{}", p.group));
        let (base, own) = draws
            .entry(question)
            .or_insert_with(|| {
                let m = Motion {
                    truth,
                    relevance: None,
                    yes_first: rng.chance(0.5),
                    yes_longer: rng.chance(0.5),
                    author_family: None,
                    author_declared: false,
                    lean_a: 0.0,
                    common: rng.normal(),
                    family_error: (0..families).map(|_| rng.normal()).collect(),
                };
                let own = honest.iter().map(|_| rng.normal()).collect();
                (m, own)
            })
            .clone();
        let variant = item.probe.as_ref().map(|p| p.variant);
        let m = Motion {
            truth,
            yes_first: base.yes_first ^ (variant == Some(ProbeVariant::OrderSwapped)),
            yes_longer: base.yes_longer ^ (variant == Some(ProbeVariant::Padded)),
            ..base
        };
        let mut p: Vec<f64> = honest
            .iter()
            .zip(&own)
            .map(|(a, e)| f64::from(rule(a, pop, &m, s.world.shared_error, *e).p_yes))
            .collect();
        for (i, a) in pop.arbiters.iter().enumerate() {
            if let Some(o) = a.copies {
                p[i] = p[o];
            }
        }
        out.insert(item.id.clone(), p);
    }
    out
}
