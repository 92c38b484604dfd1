//! Loopback ports for local processes. The kernel picks a free one, the listener is
//! closed, and the port is handed to the process that will bind it: free a moment ago,
//! which is enough on a machine where only the cluster's own processes take ports.

use super::LocalClusterError;

/// A loopback port that was free a moment ago.
pub fn free_port() -> Result<u16, LocalClusterError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(LocalClusterError::Port)
}

/// `n` loopback addresses (`127.0.0.1:PORT`) with ports that were free a moment ago.
pub fn loopback_addrs(n: usize) -> Result<Vec<String>, LocalClusterError> {
    (0..n)
        .map(|_| Ok(format!("127.0.0.1:{}", free_port()?)))
        .collect()
}
