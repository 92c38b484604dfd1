//! A connection to the coordinator cluster that survives a replica going away:
//! linearizable reads from any replica that can serve one (so a read right after a write
//! sees it, and a cut-off replica's stale state is never shown as the answer), and writes
//! retried across replicas under one request id, so a command applies at most once
//! however many tries reach the log. The `panel` commands use it through the CLI's
//! wrapper, which adds where the addresses came from to its errors.

use panel_machine::RefusalCode;
use std::time::Duration;

use panel_transport::Transport;
use serde_json::Value;
use tonic::transport::Channel;

use super::ClientError;
use crate::pb::coordinator::coordinator_client::CoordinatorClient;
use crate::pb::coordinator::log_client::LogClient;
use panel_machine::{ClientCommand, Query};

/// How long a write keeps trying while replicas elect a leader or restart.
pub const WRITE_PATIENCE: Duration = Duration::from_secs(30);

/// How long a linearizable read keeps asking while replicas answer but cannot serve it
/// yet (an election, or a leader confirming its quorum on a loaded machine). When no
/// replica answers at all, the read fails at once.
pub const READ_PATIENCE: Duration = Duration::from_secs(10);

/// The replicas of one cluster, tried in address order, under one client id.
pub struct Failover {
    addrs: Vec<String>,
    transport: Transport,
    /// Made on the first write: a channel needs the runtime the caller runs in.
    clients: Vec<CoordinatorClient<Channel>>,
    client_id: String,
    next_request: u64,
}

/// What the replicated state machine answered to a write.
pub enum WriteOutcome {
    Applied(Value),
    /// Refused deterministically in apply; nothing changed.
    Refused {
        code: RefusalCode,
        message: String,
    },
}

/// Why a call through [`Failover`] failed.
#[derive(Debug, thiserror::Error)]
pub enum FailoverError {
    /// No replica answered: the call, the addresses tried, the last error.
    #[error("no coordinator answered {what} at {addrs}: {last}")]
    Unreachable {
        what: String,
        addrs: String,
        last: String,
    },
    /// The `Log` service has no such checkpoint or entry: its message, as is.
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A reply that is not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Reply(#[from] ReplyMismatch),
}

impl Failover {
    /// The cluster at `addrs` over `transport`, writing as `client_id` (see
    /// [`Failover::unique_client_id`]).
    pub fn new(addrs: Vec<String>, transport: Transport, client_id: String) -> Self {
        Self {
            addrs,
            transport,
            clients: Vec::new(),
            client_id,
            next_request: 0,
        }
    }

    /// `PREFIX-PID-NANOS`: unique per invocation, so a retry inside this run deduplicates
    /// and a new run never collides with an earlier one.
    pub fn unique_client_id(prefix: &str) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{prefix}-{}-{nanos}", std::process::id())
    }

    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    fn unreachable(&self, what: &str, last: impl std::fmt::Display) -> FailoverError {
        FailoverError::Unreachable {
            what: what.to_owned(),
            addrs: self.addrs.join(","),
            last: last.to_string(),
        }
    }

    /// The first answer of the `Log` service from any replica, in address order.
    pub async fn log<T, F, Fut>(&self, what: &str, call: F) -> Result<T, FailoverError>
    where
        F: Fn(LogClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let mut last = String::from("no address");
        for addr in &self.addrs {
            let c = super::log(&self.transport, addr)?;
            match call(c).await {
                Ok(v) => return Ok(v),
                Err(st) if st.code() == tonic::Code::NotFound => {
                    return Err(FailoverError::NotFound(st.message().to_owned()));
                }
                Err(st) => last = st.message().to_string(),
            }
        }
        Err(self.unreachable(what, last))
    }

    /// Answers a query linearizably from the first replica that can (any replica with a
    /// reachable leader and quorum). Never falls back to a local, possibly stale read: a
    /// user-facing answer must reflect every acknowledged write (docs/coordinator/reads-and-writes.md,
    /// "Reads"); `panel coordinator read --local` is the explicit way to see one replica's
    /// state.
    pub async fn read(&self, q: &Query) -> Result<Value, FailoverError> {
        let until = tokio::time::Instant::now() + READ_PATIENCE;
        loop {
            let mut last = String::from("no address");
            let mut not_yet = false;
            for addr in &self.addrs {
                match super::read(&self.transport, addr, q, true).await {
                    Ok(r) => return Ok(serde_json::from_str(&r.result_json)?),
                    Err(e) => {
                        not_yet |= refused_for_now(&e);
                        last = short(&e);
                    }
                }
            }
            if !not_yet || tokio::time::Instant::now() >= until {
                return Err(self.unreachable("a linearizable read", last));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// [`Failover::read`] decoded into the machine's reply type for `q`
    /// (`panel_machine::read::query`); a mismatch names the query and the JSON path.
    pub async fn read_as<T: serde::de::DeserializeOwned>(
        &self,
        q: &Query,
    ) -> Result<T, FailoverError> {
        let v = self.read(q).await?;
        Ok(decode_reply(&format!("{q:?}"), v)?)
    }

    /// The (client id, request id) the next [`Failover::write`] will carry, for writes
    /// that sign them (contributor signatures bind both).
    pub fn next_ids(&self) -> (String, u64) {
        (self.client_id.clone(), self.next_request + 1)
    }

    /// Writes `command`, following the leader across replicas for up to
    /// [`WRITE_PATIENCE`]; a refusal in apply is an answer, not an error.
    pub async fn write(&mut self, command: &ClientCommand) -> Result<WriteOutcome, FailoverError> {
        if self.clients.is_empty() {
            // Fail fast when nothing answers at all, rather than retrying for the whole
            // write patience.
            let mut last = None;
            for a in &self.addrs {
                match super::status(&self.transport, a).await {
                    Ok(_) => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(short(&e)),
                }
            }
            if let Some(e) = last {
                return Err(self.unreachable("a status check", e));
            }
            self.clients = self
                .addrs
                .iter()
                .map(|a| super::coordinator(&self.transport, a))
                .collect::<Result<_, _>>()?;
        }
        self.next_request += 1;
        let r = super::write_with_retry(
            &mut self.clients,
            &self.client_id,
            self.next_request,
            command,
            WRITE_PATIENCE,
        )
        .await
        .map_err(|e| self.unreachable(&format!("the {} write", command.kind()), short(&e)))?;
        let v: Value = serde_json::from_str(&r.result_json)?;
        if r.applied {
            return Ok(WriteOutcome::Applied(v));
        }
        let refusal = serde_json::from_value::<Refusal>(v).unwrap_or_default();
        Ok(WriteOutcome::Refused {
            code: refusal
                .code
                .unwrap_or_else(|| RefusalCode::Other("refused".into())),
            message: refusal.message.unwrap_or(r.result_json),
        })
    }
}

/// What a refused write answers (`ItemReply::Refused`'s fields).
#[derive(Default, serde::Deserialize)]
struct Refusal {
    code: Option<RefusalCode>,
    message: Option<String>,
}

/// A reply that does not decode into the machine's type for it: which reply, where in
/// its JSON, and why (a client older or newer than the cluster).
#[derive(Debug, thiserror::Error)]
#[error("the coordinator's answer to {what} does not decode at {path}: {reason}")]
pub struct ReplyMismatch {
    pub what: String,
    pub path: String,
    pub reason: String,
}

/// Decodes `v`, the answer to `what`, into the machine's reply type `T`.
pub fn decode_reply<T: serde::de::DeserializeOwned>(
    what: &str,
    v: Value,
) -> Result<T, ReplyMismatch> {
    serde_path_to_error::deserialize(v).map_err(|e| ReplyMismatch {
        what: what.to_string(),
        path: e.path().to_string(),
        reason: e.inner().to_string(),
    })
}

/// The gist of a client error: gRPC statuses by code and message, without the
/// transport's nested debug output.
/// A replica that runs refused to serve the read for now (`UNAVAILABLE` sent by the
/// replica itself: no leader yet, or no quorum confirmed), as opposed to a replica that
/// could not be reached (a transport error, which tonic carries as the status's source).
fn refused_for_now(e: &ClientError) -> bool {
    matches!(e, ClientError::Rpc(s)
        if s.code() == tonic::Code::Unavailable && std::error::Error::source(s).is_none())
}

fn short(e: &ClientError) -> String {
    match e {
        ClientError::Rpc(s) => format!("{:?}: {}", s.code(), s.message()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a running replica's own "not now" is asked again: a replica that cannot be
    /// reached, or a read refused for a reason that stays, fails the read at once.
    #[tokio::test]
    async fn a_read_is_asked_again_only_while_a_replica_answers_not_yet() {
        let no_quorum = tonic::Status::unavailable("cannot confirm its leadership with a quorum");
        assert!(refused_for_now(&ClientError::Rpc(no_quorum)));
        // A real connection refused: nothing listens on a port just released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let unreachable = super::super::read(
            &Transport::InsecureLoopback,
            &format!("127.0.0.1:{port}"),
            &Query::Stats,
            true,
        )
        .await
        .expect_err("nothing listens there");
        assert!(!refused_for_now(&unreachable), "{unreachable:?}");
        let bad = tonic::Status::invalid_argument("unknown query");
        assert!(!refused_for_now(&ClientError::Rpc(bad)));
    }

    #[test]
    fn a_mismatched_reply_names_the_path() {
        #[derive(Debug, serde::Deserialize)]
        struct Reply {
            #[allow(dead_code)]
            n: u64,
        }
        let e = decode_reply::<Reply>("the count", serde_json::json!({"n": "x"}))
            .expect_err("a string is no count");
        assert_eq!(e.path, "n");
        assert!(
            e.to_string()
                .starts_with("the coordinator's answer to the count")
        );
    }

    #[test]
    fn a_client_id_names_the_process() {
        let id = Failover::unique_client_id("t");
        assert!(id.starts_with(&format!("t-{}-", std::process::id())));
    }
}
