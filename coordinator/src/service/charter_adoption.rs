//! Bringing a replica's charter into the log (docs/SECURITY.md, "Charter and
//! registrations"). A replica started with `--charter` proposes it as the group's first
//! entry whenever it leads a group that has none yet, and holds client writes back until
//! the group is chartered, so no registration can slip in ahead of the charter's rules. A
//! replica whose charter differs from the one the group adopted refuses client writes: its
//! operator gave it the wrong file.

use std::sync::Arc;
use std::time::Duration;

use panel_transport::Charter;
use tonic::Status;
use tracing::{info, warn};

use crate::raft::{NodeId, Raft, StateMachineStore};
use crate::service::proposer::Proposer;
use panel_machine::{InternalCommand, Item};

/// The reserved client id under which the charter is proposed.
pub const CHARTER_CLIENT_ID: &str = "charter";

/// What this replica knows of the group's charter against its own.
pub(crate) enum Standing {
    /// The group has adopted this replica's charter (or neither has one).
    Agreed,
    /// This replica has a charter; the group none yet.
    Pending,
    /// The group adopted another charter than this replica's, or has one while this
    /// replica has none.
    Differs,
}

fn standing(sm: &StateMachineStore, mine: Option<&Charter>) -> Standing {
    sm.read(|a| match (&a.state.charter, mine) {
        (Some(adopted), Some(mine)) if adopted == mine => Standing::Agreed,
        (None, None) => Standing::Agreed,
        (None, Some(_)) => Standing::Pending,
        _ => Standing::Differs,
    })
}

/// Refuses a client write while the group is not chartered under this replica's charter.
pub(crate) fn write_gate(sm: &StateMachineStore, mine: Option<&Charter>) -> Result<(), Status> {
    gate_of(standing(sm, mine))
}

/// The refusal, if any, of a client write under `standing`.
pub(crate) fn gate_of(standing: Standing) -> Result<(), Status> {
    match standing {
        Standing::Agreed => Ok(()),
        Standing::Pending => Err(Status::unavailable(
            "the group is adopting its federation charter (the first record entry); retry in a moment",
        )),
        Standing::Differs => Err(Status::failed_precondition(
            "this replica's --charter is not the charter the group adopted; restart it with the \
             group's charter.json (`panel coordinator run --charter FILE`, docs/SECURITY.md)",
        )),
    }
}

/// While this replica leads a group without a charter, proposes its own (same ids every
/// time, so repeated proposals by successive leaders apply once).
pub(crate) fn spawn(
    id: NodeId,
    raft: Raft,
    sm: StateMachineStore,
    proposer: Proposer,
    charter: Arc<Charter>,
) {
    tokio::spawn(async move {
        loop {
            match standing(&sm, Some(&charter)) {
                Standing::Agreed => {
                    info!("the group's federation charter is adopted");
                    return;
                }
                Standing::Differs => {
                    warn!("the group adopted another federation charter than this replica's");
                    return;
                }
                Standing::Pending => {}
            }
            let leads = raft.metrics().borrow().current_leader == Some(id);
            let empty = sm.read(|a| a.state.record.is_empty());
            if leads && empty {
                let item = Item {
                    client_id: CHARTER_CLIENT_ID.into(),
                    request_id: 0,
                    command: InternalCommand::AdoptCharter(Box::new((*charter).clone())).into(),
                    writer: None,
                };
                let bytes = serde_json::to_vec(&*charter).map_or(0, |b| b.len());
                if let Err(e) = proposer.submit(item, bytes).await {
                    warn!("charter not proposed yet: {e}");
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
