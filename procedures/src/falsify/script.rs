//! The simulation section of a start document: the answers scripted judges give, per
//! question key, so the demo and tests drive whole runs and choose the outcomes.
//!
//! Both the falsification run and the dossier take the same section; it lives here and
//! `dossier` reuses it, so the two procedures script the panel the same way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::panel::{Expected, Finding};

/// The most answers a simulation section may script (a bounded document).
pub const MAX_SCRIPTED: usize = 256;

/// Scripted answers, keyed by question key.
///
/// A key may name one attempt (`c1/r1/severe/a2`) or every attempt of a question
/// (`c1/r1/severe`); the exact key wins. Keys the script does not name get `default`,
/// or, without one, a "no" whose rationale says the script is silent, so a simulation
/// question always carries [`Expected`] and an incomplete script shows in the record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub answers: BTreeMap<String, Expected>,
    #[serde(default)]
    pub default: Option<Expected>,
}

impl Script {
    /// What scripted judges answer to `key`, whose attempt-free form is `base`.
    pub fn expected(&self, key: &str, base: &str) -> Expected {
        self.answers
            .get(key)
            .or_else(|| self.answers.get(base))
            .or(self.default.as_ref())
            .cloned()
            .unwrap_or_else(|| Expected {
                yes: false,
                rationale: format!("the simulation section scripts no answer for {key}"),
            })
    }

    /// Bounds on the section; `rule` is the calling procedure's rule name.
    pub fn check(&self, rule: &str, at: &str, max_text: usize) -> Vec<Finding> {
        let mut out = Vec::new();
        if self.answers.len() > MAX_SCRIPTED {
            out.push(Finding {
                rule: rule.into(),
                at: format!("{at}.answers"),
                reason: format!(
                    "{} scripted answers, at most {MAX_SCRIPTED}; script fewer keys or use default",
                    self.answers.len()
                ),
            });
        }
        let all = self
            .answers
            .iter()
            .map(|(k, e)| (format!("{at}.answers.{k}"), e))
            .chain(self.default.iter().map(|e| (format!("{at}.default"), e)));
        for (path, e) in all {
            if e.rationale.chars().count() > max_text {
                out.push(Finding {
                    rule: rule.into(),
                    at: path,
                    reason: format!("rationale longer than {max_text} characters; shorten it"),
                });
            }
        }
        out
    }
}

/// A question key for one attempt: the first attempt is the bare key, later ones
/// carry `/a{n}` so each motion has its own key on the record.
pub fn attempt_key(base: &str, attempt: u32) -> String {
    if attempt <= 1 {
        base.to_string()
    } else {
        format!("{base}/a{attempt}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(yes: bool, r: &str) -> Expected {
        Expected {
            yes,
            rationale: r.into(),
        }
    }

    #[test]
    fn exact_key_beats_base_beats_default() {
        let mut s = Script {
            answers: BTreeMap::new(),
            default: Some(e(true, "default")),
        };
        s.answers.insert("q".into(), e(false, "base"));
        s.answers.insert("q/a2".into(), e(true, "exact"));
        assert_eq!(s.expected("q/a2", "q").rationale, "exact");
        assert_eq!(s.expected("q/a3", "q").rationale, "base");
        assert_eq!(s.expected("other", "other").rationale, "default");
        s.default = None;
        let silent = s.expected("other", "other");
        assert!(!silent.yes);
        assert!(silent.rationale.contains("other"));
    }

    #[test]
    fn attempt_keys() {
        assert_eq!(attempt_key("c1/form", 1), "c1/form");
        assert_eq!(attempt_key("c1/form", 3), "c1/form/a3");
    }
}
