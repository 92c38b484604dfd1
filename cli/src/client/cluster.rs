//! The coordinator cluster as the `panel` commands see it: the coordinator crate's
//! failover client ([`Failover`]: linearizable reads, writes retried under one request
//! id), with errors that also say where the addresses came from and what to try, as
//! `anyhow` errors for the commands to print.

use anyhow::{Result, anyhow};
use panel_coordinator::client::failover::{Failover, FailoverError, WriteOutcome};
use panel_coordinator::pb::coordinator::log_client::LogClient;
use panel_machine::{ClientCommand, Query};
use serde_json::Value;
use tonic::transport::Channel;

use crate::client::addr::{ClusterArgs, Source};

pub struct Cluster {
    failover: Failover,
    source: Source,
}

impl Cluster {
    pub fn connect(args: &ClusterArgs) -> Result<Cluster> {
        let (addrs, source) = args.resolve()?;
        Ok(Cluster {
            failover: Failover::new(
                addrs,
                args.transport()?,
                Failover::unique_client_id("panel-cli"),
            ),
            source,
        })
    }

    /// `e` for the user: an unreachable cluster also names where its addresses came from
    /// and what to try; every other error as it is.
    fn explain(&self, e: FailoverError) -> anyhow::Error {
        match e {
            FailoverError::Unreachable { what, addrs, last } => anyhow!(
                "no coordinator answered {what} at {addrs} (from {}): {last}; {}",
                self.source,
                self.source.unreachable_hint()
            ),
            FailoverError::NotFound(message) => anyhow!("{message}"),
            FailoverError::Client(e) => e.into(),
            FailoverError::Json(e) => e.into(),
            FailoverError::Reply(e) => e.into(),
        }
    }

    /// [`Failover::log`]: the first answer of the `Log` service from any replica.
    pub async fn log<T, F, Fut>(&self, what: &str, call: F) -> Result<T>
    where
        F: Fn(LogClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let r = self.failover.log(what, call).await;
        r.map_err(|e| self.explain(e))
    }

    /// [`Failover::read`]: linearizable, from the first replica that can answer.
    pub async fn read(&self, q: &Query) -> Result<Value> {
        let r = self.failover.read(q).await;
        r.map_err(|e| self.explain(e))
    }

    /// [`Failover::read_as`]: the read decoded into the machine's reply type for `q`.
    pub async fn read_as<T: serde::de::DeserializeOwned>(&self, q: &Query) -> Result<T> {
        let r = self.failover.read_as(q).await;
        r.map_err(|e| self.explain(e))
    }

    /// [`Failover::next_ids`]: the ids the next write carries, for writes that sign them.
    pub fn next_ids(&self) -> (String, u64) {
        self.failover.next_ids()
    }

    /// [`Failover::write`]: applied or refused; unreachable only after the write
    /// patience.
    pub async fn write(&mut self, command: &ClientCommand) -> Result<WriteOutcome> {
        let r = self.failover.write(command).await;
        r.map_err(|e| self.explain(e))
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
    code: &panel_machine::RefusalCode,
    message: &str,
    json: bool,
) -> Result<std::process::ExitCode> {
    if json {
        print_json(&serde_json::json!({ "applied": false, "code": code, "message": message }))?;
    }
    eprintln!("refused: {what}\n  code:    {code}\n  message: {message}");
    Ok(std::process::ExitCode::from(1))
}
