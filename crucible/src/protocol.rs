//! The protocol writers' shared state: the injected environment, the conformance mode,
//! and the append-only log every writer records to.

use crate::document::{Debate, LogEntry, Num};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};

/// Which rules the writers enforce.
///
/// `Spec` (the default) enforces everything SPEC.md states, including the rules the
/// reference engine v1.1.1 leaves to its host (docs/CONFORMANCE.md lists each one).
/// `Reference` reproduces the reference engine's writers exactly, for differential
/// testing and for replaying records made by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Conformance {
    #[default]
    Spec,
    Reference,
}

/// The protocol engine: writers over a [`Debate`], with time and ids injected.
#[derive(Debug, Clone)]
pub struct Protocol<E: Env> {
    pub env: E,
    pub mode: Conformance,
}

impl<E: Env> Protocol<E> {
    pub fn new(env: E) -> Self {
        Self {
            env,
            mode: Conformance::Spec,
        }
    }

    pub fn with_mode(env: E, mode: Conformance) -> Self {
        Self { env, mode }
    }

    pub(crate) fn spec(&self) -> bool {
        self.mode == Conformance::Spec
    }

    /// Appends a log entry; takes one clock tick. A falsy side is recorded as null; a
    /// `None` detail is left out of the entry, as the reference's `undefined` is.
    pub fn add_log(
        &mut self,
        d: &mut Debate,
        actor: Option<&str>,
        side: Option<&str>,
        action: &str,
        detail: impl Into<Option<String>>,
    ) {
        let ts = self.env.now();
        d.log.push(LogEntry {
            ts: Some(Num(ts as f64)),
            actor: actor.map(str::to_string),
            side: side.filter(|s| !s.is_empty()).map(str::to_string),
            action: action.to_string(),
            detail: detail.into(),
        });
    }
}

/// SPEC section 4: every arbiter decision carries a written rationale.
pub(crate) fn require_rationale(text: Option<&str>, what: &str) -> Outcome {
    if text.is_some_and(|t| !t.trim().is_empty()) {
        Ok(())
    } else {
        Err(Refusal::new(
            Code::RationaleRequired,
            format!(
                "{what} needs a written rationale citing content and rubric (SPEC section 4); add one and resubmit."
            ),
        ))
    }
}

/// The first `n` UTF-16 code units of `s`, as JavaScript's `slice(0, n)` on log details.
/// A surrogate pair split by the cut is dropped whole (Rust strings cannot hold half).
pub fn utf16_prefix(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, ch) in s.char_indices() {
        let w = ch.len_utf16();
        if units + w > n {
            return &s[..i];
        }
        units += w;
    }
    s
}
