//! `panel gate` requests: the JSON reader, then every rule in both modes.
//!
//! Properties: no panic; the reader is a pure function of the text (reading the
//! re-serialised value gives the same request); the Gate is deterministic; `admit`
//! refuses exactly when `check` finds a violation, with the same violations.
#![no_main]

use crucible::gate::{self, GateMode, GateRequest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = panel_fuzz::text(data) else {
        return;
    };
    let Ok(request) = GateRequest::from_json(text) else {
        return;
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let again = GateRequest::from_value(&value).expect("a value read once reads again");
        assert_eq!(again, request, "from_json and from_value disagree");
    }
    for mode in [GateMode::Acronyms, GateMode::Reference] {
        let first = gate::check_with_mode(&request.fields, &request.ctx, mode);
        let second = gate::check_with_mode(&request.fields, &request.ctx, mode);
        assert_eq!(first, second, "the Gate is not deterministic");
        let ids = gate::violated_rules(&first);
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "rule ids sorted, unique"
        );
    }
    let default = gate::check(&request.fields, &request.ctx);
    match gate::admit(&request.fields, &request.ctx) {
        Ok(()) => assert!(default.is_empty()),
        Err(refusal) => assert_eq!(refusal.violations, default),
    }
});
