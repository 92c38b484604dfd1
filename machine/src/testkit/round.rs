//! The commit-reveal round a motion driver runs, through `apply` (docs/coordinator/state-machine.md
//! "The commit-reveal round"): the signed motion and every seat's commitment logged
//! (`LogCommitments`), then each reveal (`SubmitReveal`) and the close (`CloseMotion`),
//! which decides from the stored reveals alone.

use crate::rules::hex_bytes::CommitmentBytes;
use panel_proto::pb;
use serde_json::Value;

use crate::command::{ClientCommand, Command, CommitmentLog, InternalCommand};
use crate::model::Motion;

use super::driver::applied;
use super::keys::motion_key;
use super::reveal::{seal, signed_ruling, state_hash};
use super::{Driver, KitError, Vote};

/// The motion of a round as the driver signs it: the seats' keys and deadlines.
fn signed_motion(
    m: &Motion,
    seat_keys: Vec<Vec<u8>>,
    commit_deadline_ms: i64,
    reveal_deadline_ms: i64,
) -> Result<pb::Motion, KitError> {
    let state_hash = state_hash(m)?;
    let motion = pb::Motion {
        motion_id: m.spec.motion_id.clone(),
        debate_id: m.spec.debate_id.clone(),
        kind: crate::rules::ruling::wire_kind(m.spec.kind) as i32,
        state_hash,
        commit_deadline_unix_ms: commit_deadline_ms,
        reveal_deadline_unix_ms: reveal_deadline_ms,
        panel: seat_keys
            .into_iter()
            .map(|public_key| pb::PanelSeat {
                public_key,
                endpoint: String::new(),
            })
            .collect(),
        ..Default::default()
    };
    Ok(panel_proto::sign_motion(&motion_key(), motion))
}

/// One round of a motion, signed and ready to apply: the entry that logs it, then the
/// entry of every reveal followed by the close.
pub struct PreparedRound {
    pub log: Command,
    pub reveals_and_close: Vec<Command>,
}

impl Driver {
    /// Runs one round of the open motion `motion_id`: every seat answers `vote(seat)`,
    /// commits in the entry that logs the round, reveals in the next, and the close in
    /// that same entry decides. Returns the close's reply (`verdict`, ...).
    pub fn try_decide_by_round(
        &mut self,
        motion_id: &str,
        vote: impl Fn(&Motion, &str) -> Vote,
    ) -> Result<Value, KitError> {
        let round = self.prepare_round(motion_id, vote)?;
        self.try_ok(round.log)?;
        let mut replies = self.write_batch(round.reveals_and_close);
        let close = replies
            .pop()
            .ok_or_else(|| KitError::NoMotion(motion_id.into()))?;
        for r in replies {
            applied(r)?;
        }
        applied(close)
    }

    /// Signs the round [`try_decide_by_round`](Self::try_decide_by_round) runs, for the
    /// next entry, without applying it (the decision bench times the applies alone).
    pub fn prepare_round(
        &self,
        motion_id: &str,
        vote: impl Fn(&Motion, &str) -> Vote,
    ) -> Result<PreparedRound, KitError> {
        let m: Motion = self.motion(motion_id)?.clone();
        let keys = m
            .seats
            .iter()
            .map(|s| Ok(self.key(&s.arbiter_id)?.verifying_key().to_bytes().to_vec()))
            .collect::<Result<Vec<_>, KitError>>()?;
        // Commit window closes at the logging entry; reveals fit in the next one.
        let logged_at = i64::try_from(self.next_time_ms()).unwrap_or(i64::MAX);
        let step = i64::try_from(self.schedule().step_ms).unwrap_or(i64::MAX);
        let reveal_deadline = logged_at.saturating_add(step.saturating_mul(2));
        let mut signed = signed_motion(&m, keys, logged_at, reveal_deadline)?;
        let digest = panel_proto::motion_digest(&signed);
        signed.seals = self
            .sealers
            .iter()
            .map(|k| panel_federation::motion_seal::seal(k, &digest))
            .collect();
        let mut commitments = Vec::new();
        let mut reveals: Vec<Command> = Vec::new();
        for s in &m.seats {
            let key = self.key(&s.arbiter_id)?;
            let sr = signed_ruling(
                key,
                &m,
                &s.arbiter_id,
                vote(&m, &s.arbiter_id),
                Some(&digest),
            )?;
            let sealed = seal(key, sr, motion_id, &s.arbiter_id, logged_at)?;
            commitments.push(CommitmentBytes::new(prost::Message::encode_to_vec(
                &sealed.commitment,
            )));
            reveals.push(
                ClientCommand::SubmitReveal {
                    motion_id: motion_id.into(),
                    reveal: sealed.reveal,
                }
                .into(),
            );
        }
        reveals.push(
            InternalCommand::CloseMotion {
                motion_id: motion_id.into(),
            }
            .into(),
        );
        Ok(PreparedRound {
            log: InternalCommand::LogCommitments(CommitmentLog {
                motion_id: motion_id.into(),
                motion: crate::rules::signed_motion::encode(&signed),
                commitments,
            })
            .into(),
            reveals_and_close: reveals,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::command::TestCommand;
    use crate::model::MotionStatus;
    use crate::testkit::fixtures::cmd;
    use crate::testkit::{Driver, SIX, Vote};

    fn open(d: &mut Driver, id: &str) {
        d.ok(TestCommand::OpenMotion(cmd(json!({
            "motion_id": id, "debate_id": "raw", "kind": "Merge",
            "state_hash": "ab".repeat(32), "seats": 4, "min_per_stance": 2,
        }))));
    }

    #[test]
    fn a_round_logs_reveals_and_closes_through_apply() {
        let mut d = Driver::new(&SIX);
        // Outcomes carry how sure the panel is under the current rule set.
        d.rules = Some(crate::rules::CURRENT);
        open(&mut d, "m1");
        let r = d
            .try_decide_by_round("m1", |_, _| Vote::plain(true))
            .expect("decided");
        assert!(r["verdict"]["Accepted"].is_object(), "{r}");
        let m = d.motion("m1").expect("motion");
        let round = m.round.as_ref().expect("a logged round");
        assert_eq!(round.commitments.len(), 4);
        assert!(round.commitments.values().all(|s| s.reveal.is_some()));
        // Each signed ruling is kept once, in the motion's rulings: the stored reveals
        // keep who and when, not their bytes.
        assert!(
            round
                .commitments
                .values()
                .all(|s| s.reveal.as_ref().is_some_and(|r| r.reveal.is_none()))
        );
        assert_eq!(m.rulings.len(), 4);
        assert!(matches!(&m.status, MotionStatus::Decided(a) if a.is_accepted()));
        assert_eq!(m.confidence.expect("how sure").probability_milli, 800);
    }

    #[test]
    fn stances_that_disagree_deadlock_the_round() {
        let mut d = Driver::new(&SIX);
        open(&mut d, "m2");
        let r = d
            .try_decide_by_round("m2", |_, a| Vote::plain(a.starts_with('a')))
            .expect("closed");
        assert!(r["verdict"]["Deadlocked"].is_object(), "{r}");
        assert!(
            d.try_decide_by_round("m2", |_, _| Vote::plain(true))
                .is_err()
        );
    }
}
