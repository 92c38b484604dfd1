//! RFC 6962 Merkle trees (section 2.1) with inclusion and consistency proofs verified as
//! RFC 9162 sections 2.1.3.2 and 2.1.4.2 say. A reader holding a checkpoint can check that
//! an entry is in the log (inclusion) and that a later checkpoint extends an earlier one
//! without rewriting it (consistency).

use sha2::{Digest, Sha256};

/// A 32-byte SHA-256 digest.
pub type Hash = [u8; 32];

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

/// An append-only log of leaf hashes. It keeps the roots of its perfect subtrees (the
/// "frontier", one per set bit of the size) so the current root costs O(log n) however
/// long the log grows, and every aligned perfect subtree's root, so a proof or a root at
/// another size costs O(log² n) hashes rather than one per leaf: a replica answers its
/// witnesses a consistency proof every second, and hashing the whole log for each grew
/// its CPU with the record (BENCHMARKS.md, "Soak"). Twice the leaves' memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    leaves: Vec<Hash>,
    /// `inner[k - 1][i]`: the root of leaves `i << k .. (i + 1) << k`, for every such
    /// subtree the log holds whole.
    inner: Vec<Vec<Hash>>,
    /// Perfect subtrees covering the leaves, largest first: (root, number of leaves).
    frontier: Vec<(Hash, u64)>,
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
        self.append_leaf(leaf_hash(entry))
    }

    /// Appends a leaf hash (already `leaf_hash`ed) and returns its index.
    pub fn append_leaf(&mut self, leaf: Hash) -> u64 {
        self.leaves.push(leaf);
        let (mut index, mut node, mut level) = (self.leaves.len() - 1, leaf, 0usize);
        while index % 2 == 1 {
            let left = if level == 0 {
                self.leaves[index - 1]
            } else {
                self.inner[level - 1][index - 1]
            };
            node = node_hash(&left, &node);
            index /= 2;
            level += 1;
            if self.inner.len() < level {
                self.inner.push(Vec::new());
            }
            self.inner[level - 1].push(node);
        }
        let mut node = (leaf, 1u64);
        while let Some(&(top, size)) = self.frontier.last() {
            if size != node.1 {
                break;
            }
            self.frontier.pop();
            node = (node_hash(&top, &node.0), size * 2);
        }
        self.frontier.push(node);
        self.len() - 1
    }

    /// The leaf hash at `index`.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        self.leaves.get(index as usize).copied()
    }

    /// Root of the whole log: the frontier folded from the right, which is RFC 6962's
    /// split at the largest power of two below the size, applied recursively.
    pub fn root(&self) -> Hash {
        let mut from_right = self.frontier.iter().rev();
        match from_right.next() {
            None => empty_root(),
            Some(&(last, _)) => from_right.fold(last, |acc, (left, _)| node_hash(left, &acc)),
        }
    }

    /// Root of the first `size` leaves.
    pub fn root_at(&self, size: u64) -> Hash {
        self.range_root(0, (size as usize).min(self.leaves.len()))
    }

    /// RFC 6962 MTH of leaves `lo..hi`, where `lo` is a multiple of the largest power of
    /// two below `hi - lo` (as in every subtree the RFC's recursion visits): an aligned
    /// perfect subtree is read from `inner`, the rest split as `root_of` splits.
    fn range_root(&self, lo: usize, hi: usize) -> Hash {
        let n = hi - lo;
        match n {
            0 => empty_root(),
            1 => self.leaves[lo],
            _ if n.is_power_of_two() && lo.is_multiple_of(n) => {
                let k = n.trailing_zeros() as usize;
                self.inner[k - 1][lo >> k]
            }
            _ => {
                let k = split(n);
                node_hash(&self.range_root(lo, lo + k), &self.range_root(lo + k, hi))
            }
        }
    }

    /// RFC 6962 audit path for leaf `index` in the tree of the first `size` leaves.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        if index >= size || size > self.len() {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        let mut path = Vec::new();
        self.audit_path(0, size as usize, index as usize, &mut path);
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
            self.subproof(old as usize, 0, new as usize, true, &mut proof);
        }
        Ok(proof)
    }

    /// RFC 6962 PATH(m, D[lo:hi]), `m` counted from `lo`.
    fn audit_path(&self, lo: usize, hi: usize, m: usize, out: &mut Vec<Hash>) {
        let n = hi - lo;
        if n <= 1 {
            return;
        }
        let k = split(n);
        if m < k {
            self.audit_path(lo, lo + k, m, out);
            out.push(self.range_root(lo + k, hi));
        } else {
            self.audit_path(lo + k, hi, m - k, out);
            out.push(self.range_root(lo, lo + k));
        }
    }

    /// RFC 6962 SUBPROOF(m, D[lo:hi], complete), `m` counted from `lo`.
    fn subproof(&self, m: usize, lo: usize, hi: usize, complete: bool, out: &mut Vec<Hash>) {
        let n = hi - lo;
        if m == n {
            if !complete {
                out.push(self.range_root(lo, hi));
            }
            return;
        }
        let k = split(n);
        if m <= k {
            self.subproof(m, lo, lo + k, complete, out);
            out.push(self.range_root(lo + k, hi));
        } else {
            self.subproof(m - k, lo + k, hi, false, out);
            out.push(self.range_root(lo, lo + k));
        }
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
    fn the_frontier_root_is_the_recursive_root_at_every_size() {
        let mut l = Log::new();
        for i in 0..300 {
            assert_eq!(l.root(), root_of(&l.leaves), "size {i}");
            l.append(format!("entry {i}").as_bytes());
        }
    }

    /// The cached subtrees give the proofs and roots the leaves alone give (RFC 6962's
    /// recursion over the leaf slice, written out here as the reference).
    #[test]
    fn cached_subtrees_answer_as_the_leaves_do() {
        fn path(leaves: &[Hash], m: usize, out: &mut Vec<Hash>) {
            if leaves.len() <= 1 {
                return;
            }
            let k = split(leaves.len());
            if m < k {
                path(&leaves[..k], m, out);
                out.push(root_of(&leaves[k..]));
            } else {
                path(&leaves[k..], m - k, out);
                out.push(root_of(&leaves[..k]));
            }
        }
        fn sub(m: usize, leaves: &[Hash], complete: bool, out: &mut Vec<Hash>) {
            if m == leaves.len() {
                if !complete {
                    out.push(root_of(leaves));
                }
                return;
            }
            let k = split(leaves.len());
            if m <= k {
                sub(m, &leaves[..k], complete, out);
                out.push(root_of(&leaves[k..]));
            } else {
                sub(m - k, &leaves[k..], false, out);
                out.push(root_of(&leaves[..k]));
            }
        }
        let l = log_of(70);
        for size in 0..=70usize {
            assert_eq!(l.root_at(size as u64), root_of(&l.leaves[..size]));
            for i in 0..size {
                let mut want = Vec::new();
                path(&l.leaves[..size], i, &mut want);
                assert_eq!(l.inclusion_proof(i as u64, size as u64).expect("p"), want);
            }
            for old in 1..size {
                let mut want = Vec::new();
                sub(old, &l.leaves[..size], true, &mut want);
                assert_eq!(
                    l.consistency_proof(old as u64, size as u64).expect("p"),
                    want
                );
            }
        }
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
}
