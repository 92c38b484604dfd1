//! The Crucible Panel arbiter node (docs/ARCHITECTURE.md, "node/").
//!
//! * [`arbiter::Arbiter`]: judge + key; decide, sign, commit. Transport-independent, so
//!   the gRPC server here and an outbound coordinator connection can both drive it.
//! * [`judge`]: scripted, command, LLM; the human judge is the durable pending queue.
//! * [`core`]: commit, reveal, deliver and human answers with typed refusals; the round's
//!   timing is `panel_proto::round::Window` on the injected [`clock`].
//! * [`service`]: the `ArbiterNode` and `ArbiterAdmin` gRPC services, the core's edge
//!   (refusals become statuses here).
//! * [`exchange`]: delivery of revealed rulings to the other panel members.
//! * [`channels`]: the long-lived channels to replicas and peers those writes share.
//! * [`link`]: outbound links to coordinator replicas for a node that cannot be called.
//! * [`store`]: redb storage of own and received rulings and the pending queue.
//! * [`keyfile`]: key generation (mode 0600) and loading (loose permissions refused).
//! * [`metrics`]: the metrics endpoint's counters, judge latency and readiness.
//! * [`http`], [`address`]: the outbound HTTP client and the public-address rule that
//!   source retrieval ([`retrieval`]) connects under.
//! * [`config`], [`run`]: `node.toml` and the process.
//! * `model_serve` (feature `local-judge`): `panel model serve`, an OpenAI-compatible
//!   endpoint over the in-process model.

pub mod address;
pub mod advocate;
pub mod arbiter;
pub mod channels;
pub mod clock;
pub mod config;
pub mod core;
pub mod declare;
pub mod exchange;
pub mod http;
pub mod judge;
pub mod keyfile;
pub mod link;
pub mod metrics;
#[cfg(feature = "local-judge")]
pub mod model_serve;
pub mod record_trust;
pub mod retrieval;
pub mod run;
pub mod service;
pub mod store;
pub mod submit;

pub use arbiter::{Arbiter, ArbiterError, Sealed};
pub use config::NodeConfig;
pub use run::{NodeError, RunOverrides, run};
