//! The JSON client API (`crucible.coordinator.v1.Coordinator`): `Write`, `WriteStream`,
//! `Read`, `Status`, `WatchEvents`, over the replica core.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;
use tonic::{Request, Response, Status};

use crate::pb::coordinator as pb;
use crate::pb::coordinator::coordinator_server::Coordinator;
use crate::raft;
use crate::service::replica::{Replica, local_query, signed_export_at, submit};
use panel_machine::Query;

pub(crate) struct CoordinatorService(pub(crate) Arc<Replica>);

type WriteReplyStream = Pin<Box<dyn Stream<Item = Result<pb::WriteStreamReply, Status>> + Send>>;

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    async fn write(
        &self,
        request: Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let caller = self.0.identities.caller(&request);
        submit(&self.0, request.into_inner(), &caller)
            .await
            .map(Response::new)
    }

    type WriteStreamStream = WriteReplyStream;

    async fn write_stream(
        &self,
        request: Request<tonic::Streaming<pb::WriteRequest>>,
    ) -> Result<Response<WriteReplyStream>, Status> {
        // One stream, one caller: its certificate limits every write it carries.
        let caller = Arc::new(self.0.identities.caller(&request));
        let mut incoming = request.into_inner();
        let replica = self.0.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            // Each request is handled on its own task, so one slow write never holds up the
            // others and the proposer can batch everything in flight into one entry.
            while let Some(next) = incoming.next().await {
                let Ok(req) = next else { break };
                let (replica, tx, caller) = (replica.clone(), tx.clone(), caller.clone());
                tokio::spawn(async move {
                    let (client_id, request_id) = (req.client_id.clone(), req.request_id);
                    let reply = match submit(&replica, req, &caller).await {
                        Ok(r) => pb::WriteStreamReply {
                            client_id,
                            request_id,
                            reply: Some(r),
                            ..Default::default()
                        },
                        Err(st) => pb::WriteStreamReply {
                            client_id,
                            request_id,
                            reply: None,
                            error_code: st.code() as i32,
                            error_message: st.message().to_string(),
                        },
                    };
                    let _ = tx.send(Ok(reply)).await;
                });
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn read(
        &self,
        request: Request<pb::ReadRequest>,
    ) -> Result<Response<pb::ReadReply>, Status> {
        let req = request.into_inner();
        let query: Query = serde_json::from_str(&req.query_json).map_err(|e| {
            Status::invalid_argument(format!(
                "query_json is not a Query ({e}); example: {{\"Notes\":{{\"topic\":\"t\"}}}}"
            ))
        })?;
        // Linearizable unless the caller opts into a local read (an unknown value is
        // treated as the default, never as permission to be stale).
        let consistency = pb::ReadConsistency::try_from(req.consistency)
            .unwrap_or(pb::ReadConsistency::Linearizable);
        let linearizable = self.0.read_barrier(consistency).await?;
        // The export is answered signed by the log key, built once at one applied index.
        let (value, applied) = if matches!(query, Query::Export) {
            let (bundle, applied) = signed_export_at(&self.0)?;
            let value = serde_json::to_value(bundle)
                .map_err(|e| Status::internal(format!("export: {e}")))?;
            (value, applied)
        } else {
            local_query(&self.0, &query)
        };
        Ok(Response::new(pb::ReadReply {
            result_json: value.to_string(),
            applied_index: applied,
            linearizable,
        }))
    }

    async fn read_index(
        &self,
        _request: Request<pb::ReadIndexRequest>,
    ) -> Result<Response<pb::ReadIndexReply>, Status> {
        let (leader, term) = {
            let m = self.0.raft.metrics();
            let m = m.borrow();
            (m.current_leader, m.current_term)
        };
        if leader != Some(self.0.id) {
            return Err(Status::unavailable(format!(
                "replica {} is not the leader (leader: {leader:?}); ask the leader for a read index",
                self.0.id
            )));
        }
        let read_index = self.0.leader_read_index().await?;
        Ok(Response::new(pb::ReadIndexReply {
            read_index,
            leader_id: self.0.id,
            term,
        }))
    }

    async fn status(
        &self,
        _request: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusReply>, Status> {
        let s = raft::status(&self.0.raft);
        Ok(Response::new(pb::StatusReply {
            node_id: s.node_id,
            role: s.role,
            term: s.term,
            has_leader: s.leader.is_some(),
            leader_id: s.leader.unwrap_or(0),
            leader_addr: s.leader_addr.unwrap_or_default(),
            last_log_index: s.last_log_index,
            last_applied: s.last_applied,
            snapshot_index: s.snapshot_index,
            purged_index: s.purged_index,
            voters: s.voters,
            learners: s.learners,
            nodes_json: serde_json::to_string(&s.nodes).unwrap_or_default(),
        }))
    }

    type WatchEventsStream = EventStream;

    async fn watch_events(
        &self,
        _request: Request<pb::WatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let rx = self.0.sm.subscribe();
        let stream = BroadcastStream::new(rx).filter_map(|ev| match ev {
            Ok(ev) => Some(Ok(pb::Event {
                log_index: ev.log_index,
                kind: ev.kind,
                detail_json: serde_json::to_string(&ev.reply).unwrap_or_default(),
            })),
            // A slow subscriber skips events rather than stalling the state machine.
            Err(_) => None,
        });
        Ok(Response::new(Box::pin(stream)))
    }
}
