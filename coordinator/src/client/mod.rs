//! Client side of the coordinator API, used by the `panel coordinator` commands and the
//! bench: connect, write with retries (same request id, so at most once), read, status and
//! membership admin routed to the leader; [`failover`] is the whole cluster as one
//! client, for the user's commands.

pub mod failover;

use std::time::Duration;

use panel_transport::{Transport, TransportError};
use tonic::transport::Channel;

use crate::pb::coordinator as pb;
use crate::pb::coordinator::admin_client::AdminClient;
use crate::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::{Command, Query};

const MAX_MESSAGE: usize = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("{0}")]
    Rpc(#[from] tonic::Status),
    #[error("cannot encode the request: {0}")]
    Json(#[from] serde_json::Error),
    #[error("gave up after {tries} tries over {secs} s; last error: {last}")]
    GaveUp { tries: u32, secs: u64, last: String },
}

/// A lazily connected channel to the replica at `addr` (host:port) over `transport`:
/// pinned to the charter's replicas when `transport` holds the charter
/// ([`Transport::replica_peer`]).
pub fn channel(transport: &Transport, addr: &str) -> Result<Channel, ClientError> {
    Ok(transport
        .endpoint_pinned(addr, transport.replica_peer())?
        .connect_lazy())
}

pub fn coordinator(
    transport: &Transport,
    addr: &str,
) -> Result<CoordinatorClient<Channel>, ClientError> {
    Ok(CoordinatorClient::new(channel(transport, addr)?)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE))
}

/// A client of the record's transparency log (`Log` service) at `addr`.
pub fn log(
    transport: &Transport,
    addr: &str,
) -> Result<pb::log_client::LogClient<Channel>, ClientError> {
    Ok(pb::log_client::LogClient::new(channel(transport, addr)?)
        .max_decoding_message_size(MAX_MESSAGE))
}

pub async fn status(transport: &Transport, addr: &str) -> Result<pb::StatusReply, ClientError> {
    Ok(coordinator(transport, addr)?
        .status(pb::StatusRequest {})
        .await?
        .into_inner())
}

/// An admin client on the leader, found through `addr`'s status (falls back to `addr`).
pub async fn admin_on_leader(
    transport: &Transport,
    addr: &str,
) -> Result<AdminClient<Channel>, ClientError> {
    let target = match status(transport, addr).await {
        Ok(s) if s.has_leader && !s.leader_addr.is_empty() => s.leader_addr,
        _ => addr.to_owned(),
    };
    Ok(AdminClient::new(channel(transport, &target)?))
}

/// Reads with `query`: linearizable when `linearizable` (what users should see), else
/// this replica's local, possibly stale state. The reply's `linearizable` says which.
pub async fn read(
    transport: &Transport,
    addr: &str,
    query: &Query,
    linearizable: bool,
) -> Result<pb::ReadReply, ClientError> {
    read_on(&mut coordinator(transport, addr)?, query, linearizable).await
}

/// [`read`] on a client the caller keeps (a long-lived reader such as `panel dash` reuses
/// one channel per replica instead of a TLS handshake per read).
pub async fn read_on(
    client: &mut CoordinatorClient<Channel>,
    query: &Query,
    linearizable: bool,
) -> Result<pb::ReadReply, ClientError> {
    let consistency = if linearizable {
        pb::ReadConsistency::Linearizable
    } else {
        pb::ReadConsistency::Local
    };
    Ok(client
        .read(pb::ReadRequest {
            query_json: serde_json::to_string(query)?,
            linearizable,
            consistency: consistency as i32,
        })
        .await?
        .into_inner())
}

/// Whether a failed write may be retried with the same request id.
fn retryable(s: &tonic::Status) -> bool {
    matches!(
        s.code(),
        tonic::Code::Unavailable
            | tonic::Code::Unknown
            | tonic::Code::Cancelled
            | tonic::Code::DeadlineExceeded
            | tonic::Code::Internal
    )
}

/// A client's write as the `Write` RPC and the write stream carry it.
fn write_request(
    client_id: &str,
    request_id: u64,
    command: &(impl serde::Serialize + ?Sized),
) -> Result<pb::WriteRequest, ClientError> {
    Ok(pb::WriteRequest {
        client_id: client_id.into(),
        request_id,
        command_json: serde_json::to_string(command)?,
        forwarded: false,
        ..Default::default()
    })
}

/// Write one command, trying `addrs` in turn until one answers or `patience` runs out.
/// Every try uses the same `(client_id, request_id)`, so the command applies at most once
/// however many tries reach the log.
pub async fn write_with_retry(
    clients: &mut [CoordinatorClient<Channel>],
    client_id: &str,
    request_id: u64,
    command: &(impl serde::Serialize + ?Sized),
    patience: Duration,
) -> Result<pb::WriteReply, ClientError> {
    let req = write_request(client_id, request_id, command)?;
    let start = tokio::time::Instant::now();
    let mut tries = 0u32;
    loop {
        let i = tries as usize % clients.len().max(1);
        tries += 1;
        let mut r = tonic::Request::new(req.clone());
        r.set_timeout(Duration::from_secs(5));
        let last = match clients.get_mut(i) {
            Some(c) => match c.write(r).await {
                Ok(reply) => return Ok(reply.into_inner()),
                Err(s) if retryable(&s) => s.to_string(),
                Err(s) => return Err(s.into()),
            },
            None => "no address given".to_owned(),
        };
        if start.elapsed() >= patience {
            return Err(ClientError::GaveUp {
                tries,
                secs: patience.as_secs(),
                last,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

type Pending =
    std::collections::HashMap<(String, u64), tokio::sync::oneshot::Sender<pb::WriteStreamReply>>;

/// Writes over one `WriteStream`: many writes in flight on one HTTP/2 stream, each answered
/// by its (client id, request id). Cheap to clone; all clones share the stream. When the
/// stream breaks, writes in flight fail and the caller may retry them with the same ids
/// (at most once still holds).
#[derive(Clone)]
pub struct StreamWriter {
    tx: tokio::sync::mpsc::Sender<pb::WriteRequest>,
    pending: std::sync::Arc<std::sync::Mutex<Pending>>,
}

impl StreamWriter {
    pub async fn open(client: &mut CoordinatorClient<Channel>) -> Result<Self, ClientError> {
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let mut replies = client
            .write_stream(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await?
            .into_inner();
        let pending: std::sync::Arc<std::sync::Mutex<Pending>> = Default::default();
        let p = pending.clone();
        tokio::spawn(async move {
            while let Ok(Some(r)) = replies.message().await {
                let waiter = p
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&(r.client_id.clone(), r.request_id));
                if let Some(w) = waiter {
                    let _ = w.send(r);
                }
            }
            // Dropping the waiters fails every write still in flight.
            p.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clear();
        });
        Ok(Self { tx, pending })
    }

    /// Write one command and wait for its answer.
    pub async fn write(
        &self,
        client_id: &str,
        request_id: u64,
        command: &Command,
    ) -> Result<pb::WriteReply, ClientError> {
        let (done, answer) = tokio::sync::oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((client_id.to_owned(), request_id), done);
        let req = write_request(client_id, request_id, command)?;
        let closed = || {
            tonic::Status::unavailable("the write stream closed; retry with the same request_id")
        };
        if self.tx.send(req).await.is_err() {
            // Never sent: no answer will come, so nobody may wait for one.
            self.pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&(client_id.to_owned(), request_id));
            return Err(closed().into());
        }
        let r = answer.await.map_err(|_| closed())?;
        match r.reply {
            Some(reply) => Ok(reply),
            None => {
                Err(tonic::Status::new(tonic::Code::from(r.error_code), r.error_message).into())
            }
        }
    }
}
