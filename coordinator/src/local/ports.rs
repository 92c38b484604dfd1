//! Loopback ports for local processes. A port is picked below the kernel's ephemeral range
//! and checked free by binding it, then the listener is closed and the port handed to the
//! process that will bind it.
//!
//! Why not port 0: the kernel hands out port-0 listeners from the same ephemeral range it
//! uses for outgoing connections, and a local panel makes many (replicas to each other,
//! the driver to every node, witnesses) between picking a port and its process binding it.
//! One of those connections taking the port leaves a node unable to listen, and its exam
//! never comes. Below the range no outgoing connection lands.

use std::hash::{BuildHasher, Hasher};

use super::LocalClusterError;

/// The lowest port tried: above the well-known and most registered service ports.
const LOWEST: u16 = 20_000;
/// How many random ports are tried before falling back to one the kernel picks.
const TRIES: usize = 64;

/// The first port of the kernel's ephemeral range (Linux), 32768 where unreadable.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Ports this process handed out already: none is handed out twice, since a port handed
/// out is not bound until its process starts.
static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A loopback port that was free a moment ago, below the ephemeral range when it can be,
/// and never one this process handed out before.
pub fn free_port() -> Result<u16, LocalClusterError> {
    let top = ephemeral_start();
    let mut handed = HANDED_OUT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if top > LOWEST + 1_000 {
        let span = u64::from(top - LOWEST);
        for _ in 0..TRIES {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            let port = LOWEST + (h.finish() % span) as u16;
            if !handed.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                handed.insert(port);
                return Ok(port);
            }
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(LocalClusterError::Port)?;
    handed.insert(port);
    Ok(port)
}

/// `n` distinct loopback addresses (`127.0.0.1:PORT`) with ports that were free a moment
/// ago.
pub fn loopback_addrs(n: usize) -> Result<Vec<String>, LocalClusterError> {
    let mut ports = std::collections::BTreeSet::new();
    while ports.len() < n {
        ports.insert(free_port()?);
    }
    Ok(ports
        .into_iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_distinct_and_below_the_ephemeral_range() {
        let addrs = loopback_addrs(16).expect("ports");
        let ports: std::collections::BTreeSet<u16> = addrs
            .iter()
            .map(|a| {
                a.rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("port")
            })
            .collect();
        assert_eq!(ports.len(), 16);
        let top = ephemeral_start();
        if top > LOWEST + 1_000 {
            assert!(ports.iter().all(|p| (LOWEST..top).contains(p)), "{ports:?}");
        }
    }

    /// No port is handed out twice in one process, so two processes of one local panel
    /// never race for a port. (Whether a handed-out port is *still* free later depends on
    /// every other process on the machine, so no test can assert it: such a check failed
    /// CI runs while other test processes were binding ports.)
    #[test]
    fn no_port_is_handed_out_twice() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..256 {
            let p = free_port().expect("port");
            assert!(seen.insert(p), "{p} handed out twice");
        }
    }
}
