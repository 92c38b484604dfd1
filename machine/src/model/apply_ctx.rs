//! The deterministic context of one applied item: what `apply` may read besides the state
//! and the command (docs/ARCHITECTURE.md, "Apply is deterministic").

use panel_proto::VerifiedMemo;
use sha2::{Digest, Sha256};
/// Deterministic context of one applied item: no clock, no randomness beyond this.
#[derive(Debug, Clone, Copy)]
pub struct ApplyCtx<'a> {
    pub log_index: u64,
    pub item_index: u32,
    /// The leader's stamped time for the batch (ms since the Unix epoch).
    pub time_ms: u64,
    /// The leader's stamped seed for the batch.
    pub seed: u64,
    /// The caller's memo of verified signatures (a replica shares its intake's). It
    /// changes no result, only spares re-checking a signature that already verified.
    pub memo: &'a VerifiedMemo,
}

/// A seed from a finished hash: the digest's first 8 bytes, big-endian (the layout every
/// seed of the machine uses: batch-derived, draw, beacon, run seeds).
pub fn seed_of(h: Sha256) -> u64 {
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

impl ApplyCtx<'_> {
    /// A seed for one purpose (e.g. the draw of one motion): SHA-256 over the batch seed,
    /// the item's position and the label, first 8 bytes big-endian. Re-derivable offline.
    pub fn derive_seed(&self, label: &str) -> u64 {
        let mut h = Sha256::new();
        h.update(self.seed.to_be_bytes());
        h.update(self.log_index.to_be_bytes());
        h.update(self.item_index.to_be_bytes());
        h.update(label.as_bytes());
        seed_of(h)
    }

    /// A unique, deterministic id for something this item creates (`n` distinguishes
    /// several ids made by one item). This is the id generator the engine gets injected.
    pub fn new_id(&self, prefix: &str, n: u32) -> String {
        format!("{prefix}-{}-{}-{n}", self.log_index, self.item_index)
    }
}
