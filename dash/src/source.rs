//! Where the pages' data comes from: linearizable reads over the coordinator's gRPC API
//! (`Coordinator.Read`, as every other read command of the CLI), from the first replica
//! that answers, decoded into the machine's reply types (`panel_machine::read::query`). One
//! lazily connected channel per replica is kept for the life of the server, so a page
//! costs no TLS handshake once the first one is made.

use std::time::Duration;

use panel_coordinator::client;
use panel_coordinator::pb::coordinator::StatusReply;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::Query;
use panel_transport::Transport;
use serde::de::DeserializeOwned;
use tonic::transport::Channel;

use crate::error::DashError;

/// How long one replica may take to answer one read before the next is tried.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
struct Replica {
    addr: String,
    client: CoordinatorClient<Channel>,
}

/// The cluster, as the dashboard reads it.
#[derive(Clone)]
pub struct Source {
    replicas: Vec<Replica>,
    timeout: Duration,
}

/// Why the source could not be set up (a malformed address, TLS material).
#[derive(Debug, thiserror::Error)]
#[error("cannot reach {addr} with this transport: {source}")]
pub struct SourceError {
    addr: String,
    #[source]
    source: client::ClientError,
}

impl Source {
    /// One channel per address; nothing is dialled until the first page. Must be called
    /// inside a tokio runtime (the channels spawn their workers there).
    pub fn new(transport: &Transport, addrs: &[String]) -> Result<Source, SourceError> {
        let replicas = addrs
            .iter()
            .map(|a| {
                client::coordinator(transport, a)
                    .map(|client| Replica {
                        addr: a.clone(),
                        client,
                    })
                    .map_err(|source| SourceError {
                        addr: a.clone(),
                        source,
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Source {
            replicas,
            timeout: READ_TIMEOUT,
        })
    }

    /// The addresses, comma-separated, for messages.
    pub fn addrs(&self) -> String {
        self.replicas
            .iter()
            .map(|r| r.addr.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn unreachable(&self, last: String) -> DashError {
        DashError::Unreachable {
            addrs: self.addrs(),
            last,
        }
    }

    /// A linearizable read of `q`, decoded into `T`, from the first replica that answers.
    pub async fn read<T: DeserializeOwned>(&self, q: &Query) -> Result<T, DashError> {
        let what = query_name(q);
        let mut last = String::from("no address given");
        for r in &self.replicas {
            let mut c = r.client.clone();
            match tokio::time::timeout(self.timeout, client::read_on(&mut c, q, true)).await {
                Ok(Ok(reply)) => {
                    return serde_json::from_str(&reply.result_json).map_err(|e| {
                        DashError::Decode {
                            addr: r.addr.clone(),
                            what,
                            error: e.to_string(),
                        }
                    });
                }
                Ok(Err(client::ClientError::Rpc(st)))
                    if st.code() == tonic::Code::InvalidArgument =>
                {
                    return Err(DashError::Refused {
                        addr: r.addr.clone(),
                        what,
                        message: st.message().to_string(),
                    });
                }
                Ok(Err(e)) => last = format!("{}: {}", r.addr, short(&e)),
                Err(_) => {
                    last = format!("{}: no answer within {} s", r.addr, self.timeout.as_secs())
                }
            }
        }
        Err(self.unreachable(last))
    }

    /// The status of the first replica that answers, with its address.
    pub async fn status(&self) -> Result<(String, StatusReply), DashError> {
        let mut last = String::from("no address given");
        for r in &self.replicas {
            let mut c = r.client.clone();
            let call = c.status(panel_coordinator::pb::coordinator::StatusRequest {});
            match tokio::time::timeout(self.timeout, call).await {
                Ok(Ok(s)) => return Ok((r.addr.clone(), s.into_inner())),
                Ok(Err(st)) => last = format!("{}: {:?}: {}", r.addr, st.code(), st.message()),
                Err(_) => {
                    last = format!("{}: no answer within {} s", r.addr, self.timeout.as_secs())
                }
            }
        }
        Err(self.unreachable(last))
    }
}

/// The query's variant name, for messages (`Debate`, `Motions`, ...).
fn query_name(q: &Query) -> String {
    format!("{q:?}")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect()
}

/// The gist of a client error: a gRPC status by code and message.
fn short(e: &client::ClientError) -> String {
    match e {
        client::ClientError::Rpc(s) => format!("{:?}: {}", s.code(), s.message()),
        other => other.to_string(),
    }
}
