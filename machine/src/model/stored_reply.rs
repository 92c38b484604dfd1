//! A write's reply as the deduplication table stores it, raw JSON kept exactly.

use serde::{Deserialize, Serialize};

use crate::command::ItemReply;

/// The stored reply of a deduplicated request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    pub reply: ReplyText,
    pub log_index: u64,
    /// Batch time the reply was stored at; 0 in snapshots from before dedup entries were
    /// pruned (such entries get a fresh lease at the next prune).
    #[serde(default)]
    pub stored_at_ms: u64,
}

/// A stored reply kept as its JSON text, which serialises exactly as the [`ItemReply`]
/// did. The decoded value tree took eight times the memory of its text, and a replica
/// keeps a day of replies (BENCHMARKS.md, "Soak"); only a retry decodes one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReplyText(Box<serde_json::value::RawValue>);

impl ReplyText {
    /// The text of a reply, typed or as JSON (both write the same text).
    pub fn of<R: serde::Serialize>(reply: &ItemReply<R>) -> Self {
        use serde_json::value::{RawValue, to_raw_value};
        Self(to_raw_value(reply).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The reply, decoded (a stored text that does not decode, which apply never writes,
    /// reads as a refusal naming it).
    pub fn reply(&self) -> ItemReply {
        serde_json::from_str(self.0.get()).unwrap_or_else(|e| ItemReply::Refused {
            code: crate::log::refusal_code::RefusalCode::StoredReply,
            message: format!(
                "the stored reply of this request does not decode: {e}; this replica's state \
                 is damaged: restore it from a backup (`panel coordinator backup`, then \
                 `panel coordinator run --restore FILE`) or from a peer's snapshot"
            ),
        })
    }
}

impl PartialEq for ReplyText {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}
