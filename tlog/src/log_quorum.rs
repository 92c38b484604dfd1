//! A log whose checkpoints no single signer can sign (docs/SECURITY.md "The record",
//! docs/WIRE.md "Transparency log"): each replica signs with its own Ed25519 note key, every
//! key named for the log's origin, and a checkpoint counts as the log's only when keys of
//! at least `organisations` distinct organisations signed it.
//!
//! The note stays a standard C2SP signed note with several signature lines, so a tool that
//! knows one replica key verifies it as usual; the quorum is what the federation's
//! witnesses and `panel verify --policy` require on top.

use std::collections::BTreeSet;

use crate::note::{Note, VerifierKey};

/// One key that may sign the log's checkpoints, and the organisation that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSigner {
    pub organisation: String,
    pub key: VerifierKey,
}

/// The signers of one log and how many distinct organisations must sign a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogQuorum {
    pub signers: Vec<LogSigner>,
    /// Distinct organisations whose keys must sign (at least 1).
    pub organisations: usize,
}

/// Why a checkpoint is not the log's under its quorum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogQuorumError {
    #[error("the log signature by {organisation}'s key {name}+{id:08x} does not verify")]
    BadSignature {
        organisation: String,
        name: String,
        id: u32,
    },
    #[error(
        "the checkpoint is signed by the log keys of {found} organisation(s) ({signed_by:?}); \
         the log's quorum is {required}: collect the signatures of the other organisations' \
         replicas"
    )]
    TooFew {
        found: usize,
        required: usize,
        signed_by: Vec<String>,
    },
}

impl LogQuorum {
    /// The quorum of `organisations` over the signers' verifier keys, each named with its
    /// organisation.
    pub fn of<'a>(
        signers: impl IntoIterator<Item = (&'a str, VerifierKey)>,
        organisations: usize,
    ) -> Self {
        LogQuorum {
            signers: signers
                .into_iter()
                .map(|(organisation, key)| LogSigner {
                    organisation: organisation.to_owned(),
                    key,
                })
                .collect(),
            organisations,
        }
    }

    /// The keys, for callers that only need to know whether a line is a log signature.
    pub fn keys(&self) -> impl Iterator<Item = &VerifierKey> {
        self.signers.iter().map(|s| &s.key)
    }

    /// The signer whose key made `line`, if any.
    pub fn signer_of(&self, line: &crate::note::SignatureLine) -> Option<&LogSigner> {
        self.signers.iter().find(|s| s.key.matches(line))
    }

    /// Checks every signature line by a signer key (a failing one rejects the note; lines
    /// of other keys, such as witness cosignatures, are ignored) and returns the distinct
    /// organisations whose keys signed, in order, if they meet the quorum.
    pub fn check(&self, note: &Note) -> Result<Vec<String>, LogQuorumError> {
        let mut orgs = BTreeSet::new();
        for line in &note.signatures {
            let Some(s) = self.signer_of(line) else {
                continue;
            };
            if !s.key.verifies(&note.text, &line.signature) {
                return Err(LogQuorumError::BadSignature {
                    organisation: s.organisation.clone(),
                    name: line.name.clone(),
                    id: line.key_id,
                });
            }
            orgs.insert(s.organisation.clone());
        }
        let signed_by: Vec<String> = orgs.into_iter().collect();
        if signed_by.len() < self.organisations.max(1) {
            return Err(LogQuorumError::TooFew {
                found: signed_by.len(),
                required: self.organisations.max(1),
                signed_by,
            });
        }
        Ok(signed_by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoteSigner;
    use crate::checkpoint::Checkpoint;

    fn signer(seed: u8) -> NoteSigner {
        NoteSigner::new(
            "panel.test/log",
            ed25519_dalek::SigningKey::from_bytes(&[seed; 32]),
        )
        .expect("signer")
    }

    fn quorum(keys: &[(&str, &NoteSigner)], organisations: usize) -> LogQuorum {
        LogQuorum::of(
            keys.iter().map(|(org, k)| (*org, k.verifier())),
            organisations,
        )
    }

    #[test]
    fn a_checkpoint_needs_keys_of_distinct_organisations() {
        let (n1, n3, s2) = (signer(1), signer(3), signer(2));
        let q = quorum(&[("north", &n1), ("south", &s2), ("north", &n3)], 2);
        let body = Checkpoint::new("panel.test/log", 4, [7; 32]).body();
        let mut note = Note::new(body.clone()).expect("note");
        note.add(n1.sign(&body));
        note.add(n3.sign(&body));
        let err = q.check(&note).expect_err("one organisation's two replicas");
        assert!(
            matches!(
                &err,
                LogQuorumError::TooFew {
                    found: 1,
                    required: 2,
                    ..
                }
            ),
            "{err}"
        );
        note.add(s2.sign(&body));
        assert_eq!(q.check(&note).expect("quorum"), ["north", "south"]);
        // A line by a quorum key over another body rejects the note.
        let mut forged = Note::new(body.clone()).expect("note");
        forged.add(n1.sign(&body));
        let mut bad = s2.sign("panel.test/log\n5\nAAAA\n");
        bad.name = "panel.test/log".into();
        forged.add(bad);
        assert!(matches!(
            q.check(&forged),
            Err(LogQuorumError::BadSignature { .. })
        ));
        // Keys outside the quorum count for nothing.
        let mut outsider = Note::new(body.clone()).expect("note");
        outsider.add(n1.sign(&body));
        outsider.add(signer(9).sign(&body));
        assert!(q.check(&outsider).is_err());
    }
}
