//! Record files given to `panel verify`: the same reader the command uses (serde with
//! paths), then `record::verify` and the charter check.
//!
//! Properties: no panic; a record that reads serialises and reads back equal; verifying
//! is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panel_machine::Bundle;
use panel_machine::read::record;

fuzz_target!(|data: &[u8]| {
    let Some(text) = panel_fuzz::text(data) else {
        return;
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let Ok(bundle) = serde_path_to_error::deserialize::<_, Bundle>(&mut de) else {
        return;
    };
    let json = serde_json::to_string(&bundle).expect("a record serialises");
    let back: Bundle = serde_json::from_str(&json).expect("a serialised record reads back");
    assert_eq!(back, bundle, "record does not round-trip");
    let first = record::verify(&bundle);
    let second = record::verify(&back);
    assert_eq!(
        first.as_ref().map(|r| serde_json::to_string(r).ok()),
        second.as_ref().map(|r| serde_json::to_string(r).ok()),
        "verification is not deterministic"
    );
    if let Some(panel_machine::Command::Internal(panel_machine::InternalCommand::AdoptCharter(c))) =
        bundle.entries.first().map(|e| &e.command)
    {
        record::check_charter(&bundle, c).expect("a record adopts the charter it adopts");
    }
});
