//! An existing member organisation's signature of an entry it endorses (docs/WIRE.md
//! "Admission"), carried by admissions, membership changes and breaker orders.

use serde::{Deserialize, Serialize};

/// One existing organisation's signature (hex, by its roster key) of a newcomer's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endorsement {
    pub by: String,
    pub signature: crate::rules::hex_bytes::SignatureBytes,
}
