//! The injected environment: a clock and an id generator. The engine never reads time
//! or randomness itself, so the same inputs and environment give the same document.

use std::collections::HashMap;

/// Time and identity for writers. Each writer consumes ticks and ids in the reference's
/// order (digest section 2, "Environment and reproducibility").
pub trait Env {
    /// Milliseconds since the epoch, or any monotone counter a host chooses.
    fn now(&mut self) -> i64;
    /// A fresh id with the given prefix (`deb`, `thr`, `ver`, `chl`, `app`).
    fn new_id(&mut self, prefix: &str) -> String;
}

/// A clock that returns `start`, `start + step`, ... on successive calls.
#[derive(Debug, Clone)]
pub struct FixedClock {
    next: i64,
    step: i64,
}

impl FixedClock {
    pub fn new(start: i64, step: i64) -> Self {
        Self { next: start, step }
    }

    pub fn tick(&mut self) -> i64 {
        let v = self.next;
        self.next = self.next.saturating_add(self.step);
        v
    }
}

/// Ids `<prefix>_<n>` with an independent counter per prefix.
#[derive(Debug, Clone, Default)]
pub struct CounterIds {
    counts: HashMap<String, u64>,
}

impl CounterIds {
    pub fn next(&mut self, prefix: &str) -> String {
        let n = self.counts.entry(prefix.to_string()).or_insert(0);
        *n += 1;
        format!("{prefix}_{n}")
    }
}

/// The deterministic environment used by replays, tests and the demo.
#[derive(Debug, Clone)]
pub struct FixedEnv {
    pub clock: FixedClock,
    pub ids: CounterIds,
}

impl FixedEnv {
    pub fn new(start: i64, step: i64) -> Self {
        Self {
            clock: FixedClock::new(start, step),
            ids: CounterIds::default(),
        }
    }
}

impl Env for FixedEnv {
    fn now(&mut self) -> i64 {
        self.clock.tick()
    }

    fn new_id(&mut self, prefix: &str) -> String {
        self.ids.next(prefix)
    }
}
