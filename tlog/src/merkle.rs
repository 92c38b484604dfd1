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

/// Where a [`Log`] reads the leaf hashes it paged out ([`Log::page_out`]): its owner's
/// storage (a replica's `record_leaves` table). Reads only; the owner writes the leaves
/// before it pages them out.
pub trait LeafStore: Send + Sync + std::fmt::Debug {
    /// The leaf hashes `lo..hi`, in order; an error says why they cannot be read.
    fn leaves(&self, lo: u64, hi: u64) -> Result<Vec<Hash>, String>;
}

/// Levels below this are paged out with the leaves; the roots of aligned subtrees of
/// `2^PAGE_LEVEL` leaves and up stay in memory (2 bytes per 32 leaves).
pub const PAGE_LEVEL: usize = 10;

/// An append-only log of leaf hashes. It keeps every aligned perfect subtree's root, so
/// the current root costs O(log n) (the subtrees one per set bit of the size) however long
/// the log grows, and a proof or a root at another size O(log² n) hashes rather than one
/// per leaf: a replica answers its
/// witnesses a consistency proof every second, and hashing the whole log for each grew
/// its CPU with the record (BENCHMARKS.md, "Soak").
///
/// Held whole, that is twice the leaves' memory, which grew a replica's memory with the
/// record. An owner that stores the leaves elsewhere attaches a [`LeafStore`] and pages
/// out ([`Self::page_out`]) whole tiles of `2^PAGE_LEVEL` leaves with the subtrees below
/// that level; a proof that reaches into a paged-out tile reads its leaves back (one read
/// of at most a tile per level below [`PAGE_LEVEL`]). The root, appends and every answer
/// stay the same.
#[derive(Clone, Default)]
pub struct Log {
    /// Leaves `first..`, the last one the newest.
    leaves: Vec<Hash>,
    /// The first leaf held: 0, or a multiple of `2^PAGE_LEVEL` once paged out.
    first: u64,
    /// `inner[k - 1][i - (first >> k)]` for `k < PAGE_LEVEL`, `inner[k - 1][i]` above: the
    /// root of leaves `i << k .. (i + 1) << k`, for every such subtree the log holds whole.
    inner: Vec<Vec<Hash>>,
    store: Option<std::sync::Arc<dyn LeafStore>>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("size", &self.len())
            .field("first_held", &self.first)
            .field("root", &self.root())
            .finish()
    }
}

/// Two logs are equal when they hold the same leaves, which their sizes and roots say.
impl PartialEq for Log {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.root() == other.root()
    }
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
    #[error("leaves {lo}..{hi} are paged out and could not be read back: {detail}")]
    Unavailable { lo: u64, hi: u64, detail: String },
}

impl Log {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> u64 {
        self.first + self.leaves.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends an entry's bytes and returns its index.
    pub fn append(&mut self, entry: &[u8]) -> u64 {
        self.append_leaf(leaf_hash(entry))
    }

    /// Appends a leaf hash (already `leaf_hash`ed) and returns its index.
    pub fn append_leaf(&mut self, leaf: Hash) -> u64 {
        let at = self.len();
        self.leaves.push(leaf);
        // A left sibling below PAGE_LEVEL lies in the new leaf's tile, which is held.
        let (mut index, mut node, mut level) = (at, leaf, 0usize);
        while index % 2 == 1 {
            let left = self.held(level, index - 1);
            debug_assert!(left.is_some(), "a left sibling is always held");
            let left = left.unwrap_or_else(empty_root);
            node = node_hash(&left, &node);
            index /= 2;
            level += 1;
            if self.inner.len() < level {
                self.inner.push(Vec::new());
            }
            self.inner[level - 1].push(node);
        }
        at
    }

    /// Reads paged-out leaves through `store` from now on.
    pub fn attach(&mut self, store: std::sync::Arc<dyn LeafStore>) {
        self.store = Some(store);
    }

    /// Drops from memory the leaves below `below` (rounded down to a whole tile of
    /// `2^PAGE_LEVEL`) and the subtrees under [`PAGE_LEVEL`] inside them. The owner has
    /// stored them where its [`LeafStore`] reads; until one is attached, a proof that
    /// needs them fails with [`ProofError::Unavailable`].
    pub fn page_out(&mut self, below: u64) {
        let cut = (below.min(self.len()) >> PAGE_LEVEL) << PAGE_LEVEL;
        if cut <= self.first {
            return;
        }
        self.leaves.drain(..(cut - self.first) as usize);
        for (k, level) in self.inner.iter_mut().enumerate().take(PAGE_LEVEL - 1) {
            let k = k + 1;
            let drop = ((cut >> k) - (self.first >> k)) as usize;
            level.drain(..drop.min(level.len()));
        }
        self.first = cut;
    }

    /// Leaves held in memory.
    pub fn held_leaves(&self) -> u64 {
        self.leaves.len() as u64
    }

    /// The leaf hash at `index`, if held in memory.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        self.held(0, index)
    }

    /// The root of the aligned subtree `i` of `2^level` leaves (the leaf itself at level
    /// 0), if held in memory.
    fn held(&self, level: usize, i: u64) -> Option<Hash> {
        let offset = if level < PAGE_LEVEL {
            self.first >> level
        } else {
            0
        };
        let at = usize::try_from(i.checked_sub(offset)?).ok()?;
        match level {
            0 => self.leaves.get(at).copied(),
            _ => self.inner.get(level - 1)?.get(at).copied(),
        }
    }

    /// Root of the whole log: the perfect subtrees covering it (one per set bit of the size,
    /// largest first) folded from the right, which is RFC 6962's split at the largest power
    /// of two below the size, applied recursively. They are always held: those below
    /// [`PAGE_LEVEL`] lie in the newest tile.
    pub fn root(&self) -> Hash {
        let size = self.len();
        let mut covering = Vec::new();
        let mut lo = 0u64;
        for k in (0..u64::BITS as usize)
            .rev()
            .filter(|&k| size >> k & 1 == 1)
        {
            let held = self.held(k, lo >> k);
            debug_assert!(held.is_some(), "a covering subtree is always held");
            covering.push(held.unwrap_or_else(empty_root));
            lo += 1 << k;
        }
        let mut from_right = covering.iter().rev();
        match from_right.next() {
            None => empty_root(),
            Some(&last) => from_right.fold(last, |acc, left| node_hash(left, &acc)),
        }
    }

    /// Root of the first `size` leaves (of all of them if `size` is larger).
    pub fn root_at(&self, size: u64) -> Result<Hash, ProofError> {
        self.range_root(0, size.min(self.len()))
    }

    /// RFC 6962 MTH of leaves `lo..hi`, where `lo` is a multiple of the largest power of
    /// two below `hi - lo` (as in every subtree the RFC's recursion visits): an aligned
    /// perfect subtree is read from memory or, paged out, from its leaves in the store;
    /// the rest split as `root_of` splits.
    fn range_root(&self, lo: u64, hi: u64) -> Result<Hash, ProofError> {
        let n = hi - lo;
        if n == 0 {
            return Ok(empty_root());
        }
        if n.is_power_of_two() && lo.is_multiple_of(n) {
            let k = n.trailing_zeros() as usize;
            return match self.held(k, lo >> k) {
                Some(h) => Ok(h),
                None => self.read_root(lo, hi),
            };
        }
        let k = split(n as usize) as u64;
        Ok(node_hash(
            &self.range_root(lo, lo + k)?,
            &self.range_root(lo + k, hi)?,
        ))
    }

    /// The root of paged-out leaves `lo..hi`, from the store.
    fn read_root(&self, lo: u64, hi: u64) -> Result<Hash, ProofError> {
        let unavailable = |detail: String| ProofError::Unavailable { lo, hi, detail };
        let store = self
            .store
            .as_deref()
            .ok_or_else(|| unavailable("no leaf store is attached".into()))?;
        let leaves = store.leaves(lo, hi).map_err(unavailable)?;
        if leaves.len() as u64 != hi - lo {
            return Err(unavailable(format!(
                "the store gave {} leaves",
                leaves.len()
            )));
        }
        Ok(root_of(&leaves))
    }

    /// RFC 6962 audit path for leaf `index` in the tree of the first `size` leaves.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        if index >= size || size > self.len() {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        let mut path = Vec::new();
        self.audit_path(0, size, index, &mut path)?;
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
            self.subproof(old, 0, new, true, &mut proof)?;
        }
        Ok(proof)
    }

    /// RFC 6962 PATH(m, D[lo:hi]), `m` counted from `lo`.
    fn audit_path(&self, lo: u64, hi: u64, m: u64, out: &mut Vec<Hash>) -> Result<(), ProofError> {
        let n = hi - lo;
        if n <= 1 {
            return Ok(());
        }
        let k = split(n as usize) as u64;
        if m < k {
            self.audit_path(lo, lo + k, m, out)?;
            out.push(self.range_root(lo + k, hi)?);
        } else {
            self.audit_path(lo + k, hi, m - k, out)?;
            out.push(self.range_root(lo, lo + k)?);
        }
        Ok(())
    }

    /// RFC 6962 SUBPROOF(m, D[lo:hi], complete), `m` counted from `lo`.
    fn subproof(
        &self,
        m: u64,
        lo: u64,
        hi: u64,
        complete: bool,
        out: &mut Vec<Hash>,
    ) -> Result<(), ProofError> {
        let n = hi - lo;
        if m == n {
            if !complete {
                out.push(self.range_root(lo, hi)?);
            }
            return Ok(());
        }
        let k = split(n as usize) as u64;
        if m <= k {
            self.subproof(m, lo, lo + k, complete, out)?;
            out.push(self.range_root(lo + k, hi)?);
        } else {
            self.subproof(m - k, lo + k, hi, false, out)?;
            out.push(self.range_root(lo, lo + k)?);
        }
        Ok(())
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
                verify_consistency(
                    old,
                    new,
                    &l.root_at(old).expect("root"),
                    &l.root_at(new).expect("root"),
                    &proof,
                )
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
        assert!(
            verify_consistency(
                10,
                20,
                &l.root_at(10).expect("root"),
                &forged.root_at(20).expect("root"),
                &proof
            )
            .is_err()
        );
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
            assert_eq!(
                l.root_at(size as u64).expect("root"),
                root_of(&l.leaves[..size])
            );
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

    /// Leaves in a store, as a replica's `record_leaves` table holds them.
    #[derive(Debug)]
    struct Stored(Vec<Hash>);

    impl LeafStore for Stored {
        fn leaves(&self, lo: u64, hi: u64) -> Result<Vec<Hash>, String> {
            self.0
                .get(lo as usize..hi as usize)
                .map(<[Hash]>::to_vec)
                .ok_or_else(|| format!("no leaves {lo}..{hi}"))
        }
    }

    /// A log that paged its old tiles out answers every root and proof as the whole log
    /// does, reading the leaves back; without a store it says which leaves it lacks; and
    /// it keeps appending to the same roots.
    #[test]
    fn a_paged_log_answers_as_the_whole_log() {
        let tile = 1u64 << PAGE_LEVEL;
        let n = 3 * tile + 37;
        let whole = log_of(n as usize);
        let mut paged = whole.clone();
        paged.page_out(2 * tile + 5);
        assert_eq!(paged.held_leaves(), n - 2 * tile);
        assert_eq!(paged.root(), whole.root());
        assert!(matches!(
            paged.inclusion_proof(3, n),
            Err(ProofError::Unavailable { .. })
        ));
        paged.attach(std::sync::Arc::new(Stored(whole.leaves.clone())));
        let sizes = [1, 2, 3, tile - 1, tile, tile + 1, 2 * tile + 3, n];
        for &size in &sizes {
            assert_eq!(paged.root_at(size), whole.root_at(size), "size {size}");
            for i in [0, 1, tile - 1, tile, 2 * tile - 2, 2 * tile + 1, size - 1] {
                if i < size {
                    assert_eq!(
                        paged.inclusion_proof(i, size),
                        whole.inclusion_proof(i, size)
                    );
                }
            }
            for &old in &sizes {
                if old <= size {
                    assert_eq!(
                        paged.consistency_proof(old, size),
                        whole.consistency_proof(old, size),
                        "{old} -> {size}"
                    );
                }
            }
        }
        let mut both = (whole, paged);
        for i in 0..2 * tile {
            both.0.append(format!("more {i}").as_bytes());
            both.1.append(format!("more {i}").as_bytes());
            assert_eq!(both.0.root(), both.1.root());
        }
        both.1
            .attach(std::sync::Arc::new(Stored(both.0.leaves.clone())));
        both.1.page_out(both.1.len());
        let size = both.0.len();
        assert_eq!(both.1.held_leaves(), size % tile);
        for old in [1, n - 1, n, 4 * tile, size - 1] {
            assert_eq!(
                both.1.consistency_proof(old, size),
                both.0.consistency_proof(old, size)
            );
        }
        assert_eq!(
            both.1.inclusion_proof(n, size),
            both.0.inclusion_proof(n, size)
        );
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
