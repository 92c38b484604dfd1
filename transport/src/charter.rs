//! The federation charter's identity part: which organisations exist (each with its own
//! certificate authority), which certificates are the group's replicas and which are its
//! operators. A peer is trusted for a role only when its certificate is *listed* here,
//! pinned by the SHA-256 of its DER bytes: a certificate that merely chains to one of the
//! organisations' authorities gets encryption and a reader's rights, nothing more
//! (docs/SECURITY.md, "Transport").
//!
//! The charter is a JSON file given to every replica and node at start (`--charter`);
//! `panel up` and `panel pki init` write it next to the certificates they issue.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::TransportError;
use crate::peer::Fingerprint;

/// The only layout this crate reads.
pub const CHARTER_VERSION: u32 = 1;

/// One organisation of the federation and the fingerprint of its authority's certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Organisation {
    pub name: String,
    pub ca_sha256: Fingerprint,
}

/// A coordinator replica: its Raft id, the organisation that runs it, its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaEntry {
    pub id: u64,
    pub organisation: String,
    pub cert_sha256: Fingerprint,
}

/// An operator: may change the group's membership through the `Admin` service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorEntry {
    pub name: String,
    pub organisation: String,
    pub cert_sha256: Fingerprint,
}

/// Who is who on the transport (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Charter {
    pub charter_version: u32,
    pub organisations: Vec<Organisation>,
    pub replicas: Vec<ReplicaEntry>,
    pub operators: Vec<OperatorEntry>,
}

/// A role a peer can hold on the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A replica of the group: may call the `Replica` service and judge-facing RPCs.
    Replica,
    /// An operator: may call the `Admin` service.
    Operator,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Replica => "a replica",
            Role::Operator => "an operator",
        })
    }
}

impl Charter {
    /// Reads and checks a charter file; errors name the file, the JSON path and the fix.
    pub fn load(path: &Path) -> Result<Self, TransportError> {
        let text = std::fs::read_to_string(path).map_err(|e| TransportError::File {
            path: path.display().to_string(),
            what: "the federation charter",
            source: e,
        })?;
        let charter: Charter =
            serde_json::from_str(&text).map_err(|e| TransportError::Charter {
                path: path.display().to_string(),
                problem: e.to_string(),
            })?;
        charter.check().map_err(|problem| TransportError::Charter {
            path: path.display().to_string(),
            problem,
        })?;
        Ok(charter)
    }

    /// Structural rules: known version, organisations named once, every replica and
    /// operator belonging to a listed organisation, no certificate listed twice.
    pub fn check(&self) -> Result<(), String> {
        if self.charter_version != CHARTER_VERSION {
            return Err(format!(
                "charter_version: {} is not understood; this build reads version {CHARTER_VERSION}",
                self.charter_version
            ));
        }
        let mut orgs = BTreeSet::new();
        for (i, o) in self.organisations.iter().enumerate() {
            if o.name.trim().is_empty() || !orgs.insert(o.name.as_str()) {
                return Err(format!(
                    "organisations[{i}].name: {:?} is empty or listed twice",
                    o.name
                ));
            }
        }
        let mut certs = BTreeSet::new();
        let mut ids = BTreeSet::new();
        for (i, r) in self.replicas.iter().enumerate() {
            if !orgs.contains(r.organisation.as_str()) {
                return Err(format!(
                    "replicas[{i}].organisation: {:?} is not one of the charter's organisations",
                    r.organisation
                ));
            }
            if !ids.insert(r.id) {
                return Err(format!(
                    "replicas[{i}].id: replica {} is listed twice",
                    r.id
                ));
            }
            if !certs.insert(r.cert_sha256.clone()) {
                return Err(format!(
                    "replicas[{i}].cert_sha256: a certificate may hold one identity only"
                ));
            }
        }
        for (i, o) in self.operators.iter().enumerate() {
            if !orgs.contains(o.organisation.as_str()) {
                return Err(format!(
                    "operators[{i}].organisation: {:?} is not one of the charter's organisations",
                    o.organisation
                ));
            }
            if !certs.insert(o.cert_sha256.clone()) {
                return Err(format!(
                    "operators[{i}].cert_sha256: a certificate may hold one identity only"
                ));
            }
        }
        Ok(())
    }

    /// The replica whose certificate this is, if any.
    pub fn replica(&self, cert: &Fingerprint) -> Option<&ReplicaEntry> {
        self.replicas.iter().find(|r| &r.cert_sha256 == cert)
    }

    /// The operator whose certificate this is, if any.
    pub fn operator(&self, cert: &Fingerprint) -> Option<&OperatorEntry> {
        self.operators.iter().find(|o| &o.cert_sha256 == cert)
    }

    /// Whether the charter lists replica `id` (membership changes may name only these).
    pub fn has_replica(&self, id: u64) -> bool {
        self.replicas.iter().any(|r| r.id == id)
    }

    /// The name under which `cert` holds `role`, or `None` if it does not.
    pub fn holder(&self, cert: &Fingerprint, role: Role) -> Option<String> {
        match role {
            Role::Replica => self.replica(cert).map(|r| format!("replica {}", r.id)),
            Role::Operator => self.operator(cert).map(|o| format!("operator {}", o.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(b: u8) -> Fingerprint {
        Fingerprint([b; 32])
    }

    fn charter() -> Charter {
        Charter {
            charter_version: 1,
            organisations: vec![Organisation {
                name: "north".into(),
                ca_sha256: fp(1),
            }],
            replicas: vec![ReplicaEntry {
                id: 1,
                organisation: "north".into(),
                cert_sha256: fp(2),
            }],
            operators: vec![OperatorEntry {
                name: "ops".into(),
                organisation: "north".into(),
                cert_sha256: fp(3),
            }],
        }
    }

    #[test]
    fn roles_are_found_by_certificate_only() {
        let c = charter();
        assert_eq!(
            c.holder(&fp(2), Role::Replica).as_deref(),
            Some("replica 1")
        );
        assert_eq!(c.holder(&fp(2), Role::Operator), None);
        assert_eq!(
            c.holder(&fp(3), Role::Operator).as_deref(),
            Some("operator ops")
        );
        assert_eq!(c.holder(&fp(9), Role::Replica), None);
    }

    #[test]
    fn a_member_of_an_unlisted_organisation_is_refused() {
        let mut c = charter();
        c.replicas[0].organisation = "elsewhere".into();
        assert!(
            c.check()
                .unwrap_err()
                .starts_with("replicas[0].organisation")
        );
    }

    #[test]
    fn one_certificate_cannot_hold_two_identities() {
        let mut c = charter();
        c.operators[0].cert_sha256 = fp(2);
        assert!(
            c.check()
                .unwrap_err()
                .starts_with("operators[0].cert_sha256")
        );
    }

    #[test]
    fn unknown_fields_and_versions_are_refused() {
        let mut v = serde_json::to_value(charter()).unwrap();
        v["extra"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Charter>(v).is_err());
        let mut c = charter();
        c.charter_version = 2;
        assert!(c.check().unwrap_err().starts_with("charter_version"));
    }
}
