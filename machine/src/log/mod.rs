//! What the Raft log carries beside the commands themselves: the wire types commands hold
//! (docs/WIRE.md). Below the model and the features: nothing here reads the state.

pub mod breaker_order;
pub mod cadence;
pub mod contributor_signature;
pub mod endorsement;
pub mod exam_pool;
pub mod last_word;
pub mod limit_policy;
pub mod refusal_code;
pub mod seating;
