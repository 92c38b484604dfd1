//! A replica's beacon key: the verifiable random function (C2SP vrf-r255, the RFC 9381
//! ECVRF over ristretto255) whose output is the replica's share of a motion's draw seed
//! (docs/SECURITY.md "The draw cannot be steered"; `panel_machine::features::beacon` has the rule).
//!
//! Why a VRF and not a signature: an Ed25519 signer may pick its nonce, so one key can sign
//! one message in many valid ways and a leader could grind among them. A VRF proof has
//! exactly one output per key and input, and anyone holding the public key checks it.
//!
//! The secret is derived from the replica's own log key seed (domain-separated), so a
//! replica holds no second secret file; its public half is the charter entry's
//! `beacon_vkey` (hex, 32 bytes).

use sha2::{Digest, Sha256};
use vrf_r255::{Proof, PublicKey, SecretKey};

/// Domain of the derivation from a log key seed: no other key of the project is derived
/// from these bytes.
const DERIVE_DOMAIN: &[u8] = b"crucible-panel/beacon-key/v1\0";

/// Bytes of a proof (`Proof::to_bytes`).
pub const PROOF_LEN: usize = 80;

/// Why a beacon key, proof or share does not check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeaconKeyError {
    #[error("the beacon key {0:?} is not 32 bytes of hex encoding a ristretto255 point")]
    BadKey(String),
    #[error(
        "the beacon proof is not {PROOF_LEN} bytes of hex encoding a vrf-r255 proof; send the \
         proof as the replica's beacon key made it"
    )]
    BadProof,
    #[error(
        "the beacon proof does not verify under the replica's beacon key for this input; the \
         replica must prove over the motion's question key with the key its charter entry names"
    )]
    Invalid,
}

/// The secret half, held by one replica.
pub struct BeaconSecret(SecretKey);

/// Shows the public half only.
impl std::fmt::Debug for BeaconSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BeaconSecret(public {})", self.public_hex())
    }
}

impl BeaconSecret {
    /// The beacon secret of the replica whose log key has Ed25519 seed `seed`.
    ///
    /// SHA-256 of the domain and the seed, with the top four bits cleared, is below the
    /// group order, so it is always a canonical scalar; an all-zero result (probability
    /// 2^-252) is mapped to one.
    pub fn from_log_seed(seed: &[u8; 32]) -> BeaconSecret {
        let mut h = Sha256::new();
        h.update(DERIVE_DOMAIN);
        h.update(seed);
        let mut bytes: [u8; 32] = h.finalize().into();
        bytes[31] &= 0x0f;
        if bytes == [0u8; 32] {
            bytes[0] = 1;
        }
        // A non-zero scalar below 2^252 is canonical, so this always holds.
        BeaconSecret(
            SecretKey::from_bytes(bytes)
                .into_option()
                .expect("a non-zero scalar below 2^252 is canonical"),
        )
    }

    /// The charter form of the public half (`ReplicaEntry::beacon_vkey`).
    pub fn public_hex(&self) -> String {
        hex::encode(PublicKey::from(self.0).to_bytes())
    }

    /// The proof over `input`, hex (the form a share carries on the record).
    pub fn prove_hex(&self, input: &[u8]) -> String {
        hex::encode(self.0.prove(input).to_bytes())
    }
}

/// Parses a charter `beacon_vkey`.
pub fn parse_public(hex_key: &str) -> Result<PublicKey, BeaconKeyError> {
    let bad = || BeaconKeyError::BadKey(hex_key.to_owned());
    let bytes: [u8; 32] = hex::decode(hex_key)
        .map_err(|_| bad())?
        .try_into()
        .map_err(|_| bad())?;
    PublicKey::from_bytes(bytes).ok_or_else(bad)
}

/// The 64-byte output of `proof_hex` over `input` under `key`, if the proof checks.
pub fn verify(key: &PublicKey, input: &[u8], proof_hex: &str) -> Result<[u8; 64], BeaconKeyError> {
    let bytes: [u8; PROOF_LEN] = hex::decode(proof_hex)
        .map_err(|_| BeaconKeyError::BadProof)?
        .try_into()
        .map_err(|_| BeaconKeyError::BadProof)?;
    let proof = Proof::from_bytes(bytes).ok_or(BeaconKeyError::BadProof)?;
    key.verify(input, &proof)
        .into_option()
        .ok_or(BeaconKeyError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_checks_under_its_key_and_input_only() {
        let a = BeaconSecret::from_log_seed(&[1u8; 32]);
        let b = BeaconSecret::from_log_seed(&[2u8; 32]);
        let ka = parse_public(&a.public_hex()).unwrap();
        let kb = parse_public(&b.public_hex()).unwrap();
        let proof = a.prove_hex(b"question");
        let out = verify(&ka, b"question", &proof).unwrap();
        // Unique: proving again gives the same output.
        assert_eq!(
            verify(&ka, b"question", &a.prove_hex(b"question")).unwrap(),
            out
        );
        assert_eq!(
            verify(&kb, b"question", &proof),
            Err(BeaconKeyError::Invalid)
        );
        assert_eq!(verify(&ka, b"other", &proof), Err(BeaconKeyError::Invalid));
        assert_eq!(
            verify(&ka, b"question", "00"),
            Err(BeaconKeyError::BadProof)
        );
        assert_ne!(
            verify(&kb, b"question", &b.prove_hex(b"question")).unwrap(),
            out
        );
    }

    #[test]
    fn the_derivation_is_stable_and_keys_parse_strictly() {
        let a = BeaconSecret::from_log_seed(&[7u8; 32]);
        assert_eq!(
            a.public_hex(),
            BeaconSecret::from_log_seed(&[7u8; 32]).public_hex()
        );
        assert!(parse_public("zz").is_err());
        assert!(parse_public(&"ff".repeat(32)).is_err());
    }
}
