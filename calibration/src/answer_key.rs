//! A salted commitment to an exam's answer key, so a coordinator can publish, before the
//! exam, a hash that binds it to every gold answer without revealing any
//! (docs/CALIBRATION.md, "Bias probes and a committed answer key").
//!
//! Why salted: the exam's content hash also covers the golds, but it is unsalted. Anyone
//! holding the questions could try the 2^b gold vectors of `b` binary items against it
//! (2^45 for the default exam's binary items), so the content hash of a private pool must
//! not be published before the reveal. The 32-byte salt, drawn fresh per commitment and
//! kept secret until the reveal, makes the commitment hiding; SHA-256's collision
//! resistance makes it binding.
//!
//! Canonical encoding, hashed with SHA-256 (`len(x)` is `x`'s byte length as a u64, big
//! endian; numbers are IEEE 754 bits, big endian):
//!
//! ```text
//! ANSWER_KEY_DOMAIN || salt (32 bytes)
//! || len(name) || name || len(version) || version || item count (u64)
//! || for every item, in ascending byte order of its id:
//!      len(id) || id || gold
//! gold = "b" 0x00|0x01                                    (binary: false | true)
//!      | "r" bits(step)                                   (relevance)
//!      | "t" index (one byte, T1 = 0 ... T5 = 4)          (tier)
//!      | "q" bits(value) len(unit) unit scale bits(lo) bits(hi)
//!                       (quantity; scale 0x00 uni, 0x01 log; the frozen range)
//! ```
//!
//! Sorting by id makes the key independent of the file's item order. Question texts are
//! not in the key: they are shown to the arbiters, so the asking log fixes them, and the
//! revealed exam's content hash binds them to the scores.

use sha2::{Digest, Sha256};

use crate::cooke::Scale;
use crate::exam::{Exam, Gold};

/// Domain tag of the answer-key commitment.
pub const ANSWER_KEY_DOMAIN: &str = "crucible-panel/exam/answer-key/v1\n";

/// The commitment to `exam`'s answer key under `salt` (encoding in the module docs).
pub fn commit_answer_key(exam: &Exam, salt: [u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(ANSWER_KEY_DOMAIN.as_bytes());
    h.update(salt);
    let field = |h: &mut Sha256, bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(&mut h, exam.name.as_bytes());
    field(&mut h, exam.version.as_bytes());
    h.update((exam.items.len() as u64).to_be_bytes());
    let mut items: Vec<_> = exam.items.iter().collect();
    items.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    for item in items {
        field(&mut h, item.id.as_bytes());
        match &item.gold {
            Gold::Binary(b) => {
                h.update(b"b");
                h.update([u8::from(*b)]);
            }
            Gold::Relevance(r) => {
                h.update(b"r");
                h.update(r.to_bits().to_be_bytes());
            }
            Gold::Tier(t) => {
                h.update(b"t");
                h.update([t.index() as u8]);
            }
            Gold::Quantity {
                value,
                unit,
                scale,
                range,
            } => {
                h.update(b"q");
                h.update(value.to_bits().to_be_bytes());
                field(&mut h, unit.as_bytes());
                h.update([match scale {
                    Scale::Uni => 0u8,
                    Scale::Log => 1u8,
                }]);
                h.update(range.0.to_bits().to_be_bytes());
                h.update(range.1.to_bits().to_be_bytes());
            }
        }
    }
    h.finalize().into()
}

/// Whether `commitment` is the commitment to `exam`'s answer key under `salt`: what anyone
/// checks after the coordinator reveals the salt and the exam.
pub fn verify_answer_key(exam: &Exam, salt: [u8; 32], commitment: [u8; 32]) -> bool {
    commit_answer_key(exam, salt) == commitment
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exam::{Tier, load_exam};

    const EXAM: &str = concat!(
        r#"{"exam":"k","version":"1","quantiles":[0.05,0.5,0.95]}"#,
        "\n",
        r#"{"id":"b","kind":"binary","question":"q","gold":true,"source":"s"}"#,
        "\n",
        r#"{"id":"r","kind":"relevance","question":"q","gold":0.5,"source":"s"}"#,
        "\n",
        r#"{"id":"t","kind":"tier","question":"q","gold":"T2","source":"s"}"#,
        "\n",
        r#"{"id":"x","kind":"quantity","question":"q","gold":3,"unit":"m","scale":"uni","range":[1,9],"source":"s"}"#,
    );

    #[test]
    fn the_commitment_verifies_and_depends_on_the_salt() {
        let exam = load_exam(EXAM).unwrap();
        let salt = [7u8; 32];
        let c = commit_answer_key(&exam, salt);
        assert!(verify_answer_key(&exam, salt, c));
        assert!(!verify_answer_key(&exam, [8u8; 32], c));
        assert_ne!(commit_answer_key(&exam, [8u8; 32]), c);
    }

    #[test]
    fn any_gold_change_changes_the_commitment() {
        let exam = load_exam(EXAM).unwrap();
        let salt = [1u8; 32];
        let c = commit_answer_key(&exam, salt);
        let changed: Vec<Gold> = vec![
            Gold::Binary(false),
            Gold::Relevance(0.75),
            Gold::Tier(Tier::T3),
            Gold::Quantity {
                value: 4.0,
                unit: "m".into(),
                scale: Scale::Uni,
                range: (1.0, 9.0),
            },
        ];
        for (index, gold) in changed.into_iter().enumerate() {
            let mut edited = exam.clone();
            edited.items[index].gold = gold;
            assert!(
                !verify_answer_key(&edited, salt, c),
                "changing item {index}'s gold went unnoticed"
            );
        }
        let mut renamed = exam.clone();
        renamed.items[0].id = "b2".into();
        assert!(!verify_answer_key(&renamed, salt, c));
        let mut dropped = exam.clone();
        dropped.items.pop();
        assert!(!verify_answer_key(&dropped, salt, c));
    }

    #[test]
    fn item_order_and_question_text_do_not_matter() {
        let exam = load_exam(EXAM).unwrap();
        let salt = [3u8; 32];
        let c = commit_answer_key(&exam, salt);
        let mut reordered = exam.clone();
        reordered.items.reverse();
        reordered.items[0].question = "reworded".into();
        assert!(verify_answer_key(&reordered, salt, c));
    }
}
