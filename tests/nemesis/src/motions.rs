//! The motion workload: five arbiters of two organisations and three stances, registered
//! under the charter (proof of possession and the organisation's endorsement) and admitted;
//! then motions opened one after another, each held open for a moment (so faults land
//! while motions are open) and decided by signed rulings from every seat. At the end each
//! motion's fate is checked against what its client was told, and the exported record
//! must verify (`panel verify`: every accepted outcome backed by signed cross-stance
//! rulings).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::command::ArbiterRegistration;
use panel_machine::rules::ruling::{self, Binding};
use panel_machine::{ClientCommand, Command, MotionSpec, OutcomeSubmission, TestCommand};
use panel_machine::{Decision, MotionKind, Stance};
use panel_transport::pki;
use tonic::transport::Channel;

use crate::cluster::{Cluster, ClusterError};
use crate::history::{Outcome, Violation, WriteOp};
use crate::run::{Shared, lock, read, send};
use crate::schedule::Rng;

const DEBATE: &str = "nemesis";
const STANCES: [Stance; 5] = [Stance::A, Stance::A, Stance::B, Stance::B, Stance::None];

/// What the motion client was told about one motion.
#[derive(Debug, Clone)]
pub struct MotionOps {
    pub motion_id: String,
    pub open: WriteOp,
    pub close: Option<WriteOp>,
}

fn key(i: usize) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[0x60 + i as u8; 32])
}

fn json(c: &Command) -> String {
    serde_json::to_string(c).unwrap_or_default()
}

/// Registers and admits the five arbiters (before any fault). Errors are setup errors.
pub(crate) async fn setup(
    shared: &Shared,
    cluster: &Cluster,
    clients: &mut [(u64, CoordinatorClient<Channel>)],
) -> Result<(), ClusterError> {
    let mut req = 0u64;
    for (i, stance) in STANCES.iter().enumerate() {
        let organisation = pki::LOCAL_ORGANISATIONS[i % 2];
        let roster = pki::read_seed_key(&cluster.pki.signing_key_path(organisation))?;
        let mut reg = ArbiterRegistration {
            arbiter_id: format!("narb{i}"),
            public_key: panel_machine::rules::hex_bytes::PublicKeyBytes::new(
                key(i).verifying_key().to_bytes(),
            ),
            organisation: organisation.to_owned(),
            model_family: format!("family-{i}"),
            stance: *stance,
            endpoint: String::new(),
            attestation: None,
            lineage: None,
        };
        reg.attestation = Some(
            panel_machine::features::charter_rules::attest(&reg, &key(i), &roster).map_err(
                |e| ClusterError::Setup {
                    what: "attest an arbiter".into(),
                    detail: e.to_string(),
                },
            )?,
        );
        let admit: Command = TestCommand::SetAdmission {
            arbiter_id: format!("narb{i}"),
            admitted: true,
            score_milli: 900,
        }
        .into();
        for c in [
            json(&ClientCommand::RegisterArbiter(reg).into()),
            json(&admit),
        ] {
            req += 1;
            let op = send(
                shared,
                clients,
                "nemesis-setup",
                req,
                format!("setup-{req}"),
                &c,
                Duration::from_secs(30),
                Duration::from_secs(3),
                0,
                0,
            )
            .await;
            if !matches!(op.outcome, Outcome::Ok { .. }) {
                return Err(ClusterError::Setup {
                    what: format!("arbiter setup write {req}"),
                    detail: format!("{:?}", op.outcome),
                });
            }
        }
    }
    Ok(())
}

/// Opens and decides motions until told to stop.
pub(crate) async fn client(
    shared: Arc<Shared>,
    mut clients: Vec<(u64, CoordinatorClient<Channel>)>,
    motion_key: ed25519_dalek::SigningKey,
    seed: u64,
    deadline: Duration,
    attempt: Duration,
) -> Vec<MotionOps> {
    let mut rng = Rng::new(seed ^ 0x6d6f74);
    let mut out = Vec::new();
    let mut req = 0u64;
    let mut k = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        k += 1;
        let motion_id = format!("nm{k}");
        let mut hash = [0u8; 32];
        for chunk in hash.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        let open: Command = TestCommand::OpenMotion(Box::new(MotionSpec {
            motion_id: motion_id.clone(),
            debate_id: DEBATE.into(),
            kind: MotionKind::Merge,
            state_hash: panel_machine::rules::hex_bytes::DigestBytes::new(hash.to_vec()),
            seats: 5,
            min_per_stance: 2,
            contributors: vec![],
            author_model_family: None,
            policy: None,
            question: None,
            projection: None,
            expected: None,
            procedure: None,
            final_panel_of: None,
        }))
        .into();
        req += 1;
        let first = (req as usize) % clients.len();
        let open = send(
            &shared,
            &mut clients,
            "nemesis-motions",
            req,
            format!("open {motion_id}"),
            &json(&open),
            deadline,
            attempt,
            first,
            0,
        )
        .await;
        let opened = matches!(open.outcome, Outcome::Ok { .. });
        let mut ops = MotionOps {
            motion_id: motion_id.clone(),
            open,
            close: None,
        };
        if opened {
            // Held open for a while, so kills and partitions find motions open.
            tokio::time::sleep(Duration::from_millis(rng.range(200, 1200))).await;
            let b = Binding {
                motion_id: &motion_id,
                debate_id: DEBATE,
                kind: MotionKind::Merge,
                state_hash: &hash,
            };
            // Under a charter an outcome answers the motion signed with the charter's
            // motion key, and every ruling binds that motion's digest (envelope v2).
            let signed = panel_proto::sign_motion(
                &motion_key,
                panel_proto::pb::Motion {
                    motion_id: motion_id.clone(),
                    debate_id: DEBATE.into(),
                    kind: ruling::wire_kind(MotionKind::Merge) as i32,
                    state_hash: hash.to_vec(),
                    panel: (0..5)
                        .map(|i| panel_proto::pb::PanelSeat {
                            public_key: key(i).verifying_key().to_bytes().to_vec(),
                            endpoint: String::new(),
                        })
                        .collect(),
                    ..Default::default()
                },
            );
            let digest = panel_proto::motion_digest(&signed);
            let rulings = (0..5)
                .map(|i| {
                    ruling::sign_answering(&key(i), &b, Decision::Yes, 0.8, None, Some(&digest))
                })
                .collect();
            let record: Command = TestCommand::RecordOutcome(OutcomeSubmission {
                motion_id: motion_id.clone(),
                rulings,
                reveals: vec![],
                motion: Some(panel_machine::rules::signed_motion::encode(&signed)),
            })
            .into();
            req += 1;
            ops.close = Some(
                send(
                    &shared,
                    &mut clients,
                    "nemesis-motions",
                    req,
                    format!("decide {motion_id}"),
                    &json(&record),
                    deadline,
                    attempt,
                    first + 1,
                    0,
                )
                .await,
            );
        }
        if let Some(c) = &ops.close
            && !matches!(c.outcome, Outcome::Ok { .. })
        {
            println!(
                "nemesis: motion {} not decided: {:?}",
                ops.motion_id, c.outcome
            );
        }
        out.push(ops);
    }
    out
}

/// Each motion's final state against what its client was told: an acknowledged open is
/// present, a failed one absent; an acknowledged decision is `Accepted`.
pub(crate) async fn check(
    shared: &Shared,
    cluster: &Cluster,
    leader: u64,
    motions: &[MotionOps],
) -> Result<usize, String> {
    let mut c = cluster.coordinator(leader).map_err(|e| e.to_string())?;
    let mut decided = 0;
    for m in motions {
        let q = serde_json::json!({ "Motion": { "motion_id": m.motion_id } }).to_string();
        // After the faults the group may still be settling (a leader confirming its
        // quorum again): a refused read is retried, and only a lasting refusal fails.
        let mut attempt = 0;
        let r = loop {
            match read(
                &mut c,
                &q,
                pb::ReadConsistency::Linearizable,
                Duration::from_secs(5),
            )
            .await
            {
                Ok(r) => break r,
                Err(e) if e.code() == tonic::Code::Unavailable && attempt < 20 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => {
                    return Err(format!("reading motion {}: {}", m.motion_id, e.message()));
                }
            }
        };
        let v: serde_json::Value =
            serde_json::from_str(&r.result_json).map_err(|e| e.to_string())?;
        let motion = &v["motion"];
        let bad = |why: String| lock(&shared.violations).push(Violation::Other(why));
        match (&m.open.outcome, motion.is_null()) {
            (Outcome::Ok { .. }, true) => {
                bad(format!("acknowledged motion {} is missing", m.motion_id))
            }
            (Outcome::Failed(_), false) => {
                bad(format!("motion {} reported failed exists", m.motion_id))
            }
            _ => {}
        }
        if let Some(close) = &m.close
            && let Outcome::Ok { .. } = close.outcome
        {
            if motion["status"]["Decided"]["Accepted"].is_object() {
                decided += 1;
            } else {
                bad(format!(
                    "motion {} was acknowledged as decided but is {}",
                    m.motion_id, motion["status"]
                ));
            }
        }
    }
    Ok(decided)
}
