//! The SPIFFE id a federation certificate names, `spiffe://crucible-panel/<organisation>/
//! <kind>/<name>` (`pki.rs` writes it into every leaf): which identity of which
//! organisation the peer is, so a replica holds a node to the arbiter its certificate
//! names (docs/SECURITY.md "Identity bound to role").

use x509_parser::extensions::GeneralName;

/// The trust domain of every id the federation issues.
pub const TRUST_DOMAIN: &str = "crucible-panel";

/// What a certificate's SPIFFE id says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpiffeId {
    pub organisation: String,
    /// `replica`, `operator`, `node`, `client` or `witness`.
    pub kind: String,
    /// The identity's name: `node-<arbiter id>` for a node (`pki::node_dir_name`).
    pub name: String,
}

impl SpiffeId {
    /// Whether this is the node identity of `arbiter_id` in `organisation`.
    pub fn is_node_of(&self, arbiter_id: &str, organisation: &str) -> bool {
        self.kind == "node"
            && self.name == crate::pki::node_dir_name(arbiter_id)
            && self.organisation == organisation
    }
}

/// The id in a `spiffe://` URI of the federation's trust domain, if it has exactly the
/// three non-empty path segments.
pub fn parse(uri: &str) -> Option<SpiffeId> {
    let rest = uri.strip_prefix("spiffe://")?.strip_prefix(TRUST_DOMAIN)?;
    let mut parts = rest.strip_prefix('/')?.split('/');
    let (organisation, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || [organisation, kind, name].iter().any(|p| p.is_empty()) {
        return None;
    }
    Some(SpiffeId {
        organisation: organisation.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    })
}

/// The federation's SPIFFE id in the subject alternative names of the DER certificate
/// `leaf`, if it names exactly one.
pub fn of_leaf(leaf: &[u8]) -> Option<SpiffeId> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).ok()?;
    let san = cert.subject_alternative_name().ok()??;
    let mut ids = san.value.general_names.iter().filter_map(|g| match g {
        GeneralName::URI(uri) => parse(uri),
        _ => None,
    });
    let first = ids.next()?;
    ids.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_federations_three_segment_ids_parse() {
        let id = parse("spiffe://crucible-panel/northwind/node/node-arb-a").unwrap();
        assert!(id.is_node_of("arb-a", "northwind"));
        assert!(!id.is_node_of("arb-b", "northwind"));
        assert!(!id.is_node_of("arb-a", "southbank"));
        for bad in [
            "spiffe://other/northwind/node/node-arb-a",
            "spiffe://crucible-panel/northwind/node",
            "spiffe://crucible-panel/northwind/node/node-arb-a/x",
            "spiffe://crucible-panel//node/node-arb-a",
            "https://crucible-panel/northwind/node/node-arb-a",
            "spiffe://crucible-panelx/northwind/node/node-arb-a",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_issued_node_certificate_names_its_arbiter() {
        let dir = tempfile::tempdir().unwrap();
        let issued = crate::pki::issue(
            &crate::pki::local_plan(1, &[("arb-a", "northwind")]),
            dir.path(),
        )
        .unwrap();
        let pem = std::fs::read(issued.dir("node-arb-a").join("cert.pem")).unwrap();
        let der = rustls_pki_types::pem::PemObject::from_pem_slice(&pem)
            .map(|c: rustls_pki_types::CertificateDer<'static>| c.as_ref().to_vec())
            .unwrap();
        let id = of_leaf(&der).expect("a SPIFFE id");
        assert!(id.is_node_of("arb-a", "northwind"), "{id:?}");
    }
}
