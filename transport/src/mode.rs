//! How one process talks: mutual TLS with the federation's authorities, or the explicit
//! loopback debug mode. There is no silent plaintext fallback: a process with neither
//! refuses to start ([`TransportError::Unconfigured`]), and the debug mode refuses every
//! address that is not loopback.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::{ClientTlsConfig, Endpoint, Server};

use crate::charter_file::Charter;
use crate::error::TransportError;
use crate::incoming::Incoming;
use crate::material::TlsMaterial;
use crate::pin::{Peer, PinnedVerifier, Unpinnable};
use crate::trust::LiveTrust;

/// A process's transport security, cheap to clone.
#[derive(Clone, Debug)]
pub enum Transport {
    /// rustls; the charter says which certificates hold which role (a pure client may have
    /// none), and `trust` which organisations' authorities the record trusts now.
    Tls {
        material: Arc<TlsMaterial>,
        charter: Option<Arc<Charter>>,
        trust: LiveTrust,
    },
    /// Plaintext on loopback only (`--insecure-loopback`), for debugging and the tests of
    /// unrelated features.
    InsecureLoopback,
}

/// Whether a server asks its callers for a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// Anonymous readers may connect; role-bearing services check the certificate.
    Optional,
    /// Only callers with a certificate from one of the federation's authorities connect.
    Required,
}

impl Transport {
    /// From the usual flags: `--tls DIR`, `--charter FILE`, `--insecure-loopback`.
    pub fn from_flags(
        tls: Option<&Path>,
        charter: Option<&Path>,
        insecure_loopback: bool,
    ) -> Result<Self, TransportError> {
        match (tls, insecure_loopback) {
            (Some(_), true) => Err(TransportError::Both),
            (None, true) => Ok(Transport::InsecureLoopback),
            (None, false) => Err(TransportError::Unconfigured),
            (Some(dir), false) => {
                let material = TlsMaterial::load(dir)?;
                let charter = charter
                    .map(crate::charter_file::load)
                    .transpose()?
                    .map(Arc::new);
                let trust = LiveTrust::new(&material.roots_pem, charter.as_deref());
                Ok(Transport::Tls {
                    material: Arc::new(material),
                    charter,
                    trust,
                })
            }
        }
    }

    /// The organisations this process trusts now (`None` in the debug mode); a replica
    /// puts the record's set in force after each apply that changes it.
    pub fn trust(&self) -> Option<&LiveTrust> {
        match self {
            Transport::Tls { trust, .. } => Some(trust),
            Transport::InsecureLoopback => None,
        }
    }

    /// The charter this process checks roles against (`None` in the debug mode).
    pub fn charter(&self) -> Option<Arc<Charter>> {
        match self {
            Transport::Tls { charter, .. } => charter.clone(),
            Transport::InsecureLoopback => None,
        }
    }

    /// Refuses a TLS process without a charter or an identity, for servers that hold a
    /// role (replicas, nodes): they must know whom to trust and present who they are.
    pub fn require_server(&self, what: &'static str) -> Result<(), TransportError> {
        match self {
            Transport::Tls {
                material, charter, ..
            } => {
                material.require_identity(what)?;
                if charter.is_none() {
                    return Err(TransportError::NoCharter { what });
                }
                Ok(())
            }
            Transport::InsecureLoopback => Ok(()),
        }
    }

    /// Refuses a plaintext listener or peer that is not on loopback.
    pub fn check_addr(&self, addr: &str) -> Result<(), TransportError> {
        if matches!(self, Transport::Tls { .. }) {
            return Ok(());
        }
        let hostport = strip_scheme(addr);
        let loopback = hostport
            .to_socket_addrs()
            .map(|mut a| a.all(|a| a.ip().is_loopback()))
            .unwrap_or(false);
        if loopback {
            Ok(())
        } else {
            Err(TransportError::NotLoopback { addr: addr.into() })
        }
    }

    /// [`check_addr`](Self::check_addr) for a bound socket address.
    pub fn check_listen(&self, addr: SocketAddr) -> Result<(), TransportError> {
        match self {
            Transport::InsecureLoopback if !is_loopback(addr.ip()) => {
                Err(TransportError::NotLoopback {
                    addr: addr.to_string(),
                })
            }
            _ => Ok(()),
        }
    }

    /// A lazily connecting endpoint for `addr` that accepts any server of the federation
    /// ([`Peer::AnyMember`]); a caller that means to reach a replica uses
    /// [`endpoint_pinned`](Self::endpoint_pinned) instead.
    pub fn endpoint(&self, addr: &str) -> Result<Endpoint, TransportError> {
        self.endpoint_pinned(addr, Peer::AnyMember)
    }

    /// A lazily connecting endpoint for `addr` (`host:port`, or a URL whose scheme is
    /// replaced by this transport's): `https` with this process's certificate, accepting
    /// only a server whose certificate chains to the federation's roots, is valid for the
    /// host and is `peer` by the charter ([`PinnedVerifier`]); or `http` on loopback, where
    /// nobody presents a certificate and `peer` is not checked.
    pub fn endpoint_pinned(&self, addr: &str, peer: Peer) -> Result<Endpoint, TransportError> {
        let hostport = strip_scheme(addr).trim_end_matches('/');
        let bad = |reason: String| TransportError::BadAddress {
            addr: addr.into(),
            reason,
        };
        let host = host_of(hostport).ok_or_else(|| bad("no host:port".into()))?;
        match self {
            Transport::InsecureLoopback => {
                self.check_addr(hostport)?;
                Endpoint::from_shared(format!("http://{hostport}")).map_err(|e| bad(e.to_string()))
            }
            Transport::Tls {
                material,
                charter,
                trust,
            } => {
                let verifier = PinnedVerifier::new(trust, charter.as_ref(), &peer, hostport)
                    .map_err(|e| match e {
                        Unpinnable::NoCharter => TransportError::NoCharter {
                            what: "a connection pinned to the charter's replicas",
                        },
                        Unpinnable::UnknownReplica(id) => TransportError::UnknownReplica { id },
                        Unpinnable::Roots(problem) => TransportError::Roots {
                            dir: material.dir.display().to_string(),
                            problem,
                        },
                    })?;
                let mut tls = ClientTlsConfig::new().domain_name(host);
                if let Some(id) = material.tonic_identity() {
                    tls = tls.identity(id);
                }
                Ok(Endpoint::from_shared(format!("https://{hostport}"))
                    .map_err(|e| bad(e.to_string()))?
                    .tls_config_with_verifier(tls, Arc::new(verifier))?)
            }
        }
        .map(|e| {
            e.connect_timeout(Duration::from_millis(2000))
                .tcp_nodelay(true)
        })
    }

    /// The pin for a client of the replicas: [`Peer::Replicas`] when this process holds the
    /// charter, else [`Peer::AnyMember`] (a CLI or reader given only `ca.pem` cannot know
    /// the replicas' certificates; the content it reads is checked by `panel verify`).
    pub fn replica_peer(&self) -> Peer {
        match self.charter() {
            Some(_) => Peer::Replicas,
            None => Peer::AnyMember,
        }
    }

    /// A server builder. It carries no TLS of its own: serve it only with
    /// [`incoming`](Self::incoming), which does the handshakes.
    pub fn server(&self) -> Server {
        Server::builder()
    }

    /// The connections `listener` accepts, for `serve_with_incoming[_shutdown]`: TLS with
    /// this process's identity, callers checked against the trust in force at each
    /// handshake and cut off when the record withdraws it (`auth` says whether a caller
    /// must present a certificate); plain TCP in the debug mode. Needs a tokio runtime.
    pub fn incoming(
        &self,
        listener: TcpListener,
        auth: ClientAuth,
    ) -> Result<Incoming, TransportError> {
        match self {
            Transport::InsecureLoopback => crate::incoming::accept(listener, None),
            Transport::Tls {
                material, trust, ..
            } => crate::incoming::accept(
                listener,
                Some((material, trust, auth == ClientAuth::Required)),
            ),
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls { .. })
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// `host:port` of an address given as `host:port` or `scheme://host:port[/...]`.
pub fn strip_scheme(addr: &str) -> &str {
    let a = addr.trim();
    let a = a.split_once("://").map_or(a, |(_, rest)| rest);
    a.split('/').next().unwrap_or(a)
}

/// The host part of `host:port` (brackets of an IPv6 literal removed).
fn host_of(hostport: &str) -> Option<String> {
    let (host, port) = hostport.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| host.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_configuration_is_refused_with_the_fix() {
        let e = Transport::from_flags(None, None, false).unwrap_err();
        assert!(e.to_string().contains("--insecure-loopback"), "{e}");
        assert!(matches!(
            Transport::from_flags(Some(Path::new("/x")), None, true),
            Err(TransportError::Both)
        ));
    }

    #[test]
    fn plaintext_is_loopback_only() {
        let t = Transport::InsecureLoopback;
        assert!(t.check_addr("127.0.0.1:7001").is_ok());
        assert!(t.check_addr("http://127.0.0.1:7001").is_ok());
        assert!(t.check_addr("[::1]:7001").is_ok());
        assert!(t.check_addr("10.0.0.7:7001").is_err());
        assert!(t.check_addr("192.0.2.1:7001").is_err());
        assert!(t.check_listen("0.0.0.0:7001".parse().unwrap()).is_err());
        assert!(t.endpoint("10.1.2.3:7001").is_err());
        assert!(t.endpoint("127.0.0.1:7001").is_ok());
    }

    #[test]
    fn schemes_are_replaced_by_the_transport() {
        assert_eq!(strip_scheme("http://h:1/x"), "h:1");
        assert_eq!(strip_scheme(" h:1 "), "h:1");
        assert_eq!(host_of("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(host_of("h"), None);
    }

    /// Over a real handshake: a replica's transport dialling a server that holds another
    /// member's certificate gets no connection, and the error says why; dialling a
    /// charter replica's server works, pinned by id or to any replica.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pinned_endpoint_refuses_another_members_server_over_tls() {
        use crate::pki;
        let dir = tempfile::tempdir().unwrap();
        let issued = pki::issue(
            &pki::local_plan(3, &[("relay", "southbank")]),
            &dir.path().join("pki"),
        )
        .unwrap();
        let serve = |name: &str| {
            let t = Transport::from_flags(Some(&issued.dir(name)), None, false).unwrap();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let incoming = t
                .incoming(
                    tokio::net::TcpListener::from_std(listener).unwrap(),
                    ClientAuth::Required,
                )
                .unwrap();
            let server = t.server().add_routes(tonic::service::Routes::default());
            tokio::spawn(server.serve_with_incoming(incoming));
            addr
        };
        let relay = serve(&pki::node_dir_name("relay"));
        let replica_1 = serve(&pki::replica_dir_name(1));
        let me = Transport::from_flags(
            Some(&issued.dir(&pki::replica_dir_name(2))),
            Some(&issued.charter_path()),
            false,
        )
        .unwrap();
        assert_eq!(me.replica_peer(), Peer::Replicas);

        for peer in [Peer::Replicas, Peer::Replica(1)] {
            let e = me
                .endpoint_pinned(&relay, peer.clone())
                .unwrap()
                .connect()
                .await
                .expect_err("the relay was accepted as a replica");
            let pin = crate::pin::pin_error(&e).unwrap_or_else(|| panic!("no pin error: {e:?}"));
            let msg = crate::pin::connect_failure(&e);
            assert_eq!(msg, pin.to_string());
            assert!(msg.contains(&relay) && msg.contains("no replica"), "{msg}");
        }
        // Another replica than the one dialled is refused too, naming both.
        let e = me
            .endpoint_pinned(&replica_1, Peer::Replica(3))
            .unwrap()
            .connect()
            .await
            .expect_err("replica 1 was accepted as replica 3");
        let msg = crate::pin::connect_failure(&e);
        assert!(
            msg.contains("lists for replica 1") && msg.contains("to replica 3"),
            "{msg}"
        );
        // The real replica, and the relay where any member will do.
        for (addr, peer) in [
            (&replica_1, Peer::Replicas),
            (&replica_1, Peer::Replica(1)),
            (&relay, Peer::AnyMember),
        ] {
            me.endpoint_pinned(addr, peer.clone())
                .unwrap()
                .connect()
                .await
                .unwrap_or_else(|e| {
                    panic!("{addr} as {peer:?}: {}", crate::pin::connect_failure(&e))
                });
        }
        // Without a charter, a replica pin cannot be promised.
        let client =
            Transport::from_flags(Some(&issued.dir(pki::LOCAL_CLIENT)), None, false).unwrap();
        assert_eq!(client.replica_peer(), Peer::AnyMember);
        assert!(matches!(
            client.endpoint_pinned(&replica_1, Peer::Replicas),
            Err(TransportError::NoCharter { .. })
        ));
        assert!(matches!(
            me.endpoint_pinned(&replica_1, Peer::Replica(9)),
            Err(TransportError::UnknownReplica { id: 9 })
        ));
    }
}
