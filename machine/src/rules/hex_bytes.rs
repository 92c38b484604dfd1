//! Bytes the log and the record carry as lowercase hex (docs/WIRE.md): held as bytes in
//! memory, written as the same hex text, so the log stays readable and no code passes a
//! hex `String` around. A text that is not lowercase hex is kept exactly as it came, so
//! it serialises back unchanged (an old record's leaf hashes the same) and its decoding
//! error surfaces where the bytes are used, with that command's refusal.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes, hex in JSON.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct HexBytes(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Bytes(Box<[u8]>),
    /// Not lowercase hex (upper-case hex still decodes; anything else does not).
    Text(Box<str>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Bytes(Box::default())
    }
}

/// Ordered as the hex text JSON carries (so a set of them serialises in the order a set
/// of the texts did); bytes against bytes compare as bytes, which is the same order.
impl Ord for HexBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (&self.0, &other.0) {
            (Repr::Bytes(a), Repr::Bytes(b)) => a.cmp(b),
            _ => self.to_hex().cmp(&other.to_hex()),
        }
    }
}

impl PartialOrd for HexBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The text is not hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not hex")]
pub struct NotHex;

impl HexBytes {
    pub fn new(bytes: impl Into<Box<[u8]>>) -> Self {
        Self(Repr::Bytes(bytes.into()))
    }

    /// As JSON carries it: lowercase hex is held as its bytes, any other text as is.
    pub fn from_hex(text: &str) -> Self {
        match hex::decode(text) {
            Ok(bytes) if text.bytes().all(|b| !b.is_ascii_uppercase()) => {
                Self(Repr::Bytes(bytes.into()))
            }
            _ => Self(Repr::Text(text.into())),
        }
    }

    /// The bytes (borrowed unless held as upper-case text).
    pub fn bytes(&self) -> Result<Cow<'_, [u8]>, NotHex> {
        match &self.0 {
            Repr::Bytes(b) => Ok(Cow::Borrowed(b)),
            Repr::Text(t) => hex::decode(&**t).map(Cow::Owned).map_err(|_| NotHex),
        }
    }

    /// The hex JSON carries.
    pub fn to_hex(&self) -> String {
        match &self.0 {
            Repr::Bytes(b) => hex::encode(b),
            Repr::Text(t) => t.to_string(),
        }
    }

    /// The length of the text JSON carries (what a write's size is counted in).
    pub fn hex_len(&self) -> usize {
        match &self.0 {
            Repr::Bytes(b) => b.len() * 2,
            Repr::Text(t) => t.len(),
        }
    }
}

impl fmt::Debug for HexBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Bytes(b) => write!(f, "{}", HexOf(b)),
            Repr::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// The hex JSON carries.
impl fmt::Display for HexBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Bytes(b) => HexOf(b).fmt(f),
            Repr::Text(t) => f.write_str(t),
        }
    }
}

impl Serialize for HexBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Bytes(b) => s.collect_str(&HexOf(b)),
            Repr::Text(t) => s.serialize_str(t),
        }
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <Cow<'de, str>>::deserialize(d)?;
        Ok(Self::from_hex(&text))
    }
}

/// Declares a domain type over [`HexBytes`]: what the bytes are, hex in JSON.
macro_rules! hex_bytes_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize,
            serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $crate::rules::hex_bytes::HexBytes);

        impl $name {
            pub fn new(bytes: impl Into<Box<[u8]>>) -> Self {
                Self($crate::rules::hex_bytes::HexBytes::new(bytes))
            }

            pub fn from_hex(text: &str) -> Self {
                Self($crate::rules::hex_bytes::HexBytes::from_hex(text))
            }

            pub fn bytes(
                &self,
            ) -> Result<std::borrow::Cow<'_, [u8]>, $crate::rules::hex_bytes::NotHex> {
                self.0.bytes()
            }

            pub fn to_hex(&self) -> String {
                self.0.to_hex()
            }

            /// The length of the text JSON carries.
            pub fn hex_len(&self) -> usize {
                self.0.hex_len()
            }

            /// The bytes as an array of `N`, or `None` when they are not hex or not `N`
            /// bytes long.
            pub fn array<const N: usize>(&self) -> Option<[u8; N]> {
                self.0.bytes().ok()?.as_ref().try_into().ok()
            }
        }

        /// The hex JSON carries.
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        /// The hex text as JSON carries it ([`HexBytes::from_hex`]).
        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                Self::from_hex(text)
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                Self::from_hex(&text)
            }
        }
    };
}

hex_bytes_type! {
    /// A protobuf `crucible.panel.v1.Reveal` (docs/WIRE.md "Commit-reveal"): the signed
    /// ruling, its salt and the commitment it opens.
    RevealBytes
}

hex_bytes_type! {
    /// A protobuf `crucible.panel.v1.Commitment`, as the seat signed it.
    CommitmentBytes
}

hex_bytes_type! {
    /// A SHA-256 digest: a signed motion's, a debate state's, an exam's, a key
    /// commitment, a precedent's content.
    DigestBytes
}

hex_bytes_type! {
    /// An ed25519 public key: an arbiter's, a contributor's, a motion key, a roster key.
    PublicKeyBytes
}

hex_bytes_type! {
    /// An ed25519 signature.
    SignatureBytes
}

hex_bytes_type! {
    /// Random bytes mixed into a commitment (an exam pool's salt).
    SaltBytes
}

hex_bytes_type! {
    /// A VRF proof (a replica's beacon share, vrf-r255).
    ProofBytes
}

hex_bytes_type! {
    /// A protobuf-encoded, signed `crucible.panel.v1.Motion` (docs/WIRE.md "Motion,
    /// layout v1"), as the seats were sent it.
    WireMotion
}

/// Lowercase hex of bytes, written without an intermediate string.
pub(crate) struct HexOf<'a>(pub &'a [u8]);

impl fmt::Display for HexOf<'_> {
    /// In chunks through a stack buffer: a `write!` per byte was 9% of a replica's CPU
    /// under sustained load, every ruling being written into the record as hex
    /// (BENCHMARKS.md, "Soak").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 512];
        for chunk in self.0.chunks(buf.len() / 2) {
            let out = &mut buf[..chunk.len() * 2];
            hex::encode_to_slice(chunk, out).map_err(|_| fmt::Error)?;
            f.write_str(std::str::from_utf8(out).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_of_writes_what_hex_encode_writes() {
        for n in [0, 1, 255, 256, 257, 1000] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            assert_eq!(HexOf(&bytes).to_string(), hex::encode(&bytes), "{n} bytes");
        }
    }

    /// Whatever text came in goes out unchanged; only lowercase hex is held as bytes.
    #[test]
    fn every_text_serialises_back_as_it_came() {
        for text in ["", "00ff", "00FF", "abc", "zz", "0g"] {
            let json = serde_json::to_string(text).unwrap();
            let held: HexBytes = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&held).unwrap(), json, "{text}");
        }
        assert_eq!(
            HexBytes::from_hex("00ff").bytes().unwrap().as_ref(),
            [0, 255]
        );
        assert_eq!(
            HexBytes::from_hex("00FF").bytes().unwrap().as_ref(),
            [0, 255]
        );
        assert_eq!(HexBytes::from_hex("0g").bytes(), Err(NotHex));
        assert_eq!(HexBytes::from_hex("abc").bytes(), Err(NotHex));
        assert_eq!(HexBytes::new(vec![1, 2]).to_hex(), "0102");
    }

    /// Byte types order, compare and print as their hex text, so a set of keys serialises
    /// in the order a set of the texts did and equality is the texts' equality.
    #[test]
    fn order_and_equality_are_the_texts() {
        let texts = ["", "00", "00ff", "01", "0A", "ab", "abc", "ff", "zz"];
        let mut held: Vec<HexBytes> = texts.iter().map(|t| HexBytes::from_hex(t)).collect();
        held.reverse();
        held.sort();
        let back: Vec<String> = held.iter().map(HexBytes::to_hex).collect();
        let mut want: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        want.sort();
        assert_eq!(back, want);
        for a in &texts {
            for b in &texts {
                assert_eq!(HexBytes::from_hex(a) == HexBytes::from_hex(b), a == b);
            }
        }
        let key = PublicKeyBytes::new([7u8; 32]);
        assert_eq!(key.array::<32>(), Some([7u8; 32]));
        assert_eq!(key.array::<64>(), None);
        assert_eq!(key.to_string(), "07".repeat(32));
        assert_eq!(DigestBytes::from_hex("zz").array::<1>(), None);
    }
}
