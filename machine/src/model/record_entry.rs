//! One entry of the verifiable record, as the state holds it before it is handed to a
//! replica's store (docs/WIRE.md "Record entries").

use serde::{Deserialize, Serialize};

use crate::command::{Command, ItemReply};

pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// One applied command on the record, with everything needed to re-apply it offline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordEntry {
    pub seq: u64,
    pub log_index: u64,
    pub item_index: u32,
    pub time_ms: u64,
    pub seed: u64,
    pub client_id: String,
    pub request_id: u64,
    pub command: Command,
    pub reply: ItemReply,
    /// The rule set in force when the entry applied (`rules.rs`); absent (0) in entries
    /// applied before rule sets were stamped, so their leaf bytes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<u32>,
}

impl RecordEntry {
    /// The bytes hashed into the transparency log.
    pub fn leaf_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}
