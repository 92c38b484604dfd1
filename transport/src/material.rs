//! A TLS identity directory as `panel pki init` lays it out: `ca.pem` (the federation's
//! authorities, one certificate per organisation), `cert.pem` and `key.pem` (this
//! identity, issued by its organisation's authority). A client may hold `ca.pem` alone and
//! connect as an anonymous reader; a server or a role holder needs all three.

use std::path::{Path, PathBuf};

use tonic::transport::{Certificate, Identity};

use crate::error::TransportError;
use crate::peer::Fingerprint;

pub const CA_FILE: &str = "ca.pem";
pub const CERT_FILE: &str = "cert.pem";
pub const KEY_FILE: &str = "key.pem";

/// The PEM files of one identity directory, read once at start.
#[derive(Clone)]
pub struct TlsMaterial {
    pub dir: PathBuf,
    /// The federation's authorities (PEM, one or more certificates).
    pub roots_pem: Vec<u8>,
    /// This identity's certificate and key, when it has one.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("dir", &self.dir)
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

fn read(dir: &Path, name: &str, what: &'static str) -> Result<Option<Vec<u8>>, TransportError> {
    let path = dir.join(name);
    match std::fs::read(&path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TransportError::File {
            path: path.display().to_string(),
            what,
            source: e,
        }),
    }
}

impl TlsMaterial {
    /// Loads `dir`; a certificate without its key (or the reverse) is refused.
    pub fn load(dir: &Path) -> Result<Self, TransportError> {
        let roots_pem = read(dir, CA_FILE, "the federation's authorities")?.ok_or_else(|| {
            TransportError::File {
                path: dir.join(CA_FILE).display().to_string(),
                what: "the federation's authorities",
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "missing; copy the federation's ca.pem there (written by `panel pki init`)",
                ),
            }
        })?;
        let cert = read(dir, CERT_FILE, "this identity's certificate")?;
        let key = read(dir, KEY_FILE, "this identity's private key")?;
        let identity = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            (Some(_), None) => {
                return Err(TransportError::HalfIdentity {
                    dir: dir.display().to_string(),
                    present: CERT_FILE,
                    missing: KEY_FILE,
                });
            }
            (None, Some(_)) => {
                return Err(TransportError::HalfIdentity {
                    dir: dir.display().to_string(),
                    present: KEY_FILE,
                    missing: CERT_FILE,
                });
            }
        };
        Ok(Self {
            dir: dir.to_owned(),
            roots_pem,
            identity,
        })
    }

    pub fn roots(&self) -> Certificate {
        Certificate::from_pem(&self.roots_pem)
    }

    pub fn tonic_identity(&self) -> Option<Identity> {
        self.identity
            .as_ref()
            .map(|(c, k)| Identity::from_pem(c, k))
    }

    /// This identity's certificate fingerprint (what the charter pins), if it has one.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        let (cert, _) = self.identity.as_ref()?;
        first_der(cert).map(|der| Fingerprint::of_der(&der))
    }

    /// Refuses a directory without an identity, for a process that must present one.
    pub fn require_identity(&self, what: &'static str) -> Result<(), TransportError> {
        match self.identity {
            Some(_) => Ok(()),
            None => Err(TransportError::NoIdentity {
                dir: self.dir.display().to_string(),
                what,
            }),
        }
    }
}

/// The DER bytes of the first certificate in a PEM text.
pub fn first_der(pem: &[u8]) -> Option<Vec<u8>> {
    use rustls_pki_types::pem::PemObject;
    rustls_pki_types::CertificateDer::pem_slice_iter(pem)
        .next()?
        .ok()
        .map(|c| c.as_ref().to_vec())
}
