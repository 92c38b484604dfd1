//! The node's core: commit, reveal, deliver and the human answer, over the arbiter, the
//! store and the peers, with typed refusals ([`CoreError`]). It knows nothing of gRPC:
//! the services in [`crate::service`] and the outbound link ([`crate::link`]) drive the
//! same core and turn a refusal into a status only at their edge.
//!
//! What may happen when is the round's rule (`panel_proto::round::Window`), asked at the
//! time of the clock injected into the arbiter ([`Arbiter::now_ms`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use panel_proto::commit_reveal::{self, CommitRevealError};
use panel_proto::pb::{
    Commitment, DeliverAck, HumanAnswer, Motion, RecordSource, Reveal, RulingRecord,
};
use panel_proto::round::{Window, WindowError};
use panel_proto::ruling_check::{self, BindingError, RulingError, known_decision};
use panel_proto::signing::VerifyError;
use panel_proto::{
    MotionSignatureError, VerifiedMemo, VerifyingKey, motion_digest, verify_motion, verify_ruling,
};
use thiserror::Error;
use tokio::sync::Notify;
use tracing::{Instrument, info, info_span, warn};

use crate::arbiter::{Arbiter, ArbiterError};
use crate::exchange::PeerBook;
use crate::judge::answer_json::check_against_motion;
use crate::judge::{JudgeAnswer, JudgeError};
use crate::keyfile::{KeyFileError, random_32};
use crate::metrics::MotionRefusal;
use crate::store::{PeerInsert, Store, StoreError};
use panel_federation::motion_seal;
use panel_transport::{Role, RoleGuard};

/// Why the node refuses a request. Each message names what is wrong and, where there is
/// one, the fix; [`crate::service`] maps each to a gRPC status code.
#[derive(Debug, Error)]
pub enum CoreError {
    #[error(
        "motion {0:?} refused: this node trusts no coordinator motion key; add \
         coordinator_keys = [\"<hex public key>\"] to node.toml (the key `panel \
         coordinator run --motion-key` signs with) and restart the node"
    )]
    NoTrustedKey(String),
    #[error(transparent)]
    MotionSignature(#[from] MotionSignatureError),
    #[error(transparent)]
    Seals(#[from] panel_federation::motion_seal::SealError),
    #[error(
        "second commitment refused: this arbiter already committed on another motion \
         under the id {0:?} (its content, deadlines, seats or state differ); a motion \
         id names one signed motion"
    )]
    SecondCommitment(String),
    #[error("stored record has no commitment")]
    StoredWithoutCommitment,
    #[error(transparent)]
    Arbiter(#[from] ArbiterError),
    #[error(
        "the judge answered at {at_ms} ms, after the commit deadline {deadline_ms} ms of \
         motion {motion_id:?}; no commitment made"
    )]
    AnsweredLate {
        motion_id: String,
        at_ms: i64,
        deadline_ms: i64,
    },
    #[error(transparent)]
    Salt(#[from] KeyFileError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("storage task failed: {0}")]
    StorageTask(#[from] tokio::task::JoinError),
    #[error(
        "node is shutting down; motion {0:?} stays in the durable pending queue and can be \
         answered after the restart"
    )]
    ShuttingDown(String),
    #[error(
        "no human answer to motion {motion_id:?} before its commit deadline{}; it stays in \
         the pending queue (`panel node pending`, `panel node rule`)",
        if *.woken { " (woken without a record)" } else { "" }
    )]
    NoHumanAnswer { motion_id: String, woken: bool },
    #[error("reveal without commitment: this arbiter made no commitment on motion {0:?}")]
    RevealWithoutCommitment(String),
    #[error(
        "reveal refused: this arbiter committed on another motion under the id \
         {motion_id:?} (digest {have}, asked for {asked}); its ruling answers that motion only"
    )]
    OtherMotion {
        motion_id: String,
        have: String,
        asked: String,
    },
    #[error(transparent)]
    Window(#[from] WindowError),
    #[error("delivery has no signed_ruling")]
    DeliveryWithoutRuling,
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error("delivered ruling is this node's own; peers deliver only their own rulings")]
    OwnRuling,
    #[error(
        "unknown motion {0:?}: this node's arbiter did not sit on it, so it keeps no rulings \
         for it"
    )]
    UnknownMotion(String),
    #[error("replayed ruling refused: {0}")]
    Replayed(#[from] BindingError),
    #[error("arbiter {arbiter} is not on the panel of motion {motion_id:?}")]
    NotOnPanel { arbiter: String, motion_id: String },
    #[error(
        "delivered before the commit window of motion {motion_id:?} closes at {deadline_ms} \
         ms; rulings are exchanged only after the reveal"
    )]
    DeliveredEarly { motion_id: String, deadline_ms: i64 },
    #[error("reveal without commitment: the delivery carries no commitment to open")]
    DeliveryWithoutCommitment,
    #[error("commitment made at {at_ms} ms, after the commit deadline {deadline_ms} ms")]
    CommittedLate { at_ms: i64, deadline_ms: i64 },
    #[error(transparent)]
    Commitment(#[from] CommitRevealError),
    #[error(
        "second commitment refused: arbiter {arbiter} already delivered a different ruling \
         on motion {motion_id:?} (equivocation; the first is kept)"
    )]
    Equivocation { arbiter: String, motion_id: String },
    #[error("motion {0:?} is not pending on this node (see `panel node pending`)")]
    NotPending(String),
    #[error(transparent)]
    Decision(#[from] RulingError),
    #[error(transparent)]
    Answer(#[from] JudgeError),
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, CoreError> {
    Ok(tokio::task::spawn_blocking(f).await??)
}

/// An own record as it may be shown: before the reveal only the commitment.
fn redact(mut r: RulingRecord) -> RulingRecord {
    if r.source == RecordSource::Own as i32 && !r.revealed {
        r.signed_ruling = None;
        r.salt.clear();
    }
    r
}

/// Shared state of the services.
pub struct NodeCore {
    pub arbiter: Arc<Arbiter>,
    pub store: Arc<Store>,
    pub peers: PeerBook,
    /// Only the charter's replicas may ask this node to commit or reveal (under TLS).
    pub(crate) coordinators: RoleGuard,
    /// The coordinator motion keys this node trusts (`coordinator_keys`); a motion signed
    /// by none of them is refused before judging (docs/WIRE.md "Motion, layout v1").
    coordinator_keys: Vec<VerifyingKey>,
    /// Coordinator replicas (`host:port`) this node writes its own reveals to
    /// (`coordinators`, else `connect`); empty: only the driver submits them.
    reveal_to: Vec<String>,
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    /// Woken at shutdown so Commit calls waiting for a human return at once.
    shutdown: Notify,
    /// Counters and the judge latency of the metrics endpoint (`metrics.rs`).
    pub metrics: Arc<crate::metrics::NodeMetrics>,
    /// This node's memo of verified signatures: a motion checked at Commit is not checked
    /// again at Reveal, nor a peer's ruling that its opening re-verifies.
    memo: VerifiedMemo,
}

impl NodeCore {
    pub fn new(arbiter: Arc<Arbiter>, store: Arc<Store>, peers: PeerBook) -> Self {
        Self {
            coordinators: RoleGuard::new(
                peers.transport().charter(),
                Role::Replica,
                "ArbiterNode commit/reveal",
            ),
            arbiter,
            store,
            peers,
            coordinator_keys: Vec::new(),
            reveal_to: Vec::new(),
            waiters: Mutex::new(HashMap::new()),
            shutdown: Notify::new(),
            metrics: Arc::default(),
            memo: VerifiedMemo::default(),
        }
    }

    /// The coordinator motion keys to trust; without any, every motion is refused.
    pub fn with_coordinator_keys(mut self, keys: Vec<VerifyingKey>) -> Self {
        self.coordinator_keys = keys;
        self
    }

    /// The coordinator replicas to submit this node's own reveals to (`SubmitReveal`).
    pub fn with_coordinators(mut self, addrs: Vec<String>) -> Self {
        self.reveal_to = addrs;
        self
    }

    fn now_ms(&self) -> i64 {
        self.arbiter.now_ms()
    }

    /// Verifies the coordinator's signature on a motion and returns its digest. Runs before
    /// anything else looks at the motion (the stored record, the judge), so an unsigned or
    /// forged motion learns nothing: not even whether this node committed on its id.
    fn verify_motion(&self, m: &Motion) -> Result<[u8; 32], CoreError> {
        if self.coordinator_keys.is_empty() {
            self.metrics.motion_refused(MotionRefusal::NoTrustedKey);
            return Err(CoreError::NoTrustedKey(m.motion_id.clone()));
        }
        let digest = verify_motion(m, &self.coordinator_keys, &self.memo).map_err(|e| {
            self.metrics.motion_refused(MotionRefusal::Signature);
            CoreError::from(e)
        })?;
        self.check_seals(m, &digest)?;
        Ok(digest)
    }

    /// Under a charter whose log is signed by a quorum, the motion must also carry the
    /// seals of that many organisations' replicas (`panel_federation::motion_seal`): the
    /// motion key alone is held by every replica, so it cannot show that the log opened
    /// the motion.
    fn check_seals(&self, m: &Motion, digest: &[u8; 32]) -> Result<(), CoreError> {
        let charter = self.peers.transport().charter();
        let Some(quorum) = charter.as_deref().and_then(motion_seal::required) else {
            return Ok(());
        };
        motion_seal::check(&quorum, &m.motion_id, digest, &m.seals).map_err(|e| {
            self.metrics.motion_refused(MotionRefusal::Seals);
            CoreError::from(e)
        })?;
        Ok(())
    }

    /// Releases Commit calls that wait for a human answer (graceful shutdown).
    pub fn begin_shutdown(&self) {
        self.shutdown.notify_waiters();
    }

    /// The span every request about one motion runs in.
    pub(crate) fn motion_span(&self, debate: &str, motion: &str) -> tracing::Span {
        info_span!("motion", debate = %debate, motion = %motion, arbiter = %self.arbiter.identity().fingerprint)
    }

    fn waiter(&self, motion_id: &str) -> Arc<Notify> {
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        w.entry(motion_id.to_owned()).or_default().clone()
    }

    fn wake(&self, motion_id: &str) {
        let n = self
            .waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(motion_id);
        if let Some(n) = n {
            n.notify_waiters();
        }
    }

    /// An existing own commitment for the motion, if the motion is the same one (the same
    /// motion digest: every field, signature included); a different motion under the same id
    /// is a second commitment and refused. The refusal carries no ruling and no commitment.
    fn existing(rec: &RulingRecord, m: &Motion) -> Result<Commitment, CoreError> {
        let same = rec
            .motion
            .as_ref()
            .is_some_and(|s| motion_digest(s) == motion_digest(m));
        if !same {
            return Err(CoreError::SecondCommitment(m.motion_id.clone()));
        }
        rec.commitment
            .clone()
            .ok_or(CoreError::StoredWithoutCommitment)
    }

    /// The Commit step: idempotent per motion.
    pub async fn commit(&self, m: Motion) -> Result<Commitment, CoreError> {
        self.verify_motion(&m)?;
        let store = self.store.clone();
        let id = m.motion_id.clone();
        if let Some(rec) = blocking(move || store.own(&id)).await? {
            return Self::existing(&rec, &m);
        }
        self.arbiter
            .check_motion(&m, self.now_ms())
            .inspect_err(|_| self.metrics.motion_refused(MotionRefusal::Check))?;
        if self.arbiter.is_human() {
            return self.wait_for_human(m).await;
        }
        let started = std::time::Instant::now();
        let answer = self.arbiter.decide(&m).await;
        self.metrics.judged(
            &self.arbiter.identity().judge_kind,
            started.elapsed(),
            answer.is_ok(),
        );
        let answer = answer.inspect_err(|_| self.metrics.motion_refused(MotionRefusal::Judge))?;
        self.seal_and_store(&m, &answer).await
    }

    async fn seal_and_store(
        &self,
        m: &Motion,
        answer: &JudgeAnswer,
    ) -> Result<Commitment, CoreError> {
        let now = self.now_ms();
        let window = Window::of(m);
        if window.check_commit(&m.motion_id, now).is_err() {
            return Err(CoreError::AnsweredLate {
                motion_id: m.motion_id.clone(),
                at_ms: now,
                deadline_ms: window.commit_deadline_ms,
            });
        }
        let salt = random_32()?;
        let sealed = self.arbiter.seal(m, answer, now, salt)?;
        let record = RulingRecord {
            source: RecordSource::Own as i32,
            motion: Some(m.clone()),
            signed_ruling: Some(sealed.signed.clone()),
            commitment: Some(sealed.commitment.clone()),
            salt: sealed.salt.to_vec(),
            revealed: false,
            stored_at_unix_ms: now,
        };
        let store = self.store.clone();
        let id = m.motion_id.clone();
        let (stored, inserted) = blocking(move || store.insert_own_if_absent(&record, &id)).await?;
        if inserted {
            self.metrics.committed();
            info!(
                decision = answer.decision as i32,
                probability = answer.probability,
                "committed"
            );
        }
        self.wake(&m.motion_id);
        Self::existing(&stored, m)
    }

    async fn wait_for_human(&self, m: Motion) -> Result<Commitment, CoreError> {
        let notify = self.waiter(&m.motion_id);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let store = self.store.clone();
        let pm = m.clone();
        blocking(move || store.put_pending(&pm)).await?;
        let wait_ms = Window::of(&m).commit_left_ms(self.now_ms());
        let shutdown = self.shutdown.notified();
        let woken = tokio::select! {
            r = tokio::time::timeout(Duration::from_millis(wait_ms), notified) => r.is_ok(),
            _ = shutdown => return Err(CoreError::ShuttingDown(m.motion_id.clone())),
        };
        let store = self.store.clone();
        let id = m.motion_id.clone();
        match blocking(move || store.own(&id)).await? {
            Some(rec) => Self::existing(&rec, &m),
            None => Err(CoreError::NoHumanAnswer {
                motion_id: m.motion_id.clone(),
                woken,
            }),
        }
    }

    /// The Reveal step: only after the commit window; delivers to peers once. A caller that
    /// names the digest of the signed motion it means (`expected_digest`, non-empty) gets a
    /// refusal if the motion this node committed on under that id is another one.
    pub async fn reveal(
        &self,
        motion_id: String,
        expected_digest: &[u8],
    ) -> Result<Reveal, CoreError> {
        let store = self.store.clone();
        let id = motion_id.clone();
        let rec = blocking(move || store.own(&id))
            .await?
            .ok_or_else(|| CoreError::RevealWithoutCommitment(motion_id.clone()))?;
        let m = rec.motion.clone().unwrap_or_default();
        if !expected_digest.is_empty() && motion_digest(&m).as_slice() != expected_digest {
            return Err(CoreError::OtherMotion {
                motion_id,
                have: hex::encode(motion_digest(&m)),
                asked: hex::encode(expected_digest),
            });
        }
        Window::of(&m).check_reveal(&motion_id, self.now_ms())?;
        let was_revealed = rec.revealed;
        let store = self.store.clone();
        let id = motion_id.clone();
        let rec = blocking(move || store.mark_revealed(&id)).await?;
        let reveal = Reveal {
            signed_ruling: rec.signed_ruling.clone(),
            salt: rec.salt.clone(),
            commitment: rec.commitment.clone(),
        };
        if !was_revealed {
            self.metrics.revealed();
            info!("revealed");
            self.announce(&m, &motion_id, &reveal);
        }
        Ok(reveal)
    }

    /// A first reveal goes to the panel's peers and, for a logged round, to the
    /// coordinators as this node's own copy, so no driver decides whether it counts
    /// (docs/coordinator/state-machine.md "The commit-reveal round"). Exam answers are scored from the
    /// exam driver's `SubmitExam`, not from logged rounds.
    fn announce(&self, m: &Motion, motion_id: &str, reveal: &Reveal) {
        self.peers
            .spawn_delivery(m, self.arbiter.verifying_key().to_bytes(), reveal.clone());
        let key = self.arbiter.verifying_key().to_bytes();
        let exam = m.kind == panel_proto::pb::MotionKind::Exam as i32;
        let to = if exam {
            Vec::new()
        } else {
            self.reveal_to.clone()
        };
        let client_id = format!("node-{}", hex::encode(&key[..8]));
        match crate::submit::submit_request(&client_id, motion_id, reveal) {
            Ok(req) => crate::submit::spawn_submit(self.peers.channels.clone(), to, req),
            Err(e) => warn!(motion = %motion_id, "own reveal not submitted: {e}"),
        }
    }

    /// A peer's revealed ruling: verify everything, then store for audit.
    pub async fn deliver(&self, d: Reveal) -> Result<DeliverAck, CoreError> {
        let sr = d
            .signed_ruling
            .as_ref()
            .ok_or(CoreError::DeliveryWithoutRuling)?;
        let ruling = verify_ruling(sr, &self.memo)
            .inspect_err(|_| self.metrics.signature_failed("delivered_ruling"))?;
        if ruling.arbiter_key.as_slice() == self.arbiter.verifying_key().to_bytes().as_slice() {
            return Err(CoreError::OwnRuling);
        }
        let span = info_span!("deliver_in", debate = %ruling.debate_id, motion = %ruling.motion_id,
            arbiter = %panel_proto::keys::fingerprint_bytes(&ruling.arbiter_key));
        async {
            let store = self.store.clone();
            let id = ruling.motion_id.clone();
            let motion = blocking(move || {
                Ok(match store.own(&id)? {
                    Some(r) => r.motion,
                    None => store.pending_get(&id)?,
                })
            })
            .await?
            .ok_or_else(|| CoreError::UnknownMotion(ruling.motion_id.clone()))?;
            ruling_check::check_binding(ruling, &motion)?;
            // The stored motion was verified as the coordinator's when this node committed,
            // so its digest says which content the peer must have judged (envelope v2).
            ruling_check::check_motion_digest(sr, &motion.motion_id, &motion_digest(&motion))?;
            if !motion.panel.is_empty()
                && !motion
                    .panel
                    .iter()
                    .any(|s| s.public_key == ruling.arbiter_key)
            {
                return Err(CoreError::NotOnPanel {
                    arbiter: panel_proto::keys::fingerprint_bytes(&ruling.arbiter_key),
                    motion_id: motion.motion_id.clone(),
                });
            }
            let now = self.now_ms();
            let window = Window::of(&motion);
            if window.check_exchange(&motion.motion_id, now).is_err() {
                return Err(CoreError::DeliveredEarly {
                    motion_id: motion.motion_id.clone(),
                    deadline_ms: window.commit_deadline_ms,
                });
            }
            let c = d
                .commitment
                .as_ref()
                .ok_or(CoreError::DeliveryWithoutCommitment)?;
            commit_reveal::verify_commitment(c, &self.memo)?;
            if window
                .check_commit(&motion.motion_id, c.committed_at_unix_ms)
                .is_err()
            {
                return Err(CoreError::CommittedLate {
                    at_ms: c.committed_at_unix_ms,
                    deadline_ms: window.commit_deadline_ms,
                });
            }
            commit_reveal::check_opens(c, sr, &d.salt, &self.memo)?;
            let record = RulingRecord {
                source: RecordSource::Peer as i32,
                motion: Some(motion),
                signed_ruling: Some(sr.clone()),
                commitment: Some(c.clone()),
                salt: d.salt.clone(),
                revealed: true,
                stored_at_unix_ms: now,
            };
            let store = self.store.clone();
            match blocking(move || store.insert_peer(&record)).await? {
                PeerInsert::Inserted => {
                    info!("stored peer ruling");
                    Ok(DeliverAck {
                        stored: true,
                        duplicate: false,
                    })
                }
                PeerInsert::Duplicate => Ok(DeliverAck {
                    stored: false,
                    duplicate: true,
                }),
                PeerInsert::Conflict(_) => {
                    warn!("equivocation: second, different ruling from the same arbiter");
                    Err(CoreError::Equivocation {
                        arbiter: panel_proto::keys::fingerprint_bytes(&ruling.arbiter_key),
                        motion_id: ruling.motion_id.clone(),
                    })
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Stored rulings matching the filter, own ones redacted until revealed.
    pub async fn list(
        &self,
        f: panel_proto::pb::ListRulingsRequest,
    ) -> Result<Vec<RulingRecord>, CoreError> {
        let store = self.store.clone();
        let records = blocking(move || store.list(&f)).await?;
        Ok(records.into_iter().map(redact).collect())
    }

    /// The human judge's queue.
    pub async fn pending(&self) -> Result<Vec<Motion>, CoreError> {
        let store = self.store.clone();
        blocking(move || store.pending()).await
    }

    /// A human operator's answer to a pending motion: checked like a judge's, then sealed.
    pub async fn answer(&self, h: HumanAnswer) -> Result<Commitment, CoreError> {
        let store = self.store.clone();
        let id = h.motion_id.clone();
        let m = blocking(move || store.pending_get(&id))
            .await?
            .ok_or_else(|| CoreError::NotPending(h.motion_id.clone()))?;
        let span = self.motion_span(&m.debate_id, &m.motion_id);
        async {
            self.arbiter.check_motion(&m, self.now_ms())?;
            let decision = known_decision(h.decision)?;
            let answer = JudgeAnswer {
                decision,
                probability: h.probability,
                relevance: h.relevance,
                tier: h.tier,
                quantiles: h.quantiles,
                receipt: h.receipt,
                rationale: h.rationale,
                provenance: Some(panel_proto::pb::JudgeProvenance {
                    judge_kind: "human".into(),
                    ..Default::default()
                }),
            };
            check_against_motion(&answer, &m)?;
            self.seal_and_store(&m, &answer).await
        }
        .instrument(span)
        .await
    }
}

#[cfg(test)]
mod tests {
    //! The core on a clock the test moves: every window refusal comes from the round's
    //! rule at the injected time, never from the host's clock.

    use std::sync::atomic::{AtomicI64, Ordering};

    use panel_proto::pb::{ContentProjection, MotionKind, PanelSeat, ProjectionItem, Side};
    use panel_proto::round::Clock;
    use panel_proto::{SigningKey, sign_motion};

    use super::*;
    use crate::judge::scripted::{Profile, ScriptedJudge};

    struct ManualClock(AtomicI64);

    impl Clock for ManualClock {
        fn now_ms(&self) -> i64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    const COMMIT: i64 = 2_000;
    const REVEAL: i64 = 3_000;

    fn coordinator() -> SigningKey {
        SigningKey::from_bytes(&[9; 32])
    }

    fn motion(id: &str, arbiter: &SigningKey, commit_deadline: i64) -> Motion {
        let m = Motion {
            motion_id: id.into(),
            debate_id: "d".into(),
            kind: MotionKind::Merge as i32,
            state_hash: vec![1; 32],
            projection: Some(ContentProjection {
                affirmative_favours: Side::A as i32,
                items: vec![ProjectionItem::default(), ProjectionItem::default()],
                ..Default::default()
            }),
            commit_deadline_unix_ms: commit_deadline,
            reveal_deadline_unix_ms: commit_deadline + (REVEAL - COMMIT),
            panel: vec![PanelSeat {
                public_key: arbiter.verifying_key().to_bytes().to_vec(),
                endpoint: String::new(),
            }],
            ..Default::default()
        };
        sign_motion(&coordinator(), m)
    }

    fn core(dir: &std::path::Path, clock: Arc<ManualClock>) -> (NodeCore, SigningKey) {
        let key = SigningKey::from_bytes(&[7; 32]);
        let judge = ScriptedJudge::new("steady", Profile::exact(1)).unwrap();
        let arbiter =
            Arbiter::new(key.clone(), Some(Arc::new(judge)), Default::default()).with_clock(clock);
        let peers = PeerBook::new(
            Default::default(),
            1,
            1 << 20,
            panel_transport::Transport::InsecureLoopback,
        );
        let store = Arc::new(Store::open(dir).unwrap());
        let core = NodeCore::new(Arc::new(arbiter), store, peers)
            .with_coordinator_keys(vec![coordinator().verifying_key()]);
        (core, key)
    }

    #[tokio::test]
    async fn every_step_of_the_round_is_judged_on_the_injected_clock() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock(AtomicI64::new(1_000)));
        let (core, key) = core(dir.path(), clock.clone());
        let m = motion("m1", &key, COMMIT);
        let c = core.commit(m.clone()).await.unwrap();
        assert_eq!(c.committed_at_unix_ms, 1_000);
        // The same motion again is the same commitment; another under its id is refused.
        assert_eq!(core.commit(m.clone()).await.unwrap(), c);
        let other = motion("m1", &key, COMMIT + 1);
        assert!(matches!(
            core.commit(other).await,
            Err(CoreError::SecondCommitment(_))
        ));
        // Before the commit deadline, on the injected clock, nothing is revealed.
        clock.0.store(COMMIT, Ordering::SeqCst);
        let early = core.reveal("m1".into(), &[]).await.unwrap_err();
        assert!(matches!(
            early,
            CoreError::Window(WindowError::RevealTooEarly { .. })
        ));
        assert_eq!(
            crate::service::status_code(&early),
            tonic::Code::FailedPrecondition
        );
        // A motion whose commit window has closed on that clock is not judged.
        let late = core
            .commit(motion("m2", &key, COMMIT - 1))
            .await
            .unwrap_err();
        assert!(matches!(
            late,
            CoreError::Arbiter(ArbiterError::CommitWindowClosed { .. })
        ));
        // In the reveal phase the reveal opens the commitment; after it, nothing.
        clock.0.store(COMMIT + 1, Ordering::SeqCst);
        let r = core.reveal("m1".into(), &motion_digest(&m)).await.unwrap();
        assert_eq!(r.commitment.as_ref(), Some(&c));
        clock.0.store(REVEAL + 1, Ordering::SeqCst);
        assert!(matches!(
            core.reveal("m1".into(), &[]).await,
            Err(CoreError::Window(WindowError::RevealClosed { .. }))
        ));
        // A reveal for a motion never committed names the missing commitment.
        let none = core.reveal("m9".into(), &[]).await.unwrap_err();
        assert_eq!(crate::service::status_code(&none), tonic::Code::NotFound);
        assert!(
            none.to_string().contains("reveal without commitment"),
            "{none}"
        );
    }

    #[tokio::test]
    async fn an_unsigned_motion_is_refused_before_the_clock_or_the_store_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock(AtomicI64::new(1_000)));
        let (core, key) = core(dir.path(), clock);
        let mut m = motion("m1", &key, COMMIT);
        m.signature = vec![0; 64];
        let e = core.commit(m).await.unwrap_err();
        assert!(matches!(e, CoreError::MotionSignature(_)), "{e}");
        assert_eq!(
            crate::service::status_code(&e),
            tonic::Code::Unauthenticated
        );
    }
}
