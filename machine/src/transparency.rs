//! The record's transparency log: accepted entries in a Merkle tree in the style of
//! Certificate Transparency (RFC 6962 section 2.1, verification per RFC 9162 section
//! 2.1.3-2.1.4), with signed checkpoints. Pure: hashing and proofs only.
//!
//! A reader holding a checkpoint can check that an entry is in the log (inclusion) and
//! that a later checkpoint extends an earlier one without rewriting it (consistency).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A 32-byte SHA-256 digest.
pub type Hash = [u8; 32];

/// Domain tag of a signed checkpoint; the version changes if the layout does.
pub const CHECKPOINT_DOMAIN: &[u8] = b"crucible-panel/checkpoint/v1\0";

fn sha(parts: &[&[u8]]) -> Hash {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let out = h.finalize();
    let mut a = [0u8; 32];
    a.copy_from_slice(&out);
    a
}

/// RFC 6962: leaf hash = SHA-256(0x00 || entry).
pub fn leaf_hash(entry: &[u8]) -> Hash {
    sha(&[&[0u8], entry])
}

/// RFC 6962: interior node = SHA-256(0x01 || left || right).
pub fn node_hash(l: &Hash, r: &Hash) -> Hash {
    sha(&[&[1u8], l, r])
}

/// Hash of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    sha(&[])
}

/// Largest power of two strictly below `n` (n >= 2).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

/// Merkle tree hash of leaf hashes (RFC 6962 MTH).
pub fn root_of(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&root_of(&leaves[..k]), &root_of(&leaves[k..]))
        }
    }
}

/// An append-only log of leaf hashes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Log {
    leaves: Vec<Hash>,
}

/// Why a proof or checkpoint does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("leaf index {index} is outside a tree of size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("tree size {old} is larger than {new}; a consistency proof goes from older to newer")]
    SizeOrder { old: u64, new: u64 },
    #[error("the proof has the wrong number of hashes")]
    WrongLength,
    #[error("the proof does not reproduce the expected root")]
    RootMismatch,
    #[error("the checkpoint signature does not verify under the stated key")]
    BadSignature,
    #[error("the checkpoint key is not a valid ed25519 public key")]
    BadKey,
}

impl Log {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> u64 {
        self.leaves.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Appends an entry's bytes and returns its index.
    pub fn append(&mut self, entry: &[u8]) -> u64 {
        self.leaves.push(leaf_hash(entry));
        self.len() - 1
    }

    pub fn root(&self) -> Hash {
        root_of(&self.leaves)
    }

    /// Root of the first `size` leaves.
    pub fn root_at(&self, size: u64) -> Hash {
        root_of(&self.leaves[..(size as usize).min(self.leaves.len())])
    }

    /// RFC 6962 audit path for leaf `index` in the tree of the first `size` leaves.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        if index >= size || size > self.len() {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        let mut path = Vec::new();
        audit_path(&self.leaves[..size as usize], index as usize, &mut path);
        Ok(path)
    }

    /// RFC 6962 consistency proof from the tree of size `old` to size `new`.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, ProofError> {
        if old > new {
            return Err(ProofError::SizeOrder { old, new });
        }
        if new > self.len() {
            return Err(ProofError::IndexOutOfRange {
                index: new,
                size: self.len(),
            });
        }
        let mut proof = Vec::new();
        if old > 0 && old < new {
            subproof(old as usize, &self.leaves[..new as usize], true, &mut proof);
        }
        Ok(proof)
    }
}

fn audit_path(leaves: &[Hash], m: usize, out: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    let k = split(n);
    if m < k {
        audit_path(&leaves[..k], m, out);
        out.push(root_of(&leaves[k..]));
    } else {
        audit_path(&leaves[k..], m - k, out);
        out.push(root_of(&leaves[..k]));
    }
}

fn subproof(m: usize, leaves: &[Hash], complete: bool, out: &mut Vec<Hash>) {
    let n = leaves.len();
    if m == n {
        if !complete {
            out.push(root_of(leaves));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &leaves[..k], complete, out);
        out.push(root_of(&leaves[k..]));
    } else {
        subproof(m - k, &leaves[k..], false, out);
        out.push(root_of(&leaves[..k]));
    }
}

/// RFC 9162 section 2.1.3.2: verifies an inclusion proof of `leaf` at `index` in a tree
/// of `size` with `root`.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let (mut f_n, mut s_n) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s_n == 0 {
            return Err(ProofError::WrongLength);
        }
        if f_n & 1 == 1 || f_n == s_n {
            r = node_hash(p, &r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    if s_n != 0 {
        return Err(ProofError::WrongLength);
    }
    if &r == root {
        Ok(())
    } else {
        Err(ProofError::RootMismatch)
    }
}

/// RFC 9162 section 2.1.4.2: verifies that the tree (`new_size`, `new_root`) extends
/// (`old_size`, `old_root`).
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old_size > new_size {
        return Err(ProofError::SizeOrder {
            old: old_size,
            new: new_size,
        });
    }
    if old_size == new_size {
        return if proof.is_empty() && old_root == new_root {
            Ok(())
        } else if !proof.is_empty() {
            Err(ProofError::WrongLength)
        } else {
            Err(ProofError::RootMismatch)
        };
    }
    if old_size == 0 {
        return if proof.is_empty() {
            Ok(())
        } else {
            Err(ProofError::WrongLength)
        };
    }
    let mut path: Vec<Hash> = proof.to_vec();
    if old_size.is_power_of_two() {
        path.insert(0, *old_root);
    }
    let Some((first, rest)) = path.split_first() else {
        return Err(ProofError::WrongLength);
    };
    let (mut f_n, mut s_n) = (old_size - 1, new_size - 1);
    while f_n & 1 == 1 {
        f_n >>= 1;
        s_n >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if s_n == 0 {
            return Err(ProofError::WrongLength);
        }
        if f_n & 1 == 1 || f_n == s_n {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    if s_n != 0 {
        return Err(ProofError::WrongLength);
    }
    if &fr == old_root && &sr == new_root {
        Ok(())
    } else {
        Err(ProofError::RootMismatch)
    }
}

/// A signed statement "the log had `size` entries with `root` at `time_ms`".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub size: u64,
    /// Hex SHA-256 root.
    pub root: String,
    pub time_ms: u64,
    /// Hex ed25519 public key of the signer.
    pub signer: String,
    /// Hex ed25519 signature over [`Checkpoint::signed_bytes`].
    pub signature: String,
}

impl Checkpoint {
    /// Domain tag || size (u64 BE) || root (32 bytes) || time (u64 BE).
    pub fn signed_bytes(size: u64, root: &Hash, time_ms: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(CHECKPOINT_DOMAIN.len() + 48);
        b.extend_from_slice(CHECKPOINT_DOMAIN);
        b.extend_from_slice(&size.to_be_bytes());
        b.extend_from_slice(root);
        b.extend_from_slice(&time_ms.to_be_bytes());
        b
    }

    pub fn sign(key: &SigningKey, size: u64, root: &Hash, time_ms: u64) -> Checkpoint {
        let sig = key.sign(&Self::signed_bytes(size, root, time_ms));
        Checkpoint {
            size,
            root: hex::encode(root),
            time_ms,
            signer: hex::encode(key.verifying_key().as_bytes()),
            signature: hex::encode(sig.to_bytes()),
        }
    }

    /// Checks the signature strictly and returns the root it vouches for.
    pub fn verify(&self) -> Result<Hash, ProofError> {
        let root: Hash = hex::decode(&self.root)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(ProofError::RootMismatch)?;
        let key_bytes: [u8; 32] = hex::decode(&self.signer)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(ProofError::BadKey)?;
        let key = VerifyingKey::from_bytes(&key_bytes).map_err(|_| ProofError::BadKey)?;
        let sig_bytes: [u8; 64] = hex::decode(&self.signature)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(ProofError::BadSignature)?;
        let sig = Signature::from_bytes(&sig_bytes);
        key.verify_strict(&Self::signed_bytes(self.size, &root, self.time_ms), &sig)
            .map_err(|_| ProofError::BadSignature)?;
        Ok(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(n: usize) -> Log {
        let mut l = Log::new();
        for i in 0..n {
            l.append(format!("entry {i}").as_bytes());
        }
        l
    }

    #[test]
    fn every_inclusion_proof_verifies_and_a_wrong_leaf_fails() {
        for n in 1..40u64 {
            let l = log_of(n as usize);
            let root = l.root();
            for i in 0..n {
                let proof = l.inclusion_proof(i, n).expect("proof");
                let leaf = leaf_hash(format!("entry {i}").as_bytes());
                verify_inclusion(&leaf, i, n, &proof, &root).expect("valid proof");
                let wrong = leaf_hash(b"forged entry");
                assert_eq!(
                    verify_inclusion(&wrong, i, n, &proof, &root),
                    Err(ProofError::RootMismatch)
                );
            }
        }
    }

    #[test]
    fn every_consistency_proof_verifies_and_a_rewritten_history_fails() {
        let l = log_of(33);
        for new in 1..=33u64 {
            for old in 1..=new {
                let proof = l.consistency_proof(old, new).expect("proof");
                verify_consistency(old, new, &l.root_at(old), &l.root_at(new), &proof)
                    .unwrap_or_else(|e| panic!("{old}->{new}: {e}"));
            }
        }
        // A log whose entry 3 was edited cannot prove consistency with the original.
        let mut forged = Log::new();
        for i in 0..20 {
            let text = if i == 3 {
                "edited".to_string()
            } else {
                format!("entry {i}")
            };
            forged.append(text.as_bytes());
        }
        let proof = forged.consistency_proof(10, 20).expect("proof");
        assert!(verify_consistency(10, 20, &l.root_at(10), &forged.root_at(20), &proof).is_err());
    }

    #[test]
    fn a_reordered_log_has_another_root() {
        let a = log_of(5);
        let mut b = Log::new();
        for i in [0, 2, 1, 3, 4] {
            b.append(format!("entry {i}").as_bytes());
        }
        assert_ne!(a.root(), b.root());
    }

    #[test]
    fn checkpoint_signature_binds_size_root_and_time() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let l = log_of(9);
        let cp = Checkpoint::sign(&key, 9, &l.root(), 1234);
        assert_eq!(cp.verify(), Ok(l.root()));
        let mut bad = cp.clone();
        bad.size = 10;
        assert_eq!(bad.verify(), Err(ProofError::BadSignature));
        let mut bad = cp.clone();
        bad.time_ms += 1;
        assert_eq!(bad.verify(), Err(ProofError::BadSignature));
        let mut bad = cp;
        bad.root = hex::encode(log_of(8).root());
        assert_eq!(bad.verify(), Err(ProofError::BadSignature));
    }
}
