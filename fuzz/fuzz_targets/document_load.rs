//! SPEC documents: `migrate::load` (lone-surrogate repair, migration, typing), then the
//! ledger and the pending questions a loaded document yields.
//!
//! Properties: no panic; migration is idempotent; a loaded document serialised and
//! loaded again is the same document (and its text form re-parses to it too); the
//! ledger, the report and the pending questions are computed without panicking.
#![no_main]

use std::collections::BTreeSet;

use crucible::migrate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = panel_fuzz::text(data) else {
        return;
    };
    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) {
        migrate::migrate_value(&mut v);
        let once = v.clone();
        migrate::migrate_value(&mut v);
        assert_eq!(once, v, "migration is not idempotent");
    }
    let Ok(debate) = migrate::load(text) else {
        return;
    };
    let json = debate.to_json();
    let again = migrate::load_value(json.clone()).expect("a serialised document loads");
    assert_eq!(again.to_json(), json, "load(serialise(doc)) != doc");
    let text2 = serde_json::to_string(&json).expect("a value serialises");
    let again2 = migrate::load(&text2).expect("a serialised document re-parses");
    assert_eq!(
        again2.to_json(),
        json,
        "the text form does not re-parse equal"
    );
    let _ = crucible::report::ledger_report(&debate);
    for q in crucible::motion::pending(&debate, &BTreeSet::new()) {
        let _ = crucible::motion::projection(&debate, &q);
    }
});
