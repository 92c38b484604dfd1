//! One module per view. Each has an async `page` that reads what it needs from the
//! [`Source`](crate::source::Source) and a pure `render` over the machine's types, which
//! the unit tests call directly.

pub mod arbiter;
pub mod arbiters;
pub mod debate;
pub mod debates;
pub mod index;
pub mod motion;
pub mod motion_filter;
pub mod motions;
pub mod record;
pub mod rulings;
pub mod runs;

use std::collections::BTreeMap;

use panel_machine::Arbiter;
use panel_machine::Stance;
use panel_machine::rules::acceptance::GroupTally;

/// Registered arbiters by public key, current or rotated away from, to name who signed
/// a ruling on the record.
pub struct Roster<'a> {
    by_key: BTreeMap<Vec<u8>, &'a Arbiter>,
    by_id: BTreeMap<&'a str, &'a Arbiter>,
}

impl<'a> Roster<'a> {
    pub fn new(arbiters: &'a [Arbiter]) -> Roster<'a> {
        let mut by_key = BTreeMap::new();
        let mut by_id = BTreeMap::new();
        for a in arbiters {
            by_id.insert(a.registration.arbiter_id.as_str(), a);
            if let Ok(key) = a.registration.public_key.bytes() {
                by_key.insert(key.into_owned(), a);
            }
            for old in &a.key_history {
                if let Ok(key) = old.public_key.bytes() {
                    by_key.insert(key.into_owned(), a);
                }
            }
        }
        Roster { by_key, by_id }
    }

    pub fn by_id(&self, arbiter_id: &str) -> Option<&'a Arbiter> {
        self.by_id.get(arbiter_id).copied()
    }

    pub fn by_key(&self, key: &[u8]) -> Option<&'a Arbiter> {
        self.by_key.get(key).copied()
    }
}

/// "stance A: 2 yes, 0 no; stance B: 1 yes, 1 no".
pub fn tallies_text(t: &BTreeMap<Stance, GroupTally>) -> String {
    t.iter()
        .map(|(s, x)| format!("stance {s}: {} yes, {} no", x.yes, x.no))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A number with three decimals, or a dash when absent.
pub fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.3}"))
}

/// A motion's outcome in a few words: "open", "accepted: Yes", "deadlocked".
pub fn outcome_words(s: &panel_machine::MotionStatus) -> String {
    use panel_machine::Acceptance;
    use panel_machine::MotionStatus;
    match s {
        MotionStatus::Open => "open".into(),
        MotionStatus::Decided(Acceptance::Accepted { outcome, .. }) => {
            format!("accepted: {outcome}")
        }
        MotionStatus::Decided(Acceptance::Deadlocked(_)) => "deadlocked".into(),
    }
}

/// The CSS class that colours an outcome.
pub fn outcome_class(s: &panel_machine::MotionStatus) -> &'static str {
    use panel_machine::Acceptance;
    use panel_machine::MotionStatus;
    match s {
        MotionStatus::Open => "muted",
        MotionStatus::Decided(Acceptance::Accepted { .. }) => "ok",
        MotionStatus::Decided(Acceptance::Deadlocked(_)) => "bad",
    }
}
