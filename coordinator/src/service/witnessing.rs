//! The leader's checkpoint duties (docs/SECURITY.md "The record"): it proposes
//! `IssueCheckpoint` when the cadence's time is up for entries no checkpoint covers yet;
//! under a quorum log it collects the replicas' own log signatures over the latest
//! checkpoint (`Replica.SignCheckpoint`, each replica signing the body its own applied
//! state computed) and logs them as `AddCosignatures`; then it
//! pushes the latest checkpoint to every configured witness (tlog-witness `add-checkpoint`,
//! with the consistency proof from the size that witness holds), proposing the cosignatures
//! it gets back as `AddCosignatures`. Apply verifies each cosignature against the charter's
//! witness keys, so this loop is trusted with liveness only: it can delay or withhold
//! cosignatures, never forge one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use panel_machine::features::checkpoints::{self, Cadence, Cosignatures};
use panel_tlog::NoteSigner;
use panel_tlog::witness::AddCheckpoint;
use panel_witness::client::{SubmitError, add_checkpoint};
use tracing::{info, warn};

use crate::raft::{NodeId, Raft, StateMachineStore};
use crate::service::proposer::Proposer;
use panel_machine::{InternalCommand, Item};

/// How long one witness may take to answer.
const WITNESS_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait before asking a witness that failed again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// What the loop needs from its replica.
pub struct Witnessing {
    pub id: NodeId,
    pub raft: Raft,
    pub sm: StateMachineStore,
    pub proposer: Proposer,
    pub log_key: NoteSigner,
    pub cadence: Cadence,
    /// Counts the checkpoints a witness did not cosign (`panel_witness_cosignature_failures_total`).
    pub metrics: std::sync::Arc<crate::service::metrics::ReplicaMetrics>,
    /// The connections this replica asks the others for their log signatures over.
    pub replicas: crate::raft::network::PinnedClients,
}

/// How long a replica may take to sign a checkpoint.
const SIGN_TIMEOUT: Duration = Duration::from_secs(2);

/// The leader's progress collecting log signatures for one checkpoint.
#[derive(Debug, Default)]
struct Signing {
    /// The size last proposed for, and when to ask again if the quorum is still short.
    size: u64,
    retry_at: Option<Instant>,
}

/// What this leader knows of one witness.
#[derive(Debug, Default)]
struct WitnessView {
    /// The size the witness holds for our log, as far as we know (0 at first; a 409
    /// corrects it).
    held: u64,
    /// The largest size it cosigned for us.
    cosigned: u64,
    /// Not before this instant after a failure.
    retry_at: Option<Instant>,
}

/// Starts the loop; it acts only while this replica leads.
pub fn spawn(w: Witnessing, urls: Vec<String>) {
    tokio::spawn(async move {
        let mut views: HashMap<String, WitnessView> = urls
            .iter()
            .map(|u| (u.clone(), WitnessView::default()))
            .collect();
        let mut tick_proposed_at_size = 0u64;
        let mut window_proposed: Option<(u64, Instant)> = None;
        let mut signing = Signing::default();
        let mut was_leader = false;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let leads = w.raft.metrics().borrow().current_leader == Some(w.id);
            if !leads {
                was_leader = false;
                continue;
            }
            if !was_leader {
                // A new term: what the previous leader told the witnesses is unknown here.
                for v in views.values_mut() {
                    *v = WitnessView::default();
                }
                was_leader = true;
            }
            tick(&w, &mut tick_proposed_at_size).await;
            close_windows(&w, &mut window_proposed).await;
            collect_log_signatures(&w, &mut signing).await;
            for (url, view) in views.iter_mut() {
                push(&w, url, view).await;
            }
        }
    });
}

/// Proposes `IssueCheckpoint` once the cadence's time is up for uncovered entries.
async fn tick(w: &Witnessing, proposed_at_size: &mut u64) {
    let (due, size) = w.sm.read(|a| {
        (
            checkpoints::due_at(&a.state, &w.cadence),
            a.state.record.len(),
        )
    });
    if due.is_some_and(|t| crate::clock::now_ms() >= t) && size > *proposed_at_size {
        *proposed_at_size = size;
        propose(w, InternalCommand::IssueCheckpoint).await;
    }
}

/// An appeal window closes at a time, not at an entry: when the earliest one is past and
/// no batch has come since, proposes an `IssueCheckpoint` (a no-op when nothing is
/// uncovered) so apply moves the statuses on an idle log too (machine `finality.rs`).
/// Asked again after [`RETRY_AFTER`] if the window is still due (a batch stamped a hair
/// early by a lagging clock).
async fn close_windows(w: &Witnessing, proposed: &mut Option<(u64, Instant)>) {
    let due =
        w.sm.read(|a| a.state.finality.due.iter().next().map(|(t, _)| *t));
    let Some(t) = due.filter(|t| crate::clock::now_ms() >= *t) else {
        return;
    };
    if proposed.is_some_and(|(p, at)| p == t && at.elapsed() < RETRY_AFTER) {
        return;
    }
    *proposed = Some((t, Instant::now()));
    propose(w, InternalCommand::IssueCheckpoint).await;
}

async fn propose(w: &Witnessing, command: InternalCommand) {
    let item = Item {
        client_id: String::new(),
        request_id: 0,
        command: command.into(),
        writer: None,
    };
    if let Err(e) = w.proposer.submit(item, 0).await {
        warn!("checkpoint bookkeeping not proposed: {e}");
    }
}

/// Under a quorum log, while the latest checkpoint lacks the quorum's signatures: signs
/// it with this replica's key, asks every other member for its signature, checks each
/// line against that replica's charter key (a bad line would make apply refuse the
/// whole entry), and proposes the new ones. Apply checks them again.
async fn collect_log_signatures(w: &Witnessing, signing: &mut Signing) {
    let wanted = w.sm.read(|a| {
        let st = &a.state;
        // Only a quorum log collects signatures; a single-key log signs for itself.
        st.charter.as_ref()?.log_quorum()?;
        let cp = checkpoints::latest(st)?;
        if checkpoints::log_signed(st, cp).is_some() {
            return None;
        }
        let recorded: Vec<panel_tlog::SignatureLine> = cp
            .log_signatures
            .iter()
            .filter_map(|l| panel_tlog::SignatureLine::parse(l).ok())
            .collect();
        let charter = st.charter.as_ref()?;
        let missing: Vec<(NodeId, panel_tlog::VerifierKey)> = charter
            .replicas
            .iter()
            .filter_map(|r| {
                let key = panel_tlog::VerifierKey::parse(r.log_vkey.as_deref()?).ok()?;
                (!recorded.iter().any(|l| key.matches(l))).then_some((r.id, key))
            })
            .collect();
        Some((cp.size, checkpoints::body(st, cp), missing))
    });
    let Some((size, body, missing)) = wanted else {
        return;
    };
    if signing.size == size && signing.retry_at.is_some_and(|t| Instant::now() < t) {
        return;
    }
    let members = crate::raft::status(&w.raft).nodes;
    let mut lines = Vec::new();
    for (id, key) in &missing {
        let line = if *id == w.id {
            Some(w.log_key.sign(&body).to_line().trim_end().to_string())
        } else if let Some(member) = members.get(id) {
            match w
                .replicas
                .sign_checkpoint(*id, &member.addr, size, SIGN_TIMEOUT)
                .await
            {
                Ok(line) => Some(line),
                Err(e) => {
                    info!(
                        "replica {id} did not sign checkpoint {size} (yet): {}",
                        e.message()
                    );
                    None
                }
            }
        } else {
            None
        };
        let Some(line) = line else { continue };
        match panel_tlog::SignatureLine::parse(&line) {
            Ok(l) if key.matches(&l) && key.verifies(&body, &l.signature) => lines.push(line),
            _ => warn!("replica {id} answered checkpoint {size} with a line its key did not make"),
        }
    }
    signing.size = size;
    signing.retry_at = Some(Instant::now() + RETRY_AFTER);
    if !lines.is_empty() {
        propose(
            w,
            InternalCommand::AddCosignatures(Cosignatures { size, lines }),
        )
        .await;
    }
}

/// Pushes the latest checkpoint to one witness if it has not cosigned it yet.
async fn push(w: &Witnessing, url: &str, view: &mut WitnessView) {
    if view.retry_at.is_some_and(|t| Instant::now() < t) {
        return;
    }
    let request = w.sm.read(|a| {
        let st = &a.state;
        let cp = checkpoints::latest(st)?;
        if cp.size <= view.cosigned || view.held > cp.size {
            return None;
        }
        // Under a quorum log a witness refuses a checkpoint the quorum has not signed.
        if !checkpoints::ready_for_witnesses(st, cp) {
            return None;
        }
        let proof = if view.held == 0 {
            Vec::new()
        } else {
            st.tree.consistency_proof(view.held, cp.size).ok()?
        };
        let note = checkpoints::log_note(st, cp, Some(&w.log_key));
        Some((
            cp.size,
            AddCheckpoint {
                old_size: view.held,
                proof,
                checkpoint: note,
            },
        ))
    });
    let Some((size, req)) = request else { return };
    match add_checkpoint(url, &req, WITNESS_TIMEOUT).await {
        Ok(lines) => {
            view.held = size;
            view.cosigned = size;
            view.retry_at = None;
            let lines = lines
                .iter()
                .map(|l| l.to_line().trim_end().to_string())
                .collect();
            propose(
                w,
                InternalCommand::AddCosignatures(Cosignatures { size, lines }),
            )
            .await;
        }
        Err(SubmitError::Conflict { size: held }) => {
            info!("witness {url} holds size {held}; resending from there");
            view.held = held;
        }
        Err(e) => {
            warn!("witness {url} did not cosign checkpoint {size}: {e}");
            w.metrics.witness_failed(url);
            view.retry_at = Some(Instant::now() + RETRY_AFTER);
        }
    }
}
