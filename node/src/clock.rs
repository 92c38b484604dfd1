//! The node's wall clock: the one place it is read. [`Arbiter`](crate::Arbiter) holds
//! it (injected with `with_clock`, this one by default), and every deadline check of the
//! node asks the arbiter's clock, so a test can run a node on a clock it controls.

use std::time::{SystemTime, UNIX_EPOCH};

use panel_proto::round::Clock;

/// The host's clock, in Unix milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}
