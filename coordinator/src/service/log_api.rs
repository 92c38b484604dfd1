//! The `Log` service (docs/WIRE.md "Transparency log"): the log's checkpoints, one entry's
//! offline proof and consistency proofs, answered from this replica's applied state and
//! signed with the log key. Anyone may read them: they are what monitors and verifiers
//! check the cluster against.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::pb::coordinator as pb;
use crate::pb::coordinator::log_server::Log;
use crate::service::replica::Replica;

pub(crate) struct LogService(pub(crate) Arc<Replica>);

#[tonic::async_trait]
impl Log for LogService {
    async fn get_checkpoint(
        &self,
        request: Request<pb::CheckpointRequest>,
    ) -> Result<Response<pb::CheckpointReply>, Status> {
        let size = request.into_inner().size;
        let replica = &self.0;
        replica.sm.read(|a| {
            let st = &a.state;
            let cp = if size == 0 {
                panel_machine::features::checkpoints::latest(st)
            } else {
                panel_machine::features::checkpoints::at_size(st, size)
            }
            .ok_or_else(|| {
                Status::not_found(if size == 0 {
                    "no checkpoint is issued yet; one follows the first entries".to_string()
                } else {
                    format!("no checkpoint of size {size} was issued; ask for 0 (the latest)")
                })
            })?;
            let note = panel_machine::features::checkpoints::note(st, cp, Some(&replica.log_key));
            Ok(Response::new(pb::CheckpointReply {
                note: note.to_text(),
                size: cp.size,
                log_vkey: replica.log_key.verifier().to_string(),
                origin: replica.log_key.name().to_string(),
            }))
        })
    }

    async fn get_entry_proof(
        &self,
        request: Request<pb::EntryProofRequest>,
    ) -> Result<Response<pb::EntryProofReply>, Status> {
        let seq = request.into_inner().seq;
        let replica = &self.0;
        let entry = replica
            .sm
            .record_entry(seq)
            .map_err(|e| Status::internal(format!("entry {seq}: {e}")))?;
        let len = replica.sm.read(|a| a.state.record.len());
        let entry = entry.ok_or_else(|| {
            Status::not_found(
                panel_machine::read::entry_proof::EntryProofError::NoEntry { seq, len }.to_string(),
            )
        })?;
        replica.sm.read(|a| {
            panel_machine::read::entry_proof::prove_entry(&a.state, &entry, Some(&replica.log_key))
                .map(|b| {
                    Response::new(pb::EntryProofReply {
                        bundle: b.to_text(),
                    })
                })
                .map_err(|e| Status::not_found(e.to_string()))
        })
    }

    async fn get_consistency(
        &self,
        request: Request<pb::ConsistencyRequest>,
    ) -> Result<Response<pb::ConsistencyReply>, Status> {
        let r = request.into_inner();
        self.0.sm.read(|a| {
            a.state
                .tree
                .consistency_proof(r.old_size, r.new_size)
                .map(|hashes| {
                    Response::new(pb::ConsistencyReply {
                        hashes: hashes.iter().map(|h| h.to_vec()).collect(),
                    })
                })
                .map_err(|e| {
                    Status::invalid_argument(format!(
                        "{e} (this replica's log has {} entries)",
                        a.state.tree.len()
                    ))
                })
        })
    }
}
