//! The client-certificate check of every server this process runs, against the trust in
//! force at the handshake ([`crate::trust`]): rustls' webpki checks (chain, validity,
//! client usage, signatures) over the authorities the record trusts now, so a server
//! never needs restarting for an organisation to join or leave.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::trust::LiveTrust;

/// The crypto provider tonic's own TLS uses: the process default, else ring.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// A rustls client-certificate verifier that reads [`LiveTrust`] at each handshake.
#[derive(Debug)]
pub struct LiveClientVerifier {
    trust: LiveTrust,
    mandatory: bool,
    provider: Arc<CryptoProvider>,
}

impl LiveClientVerifier {
    /// `mandatory`: refuse callers that present no certificate (else they connect as
    /// anonymous readers, and role-bearing services check each request).
    pub fn new(trust: LiveTrust, mandatory: bool) -> Self {
        Self {
            trust,
            mandatory,
            provider: provider(),
        }
    }
}

impl ClientCertVerifier for LiveClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    /// No hints: the set changes with the record, and each of our clients holds one
    /// identity it presents whatever the hints say.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let roots = self.trust.view().roots_for(intermediates);
        if roots.is_empty() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            ));
        }
        let webpki = WebPkiClientVerifier::builder_with_provider(roots, self.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        webpki.verify_client_cert(end_entity, intermediates, now)
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
