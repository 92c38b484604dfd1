//! Why a panel question deadlocked, in words a report can print beside the tally.
//!
//! The replicated machine decides each question by its acceptance rule and records on the
//! motion which condition failed (too few rulings counted, support from one stance only,
//! an organisation carrying the outcome, fewer effective votes than the floor, a split
//! vote...). A procedure sees only the outcome, so a report used to print a bare
//! "deadlocked", even beside a unanimous tally. A shell that reads the motions collects
//! their causes here, keyed by motion id, and a report prints them with the outcome.
//!
//! The causes are kept beside a run, not in it: a run's state is what its entries
//! produce, and records written before causes were shown must replay to the same runs.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::panel::{PanelOutcome, Prior};

/// One acceptance condition a deadlocked question failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum DeadlockCause {
    /// Fewer rulings were revealed and counted than the quorum.
    TooFewRulings { counted: usize, quorum: usize },
    /// Every counted ruling came from arbiters of one declared stance, so no agreement
    /// across stances was possible.
    OneStanceOnly,
    /// A stance group split with no majority.
    SplitVote { prior: Prior },
    /// The stance groups' majorities answered differently.
    StancesDisagree,
    /// A side's net support (its yes minus its no) fell short of the need.
    NetSupportShort {
        prior: Prior,
        net: i64,
        needed: usize,
    },
    /// Counting each model lineage once, a side's net support fell short.
    TooFewLineages {
        prior: Prior,
        net: i64,
        needed: usize,
    },
    /// Without this organisation's rulings the outcome would not stand.
    OneOrganisation { organisation: String },
    /// The supporters share their errors: their effective number of independent votes
    /// (thousandths) is below the floor.
    EffectiveVotesBelowFloor { n_eff_milli: u32, needed_milli: u32 },
    /// The panel accepted an answer the procedure could not take, this many times; the
    /// run then took the question as deadlocked.
    AnswerRefused { times: u32 },
    /// The motion's record holds no such decision (it was not found, or is still open).
    NotOnRecord,
    /// Another acceptance condition, in the machine's words.
    Other { reason: String },
}

impl fmt::Display for Prior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Prior::A => "A",
            Prior::B => "B",
            Prior::None => "no prior",
        })
    }
}

impl fmt::Display for DeadlockCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeadlockCause::TooFewRulings { counted, quorum } => write!(
                f,
                "too few rulings revealed: {counted} counted, quorum {quorum}"
            ),
            DeadlockCause::OneStanceOnly => f.write_str("support from one stance only"),
            DeadlockCause::SplitVote { prior } => {
                write!(f, "split vote among prior {prior}")
            }
            DeadlockCause::StancesDisagree => f.write_str("the stances' majorities disagree"),
            DeadlockCause::NetSupportShort { prior, net, needed } => write!(
                f,
                "prior {prior}'s net support {net} is below the {needed} needed"
            ),
            DeadlockCause::TooFewLineages { prior, net, needed } => write!(
                f,
                "prior {prior}'s support counts {net} once per lineage, below the {needed} needed"
            ),
            DeadlockCause::OneOrganisation { organisation } => write!(
                f,
                "one organisation ({organisation}) would carry the outcome"
            ),
            DeadlockCause::EffectiveVotesBelowFloor {
                n_eff_milli,
                needed_milli,
            } => write!(
                f,
                "effective votes {:.2} below the floor of {:.2}",
                f64::from(*n_eff_milli) / 1000.0,
                f64::from(*needed_milli) / 1000.0
            ),
            DeadlockCause::AnswerRefused { times } => write!(
                f,
                "the procedure could not take the panel's answer ({times} times)"
            ),
            DeadlockCause::NotOnRecord => f.write_str("no decision on the motion's record"),
            DeadlockCause::Other { reason } => f.write_str(reason),
        }
    }
}

/// Each deadlocked question's causes, by the id of the motion that asked it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlockCauses(BTreeMap<String, Vec<DeadlockCause>>);

impl DeadlockCauses {
    pub fn insert(&mut self, motion_id: impl Into<String>, causes: Vec<DeadlockCause>) {
        self.0.insert(motion_id.into(), causes);
    }

    pub fn get(&self, motion_id: &str) -> Option<&[DeadlockCause]> {
        self.0.get(motion_id).map(Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The causes of one motion as one clause, `None` when none were collected.
    pub fn why(&self, motion_id: &str) -> Option<String> {
        let causes = self.get(motion_id).filter(|c| !c.is_empty())?;
        Some(
            causes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    }

    /// An outcome as a report prints it: `yes`, `no`, or `deadlocked (why)` when the
    /// causes are known (a bare `deadlocked` otherwise, as a report without the motions
    /// prints it).
    pub fn outcome(&self, outcome: PanelOutcome, motion_id: &str) -> String {
        match outcome {
            PanelOutcome::Yes => "yes".into(),
            PanelOutcome::No => "no".into(),
            PanelOutcome::Deadlocked => match self.why(motion_id) {
                Some(why) => format!("deadlocked ({why})"),
                None => "deadlocked".into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_deadlock_says_why_and_an_unknown_one_stays_bare() {
        let mut c = DeadlockCauses::default();
        c.insert(
            "m_1",
            vec![
                DeadlockCause::OneStanceOnly,
                DeadlockCause::EffectiveVotesBelowFloor {
                    n_eff_milli: 1500,
                    needed_milli: 2000,
                },
            ],
        );
        assert_eq!(
            c.outcome(PanelOutcome::Deadlocked, "m_1"),
            "deadlocked (support from one stance only; effective votes 1.50 below the floor of 2.00)"
        );
        assert_eq!(c.outcome(PanelOutcome::Deadlocked, "m_2"), "deadlocked");
        assert_eq!(c.outcome(PanelOutcome::Yes, "m_1"), "yes");
    }

    #[test]
    fn causes_round_trip_as_tagged_json() {
        let cause = DeadlockCause::SplitVote { prior: Prior::B };
        let v = serde_json::to_value(&cause).expect("serialises");
        assert_eq!(v, serde_json::json!({"cause": "split_vote", "prior": "B"}));
        let back: DeadlockCause = serde_json::from_value(v).expect("parses");
        assert_eq!(back, cause);
    }
}
