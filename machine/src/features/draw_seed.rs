//! Where a motion's panel draw gets its seed (docs/SECURITY.md "The draw cannot be
//! steered", docs/coordinator/acceptance.md "The panel draw").
//!
//! Under a policy with `Independence::unsteerable_draw` the seed is
//! `SHA-256(DOMAIN || size || root || len(motion_id) || motion_id)`, first 8 bytes
//! big-endian, where `size` (u64 big-endian) and `root` are the record's RFC 6962 tree
//! (`State::tree`, docs/WIRE.md "Transparency log") as of the entry *before* the one that
//! opens the motion, and `len` is the id's byte length (u64 big-endian). Everything in it is
//! on the record before the motion exists, so every replica and `panel verify` recompute
//! it, and the seed the leader stamps into the opening batch plays no part.
//!
//! Motions under older policies (every motion of a record written before this rule) keep
//! the batch-seed derivation (`ApplyCtx::derive_seed`), so they replay to the same panels.

use sha2::{Digest, Sha256};

pub use panel_tlog::merkle::Hash;

use crate::command::MotionSpec;
use crate::model::ApplyCtx;
use crate::model::State;

/// Domain tag of the unsteerable draw seed: no other hash of the project can collide with
/// it.
pub const DOMAIN: &[u8] = b"crucible-panel/draw-seed/v1\0";

/// The seed a motion `motion_id` opened after `size` record entries with tree `root` is
/// drawn from (the module docs give the layout).
pub fn derive(size: u64, root: &Hash, motion_id: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(size.to_be_bytes());
    h.update(root);
    h.update((motion_id.len() as u64).to_be_bytes());
    h.update(motion_id.as_bytes());
    crate::model::seed_of(h)
}

/// Whether a motion's panel is drawn from the record rather than from the batch seed.
pub fn is_unsteerable(spec: &MotionSpec) -> bool {
    spec.policy
        .as_ref()
        .is_some_and(|p| p.independence.unsteerable_draw)
}

/// The seed apply draws `spec`'s panel from, while applying the entry that opens it.
///
/// Apply appends an entry to `state.tree` only after the entry has applied
/// (`apply_batch`, and `record::verify` when it replays), so while the opening entry
/// applies the tree is exactly the record before it.
pub fn for_motion(state: &State, ctx: &ApplyCtx, spec: &MotionSpec) -> u64 {
    if is_unsteerable(spec) {
        derive(state.tree.len(), &state.tree.root(), &spec.motion_id)
    } else {
        ctx.derive_seed(&spec.motion_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_moves_the_seed() {
        let root = [7u8; 32];
        let base = derive(3, &root, "m1");
        assert_ne!(base, derive(4, &root, "m1"));
        assert_ne!(base, derive(3, &[8u8; 32], "m1"));
        assert_ne!(base, derive(3, &root, "m2"));
        assert_eq!(base, derive(3, &root, "m1"));
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        // SHA-256 over the documented bytes, computed independently of `derive`.
        let mut bytes = DOMAIN.to_vec();
        bytes.extend_from_slice(&0u64.to_be_bytes());
        bytes.extend_from_slice(&[0u8; 32]);
        bytes.extend_from_slice(&2u64.to_be_bytes());
        bytes.extend_from_slice(b"m1");
        let d = Sha256::digest(&bytes);
        let want = u64::from_be_bytes(d[..8].try_into().expect("8 bytes"));
        assert_eq!(derive(0, &[0u8; 32], "m1"), want);
    }
}
