//! Sharding debates across Raft groups, in simulation (docs/SHARDING.md).
//!
//! Why a model: the design in docs/SHARDING.md puts each shard in its own chartered
//! openraft group with its own record, plus one index group whose log names every group's
//! checkpoints. Before building it, the question is what G groups buy on one machine of C
//! cores, and the answer depends on where a decision's CPU goes, which BENCHMARKS.md "Real
//! path" measured. This module turns those measured figures into throughput, latency and
//! CPU utilisation for G = 1 to 16 with a discrete-event simulation: no consensus is
//! implemented here, only its costs and delays (flushes, a majority of acknowledgements,
//! one serial apply task per replica).
//!
//! Pure and deterministic: no clock, no threads, no I/O; the only randomness is a seeded
//! generator (`crate::gaussian::Rng`), so one seed gives one report.
//!
//! - `params`: the inputs, which are measured and which assumed;
//! - `routing`: which group a debate goes to (rendezvous hashing over SHA-256);
//! - `engine`: simulated time, cores and serial lanes;
//! - `federation`: one run (groups, index group, nodes, clients) under one load;
//! - `stats`: percentiles;
//! - `sweep`: the table of docs/SHARDING.md;
//! - `error`: why a run is refused.

pub mod engine;
pub mod error;
pub mod federation;
pub mod params;
pub mod routing;
pub mod stats;
pub mod sweep;

pub use error::ShardsError;
pub use federation::{Load, RunResult, run};
pub use params::{Costs, Params, Timing};
pub use sweep::{Report, Sweep};
