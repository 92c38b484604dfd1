//! Why each question a procedure run took as deadlocked deadlocked, in the procedures'
//! terms (`panel_procedures::DeadlockCause`), read from the record of the motion that
//! settled it: the acceptance conditions it failed (acceptance.rs), or that the
//! procedure refused the panel's answer until the machine took the question as
//! deadlocked. Shared by the CLI's reports and the replica's `Query::Run`, so the
//! dashboard and `panel runs show` give the same reasons (docs/PROCEDURES.md).

use panel_procedures::{DeadlockCause, DeadlockCauses, PanelOutcome, Prior};

use crate::model::motion_table::MotionTable;
use crate::model::{Motion, MotionStatus};
use crate::rules::acceptance::{Acceptance, DeadlockReason, Stance};
use crate::runs::RunRecord;

/// The causes of every deadlocked question of `run`, from the motions on record.
pub fn of_run(motions: &MotionTable, run: &RunRecord) -> DeadlockCauses {
    let mut causes = DeadlockCauses::default();
    for s in run
        .settled
        .iter()
        .filter(|s| s.outcome == PanelOutcome::Deadlocked)
    {
        let refused = run.refused_settlements.get(&s.key).copied().unwrap_or(0);
        let motion = motions.get(&s.motion_id);
        causes.insert(s.motion_id.clone(), causes_of(motion.as_deref(), refused));
    }
    causes
}

/// The causes a motion's record gives for a question its run took as deadlocked.
pub fn causes_of(motion: Option<&Motion>, refused: u32) -> Vec<DeadlockCause> {
    match motion.map(|m| &m.status) {
        Some(MotionStatus::Decided(Acceptance::Deadlocked(d))) => {
            d.reasons.iter().map(cause_of).collect()
        }
        // The panel answered, but the procedure refused the answer each time it was asked.
        Some(MotionStatus::Decided(Acceptance::Accepted { .. })) => {
            vec![DeadlockCause::AnswerRefused { times: refused }]
        }
        Some(MotionStatus::Open) | None => vec![DeadlockCause::NotOnRecord],
    }
}

fn prior_of(stance: Stance) -> Prior {
    match stance {
        Stance::A => Prior::A,
        Stance::B => Prior::B,
        Stance::None => Prior::None,
    }
}

/// One failed acceptance condition (machine/src/rules/acceptance.rs) in the procedures' terms.
fn cause_of(r: &DeadlockReason) -> DeadlockCause {
    match r {
        DeadlockReason::NoQuorum { counted, quorum } => DeadlockCause::TooFewRulings {
            counted: *counted,
            quorum: *quorum,
        },
        DeadlockReason::SingleStanceGroup => DeadlockCause::OneStanceOnly,
        DeadlockReason::SplitGroup { stance } => DeadlockCause::SplitVote {
            prior: prior_of(*stance),
        },
        DeadlockReason::GroupsDisagree => DeadlockCause::StancesDisagree,
        DeadlockReason::InsufficientSupport {
            stance,
            net,
            needed,
        } => DeadlockCause::NetSupportShort {
            prior: prior_of(*stance),
            net: *net,
            needed: *needed,
        },
        DeadlockReason::InsufficientLineages {
            stance,
            net,
            needed,
        } => DeadlockCause::TooFewLineages {
            prior: prior_of(*stance),
            net: *net,
            needed: *needed,
        },
        DeadlockReason::DependsOnOrganisation { organisation } => DeadlockCause::OneOrganisation {
            organisation: organisation.clone(),
        },
        DeadlockReason::CorrelatedSupport {
            n_eff_milli,
            needed_milli,
        } => DeadlockCause::EffectiveVotesBelowFloor {
            n_eff_milli: *n_eff_milli,
            needed_milli: *needed_milli,
        },
        // Conditions of relevance and tier-verification motions, and of the weighted
        // pool, which the procedures' causes do not name: kept in the machine's words.
        other @ (DeadlockReason::RelevanceSpread { .. }
        | DeadlockReason::PoolUndecided
        | DeadlockReason::SideWithoutSupport { .. }
        | DeadlockReason::NarrowSupport
        | DeadlockReason::NoSupermajority { .. }
        | DeadlockReason::SeatsRemoved { .. }
        | DeadlockReason::MissingRelevance { .. }
        | DeadlockReason::MissingReceipts { .. }
        | DeadlockReason::ReceiptsDisagree) => DeadlockCause::Other {
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failed_condition_reads_as_its_cause() {
        let one = cause_of(&DeadlockReason::SingleStanceGroup);
        assert_eq!(one, DeadlockCause::OneStanceOnly);
        let org = cause_of(&DeadlockReason::DependsOnOrganisation {
            organisation: "southbank".into(),
        });
        assert!(org.to_string().contains("southbank"), "{org}");
        let split = cause_of(&DeadlockReason::SplitGroup { stance: Stance::B });
        assert_eq!(split, DeadlockCause::SplitVote { prior: Prior::B });
        // A question whose motion is not on record says so rather than nothing.
        assert_eq!(causes_of(None, 0), vec![DeadlockCause::NotOnRecord]);
    }
}
