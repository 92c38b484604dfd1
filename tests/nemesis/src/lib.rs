//! The nemesis: clients against a real TLS coordinator cluster whose replicas each live in
//! their own network namespace, faults from a seeded, logged schedule (`kill -9`, SIGSTOP
//! of the leader, partitions of the leader and of a follower), and a checker over the whole
//! client history (docs/RELIABILITY.md); and the federation across hosts, run under the same
//! workload and checker (docs/FEDERATION.md "Across hosts").

pub mod cluster;
pub mod federation;
pub mod history;
pub mod motions;
pub mod net;
pub mod run;
pub mod schedule;
