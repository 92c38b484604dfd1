//! The federation charter as the transport reads it: the document itself is
//! `panel_federation::Charter` (pure, the first record entry); this module reads it from
//! the file given with `--charter`.

use std::path::Path;

pub use panel_federation::{Charter, Role};

use crate::error::TransportError;

/// Reads and checks a charter file; errors name the file, the JSON path and the fix.
pub fn load(path: &Path) -> Result<Charter, TransportError> {
    let text = std::fs::read_to_string(path).map_err(|e| TransportError::File {
        path: path.display().to_string(),
        what: "the federation charter",
        source: e,
    })?;
    Charter::parse(&text).map_err(|e| TransportError::Charter {
        path: path.display().to_string(),
        problem: e.to_string(),
    })
}
