//! A local cluster on loopback, started the one way `panel up`, the bench and the
//! cross-process tests all start it: child processes of one `panel`-like executable that
//! never outlive their starter ([`process`]), on ports that were free a moment ago
//! ([`ports`]), replicas from a config file or flags ([`config`], [`replicas`]), made one
//! Raft group through the `Admin` RPC, and one witness per organisation where checkpoints
//! are cosigned ([`witnesses`]).
//!
//! The caller passes the executable: `panel up` its own, the tests the `panel` binary of
//! their build, the bench whichever binary it runs replicas with.

pub mod config;
pub mod ports;
pub mod process;
pub mod replicas;
pub mod witnesses;

use std::path::PathBuf;

pub use ports::{free_port, loopback_addrs};
pub use process::{GRACE, Process, Supervisor};
pub use replicas::{LocalCluster, ReplicaFlags, ReplicaLaunch, Security};

/// What failed while starting or forming a local cluster, naming the process, file or
/// address involved.
#[derive(Debug, thiserror::Error)]
pub enum LocalClusterError {
    #[error("cannot start {name} ({}): {source}", program.display())]
    Spawn {
        name: String,
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the log file {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot bind a loopback port: {0}")]
    Port(std::io::Error),
    #[error("{addr} is not a socket address: {source}")]
    Addr {
        addr: String,
        source: std::net::AddrParseError,
    },
    #[error("no replica address given")]
    NoReplicas,
    #[error("initialising the group at {addr}: {message}")]
    Init { addr: String, message: String },
    #[error("timed out after {} s waiting until {what}", after.as_secs())]
    Timeout {
        what: String,
        after: std::time::Duration,
    },
    #[error(transparent)]
    Client(#[from] crate::client::ClientError),
    #[error("the issued charter names no log, so no witness can follow it")]
    NoLog,
    #[error("witness of {org}: {source}")]
    Witness {
        org: String,
        source: panel_witness::StartError,
    },
    #[error("the witness of {org} has no address: {source}")]
    WitnessAddr { org: String, source: std::io::Error },
    #[error("cannot start an async runtime: {0}")]
    Runtime(std::io::Error),
}

/// Runs `f` to completion on a runtime and a thread of its own, so synchronous callers
/// (the cross-process tests) can use the async steps here, inside a runtime or not.
pub fn block_on<F>(f: F) -> Result<F::Output, LocalClusterError>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        let run = s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(LocalClusterError::Runtime)?;
            Ok(rt.block_on(f))
        });
        // A panic in `f` is the caller's panic.
        run.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}
