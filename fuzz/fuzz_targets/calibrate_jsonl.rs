//! `panel calibrate --jsonl` lines: `calibration::request::answer_line`, which decodes
//! one request and computes it (scores, Cooke weights, bridging fit).
//!
//! Properties: no panic; every refusal names a JSON path starting at `$`; every response
//! serialises to JSON; answering is deterministic.
#![no_main]

use calibration::request::answer_line;
use libfuzzer_sys::fuzz_target;

/// One line of the JSONL stream; longer lines are not what this target is about (the
/// bridging fit's cost grows with the matrix, and its bound is in docs/FUZZING.md).
const MAX_LINE: usize = 4096;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LINE {
        return;
    }
    match answer_line(data) {
        None => {}
        Some(Err(e)) => {
            assert!(e.path().starts_with('$'), "path {:?} of {e}", e.path());
            let _ = calibration::response::ErrorResponse::new(1, &e);
        }
        Some(Ok(response)) => {
            let a = serde_json::to_string(&response).expect("a response serialises");
            let again = answer_line(data)
                .expect("not blank")
                .expect("answered once");
            let b = serde_json::to_string(&again).expect("a response serialises");
            assert_eq!(a, b, "answering is not deterministic");
        }
    }
});
