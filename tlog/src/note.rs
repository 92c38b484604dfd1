//! C2SP signed-note v1.0.0 (docs/WIRE.md, "Transparency log"): a text, a blank line and
//! signature lines `— <name> base64(key ID || signature)`; verifier keys (vkeys)
//! `<name>+<hex key ID>+base64(type || public key)`. Ed25519 note signatures are type
//! 0x01; timestamped cosignatures (`cosignature`) are type 0x04.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Signature type of an Ed25519 note signature.
pub const TYPE_ED25519: u8 = 0x01;
/// Signature type of a timestamped Ed25519 checkpoint cosignature (tlog-cosignature).
pub const TYPE_COSIGNATURE_V1: u8 = 0x04;
/// Most signature lines a note may carry (the spec asks verifiers to accept 16).
pub const MAX_SIGNATURES: usize = 100;
/// Largest note this crate parses, in bytes.
pub const MAX_NOTE_BYTES: usize = 1 << 20;

const DASH: &str = "\u{2014} ";

/// Why a note, a signature line or a vkey is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("the note is {0} bytes; at most {MAX_NOTE_BYTES} are read")]
    TooLarge(usize),
    #[error("the note is not valid UTF-8")]
    NotUtf8,
    #[error("the note contains the control character {0:#04x}; only newline is allowed")]
    Control(u32),
    #[error("the note has no blank line before its signatures")]
    NoSignatures,
    #[error("the note text must be non-empty and end in a newline")]
    BadText,
    #[error("the note has {0} signature lines; at most {MAX_SIGNATURES} are read")]
    TooManySignatures(usize),
    #[error("signature line {line}: {problem}")]
    BadLine {
        line: usize,
        problem: SignatureLineError,
    },
    #[error("key name {0:?} is empty or contains a space or '+'")]
    BadName(String),
    #[error("vkey {vkey:?}: {problem}")]
    BadVkey { vkey: String, problem: String },
    #[error("the signature by {name} (key ID {id:08x}) does not verify")]
    BadSignature { name: String, id: u32 },
    #[error(
        "no signature by a known key: the note is signed by {signed_by:?}, expected one of {expected:?}"
    )]
    NoKnownSignature {
        signed_by: Vec<String>,
        expected: Vec<String>,
    },
}

/// Why one signature line is not `— <name> base64(key ID || signature)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureLineError {
    #[error("does not start with an em dash and a space")]
    NoDash,
    #[error("has no space between key name and signature")]
    NoSpace,
    #[error("key name {0:?} is empty or contains '+'")]
    BadName(String),
    #[error("signature is not base64 ({0})")]
    NotBase64(base64::DecodeError),
    #[error("signature is shorter than a key ID and one byte")]
    TooShort,
}

/// Key names are non-empty and hold neither Unicode spaces nor '+'.
pub fn valid_key_name(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c == '+')
}

/// The recommended key ID: SHA-256(name || "\n" || type || public key)[:4], big-endian.
pub fn key_id(name: &str, sig_type: u8, public_key: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', sig_type]);
    h.update(public_key);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// One signature line: key name, key ID and the signature bytes after the ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureLine {
    pub name: String,
    pub key_id: u32,
    pub signature: Vec<u8>,
}

impl SignatureLine {
    /// Parses one line without its final newline.
    pub fn parse(line: &str) -> Result<Self, SignatureLineError> {
        let rest = line.strip_prefix(DASH).ok_or(SignatureLineError::NoDash)?;
        let (name, b64) = rest.split_once(' ').ok_or(SignatureLineError::NoSpace)?;
        if !valid_key_name(name) {
            return Err(SignatureLineError::BadName(name.to_string()));
        }
        let raw = B64.decode(b64).map_err(SignatureLineError::NotBase64)?;
        if raw.len() < 5 {
            return Err(SignatureLineError::TooShort);
        }
        Ok(SignatureLine {
            name: name.to_string(),
            key_id: u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]),
            signature: raw[4..].to_vec(),
        })
    }

    /// The line as the note carries it, with its final newline.
    pub fn to_line(&self) -> String {
        let mut raw = self.key_id.to_be_bytes().to_vec();
        raw.extend_from_slice(&self.signature);
        format!("{DASH}{} {}\n", self.name, B64.encode(raw))
    }
}

/// A signed note: its text (with the final newline) and its signature lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub signatures: Vec<SignatureLine>,
}

fn check_chars(s: &str) -> Result<(), NoteError> {
    match s.chars().find(|&c| c < ' ' && c != '\n') {
        Some(c) => Err(NoteError::Control(c as u32)),
        None => Ok(()),
    }
}

impl Note {
    /// A note with `text` and no signatures yet; the text must end in a newline.
    pub fn new(text: impl Into<String>) -> Result<Self, NoteError> {
        let text = text.into();
        check_chars(&text)?;
        if text.is_empty() || !text.ends_with('\n') {
            return Err(NoteError::BadText);
        }
        Ok(Note {
            text,
            signatures: Vec::new(),
        })
    }

    /// Parses a whole signed note: the text is separated from the signatures by the last
    /// blank line.
    pub fn parse(bytes: &[u8]) -> Result<Self, NoteError> {
        if bytes.len() > MAX_NOTE_BYTES {
            return Err(NoteError::TooLarge(bytes.len()));
        }
        let all = std::str::from_utf8(bytes).map_err(|_| NoteError::NotUtf8)?;
        check_chars(all)?;
        let split = all.rfind("\n\n").ok_or(NoteError::NoSignatures)?;
        let text = &all[..split + 1];
        let sigs = &all[split + 2..];
        if sigs.is_empty() || !sigs.ends_with('\n') {
            return Err(NoteError::NoSignatures);
        }
        let lines: Vec<&str> = sigs[..sigs.len() - 1].split('\n').collect();
        if lines.len() > MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures(lines.len()));
        }
        let signatures = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                SignatureLine::parse(l).map_err(|problem| NoteError::BadLine {
                    line: i + 1,
                    problem,
                })
            })
            .collect::<Result<_, _>>()?;
        let mut note = Note::new(text)?;
        note.signatures = signatures;
        Ok(note)
    }

    /// Adds a signature line, replacing one by the same key (name and ID).
    pub fn add(&mut self, line: SignatureLine) {
        self.signatures
            .retain(|s| !(s.name == line.name && s.key_id == line.key_id));
        self.signatures.push(line);
    }

    /// The note as bytes on the wire: text, blank line, signature lines.
    pub fn to_text(&self) -> String {
        let mut out = self.text.clone();
        out.push('\n');
        for s in &self.signatures {
            out.push_str(&s.to_line());
        }
        out
    }

    /// Checks every signature by a key in `known` (unknown keys are ignored, as the spec
    /// says) and returns the keys whose signatures verified. A known key whose signature
    /// fails rejects the note; so does a note no known key signed.
    pub fn verify<'k>(&self, known: &'k [VerifierKey]) -> Result<Vec<&'k VerifierKey>, NoteError> {
        let mut verified: Vec<&VerifierKey> = Vec::new();
        for line in &self.signatures {
            for key in known.iter().filter(|k| k.matches(line)) {
                if !key.verifies(&self.text, &line.signature) {
                    return Err(NoteError::BadSignature {
                        name: line.name.clone(),
                        id: line.key_id,
                    });
                }
                if !verified.contains(&key) {
                    verified.push(key);
                }
            }
        }
        if verified.is_empty() {
            return Err(NoteError::NoKnownSignature {
                signed_by: self.signatures.iter().map(|s| s.name.clone()).collect(),
                expected: known.iter().map(|k| k.name.clone()).collect(),
            });
        }
        Ok(verified)
    }
}

/// A verifier key: a name, a signature type and an Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    pub name: String,
    pub key_id: u32,
    pub sig_type: u8,
    pub key: VerifyingKey,
}

impl VerifierKey {
    /// The vkey of `key` under `name` for signatures of `sig_type`.
    pub fn new(name: &str, sig_type: u8, key: VerifyingKey) -> Result<Self, NoteError> {
        if !valid_key_name(name) {
            return Err(NoteError::BadName(name.into()));
        }
        Ok(VerifierKey {
            name: name.to_string(),
            key_id: key_id(name, sig_type, key.as_bytes()),
            sig_type,
            key,
        })
    }

    /// Parses `<name>+<hex key ID>+<base64(type || key)>`; the ID must be the one the key
    /// and name give, and the type one this crate verifies (0x01 or 0x04).
    pub fn parse(vkey: &str) -> Result<Self, NoteError> {
        let bad = |problem: &str| NoteError::BadVkey {
            vkey: vkey.to_string(),
            problem: problem.to_string(),
        };
        // The name holds no '+' and the ID is hex, so the key (base64, which may hold '+')
        // is everything after the second '+'.
        let mut parts = vkey.trim().splitn(3, '+');
        let (Some(name), Some(id_hex), Some(b64)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("expected <name>+<key ID>+<key>, three parts"));
        };
        if !valid_key_name(name) {
            return Err(bad("the key name is empty or contains a space"));
        }
        if id_hex.len() != 8 || !id_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the key ID is not 8 hex digits"));
        }
        let id = u32::from_str_radix(id_hex, 16).map_err(|_| bad("the key ID is not hex"))?;
        let raw = B64.decode(b64).map_err(|_| bad("the key is not base64"))?;
        let (&sig_type, public) = raw.split_first().ok_or_else(|| bad("the key is empty"))?;
        if sig_type != TYPE_ED25519 && sig_type != TYPE_COSIGNATURE_V1 {
            return Err(bad(&format!(
                "signature type {sig_type:#04x} is not Ed25519 (0x01) or cosignature/v1 (0x04)"
            )));
        }
        let public: [u8; 32] = public
            .try_into()
            .map_err(|_| bad("an Ed25519 key is 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&public).map_err(|_| bad("not an Ed25519 key"))?;
        if key.is_weak() {
            return Err(bad("a weak (small-order) key"));
        }
        let parsed = VerifierKey::new(name, sig_type, key)?;
        if parsed.key_id != id {
            return Err(bad(&format!(
                "the key ID should be {:08x} for this name and key",
                parsed.key_id
            )));
        }
        Ok(parsed)
    }

    /// Whether a signature line claims this key.
    pub fn matches(&self, line: &SignatureLine) -> bool {
        line.name == self.name && line.key_id == self.key_id
    }

    /// Checks a signature's bytes (after the key ID) over a note's text.
    pub fn verifies(&self, text: &str, signature: &[u8]) -> bool {
        match self.sig_type {
            TYPE_ED25519 => {
                let Ok(sig) = <[u8; 64]>::try_from(signature) else {
                    return false;
                };
                self.key
                    .verify_strict(text.as_bytes(), &Signature::from_bytes(&sig))
                    .is_ok()
            }
            TYPE_COSIGNATURE_V1 => crate::cosignature::verify(&self.key, text, signature).is_some(),
            _ => false,
        }
    }
}

impl std::fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut raw = vec![self.sig_type];
        raw.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.name, self.key_id, B64.encode(raw))
    }
}

/// A note signer: an Ed25519 key under a name (type 0x01).
#[derive(Clone)]
pub struct NoteSigner {
    name: String,
    key: SigningKey,
}

impl std::fmt::Debug for NoteSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoteSigner")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl NoteSigner {
    pub fn new(name: &str, key: SigningKey) -> Result<Self, NoteError> {
        if !valid_key_name(name) {
            return Err(NoteError::BadName(name.into()));
        }
        Ok(NoteSigner {
            name: name.to_string(),
            key,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The vkey that verifies this signer's notes.
    pub fn verifier(&self) -> VerifierKey {
        VerifierKey {
            name: self.name.clone(),
            key_id: key_id(
                &self.name,
                TYPE_ED25519,
                self.key.verifying_key().as_bytes(),
            ),
            sig_type: TYPE_ED25519,
            key: self.key.verifying_key(),
        }
    }

    /// Signs a note's text (deterministic, RFC 8032).
    pub fn sign(&self, text: &str) -> SignatureLine {
        SignatureLine {
            name: self.name.clone(),
            key_id: key_id(
                &self.name,
                TYPE_ED25519,
                self.key.verifying_key().as_bytes(),
            ),
            signature: self.key.sign(text.as_bytes()).to_bytes().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_example_note_verifies_under_its_vkey() {
        let vkey = VerifierKey::parse(
            "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
        )
        .expect("vkey");
        let note = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
        let parsed = Note::parse(note.as_bytes()).expect("note");
        assert_eq!(parsed.text, "This is an example message.\n");
        assert_eq!(
            parsed
                .verify(std::slice::from_ref(&vkey))
                .expect("verifies")
                .len(),
            1
        );
        assert_eq!(parsed.to_text(), note);
        assert_eq!(
            vkey.to_string(),
            "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
        );
        let mut edited = parsed.clone();
        edited.text = "This is an edited message.\n".into();
        assert!(matches!(
            edited.verify(&[vkey]),
            Err(NoteError::BadSignature { .. })
        ));
    }

    #[test]
    fn unknown_keys_are_ignored_and_a_note_without_known_signature_is_refused() {
        let a = NoteSigner::new("a.example/log", SigningKey::from_bytes(&[1; 32])).expect("a");
        let b = NoteSigner::new("b.example/log", SigningKey::from_bytes(&[2; 32])).expect("b");
        let mut note = Note::new("hello\n").expect("note");
        note.add(a.sign(&note.text));
        note.add(b.sign(&note.text));
        let reparsed = Note::parse(note.to_text().as_bytes()).expect("parse");
        assert_eq!(reparsed.verify(&[a.verifier()]).expect("a").len(), 1);
        // Same name, another key: the ID differs, so the line is not this key's.
        let imposter =
            NoteSigner::new("a.example/log", SigningKey::from_bytes(&[3; 32])).expect("c");
        assert!(matches!(
            reparsed.verify(&[imposter.verifier()]),
            Err(NoteError::NoKnownSignature { .. })
        ));
    }

    #[test]
    fn malformed_notes_and_vkeys_are_refused_with_the_rule() {
        assert_eq!(
            Note::parse(b"no signatures\n"),
            Err(NoteError::NoSignatures)
        );
        assert_eq!(Note::parse(b"a\x01b\n\n"), Err(NoteError::Control(1)));
        assert_eq!(Note::parse(&[0xff, b'\n', b'\n']), Err(NoteError::NotUtf8));
        assert!(matches!(
            Note::parse("text\n\n- dash name AAAA\n".as_bytes()),
            Err(NoteError::BadLine { line: 1, .. })
        ));
        assert!(
            VerifierKey::parse("name+00000000+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k")
                .is_err()
        );
        assert!(VerifierKey::parse("only+two").is_err());
        let many = format!(
            "t\n\n{}",
            "\u{2014} k AAAAAAA=\n".repeat(MAX_SIGNATURES + 1)
        );
        assert!(matches!(
            Note::parse(many.as_bytes()),
            Err(NoteError::TooManySignatures(_))
        ));
    }
}
