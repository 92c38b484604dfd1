//! Membership administration (`Admin`: `Init`, `AddLearner`, `ChangeMembership`).

use std::collections::BTreeSet;
use std::sync::Arc;

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

#[tonic::async_trait]
impl Admin for AdminService {
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
