//! C2SP tlog-proof (editor's draft, `c2sp.org/tlog-proof@v1`): an offline bundle of one
//! entry's index, its inclusion proof and the cosigned checkpoint it is proven against.
//! The record puts the entry's own bytes in the `extra` line, so the bundle carries
//! everything needed to check it: the leaf hash is recomputed from them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use crate::checkpoint::{decode_hash, encode_hash};
use crate::merkle::Hash;
use crate::note::Note;

/// The first line of every bundle.
pub const HEADER: &str = "c2sp.org/tlog-proof@v1";

/// A parsed proof bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofBundle {
    pub extra: Option<Vec<u8>>,
    pub index: u64,
    pub inclusion: Vec<Hash>,
    pub checkpoint: Note,
}

/// Why a bundle does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("line {line}: {problem}")]
    Line { line: usize, problem: String },
    #[error("the checkpoint: {0}")]
    Checkpoint(String),
}

fn at(line: usize, problem: impl Into<String>) -> BundleError {
    BundleError::Line {
        line,
        problem: problem.into(),
    }
}

impl ProofBundle {
    pub fn to_text(&self) -> String {
        let mut s = format!("{HEADER}\n");
        if let Some(extra) = &self.extra {
            s.push_str(&format!("extra {}\n", B64.encode(extra)));
        }
        s.push_str(&format!("index {}\n", self.index));
        for h in &self.inclusion {
            s.push_str(&encode_hash(h));
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&self.checkpoint.to_text());
        s
    }

    pub fn parse(text: &str) -> Result<Self, BundleError> {
        let (head, note) = text
            .split_once("\n\n")
            .ok_or_else(|| at(1, "no blank line before the checkpoint"))?;
        let lines: Vec<&str> = head.split('\n').collect();
        if lines.first() != Some(&HEADER) {
            return Err(at(1, format!("the first line must be {HEADER:?}")));
        }
        let mut n = 1;
        let extra = match lines.get(n).and_then(|l| l.strip_prefix("extra ")) {
            Some(b64) => {
                n += 1;
                Some(
                    B64.decode(b64)
                        .map_err(|e| at(n, format!("extra is not base64 ({e})")))?,
                )
            }
            None => None,
        };
        let index_text = lines
            .get(n)
            .and_then(|l| l.strip_prefix("index "))
            .ok_or_else(|| at(n + 1, "expected `index <n>`"))?;
        if index_text.is_empty()
            || !index_text.bytes().all(|b| b.is_ascii_digit())
            || (index_text.len() > 1 && index_text.starts_with('0'))
        {
            return Err(at(
                n + 1,
                "the index is not a decimal without leading zeroes",
            ));
        }
        let index = index_text
            .parse()
            .map_err(|_| at(n + 1, "the index is out of range"))?;
        let inclusion = lines[n + 1..]
            .iter()
            .enumerate()
            .map(|(i, l)| decode_hash(l).ok_or_else(|| at(n + 2 + i, "not a base64 hash")))
            .collect::<Result<Vec<_>, _>>()?;
        if inclusion.len() > 64 {
            return Err(at(n + 2, "more than 64 proof hashes"));
        }
        let checkpoint =
            Note::parse(note.as_bytes()).map_err(|e| BundleError::Checkpoint(e.to_string()))?;
        Ok(ProofBundle {
            extra,
            index,
            inclusion,
            checkpoint,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Checkpoint;
    use crate::merkle::{Log, leaf_hash, verify_inclusion};
    use crate::note::NoteSigner;

    #[test]
    fn a_bundle_round_trips_and_proves_its_entry() {
        let mut l = Log::new();
        for i in 0..11 {
            l.append(format!("e{i}").as_bytes());
        }
        let s = NoteSigner::new(
            "log.example",
            ed25519_dalek::SigningKey::from_bytes(&[3; 32]),
        )
        .expect("s");
        let mut note = Note::new(Checkpoint::new("log.example", 11, l.root()).body()).expect("n");
        note.add(s.sign(&note.text));
        let b = ProofBundle {
            extra: Some(b"e7".to_vec()),
            index: 7,
            inclusion: l.inclusion_proof(7, 11).expect("proof"),
            checkpoint: note,
        };
        let parsed = ProofBundle::parse(&b.to_text()).expect("parse");
        assert_eq!(parsed, b);
        verify_inclusion(&leaf_hash(b"e7"), 7, 11, &parsed.inclusion, &l.root()).expect("holds");
        assert!(ProofBundle::parse("c2sp.org/tlog-proof@v2\nindex 1\n\nx").is_err());
        assert!(ProofBundle::parse(&b.to_text().replace("index 7", "index 07")).is_err());
    }
}
