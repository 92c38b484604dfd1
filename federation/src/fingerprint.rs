//! A certificate pin: the SHA-256 of a certificate's DER bytes, written as 64 lowercase
//! hex digits. The charter names replicas, operators and organisations' authorities by pin,
//! so an identity holds a role only with exactly that certificate.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// SHA-256 of a certificate's DER bytes.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub fn of_der(der: &[u8]) -> Self {
        Fingerprint(Sha256::digest(der).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

impl std::str::FromStr for Fingerprint {
    type Err = FingerprintError;
    fn from_str(s: &str) -> Result<Self, FingerprintError> {
        hex32(s).map(Fingerprint)
    }
}

/// Why a written pin is not a [`Fingerprint`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FingerprintError {
    #[error("not hex: {0}; give the 64 hex digits of the certificate's SHA-256")]
    NotHex(hex::FromHexError),
    #[error("{0} bytes, expected 32; give the 64 hex digits of the certificate's SHA-256")]
    WrongLength(usize),
}

/// 32 bytes from 64 hex digits, with the problem named.
pub(crate) fn hex32(s: &str) -> Result<[u8; 32], FingerprintError> {
    let bytes = hex::decode(s.trim()).map_err(FingerprintError::NotHex)?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| FingerprintError::WrongLength(b.len()))
}

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
