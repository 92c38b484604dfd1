//! What a reader sees (docs/ARCHITECTURE.md "Layers of the machine", layer 7): queries
//! over the state, the exported record and its offline verification, one entry's proof.
//! Nothing here changes the state.

pub mod entry_proof;
pub mod query;
pub mod record;
