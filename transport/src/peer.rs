//! Who is on the other end of a connection: the SHA-256 of the certificate the peer
//! presented in the TLS handshake (the chain to one of the federation's authorities has
//! already been checked by rustls), and the role the charter gives that certificate.

use std::sync::Arc;

pub use panel_federation::Fingerprint;
use rustls::pki_types::CertificateDer;
use tonic::{Request, Status};

use crate::charter_file::{Charter, Role};
use crate::incoming::ConnInfo;

/// The chain the caller of `req` presented over TLS (leaf first), if it presented one.
pub fn peer_chain<T>(req: &Request<T>) -> Option<Arc<Vec<CertificateDer<'static>>>> {
    req.extensions().get::<ConnInfo>()?.peer_certs.clone()
}

/// The fingerprint of the leaf certificate the caller of `req` presented, if it
/// presented one over TLS.
pub fn peer_fingerprint<T>(req: &Request<T>) -> Option<Fingerprint> {
    let certs = peer_chain(req)?;
    certs.first().map(|c| Fingerprint::of_der(c.as_ref()))
}

/// The DER bytes of the leaf certificate the caller of `req` presented, if any (to find
/// the organisation that issued it, [`crate::TrustView::organisation_of`]).
pub fn peer_leaf<T>(req: &Request<T>) -> Option<Vec<u8>> {
    let certs = peer_chain(req)?;
    certs.first().map(|c| c.as_ref().to_vec())
}

/// The caller's address, on connections accepted through [`crate::Transport::incoming`].
pub fn remote_addr<T>(req: &Request<T>) -> Option<std::net::SocketAddr> {
    req.extensions().get::<ConnInfo>()?.remote
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
