//! Rulings on the record: each signed ruling of a motion decoded (who signed it, what it
//! decided, how that counts for the motion's binary question), and whether it dissents
//! from what the panel decided. Shared by the motion cards and the arbiter pages, so a
//! ruling counts as dissent in one place only.

use panel_machine::rules::ruling::wire_kind;
use panel_machine::{Acceptance, Decision, Outcome};
use panel_machine::{Motion, MotionStatus};
use panel_proto::pb;
use panel_proto::ruling_check;

use crate::views::Roster;

/// One ruling on the record, decoded from its signed protobuf.
pub struct Read {
    pub arbiter: String,
    /// Whether the signer is a registered arbiter (`arbiter` is its id).
    pub registered: bool,
    pub decision: pb::Decision,
    pub counted: Option<Decision>,
    pub probability: f64,
    pub relevance: Option<u32>,
    pub tier: Option<u32>,
    pub receipt: Option<(String, String)>,
    pub rationale: String,
}

/// Why a logged ruling cannot be shown; the page lists it as unreadable instead.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableRuling {
    #[error(transparent)]
    Decode(#[from] panel_machine::rules::ruling::RulingError),
    #[error("the signed ruling carries no ruling")]
    Empty,
}

/// Decodes one of `m`'s rulings, naming its signer from `roster`.
pub fn read_ruling(
    m: &Motion,
    w: &panel_machine::WireRuling,
    roster: &Roster,
) -> Result<Read, UnreadableRuling> {
    let sr = w.decode()?;
    let r = sr.ruling.ok_or(UnreadableRuling::Empty)?;
    let key = hex::encode(&r.arbiter_key);
    let signer = roster.by_key(&r.arbiter_key);
    let arbiter = signer.map_or_else(
        || format!("unregistered key {}", key.get(..12).unwrap_or(&key)),
        |a| a.registration.arbiter_id.clone(),
    );
    let decision = pb::Decision::try_from(r.decision).unwrap_or(pb::Decision::Unspecified);
    let counted = match (ruling_check::binary_pair(wire_kind(m.spec.kind)), decision) {
        (_, pb::Decision::Abstain) => None,
        (Some((yes, _)), d) if d == yes => Some(Decision::Yes),
        (Some((_, no)), d) if d == no => Some(Decision::No),
        (Some(_), _) => None,
        (None, _) => Some(Decision::Yes),
    };
    Ok(Read {
        arbiter,
        registered: signer.is_some(),
        decision,
        counted,
        probability: r.probability,
        relevance: r.relevance,
        tier: r.tier,
        receipt: r
            .receipt
            .as_ref()
            .map(|rc| (rc.url.clone(), hex::encode(&rc.sha256))),
        rationale: r.rationale,
    })
}

/// Whether `r` dissents from what the panel decided.
pub fn dissents(status: &MotionStatus, r: &Read, majority: Option<Decision>) -> bool {
    match status {
        MotionStatus::Open => false,
        MotionStatus::Decided(Acceptance::Accepted { outcome, .. }) => match outcome {
            Outcome::Decided(d) | Outcome::TierVerified { decision: d, .. } => {
                r.counted.is_some_and(|c| c != *d)
            }
            Outcome::Relevance(step) => r.relevance.is_some_and(|v| v != u32::from(*step)),
        },
        MotionStatus::Decided(Acceptance::Deadlocked(_)) => {
            majority.is_some_and(|m| r.counted.is_some_and(|c| c != m))
        }
    }
}

/// Every ruling of a motion decoded, and the majority of the counted ones (what a
/// deadlock's dissent is measured against; `None` on a tie).
pub struct Rulings {
    pub reads: Vec<Result<Read, UnreadableRuling>>,
    pub majority: Option<Decision>,
}

impl Rulings {
    pub fn of(m: &Motion, roster: &Roster) -> Rulings {
        let reads: Vec<Result<Read, UnreadableRuling>> = m
            .rulings
            .iter()
            .map(|w| read_ruling(m, w, roster))
            .collect();
        let (yes, no) = reads
            .iter()
            .flatten()
            .fold((0, 0), |(y, n), r| match r.counted {
                Some(Decision::Yes) => (y + 1, n),
                Some(Decision::No) => (y, n + 1),
                None => (y, n),
            });
        let majority = match yes.cmp(&no) {
            std::cmp::Ordering::Greater => Some(Decision::Yes),
            std::cmp::Ordering::Less => Some(Decision::No),
            std::cmp::Ordering::Equal => None,
        };
        Rulings { reads, majority }
    }
}
