//! Which server a connection accepts (docs/SECURITY.md, "Transport"). A certificate that
//! chains to one of the federation's authorities proves only membership of some
//! organisation: any member can mint one for its own hosts. So a process dialling a
//! replica also requires the server's end-entity certificate to be the one the charter
//! pins for a replica (`replicas[i].cert_sha256`); otherwise another member's relay,
//! placed where a replica is expected, could sit in the middle of the link and drop what
//! passes through it.
//!
//! [`PinnedVerifier`] is a rustls `ServerCertVerifier`: it runs the usual webpki checks
//! (chain to an authority the record trusts at the handshake, [`crate::trust`]; validity;
//! host name) and then the pin.

use std::sync::Arc;

use panel_federation::Charter;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};

use crate::peer::Fingerprint;
use crate::trust::LiveTrust;

/// Whom a connection is meant to reach, beyond membership of the federation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Any certificate of the federation's authorities that is valid for the host: plain
    /// clients without a charter, node-to-node delivery, and calls to arbiter nodes,
    /// whose certificates the charter does not pin (what they send is signed end to end).
    AnyMember,
    /// One of the charter's replicas (any of `replicas[i].cert_sha256`), for a caller
    /// that knows an address but not which replica serves it (a node's link, a client).
    Replicas,
    /// The charter's replica with this id, for a replica dialling a member of its group.
    Replica(u64),
}

/// Why a server was refused although its certificate chains to a federation authority;
/// each message names what the server presented and what the charter expects.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error(
        "the server at {addr} presented certificate {presented}, which the charter lists for \
         no replica; a replica's certificate must match its charter entry \
         (replicas[i].cert_sha256): dial a replica's own address (not a relay or another \
         member's host), or put the replica's new certificate in the charter first"
    )]
    NotAReplica {
        addr: String,
        presented: Fingerprint,
    },
    #[error(
        "the server at {addr} presented certificate {presented}, which the charter lists for \
         {holder}, but this connection is to replica {id}, whose charter entry pins \
         {expected} (replicas[i].cert_sha256); correct the address the group's membership \
         gives replica {id}"
    )]
    NotThatReplica {
        addr: String,
        id: u64,
        expected: Fingerprint,
        presented: Fingerprint,
        /// `replica N` or `no replica`.
        holder: String,
    },
}

/// The message, so that rustls' `Debug` rendering of the wrapped error still reads.
impl std::fmt::Debug for PinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// What the pin requires, resolved against the charter when the endpoint is built.
#[derive(Clone, Debug)]
enum Expect {
    Any,
    Replicas(Arc<Charter>),
    Replica {
        id: u64,
        cert: Fingerprint,
        charter: Arc<Charter>,
    },
}

/// Why a verifier cannot be built from the configuration (named by [`crate::Transport`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unpinnable {
    /// The pin needs the charter, and the process has none.
    NoCharter,
    /// The charter lists no replica with this id.
    UnknownReplica(u64),
    /// The roots could not make a verifier (none parsable, for instance).
    Roots(String),
}

/// The webpki server checks against the authorities trusted at the handshake, then the
/// pin.
#[derive(Debug)]
pub struct PinnedVerifier {
    trust: LiveTrust,
    provider: Arc<CryptoProvider>,
    expect: Expect,
    /// `host:port` as dialled, for the error message.
    addr: String,
}

impl PinnedVerifier {
    /// A verifier for a connection to `addr` trusting what `trust` holds at each handshake
    /// and requiring `peer` as resolved against `charter`.
    pub(crate) fn new(
        trust: &LiveTrust,
        charter: Option<&Arc<Charter>>,
        peer: &Peer,
        addr: &str,
    ) -> Result<Self, Unpinnable> {
        let expect = match (peer, charter) {
            (Peer::AnyMember, _) => Expect::Any,
            (Peer::Replicas | Peer::Replica(_), None) => return Err(Unpinnable::NoCharter),
            (Peer::Replicas, Some(c)) => Expect::Replicas(c.clone()),
            (Peer::Replica(id), Some(c)) => {
                let entry = c
                    .replicas
                    .iter()
                    .find(|r| r.id == *id)
                    .ok_or(Unpinnable::UnknownReplica(*id))?;
                Expect::Replica {
                    id: *id,
                    cert: entry.cert_sha256.clone(),
                    charter: c.clone(),
                }
            }
        };
        // Without a charter nothing but ca.pem can anchor a server; say so now rather
        // than at every handshake.
        if charter.is_none() && trust.view().roots_for(&[]).is_empty() {
            return Err(Unpinnable::Roots("it holds no certificate".into()));
        }
        Ok(Self {
            trust: trust.clone(),
            provider: crate::verify::provider(),
            expect,
            addr: addr.to_owned(),
        })
    }

    /// The pin alone, on a certificate the webpki checks already passed.
    fn check_pin(&self, end_entity: &CertificateDer<'_>) -> Result<(), PinError> {
        let presented = Fingerprint::of_der(end_entity.as_ref());
        match &self.expect {
            Expect::Any => Ok(()),
            Expect::Replicas(charter) => match charter.replica(&presented) {
                Some(_) => Ok(()),
                None => Err(PinError::NotAReplica {
                    addr: self.addr.clone(),
                    presented,
                }),
            },
            Expect::Replica { id, cert, charter } => {
                if *cert == presented {
                    return Ok(());
                }
                let holder = charter
                    .replica(&presented)
                    .map_or_else(|| "no replica".to_owned(), |r| format!("replica {}", r.id));
                Err(PinError::NotThatReplica {
                    addr: self.addr.clone(),
                    id: *id,
                    expected: cert.clone(),
                    presented,
                    holder,
                })
            }
        }
    }
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let roots = self.trust.view().roots_for(intermediates);
        if roots.is_empty() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            ));
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, self.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        let verified = webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )?;
        self.check_pin(end_entity).map_err(|e| {
            rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(e))))
        })?;
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The pin refusal behind a failed connection, if that is why it failed: walks the error's
/// sources (tonic, the connector, the I/O error rustls' failure travels in).
pub fn pin_error<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a PinError> {
    fn in_rustls(e: &rustls::Error) -> Option<&PinError> {
        match e {
            rustls::Error::InvalidCertificate(CertificateError::Other(o)) => {
                o.0.downcast_ref::<PinError>()
            }
            _ => None,
        }
    }
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(p) = e.downcast_ref::<PinError>() {
            return Some(p);
        }
        if let Some(p) = e.downcast_ref::<rustls::Error>().and_then(in_rustls) {
            return Some(p);
        }
        // io::Error's own `source` skips the error it wraps; look inside it.
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            if let Some(p) = inner.downcast_ref::<PinError>() {
                return Some(p);
            }
            if let Some(p) = inner.downcast_ref::<rustls::Error>().and_then(in_rustls) {
                return Some(p);
            }
        }
        next = e.source();
    }
    None
}

/// A failed connection in one line: the pin refusal if that is the cause, else every
/// message along the error's sources (tonic's own says only "transport error").
pub fn connect_failure(err: &(dyn std::error::Error + 'static)) -> String {
    if let Some(p) = pin_error(err) {
        return p.to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let s = e.to_string();
        // A wrapper often repeats its source's message; keep each once.
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        next = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::{TlsMaterial, first_der};
    use crate::pki::{self, Issued};

    fn issued(dir: &std::path::Path) -> Issued {
        pki::issue(
            &pki::local_plan(3, &[("relay", "southbank")]),
            &dir.join("pki"),
        )
        .unwrap()
    }

    fn leaf(issued: &Issued, name: &str) -> CertificateDer<'static> {
        let m = TlsMaterial::load(&issued.dir(name)).unwrap();
        CertificateDer::from(first_der(&m.identity.unwrap().0).unwrap())
    }

    fn verify(v: &PinnedVerifier, cert: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        let host = ServerName::try_from("127.0.0.1").unwrap();
        v.verify_server_cert(cert, &[], &host, &[], UnixTime::now())
            .map(|_| ())
    }

    fn verifier(issued: &Issued, peer: Peer) -> PinnedVerifier {
        let roots = std::fs::read(issued.root.join("ca.pem")).unwrap();
        let charter = Arc::new(issued.charter.clone());
        let trust = LiveTrust::new(&roots, Some(&charter));
        PinnedVerifier::new(&trust, Some(&charter), &peer, "127.0.0.1:7001").unwrap()
    }

    #[test]
    fn a_replica_pin_accepts_the_charters_replicas_only() {
        let dir = tempfile::tempdir().unwrap();
        let issued = issued(dir.path());
        let replicas = verifier(&issued, Peer::Replicas);

        // Listed: each replica's own certificate.
        for id in 1..=3 {
            verify(&replicas, &leaf(&issued, &pki::replica_dir_name(id))).unwrap();
        }

        // Another member's certificate: chains to southbank's authority and names the host,
        // but the charter lists it for no replica.
        let relay = leaf(&issued, &pki::node_dir_name("relay"));
        let e = verify(&replicas, &relay).unwrap_err();
        let pin = pin_error(&e).expect("a pin refusal");
        assert!(
            matches!(pin, PinError::NotAReplica { presented, .. }
                if *presented == Fingerprint::of_der(relay.as_ref())),
            "{pin}"
        );
        let msg = pin.to_string();
        for needle in [
            "127.0.0.1:7001",
            "lists for no replica",
            "replicas[i].cert_sha256",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing in: {msg}");
        }
        // The same certificate is fine where any member will do.
        verify(&verifier(&issued, Peer::AnyMember), &relay).unwrap();

        // An authority outside the federation: refused by the chain check, before any pin,
        // whatever the pin.
        let plan = pki::PkiPlan {
            organisations: vec!["elsewhere".into()],
            identities: vec![pki::IdentitySpec {
                kind: pki::Kind::Replica { id: 1 },
                name: "stranger".into(),
                organisation: "elsewhere".into(),
                hosts: vec!["127.0.0.1".into()],
            }],
            exam: None,
            last_word: None,
            final_panel: None,
            key_seed: None,
        };
        let foreign = pki::issue(&plan, &dir.path().join("foreign")).unwrap();
        let stranger = leaf(&foreign, "stranger");
        for peer in [Peer::Replicas, Peer::AnyMember] {
            let e = verify(&verifier(&issued, peer), &stranger).unwrap_err();
            assert!(
                matches!(
                    e,
                    rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
                ),
                "{e:?}"
            );
            assert!(pin_error(&e).is_none());
        }
        // An impostor authority under a member's name does not pass either.
        let impostor = pki::issue(&pki::local_plan(1, &[]), &dir.path().join("impostor")).unwrap();
        let e = verify(&replicas, &leaf(&impostor, &pki::replica_dir_name(1))).unwrap_err();
        assert!(
            matches!(e, rustls::Error::InvalidCertificate(_)) && pin_error(&e).is_none(),
            "{e:?}"
        );
    }

    #[test]
    fn a_replica_id_pin_accepts_that_replica_only() {
        let dir = tempfile::tempdir().unwrap();
        let issued = issued(dir.path());
        let two = verifier(&issued, Peer::Replica(2));
        verify(&two, &leaf(&issued, &pki::replica_dir_name(2))).unwrap();
        let e = verify(&two, &leaf(&issued, &pki::replica_dir_name(1))).unwrap_err();
        let msg = pin_error(&e).expect("a pin refusal").to_string();
        for needle in ["lists for replica 1", "connection is to replica 2"] {
            assert!(msg.contains(needle), "{needle:?} missing in: {msg}");
        }
        let e = verify(&two, &leaf(&issued, &pki::node_dir_name("relay"))).unwrap_err();
        let msg = pin_error(&e).expect("a pin refusal").to_string();
        assert!(msg.contains("lists for no replica"), "{msg}");

        // A replica the charter does not list, and a pin without a charter, cannot be built.
        let roots = LiveTrust::new(&std::fs::read(issued.root.join("ca.pem")).unwrap(), None);
        let charter = Arc::new(issued.charter.clone());
        assert_eq!(
            PinnedVerifier::new(&roots, Some(&charter), &Peer::Replica(9), "h:1").unwrap_err(),
            Unpinnable::UnknownReplica(9)
        );
        assert_eq!(
            PinnedVerifier::new(&roots, None, &Peer::Replicas, "h:1").unwrap_err(),
            Unpinnable::NoCharter
        );
        assert!(PinnedVerifier::new(&roots, None, &Peer::AnyMember, "h:1").is_ok());
        // Without a charter, an empty ca.pem can anchor nothing: said when building.
        let empty = LiveTrust::new(b"", None);
        assert!(matches!(
            PinnedVerifier::new(&empty, None, &Peer::AnyMember, "h:1"),
            Err(Unpinnable::Roots(_))
        ));
    }
}
