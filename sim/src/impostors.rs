//! Impostor detection: arbiters whose declared stance is not the one they lean to, found
//! by the machine's prior-consistency check (`calibration::prior_consistency`, run the way
//! `machine/src/priors.rs` runs it: bridging fit plus binomial confirmation over the
//! binary rulings of seated arbiters). Each history window is an independent trial; recall
//! and the false-flag rate are counted over all windows (docs/SIMULATION.md "Impostors").

use calibration::bridging::{BridgingConfig, fit_matrix};
use calibration::prior_consistency::{Camp, PriorCheckPolicy, check_priors};
use panel_machine::acceptance::Stance;
use serde::Serialize;

use crate::population::Population;
use crate::simulation::MotionRecord;

/// Flags of one window, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WindowFlags {
    pub impostors: usize,
    pub impostors_flagged: usize,
    /// Honest arbiters with a declared camp (colluders left out: they are not claiming a
    /// false prior, and are counted in `colluders_flagged`).
    pub honest: usize,
    pub honest_flagged: usize,
    pub colluders_flagged: usize,
    /// The fit or check refused the window (too little history).
    pub failed: bool,
}

fn camp(s: Stance) -> Option<Camp> {
    match s {
        Stance::A => Some(Camp::A),
        Stance::B => Some(Camp::B),
        Stance::None => None,
    }
}

/// Run the check on one window of motions.
pub fn check_window(pop: &Population, window: &[MotionRecord]) -> WindowFlags {
    let n = pop.arbiters.len();
    let binary: Vec<&MotionRecord> = window.iter().filter(|r| r.gold.is_none()).collect();
    let mut ratings = vec![vec![None; binary.len()]; n];
    for (m, r) in binary.iter().enumerate() {
        for &i in &r.seated_new {
            ratings[i][m] = Some(if r.rulings[i].yes { 1.0 } else { 0.0 });
        }
    }
    let camps: Vec<Option<Camp>> = pop.arbiters.iter().map(|a| camp(a.declared)).collect();
    let mut flags = WindowFlags::default();
    let checks = fit_matrix(&ratings, &BridgingConfig::default())
        .and_then(|fit| check_priors(&ratings, &camps, &fit, &PriorCheckPolicy::default()));
    let Ok(checks) = checks else {
        flags.failed = true;
        return flags;
    };
    for c in checks.iter().filter(|c| c.declared.is_some()) {
        let a = &pop.arbiters[c.arbiter];
        if a.target.is_some() {
            flags.colluders_flagged += usize::from(c.flagged);
        } else if a.is_impostor() {
            flags.impostors += 1;
            flags.impostors_flagged += usize::from(c.flagged);
        } else {
            flags.honest += 1;
            flags.honest_flagged += usize::from(c.flagged);
        }
    }
    flags
}
