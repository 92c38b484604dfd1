//! Long-lived gRPC channels from this node to the replicas (its own `SubmitReveal` and
//! stance writes) and to peer nodes (delivery of revealed rulings).
//!
//! Every seated decision sends one write to a replica and one delivery to each other seat.
//! A mutual-TLS handshake per call (certificate chain, ECDSA and key exchange on both
//! ends, plus building the pinned verifier from `ca.pem`) was the largest single cost of
//! a node's share of a decision (BENCHMARKS.md "Real path"). So each address gets one
//! channel, made once and multiplexed over HTTP/2; it reconnects by itself, and a call
//! that fails for want of a connection drops it so the next call builds a fresh endpoint.
//!
//! The pin is unchanged: the channel's endpoint carries the same verifier as before
//! ([`Transport::endpoint_pinned`], docs/SECURITY.md "What is enforced", Transport), and
//! every connection the channel makes, the first and each reconnection, passes it. A
//! channel made under one pin is never handed out under another: the pin is part of the
//! key. What changes is when the check runs: once per connection, not once per call, as
//! for the node's outbound links (`link.rs`); the charter a node pins against is read
//! once at start either way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use panel_transport::{Peer, Transport, TransportError};
use tonic::transport::{Channel, Endpoint};

/// Keep-alive pings on an idle channel, so a connection the other end dropped is noticed
/// before a decision needs it (the same interval as the outbound links, `link.rs`).
const KEEP_ALIVE: Duration = Duration::from_secs(20);

/// The pin a cached channel was made under (`Peer` itself is not hashable).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Pin {
    AnyMember,
    Replicas,
    Replica(u64),
}

impl From<&Peer> for Pin {
    fn from(p: &Peer) -> Self {
        match p {
            Peer::AnyMember => Pin::AnyMember,
            Peer::Replicas => Pin::Replicas,
            Peer::Replica(id) => Pin::Replica(*id),
        }
    }
}

type Key = (String, Pin);

/// At most this many channels are kept. A federation has far fewer replicas and peers; the
/// cap only bounds a long-lived node whose peers' addresses keep changing. Past it the
/// cache starts over: channels in use stay usable, idle ones are dropped.
const MAX_CHANNELS: usize = 1024;

/// This node's channels, one per (address, pin); cheap to clone (shared).
#[derive(Clone)]
pub struct Channels {
    transport: Transport,
    open: Arc<Mutex<HashMap<Key, Channel>>>,
}

impl std::fmt::Debug for Channels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Channels")
            .field("tls", &self.transport.is_tls())
            .field("open", &n)
            .finish()
    }
}

impl Channels {
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            open: Arc::default(),
        }
    }

    /// How this node dials (mutual TLS with its own certificate, or loopback).
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The channel to `addr` under `peer`'s pin, made on first use with `configure`
    /// applied to its endpoint (a per-call timeout, say). It connects lazily: the first
    /// call on it makes the connection, and a refused pin surfaces as that call's error.
    pub fn get(
        &self,
        addr: &str,
        peer: Peer,
        configure: impl FnOnce(Endpoint) -> Endpoint,
    ) -> Result<Channel, TransportError> {
        let key = (addr.to_owned(), Pin::from(&peer));
        if let Some(c) = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(c.clone());
        }
        let endpoint = configure(
            self.transport
                .endpoint_pinned(addr, peer)?
                .http2_keep_alive_interval(KEEP_ALIVE)
                .keep_alive_while_idle(true),
        );
        let channel = endpoint.connect_lazy();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= MAX_CHANNELS && !open.contains_key(&key) {
            open.clear();
        }
        // Two first calls may race; both channels work, and the one kept is shared from now.
        Ok(open.entry(key).or_insert(channel).clone())
    }

    /// Drops the channel to `addr` under `peer`'s pin after a call on it could not reach
    /// the other end, so the next call starts from a new endpoint (and a new connection).
    pub fn forget(&self, addr: &str, peer: &Peer) {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(addr.to_owned(), Pin::from(peer)));
    }

    /// How many channels are open (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_channel_per_address_and_pin_until_forgotten() {
        let c = Channels::new(Transport::InsecureLoopback);
        c.get("127.0.0.1:1", Peer::AnyMember, |e| e).unwrap();
        c.get("127.0.0.1:1", Peer::AnyMember, |e| e).unwrap();
        assert_eq!(c.len(), 1);
        c.get("127.0.0.1:2", Peer::AnyMember, |e| e).unwrap();
        assert_eq!(c.len(), 2);
        c.forget("127.0.0.1:1", &Peer::AnyMember);
        assert_eq!(c.len(), 1);
        c.get("127.0.0.1:1", Peer::AnyMember, |e| e).unwrap();
        assert_eq!(c.len(), 2);
    }

    #[tokio::test]
    async fn the_cache_is_bounded() {
        let c = Channels::new(Transport::InsecureLoopback);
        for port in 1..=MAX_CHANNELS {
            c.get(&format!("127.0.0.1:{port}"), Peer::AnyMember, |e| e)
                .unwrap();
        }
        assert_eq!(c.len(), MAX_CHANNELS);
        c.get("127.0.0.1:1", Peer::AnyMember, |e| e).unwrap();
        assert_eq!(c.len(), MAX_CHANNELS, "a cached address adds nothing");
        c.get("127.0.0.1:65000", Peer::AnyMember, |e| e).unwrap();
        assert_eq!(c.len(), 1, "a new address past the cap starts over");
    }

    #[tokio::test]
    async fn an_address_the_transport_refuses_makes_no_channel() {
        let c = Channels::new(Transport::InsecureLoopback);
        assert!(c.get("203.0.113.9:7001", Peer::AnyMember, |e| e).is_err());
        assert!(c.is_empty());
    }

    /// A health server on `listener` under `identity`'s certificate, until `stop` fires.
    fn serve(
        pki: &panel_transport::pki::Issued,
        identity: &str,
        listener: tokio::net::TcpListener,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<()> {
        let server =
            Transport::from_flags(Some(&pki.dir(identity)), Some(&pki.charter_path()), false)
                .unwrap();
        let (_reporter, health) = tonic_health::server::health_reporter();
        let incoming = server
            .incoming(listener, panel_transport::ClientAuth::Required)
            .unwrap();
        let mut builder = server.server();
        tokio::spawn(async move {
            let _ = builder
                .add_service(health)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stop.await;
                })
                .await;
        })
    }

    async fn check(c: &Channels, addr: &str, peer: Peer) -> Result<(), tonic::Status> {
        let channel = c.get(addr, peer, |e| e).unwrap();
        tonic_health::pb::health_client::HealthClient::new(channel)
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await
            .map(|_| ())
    }

    /// The shared channel keeps today's pin: a member's host that is no replica is refused
    /// under the replicas' pin (on every use, not only the first), accepted under any
    /// member's; and a channel whose server went away works again once it is back.
    #[tokio::test]
    async fn the_pin_holds_on_shared_channels_and_a_lost_server_is_reached_again() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = panel_transport::pki::issue(
            &panel_transport::pki::local_plan(3, &[("arb", "northwind"), ("relay", "southbank")]),
            &tmp.path().join("pki"),
        )
        .unwrap();
        let node = Transport::from_flags(
            Some(&pki.dir(&panel_transport::pki::node_dir_name("arb"))),
            Some(&pki.charter_path()),
            false,
        )
        .unwrap();
        let c = Channels::new(node);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = listener.local_addr().unwrap().to_string();
        let (stop_relay, stopped) = tokio::sync::oneshot::channel();
        let relay_task = serve(
            &pki,
            &panel_transport::pki::node_dir_name("relay"),
            listener,
            stopped,
        );
        for _ in 0..2 {
            let e = check(&c, &relay, Peer::Replicas).await.unwrap_err();
            let why = crate::exchange::describe(&e);
            assert!(why.contains("lists for no replica"), "{why}");
        }
        check(&c, &relay, Peer::AnyMember).await.unwrap();
        check(&c, &relay, Peer::AnyMember).await.unwrap();
        let _ = stop_relay.send(());
        relay_task.await.unwrap();

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let replica = addr.to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let task = serve(
            &pki,
            &panel_transport::pki::replica_dir_name(1),
            listener,
            stopped,
        );
        check(&c, &replica, Peer::Replicas).await.unwrap();
        let open = c.len();
        check(&c, &replica, Peer::Replicas).await.unwrap();
        assert_eq!(c.len(), open, "a second call makes no second channel");
        let _ = stop.send(());
        task.await.unwrap();

        // The server is gone: the call fails as unavailable, as callers retry on.
        let e = check(&c, &replica, Peer::Replicas).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
        c.forget(&replica, &Peer::Replicas);
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let task = serve(
            &pki,
            &panel_transport::pki::replica_dir_name(1),
            listener,
            stopped,
        );
        check(&c, &replica, Peer::Replicas).await.unwrap();
        let _ = stop.send(());
        task.await.unwrap();
    }
}
