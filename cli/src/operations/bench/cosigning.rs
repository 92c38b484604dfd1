//! Watching the witnesses: the log's checkpoints read from a follower (local reads) every
//! [`POLL`], each remembered with the time it was first seen cosigned by every charter
//! witness. A decision counts as witnessed when a checkpoint issued after its close is.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::Query;
use panel_machine::features::checkpoints::CheckpointsReply;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

use super::clock::unix_ms;
use super::timeline::Cosigned;

/// How often the checkpoints are read: the resolution of the cosigned milestone.
pub const POLL: Duration = Duration::from_millis(50);
/// Checkpoints read per poll: more than are issued between two polls under load.
const LATEST: usize = 64;
/// How long the watch goes on after the load for the last decisions' checkpoint.
const PATIENCE_MS: u64 = 20_000;

/// A running watch of the checkpoints.
pub struct Watch {
    /// 0 while the load runs; then the close time the watch must see a checkpoint after.
    until: Arc<AtomicU64>,
    task: JoinHandle<Result<Vec<Cosigned>>>,
}

/// Starts watching through `reader`.
pub fn start(reader: CoordinatorClient<Channel>) -> Watch {
    let until = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn(watch(reader, Arc::clone(&until)));
    Watch { until, task }
}

impl Watch {
    /// Ends the watch once a checkpoint issued after `last_close_ms` is seen cosigned (or
    /// after [`PATIENCE_MS`]); returns every cosigned checkpoint seen.
    pub async fn finish(self, last_close_ms: u64) -> Result<Vec<Cosigned>> {
        self.until.store(last_close_ms.max(1), Ordering::Relaxed);
        self.task.await.context("the checkpoint watch panicked")?
    }
}

async fn watch(
    mut reader: CoordinatorClient<Channel>,
    until: Arc<AtomicU64>,
) -> Result<Vec<Cosigned>> {
    let q = Query::Checkpoints {
        limit: Some(LATEST),
    };
    let mut seen: BTreeMap<u64, Cosigned> = BTreeMap::new();
    let mut stop_by: Option<u64> = None;
    loop {
        let r = panel_coordinator::client::read_on(&mut reader, &q, false).await?;
        let now = unix_ms();
        let reply: CheckpointsReply = serde_json::from_str(&r.result_json)?;
        let witnesses = reply.witnesses.len().max(1);
        for c in reply.checkpoints {
            if c.cosigned_by.len() >= witnesses {
                seen.entry(c.size).or_insert(Cosigned {
                    issued_ms: c.time_ms,
                    seen_ms: now,
                });
            }
        }
        let target = until.load(Ordering::Relaxed);
        if target > 0 {
            let deadline = *stop_by.get_or_insert(now + PATIENCE_MS);
            if now >= deadline || seen.values().any(|c| c.issued_ms > target) {
                return Ok(seen.into_values().collect());
            }
        }
        tokio::time::sleep(POLL).await;
    }
}
