//! A connection to the coordinator cluster for one user command: linearizable reads from
//! any replica that can serve one (so a read right after a write sees it, and a cut-off
//! replica's stale state is never shown as the answer), and writes retried across replicas under one request id, so a command
//! applies at most once however many tries reach the log.

use std::time::Duration;

use anyhow::{Result, anyhow};
use panel_coordinator::client;
use panel_coordinator::command::{ClientCommand, Query};
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_transport::Transport;
use serde_json::Value;
use tonic::transport::Channel;

use crate::cluster_addr::{ClusterArgs, Source};

/// How long a write keeps trying while replicas elect a leader or restart.
const WRITE_PATIENCE: Duration = Duration::from_secs(30);

pub struct Cluster {
    addrs: Vec<String>,
    transport: Transport,
    source: Source,
    /// Made on the first write: a channel needs the runtime the command runs in.
    clients: Vec<CoordinatorClient<Channel>>,
    client_id: String,
    next_request: u64,
}

/// What the replicated state machine answered to a write.
pub enum WriteOutcome {
    Applied(Value),
    /// Refused deterministically in apply; nothing changed.
    Refused {
        code: String,
        message: String,
    },
}

impl Cluster {
    pub fn connect(args: &ClusterArgs) -> Result<Cluster> {
        let (addrs, source) = args.resolve()?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(Cluster {
            transport: args.transport()?,
            addrs,
            source,
            clients: Vec::new(),
            // Unique per invocation: a retry inside this run deduplicates, a new run never
            // collides with an earlier one.
            client_id: format!("panel-cli-{}-{nanos}", std::process::id()),
            next_request: 0,
        })
    }

    fn unreachable(&self, what: &str, last: impl std::fmt::Display) -> anyhow::Error {
        anyhow!(
            "no coordinator answered {what} at {} (from {}): {last}; {}",
            self.addrs.join(","),
            self.source,
            self.source.unreachable_hint()
        )
    }

    /// The first answer of the `Log` service from any replica, in address order.
    pub async fn log<T, F, Fut>(&self, what: &str, call: F) -> Result<T>
    where
        F: Fn(panel_coordinator::pb::coordinator::log_client::LogClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let mut last = String::from("no address");
        for addr in &self.addrs {
            let c = client::log(&self.transport, addr)?;
            match call(c).await {
                Ok(v) => return Ok(v),
                Err(st) if st.code() == tonic::Code::NotFound => {
                    return Err(anyhow!("{}", st.message()));
                }
                Err(st) => last = st.message().to_string(),
            }
        }
        Err(self.unreachable(what, last))
    }

    /// Answers a query linearizably from the first replica that can (any replica with a
    /// reachable leader and quorum). Never falls back to a local, possibly stale read: a
    /// user-facing answer must reflect every acknowledged write (docs/COORDINATOR.md,
    /// "Reads"); `panel coordinator read --local` is the explicit way to see one replica's
    /// state.
    pub async fn read(&self, q: &Query) -> Result<Value> {
        let mut last = String::from("no address");
        for addr in &self.addrs {
            match client::read(&self.transport, addr, q, true).await {
                Ok(r) => return Ok(serde_json::from_str(&r.result_json)?),
                Err(e) => last = short(&e),
            }
        }
        Err(self.unreachable("a linearizable read", last))
    }

    /// [`Cluster::read`] decoded into the machine's reply type for `q`
    /// (`panel_machine::query`); a mismatch names the query and the JSON path.
    pub async fn read_as<T: serde::de::DeserializeOwned>(&self, q: &Query) -> Result<T> {
        let v = self.read(q).await?;
        Ok(decode_reply(&format!("{q:?}"), v)?)
    }

    /// The (client id, request id) the next [`Cluster::write`] will carry, for writes that
    /// sign them (contributor signatures bind both).
    pub fn next_ids(&self) -> (String, u64) {
        (self.client_id.clone(), self.next_request + 1)
    }

    pub async fn write(&mut self, command: &ClientCommand) -> Result<WriteOutcome> {
        if self.clients.is_empty() {
            // Fail fast when nothing answers at all, rather than retrying for the whole
            // write patience.
            let mut last = None;
            for a in &self.addrs {
                match client::status(&self.transport, a).await {
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
                .map(|a| client::coordinator(&self.transport, a))
                .collect::<Result<_, _>>()?;
        }
        self.next_request += 1;
        let r = client::write_with_retry(
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
            code: refusal.code.unwrap_or_else(|| "refused".into()),
            message: refusal.message.unwrap_or(r.result_json),
        })
    }
}

/// What a refused write answers (`ItemReply::Refused`'s fields).
#[derive(Default, serde::Deserialize)]
struct Refusal {
    code: Option<String>,
    message: Option<String>,
}

/// A reply that does not decode into the machine's type for it: which reply, where in
/// its JSON, and why (a CLI older or newer than the cluster).
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
fn short(e: &client::ClientError) -> String {
    match e {
        client::ClientError::Rpc(s) => format!("{:?}: {}", s.code(), s.message()),
        other => other.to_string(),
    }
}

/// A tokio runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Prints JSON for machines; a closed pipe (`| head`) ends quietly instead of panicking.
pub fn print_json(v: &Value) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let text = serde_json::to_string_pretty(v)?;
    match writeln!(out, "{text}").and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

/// Prints a refusal from the coordinator (the protocol's code and message) and returns
/// exit status 1. With `json`, the refusal also goes to stdout as JSON.
pub fn report_refusal(
    what: &str,
    code: &str,
    message: &str,
    json: bool,
) -> Result<std::process::ExitCode> {
    if json {
        print_json(&serde_json::json!({ "applied": false, "code": code, "message": message }))?;
    }
    eprintln!("refused: {what}\n  code:    {code}\n  message: {message}");
    Ok(std::process::ExitCode::from(1))
}
