//! Operator administration (`Admin`): membership (`Init`, `AddLearner`,
//! `ChangeMembership`) and the hot backup (`Backup`, docs/coordinator/storage.md "Backup, restore
//! and a lost quorum"). Under TLS only the charter's operators reach it (`serve.rs`).

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;

use tonic::{Request, Response, Status};

use crate::pb::coordinator as pb;
use crate::pb::coordinator::admin_server::Admin;
use crate::raft::{self, Member, NodeId};
use crate::service::replica::Replica;

pub(crate) struct AdminService(pub(crate) Arc<Replica>);

impl AdminService {
    /// Under TLS, a membership change may name only replicas of the federation charter:
    /// an operator cannot bring in a replica whose certificate no organisation listed
    /// (and such a replica could not call the others' `Replica` service anyway).
    fn check_listed(&self, ids: impl IntoIterator<Item = NodeId>) -> Result<(), Status> {
        let Some(charter) = self.0.transport.charter() else {
            return Ok(());
        };
        for id in ids {
            if !charter.has_replica(id) {
                return Err(Status::permission_denied(format!(
                    "replica {id} is not in the federation charter; membership may name only \
                     the charter's replicas (issue its certificate and list it first)"
                )));
            }
        }
        Ok(())
    }

    /// Under a charter, a change of voters must be the one member organisations
    /// authorised on record (`AuthoriseMembership`, docs/SECURITY.md "Membership"): one
    /// operator alone cannot choose the voters. Read after a barrier, so an
    /// authorisation acknowledged anywhere is seen.
    async fn check_authorised(&self, voters: &BTreeSet<NodeId>) -> Result<(), Status> {
        if self.0.transport.charter().is_none() {
            return Ok(());
        }
        self.0
            .read_barrier(pb::ReadConsistency::Linearizable)
            .await?;
        let wanted: Vec<u64> = voters.iter().copied().collect();
        self.0.sm.read(|a| {
            let state = &a.state;
            let latest = panel_machine::features::membership::authorised_voters(state);
            if latest.is_some_and(|c| c.voters == wanted) {
                return Ok(());
            }
            let required = state.charter.as_ref().map_or(1, |c| {
                panel_machine::features::membership::required_endorsers(
                    c,
                    panel_machine::features::charter_rules::organisations(state).count(),
                )
            });
            let latest = match latest {
                Some(c) => format!(
                    "the latest authorised change is seq {} to voters {:?}",
                    c.seq, c.voters
                ),
                None => "no change has been authorised yet".to_owned(),
            };
            Err(Status::permission_denied(format!(
                "no membership change to voters {wanted:?} is authorised on record ({latest}); \
                 a change of voters needs the endorsements of {required} distinct member \
                 organisations: each signs it with `panel org endorse-membership --seq {next} \
                 --voters {list}`, then `panel org authorise-membership` submits it, then \
                 retry",
                next = state.membership.len() + 1,
                list = wanted
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )))
        })
    }

    /// Under a charter, the first voters must span the charter's organisations floor.
    fn check_initial(&self, ids: &[NodeId]) -> Result<(), Status> {
        let Some(charter) = self.0.transport.charter() else {
            return Ok(());
        };
        let mut voters = ids.to_vec();
        voters.sort_unstable();
        voters.dedup();
        panel_machine::features::membership::voter_organisations(&charter, &voters)
            .map_err(|e| Status::permission_denied(e.to_string()))
    }
}

fn admin_error(e: impl std::fmt::Display) -> Status {
    Status::failed_precondition(format!(
        "{e}; membership changes must reach the leader (see `panel coordinator status`)"
    ))
}

fn admin_reply<T: serde::Serialize>(v: &T) -> Response<pb::AdminReply> {
    Response::new(pb::AdminReply {
        detail_json: serde_json::to_string(v).unwrap_or_default(),
    })
}

/// Bytes per streamed backup chunk: well under the gRPC message cap, large enough that
/// a backup of a few hundred MB is a few hundred messages.
const BACKUP_CHUNK: usize = 1 << 20;

type BackupStream = Pin<Box<dyn Stream<Item = Result<pb::BackupChunk, Status>> + Send>>;

/// Copies the applied state and encodes it as a backup file, off the async workers (the
/// encoding of a large state takes a while). The copy is taken between two applies, as a
/// snapshot's is, so it is one consistent state.
async fn backup_bytes(replica: &Replica, linearizable: bool) -> Result<Vec<u8>, Status> {
    let sm = replica.sm.clone();
    let id = replica.id;
    let taken_at_ms = crate::clock::now_ms();
    tokio::task::spawn_blocking(move || {
        let copy = sm
            .whole_copy()
            .map_err(|e| Status::internal(format!("backup: {e}")))?;
        let (state, last) = (copy.state, copy.last_applied);
        let json = serde_json::to_vec(&state)
            .map_err(|e| Status::internal(format!("the state does not encode: {e}")))?;
        crate::backup::encode(id, last, taken_at_ms, linearizable, &state, json).map_err(
            |e| match e {
                crate::backup::BackupError::Empty => Status::failed_precondition(e.to_string()),
                other => Status::internal(other.to_string()),
            },
        )
    })
    .await
    .map_err(|e| Status::internal(format!("backup encoding failed: {e}")))?
}

#[tonic::async_trait]
impl Admin for AdminService {
    type BackupStream = BackupStream;

    async fn backup(
        &self,
        request: Request<pb::BackupRequest>,
    ) -> Result<Response<Self::BackupStream>, Status> {
        let consistency = if request.into_inner().local {
            pb::ReadConsistency::Local
        } else {
            pb::ReadConsistency::Linearizable
        };
        let linearizable = self.0.read_barrier(consistency).await.map_err(|e| {
            Status::new(
                e.code(),
                format!(
                    "{}; a backup of this replica's state as it is needs --local (it may miss \
                     writes acknowledged elsewhere)",
                    e.message()
                ),
            )
        })?;
        let bytes = backup_bytes(&self.0, linearizable).await?;
        let chunks: Vec<Result<pb::BackupChunk, Status>> = bytes
            .chunks(BACKUP_CHUNK)
            .map(|c| Ok(pb::BackupChunk { data: c.to_vec() }))
            .collect();
        Ok(Response::new(Box::pin(futures::stream::iter(chunks))))
    }

    async fn init(
        &self,
        request: Request<pb::InitRequest>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let members: Vec<(NodeId, String)> = request
            .into_inner()
            .members
            .into_iter()
            .map(|m| (m.id, m.addr))
            .collect();
        if members.is_empty() {
            return Err(Status::invalid_argument(
                "init needs at least one member, e.g. 1=127.0.0.1:7001",
            ));
        }
        self.check_listed(members.iter().map(|(id, _)| *id))?;
        self.check_initial(&members.iter().map(|(id, _)| *id).collect::<Vec<_>>())?;
        self.0
            .raft
            .initialize(raft::members(&members))
            .await
            .map_err(admin_error)?;
        Ok(admin_reply(&serde_json::json!({ "initialized": members })))
    }

    async fn add_learner(
        &self,
        request: Request<pb::AddLearnerRequest>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let m = request
            .into_inner()
            .member
            .ok_or_else(|| Status::invalid_argument("add-learner needs a member (id and addr)"))?;
        self.check_listed([m.id])?;
        let resp = self
            .0
            .raft
            .add_learner(m.id, Member { addr: m.addr }, true)
            .await
            .map_err(admin_error)?;
        Ok(admin_reply(
            &serde_json::json!({ "log_id": resp.log_id, "membership": resp.membership }),
        ))
    }

    async fn change_membership(
        &self,
        request: Request<pb::ChangeMembershipRequest>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let req = request.into_inner();
        let voters: BTreeSet<NodeId> = req.voters.into_iter().collect();
        if voters.is_empty() {
            return Err(Status::invalid_argument(
                "change-membership needs at least one voter",
            ));
        }
        self.check_listed(voters.iter().copied())?;
        self.check_authorised(&voters).await?;
        let resp = self
            .0
            .raft
            .change_membership(voters, req.retain)
            .await
            .map_err(admin_error)?;
        Ok(admin_reply(
            &serde_json::json!({ "log_id": resp.log_id, "membership": resp.membership }),
        ))
    }
}
