//! Registration attestations (docs/WIRE.md, "Registration"): an arbiter's registration is
//! signed twice over one canonical layout: by the arbiter's own key (proof of possession:
//! nobody registers a key they do not hold, so nobody can register an honest arbiter's key
//! under their own organisation) and by its organisation's roster key from the federation
//! charter (the organisation vouches that this arbiter is on its roster, so a client cannot
//! invent arbiters of an organisation, nor an organisation of its own).

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::keys::{KeyError, parse_public_key, parse_signature};
use crate::signing::CanonicalWriter;

/// Domain tag of registration canonical bytes, layout version 1.
pub const REGISTRATION_TAG_V1: &[u8] = b"crucible-panel/arbiter-registration/v1\0";

/// Domain tag of registration canonical bytes, layout version 2: version 1's fields, then
/// the declared lineage (docs/WIRE.md, "Registration"). Used only when a lineage is
/// declared, so registrations without one keep their version 1 bytes.
pub const REGISTRATION_TAG_V2: &[u8] = b"crucible-panel/arbiter-registration/v2\0";

/// Longest text field a registration may carry, in bytes.
pub const MAX_REGISTRATION_TEXT: usize = 1024;

/// What a registration claims, as both signatures cover it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationClaim<'a> {
    pub arbiter_id: &'a str,
    /// The arbiter's 32-byte public key.
    pub public_key: &'a [u8],
    pub organisation: &'a str,
    pub model_family: &'a str,
    /// `A`, `B` or `none`.
    pub stance: &'a str,
    pub endpoint: &'a str,
    /// The model lineage the arbiter declares, when it declares one (layout v2).
    pub lineage: Option<LineageClaim<'a>>,
}

/// Where an arbiter's model comes from, as far as it is known: two arbiters of one lineage
/// tend to share their errors, and an arbiter of a contributor's lineage is not seated on
/// motions about that contribution (docs/coordinator/acceptance.md "Declared priors"). Unknown parts
/// are empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineageClaim<'a> {
    pub provider: &'a str,
    pub base_model: &'a str,
    pub fine_tune: &'a str,
    pub data_source: &'a str,
}

/// Why a registration's attestation is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttestationError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(
        "registration field {field} is {len} bytes; at most {MAX_REGISTRATION_TEXT} are allowed"
    )]
    TooLong { field: &'static str, len: usize },
    #[error(
        "the proof of possession does not verify under the registered key: the registration \
         must be signed by the arbiter's own key (`panel arbiter register --key ARBITER.key`)"
    )]
    BadProof,
    #[error(
        "the endorsement does not verify under {organisation:?}'s roster key in the charter: \
         the organisation signs its arbiters' registrations (`--org-key ORG/signing.key`)"
    )]
    BadEndorsement { organisation: String },
}

/// The two signatures of a registration (64 bytes each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    pub proof: Vec<u8>,
    pub endorsement: Vec<u8>,
}

/// Domain tag of contributor registration canonical bytes, layout version 1.
pub const CONTRIBUTOR_TAG_V1: &[u8] = b"crucible-panel/contributor-registration/v1\0";

/// A contributor's name bound to a key, as both signatures cover it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContributorClaim<'a> {
    pub name: &'a str,
    /// The contributor's 32-byte public key.
    pub public_key: &'a [u8],
    pub organisation: &'a str,
}

/// Canonical bytes of a contributor claim.
pub fn contributor_canonical_bytes(c: &ContributorClaim<'_>) -> Result<Vec<u8>, AttestationError> {
    let key = parse_public_key(c.public_key)?;
    for (field, text) in [("name", c.name), ("organisation", c.organisation)] {
        if text.len() > MAX_REGISTRATION_TEXT {
            return Err(AttestationError::TooLong {
                field,
                len: text.len(),
            });
        }
    }
    let mut w = CanonicalWriter::new(CONTRIBUTOR_TAG_V1);
    w.text(c.name);
    w.fixed(key.as_bytes());
    w.text(c.organisation);
    Ok(w.finish())
}

/// Signs a contributor claim with its own key and its organisation's roster key.
pub fn attest_contributor(
    claim: &ContributorClaim<'_>,
    contributor: &SigningKey,
    organisation: &SigningKey,
) -> Result<Attestation, AttestationError> {
    let bytes = contributor_canonical_bytes(claim)?;
    Ok(Attestation {
        proof: contributor.sign(&bytes).to_bytes().to_vec(),
        endorsement: organisation.sign(&bytes).to_bytes().to_vec(),
    })
}

/// Verifies a contributor claim's proof (under the claimed key) and endorsement.
pub fn verify_contributor(
    claim: &ContributorClaim<'_>,
    attestation: &Attestation,
    organisation_key: &VerifyingKey,
) -> Result<(), AttestationError> {
    verify_layout(
        &contributor_canonical_bytes(claim)?,
        claim.public_key,
        claim.organisation,
        attestation,
        organisation_key,
    )
}

fn verify_layout(
    bytes: &[u8],
    public_key: &[u8],
    organisation: &str,
    attestation: &Attestation,
    organisation_key: &VerifyingKey,
) -> Result<(), AttestationError> {
    let key = parse_public_key(public_key)?;
    let proof = parse_signature(&attestation.proof)?;
    key.verify_strict(bytes, &proof)
        .map_err(|_| AttestationError::BadProof)?;
    let endorsement = parse_signature(&attestation.endorsement)?;
    organisation_key
        .verify_strict(bytes, &endorsement)
        .map_err(|_| AttestationError::BadEndorsement {
            organisation: organisation.to_owned(),
        })
}

/// Canonical bytes of a registration claim.
pub fn registration_canonical_bytes(
    c: &RegistrationClaim<'_>,
) -> Result<Vec<u8>, AttestationError> {
    let key = parse_public_key(c.public_key)?;
    let lineage = c.lineage.map(|l| {
        [
            ("lineage.provider", l.provider),
            ("lineage.base_model", l.base_model),
            ("lineage.fine_tune", l.fine_tune),
            ("lineage.data_source", l.data_source),
        ]
    });
    for (field, text) in [
        ("arbiter_id", c.arbiter_id),
        ("organisation", c.organisation),
        ("model_family", c.model_family),
        ("stance", c.stance),
        ("endpoint", c.endpoint),
    ]
    .into_iter()
    .chain(lineage.into_iter().flatten())
    {
        if text.len() > MAX_REGISTRATION_TEXT {
            return Err(AttestationError::TooLong {
                field,
                len: text.len(),
            });
        }
    }
    let mut w = CanonicalWriter::new(if lineage.is_some() {
        REGISTRATION_TAG_V2
    } else {
        REGISTRATION_TAG_V1
    });
    w.text(c.arbiter_id);
    w.fixed(key.as_bytes());
    w.text(c.organisation);
    w.text(c.model_family);
    w.text(c.stance);
    w.text(c.endpoint);
    for (_, text) in lineage.into_iter().flatten() {
        w.text(text);
    }
    Ok(w.finish())
}

/// Signs a claim with the arbiter's key (`arbiter`, which must hold the claimed public key)
/// and its organisation's roster key.
pub fn attest(
    claim: &RegistrationClaim<'_>,
    arbiter: &SigningKey,
    organisation: &SigningKey,
) -> Result<Attestation, AttestationError> {
    let bytes = registration_canonical_bytes(claim)?;
    Ok(Attestation {
        proof: arbiter.sign(&bytes).to_bytes().to_vec(),
        endorsement: organisation.sign(&bytes).to_bytes().to_vec(),
    })
}

/// Verifies both signatures strictly: the proof under the claimed key, the endorsement
/// under `organisation_key` (the charter's key of the claimed organisation).
pub fn verify_attestation(
    claim: &RegistrationClaim<'_>,
    attestation: &Attestation,
    organisation_key: &VerifyingKey,
) -> Result<(), AttestationError> {
    verify_layout(
        &registration_canonical_bytes(claim)?,
        claim.public_key,
        claim.organisation,
        attestation,
        organisation_key,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(public_key: &[u8]) -> RegistrationClaim<'_> {
        RegistrationClaim {
            arbiter_id: "arb-1",
            public_key,
            organisation: "north",
            model_family: "family-x",
            stance: "A",
            endpoint: "https://127.0.0.1:7401",
            lineage: None,
        }
    }

    #[test]
    fn a_declared_lineage_is_bound_and_changes_the_layout() {
        let arbiter = SigningKey::from_bytes(&[1; 32]);
        let org = SigningKey::from_bytes(&[2; 32]);
        let pk = arbiter.verifying_key().to_bytes();
        let lineage = LineageClaim {
            provider: "acme",
            base_model: "acme-7",
            fine_tune: "",
            data_source: "",
        };
        let with = RegistrationClaim {
            lineage: Some(lineage),
            ..claim(&pk)
        };
        let v1 = registration_canonical_bytes(&claim(&pk)).unwrap();
        let v2 = registration_canonical_bytes(&with).unwrap();
        assert!(v1.starts_with(REGISTRATION_TAG_V1) && v2.starts_with(REGISTRATION_TAG_V2));
        let a = attest(&with, &arbiter, &org).unwrap();
        assert!(verify_attestation(&with, &a, &org.verifying_key()).is_ok());
        // Dropping or altering the lineage breaks both signatures' layout.
        for c in [
            claim(&pk),
            RegistrationClaim {
                lineage: Some(LineageClaim {
                    base_model: "other-9",
                    ..lineage
                }),
                ..claim(&pk)
            },
        ] {
            assert_eq!(
                verify_attestation(&c, &a, &org.verifying_key()),
                Err(AttestationError::BadProof)
            );
        }
    }

    #[test]
    fn a_proper_attestation_verifies_and_every_field_is_bound() {
        let arbiter = SigningKey::from_bytes(&[1; 32]);
        let org = SigningKey::from_bytes(&[2; 32]);
        let pk = arbiter.verifying_key().to_bytes();
        let a = attest(&claim(&pk), &arbiter, &org).unwrap();
        assert!(verify_attestation(&claim(&pk), &a, &org.verifying_key()).is_ok());
        let changed = [
            RegistrationClaim {
                arbiter_id: "arb-2",
                ..claim(&pk)
            },
            RegistrationClaim {
                organisation: "south",
                ..claim(&pk)
            },
            RegistrationClaim {
                model_family: "family-y",
                ..claim(&pk)
            },
            RegistrationClaim {
                stance: "B",
                ..claim(&pk)
            },
            RegistrationClaim {
                endpoint: "https://10.0.0.9:7401",
                ..claim(&pk)
            },
        ];
        for c in changed {
            assert_eq!(
                verify_attestation(&c, &a, &org.verifying_key()),
                Err(AttestationError::BadProof),
                "{c:?}"
            );
        }
    }

    #[test]
    fn someone_elses_key_or_organisation_is_refused() {
        let arbiter = SigningKey::from_bytes(&[1; 32]);
        let thief = SigningKey::from_bytes(&[3; 32]);
        let org = SigningKey::from_bytes(&[2; 32]);
        let other_org = SigningKey::from_bytes(&[4; 32]);
        let pk = arbiter.verifying_key().to_bytes();
        // Registering an honest arbiter's key without holding it.
        let stolen = attest(&claim(&pk), &thief, &org).unwrap();
        assert_eq!(
            verify_attestation(&claim(&pk), &stolen, &org.verifying_key()),
            Err(AttestationError::BadProof)
        );
        // Endorsed by another organisation's key than the one claimed.
        let foreign = attest(&claim(&pk), &arbiter, &other_org).unwrap();
        assert!(matches!(
            verify_attestation(&claim(&pk), &foreign, &org.verifying_key()),
            Err(AttestationError::BadEndorsement { .. })
        ));
        let short = Attestation {
            proof: vec![0; 10],
            endorsement: vec![0; 64],
        };
        assert!(matches!(
            verify_attestation(&claim(&pk), &short, &org.verifying_key()),
            Err(AttestationError::Key(KeyError::SignatureLength(10)))
        ));
    }
}
