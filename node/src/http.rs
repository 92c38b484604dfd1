//! The node's outbound HTTP/1.1 client: the LLM judge's endpoint and the sources that tier
//! verification retrieves. `http://` goes in the clear; `https://` goes through rustls with
//! the ring provider (the one the rest of the workspace uses), verifying the server against
//! the system's root certificates or against a configured CA file (docs/JUDGES.md).
//!
//! One connection per request (`connection: close`): a model answers in seconds, so a TLS
//! handshake per request costs nothing that matters, and no pool outlives a request.
//! Everything is bounded: the whole exchange (connect, handshake, request, response) by a
//! timeout, the response body by a byte limit. URLs carrying user:password are refused
//! (a credential in a URL ends up in logs).
//!
//! Where a client may connect is its [`Destinations`]: anywhere for the judge's endpoint
//! (the operator's own setting), public unicast addresses only for retrieved sources. The
//! host is resolved here, the resolved addresses are vetted, and the TCP connection is made
//! to a vetted address itself, never to the name again (no second resolution an attacker's
//! DNS could answer differently). TLS still verifies the certificate for the URL's host.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Bytes;
use hyper::{HeaderMap, Method, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::pki_types::ServerName;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::address::{AddressError, Destinations};

/// Where HTTPS trust comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustRoots {
    /// The system's root certificates (`rustls-native-certs`: the system bundle, or the
    /// file named by `SSL_CERT_FILE`).
    System,
    /// Only the authorities in this PEM file, named by the config key `key` (for errors).
    CaFile { key: &'static str, path: PathBuf },
}

/// Why the client's TLS trust could not be set up. Each names the config key and the fix.
#[derive(Debug, Error)]
pub enum TlsSetupError {
    #[error(
        "{key} = {path:?}: cannot read the CA file ({source}); give the PEM file of the \
         authority that issued the endpoint's certificate, or remove {key} to use the \
         system's root certificates"
    )]
    Read {
        key: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{key} = {path:?}: no usable PEM certificate in the file ({detail}); it must hold \
         one or more \"-----BEGIN CERTIFICATE-----\" blocks"
    )]
    NoCertificate {
        key: &'static str,
        path: PathBuf,
        detail: String,
    },
    #[error(
        "no system root certificates could be loaded ({detail}); install the system's CA \
         bundle (ca-certificates), point SSL_CERT_FILE at one, or set {key} to a PEM file"
    )]
    NoSystemRoots { key: &'static str, detail: String },
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Why one request gave no response.
#[derive(Debug, Error)]
pub enum HttpError {
    #[error("{url:?} is not a usable URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{url}: no complete answer within {ms} ms")]
    Timeout { url: String, ms: u128 },
    #[error("{url}: cannot connect: {reason}")]
    Connect { url: String, reason: String },
    #[error("{url}: refused: {source}")]
    Refused {
        url: String,
        #[source]
        source: AddressError,
    },
    #[error(
        "{url}: TLS handshake failed: {reason}; if the server's certificate is issued by a \
         private authority, set {key} to its PEM file"
    )]
    Tls {
        url: String,
        reason: String,
        key: &'static str,
    },
    #[error("{url}: HTTPS is not available: {reason}")]
    NoTls {
        url: String,
        reason: Arc<TlsSetupError>,
    },
    #[error("{url}: HTTP exchange failed: {reason}")]
    Exchange { url: String, reason: String },
    #[error("{url}: the response is larger than {limit} bytes; refused")]
    TooLarge { url: String, limit: usize },
}

impl HttpError {
    /// Whether trying the same request again may help (transport trouble, not a wrong
    /// address, a bad certificate or an oversized answer).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            HttpError::Timeout { .. } | HttpError::Connect { .. } | HttpError::Exchange { .. }
        )
    }
}

/// A response: status, headers and the whole (bounded) body.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The client. Cheap to clone.
#[derive(Clone)]
pub struct HttpClient {
    /// `Err` holds why HTTPS is unavailable (system roots missing); `http://` still works.
    /// The setup error is kept (shared: the client is cloned) and reported by every
    /// `https://` request.
    tls: Result<Arc<rustls::ClientConfig>, Arc<TlsSetupError>>,
    /// The config key to name in TLS errors.
    key: &'static str,
    /// Where requests may connect.
    destinations: Destinations,
}

/// Reads every certificate of a PEM file as trust anchors.
fn load_ca_file(key: &'static str, path: &Path) -> Result<RootCertStore, TlsSetupError> {
    let pem = std::fs::read(path).map_err(|source| TlsSetupError::Read {
        key,
        path: path.to_owned(),
        source,
    })?;
    let mut store = RootCertStore::empty();
    let mut problems = Vec::new();
    for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        match cert {
            Ok(c) => {
                if let Err(e) = store.add(c) {
                    problems.push(format!("certificate {i}: {e}"));
                }
            }
            Err(e) => problems.push(format!("block {i}: {e}")),
        }
    }
    if store.is_empty() {
        return Err(TlsSetupError::NoCertificate {
            key,
            path: path.to_owned(),
            detail: if problems.is_empty() {
                "no certificate blocks".into()
            } else {
                problems.join("; ")
            },
        });
    }
    Ok(store)
}

fn system_roots(key: &'static str) -> Result<RootCertStore, TlsSetupError> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = RootCertStore::empty();
    let (added, _ignored) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        let detail = if found.errors.is_empty() {
            "the system store is empty".to_owned()
        } else {
            found
                .errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Err(TlsSetupError::NoSystemRoots { key, detail });
    }
    Ok(store)
}

fn client_config(store: RootCertStore) -> Result<Arc<rustls::ClientConfig>, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(store)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

impl HttpClient {
    /// A client trusting `roots` and connecting only to `destinations`. A configured CA
    /// file that cannot be used is an error now; missing system roots only make
    /// `https://` requests fail (naming the fix), so a node whose endpoints are all
    /// `http://` starts on a machine without a CA bundle.
    pub fn new(
        roots: &TrustRoots,
        key: &'static str,
        destinations: Destinations,
    ) -> Result<Self, TlsSetupError> {
        match roots {
            TrustRoots::CaFile {
                key: file_key,
                path,
            } => Ok(Self {
                tls: Ok(client_config(load_ca_file(file_key, path)?)?),
                key,
                destinations,
            }),
            TrustRoots::System => Ok(Self::system(key, destinations)),
        }
    }

    /// A client trusting the system's root certificates; if none can be loaded, `https://`
    /// requests fail with the reason and the fix (`key`).
    pub fn system(key: &'static str, destinations: Destinations) -> Self {
        let tls = system_roots(key).and_then(client_config).map_err(Arc::new);
        Self {
            tls,
            key,
            destinations,
        }
    }

    /// Whether `https://` requests can be made (for a start-up check of an https endpoint).
    pub fn https_ready(&self) -> Result<(), Arc<TlsSetupError>> {
        self.tls.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// One request. `headers` are added as given (never logged by this module); the body,
    /// if any, is sent with its length. Bounded by `timeout` and `limit` response bytes.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<Bytes>,
        limit: usize,
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        let bad = |reason: &str| HttpError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri =
            url.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| HttpError::BadUrl {
                    url: url.to_owned(),
                    reason: e.to_string(),
                })?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("only http:// and https:// are supported")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| bad("no host"))?
            .as_str()
            .to_owned();
        if authority.contains('@') {
            return Err(bad(
                "user:password in a URL is refused; give credentials through the key settings",
            ));
        }
        let host = uri
            .host()
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", authority)
            .header(
                "user-agent",
                concat!("crucible-panel-node/", env!("CARGO_PKG_VERSION")),
            )
            .header("connection", "close");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| bad(&e.to_string()))?;
        let tls = if https {
            Some(self.tls.clone().map_err(|reason| HttpError::NoTls {
                url: url.to_owned(),
                reason,
            })?)
        } else {
            None
        };
        let exchange = async {
            let tcp = self.connect(&host, port, url).await?;
            let _ = tcp.set_nodelay(true);
            match tls {
                None => exchange(TokioIo::new(tcp), req, url, limit).await,
                Some(cfg) => {
                    let name = ServerName::try_from(host.clone())
                        .map_err(|e| bad(&format!("host {host:?}: {e}")))?;
                    let stream = tokio_rustls::TlsConnector::from(cfg)
                        .connect(name, tcp)
                        .await
                        .map_err(|e| self.tls_error(url, e))?;
                    exchange(TokioIo::new(stream), req, url, limit).await
                }
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| HttpError::Timeout {
                url: url.to_owned(),
                ms: timeout.as_millis(),
            })?
    }

    /// Resolves `host` (a literal IP resolves to itself), keeps the addresses the client's
    /// [`Destinations`] allow, and connects to the first of them that answers. The stream
    /// is connected to a vetted address, so what was checked is what is reached.
    async fn connect(&self, host: &str, port: u16, url: &str) -> Result<TcpStream, HttpError> {
        let failed = |reason: String| HttpError::Connect {
            url: url.to_owned(),
            reason,
        };
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| failed(format!("cannot resolve {host}: {e}")))?
            .collect();
        let vetted =
            self.destinations
                .vet(host, &resolved)
                .map_err(|source| HttpError::Refused {
                    url: url.to_owned(),
                    source,
                })?;
        let mut last = format!("{host} resolves to no address");
        for addr in vetted {
            match TcpStream::connect(addr).await {
                Ok(tcp) => return Ok(tcp),
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        Err(failed(last))
    }

    /// A handshake failure: certificate trouble is named as such (not retryable); a
    /// connection that broke during the handshake is transport trouble (retryable).
    fn tls_error(&self, url: &str, e: std::io::Error) -> HttpError {
        let rustls_cause = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .is_some();
        if rustls_cause || e.kind() == std::io::ErrorKind::InvalidData {
            HttpError::Tls {
                url: url.to_owned(),
                reason: e.to_string(),
                key: self.key,
            }
        } else {
            HttpError::Exchange {
                url: url.to_owned(),
                reason: format!("during the TLS handshake: {e}"),
            }
        }
    }
}

/// Sends `req` over an established stream and reads the bounded response. The connection
/// future is driven alongside the response; the caller's timeout bounds both.
async fn exchange<T>(
    io: TokioIo<T>,
    req: hyper::Request<Full<Bytes>>,
    url: &str,
    limit: usize,
) -> Result<Response, HttpError>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let failed = |e: &dyn std::fmt::Display| HttpError::Exchange {
        url: url.to_owned(),
        reason: e.to_string(),
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| failed(&e))?;
    let response = async {
        let resp = sender.send_request(req).await.map_err(|e| failed(&e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = Limited::new(resp.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<LengthLimitError>().is_some() {
                    HttpError::TooLarge {
                        url: url.to_owned(),
                        limit,
                    }
                } else {
                    failed(&e)
                }
            })?
            .to_bytes();
        Ok(Response {
            status,
            headers,
            body,
        })
    };
    tokio::pin!(response);
    tokio::pin!(conn);
    tokio::select! {
        r = &mut response => r,
        // The connection ended first (closed after the last byte, or broken): the response
        // future then completes with the body or with the error.
        _ = &mut conn => response.await,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A test authority and a server certificate for 127.0.0.1 and localhost, as PEM.
    pub(crate) struct TestPki {
        pub ca_pem: String,
        pub server: Arc<rustls::ServerConfig>,
    }

    pub(crate) fn test_pki() -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .unwrap()
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
        TestPki {
            ca_pem: issuer.pem(),
            server: Arc::new(server),
        }
    }

    /// A one-answer-per-connection HTTPS server: replies `body` with `status`.
    async fn serve(pki: &TestPki, status: u16, body: &'static str) -> (u16, Arc<AtomicUsize>) {
        serve_with(pki, move |_| (status, body.to_owned())).await
    }

    /// A one-answer-per-connection HTTPS server answering each request body with
    /// `answer(body)`; counts the requests.
    pub(crate) async fn serve_with(
        pki: &TestPki,
        answer: impl Fn(&str) -> (u16, String) + Send + Sync + 'static,
    ) -> (u16, Arc<AtomicUsize>) {
        let (port, seen) = serve_full(pki, move |_, body| {
            let (status, body) = answer(body);
            (status, vec![], body)
        })
        .await;
        (port, seen.answered)
    }

    /// What a test server saw: TCP connections accepted, requests answered.
    #[derive(Clone, Default)]
    pub(crate) struct Seen {
        pub accepted: Arc<AtomicUsize>,
        pub answered: Arc<AtomicUsize>,
    }

    impl Seen {
        pub(crate) fn accepted(&self) -> usize {
            self.accepted.load(Ordering::Relaxed)
        }
        pub(crate) fn answered(&self) -> usize {
            self.answered.load(Ordering::Relaxed)
        }
    }

    /// A one-answer-per-connection HTTPS server on 127.0.0.1 answering each request with
    /// `answer(head, body)` (the head as received: request line and headers), which gives
    /// the status, extra response headers and the body.
    pub(crate) async fn serve_full(
        pki: &TestPki,
        answer: impl Fn(&str, &str) -> (u16, Vec<(String, String)>, String) + Send + Sync + 'static,
    ) -> (u16, Seen) {
        let answer = Arc::new(answer);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let acceptor = tokio_rustls::TlsAcceptor::from(pki.server.clone());
        let counts = Seen::default();
        let seen = counts.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                seen.accepted.fetch_add(1, Ordering::Relaxed);
                let acceptor = acceptor.clone();
                let seen = seen.clone();
                let answer = answer.clone();
                tokio::spawn(async move {
                    let Ok(mut s) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = vec![0u8; 8192];
                    let mut got = Vec::new();
                    let head_end = loop {
                        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    };
                    let raw_head = String::from_utf8_lossy(&got[..head_end]).into_owned();
                    let head = raw_head.to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while got.len() < head_end + len {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let (status, extra, body) = answer(
                        &raw_head,
                        &String::from_utf8_lossy(&got[head_end..head_end + len]),
                    );
                    seen.answered.fetch_add(1, Ordering::Relaxed);
                    let extra: String =
                        extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(reply.as_bytes()).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        (port, counts)
    }

    #[tokio::test]
    async fn https_with_a_ca_file_works_and_without_it_names_the_key() {
        let pki = test_pki();
        let (port, count) = serve(&pki, 200, "hello over tls").await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        let client = HttpClient::new(
            &TrustRoots::CaFile {
                key: "judge.ca_file",
                path: ca,
            },
            "judge.ca_file",
            Destinations::Any,
        )
        .unwrap();
        let url = format!("https://127.0.0.1:{port}/v1/x");
        let r = client
            .send(Method::GET, &url, &[], None, 1024, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(&r.body[..], b"hello over tls");
        // Too large a body is refused, not truncated.
        let e = client
            .send(Method::GET, &url, &[], None, 4, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, HttpError::TooLarge { .. }), "{e}");
        assert!(!e.retryable());
        // Another authority's CA file: the handshake fails and the error names the key.
        let other = test_pki();
        let other_ca = dir.path().join("other.pem");
        std::fs::write(&other_ca, &other.ca_pem).unwrap();
        let wrong = HttpClient::new(
            &TrustRoots::CaFile {
                key: "judge.ca_file",
                path: other_ca,
            },
            "judge.ca_file",
            Destinations::Any,
        )
        .unwrap();
        let e = wrong
            .send(Method::GET, &url, &[], None, 1024, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(e, HttpError::Tls { .. }) && e.to_string().contains("judge.ca_file"),
            "{e}"
        );
        assert!(!e.retryable());
        assert_eq!(
            count.load(Ordering::Relaxed),
            2,
            "no request passed a bad handshake"
        );
    }

    #[tokio::test]
    async fn bad_ca_files_and_urls_are_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let e = HttpClient::new(
            &TrustRoots::CaFile {
                key: "retrieval.ca_file",
                path: missing,
            },
            "retrieval.ca_file",
            Destinations::public_only(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("retrieval.ca_file"), "{e}");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let e = HttpClient::new(
            &TrustRoots::CaFile {
                key: "judge.ca_file",
                path: junk,
            },
            "judge.ca_file",
            Destinations::Any,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("BEGIN CERTIFICATE"), "{e}");
        let c = HttpClient::new(&TrustRoots::System, "judge.ca_file", Destinations::Any).unwrap();
        for (url, needle) in [
            ("ftp://x/", "http:// and https://"),
            ("http://user:pw@127.0.0.1:1/", "user:password"),
            ("not a url", "usable URL"),
        ] {
            let e = c
                .send(Method::GET, url, &[], None, 10, Duration::from_secs(1))
                .await
                .unwrap_err();
            assert!(e.to_string().contains(needle), "{url}: {e}");
        }
    }

    /// A client under the public-address rule refuses loopback however it is spelled,
    /// before any connection; an allowed host is reached; the judge's client (`Any`) is not
    /// affected (the test above).
    #[tokio::test]
    async fn public_only_clients_refuse_non_public_destinations_before_connecting() {
        let pki = test_pki();
        let (port, seen) = serve_full(&pki, |_, _| (200, vec![], "inside".into())).await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        let roots = TrustRoots::CaFile {
            key: "retrieval.ca_file",
            path: ca,
        };
        let public =
            HttpClient::new(&roots, "retrieval.ca_file", Destinations::public_only()).unwrap();
        let get = |c: &HttpClient, url: String| {
            let c = c.clone();
            async move {
                c.send(Method::GET, &url, &[], None, 1024, Duration::from_secs(5))
                    .await
            }
        };
        for (url, ip) in [
            (format!("https://127.0.0.1:{port}/"), "127.0.0.1"),
            (format!("http://127.0.0.1:{port}/"), "127.0.0.1"),
            (
                format!("https://[::ffff:127.0.0.1]:{port}/"),
                "::ffff:127.0.0.1",
            ),
            (format!("https://[::1]:{port}/"), "::1"),
            (format!("http://0.0.0.0:{port}/"), "0.0.0.0"),
        ] {
            let e = get(&public, url.clone()).await.unwrap_err();
            let HttpError::Refused { source, .. } = &e else {
                panic!("{url}: {e}");
            };
            assert_eq!(source.ip.to_string(), ip, "{url}");
            assert!(!e.retryable());
            assert!(e.to_string().contains("retrieval.allow_hosts"), "{e}");
        }
        // A name that resolves to loopback is refused on what it resolves to.
        let e = get(&public, format!("https://localhost:{port}/"))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, HttpError::Refused { source, .. } if source.host == "localhost"),
            "{e}"
        );
        // 127.0.0.1 as one decimal number: the resolver may or may not take it; either
        // way the test server is not reached.
        assert!(
            get(&public, format!("http://2130706433:{port}/"))
                .await
                .is_err()
        );
        assert_eq!(seen.accepted(), 0, "no refused request reached the server");

        // Exempt by exact host: reached; another spelling of the same address is not exempt.
        let allow = crate::address::AllowHosts::parse(&["127.0.0.1"]).unwrap();
        let mirror =
            HttpClient::new(&roots, "retrieval.ca_file", Destinations::Public(allow)).unwrap();
        let r = get(&mirror, format!("https://127.0.0.1:{port}/"))
            .await
            .unwrap();
        assert_eq!(&r.body[..], b"inside");
        let e = get(&mirror, format!("https://localhost:{port}/"))
            .await
            .unwrap_err();
        assert!(matches!(e, HttpError::Refused { .. }), "{e}");
        assert_eq!((seen.accepted(), seen.answered()), (1, 1));
    }
}
