//! The coordinator cluster from the commands' side: where it is ([`addr`]) and the
//! failover client the commands talk to it through ([`cluster`]).

pub(crate) mod addr;
pub(crate) mod cluster;
