//! Motion seals (`panel_federation::motion_seal`; docs/SECURITY.md "No replica makes a
//! motion alone"): before a motion goes to nodes, the leader seals it with its own log key
//! and asks replicas of further organisations for theirs (`Replica.SealMotions`) until
//! the charter's log quorum is met. Each of those replicas rebuilds the motion from its own
//! applied state ([`Vouch`]) and seals only an exact match, so the motion key that every
//! replica holds no longer lets one of them put a motion of its own making to arbiters.

use super::*;

use panel_federation::motion_seal;
use panel_proto::motion_signing::motion_canonical_bytes;

use crate::raft::network::{MotionVouch, VouchRefusal};

/// How long the leader waits for one replica's seals.
const SEAL_TIMEOUT: Duration = Duration::from_secs(5);
/// How often, and how far apart, a replica that has not applied the motion yet is asked
/// again (it applies within milliseconds of the leader).
const NOT_YET_TRIES: u32 = 25;
const NOT_YET_PAUSE: Duration = Duration::from_millis(20);
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
    let Some((replicas, needed)) = sealing_replicas(s) else {
        return Ok(motions);
    };
    if motions.is_empty() {
        return Ok(motions);
    }
    let own = s.opts.seal_key.as_ref().ok_or(SealError::NoLogKey)?;
    for m in &mut motions {
        m.seals = vec![motion_seal::seal(own, &motion_digest(m))];
    }
    let bytes: Vec<Vec<u8>> = motions.iter().map(Message::encode_to_vec).collect();
    let answers = from_other_organisations(s, &replicas, needed, |id, addr| {
        let bytes = bytes.clone();
        async move { seals_of(s, id, &addr, bytes).await }
    })
    .await;
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

/// The charter's replicas with a log key of their own and their organisations, and how
/// many organisations must seal; `None` when the charter requires no seals.
fn sealing_replicas(s: &Shared) -> Option<(Vec<(u64, String)>, usize)> {
    s.sm.read(|a| {
        let charter = a.state.charter.as_ref()?;
        let quorum = motion_seal::required(charter)?;
        let replicas = charter
            .replicas
            .iter()
            .filter(|r| r.log_vkey.is_some())
            .map(|r| (r.id, r.organisation.clone()))
            .collect();
        Some((replicas, quorum.organisations.max(1)))
    })
}

/// One replica's seals over the encoded motions, asked again while it has not applied
/// them yet.
async fn seals_of(
    s: &Shared,
    id: u64,
    addr: &str,
    motions: Vec<Vec<u8>>,
) -> Result<Vec<String>, tonic::Status> {
    let mut tries = 0;
    loop {
        let asked = s
            .replicas
            .seal_motions(id, addr, motions.clone(), SEAL_TIMEOUT)
            .await;
        match asked {
            Err(e) if e.code() == tonic::Code::FailedPrecondition && tries < NOT_YET_TRIES => {
                tries += 1;
                tokio::time::sleep(NOT_YET_PAUSE).await;
            }
            Ok(lines) if lines.len() != motions.len() => {
                return Err(tonic::Status::internal(format!(
                    "replica {id} gave {} seals for {} motions",
                    lines.len(),
                    motions.len()
                )));
            }
            other => return other,
        }
    }
}

/// What the charter's other organisations' replicas answered.
pub(super) struct QuorumAnswers<T> {
    /// Distinct organisations counted, this replica's included.
    pub covered: usize,
    /// Each answering replica's answer, in ascending replica id.
    pub answers: Vec<(u64, T)>,
}

/// Asks the replicas in `replicas` (id, organisation), in ascending id, one per
/// organisation other than this replica's, until `needed` organisations are covered. A
/// replica that is not a member now, or whose `ask` fails, is passed over.
pub(super) async fn from_other_organisations<T, F, Fut>(
    s: &Shared,
    replicas: &[(u64, String)],
    needed: usize,
    mut ask: F,
) -> QuorumAnswers<T>
where
    F: FnMut(u64, String) -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let mut sorted = replicas.to_vec();
    sorted.sort();
    let mut covered: BTreeSet<String> = sorted
        .iter()
        .filter(|(id, _)| *id == s.id)
        .map(|(_, org)| org.clone())
        .collect();
    let mut answers = Vec::new();
    let members = crate::raft::status(&s.raft).nodes;
    for (id, org) in &sorted {
        if covered.len() >= needed {
            break;
        }
        if covered.contains(org) {
            continue;
        }
        let Some(member) = members.get(id) else {
            continue;
        };
        match ask(*id, member.addr.clone()).await {
            Ok(answer) => {
                covered.insert(org.clone());
                answers.push((*id, answer));
            }
            Err(e) => info!("replica {id} gave no answer (yet): {}", e.message()),
        }
    }
    QuorumAnswers {
        covered: covered.len(),
        answers,
    }
}

/// The sealing replica's side: checks a motion against what its own applied state would
/// put to nodes (served through [`MotionVouch`]).
pub struct Vouch {
    shared: Arc<Shared>,
    /// The windows this replica sealed and whose commit deadline has not passed yet, by
    /// motion id ([`Windows`]).
    windows: Mutex<Windows>,
}

impl MotionVouch for Vouch {
    fn vouch(&self, wire: &pb::Motion) -> Result<(), VouchRefusal> {
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
            .admit(&wire.motion_id, digest, wire.commit_deadline_unix_ms, now)
    }
}

impl Vouch {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Vouch {
            shared,
            windows: Mutex::new(Windows::default()),
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
            let key = panel_machine::charter_rules::motion_key_at(&a.state, m.opened_log_index)
                .ok_or_else(|| differs("no motion key is in force for it"))?;
            let seats = seat_addresses(&a.state, &m);
            let mut expected =
                wire_motion(&m, &seats, window).map_err(|e| differs(&e.to_string()))?;
            expected.signer_key = key.to_bytes().to_vec();
            Ok(expected)
        })
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
            let open = panel_machine::exam_sitting::open_sitting(&a.state)?;
            let (arbiter_id, _) = wire
                .motion_id
                .strip_prefix("exam/")?
                .split_once('/')?
                .1
                .split_once('/')?;
            let arbiter = a.state.arbiters.get(arbiter_id)?;
            if !wire
                .motion_id
                .starts_with(&panel_machine::opaque_exam::prefix(open.number, arbiter_id))
            {
                return None;
            }
            let key = panel_machine::charter_rules::current_motion_key(&a.state);
            Some((open.number, arbiter.registration.arbiter_id.clone(), key))
        });
        let (number, arbiter_id, key) = found.ok_or_else(not_yet)?;
        let sheet = exam_sheet(&self.shared, &arbiter_id, number, window_of(wire))
            .map_err(|e| VouchRefusal::Differs(e.to_string()))?;
        let mut expected = sheet
            .into_iter()
            .find(|m| m.motion_id == wire.motion_id)
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
