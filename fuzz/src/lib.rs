//! Shared pieces of the fuzz targets: input bounds and an independent decoder of the
//! canonical byte layouts (docs/WIRE.md section 2).
//!
//! `panel-proto` only ever *writes* canonical bytes: a signature is checked by rebuilding
//! the bytes from the decoded message, never by parsing bytes someone sent. The property
//! that makes that safe is that the layout is unambiguous: two different messages never
//! share canonical bytes, or one signature would cover both. The decoder here is the
//! oracle for that property: every canonical byte string the encoder writes must parse
//! back, with nothing left over, into exactly the fields it was written from.

pub mod canonical;

/// Largest input any target reads. Well above every seed, well below what would let one
/// execution take long: libFuzzer's `-max_len` is set to this in docs/FUZZING.md too.
pub const MAX_INPUT: usize = 64 * 1024;

/// The input as UTF-8 text, or `None` when it is too long or not UTF-8 (the callers
/// refuse both before any parser sees the bytes).
pub fn text(data: &[u8]) -> Option<&str> {
    if data.len() > MAX_INPUT {
        return None;
    }
    std::str::from_utf8(data).ok()
}
