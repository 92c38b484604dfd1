//! C2SP tlog-cosignature v1.0.1, the Ed25519 form: a witness's statement that, at a time,
//! the checkpoint is the largest consistent tree it has seen for the log. The signed
//! message is `cosignature/v1\ntime <seconds>\n` followed by the checkpoint's note text;
//! the signature is the timestamp (u64, big-endian) and the Ed25519 signature.

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

use crate::note::{
    NoteError, SignatureLine, TYPE_COSIGNATURE_V1, VerifierKey, key_id, valid_key_name,
};

/// The message a cosignature at `timestamp` signs over a checkpoint's note text.
pub fn message(timestamp: u64, checkpoint_text: &str) -> Vec<u8> {
    format!("cosignature/v1\ntime {timestamp}\n{checkpoint_text}").into_bytes()
}

/// Checks a cosignature's bytes (timestamp and signature, after the key ID) over a
/// checkpoint's text; returns the timestamp it carries.
pub fn verify(key: &VerifyingKey, checkpoint_text: &str, signature: &[u8]) -> Option<u64> {
    if signature.len() != 72 {
        return None;
    }
    let timestamp = u64::from_be_bytes(signature[..8].try_into().ok()?);
    if timestamp > i64::MAX as u64 {
        return None;
    }
    let sig: [u8; 64] = signature[8..].try_into().ok()?;
    key.verify_strict(
        &message(timestamp, checkpoint_text),
        &Signature::from_bytes(&sig),
    )
    .ok()
    .map(|()| timestamp)
}

/// A witness's cosigning key under its name.
#[derive(Clone)]
pub struct Cosigner {
    name: String,
    key: SigningKey,
}

impl std::fmt::Debug for Cosigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cosigner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Cosigner {
    pub fn new(name: &str, key: SigningKey) -> Result<Self, NoteError> {
        if !valid_key_name(name) {
            return Err(NoteError::BadName(name.into()));
        }
        Ok(Cosigner {
            name: name.to_string(),
            key,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The vkey (type 0x04) that verifies this witness's cosignatures.
    pub fn verifier(&self) -> VerifierKey {
        VerifierKey {
            name: self.name.clone(),
            key_id: key_id(
                &self.name,
                TYPE_COSIGNATURE_V1,
                self.key.verifying_key().as_bytes(),
            ),
            sig_type: TYPE_COSIGNATURE_V1,
            key: self.key.verifying_key(),
        }
    }

    /// Cosigns a checkpoint's note text at `timestamp` (seconds since the epoch).
    pub fn cosign(&self, checkpoint_text: &str, timestamp: u64) -> SignatureLine {
        let sig = self.key.sign(&message(timestamp, checkpoint_text));
        let mut bytes = timestamp.to_be_bytes().to_vec();
        bytes.extend_from_slice(&sig.to_bytes());
        SignatureLine {
            name: self.name.clone(),
            key_id: key_id(
                &self.name,
                TYPE_COSIGNATURE_V1,
                self.key.verifying_key().as_bytes(),
            ),
            signature: bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::Note;

    #[test]
    fn a_cosignature_binds_the_checkpoint_and_the_time() {
        let w = Cosigner::new("witness.example/w1", SigningKey::from_bytes(&[9; 32])).expect("w");
        let text = "log.example\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        let line = w.cosign(text, 1_700_000_000);
        assert_eq!(
            verify(&w.verifier().key, text, &line.signature),
            Some(1_700_000_000)
        );
        assert_eq!(
            verify(
                &w.verifier().key,
                "log.example\n6\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
                &line.signature
            ),
            None
        );
        let mut shifted = line.signature.clone();
        shifted[7] ^= 1;
        assert_eq!(verify(&w.verifier().key, text, &shifted), None);
        let mut note = Note::new(text).expect("note");
        note.add(line);
        let vkey = VerifierKey::parse(&w.verifier().to_string()).expect("vkey round trip");
        assert_eq!(note.verify(&[vkey]).expect("verified").len(), 1);
    }
}
