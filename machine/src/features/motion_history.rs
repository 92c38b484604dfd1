//! What the decided motions of a record say about measured independence: the pairwise
//! error history they give (for a reader rebuilding it from an export) and, for a motion
//! deadlocked on lineages, which supporters shared one lineage. Above the row types: the
//! history itself is kept in `independence` (docs/coordinator/acceptance.md "Measured independence").

use std::collections::{BTreeMap, BTreeSet};

use crate::rules::acceptance::Outcome;
use crate::rules::acceptance::{RevealedRuling, Seat};
use crate::rules::independence::{ErrorHistory, OneLineageSupport};

impl ErrorHistory {
    /// The history a record's decided motions give; `arbiter_of` names the arbiter
    /// holding a ruling's key (hex).
    pub fn from_motions<'a>(
        motions: impl IntoIterator<Item = &'a crate::model::Motion>,
        arbiter_of: impl Fn(&str) -> Option<String>,
    ) -> Self {
        use crate::rules::acceptance::{Acceptance, Decision};
        let mut out = ErrorHistory::default();
        for m in motions {
            let crate::model::MotionStatus::Decided(Acceptance::Accepted {
                outcome: Outcome::Decided(accepted),
                ..
            }) = &m.status
            else {
                continue;
            };
            let wrong: BTreeMap<String, bool> = m
                .rulings
                .iter()
                .filter_map(|w| w.decode().ok()?.ruling)
                .filter_map(|r| {
                    let id = arbiter_of(&hex::encode(&r.arbiter_key))?;
                    let d = panel_proto::pb::Decision::try_from(r.decision).ok()?;
                    let yes = panel_proto::ruling_check::is_affirmative(d);
                    Some((id, yes != (*accepted == Decision::Yes)))
                })
                .collect();
            out.count(wrong);
        }
        out
    }
}

/// For a motion deadlocked with `InsufficientLineages`, which stances' supporters (the
/// seats of that stance voting with its majority, from the round's counted reveals) all
/// share one lineage, so the output can say so instead of only counting.
pub fn one_lineage_support(motion: &crate::model::Motion) -> Vec<OneLineageSupport> {
    use crate::rules::acceptance::{Acceptance, DeadlockReason};
    let crate::model::MotionStatus::Decided(Acceptance::Deadlocked(d)) = &motion.status else {
        return Vec::new();
    };
    let counted: Vec<&RevealedRuling> = motion
        .round
        .iter()
        .flat_map(|r| r.commitments.values())
        .filter_map(|s| s.reveal.as_ref()?.counted.as_ref())
        .collect();
    let mut out = Vec::new();
    for reason in &d.reasons {
        let DeadlockReason::InsufficientLineages { stance, .. } = reason else {
            continue;
        };
        let seat_of = |id: &str| motion.seats.iter().find(|s| s.arbiter_id == id);
        let group: Vec<(&RevealedRuling, &Seat)> = counted
            .iter()
            .filter_map(|r| Some((*r, seat_of(&r.arbiter_id)?)))
            .filter(|(_, s)| s.stance == *stance)
            .collect();
        let yes = group
            .iter()
            .filter(|(r, _)| r.decision == crate::rules::acceptance::Decision::Yes)
            .count();
        let majority = if yes * 2 >= group.len() {
            crate::rules::acceptance::Decision::Yes
        } else {
            crate::rules::acceptance::Decision::No
        };
        let supporters: Vec<&Seat> = group
            .iter()
            .filter(|(r, _)| r.decision == majority)
            .map(|(_, s)| *s)
            .collect();
        let lineages: BTreeSet<&str> = supporters.iter().map(|s| s.lineage.as_str()).collect();
        if let ([lineage], false) = (
            lineages.into_iter().collect::<Vec<_>>().as_slice(),
            supporters.is_empty(),
        ) {
            out.push(OneLineageSupport {
                stance: *stance,
                lineage: (*lineage).to_owned(),
                supporters: supporters.iter().map(|s| s.arbiter_id.clone()).collect(),
            });
        }
    }
    out
}
