//! Progress on long steps (the exam, a panel run): a bar when stdout is a terminal, and
//! otherwise one plain line each time the count moves, so logs get a line per step
//! instead of a line per second.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub enum Progress {
    Bar(ProgressBar),
    Lines {
        what: &'static str,
        len: u64,
        last: Option<u64>,
    },
}

impl Progress {
    pub fn new(len: u64, what: &'static str) -> Progress {
        if crate::output::quiet() {
            return Progress::Bar(ProgressBar::hidden());
        }
        // A bar draws on stderr; under --json stdout carries only the result.
        if !std::io::stdout().is_terminal() || crate::output::json() {
            return Progress::Lines {
                what,
                len,
                last: None,
            };
        }
        let bar = ProgressBar::new(len);
        if let Ok(style) = ProgressStyle::with_template("  {bar:30} {pos}/{len} {msg} ({elapsed})")
        {
            bar.set_style(style);
        }
        bar.set_message(what);
        Progress::Bar(bar)
    }

    pub fn set(&mut self, done: u64) {
        match self {
            Progress::Bar(b) => b.set_position(done),
            Progress::Lines { what, len, last } => {
                if *last != Some(done) {
                    crate::output::say!("  {done}/{len} {what}");
                    *last = Some(done);
                }
            }
        }
    }

    pub fn finish(self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}
