//! What a reader sees (docs/ARCHITECTURE.md "Layers of the machine", layer 7): queries
//! over the state, the exported record and its offline verification, one entry's proof,
//! and what decided motions say about lineages. Nothing here changes the state.

pub mod entry_proof;
pub mod motion_history;
pub mod query;
pub mod record;
