//! Who is on the other end of a connection: the SHA-256 of the certificate the peer
//! presented in the TLS handshake (the chain to one of the federation's authorities has
//! already been checked by rustls), and the role the charter gives that certificate.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use tonic::{Request, Status};

use crate::charter::{Charter, Role};

/// SHA-256 of a certificate's DER bytes; written as 64 lowercase hex digits.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub fn of_der(der: &[u8]) -> Self {
        Fingerprint(Sha256::digest(der).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

impl std::str::FromStr for Fingerprint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bytes = hex::decode(s.trim()).map_err(|e| format!("not hex: {e}"))?;
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| format!("{} bytes, expected 32 (SHA-256)", b.len()))?;
        Ok(Fingerprint(arr))
    }
}

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The fingerprint of the leaf certificate the caller of `req` presented, if it
/// presented one over TLS.
pub fn peer_fingerprint<T>(req: &Request<T>) -> Option<Fingerprint> {
    let certs: Arc<Vec<_>> = req.peer_certs()?;
    certs.first().map(|c| Fingerprint::of_der(c.as_ref()))
}

/// The DER bytes of the leaf certificate the caller of `req` presented, if any (to find
/// the organisation that issued it, [`crate::Authorities`]).
pub fn peer_leaf<T>(req: &Request<T>) -> Option<Vec<u8>> {
    let certs: Arc<Vec<_>> = req.peer_certs()?;
    certs.first().map(|c| c.as_ref().to_vec())
}

/// Who may call a service, checked on every request (a tonic interceptor).
///
/// `charter: None` is the explicit loopback debug mode (`--insecure-loopback`), where no
/// peer presents a certificate and every local caller is let through; the process refuses
/// that mode on any address but loopback, so this branch never guards a network.
#[derive(Clone)]
pub struct RoleGuard {
    charter: Option<Arc<Charter>>,
    role: Role,
    service: &'static str,
}

impl RoleGuard {
    pub fn new(charter: Option<Arc<Charter>>, role: Role, service: &'static str) -> Self {
        Self {
            charter,
            role,
            service,
        }
    }

    /// The holder's name (e.g. `replica 2`) when the caller holds the role.
    pub fn check<T>(&self, req: &Request<T>) -> Result<Option<String>, Status> {
        let Some(charter) = &self.charter else {
            return Ok(None);
        };
        let Some(fp) = peer_fingerprint(req) else {
            return Err(Status::unauthenticated(format!(
                "the {} service needs a client certificate of {} listed in the federation \
                 charter; this connection presented none (connect with --tls DIR holding \
                 that identity's cert.pem and key.pem)",
                self.service, self.role
            )));
        };
        match charter.holder(&fp, self.role) {
            Some(name) => Ok(Some(name)),
            None => Err(Status::permission_denied(format!(
                "the {} service is for {} listed in the federation charter; the certificate \
                 {fp} holds no such role (an operator adds identities to the charter)",
                self.service, self.role
            ))),
        }
    }
}

impl tonic::service::Interceptor for RoleGuard {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        self.check(&req)?;
        Ok(req)
    }
}
