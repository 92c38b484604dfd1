//! Organisation pool seals (docs/coordinator/state-machine.md "Organisation pools";
//! docs/SECURITY.md "Exams"): under a charter whose log is signed by a quorum, an exam
//! sitting's pool belongs to one member organisation, and only that organisation's
//! replicas hold its file. The replica that offers the pool signs, with its own log key, a
//! three-line note binding the sitting number, the pool's public id and the commitment to
//! its answer key, so no other replica (the leader included) can seal a pool in that
//! organisation's name or change its questions.
//!
//! Like a motion seal, the note has no size line, so it is never a checkpoint of the log
//! those same keys sign.

use panel_tlog::{LogQuorum, LogQuorumError, Note, SignatureLine};
use thiserror::Error;

use crate::Charter;

/// First line of every pool seal note.
pub const POOL_SEAL_HEADER: &str = "crucible-panel/exam-pool/v1";

/// Why a pool's seal does not hold under the charter.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PoolSealError {
    #[error(
        "the pool is sealed in the name of {organisation:?}, which has no replica with a log \
         key in the charter; an organisation's pool is offered by one of its own replicas"
    )]
    NoReplica { organisation: String },
    #[error(
        "the pool's seal is not a C2SP note signature line ({problem}); send the line \
         exactly as the organisation's replica gave it"
    )]
    Malformed { problem: String },
    #[error(
        "the pool's seal is not a signature of {organisation:?}'s replicas over sitting \
         {sitting}, pool {pool_id} and its key commitment: {source}. Ask one of that \
         organisation's replicas to offer its pool (Replica.OfferExamPool)"
    )]
    NotTheirs {
        organisation: String,
        sitting: u32,
        pool_id: String,
        #[source]
        source: LogQuorumError,
    },
}

/// What a pool seal binds.
#[derive(Debug, Clone, Copy)]
pub struct PoolSealed<'a> {
    pub sitting: u32,
    /// `PublicPool::id` of the sealed public half.
    pub pool_id: &'a str,
    /// Hex commitment to the pool's answer key.
    pub key_commitment: &'a str,
}

impl PoolSealed<'_> {
    /// The seal note's text.
    pub fn text(&self) -> String {
        format!(
            "{POOL_SEAL_HEADER}\n{}\n{}\n{}\n",
            self.sitting, self.pool_id, self.key_commitment
        )
    }

    /// This replica's seal: one signature line by its log key, without the newline.
    pub fn seal(&self, log_key: &panel_tlog::NoteSigner) -> String {
        log_key.sign(&self.text()).to_line().trim_end().to_owned()
    }

    /// Checks that `line` is a valid signature by a charter replica of `organisation`.
    pub fn check(
        &self,
        charter: &Charter,
        organisation: &str,
        line: &str,
    ) -> Result<(), PoolSealError> {
        let signers: Vec<_> = charter
            .log_quorum()
            .map(|q| q.signers)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.organisation == organisation)
            .collect();
        if signers.is_empty() {
            return Err(PoolSealError::NoReplica {
                organisation: organisation.to_owned(),
            });
        }
        let signature = SignatureLine::parse(line).map_err(|e| PoolSealError::Malformed {
            problem: e.to_string(),
        })?;
        let theirs = LogQuorum {
            signers,
            organisations: 1,
        };
        let note = Note {
            text: self.text(),
            signatures: vec![signature],
        };
        theirs
            .check(&note)
            .map(|_| ())
            .map_err(|source| PoolSealError::NotTheirs {
                organisation: organisation.to_owned(),
                sitting: self.sitting,
                pool_id: self.pool_id.to_owned(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::motion_seal::tests::signer;
    use crate::{Fingerprint, Floors, LogIdentity, Organisation, ReplicaEntry};
    use panel_tlog::NoteSigner;

    fn org(name: &str, seed: u8) -> Organisation {
        let sk = panel_proto::SigningKey::from_bytes(&[seed; 32]);
        Organisation {
            name: name.into(),
            ca_sha256: Fingerprint([seed; 32]),
            signing_key: hex::encode(sk.verifying_key().to_bytes()),
        }
    }

    fn charter(north: &NoteSigner, south: &NoteSigner) -> Charter {
        let replica = |id, organisation: &str, key: &NoteSigner| ReplicaEntry {
            id,
            organisation: organisation.into(),
            cert_sha256: Fingerprint([id as u8 + 100; 32]),
            log_vkey: Some(key.verifier().to_string()),
            beacon_vkey: None,
        };
        Charter {
            charter_version: 1,
            organisations: vec![org("north", 1), org("south", 2)],
            admission_threshold: 2,
            replicas: vec![replica(1, "north", north), replica(2, "south", south)],
            operators: Vec::new(),
            motion_key: org("k", 9).signing_key,
            floors: Floors::PROJECT,
            log: Some(LogIdentity {
                origin: "panel.test/log".into(),
                vkey: String::new(),
                quorum: 2,
            }),
            witnesses: Vec::new(),
            exam: None,
            last_word: None,
            final_panel: None,
            appeal_credits: None,
        }
    }

    #[test]
    fn only_the_named_organisations_replica_seals_its_pool() {
        let (north, south) = (signer(1), signer(2));
        let c = charter(&north, &south);
        let sealed = PoolSealed {
            sitting: 3,
            pool_id: "sha256:aa",
            key_commitment: "bb",
        };
        let by_south = sealed.seal(&south);
        assert_eq!(sealed.check(&c, "south", &by_south), Ok(()));
        // North's replica (a leader of north, say) cannot seal in south's name...
        let by_north = sealed.seal(&north);
        let e = sealed.check(&c, "south", &by_north).unwrap_err();
        assert!(e.to_string().contains("OfferExamPool"), "{e}");
        // ...nor move south's seal to another sitting, pool or commitment.
        for other in [
            PoolSealed {
                sitting: 4,
                ..sealed
            },
            PoolSealed {
                pool_id: "sha256:ab",
                ..sealed
            },
            PoolSealed {
                key_commitment: "bc",
                ..sealed
            },
        ] {
            assert!(other.check(&c, "south", &by_south).is_err());
        }
        // An organisation with no replica in the charter has no pool to seal.
        assert!(matches!(
            sealed.check(&c, "east", &by_south),
            Err(PoolSealError::NoReplica { .. })
        ));
        assert!(matches!(
            sealed.check(&c, "south", "not a line"),
            Err(PoolSealError::Malformed { .. })
        ));
    }
}
