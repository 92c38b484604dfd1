//! Motion seals (docs/WIRE.md "Motion seals"; docs/SECURITY.md "No replica makes a motion
//! alone"): under a charter whose log is signed by a quorum of replicas, a motion reaches
//! an arbiter only with the seals of that many organisations' replicas, each a C2SP note
//! signature by the replica's own log key over the motion's digest. A replica seals only a
//! motion its own applied state holds, so one rogue replica (or its operator, who holds the
//! cluster's motion key file) can no longer make nodes judge a motion the log never had.
//!
//! The seal note is two lines, a fixed header and the hex digest: it has no size line, so
//! no seal is ever a checkpoint of the log those same keys sign.

use panel_tlog::{LogQuorum, LogQuorumError, Note, NoteSigner, SignatureLine};
use thiserror::Error;

use crate::Charter;

/// First line of every seal note.
pub const SEAL_HEADER: &str = "crucible-panel/motion-seal/v1";

/// Why a motion's seals do not meet the charter.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SealError {
    #[error(
        "motion {motion_id:?} carries {count} seals, more than the charter's {replicas} \
         replicas can give; send each replica's seal once"
    )]
    TooMany {
        motion_id: String,
        count: usize,
        replicas: usize,
    },
    #[error(
        "motion {motion_id:?}: seal {index} is not a C2SP note signature line ({problem}); \
         send the seals exactly as the replicas gave them"
    )]
    Malformed {
        motion_id: String,
        index: usize,
        problem: String,
    },
    #[error(
        "motion {motion_id:?} is not sealed by the charter's replicas: {source}. Nodes \
         judge a motion only when the replicas of the log quorum's organisations sealed it, \
         each from its own applied state; a motion no such quorum holds was not opened by \
         the log"
    )]
    Quorum {
        motion_id: String,
        #[source]
        source: LogQuorumError,
    },
}

/// The seal note's text for a motion digest.
pub fn text(digest: &[u8; 32]) -> String {
    format!("{SEAL_HEADER}\n{}\n", hex::encode(digest))
}

/// This replica's seal over `digest`: one signature line, without its newline.
pub fn seal(log_key: &NoteSigner, digest: &[u8; 32]) -> String {
    log_key.sign(&text(digest)).to_line().trim_end().to_owned()
}

/// Whether `line` is `key`'s valid seal over `digest` (the leader's check of a seal a
/// replica returned, before it goes to nodes that would refuse the whole motion for it).
pub fn seals(key: &panel_tlog::VerifierKey, digest: &[u8; 32], line: &str) -> bool {
    SignatureLine::parse(line)
        .is_ok_and(|l| key.matches(&l) && key.verifies(&text(digest), &l.signature))
}

/// The seals a motion needs under `charter`: `None` where its log has one shared key (the
/// charters from before quorum logs, whose nodes trust the motion key alone).
pub fn required(charter: &Charter) -> Option<LogQuorum> {
    charter.log_quorum()
}

/// Checks `seals` over `digest` against the quorum and returns the organisations whose
/// replicas sealed it. A seal by a key outside the charter is ignored; a bad signature by
/// a replica's key refuses the motion.
pub fn check(
    quorum: &LogQuorum,
    motion_id: &str,
    digest: &[u8; 32],
    seals: &[String],
) -> Result<Vec<String>, SealError> {
    if seals.len() > quorum.signers.len().max(1) {
        return Err(SealError::TooMany {
            motion_id: motion_id.to_owned(),
            count: seals.len(),
            replicas: quorum.signers.len(),
        });
    }
    let signatures = seals
        .iter()
        .enumerate()
        .map(|(index, line)| {
            SignatureLine::parse(line).map_err(|e| SealError::Malformed {
                motion_id: motion_id.to_owned(),
                index,
                problem: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let note = Note {
        text: text(digest),
        signatures,
    };
    quorum.check(&note).map_err(|source| SealError::Quorum {
        motion_id: motion_id.to_owned(),
        source,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A log signer for tests, from a seed byte.
    pub(crate) fn signer(seed: u8) -> NoteSigner {
        NoteSigner::new(
            "panel.test/log",
            panel_proto::SigningKey::from_bytes(&[seed; 32]),
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
    fn a_motion_needs_seals_of_the_quorums_organisations() {
        let (a1, a2, b1) = (signer(1), signer(2), signer(3));
        let q = quorum(&[("north", &a1), ("north", &a2), ("south", &b1)], 2);
        let d = [7u8; 32];
        // One organisation alone, even with both its replicas: refused, naming the quorum.
        let one_org = vec![seal(&a1, &d), seal(&a2, &d)];
        let e = check(&q, "m1", &d, &one_org).unwrap_err();
        assert!(
            matches!(
                &e,
                SealError::Quorum {
                    source: LogQuorumError::TooFew {
                        found: 1,
                        required: 2,
                        ..
                    },
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("quorum is 2"), "{e}");
        let both = vec![seal(&a1, &d), seal(&b1, &d)];
        assert_eq!(check(&q, "m1", &d, &both).unwrap(), ["north", "south"]);
    }

    #[test]
    fn a_seal_over_another_digest_or_by_an_outsider_does_not_count() {
        let (a1, b1, outsider) = (signer(1), signer(3), signer(9));
        let q = quorum(&[("north", &a1), ("south", &b1)], 2);
        let d = [7u8; 32];
        // South's seal of another motion, moved onto this one: a bad signature by a
        // charter key refuses the motion.
        let moved = vec![seal(&a1, &d), seal(&b1, &[8u8; 32])];
        assert!(matches!(
            check(&q, "m1", &d, &moved),
            Err(SealError::Quorum {
                source: LogQuorumError::BadSignature { .. },
                ..
            })
        ));
        // A key the charter does not list is ignored, so it cannot stand in for south.
        let outside = vec![seal(&a1, &d), seal(&outsider, &d)];
        assert!(matches!(
            check(&q, "m1", &d, &outside),
            Err(SealError::Quorum {
                source: LogQuorumError::TooFew { found: 1, .. },
                ..
            })
        ));
    }

    #[test]
    fn a_returned_seal_is_checked_against_the_replica_that_gave_it() {
        let (a1, b1) = (signer(1), signer(3));
        let d = [7u8; 32];
        assert!(seals(&a1.verifier(), &d, &seal(&a1, &d)));
        assert!(
            !seals(&a1.verifier(), &d, &seal(&b1, &d)),
            "another key's seal"
        );
        assert!(
            !seals(&a1.verifier(), &d, &seal(&a1, &[8u8; 32])),
            "another digest"
        );
        assert!(!seals(&a1.verifier(), &d, "garbage"));
    }

    #[test]
    fn malformed_and_excess_seals_are_refused_with_the_fix() {
        let (a1, b1) = (signer(1), signer(3));
        let q = quorum(&[("north", &a1), ("south", &b1)], 2);
        let d = [7u8; 32];
        let e = check(&q, "m1", &d, &["not a line".into()]).unwrap_err();
        assert!(matches!(e, SealError::Malformed { index: 0, .. }), "{e}");
        let many = vec![seal(&a1, &d); 3];
        let e = check(&q, "m1", &d, &many).unwrap_err();
        assert!(matches!(e, SealError::TooMany { count: 3, .. }), "{e}");
    }

    #[test]
    fn a_seal_note_is_never_a_checkpoint() {
        let t = text(&[0x11; 32]);
        assert_eq!(t.lines().count(), 2);
        assert!(panel_tlog::Checkpoint::parse_body(&t).is_err());
    }
}
