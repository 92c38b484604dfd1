//! The leader's checkpoint duties (docs/SECURITY.md "The record"): it proposes
//! `IssueCheckpoint` when the cadence's time is up for entries no checkpoint covers yet, and
//! pushes the latest checkpoint to every configured witness (tlog-witness `add-checkpoint`,
//! with the consistency proof from the size that witness holds), proposing the cosignatures
//! it gets back as `AddCosignatures`. Apply verifies each cosignature against the charter's
//! witness keys, so this loop is trusted with liveness only: it can delay or withhold
//! cosignatures, never forge one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use panel_machine::checkpoints::{self, Cadence, Cosignatures};
use panel_tlog::NoteSigner;
use panel_tlog::witness::AddCheckpoint;
use panel_witness::client::{SubmitError, add_checkpoint};
use tracing::{info, warn};

use crate::command::{InternalCommand, Item};
use crate::raft::{NodeId, Raft, StateMachineStore};
use crate::service::proposer::Proposer;

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
        let proof = if view.held == 0 {
            Vec::new()
        } else {
            st.tree.consistency_proof(view.held, cp.size).ok()?
        };
        let mut note = checkpoints::note(st, cp, Some(&w.log_key));
        note.signatures.truncate(1);
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
