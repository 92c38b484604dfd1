//! What a run keeps of its start: the pack and its hash, both positions, the
//! advocates, the simulation script and the checks' measurements (seed `crux.txt`,
//! "Record").

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::checks::CheckRecord;
use super::contract::{Advocate, EvidencePack, Position, Side, Simulation};
use super::words::content_stems;

/// The label the pack carries when shown to the panel.
pub const PACK_LABEL: &str = "evidence pack";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Materials {
    pub run_id: String,
    /// The run's seed: every arbiter's presentation order derives from it.
    pub seed: u64,
    pub simulation_run: bool,
    pub decision: String,
    pub pack: EvidencePack,
    pub pack_hash: String,
    /// Optimist first, then pessimist.
    pub positions: Vec<Position>,
    pub word_budget: u32,
    pub advocates: Vec<Advocate>,
    pub simulation: Option<Simulation>,
    pub checks: Vec<CheckRecord>,
}

impl Materials {
    pub fn position(&self, side: Side) -> Option<&Position> {
        self.positions.iter().find(|p| p.side == side)
    }

    /// Labels of the report question's items, in the order they are listed.
    pub fn report_labels(&self) -> Vec<String> {
        vec![
            Side::Optimist.label(),
            Side::Pessimist.label(),
            PACK_LABEL.to_string(),
        ]
    }

    /// The advocates' model families, each once.
    pub fn advocate_families(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for a in &self.advocates {
            if !out.iter().any(|f| f.eq_ignore_ascii_case(&a.family)) {
                out.push(a.family.clone());
            }
        }
        out
    }

    /// Content stems of the decision, the pack and both positions: what a crux may be
    /// anchored to (gate rule `crux.gate.unspecific_crux`).
    pub fn anchors(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = content_stems(&self.decision).into_iter().collect();
        for i in &self.pack.items {
            out.extend(content_stems(&i.text));
        }
        for p in &self.positions {
            out.extend(content_stems(&p.thesis));
            for c in &p.claims {
                out.extend(content_stems(&c.text));
            }
        }
        out
    }
}
