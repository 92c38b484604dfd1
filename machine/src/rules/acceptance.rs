//! Cross-prior acceptance: when a panel's revealed rulings turn a motion into an outcome.
//!
//! Pure: no I/O, no clock. Every replica evaluates this on the same inputs from the log, so
//! the decision is the same everywhere (docs/ARCHITECTURE.md, "Acceptance" and invariant 1).
//!
//! Default rule (all must hold, otherwise the motion is deadlocked and the dissent recorded):
//! 1. a quorum of signed, revealed rulings from seated arbiters;
//! 2. at least two stance groups represented (A, B, none);
//! 3. inside every represented group, a strict majority for the same decision;
//! 4. net support (for the outcome minus against it) of at least `k` from each side of the
//!    resolution, stance A **and** stance B. A coalition of one stance, however large, and
//!    however many neutral arbiters join it, cannot reach an outcome without the other side.
//!    With `Policy::independence.one_per_lineage`, supporters sharing a lineage (declared
//!    model family) count once, whatever stances they declared (`independence`);
//! 5. with `Policy::independence.without_any_organisation`: the same outcome is reached by
//!    the panel without any one organisation's seats and rulings, so no organisation alone
//!    carries it (`DeadlockReason::DependsOnOrganisation` names each that would).
//!
//! Rules 4 (lineage) and 5 are off for policies written before them (docs/coordinator/acceptance.md,
//! "The acceptance rule"), so older records replay to the same state.
//!
//! Relevance motions accept the median value when the stance-group medians lie within one
//! step of each other. Tier verification additionally needs retrieval receipts (hash of the
//! fetched bytes) from arbiters of both sides, and all receipts must agree.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::rules::weighted_pool::{PoolInput, Weights};

/// A declared stance on the debate's resolution (SPEC: the arbiter's declared prior).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Stance {
    A,
    B,
    /// No stance declared; counts for quorum and groups, never for a side's support.
    None,
}

/// What kind of question a motion puts to the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MotionKind {
    /// Merge or reject a candidate contribution.
    Merge,
    /// Resolve a challenge (uphold or dismiss).
    Challenge,
    /// Verify a citation's source tier; needs retrieval receipts.
    TierVerification,
    /// Assign a relevance value on the protocol's step scale.
    Relevance,
    /// Certify a steelman over the author's objection.
    Steelman,
    /// Advance the debate phase.
    Phase,
    /// Admit an appeal.
    Appeal,
    /// A binary question from another seed procedure (docs/PROCEDURES.md).
    Procedure,
}

/// A binary ruling on a motion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Decision {
    Yes,
    No,
}

/// One seat of a drawn panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    pub arbiter_id: String,
    pub stance: Stance,
    pub organisation: String,
    /// The arbiter's declared lineage (its registered model family, docs/ARCHITECTURE.md
    /// "Prior"); empty on seats drawn before lineages were seated, which the rule counts
    /// as one shared, undeclared lineage.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lineage: String,
}

/// A ruling whose signature and commitment were already verified by the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevealedRuling {
    pub arbiter_id: String,
    pub decision: Decision,
    /// The arbiter's probability for `Yes`, in thousandths (integers keep replicas equal).
    pub probability_milli: u16,
    /// The relevance step for relevance motions.
    pub relevance: Option<u8>,
}

/// Hash of the bytes an arbiter fetched when checking a citation's tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalReceipt {
    pub arbiter_id: String,
    /// SHA-256 of the fetched bytes (lower-case hex on the wire).
    pub content_hash: crate::rules::hex_bytes::DigestBytes,
}

/// Parameters of the rule. `Policy::default()` is the rule as it was before independence
/// was measured, which is also what a debate or motion without a policy gets: records
/// written before the independence rules replay unchanged. New debates ask for
/// [`Policy::independent`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Minimum counted rulings; `None` means a majority of the seats.
    pub quorum: Option<usize>,
    /// Minimum net support from each side (A and B).
    pub min_net_support_per_side: usize,
    /// Rules 4 (lineage) and 5 and the unsteerable draw (`independence`); absent, so all
    /// off, in policies written before them.
    #[serde(default, skip_serializing_if = "Independence::is_off")]
    pub independence: Independence,
    /// Run the prior-consistency check by itself after every this many decided motions
    /// of the debate (`priors.rs`; docs/coordinator/acceptance.md "Declared priors"):
    /// nobody has to ask for it, and a confirmed impostor is reseated under its fitted
    /// camp on the record. Absent in policies written before it: checks ran on request
    /// only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_check_every: Option<u32>,
    /// How long an accepted outcome stays provisional, open to appeal, before it is final
    /// (`finality.rs`); absent: [`DEFAULT_APPEAL_WINDOW_MS`](crate::features::finality::DEFAULT_APPEAL_WINDOW_MS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appeal_window_ms: Option<u64>,
    /// How the counted rulings become an outcome: head counts per stance group (absent,
    /// every policy written before the weighted pool) or the performance-weighted pool
    /// (`weighted_pool.rs`; honoured from rule set
    /// [`WEIGHTED_POOL`](crate::rules::WEIGHTED_POOL) on).
    #[serde(default, skip_serializing_if = "Aggregation::is_head_count")]
    pub aggregation: Aggregation,
}

/// How a policy turns counted yes/no rulings into an outcome (docs/coordinator/acceptance.md
/// "The weighted pool"). Relevance and tier receipts are judged the same way under both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aggregation {
    /// Rules 3 and 4: a strict majority inside every stance group, all on one side, and a
    /// net support of `min_net_support_per_side` from A and from B.
    #[default]
    HeadCount,
    /// The outcome is the side of 0.5 the performance-weighted pool of the stated
    /// probabilities falls on; it stands only with at least `min_net_support_per_side`
    /// supporters of positive weight from A and from B (each lineage once under
    /// `one_per_lineage`), supporters of two lineages and two organisations, and rules 1,
    /// 2 and 5 as under head counts. Split stance groups no longer deadlock.
    WeightedPool,
    /// A final panel's rule (`final_panel.rs`): the answer needs `milli` thousandths of the
    /// counted rulings, supporters of both stances among them, a supporter pair differing in
    /// organisation and lineage, and rules 1, 2 and 5 as under head counts.
    Supermajority { milli: u32 },
}

impl Aggregation {
    pub fn is_head_count(&self) -> bool {
        *self == Aggregation::HeadCount
    }
}

/// How often [`Policy::independent`] schedules the prior-consistency check: after every
/// this many decided motions of a debate. The check needs about 15-20 contested rulings
/// per arbiter to confirm anything (docs/CALIBRATION.md), so checking more often would
/// mostly record "not yet"; much less often would leave an impostor seated for long.
pub const PRIOR_CHECK_EVERY: u32 = 20;

impl Default for Policy {
    fn default() -> Self {
        Self {
            quorum: None,
            min_net_support_per_side: 1,
            independence: Independence::default(),
            prior_check_every: None,
            appeal_window_ms: None,
            aggregation: Aggregation::HeadCount,
        }
    }
}

impl Policy {
    /// The project default for new debates: the default rule with every independence rule
    /// on (docs/coordinator/acceptance.md "The acceptance rule").
    /// The prior-consistency check runs by itself every [`PRIOR_CHECK_EVERY`] decided
    /// motions, so measuring declared priors needs nobody to ask.
    pub fn independent() -> Self {
        Self {
            independence: Independence::ALL,
            prior_check_every: Some(PRIOR_CHECK_EVERY),
            ..Self::default()
        }
    }

    /// The rule as `panel debate show` names it: the [`Rule`] whose policy this is (its
    /// appeal window and check schedule aside), or what it departs from.
    pub fn describe(&self) -> &'static str {
        match (self.aggregation, self.independence == Independence::ALL) {
            (Aggregation::WeightedPool, true) => {
                "weighted (the independent rule deciding by the performance-weighted pool)"
            }
            (Aggregation::WeightedPool, false) => {
                "weighted pool, with only some independence rules"
            }
            (Aggregation::HeadCount, true) => {
                "independent (head counts with every independence rule)"
            }
            (Aggregation::HeadCount, false) if self.independence.is_off() => "head count",
            (Aggregation::HeadCount, false) => "head count, with some independence rules",
            (Aggregation::Supermajority { .. }, _) => "a final panel's supermajority",
        }
    }

    /// [`Policy::independent`] with the outcome from the performance-weighted pool
    /// ([`Aggregation::WeightedPool`]).
    pub fn weighted() -> Self {
        Self {
            aggregation: Aggregation::WeightedPool,
            ..Self::independent()
        }
    }
}

/// The acceptance rule a new debate asks for by name (`panel debate new --policy`,
/// `CreateDebateRequest.rule`); each front end maps its own spelling to this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// [`Policy::independent`]: the default for new debates.
    Independent,
    /// [`Policy::default`]: stances from registration, two agreeing stances enough.
    HeadCount,
    /// [`Policy::weighted`]: the independent rule deciding by the weighted pool.
    Weighted,
}

impl Rule {
    pub fn policy(self) -> Policy {
        match self {
            Rule::Independent => Policy::independent(),
            Rule::HeadCount => Policy::default(),
            Rule::Weighted => Policy::weighted(),
        }
    }
}

/// Tally of one stance group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupTally {
    pub yes: usize,
    pub no: usize,
}

/// What the panel decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Decided(Decision),
    Relevance(u8),
    TierVerified {
        decision: Decision,
        content_hash: crate::rules::hex_bytes::DigestBytes,
    },
}

/// Why a motion did not reach an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeadlockReason {
    NoQuorum {
        counted: usize,
        quorum: usize,
    },
    SingleStanceGroup,
    SplitGroup {
        stance: Stance,
    },
    GroupsDisagree,
    InsufficientSupport {
        stance: Stance,
        net: i64,
        needed: usize,
    },
    RelevanceSpread {
        min_median: u8,
        max_median: u8,
    },
    MissingRelevance {
        arbiter_id: String,
    },
    MissingReceipts {
        stance: Stance,
    },
    ReceiptsDisagree,
    /// Rule 4 with lineages: the side's net support counting each lineage once is below
    /// the need (its net counting every arbiter would have sufficed).
    InsufficientLineages {
        stance: Stance,
        net: i64,
        needed: usize,
    },
    /// Rule 5: without this organisation's seats and rulings the panel would not reach the
    /// same outcome, so the organisation alone would be carrying it.
    DependsOnOrganisation {
        organisation: String,
    },
    /// The supporters' measured (or lineage-implied) error correlation leaves them worth
    /// fewer than the needed independent votes (`independence::require_independent_support`).
    CorrelatedSupport {
        n_eff_milli: u32,
        needed_milli: u32,
    },
    /// Weighted pool: the pooled probability sits at exactly 0.5, or no counted ruling
    /// carries weight.
    PoolUndecided,
    /// Weighted pool: this stance gave fewer supporters of positive weight to the pooled
    /// outcome than the policy needs (each lineage once under `one_per_lineage`).
    SideWithoutSupport {
        stance: Stance,
        supporters: usize,
        needed: usize,
    },
    /// Weighted pool and final panel: no supporter of stance A and supporter of stance B
    /// differ in both organisation and lineage, so the agreement is not across differing
    /// priors.
    NarrowSupport,
    /// Final panel: neither answer has the charter's supermajority of the counted rulings.
    NoSupermajority {
        yes: usize,
        no: usize,
        needed_milli: u32,
    },
    /// Not a panel's deadlock: the motion was withdrawn before its close because the
    /// federation removed an organisation holding seats on it; no ruling was counted, and
    /// its question was asked again under a new motion (docs/FEDERATION.md "Removal").
    SeatsRemoved {
        organisation: String,
    },
}

impl std::fmt::Display for Stance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stance::A => "A",
            Stance::B => "B",
            Stance::None => "no stance",
        })
    }
}

/// Each reason as a sentence a reader of `panel up` or `panel motion show` can act on
/// (docs/coordinator/acceptance.md "The acceptance rule" numbers the rules).
impl std::fmt::Display for DeadlockReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadlockReason::NoQuorum { counted, quorum } => write!(
                f,
                "only {counted} ruling(s) counted, fewer than the quorum of {quorum}"
            ),
            DeadlockReason::SingleStanceGroup => {
                f.write_str("every counted ruling came from one stance group")
            }
            DeadlockReason::SplitGroup { stance } => {
                write!(f, "stance {stance} split with no majority")
            }
            DeadlockReason::GroupsDisagree => f.write_str("the stance groups' majorities disagree"),
            DeadlockReason::InsufficientSupport {
                stance,
                net,
                needed,
            } => write!(
                f,
                "stance {stance} gave a net support of {net}, fewer than the {needed} needed"
            ),
            DeadlockReason::RelevanceSpread {
                min_median,
                max_median,
            } => write!(
                f,
                "the stance groups' relevance medians ({min_median} and {max_median}) lie more than one step apart"
            ),
            DeadlockReason::MissingRelevance { arbiter_id } => {
                write!(f, "{arbiter_id} gave no relevance value")
            }
            DeadlockReason::MissingReceipts { stance } => write!(
                f,
                "no arbiter of stance {stance} confirmed the source with a retrieval receipt"
            ),
            DeadlockReason::ReceiptsDisagree => {
                f.write_str("the retrieval receipts name different content")
            }
            DeadlockReason::InsufficientLineages {
                stance,
                net,
                needed,
            } => write!(
                f,
                "stance {stance}'s supporters count {net} once per lineage, fewer than the {needed} needed"
            ),
            DeadlockReason::DependsOnOrganisation { organisation } => write!(
                f,
                "without {organisation}'s rulings the outcome would not stand, so one organisation would carry it"
            ),
            DeadlockReason::CorrelatedSupport {
                n_eff_milli,
                needed_milli,
            } => write!(
                f,
                "the supporters share their errors: they are worth {:.2} independent votes, fewer than the {:.2} needed",
                f64::from(*n_eff_milli) / 1000.0,
                f64::from(*needed_milli) / 1000.0
            ),
            DeadlockReason::PoolUndecided => f.write_str(
                "the weighted pool of the rulings leans neither way (it sits at 0.5, or no ruling carries weight)",
            ),
            DeadlockReason::SideWithoutSupport {
                stance,
                supporters,
                needed,
            } => write!(
                f,
                "stance {stance} gave {supporters} supporter(s) of positive weight to the pooled outcome (each lineage once), fewer than the {needed} needed"
            ),
            DeadlockReason::NoSupermajority {
                yes,
                no,
                needed_milli,
            } => write!(
                f,
                "{yes} yes and {no} no: neither reaches the final panel's supermajority of {:.1}% of the counted rulings",
                f64::from(*needed_milli) / 10.0
            ),
            DeadlockReason::NarrowSupport => f.write_str(
                "no supporter of stance A and supporter of stance B differ in both organisation and lineage",
            ),
            DeadlockReason::SeatsRemoved { organisation } => write!(
                f,
                "withdrawn before its close: organisation {organisation} held seats on it and was removed from the federation; its question was asked again"
            ),
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Decided(d) => write!(f, "{d:?}"),
            Outcome::Relevance(step) => write!(f, "relevance {}", f64::from(*step) * 0.25),
            Outcome::TierVerified {
                decision,
                content_hash,
            } => write!(f, "{decision:?} (tier verified; receipts agree on {})", {
                let hash = content_hash.to_hex();
                hash.get(..12).unwrap_or(&hash).to_owned()
            }),
        }
    }
}

/// "ACCEPTED: …" or "DEADLOCKED: reason; reason".
impl std::fmt::Display for Acceptance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Acceptance::Accepted { outcome, .. } => write!(f, "ACCEPTED: {outcome}"),
            Acceptance::Deadlocked(d) => write!(
                f,
                "DEADLOCKED: {}",
                d.reasons
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

/// The recorded disagreement of a deadlocked motion (invariant 3: nothing is deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dissent {
    pub reasons: Vec<DeadlockReason>,
    pub tallies: BTreeMap<Stance, GroupTally>,
    /// Rulings that were not counted (unseated arbiter, duplicate), by arbiter id.
    pub ignored: Vec<String>,
}

/// What the acceptance rule decided for a motion: accepted with its outcome, or deadlocked
/// with the dissent. Named apart from the SPEC's verdict (a debate's score), which this
/// is not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Acceptance {
    Accepted {
        outcome: Outcome,
        tallies: BTreeMap<Stance, GroupTally>,
    },
    Deadlocked(Dissent),
}

impl Acceptance {
    pub fn is_accepted(&self) -> bool {
        matches!(self, Acceptance::Accepted { .. })
    }
}

/// Apply the acceptance rule. Only rulings from seated arbiters count, each arbiter once
/// (the first ruling in input order; later duplicates are listed as ignored).
pub fn decide(
    kind: MotionKind,
    seats: &[Seat],
    rulings: &[RevealedRuling],
    receipts: &[RetrievalReceipt],
    policy: &Policy,
) -> Acceptance {
    decide_weighted(kind, seats, rulings, receipts, policy, &Weights::equal())
}

/// [`decide`] with the arbiters' performance weights, which only a policy with
/// [`Aggregation::WeightedPool`] reads.
pub fn decide_weighted(
    kind: MotionKind,
    seats: &[Seat],
    rulings: &[RevealedRuling],
    receipts: &[RetrievalReceipt],
    policy: &Policy,
    weights: &Weights,
) -> Acceptance {
    let panel = Panel {
        kind,
        policy,
        weights,
    };
    let mut full = panel.evaluate(seats, rulings, receipts);
    if policy.independence.without_any_organisation {
        panel.require_no_pivotal_organisation(&mut full, seats, rulings, receipts);
    }
    full.into_acceptance()
}

/// What every evaluation of one motion shares: its kind, its policy and the weights.
struct Panel<'a> {
    kind: MotionKind,
    policy: &'a Policy,
    weights: &'a Weights,
}

/// What one evaluation of rules 1 to 4 found; an outcome with reasons is not accepted.
struct Evaluation {
    outcome: Option<Outcome>,
    reasons: Vec<DeadlockReason>,
    tallies: BTreeMap<Stance, GroupTally>,
    ignored: Vec<String>,
}

impl Evaluation {
    fn accepted(&self) -> Option<&Outcome> {
        self.outcome.as_ref().filter(|_| self.reasons.is_empty())
    }

    fn into_acceptance(self) -> Acceptance {
        match self.outcome {
            Some(outcome) if self.reasons.is_empty() => Acceptance::Accepted {
                outcome,
                tallies: self.tallies,
            },
            _ => Acceptance::Deadlocked(Dissent {
                reasons: self.reasons,
                tallies: self.tallies,
                ignored: self.ignored,
            }),
        }
    }
}

/// Rule 5 (docs/coordinator/acceptance.md "The acceptance rule"): re-run rules 1 to 4 on the panel
/// without each seated organisation in turn, and add a `DependsOnOrganisation` reason for
/// every organisation without which the outcome would not stand. Only an accepted
/// evaluation is checked: a deadlock stays a deadlock with its own reasons.
impl Panel<'_> {
    fn require_no_pivotal_organisation(
        &self,
        full: &mut Evaluation,
        seats: &[Seat],
        rulings: &[RevealedRuling],
        receipts: &[RetrievalReceipt],
    ) {
        let Some(outcome) = full.accepted().cloned() else {
            return;
        };
        for organisation in organisations(seats) {
            let (s, r, rc) = without_organisation(organisation, seats, rulings, receipts);
            let survives = match (self.policy.aggregation, &outcome) {
                // Under the weighted pool the guarantees of support are the full panel's;
                // what no organisation may do is tip the pool by itself.
                (Aggregation::WeightedPool, Outcome::Decided(d)) => {
                    pooled_decision(&counted(&s, &r).0, self.weights) == Some(*d)
                }
                // A final panel's answer must keep its supermajority without any one
                // organisation's rulings (its support pair is the full panel's).
                (Aggregation::Supermajority { milli }, Outcome::Decided(d)) => {
                    supermajority_outcome(&counted(&s, &r).0, milli, &mut Vec::new()) == Some(*d)
                }
                _ => outcome_survives(&outcome, self.evaluate(&s, &r, &rc).accepted()),
            };
            if !survives {
                full.reasons.push(DeadlockReason::DependsOnOrganisation {
                    organisation: organisation.to_owned(),
                });
            }
        }
    }

    /// Rules 1 to 4 over one panel.
    fn evaluate(
        &self,
        seats: &[Seat],
        rulings: &[RevealedRuling],
        receipts: &[RetrievalReceipt],
    ) -> Evaluation {
        let (kind, policy) = (self.kind, self.policy);
        let seat_of: BTreeMap<&str, &Seat> =
            seats.iter().map(|s| (s.arbiter_id.as_str(), s)).collect();
        let (counted, ignored) = counted(seats, rulings);

        let mut tallies: BTreeMap<Stance, GroupTally> = BTreeMap::new();
        for (seat, r) in &counted {
            let t = tallies.entry(seat.stance).or_default();
            match r.decision {
                Decision::Yes => t.yes += 1,
                Decision::No => t.no += 1,
            }
        }

        let mut reasons = Vec::new();
        let quorum = policy.quorum.unwrap_or(seats.len() / 2 + 1).max(1);
        if counted.len() < quorum {
            reasons.push(DeadlockReason::NoQuorum {
                counted: counted.len(),
                quorum,
            });
        }
        if tallies.len() < 2 {
            reasons.push(DeadlockReason::SingleStanceGroup);
        }

        let outcome = match kind {
            MotionKind::Relevance => relevance_outcome(&counted, policy, &mut reasons),
            _ => {
                let decision = match policy.aggregation {
                    Aggregation::HeadCount => {
                        binary_outcome(&counted, &tallies, policy, &mut reasons)
                    }
                    Aggregation::WeightedPool => {
                        weighted_outcome(&counted, policy, self.weights, &mut reasons)
                    }
                    Aggregation::Supermajority { milli } => {
                        supermajority_outcome(&counted, milli, &mut reasons)
                    }
                };
                match (kind, decision) {
                    (MotionKind::TierVerification, Some(d)) => {
                        receipt_hash(&seat_of, receipts, &mut reasons).map(|content_hash| {
                            Outcome::TierVerified {
                                decision: d,
                                content_hash,
                            }
                        })
                    }
                    (_, d) => d.map(Outcome::Decided),
                }
            }
        };

        Evaluation {
            outcome,
            reasons,
            tallies,
            ignored,
        }
    }
}

/// The rulings the rule counts, each with its seat: the first ruling of each seated
/// arbiter, in input order; and the ids of the rulings it ignores (unseated, duplicate).
pub(crate) fn counted<'a>(
    seats: &'a [Seat],
    rulings: &'a [RevealedRuling],
) -> (Vec<(&'a Seat, &'a RevealedRuling)>, Vec<String>) {
    let seat_of: BTreeMap<&str, &Seat> = seats.iter().map(|s| (s.arbiter_id.as_str(), s)).collect();
    let mut seen = BTreeSet::new();
    let mut ignored = Vec::new();
    let mut counted = Vec::new();
    for r in rulings {
        match seat_of.get(r.arbiter_id.as_str()) {
            Some(seat) if seen.insert(r.arbiter_id.as_str()) => counted.push((*seat, r)),
            _ => ignored.push(r.arbiter_id.clone()),
        }
    }
    (counted, ignored)
}

/// The weighted pool ([`Aggregation::WeightedPool`]): the outcome is the side of 0.5 the
/// pool of the counted rulings falls on. It needs supporters of positive weight from A and
/// from B (each lineage once under `one_per_lineage`), among them a supporter of A and one
/// of B that differ in organisation and in lineage: agreement across differing priors.
/// Stance groups may split.
fn weighted_outcome(
    counted: &[(&Seat, &RevealedRuling)],
    policy: &Policy,
    weights: &Weights,
    reasons: &mut Vec<DeadlockReason>,
) -> Option<Decision> {
    let Some(decision) = pooled_decision(counted, weights) else {
        reasons.push(DeadlockReason::PoolUndecided);
        return None;
    };
    let supporters: Vec<&Seat> = counted
        .iter()
        .filter(|(seat, r)| r.decision == decision && weights.of(&seat.arbiter_id) > 0)
        .map(|(seat, _)| *seat)
        .collect();
    let k = policy.min_net_support_per_side.max(1);
    let per_side = if policy.independence.one_per_lineage {
        supporters_per_side(supporters.iter().copied(), [k, k])
    } else {
        [Stance::A, Stance::B].map(|st| supporters.iter().filter(|s| s.stance == st).count())
    };
    let mut short = false;
    for (stance, n) in [Stance::A, Stance::B].into_iter().zip(per_side) {
        if n < k {
            short = true;
            reasons.push(DeadlockReason::SideWithoutSupport {
                stance,
                supporters: n,
                needed: k,
            });
        }
    }
    if !short {
        require_cross_prior_pair(&supporters, reasons);
    }
    Some(decision)
}

/// A final panel's supermajority ([`Aggregation::Supermajority`]): the decision with at
/// least `milli` thousandths of the counted rulings, supported from both stances by a pair
/// that differs in organisation and lineage.
fn supermajority_outcome(
    counted: &[(&Seat, &RevealedRuling)],
    milli: u32,
    reasons: &mut Vec<DeadlockReason>,
) -> Option<Decision> {
    let n = counted.len() as u64;
    let yes = counted
        .iter()
        .filter(|(_, r)| r.decision == Decision::Yes)
        .count() as u64;
    let reaches = |k: u64| n > 0 && k * 1000 >= u64::from(milli) * n;
    let decision = if reaches(yes) {
        Decision::Yes
    } else if reaches(n - yes) {
        Decision::No
    } else {
        reasons.push(DeadlockReason::NoSupermajority {
            yes: yes as usize,
            no: (n - yes) as usize,
            needed_milli: milli,
        });
        return None;
    };
    let supporters: Vec<&Seat> = counted
        .iter()
        .filter(|(_, r)| r.decision == decision)
        .map(|(seat, _)| *seat)
        .collect();
    require_cross_prior_pair(&supporters, reasons);
    Some(decision)
}

/// Some supporter of A and some supporter of B differ in organisation **and** lineage;
/// otherwise a `SideWithoutSupport` for a side with none, or `NarrowSupport`.
fn require_cross_prior_pair(supporters: &[&Seat], reasons: &mut Vec<DeadlockReason>) {
    let of = |st: Stance| supporters.iter().filter(move |s| s.stance == st);
    let mut short = false;
    for stance in [Stance::A, Stance::B] {
        if of(stance).next().is_none() {
            short = true;
            reasons.push(DeadlockReason::SideWithoutSupport {
                stance,
                supporters: 0,
                needed: 1,
            });
        }
    }
    let pair = of(Stance::A).any(|a| {
        of(Stance::B).any(|b| a.organisation != b.organisation && lineage_key(a) != lineage_key(b))
    });
    if !short && !pair {
        reasons.push(DeadlockReason::NarrowSupport);
    }
}

/// The side of 0.5 the weighted pool of `counted` falls on; `None` at 0.5 or without weight.
fn pooled_decision(counted: &[(&Seat, &RevealedRuling)], weights: &Weights) -> Option<Decision> {
    match pooled_yes_milli(counted, weights)? {
        p if p > 500 => Some(Decision::Yes),
        p if p < 500 => Some(Decision::No),
        _ => None,
    }
}

/// The weighted pool's probability of yes over `counted` rulings, in thousandths
/// (`weighted_pool::pooled_yes_milli`); `None` when no ruling carries weight.
pub(crate) fn pooled_yes_milli(
    counted: &[(&Seat, &RevealedRuling)],
    weights: &Weights,
) -> Option<u16> {
    let inputs: Vec<PoolInput> = counted
        .iter()
        .map(|(seat, r)| PoolInput {
            lineage: lineage_key(seat),
            weight_milli: weights.of(&seat.arbiter_id),
            p_yes_milli: r.probability_milli,
        })
        .collect();
    crate::rules::weighted_pool::pooled_yes_milli(&inputs)
}

/// Majority inside every group, all groups on the same side, net support from A and B.
fn binary_outcome(
    counted: &[(&Seat, &RevealedRuling)],
    tallies: &BTreeMap<Stance, GroupTally>,
    policy: &Policy,
    reasons: &mut Vec<DeadlockReason>,
) -> Option<Decision> {
    let mut group_decisions = BTreeSet::new();
    for (stance, t) in tallies {
        if t.yes > t.no {
            group_decisions.insert(Decision::Yes);
        } else if t.no > t.yes {
            group_decisions.insert(Decision::No);
        } else {
            reasons.push(DeadlockReason::SplitGroup { stance: *stance });
        }
    }
    if group_decisions.len() > 1 {
        reasons.push(DeadlockReason::GroupsDisagree);
        return None;
    }
    let decision = group_decisions.into_iter().next()?;
    let side_count = |stance: Stance| {
        let t = tallies.get(&stance).cloned().unwrap_or_default();
        match decision {
            Decision::Yes => (t.yes, t.no),
            Decision::No => (t.no, t.yes),
        }
    };
    let supporters = counted
        .iter()
        .filter(|(_, r)| r.decision == decision)
        .map(|(s, _)| *s);
    side_support(policy, reasons, side_count, supporters);
    Some(decision)
}

/// Record a reason for each side whose net support (supporters minus opponents, from
/// `side_count`) is below the policy's. With `one_per_lineage`, the supporters counted are
/// those of [`independence::supporters_per_side`] over `supporters`, and a side that falls
/// short only because of it gets `InsufficientLineages`.
fn side_support<'a>(
    policy: &Policy,
    reasons: &mut Vec<DeadlockReason>,
    side_count: impl Fn(Stance) -> (usize, usize),
    supporters: impl IntoIterator<Item = &'a Seat>,
) {
    let k = policy.min_net_support_per_side;
    let sides = [Stance::A, Stance::B];
    let counts = sides.map(&side_count);
    let by_lineage = policy
        .independence
        .one_per_lineage
        .then(|| supporters_per_side(supporters, counts.map(|(_, against)| k + against)));
    for (i, stance) in sides.into_iter().enumerate() {
        let (for_, against) = counts[i];
        let net = for_ as i64 - against as i64;
        if net < k as i64 {
            reasons.push(DeadlockReason::InsufficientSupport {
                stance,
                net,
                needed: k,
            });
        } else if let Some(lineages) = by_lineage {
            let net = lineages[i] as i64 - against as i64;
            if net < k as i64 {
                reasons.push(DeadlockReason::InsufficientLineages {
                    stance,
                    net,
                    needed: k,
                });
            }
        }
    }
}

/// Lower median of a non-empty sorted slice (deterministic for even counts).
fn lower_median(sorted: &[u8]) -> u8 {
    sorted[(sorted.len() - 1) / 2]
}

fn relevance_outcome(
    counted: &[(&Seat, &RevealedRuling)],
    policy: &Policy,
    reasons: &mut Vec<DeadlockReason>,
) -> Option<Outcome> {
    let mut by_group: BTreeMap<Stance, Vec<u8>> = BTreeMap::new();
    let mut all = Vec::new();
    for (seat, r) in counted {
        match r.relevance {
            Some(v) => {
                by_group.entry(seat.stance).or_default().push(v);
                all.push(v);
            }
            None => reasons.push(DeadlockReason::MissingRelevance {
                arbiter_id: r.arbiter_id.clone(),
            }),
        }
    }
    // Each side must take part: a relevance value is accepted across priors only.
    let took_part = counted
        .iter()
        .filter(|(_, r)| r.relevance.is_some())
        .map(|(s, _)| *s);
    side_support(
        policy,
        reasons,
        |stance| (by_group.get(&stance).map_or(0, Vec::len), 0),
        took_part,
    );
    if all.is_empty() {
        return None;
    }
    let medians: Vec<u8> = by_group
        .values_mut()
        .map(|v| {
            v.sort_unstable();
            lower_median(v)
        })
        .collect();
    let (lo, hi) = (
        medians.iter().copied().min().unwrap_or(0),
        medians.iter().copied().max().unwrap_or(0),
    );
    if hi - lo > 1 {
        reasons.push(DeadlockReason::RelevanceSpread {
            min_median: lo,
            max_median: hi,
        });
        return None;
    }
    all.sort_unstable();
    Some(Outcome::Relevance(lower_median(&all)))
}

/// The agreed content hash: receipts from seated arbiters of both sides, all equal.
fn receipt_hash(
    seat_of: &BTreeMap<&str, &Seat>,
    receipts: &[RetrievalReceipt],
    reasons: &mut Vec<DeadlockReason>,
) -> Option<crate::rules::hex_bytes::DigestBytes> {
    let seated: Vec<(&Seat, &RetrievalReceipt)> = receipts
        .iter()
        .filter_map(|r| seat_of.get(r.arbiter_id.as_str()).map(|s| (*s, r)))
        .collect();
    let mut ok = true;
    for stance in [Stance::A, Stance::B] {
        if !seated.iter().any(|(s, _)| s.stance == stance) {
            reasons.push(DeadlockReason::MissingReceipts { stance });
            ok = false;
        }
    }
    let hashes: BTreeSet<String> = seated
        .iter()
        .map(|(_, r)| r.content_hash.to_hex())
        .collect();
    if hashes.len() > 1 {
        reasons.push(DeadlockReason::ReceiptsDisagree);
        ok = false;
    }
    if ok {
        hashes
            .into_iter()
            .next()
            .map(|h| crate::rules::hex_bytes::DigestBytes::from_hex(&h))
    } else {
        None
    }
}

// Independence rules the acceptance rule applies itself (moved from `independence`,
// which builds on these types).
/// Which independence rules a policy applies. `Default` (and a policy without the field,
/// i.e. every policy written before these rules) is all off; [`Independence::ALL`] is what
/// new debates get (`Policy::independent`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Independence {
    /// Rule 5: an outcome stands only if the panel without any one organisation's seats
    /// and rulings still reaches it ([`outcome_survives`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_any_organisation: bool,
    /// Rule 4, lineage fallback: supporters sharing a lineage count once toward the
    /// net support of the sides, whatever stances they declared ([`supporters_per_side`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_per_lineage: bool,
    /// The panel is drawn from a seed fixed by the record before the motion opened, not
    /// from the leader's batch seed (`crate::features::draw_seed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsteerable_draw: bool,
    /// Declared priors are per debate (docs/coordinator/acceptance.md "Declared priors"): a debate's
    /// panels seat an arbiter under a stance only by its signed declaration for that
    /// debate ([`crate::command::StanceDeclaration`]), and keep off every motion an
    /// arbiter related by lineage to any author the motion is about.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declared_stances: bool,
    /// An accepted yes/no outcome needs supporters worth at least two independent votes,
    /// measured from their error history where there is enough of it, else by lineage
    /// ([`require_independent_support`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub measured_n_eff: bool,
}

impl Independence {
    /// Every rule on: the default for debates created from now on.
    pub const ALL: Independence = Independence {
        without_any_organisation: true,
        one_per_lineage: true,
        unsteerable_draw: true,
        declared_stances: true,
        measured_n_eff: true,
    };

    /// True when no rule is on (the behaviour of policies written before these rules).
    pub fn is_off(&self) -> bool {
        *self == Independence::default()
    }
}

/// How many supporters count for stance A and for stance B when each lineage counts at
/// most once overall (docs/coordinator/acceptance.md "The acceptance rule", rule 4).
///
/// `supporters` are the seats that ruled for the outcome (or took part, for relevance);
/// `needed` is how many each side must reach. A lineage with supporters of one side counts
/// for that side; a lineage with supporters of both sides counts for one of them, given
/// first to A while A is short, then to B. That is a maximum matching of lineages to sides,
/// so whenever some once-per-lineage assignment meets both needs, this one does.
/// Supporters of no stance never count for a side, as in the rule without lineages.
pub(crate) fn supporters_per_side<'a>(
    supporters: impl IntoIterator<Item = &'a Seat>,
    needed: [usize; 2],
) -> [usize; 2] {
    let mut sides: BTreeMap<&str, BTreeSet<Stance>> = BTreeMap::new();
    for seat in supporters {
        if matches!(seat.stance, Stance::A | Stance::B) {
            sides
                .entry(lineage_key(seat))
                .or_default()
                .insert(seat.stance);
        }
    }
    let (mut only_a, mut only_b, mut both) = (0usize, 0usize, 0usize);
    for s in sides.values() {
        match (s.contains(&Stance::A), s.contains(&Stance::B)) {
            (true, true) => both += 1,
            (true, false) => only_a += 1,
            (false, true) => only_b += 1,
            (false, false) => {}
        }
    }
    let to_a = both.min(needed[0].saturating_sub(only_a));
    [only_a + to_a, only_b + (both - to_a)]
}

/// The organisations seated on a panel, each once, in order.
pub(crate) fn organisations(seats: &[Seat]) -> BTreeSet<&str> {
    seats.iter().map(|s| s.organisation.as_str()).collect()
}

/// The panel as if `organisation` had never been seated: its seats, and every ruling and
/// receipt of its arbiters, removed. Rulings of unseated arbiters are kept (the rule
/// ignores them either way, and lists them as ignored).
pub(crate) fn without_organisation(
    organisation: &str,
    seats: &[Seat],
    rulings: &[RevealedRuling],
    receipts: &[RetrievalReceipt],
) -> (Vec<Seat>, Vec<RevealedRuling>, Vec<RetrievalReceipt>) {
    let removed: BTreeSet<&str> = seats
        .iter()
        .filter(|s| s.organisation == organisation)
        .map(|s| s.arbiter_id.as_str())
        .collect();
    (
        seats
            .iter()
            .filter(|s| s.organisation != organisation)
            .cloned()
            .collect(),
        rulings
            .iter()
            .filter(|r| !removed.contains(r.arbiter_id.as_str()))
            .cloned()
            .collect(),
        receipts
            .iter()
            .filter(|r| !removed.contains(r.arbiter_id.as_str()))
            .cloned()
            .collect(),
    )
}

/// Whether the panel without one organisation reached the same outcome as the whole panel
/// (`reduced` is `None` when it deadlocked). A relevance value may move by one step, the
/// protocol's tolerance between stance-group medians; every other outcome must be equal.
pub(crate) fn outcome_survives(full: &Outcome, reduced: Option<&Outcome>) -> bool {
    match (full, reduced) {
        (Outcome::Relevance(a), Some(Outcome::Relevance(b))) => a.abs_diff(*b) <= 1,
        (a, Some(b)) => a == b,
        (_, None) => false,
    }
}

/// The lineage a seat counts under. Seats without a declared lineage share one, so leaving
/// the lineage out never buys a second count (docs/coordinator/acceptance.md "The acceptance rule").
pub(crate) fn lineage_key(seat: &Seat) -> &str {
    seat.lineage.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seat(id: &str, stance: Stance) -> Seat {
        Seat {
            arbiter_id: id.into(),
            stance,
            organisation: format!("org-{id}"),
            lineage: format!("fam-{id}"),
        }
    }

    fn ruling(id: &str, decision: Decision) -> RevealedRuling {
        RevealedRuling {
            arbiter_id: id.into(),
            decision,
            probability_milli: 800,
            relevance: None,
        }
    }

    fn five() -> Vec<Seat> {
        vec![
            seat("a1", Stance::A),
            seat("a2", Stance::A),
            seat("b1", Stance::B),
            seat("b2", Stance::B),
            seat("n1", Stance::None),
        ]
    }

    #[test]
    fn agreement_across_stances_is_accepted() {
        let rulings: Vec<_> = ["a1", "a2", "b1", "b2", "n1"]
            .iter()
            .map(|id| ruling(id, Decision::Yes))
            .collect();
        let v = decide(
            MotionKind::Merge,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        assert!(matches!(
            v,
            Acceptance::Accepted {
                outcome: Outcome::Decided(Decision::Yes),
                ..
            }
        ));
    }

    #[test]
    fn one_side_against_deadlocks_with_dissent() {
        let rulings = vec![
            ruling("a1", Decision::Yes),
            ruling("a2", Decision::Yes),
            ruling("b1", Decision::No),
            ruling("b2", Decision::No),
        ];
        let v = decide(
            MotionKind::Merge,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!("must deadlock")
        };
        assert!(d.reasons.contains(&DeadlockReason::GroupsDisagree));
        assert_eq!(d.tallies[&Stance::B], GroupTally { yes: 0, no: 2 });
    }

    #[test]
    fn split_group_deadlocks() {
        let rulings = vec![
            ruling("a1", Decision::Yes),
            ruling("a2", Decision::No),
            ruling("b1", Decision::Yes),
            ruling("b2", Decision::Yes),
        ];
        let v = decide(
            MotionKind::Merge,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!("must deadlock")
        };
        assert!(
            d.reasons
                .contains(&DeadlockReason::SplitGroup { stance: Stance::A })
        );
    }

    #[test]
    fn unseated_and_duplicate_rulings_do_not_count() {
        let seats = five();
        // Only a1 and b1 are real; the rest is a replay of a1 and an outsider.
        let rulings = vec![
            ruling("a1", Decision::Yes),
            ruling("a1", Decision::Yes),
            ruling("a1", Decision::Yes),
            ruling("mallory", Decision::Yes),
            ruling("b1", Decision::Yes),
        ];
        let v = decide(MotionKind::Merge, &seats, &rulings, &[], &Policy::default());
        let Acceptance::Deadlocked(d) = v else {
            panic!("replays must not make a quorum")
        };
        assert!(matches!(
            d.reasons[0],
            DeadlockReason::NoQuorum {
                counted: 2,
                quorum: 3
            }
        ));
        assert_eq!(d.ignored, vec!["a1", "a1", "mallory"]);
    }

    #[test]
    fn relevance_median_when_group_medians_within_one_step() {
        let mut rulings: Vec<_> = ["a1", "a2", "b1", "b2", "n1"]
            .iter()
            .map(|id| ruling(id, Decision::Yes))
            .collect();
        for (r, v) in rulings.iter_mut().zip([3, 3, 2, 3, 3]) {
            r.relevance = Some(v);
        }
        let v = decide(
            MotionKind::Relevance,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        assert!(matches!(
            v,
            Acceptance::Accepted {
                outcome: Outcome::Relevance(3),
                ..
            }
        ));
        // Side B far away: deadlock with the spread recorded.
        rulings[2].relevance = Some(0);
        rulings[3].relevance = Some(0);
        let v = decide(
            MotionKind::Relevance,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!("spread must deadlock")
        };
        assert!(
            d.reasons
                .iter()
                .any(|r| matches!(r, DeadlockReason::RelevanceSpread { .. }))
        );
    }

    #[test]
    fn tier_verification_needs_agreeing_receipts_from_both_sides() {
        let rulings: Vec<_> = ["a1", "a2", "b1", "b2"]
            .iter()
            .map(|id| ruling(id, Decision::Yes))
            .collect();
        let rc = |id: &str, h: &str| RetrievalReceipt {
            arbiter_id: id.into(),
            content_hash: h.into(),
        };
        let p = Policy::default();
        let only_a = [rc("a1", "aa"), rc("a2", "aa")];
        let v = decide(MotionKind::TierVerification, &five(), &rulings, &only_a, &p);
        assert!(!v.is_accepted());
        let disagree = [rc("a1", "aa"), rc("b1", "bb")];
        let v = decide(
            MotionKind::TierVerification,
            &five(),
            &rulings,
            &disagree,
            &p,
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!()
        };
        assert!(d.reasons.contains(&DeadlockReason::ReceiptsDisagree));
        // A forged receipt from an unseated arbiter is ignored, not a second side.
        let forged = [rc("a1", "aa"), rc("mallory", "aa")];
        assert!(
            !decide(MotionKind::TierVerification, &five(), &rulings, &forged, &p).is_accepted()
        );
        let good = [rc("a1", "aa"), rc("b2", "aa")];
        let v = decide(MotionKind::TierVerification, &five(), &rulings, &good, &p);
        assert_eq!(
            v,
            Acceptance::Accepted {
                outcome: Outcome::TierVerified {
                    decision: Decision::Yes,
                    content_hash: "aa".into()
                },
                tallies: BTreeMap::from([
                    (Stance::A, GroupTally { yes: 2, no: 0 }),
                    (Stance::B, GroupTally { yes: 2, no: 0 })
                ]),
            }
        );
    }

    fn stance_strategy() -> impl Strategy<Value = Stance> {
        prop_oneof![Just(Stance::A), Just(Stance::B), Just(Stance::None)]
    }

    proptest! {
        /// The attack: one stance (plus any number of neutral arbiters) packs the panel and
        /// rules unanimously; it never reaches an outcome.
        #[test]
        fn single_stance_coalition_cannot_force_acceptance(
            side in prop_oneof![Just(Stance::A), Just(Stance::B)],
            coalition in 1usize..40,
            neutrals in 0usize..10,
            decision in prop_oneof![Just(Decision::Yes), Just(Decision::No)],
            kind in prop_oneof![Just(MotionKind::Merge), Just(MotionKind::Challenge), Just(MotionKind::Relevance), Just(MotionKind::TierVerification)],
        ) {
            let mut seats = Vec::new();
            let mut rulings = Vec::new();
            let mut receipts = Vec::new();
            for i in 0..coalition + neutrals {
                let id = format!("x{i}");
                let stance = if i < coalition { side } else { Stance::None };
                seats.push(seat(&id, stance));
                let mut r = ruling(&id, decision);
                r.relevance = Some(2);
                rulings.push(r);
                receipts.push(RetrievalReceipt { arbiter_id: id, content_hash: "h".into() });
            }
            let v = decide(kind, &seats, &rulings, &receipts, &Policy::default());
            prop_assert!(!v.is_accepted(), "{v:?}");
        }

        /// Accepted outcomes always carry a strict majority in each represented group and
        /// support from both sides; removing every ruling of side B always deadlocks.
        #[test]
        fn accepted_implies_cross_side_majorities(
            stances in proptest::collection::vec(stance_strategy(), 1..15),
            votes in proptest::collection::vec(any::<bool>(), 15),
        ) {
            let seats: Vec<_> = stances.iter().enumerate().map(|(i, s)| seat(&format!("s{i}"), *s)).collect();
            let rulings: Vec<_> = seats.iter().zip(&votes).map(|(s, y)| ruling(&s.arbiter_id, if *y { Decision::Yes } else { Decision::No })).collect();
            let v = decide(MotionKind::Merge, &seats, &rulings, &[], &Policy::default());
            if let Acceptance::Accepted { outcome: Outcome::Decided(d), tallies } = &v {
                for side in [Stance::A, Stance::B] {
                    let t = &tallies[&side];
                    let (f, a) = if *d == Decision::Yes { (t.yes, t.no) } else { (t.no, t.yes) };
                    prop_assert!(f > a);
                }
                let without_b: Vec<_> = rulings.iter().zip(&seats).filter(|(_, s)| s.stance != Stance::B).map(|(r, _)| r.clone()).collect();
                prop_assert!(!decide(MotionKind::Merge, &seats, &without_b, &[], &Policy::default()).is_accepted());
            }
        }
    }

    /// New debates measure declared priors without anyone asking (issue: the check ran
    /// only on request); older policies keep what they said.
    #[test]
    fn the_independent_rule_schedules_the_prior_check() {
        assert_eq!(
            Policy::independent().prior_check_every,
            Some(PRIOR_CHECK_EVERY)
        );
        assert_eq!(Policy::default().prior_check_every, None);
        let old: Policy =
            serde_json::from_str(r#"{"quorum":null,"min_net_support_per_side":1}"#).unwrap();
        assert_eq!(old.prior_check_every, None);
    }
}
