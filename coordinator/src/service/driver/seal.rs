//! Motion seals (`panel_federation::motion_seal`; docs/SECURITY.md "No replica makes a
//! motion alone"): before a motion goes to nodes, the leader seals it with its own log key
//! and asks replicas of further organisations for theirs (`Replica.SealMotions`) until
//! the charter's log quorum is met. Each of those replicas rebuilds the motion from its own
//! applied state ([`Vouch`]) and seals only an exact match, so the motion key that every
//! replica holds no longer lets one of them put a motion of its own making to arbiters.

use super::*;

use std::collections::BTreeMap;

use panel_federation::motion_seal;
use panel_proto::motion_signing::motion_canonical_bytes;

use crate::raft::network::{MotionVouch, VouchRefusal};

/// How long the leader waits for one replica's seals.
const SEAL_TIMEOUT: Duration = Duration::from_secs(5);
/// How far behind a sealing replica's clock a commit deadline may already be: the
/// leader's and the replica's clocks differ by the network's skew.
const CLOCK_SKEW_MS: i64 = 5_000;

/// Why a motion could not be sealed: it is driven again on the next pass.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error(
        "motion {motion}: sealed by replicas of {covered} of the {needed} organisations the \
         charter's log quorum needs; it goes to no node until the others' replicas seal it"
    )]
    TooFew {
        motion: String,
        covered: usize,
        needed: usize,
    },
    #[error(
        "this replica holds no log key of its own to seal motions with; start it with the \
         --log-key its charter entry names"
    )]
    NoLogKey,
}

/// One motion, sealed (see [`sealed`]).
pub(super) async fn sealed_one(s: &Shared, motion: pb::Motion) -> Result<pb::Motion, DriveError> {
    let mut one = sealed(s, vec![motion]).await?;
    Ok(one.remove(0))
}

/// The signed `motions` with the seals the charter requires; unchanged where it requires
/// none (a charter whose log has one shared key).
pub(super) async fn sealed(
    s: &Shared,
    mut motions: Vec<pb::Motion>,
) -> Result<Vec<pb::Motion>, DriveError> {
    let Some(SealingReplicas {
        replicas,
        keys,
        needed,
    }) = sealing_replicas(s)
    else {
        return Ok(motions);
    };
    if motions.is_empty() {
        return Ok(motions);
    }
    let own = s.opts.seal_key.as_ref().ok_or(SealError::NoLogKey)?;
    for m in &mut motions {
        m.seals = vec![motion_seal::seal(own, &motion_digest(m))];
    }
    let answers = {
        let motions = &motions;
        let keys = &keys;
        quorum::from_other_organisations(s, &replicas, needed, |id, addr| async move {
            seals_of(s, id, &addr, motions, keys.get(&id)).await
        })
        .await
    };
    if answers.covered < needed {
        return Err(SealError::TooFew {
            motion: motions[0].motion_id.clone(),
            covered: answers.covered,
            needed,
        }
        .into());
    }
    for (_, lines) in answers.answers {
        for (m, line) in motions.iter_mut().zip(lines) {
            m.seals.push(line);
        }
    }
    Ok(motions)
}

/// The charter's replicas with a log key of their own: their organisations and keys, and
/// how many organisations must seal.
struct SealingReplicas {
    replicas: Vec<(u64, String)>,
    keys: BTreeMap<u64, panel_tlog::VerifierKey>,
    needed: usize,
}

/// `None` when the charter requires no seals.
fn sealing_replicas(s: &Shared) -> Option<SealingReplicas> {
    s.sm.read(|a| {
        let charter = a.state.charter.as_ref()?;
        let quorum = motion_seal::required(charter)?;
        let keyed = || {
            charter.replicas.iter().filter_map(|r| {
                let key = panel_tlog::VerifierKey::parse(r.log_vkey.as_deref()?).ok()?;
                Some((r, key))
            })
        };
        Some(SealingReplicas {
            replicas: keyed()
                .map(|(r, _)| (r.id, r.organisation.clone()))
                .collect(),
            keys: keyed().map(|(r, key)| (r.id, key)).collect(),
            needed: quorum.organisations.max(1),
        })
    })
}

/// One replica's seals over the encoded motions, asked again while it has not applied
/// them yet. Each seal is checked against that replica's charter key before it is kept:
/// nodes refuse a whole motion for one bad seal, so a replica that answers with garbage
/// is passed over like one that does not answer, and another of its organisation asked.
async fn seals_of(
    s: &Shared,
    id: u64,
    addr: &str,
    motions: &[pb::Motion],
    key: Option<&panel_tlog::VerifierKey>,
) -> Result<Vec<String>, tonic::Status> {
    let bytes: Vec<Vec<u8>> = motions.iter().map(Message::encode_to_vec).collect();
    let lines = quorum::until_applied(|| {
        s.replicas
            .seal_motions(id, addr, bytes.clone(), SEAL_TIMEOUT)
    })
    .await?;
    let valid = lines.len() == motions.len()
        && key.is_some_and(|key| {
            motions
                .iter()
                .zip(&lines)
                .all(|(m, line)| motion_seal::seals(key, &motion_digest(m), line))
        });
    if !valid {
        return Err(tonic::Status::data_loss(format!(
            "replica {id} answered with seals that are not its own over these {} motion(s)",
            motions.len()
        )));
    }
    Ok(lines)
}

/// The sealing replica's side: checks a motion against what its own applied state would
/// put to nodes (served through [`MotionVouch`]).
pub struct Vouch {
    shared: Arc<Shared>,
    /// The windows this replica sealed and whose commit deadline has not passed yet, by
    /// motion id ([`Windows`]).
    windows: Mutex<Windows>,
    /// The last exam sheet rebuilt, by arbiter, sitting and window.
    last_sheet: Mutex<Option<(SheetKey, Arc<Vec<pb::Motion>>)>>,
}

/// An exam sheet's arbiter, sitting number and window deadlines.
type SheetKey = (String, u32, i64, i64);

impl MotionVouch for Vouch {
    fn vouch(&self, wire: &pb::Motion, from_leader: bool) -> Result<(), VouchRefusal> {
        let now = self.shared.now_ms();
        plausible_window(wire, now)?;
        let digest = motion_digest(wire);
        let known = self
            .shared
            .sm
            .read(|a| a.state.motions.contains(&wire.motion_id));
        let expected = if known {
            self.expected_debate_motion(wire)?
        } else {
            self.expected_exam_item(wire)?
        };
        if motion_canonical_bytes(&expected) != motion_canonical_bytes(wire) {
            return Err(VouchRefusal::Differs(format!(
                "motion {} differs from what this replica's applied state puts to nodes \
                 (content, kind, state hash, panel or signer)",
                wire.motion_id
            )));
        }
        panel_proto::motion_signing::verify_motion_self(wire, self.shared.sm.memo())
            .map_err(|e| VouchRefusal::Differs(e.to_string()))?;
        self.windows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admit_from(
                from_leader,
                &wire.motion_id,
                digest,
                wire.commit_deadline_unix_ms,
                now,
            )
    }
}

impl Vouch {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Vouch {
            shared,
            windows: Mutex::new(Windows::default()),
            last_sheet: Mutex::new(None),
        }
    }

    /// An open, seated debate or run motion whose commitments are not logged yet, rebuilt
    /// under the asked window and signed by the motion key in force for it.
    fn expected_debate_motion(&self, wire: &pb::Motion) -> Result<pb::Motion, VouchRefusal> {
        let window = window_of(wire);
        self.shared.sm.read(|a| {
            let differs =
                |why: &str| VouchRefusal::Differs(format!("motion {}: {why}", wire.motion_id));
            let m = a
                .state
                .motions
                .get(&wire.motion_id)
                .ok_or_else(|| differs("unknown"))?;
            if m.status != MotionStatus::Open {
                return Err(differs("it is no longer open"));
            }
            if !seated(&m) {
                return Err(VouchRefusal::NotYet(format!(
                    "motion {} awaits its seats on this replica",
                    wire.motion_id
                )));
            }
            if m.round.is_some() {
                return Err(differs("its round's commitments are already logged"));
            }
            let key =
                panel_machine::features::charter_rules::motion_key_at(&a.state, m.opened_log_index)
                    .ok_or_else(|| differs("no motion key is in force for it"))?;
            let seats = seat_addresses(&a.state, &m);
            let mut expected =
                wire_motion(&m, &seats, window).map_err(|e| differs(&e.to_string()))?;
            expected.signer_key = key.to_bytes().to_vec();
            Ok(expected)
        })
    }

    /// The arbiter's exam sheet under `window`, built once for all the items of one
    /// `SealMotions` call (they share arbiter and window) instead of once per item.
    fn sheet(
        &self,
        arbiter_id: &str,
        number: u32,
        window: Window,
    ) -> Result<Arc<Vec<pb::Motion>>, VouchRefusal> {
        let key = (
            arbiter_id.to_owned(),
            number,
            window.commit_deadline_ms,
            window.reveal_deadline_ms,
        );
        let mut last = self
            .last_sheet
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((k, sheet)) = last.as_ref()
            && *k == key
        {
            return Ok(sheet.clone());
        }
        let sheet = Arc::new(
            exam_sheet(&self.shared, arbiter_id, number, window)
                .map_err(|e| VouchRefusal::Differs(e.to_string()))?,
        );
        *last = Some((key, sheet.clone()));
        Ok(sheet)
    }

    /// An item of the open exam sitting on the arbiter the motion seats, as this
    /// replica's own sheet for that arbiter asks it.
    fn expected_exam_item(&self, wire: &pb::Motion) -> Result<pb::Motion, VouchRefusal> {
        let not_yet = || {
            VouchRefusal::NotYet(format!(
                "motion {} is no motion or exam item open on this replica (yet)",
                wire.motion_id
            ))
        };
        // An exam item seats nobody; its id names the sitting and the arbiter
        // (`opaque_exam::prefix`), which this replica's own sitting must match.
        let found = self.shared.sm.read(|a| {
            let open = panel_machine::features::exam_sitting::open_sitting(&a.state)?;
            let arbiter_id =
                panel_machine::features::opaque_exam::arbiter_of(open.number, &wire.motion_id)?;
            let arbiter = a.state.arbiters.get(arbiter_id)?;
            let key = panel_machine::features::charter_rules::current_motion_key(&a.state);
            Some((open.number, arbiter.registration.arbiter_id.clone(), key))
        });
        let (number, arbiter_id, key) = found.ok_or_else(not_yet)?;
        let mut expected = self
            .sheet(&arbiter_id, number, window_of(wire))?
            .iter()
            .find(|m| m.motion_id == wire.motion_id)
            .cloned()
            .ok_or_else(not_yet)?;
        expected.signer_key = key.map(|k| k.to_bytes().to_vec()).unwrap_or_default();
        Ok(expected)
    }
}

/// One window per motion at a time: a replica seals a second digest of a motion only once
/// the commit deadline of the one it sealed has passed, so a leader cannot show the seats
/// of one motion different windows at once (a later round, after a failover or a failed
/// attempt, gets its seal once the earlier window closed).
#[derive(Default)]
struct Windows {
    /// Motion id: the sealed digest and its commit deadline.
    open: HashMap<String, ([u8; 32], i64)>,
}

impl Windows {
    /// [`Self::admit`] for a request from the replica this one follows as leader
    /// (`from_leader`); any other caller binds no window. Not yet rather than never: a new
    /// leader may ask before this replica has seen its election.
    fn admit_from(
        &mut self,
        from_leader: bool,
        motion_id: &str,
        digest: [u8; 32],
        commit_deadline_ms: i64,
        now_ms: i64,
    ) -> Result<(), VouchRefusal> {
        if !from_leader {
            return Err(VouchRefusal::NotYet(format!(
                "motion {motion_id}: only the replica this one follows as leader asks for its \
                 seal"
            )));
        }
        self.admit(motion_id, digest, commit_deadline_ms, now_ms)
    }

    fn admit(
        &mut self,
        motion_id: &str,
        digest: [u8; 32],
        commit_deadline_ms: i64,
        now_ms: i64,
    ) -> Result<(), VouchRefusal> {
        // Closed windows no longer bind anything: the map holds live windows only.
        self.open.retain(|_, (_, deadline)| *deadline >= now_ms);
        match self.open.get(motion_id) {
            Some((sealed, deadline)) if *sealed != digest => Err(VouchRefusal::NotYet(format!(
                "motion {motion_id}: this replica sealed it under another window, whose \
                 commit deadline {deadline} ms has not passed yet"
            ))),
            _ => {
                self.open
                    .insert(motion_id.to_owned(), (digest, commit_deadline_ms));
                Ok(())
            }
        }
    }
}

/// The asked round's window, as the leader set it.
fn window_of(wire: &pb::Motion) -> Window {
    Window {
        commit_deadline_ms: wire.commit_deadline_unix_ms,
        reveal_deadline_ms: wire.reveal_deadline_unix_ms,
    }
}

/// The leader sets the window from its clock; a sealing replica refuses one already past
/// (beyond the clocks' skew), inverted, or longer than any window the driver takes.
fn plausible_window(wire: &pb::Motion, now_ms: i64) -> Result<(), VouchRefusal> {
    let (commit, reveal) = (wire.commit_deadline_unix_ms, wire.reveal_deadline_unix_ms);
    let longest = MAX_WINDOW_MS as i64;
    if commit < now_ms - CLOCK_SKEW_MS
        || reveal < commit
        || commit > now_ms + longest
        || reveal - commit > longest
    {
        return Err(VouchRefusal::Differs(format!(
            "motion {}: its window (commit by {commit} ms, reveal by {reveal} ms) is past, \
             inverted or longer than a day at this replica's {now_ms} ms",
            wire.motion_id
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(commit: i64, reveal: i64) -> pb::Motion {
        pb::Motion {
            motion_id: "m".into(),
            commit_deadline_unix_ms: commit,
            reveal_deadline_unix_ms: reveal,
            ..Default::default()
        }
    }

    #[test]
    fn a_second_window_of_one_motion_is_sealed_only_after_the_first_closed() {
        let mut w = Windows::default();
        let (a, b) = ([1u8; 32], [2u8; 32]);
        assert!(w.admit("m", a, 1_000, 0).is_ok());
        // The same motion and window again (a retry): sealed again.
        assert!(w.admit("m", a, 1_000, 10).is_ok());
        // Another window while the first is open: not yet.
        assert!(matches!(
            w.admit("m", b, 2_000, 500),
            Err(VouchRefusal::NotYet(_))
        ));
        // Other motions are independent.
        assert!(w.admit("n", b, 2_000, 500).is_ok());
        // Once the first window's commit deadline passed, the new one is sealed, and the
        // closed window is forgotten.
        assert!(w.admit("m", b, 3_000, 1_001).is_ok());
        assert_eq!(w.open.len(), 2);
        assert!(w.admit("z", a, 9_000, 5_000).is_ok());
        assert_eq!(w.open.len(), 1, "closed windows are dropped");
    }

    /// docs/WIRE.md "Motion seals": a replica other than the leader (a follower, or a
    /// rogue replica whose operator calls SealMotions first) gets no seal and binds no
    /// window, so the leader's own window is sealed after it.
    #[test]
    fn only_the_leaders_request_binds_a_motions_window() {
        let mut w = Windows::default();
        let (rogue, leaders) = ([1u8; 32], [2u8; 32]);
        assert!(matches!(
            w.admit_from(false, "m", rogue, 1_000, 0),
            Err(VouchRefusal::NotYet(why)) if why.contains("only the replica this one follows as leader")
        ));
        assert!(w.open.is_empty(), "nothing bound");
        assert!(w.admit_from(true, "m", leaders, 2_000, 10).is_ok());
        // And once the leader's window is bound, the other caller still gets nothing.
        assert!(w.admit_from(false, "m", leaders, 2_000, 20).is_err());
    }

    #[test]
    fn a_sealing_replica_refuses_a_past_inverted_or_endless_window() {
        let now = 1_000_000;
        assert!(plausible_window(&wire(now + 5_000, now + 10_000), now).is_ok());
        // Within the clocks' skew a deadline just past is still sealed.
        assert!(plausible_window(&wire(now - 1_000, now + 10_000), now).is_ok());
        for (c, r) in [
            (now - 60_000, now + 10_000),
            (now + 10_000, now + 5_000),
            (
                now + 2 * MAX_WINDOW_MS as i64,
                now + 2 * MAX_WINDOW_MS as i64,
            ),
            (now + 5_000, now + 5_000 + 2 * MAX_WINDOW_MS as i64),
        ] {
            assert!(
                matches!(
                    plausible_window(&wire(c, r), now),
                    Err(VouchRefusal::Differs(_))
                ),
                "{c} {r}"
            );
        }
    }
}
