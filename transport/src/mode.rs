//! How one process talks: mutual TLS with the federation's authorities, or the explicit
//! loopback debug mode. There is no silent plaintext fallback: a process with neither
//! refuses to start ([`TransportError::Unconfigured`]), and the debug mode refuses every
//! address that is not loopback.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tonic::transport::{ClientTlsConfig, Endpoint, Server, ServerTlsConfig};

use crate::charter::Charter;
use crate::error::TransportError;
use crate::material::TlsMaterial;

/// A process's transport security, cheap to clone.
#[derive(Clone, Debug)]
pub enum Transport {
    /// rustls through tonic; the charter says which certificates hold which role (a pure
    /// client may have none).
    Tls {
        material: Arc<TlsMaterial>,
        charter: Option<Arc<Charter>>,
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
            (Some(dir), false) => Ok(Transport::Tls {
                material: Arc::new(TlsMaterial::load(dir)?),
                charter: charter.map(crate::charter::load).transpose()?.map(Arc::new),
            }),
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
            Transport::Tls { material, charter } => {
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

    /// A lazily connecting endpoint for `addr` (`host:port`, or a URL whose scheme is
    /// replaced by this transport's): `https` with the federation's roots and this
    /// process's certificate, or `http` on loopback.
    pub fn endpoint(&self, addr: &str) -> Result<Endpoint, TransportError> {
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
            Transport::Tls { material, .. } => {
                let mut tls = ClientTlsConfig::new()
                    .ca_certificate(material.roots())
                    .domain_name(host);
                if let Some(id) = material.tonic_identity() {
                    tls = tls.identity(id);
                }
                Ok(Endpoint::from_shared(format!("https://{hostport}"))
                    .map_err(|e| bad(e.to_string()))?
                    .tls_config(tls)?)
            }
        }
        .map(|e| {
            e.connect_timeout(Duration::from_millis(2000))
                .tcp_nodelay(true)
        })
    }

    /// A server builder with this transport's TLS (none in the debug mode).
    pub fn server(&self, auth: ClientAuth) -> Result<Server, TransportError> {
        let builder = Server::builder();
        match self {
            Transport::InsecureLoopback => Ok(builder),
            Transport::Tls { material, .. } => {
                let identity =
                    material
                        .tonic_identity()
                        .ok_or_else(|| TransportError::NoIdentity {
                            dir: material.dir.display().to_string(),
                            what: "a server",
                        })?;
                let tls = ServerTlsConfig::new()
                    .identity(identity)
                    .client_ca_root(material.roots())
                    .client_auth_optional(auth == ClientAuth::Optional);
                Ok(builder.tls_config(tls)?)
            }
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
}
