//! The rules over values (docs/ARCHITECTURE.md "Layers of the machine", layer 1): the
//! acceptance rule and what it applies, the panel draw, a ruling's and a signed motion's
//! checks, the confidence of an outcome and the log's leaf hash; none reads the state.
//! And the rule sets: which version of apply's rules an entry was applied under
//! (docs/coordinator/state-machine.md "Rule sets").
//!
//! A rule that makes apply stricter would refuse entries that an older replica accepted,
//! so a record that spans an upgrade could not be replayed with one rule set. Instead the
//! leader stamps the rule set its code applies into every batch ([`Batch::rules`]), the
//! state keeps the highest stamp it has seen ([`State::rules`]), and every record entry
//! names the rule set in force when it applied ([`RecordEntry::rules`]). The level never
//! goes down: a leader running older code (or lying) cannot switch a stricter rule off
//! once any batch switched it on, and `panel verify` refuses a record whose level drops.
//! Entries from before stamping carry no level (0) and replay exactly as they applied.
//!
//! [`Batch::rules`]: crate::command::Batch::rules
//! [`State::rules`]: crate::model::State::rules
//! [`RecordEntry::rules`]: crate::model::RecordEntry::rules

pub mod acceptance;
pub mod confidence;
pub mod draw;
pub mod hex_bytes;
pub mod independence;
pub mod ruling;
pub mod signed_motion;
pub mod transparency;
pub mod weighted_pool;

/// The rule set this code applies; the leader stamps it into every batch it seals.
pub const CURRENT: u32 = KEYS_AS_BYTES;

/// From this level on, exam answers come with the signed exam motions they answer, and
/// apply checks each motion's content against the exam and each ruling's binding to it
/// (`admission::check_exam_motions`; docs/SECURITY.md "What each attacker can and cannot do").
pub const EXAM_MOTIONS: u32 = 1;

/// From this level on, apply counts every accepted yes/no outcome into the pairwise error
/// history (`State::error_history`) that the measured-independence rule reads
/// (`independence::require_independent_support`). Counting from a stamped level means
/// every replica, and `panel verify`, starts counting at the same entry.
pub const MEASURED_ERRORS: u32 = 2;

/// From this level on, exams run in sealed sittings (`exam_sitting.rs`): the pool's
/// questions and a commitment to its answer key are logged before anyone is asked, each
/// arbiter answers its own seeded draw, answers are held until the key is revealed, then
/// scored with the bias-probe bars; a refused arbiter may retake after its cooldown.
pub const SEALED_EXAMS: u32 = 3;

/// From this level on, the prior-consistency check (`priors.rs`) measures each signed
/// per-debate stance declaration as its own claim: on a debate whose policy seats by
/// declarations, an arbiter's rulings are checked against the camp it declared for that
/// debate (not its registered label), a confirmed mismatch reseats it in that debate only,
/// and the check reads a bounded window of the most recently decided motions.
pub const DECLARED_CAMPS: u32 = 4;

/// From this level on, a chartered group seals the shipped public pool only when its
/// charter marks it a practice group (`exam_sitting::seal`; docs/SECURITY.md "Exams"),
/// and admits by the charter's exam bar.
pub const PRACTICE_EXAMS: u32 = 5;

/// From this level on, a revocation's `effective_from_unix_ms` is read: at a close a
/// revoked arbiter's ruling counts only if its commitment was logged before that instant,
/// and a revocation dated back lists the decided motions that counted rulings committed
/// after it (`Revocation::counted_after_revocation`; docs/SECURITY.md "What is enforced").
pub const REVOCATION_TIME: u32 = 6;

/// From this level on, an arbiter may declare a standing stance (`DeclareStance` for
/// debate `*`), which seats it on debates where it declared nothing, and a `CreateDebate`
/// without a policy in a chartered group gets `Policy::independent()`, never the
/// head-count rule (docs/coordinator/acceptance.md "Declared priors"; docs/SECURITY.md).
pub const STANDING_STANCES: u32 = 8;

/// From this level on, a chartered group starts a procedure run only when its convener
/// (a registered contributor or arbiter) signed the start, and a signed start is used
/// once (`run_convener`; docs/SECURITY.md "What is enforced"). Level 7 was never stamped.
pub const SIGNED_RUNS: u32 = 9;

/// From this level on, a panel request to advance a debate's phase is refused when the
/// debate is not in that phase or the phase's prerequisites (SPEC section 6) do not hold,
/// so no panel is spent on a yes the engine would refuse, and a fresh verdict is issued
/// only in the verdict phase or once closed (docs/coordinator/acceptance.md "Declared
/// priors"; `apply::debates::ask_panel`).
pub const CHECKED_ADVANCES: u32 = 10;

/// From this level on, every accepted yes/no outcome carries the panel's probability for
/// it and a 90% interval over its effective votes, on the motion and in its record entry
/// (`confidence`; docs/PANEL.md "How sure").
pub const OUTCOME_CONFIDENCE: u32 = 11;

/// From this level on, every decided debate motion carries its outcome status
/// (provisional for the debate's appeal window, then final; appealed, overturned, not
/// proven), moved by apply (`finality.rs`; docs/PANEL.md "Finality").
pub const OUTCOME_STATUS: u32 = 12;

/// From this level on, an appeal that no fresh panel can seat stays pending with its
/// reason (`DebateRecord::waiting`) and is asked again after every write to its debate
/// (a stance declared for it included), instead of being denied (docs/PANEL.md "Fresh
/// panels").
pub const APPEALS_WAIT: u32 = 13;

/// From this level on, a sealed sitting holds a few plain binary items of each draw back
/// from the admission score and puts them on the arbiter's track record, resolved by the
/// revealed gold, and the exam record carries calibration per topic
/// (`calibration::exam_hold_back`; docs/CALIBRATION.md "Held-back items and topics").
pub const EXAM_TRACK_RECORD: u32 = 14;

/// From this level on, a sealed sitting asks each item under an opaque motion id (a hash
/// keyed by the pool's secret salt, checked at the reveal) with no item id in the motion,
/// and in the wording the arbiter's draw picks among the item's phrasings, so nothing but
/// the text maps a motion to a pool item (docs/coordinator/state-machine.md "Sealed exams").
pub const OPAQUE_EXAMS: u32 = 15;

/// From this level on, a debate question whose content (what the arbiters would be
/// shown) matches an outcome that is `final` is answered by citing it, with no panel,
/// unless the asker requests a fresh panel with a reason (`precedent.rs`; docs/PANEL.md
/// "Precedent").
pub const PRECEDENTS: u32 = 16;

/// From this level on, the authority a charter names (`last_word`) may decide a debate
/// question the ladder left not proven, with a signed decision and its reason
/// (`last_word.rs`; docs/PANEL.md "The last word").
pub const LAST_WORD: u32 = 17;

/// From this level on, a motion under an unsteerable draw in a group whose charter gives
/// its replicas beacon keys opens unseated and is seated by a `SeatMotion` carrying
/// replicas' VRF proofs over its question key, never from the record's tree
/// (`beacon.rs`; docs/SECURITY.md "The draw cannot be steered").
pub const BEACON_DRAW: u32 = 18;

/// From this level on, an appeal costs its appellant's organisation a deposit of appeal
/// credits (doubled per round of the debate's ladder) from a budget that refills by the
/// batch time; an organisation that cannot pay is refused, a won appeal gets its deposit
/// back with half again and a lost one forfeits it (`appeal_credits.rs`; docs/PANEL.md
/// "Funded appeals").
pub const APPEAL_CREDITS: u32 = 19;

/// From this level on, under a charter whose log is signed by a quorum, a logged round's
/// motion must carry the seals of that many organisations' replicas over its digest, as
/// nodes require before judging (docs/WIRE.md "Motion seals"), so the record shows that no
/// replica alone put the motion to its seats.
pub const MOTION_SEALS: u32 = 20;

/// From this level on, a group whose charter signs its log by a quorum and is not a
/// practice group examines from organisation pools: each sitting's pool is offered and
/// sealed by one member organisation's replica, whose organisation's arbiters do not sit
/// it, and its key is revealed only after a logged close ends the answers
/// (`org_pools.rs`; docs/coordinator/state-machine.md "Organisation pools").
pub const ORG_POOLS: u32 = 21;

/// From this level on, an appellant may ask for a random-sample appeal: the appeal is put
/// to a panel drawn at random from the whole admitted population under registered stances,
/// not from the arbiters who declared for the debate, so a self-selected panel's outcome
/// can be overturned by a sample that disagrees (`sample_appeals.rs`; docs/PANEL.md
/// "Random-sample appeals").
pub const SAMPLE_APPEALS: u32 = 22;

/// From this level on, each appeal round's panel is twice the previous round's plus one
/// (Kleros' 2n+1: the debate's N seats, then 2N+1, then 4N+3), falling back to the older
/// N+2r and then to N where the eligible pool cannot seat it (`fresh_panel.rs`;
/// docs/PANEL.md "Fresh panels").
pub const DOUBLING_APPEALS: u32 = 23;

/// From this level on, an exam answer outside its item's domain (a log-scale quantity
/// quoted at zero or below) counts as unanswered at the reveal, so the exam is scored
/// (and refused if too few answers remain) instead of left unscorable, which kept its
/// arbiter due and spent a pool every sitting (`exam_sitting::reveal`).
pub const ANSWERS_IN_DOMAIN: u32 = 24;

/// From this level on, a policy asking for the weighted pool (`Aggregation::WeightedPool`)
/// gets it: the outcome and its probability come from the seated rulings pooled with
/// weights from each arbiter's resolved track record, inside the cross-prior guarantees
/// (`weighted_pool.rs`; docs/coordinator/acceptance.md "The weighted pool"). Below it
/// such a policy is judged by head counts, as the replicas of that time judged it.
pub const WEIGHTED_POOL: u32 = 25;

/// From this level on, under a charter that names a final panel (`Charter::final_panel`),
/// a debate question the ladder left unanswered (`not_proven`) is put to the widest fresh
/// panel the admitted pool can seat across all organisations, under registered stances,
/// whose answer stands only with the charter's supermajority; it is `final` at once
/// (`apply/final_panel.rs`; docs/PANEL.md "The last word").
pub const FINAL_PANEL: u32 = 26;

/// From this level on, a panel may be asked to conclude an admitted appeal's review
/// (`AskPanel` advancing from `appeal-review`, checked by `DebateRecord::check_conclude`):
/// its yes issues the revised verdict and closes the debate again, so the appeal is
/// resolved and the outcomes it held become `final` or `overturned` (docs/PANEL.md
/// "Finality"). Below it such a request is refused, as an advance from the review was.
pub const CONCLUDED_REVIEWS: u32 = 27;

/// From this level on, arbiter keys are compared as keys, not as hex text: a registration,
/// a rotation's new key, a revocation and a rotation's old key find the arbiter holding
/// the same 32 bytes whatever the case of the hex (`Arbiter::holds_key`), and a new
/// registration spells its key in lower case, so lookups by hex find it. Below it a key
/// registered in upper-case hex was a second copy of a lower-case one (two arbiters, one
/// key) and could be neither revoked nor rotated, since those name the key in lower case.
pub const KEYS_AS_BYTES: u32 = 28;

/// The level in force after a batch stamped `stamped` (none in batches sealed before
/// stamping) on a state at `level`: never lower than before.
pub fn after_stamp(level: u32, stamped: Option<u32>) -> u32 {
    level.max(stamped.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_never_goes_down() {
        assert_eq!(after_stamp(0, None), 0);
        assert_eq!(after_stamp(0, Some(CURRENT)), CURRENT);
        // An older leader's unstamped or lower-stamped batch keeps the level reached.
        assert_eq!(after_stamp(CURRENT, None), CURRENT);
        assert_eq!(after_stamp(CURRENT, Some(0)), CURRENT);
    }
}
