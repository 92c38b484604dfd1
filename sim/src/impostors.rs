//! Impostor detection: arbiters whose declared stance is not the one they lean to, found
//! by the prior-consistency check over the binary rulings of seated arbiters, run the way
//! `machine/src/features/priors.rs` runs it (bridging fit first). Version 2
//! (`calibration::prior_consistency::check_priors_v2`) is the rule measured; version 1
//! (`check_priors`, what older records hold) runs on the same windows for comparison.
//! Each history window is an independent trial; recall and the false-flag rate are counted
//! over all windows (docs/SIMULATION.md "Impostors").

use calibration::bridging::{BridgingConfig, fit_matrix};
use calibration::prior_consistency::{
    Camp, PriorCheck, PriorCheckPolicy, PriorCheckPolicyV2, check_priors, check_priors_v2,
};
use panel_machine::features::priors::camp;
use serde::Serialize;

use crate::population::Population;
use crate::simulation::MotionRecord;

/// Flags of one rule in one window, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RuleFlags {
    pub impostors_flagged: usize,
    pub honest_flagged: usize,
    pub colluders_flagged: usize,
}

/// Flags of one window, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WindowFlags {
    pub impostors: usize,
    /// Honest arbiters with a declared camp (colluders left out: they are not claiming a
    /// false prior, and are counted in `colluders_flagged`).
    pub honest: usize,
    /// Version 2, the rule measured.
    pub v2: RuleFlags,
    /// Version 1 on the same rulings.
    pub v1: RuleFlags,
    /// The fit or check refused the window (too little history).
    pub failed: bool,
}

/// Count one rule's flags by what each arbiter really is.
fn count(pop: &Population, checks: &[PriorCheck]) -> RuleFlags {
    let mut f = RuleFlags::default();
    for c in checks.iter().filter(|c| c.declared.is_some() && c.flagged) {
        let a = &pop.arbiters[c.arbiter];
        if a.target.is_some() {
            f.colluders_flagged += 1;
        } else if a.is_impostor() {
            f.impostors_flagged += 1;
        } else {
            f.honest_flagged += 1;
        }
    }
    f
}

/// Run both versions of the check on one window of motions.
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
    let checks = fit_matrix(&ratings, &BridgingConfig::default()).and_then(|fit| {
        let v1 = check_priors(&ratings, &camps, &fit, &PriorCheckPolicy::default())?;
        let v2 = check_priors_v2(&ratings, &camps, &fit, &PriorCheckPolicyV2::default())?;
        Ok((v1, v2))
    });
    match checks {
        Ok((v1, v2)) => {
            for a in pop.arbiters.iter().filter(|a| a.target.is_none()) {
                if camp(a.declared).is_none() {
                    continue;
                }
                if a.is_impostor() {
                    flags.impostors += 1;
                } else {
                    flags.honest += 1;
                }
            }
            flags.v1 = count(pop, &v1);
            flags.v2 = count(pop, &v2);
        }
        Err(_) => flags.failed = true,
    }
    flags
}
