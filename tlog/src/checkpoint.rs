//! C2SP tlog-checkpoint v1.0.0: the note text `<origin>\n<tree size>\n<base64 root>\n`
//! (and optional extension lines, which this log never writes).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use crate::merkle::Hash;

/// A log's tree head at one size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    pub extensions: Vec<String>,
}

/// Why a note text is not a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("a checkpoint has at least three lines (origin, size, root), each ending in a newline")]
    Lines,
    #[error("the origin line is empty")]
    Origin,
    #[error("the tree size {0:?} is not a decimal without leading zeroes")]
    Size(String),
    #[error("the root hash {0:?} is not the base64 of 32 bytes")]
    Root(String),
}

impl Checkpoint {
    pub fn new(origin: &str, size: u64, root: Hash) -> Self {
        Checkpoint {
            origin: origin.to_string(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// The note text of this checkpoint.
    pub fn body(&self) -> String {
        let mut s = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        );
        for e in &self.extensions {
            s.push_str(e);
            s.push('\n');
        }
        s
    }

    /// Parses a checkpoint's note text.
    pub fn parse_body(text: &str) -> Result<Self, CheckpointError> {
        let body = text.strip_suffix('\n').ok_or(CheckpointError::Lines)?;
        let lines: Vec<&str> = body.split('\n').collect();
        if lines.len() < 3 || lines.iter().any(|l| l.is_empty()) {
            return Err(CheckpointError::Lines);
        }
        let origin = lines[0];
        if origin.trim().is_empty() {
            return Err(CheckpointError::Origin);
        }
        let size_text = lines[1];
        let canonical = !size_text.is_empty()
            && size_text.bytes().all(|b| b.is_ascii_digit())
            && (size_text == "0" || !size_text.starts_with('0'));
        let size = canonical
            .then(|| size_text.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| CheckpointError::Size(size_text.into()))?;
        let root = decode_hash(lines[2]).ok_or_else(|| CheckpointError::Root(lines[2].into()))?;
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root,
            extensions: lines[3..].iter().map(|l| l.to_string()).collect(),
        })
    }
}

/// Decodes a base64 SHA-256 hash; `None` unless it is exactly 32 bytes in canonical form.
pub fn decode_hash(b64: &str) -> Option<Hash> {
    let raw = B64.decode(b64).ok()?;
    let hash: Hash = raw.try_into().ok()?;
    (B64.encode(hash) == b64).then_some(hash)
}

/// Encodes a hash in base64, as checkpoints and proofs carry it.
pub fn encode_hash(hash: &Hash) -> String {
    B64.encode(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_example_body_round_trips() {
        let text =
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        let cp = Checkpoint::parse_body(text).expect("checkpoint");
        assert_eq!(cp.size, 20852163);
        assert_eq!(cp.body(), text);
    }

    #[test]
    fn malformed_bodies_are_refused() {
        for (text, want) in [
            ("o\n1\n", CheckpointError::Lines),
            (
                "o\n01\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
                CheckpointError::Size("01".into()),
            ),
            (
                "o\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
                CheckpointError::Size("-1".into()),
            ),
            ("o\n1\nAAAA\n", CheckpointError::Root("AAAA".into())),
            (
                "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n",
                CheckpointError::Lines,
            ),
            (
                "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=",
                CheckpointError::Lines,
            ),
        ] {
            assert_eq!(Checkpoint::parse_body(text), Err(want), "{text:?}");
        }
    }
}
