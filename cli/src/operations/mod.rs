//! The commands that run and look after a federation's hosts: replicas, arbiter nodes,
//! certificates and organisations, circuit breakers, witnesses, monitors, the dashboard,
//! the published tiles, entry proofs, the local model server, and `panel bench`.

pub(crate) mod bench;
mod breaker;
pub(crate) mod coordinator;
pub(crate) mod dash;
mod fingerprint;
pub(crate) mod model;
pub(crate) mod monitor;
pub(crate) mod node;
pub(crate) mod org;
pub(crate) mod pki;
pub(crate) mod proof;
pub(crate) mod tiles;
pub(crate) mod witness;
