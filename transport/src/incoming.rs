//! The connections a server accepts: the TLS handshake against the trust in force
//! ([`crate::verify::LiveClientVerifier`]), then a connection that closes itself when the
//! record withdraws trust in its peer ([`crate::trust::LiveTrust::set_organisations`]),
//! idle or not. The loopback debug mode accepts plain TCP through the same type.
//!
//! Handshakes run apart from the accept loop, at most [`MAX_HANDSHAKES`] at a time and
//! each within [`HANDSHAKE_TIMEOUT`], so a caller that stalls its handshake holds neither
//! the listener nor memory for long.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tonic::transport::server::Connected;

use crate::error::TransportError;
use crate::material::TlsMaterial;
use crate::trust::{LiveTrust, Tracked};
use crate::verify::LiveClientVerifier;

/// Handshakes in progress at once; connections beyond are closed at accept.
pub const MAX_HANDSHAKES: usize = 256;
/// How long a caller has to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Who is on the other end, as a request's extension ([`crate::peer`] reads it).
#[derive(Clone, Debug)]
pub struct ConnInfo {
    pub remote: Option<SocketAddr>,
    /// The chain the peer presented (leaf first), when it presented one over TLS.
    pub peer_certs: Option<Arc<Vec<CertificateDer<'static>>>>,
}

/// One accepted connection.
pub struct Conn {
    io: Io,
    info: ConnInfo,
    /// Present for a TLS peer that presented a chain.
    tracked: Option<Tracked>,
}

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Conn {
    fn plain(tcp: TcpStream) -> Self {
        let remote = tcp.peer_addr().ok();
        Self {
            io: Io::Plain(tcp),
            info: ConnInfo {
                remote,
                peer_certs: None,
            },
            tracked: None,
        }
    }

    fn tls(tls: TlsStream<TcpStream>, remote: SocketAddr, trust: &LiveTrust) -> Self {
        let peer_certs = tls
            .get_ref()
            .1
            .peer_certificates()
            .map(|c| Arc::new(c.iter().map(|c| c.clone().into_owned()).collect::<Vec<_>>()));
        let tracked = peer_certs.clone().map(|chain| trust.track(chain));
        Self {
            io: Io::Tls(Box::new(tls)),
            info: ConnInfo {
                remote: Some(remote),
                peer_certs,
            },
            tracked,
        }
    }

    /// Whether trust in the peer was withdrawn (registering the task to be woken if it
    /// is later).
    fn withdrawn(&self, cx: &Context<'_>) -> bool {
        self.tracked
            .as_ref()
            .is_some_and(|t| t.withdrawal.poll_withdrawn(cx))
    }
}

fn withdrawn_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the record no longer trusts this peer's organisation",
    )
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.withdrawn(cx) {
            return Poll::Ready(Err(withdrawn_error()));
        }
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.withdrawn(cx) {
            return Poll::Ready(Err(withdrawn_error()));
        }
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    /// Vectored writes pass through, as hyper's HTTP/2 codec writes a frame's head and
    /// body in one call when the stream supports it.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.withdrawn(cx) {
            return Poll::Ready(Err(withdrawn_error()));
        }
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.withdrawn(cx) {
            return Poll::Ready(Err(withdrawn_error()));
        }
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        self.info.clone()
    }
}

/// A stream of accepted connections for `Server::serve_with_incoming[_shutdown]`.
pub type Incoming = tokio_stream::wrappers::ReceiverStream<io::Result<Conn>>;

/// Accepts on `listener`: plain TCP when `tls` is `None`, else TLS with `identity`'s
/// certificate, checking callers against `trust` (a certificate required when
/// `mandatory`). The accept loop ends when the returned stream is dropped.
pub(crate) fn accept(
    listener: TcpListener,
    tls: Option<(&TlsMaterial, &LiveTrust, bool)>,
) -> Result<Incoming, TransportError> {
    let acceptor = tls
        .map(|(material, trust, mandatory)| acceptor(material, trust, mandatory))
        .transpose()?;
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        loop {
            let accepted = tokio::select! {
                r = listener.accept() => r,
                () = tx.closed() => return,
            };
            let (tcp, remote) = match accepted {
                Ok(a) => a,
                // Out of descriptors, or a connection reset before accept: wait a little
                // rather than spin, and keep serving.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let Some((acceptor, trust)) = &acceptor else {
                if tx.send(Ok(Conn::plain(tcp))).await.is_err() {
                    return;
                }
                continue;
            };
            let Ok(permit) = handshakes.clone().try_acquire_owned() else {
                continue;
            };
            let (tx, acceptor, trust) = (tx.clone(), acceptor.clone(), trust.clone());
            tokio::spawn(async move {
                let _permit = permit;
                if let Ok(Ok(tls)) =
                    tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
                {
                    let _ = tx.send(Ok(Conn::tls(tls, remote, &trust))).await;
                }
            });
        }
    });
    Ok(tokio_stream::wrappers::ReceiverStream::new(rx))
}

fn acceptor(
    material: &TlsMaterial,
    trust: &LiveTrust,
    mandatory: bool,
) -> Result<(TlsAcceptor, LiveTrust), TransportError> {
    let dir = material.dir.display().to_string();
    let (cert_pem, key_pem) =
        material
            .identity
            .as_ref()
            .ok_or_else(|| TransportError::NoIdentity {
                dir: dir.clone(),
                what: "a server",
            })?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TransportError::ServerIdentity {
            dir: dir.clone(),
            problem: format!("cert.pem: {e}"),
        })?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
        TransportError::ServerIdentity {
            dir: dir.clone(),
            problem: format!("key.pem: {e}"),
        }
    })?;
    let verifier = Arc::new(LiveClientVerifier::new(trust.clone(), mandatory));
    let mut config = rustls::ServerConfig::builder_with_provider(crate::verify::provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| {
            b.with_client_cert_verifier(verifier)
                .with_single_cert(chain, key)
        })
        .map_err(|e| TransportError::ServerIdentity {
            dir,
            problem: e.to_string(),
        })?;
    // gRPC is HTTP/2 only.
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), trust.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transport;
    use crate::mode::ClientAuth;
    use crate::pin::{Peer, PinnedVerifier};
    use crate::pki;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The HTTP/2 client preface: a server that accepted the connection answers it with
    /// its SETTINGS frame.
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

    /// A TLS client of `identity` (a folder) that trusts `roots_pem`, speaking h2.
    fn connector(identity: &std::path::Path, roots_pem: &[u8]) -> tokio_rustls::TlsConnector {
        let m = TlsMaterial::load(identity).unwrap();
        let (cert, key) = m.identity.unwrap();
        let chain = CertificateDer::pem_slice_iter(&cert)
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(&key).unwrap();
        let trust = LiveTrust::new(roots_pem, None);
        let verifier = PinnedVerifier::new(&trust, None, &Peer::AnyMember, "127.0.0.1").unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(crate::verify::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_client_auth_cert(chain, key)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }

    /// Connects, sends the preface and reads the server's first frame: the stream when the
    /// server answered (it accepted the certificate), `None` when it did not.
    async fn answered(
        c: &tokio_rustls::TlsConnector,
        addr: SocketAddr,
    ) -> Option<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(addr).await.ok()?;
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = c.connect(name, tcp).await.ok()?;
        tls.write_all(PREFACE).await.ok()?;
        let first_frame = async {
            let mut header = [0u8; 9];
            tls.read_exact(&mut header).await?;
            let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
            tls.read_exact(&mut vec![0u8; len]).await
        };
        match tokio::time::timeout(Duration::from_secs(10), first_frame).await {
            Ok(Ok(_)) => Some(tls),
            _ => None,
        }
    }

    /// Trust follows what the record says, over real sockets: a newcomer's client is
    /// refused by a replica's server until its organisation is put in force, then connects
    /// to the same server (no restart); when its organisation is removed, its open,
    /// idle connection is closed by the server, while a founder's stays open.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_admits_and_cuts_off_an_organisation_without_restarting() {
        let dir = tempfile::tempdir().unwrap();
        let founders = pki::issue(&pki::local_plan(3, &[]), &dir.path().join("f")).unwrap();
        let east_plan = pki::PkiPlan {
            organisations: vec!["eastgate".into()],
            identities: vec![pki::IdentitySpec {
                kind: pki::Kind::Client,
                name: "e1".into(),
                organisation: "eastgate".into(),
                hosts: vec![],
            }],
            exam: None,
            last_word: None,
            final_panel: None,
            key_seed: None,
        };
        let east = pki::issue(&east_plan, &dir.path().join("e")).unwrap();
        let server = Transport::from_flags(
            Some(&founders.dir(&pki::replica_dir_name(1))),
            Some(&founders.charter_path()),
            false,
        )
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = server.incoming(listener, ClientAuth::Required).unwrap();
        tokio::spawn(
            server
                .server()
                .add_routes(tonic::service::Routes::default())
                .serve_with_incoming(incoming),
        );

        let founders_ca = std::fs::read(founders.root.join("ca.pem")).unwrap();
        let newcomer = connector(&east.dir("e1"), &founders_ca);
        let founder = connector(&founders.dir(pki::LOCAL_CLIENT), &founders_ca);
        assert!(
            answered(&newcomer, addr).await.is_none(),
            "an organisation the record does not hold was let in"
        );

        let trust = server.trust().unwrap();
        let mut all: Vec<_> = founders.charter.organisations.clone();
        all.push(east.charter.organisations[0].clone());
        assert_eq!(trust.set_organisations(all.iter()), Some(0));
        let mut from_east = answered(&newcomer, addr)
            .await
            .expect("the admitted organisation connects without a restart");
        let mut from_founder = answered(&founder, addr).await.expect("a founder connects");

        assert_eq!(
            trust.set_organisations(founders.charter.organisations.iter()),
            Some(1),
            "one connection, the newcomer's, is withdrawn"
        );
        let mut rest = [0u8; 4096];
        let cut = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match from_east.read(&mut rest).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(
            cut.is_ok(),
            "the removed organisation's open connection stayed open"
        );
        assert!(answered(&newcomer, addr).await.is_none());
        // The founder's connection still carries frames: a PING sent now is acknowledged.
        from_founder
            .write_all(b"\0\0\x08\x06\0\0\0\0\0pingping")
            .await
            .unwrap();
        tokio::time::timeout(
            Duration::from_secs(10),
            ping_acknowledged(&mut from_founder),
        )
        .await
        .expect("the founder's connection answers");
    }

    /// Reads HTTP/2 frames until the acknowledgement of our PING; panics on a closed
    /// connection.
    async fn ping_acknowledged(s: &mut tokio_rustls::client::TlsStream<TcpStream>) {
        loop {
            let mut header = [0u8; 9];
            s.read_exact(&mut header).await.expect("connection open");
            let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
            let mut payload = vec![0u8; len];
            s.read_exact(&mut payload).await.expect("connection open");
            if header[3] == 0x6 && header[4] & 0x1 == 0x1 && payload == b"pingping" {
                return;
            }
        }
    }
}
