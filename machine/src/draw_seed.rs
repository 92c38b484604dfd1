//! Where a motion's panel draw gets its seed (docs/SECURITY.md "The draw cannot be
//! steered").
pub use panel_tlog::merkle::Hash;

use crate::apply::ApplyCtx;
use crate::command::MotionSpec;
use crate::model::State;

pub fn derive(_size: u64, _root: &Hash, _motion_id: &str) -> u64 {
    0
}

pub fn for_motion(_state: &State, ctx: &ApplyCtx, spec: &MotionSpec) -> u64 {
    ctx.derive_seed(&spec.motion_id)
}
