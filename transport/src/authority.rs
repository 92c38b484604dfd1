//! Which organisation issued a client certificate (docs/SECURITY.md, "Floods"): write
//! limits are kept per organisation as well as per certificate, so rotating certificates
//! within one organisation cannot outrun that organisation's budget. The organisation is
//! the one whose authority the leaf verifies against: each certificate in `ca.pem` whose
//! SHA-256 the charter lists as an organisation's `ca_sha256` is that organisation's trust
//! anchor, and the leaf is checked against each anchor alone with rustls-webpki (the same
//! path building rustls ran in the handshake), never by comparing issuer names.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};

use crate::charter_file::Charter;
use crate::peer::Fingerprint;

/// One organisation's authority as a trust anchor.
struct Authority {
    organisation: String,
    anchor: TrustAnchor<'static>,
}

/// The charter's organisations with their authorities' certificates from `ca.pem`.
pub struct Authorities {
    authorities: Vec<Authority>,
}

impl std::fmt::Debug for Authorities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.authorities.iter().map(|a| &a.organisation))
            .finish()
    }
}

impl Authorities {
    /// Pairs each certificate of the `ca.pem` bundle with the charter organisation that
    /// pins it; certificates no organisation pins are skipped (they still open
    /// connections, but their holders belong to no organisation).
    pub fn new(roots_pem: &[u8], charter: &Charter) -> Self {
        let mut authorities = Vec::new();
        for cert in CertificateDer::pem_slice_iter(roots_pem).flatten() {
            let fp = Fingerprint::of_der(cert.as_ref());
            let Some(org) = charter.organisations.iter().find(|o| o.ca_sha256 == fp) else {
                continue;
            };
            if let Ok(anchor) = webpki::anchor_from_trusted_cert(&cert) {
                authorities.push(Authority {
                    organisation: org.name.clone(),
                    anchor: anchor.to_owned(),
                });
            }
        }
        Self { authorities }
    }

    /// The organisation whose authority issued `leaf` (DER), if one of the charter's
    /// does and the certificate is valid for client authentication now.
    pub fn organisation_of(&self, leaf: &[u8]) -> Option<&str> {
        let der = CertificateDer::from(leaf);
        let cert = webpki::EndEntityCert::try_from(&der).ok()?;
        let now = UnixTime::now();
        self.authorities
            .iter()
            .find(|a| {
                cert.verify_for_usage(
                    webpki::ALL_VERIFICATION_ALGS,
                    std::slice::from_ref(&a.anchor),
                    &[],
                    now,
                    webpki::KeyUsage::client_auth(),
                    None,
                    None,
                )
                .is_ok()
            })
            .map(|a| a.organisation.as_str())
    }

    pub fn len(&self) -> usize {
        self.authorities.len()
    }

    pub fn is_empty(&self) -> bool {
        self.authorities.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::{TlsMaterial, first_der};
    use crate::pki::{IdentitySpec, Kind, PkiPlan, issue};

    #[test]
    fn a_client_certificate_belongs_to_the_organisation_whose_authority_issued_it() {
        let dir = tempfile::tempdir().unwrap();
        let client = |name: &str, org: &str| IdentitySpec {
            kind: Kind::Client,
            name: name.into(),
            organisation: org.into(),
            hosts: vec![],
        };
        let plan = PkiPlan {
            organisations: vec!["north".into(), "south".into()],
            identities: vec![client("n1", "north"), client("s1", "south")],
            exam: None,
            last_word: None,
            final_panel: None,
            key_seed: None,
        };
        let issued = issue(&plan, dir.path()).unwrap();
        let m = TlsMaterial::load(&issued.dir("n1")).unwrap();
        let auth = Authorities::new(&m.roots_pem, &issued.charter);
        assert_eq!(auth.len(), 2);
        let leaf = |name: &str| {
            let m = TlsMaterial::load(&issued.dir(name)).unwrap();
            first_der(&m.identity.unwrap().0).unwrap()
        };
        assert_eq!(auth.organisation_of(&leaf("n1")), Some("north"));
        assert_eq!(auth.organisation_of(&leaf("s1")), Some("south"));
        // An authority the charter does not pin gives no organisation.
        let mut charter = issued.charter.clone();
        charter.organisations.retain(|o| o.name == "north");
        let only_north = Authorities::new(&m.roots_pem, &charter);
        assert_eq!(only_north.organisation_of(&leaf("s1")), None);
        assert_eq!(only_north.organisation_of(b"not a certificate"), None);
    }
}
