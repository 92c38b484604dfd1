//! `panel replay` scripts: `replay::run` over the parsed script.
//!
//! Properties: no panic; a replay is deterministic (same results, same document); the
//! final document survives a serialise / load round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// Steps per script; a script of more steps is refused by the target (not by the engine)
/// so one execution stays short. The engine's own limits are in docs/FUZZING.md.
const MAX_STEPS: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Some(text) = panel_fuzz::text(data) else {
        return;
    };
    let Ok(script) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if script
        .get("steps")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|s| s.len() > MAX_STEPS)
    {
        return;
    }
    let Ok(first) = crucible::replay::run(&script) else {
        return;
    };
    let second = crucible::replay::run(&script).expect("a replay that ran once runs again");
    let out = first.to_json();
    assert_eq!(out, second.to_json(), "replay is not deterministic");
    if let Some(doc) = &first.document {
        let json = doc.to_json();
        let loaded = crucible::migrate::load_value(json.clone()).expect("replayed document loads");
        assert_eq!(
            loaded.to_json(),
            json,
            "replayed document does not round-trip"
        );
    }
});
