//! A node submits its own reveals to the coordinator (docs/coordinator/state-machine.md "The
//! commit-reveal round"): after it reveals, it writes `SubmitReveal` to the replicas it
//! knows, so its ruling reaches the record even when the leader's driver never delivers
//! it. Apply accepts the reveal only if it opens the node's logged commitment, and a copy
//! the driver already submitted is refused as a duplicate, which changes nothing.
//!
//! The coordinator's `Coordinator.Write` is called with the node's own transport (mutual
//! TLS with its certificate, or the loopback debug mode), over one long-lived channel per
//! replica ([`Channels`]) rather than a connection per write, with the client generated
//! in `panel-proto` from the coordinator's schema (`proto/coordinator.proto`), so the node
//! needs no coordinator crate.

use std::time::Duration;

use panel_machine::ClientCommand;
use panel_proto::coordinator_pb::coordinator_client::CoordinatorClient;
use panel_proto::pb::Reveal;
use panel_transport::Peer;
use prost::Message;
use tracing::{Instrument, info, warn};

use crate::channels::Channels;

pub use panel_proto::coordinator_pb::{WriteReply, WriteRequest};

/// How many times the replicas are tried in turn before the node gives up (the driver
/// still collects the reveal in the common case, so a failure here is logged, not fatal).
const ATTEMPTS: u32 = 6;

/// The `SubmitReveal` write of one reveal: the command JSON and a request id derived from
/// the motion and the arbiter key, so retries (and a restarted node) apply at most once.
pub fn submit_request(
    client_id: &str,
    motion_id: &str,
    reveal: &Reveal,
) -> Result<WriteRequest, serde_json::Error> {
    let arbiter_key = reveal
        .signed_ruling
        .as_ref()
        .and_then(|s| s.ruling.as_ref())
        .map(|r| r.arbiter_key.clone())
        .unwrap_or_default();
    let command = ClientCommand::SubmitReveal {
        motion_id: motion_id.to_owned(),
        reveal: panel_machine::RevealBytes::new(reveal.encode_to_vec()),
    };
    let digest = <sha2::Sha256 as sha2::Digest>::digest(
        [
            b"submit-reveal\0".as_slice(),
            motion_id.as_bytes(),
            b"\0",
            &arbiter_key,
        ]
        .concat(),
    );
    let mut rid = [0u8; 8];
    rid.copy_from_slice(&digest[..8]);
    Ok(WriteRequest {
        client_id: client_id.to_owned(),
        request_id: u64::from_be_bytes(rid),
        command_json: serde_json::to_string(&command)?,
        ..WriteRequest::default()
    })
}

/// A write to one replica over its shared channel. The reveal is signed, but a relay
/// posing as a replica could drop it: the channel accepts the charter's replicas only.
async fn write_once(
    channels: &Channels,
    addr: &str,
    req: WriteRequest,
) -> Result<WriteReply, tonic::Status> {
    let channel = channels
        .get(addr, Peer::Replicas, |e| e.timeout(Duration::from_secs(10)))
        .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
    let reply = CoordinatorClient::new(channel)
        .write(tonic::Request::new(req))
        .await;
    reply
        .map(tonic::Response::into_inner)
        .map_err(|s| match s.code() {
            // No connection (or it broke): the next attempt starts from a new channel.
            tonic::Code::Unavailable => {
                channels.forget(addr, &Peer::Replicas);
                tonic::Status::unavailable(crate::exchange::describe(&s))
            }
            _ => s,
        })
}

/// Writes the reveal to `coordinators` in the background, trying each in turn.
pub fn spawn_submit(channels: Channels, coordinators: Vec<String>, req: WriteRequest) {
    spawn_write(channels, coordinators, req, "own reveal");
}

/// Writes one of the node's own signed writes (`what`, for the log) to `coordinators` in
/// the background, trying each in turn.
pub fn spawn_write(
    channels: Channels,
    coordinators: Vec<String>,
    req: WriteRequest,
    what: &'static str,
) {
    if coordinators.is_empty() {
        return;
    }
    let span = tracing::info_span!("own_write", what, request = req.request_id);
    tokio::spawn(
        async move {
            let mut last = String::new();
            for attempt in 0..ATTEMPTS * coordinators.len() as u32 {
                let addr = &coordinators[attempt as usize % coordinators.len()];
                match write_once(&channels, addr, req.clone()).await {
                    Ok(r) if r.applied => {
                        info!(log_index = r.log_index, "{what} stored by the coordinator");
                        return;
                    }
                    Ok(r) => {
                        // Refused in apply: most often the driver's copy came first.
                        info!(reply = %r.result_json, "{what} not stored");
                        return;
                    }
                    Err(s) if s.code() == tonic::Code::Unavailable => {
                        last = s.message().to_owned();
                        tokio::time::sleep(Duration::from_millis(100 << attempt.min(4))).await;
                    }
                    Err(s) => {
                        warn!(%addr, error = %s.message(), "{what} refused");
                        return;
                    }
                }
            }
            warn!(error = %last, "{what} not submitted: no coordinator answered");
        }
        .instrument(span),
    );
}
