//! The record's outside checkers: a C2SP tlog-witness and a tlog-tiles server
//! (docs/WITNESS.md).
//!
//! A C2SP tlog-witness v1.0.0 witness: the `add-checkpoint` endpoint and
//! the monitoring `checkpoint` endpoint over plain HTTP/1.1, with the latest cosigned
//! checkpoint per log stored durably and atomically before any answer, and the client the
//! coordinator submits checkpoints with; and a read-only C2SP tlog-tiles server
//! ([`tiles`]) that publishes the record for auditors outside the federation.
//!
//! The rules (what is refused with which status) live in the pure `panel-tlog` crate
//! (`panel_tlog::witness::decide`); this crate is the shell: HTTP, the clock, the disk.
//! Plain `http://` is enough: a witness's answers are only as good as the signatures they
//! carry, and the log's checkpoint and the witness's cosignature are both signed.

pub mod client;
pub mod config;
mod http_serve;
pub mod key;
pub mod server;
pub mod store;
pub mod tiles;

pub use client::{SubmitError, add_checkpoint};
pub use config::{Clock, Config, StartError, SystemClock};
pub use server::Server;
pub use tiles::{Publisher, TileServer, TileServerError};
