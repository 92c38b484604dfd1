//! One commit-reveal round as a sans-I/O core (docs/WIRE.md "Commit-reveal",
//! docs/coordinator/state-machine.md "The commit-reveal round").
//!
//! A motion's two signed deadlines split time into three phases: commitments until the
//! commit deadline (inclusive), reveals after it until the reveal deadline (inclusive),
//! then nothing. [`Window`] is that rule, asked by everyone who must obey it: the node
//! before it commits, reveals or stores a peer's ruling, [`crate::CommitRevealBook`], the
//! state machine when it logs commitments or closes a round, and the leader's driver.
//!
//! [`Round`] is the driver's side of one round, in the manner of quinn-proto: the shell
//! reports what happened (`on_*`), asks [`Round::poll`] what to do next, and sleeps
//! until the instant the core names. The core reads no clock and does no I/O, so the
//! whole schedule is a plain function of the reported events and the times passed in.

use thiserror::Error;

use crate::pb::Motion;

/// The only way the shells read the wall clock: injected once per process, so a test can
/// run a round on a clock it controls.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The phase a round is in at some instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `now <= commit deadline`: commitments are accepted, nothing is revealed.
    Commit,
    /// `commit deadline < now <= reveal deadline`: reveals are accepted.
    Reveal,
    /// After the reveal deadline: the round takes nothing more.
    Over,
}

/// Why something is refused at this point of a round. Messages name the motion, the
/// deadline and the instant, so a refused caller sees which window it missed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WindowError {
    #[error(
        "motion window is invalid: reveal deadline {reveal} ms lies before the commit deadline {commit} ms"
    )]
    Inverted { commit: i64, reveal: i64 },
    #[error(
        "commit window of motion {motion_id:?} closed at {deadline_ms} ms; a commitment at \
         {at_ms} ms is too late"
    )]
    CommitClosed {
        motion_id: String,
        deadline_ms: i64,
        at_ms: i64,
    },
    #[error(
        "reveal before the commit window closes: motion {motion_id:?} accepts commitments \
         until {deadline_ms} ms (now {now_ms} ms); reveal after that"
    )]
    RevealTooEarly {
        motion_id: String,
        deadline_ms: i64,
        now_ms: i64,
    },
    #[error("reveal window of motion {motion_id:?} closed at {deadline_ms} ms")]
    RevealClosed { motion_id: String, deadline_ms: i64 },
}

/// A motion's commit and reveal deadlines (Unix ms), and the rule of what may happen when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub commit_deadline_ms: i64,
    pub reveal_deadline_ms: i64,
}

impl Window {
    /// A window; refused if the reveal deadline lies before the commit deadline.
    pub fn new(commit_deadline_ms: i64, reveal_deadline_ms: i64) -> Result<Self, WindowError> {
        if reveal_deadline_ms < commit_deadline_ms {
            return Err(WindowError::Inverted {
                commit: commit_deadline_ms,
                reveal: reveal_deadline_ms,
            });
        }
        Ok(Self {
            commit_deadline_ms,
            reveal_deadline_ms,
        })
    }

    /// The window a signed motion carries, unchecked: every check below still orders
    /// the phases correctly for an inverted one (its reveal phase is empty).
    pub fn of(m: &Motion) -> Self {
        Self {
            commit_deadline_ms: m.commit_deadline_unix_ms,
            reveal_deadline_ms: m.reveal_deadline_unix_ms,
        }
    }

    /// The deadlines of a debate motion's round as its leader signs them. While at least
    /// half of the first round's commit window (opened at the state machine's
    /// `opened_at_ms`) is left, every leader uses that round's deadlines, so a leader that
    /// takes over signs the very motion its predecessor sent (same fields, same
    /// deterministic signature, same digest) and nodes answer its `Commit` with the
    /// commitment they already made. Later, a fresh round starts now; nodes that committed
    /// on an earlier round refuse it (a motion id names one signed motion), so those seats
    /// do not count in that round.
    pub fn for_round(opened_at_ms: u64, now_ms: i64, commit_ms: i64, reveal_ms: i64) -> Self {
        let first = i64::try_from(opened_at_ms)
            .unwrap_or(i64::MAX)
            .saturating_add(commit_ms);
        let commit = if first.saturating_sub(now_ms) >= commit_ms / 2 {
            first
        } else {
            now_ms.saturating_add(commit_ms)
        };
        Self {
            commit_deadline_ms: commit,
            reveal_deadline_ms: commit.saturating_add(reveal_ms.max(0)),
        }
    }

    /// A window that opens now: `commit_ms` to commit, then `reveal_ms` to reveal.
    pub fn starting(now_ms: i64, commit_ms: i64, reveal_ms: i64) -> Self {
        let commit = now_ms.saturating_add(commit_ms.max(0));
        Self {
            commit_deadline_ms: commit,
            reveal_deadline_ms: commit.saturating_add(reveal_ms.max(0)),
        }
    }

    pub fn phase(&self, now_ms: i64) -> Phase {
        if now_ms <= self.commit_deadline_ms {
            Phase::Commit
        } else if now_ms <= self.reveal_deadline_ms {
            Phase::Reveal
        } else {
            Phase::Over
        }
    }

    /// The instant the phase at `now_ms` ends (its first instant past the deadline), or
    /// `None` once the round is over: when a shell waiting on this round should wake.
    pub fn next_deadline(&self, now_ms: i64) -> Option<i64> {
        match self.phase(now_ms) {
            Phase::Commit => Some(self.reveal_opens_ms()),
            Phase::Reveal => Some(self.over_ms()),
            Phase::Over => None,
        }
    }

    /// The first instant of the reveal phase.
    pub fn reveal_opens_ms(&self) -> i64 {
        self.commit_deadline_ms.saturating_add(1)
    }

    /// The first instant after the reveal phase.
    pub fn over_ms(&self) -> i64 {
        self.reveal_deadline_ms.saturating_add(1)
    }

    /// Milliseconds left to commit at `now_ms` (0 once the commit window has closed).
    pub fn commit_left_ms(&self, now_ms: i64) -> u64 {
        self.commit_deadline_ms.saturating_sub(now_ms).max(0) as u64
    }

    /// A commitment made (or stamped) at `at_ms` counts only inside the commit window.
    pub fn check_commit(&self, motion_id: &str, at_ms: i64) -> Result<(), WindowError> {
        if at_ms > self.commit_deadline_ms {
            return Err(WindowError::CommitClosed {
                motion_id: motion_id.to_owned(),
                deadline_ms: self.commit_deadline_ms,
                at_ms,
            });
        }
        Ok(())
    }

    /// A reveal at `now_ms` is accepted only in the reveal phase.
    pub fn check_reveal(&self, motion_id: &str, now_ms: i64) -> Result<(), WindowError> {
        self.check_exchange(motion_id, now_ms)?;
        if now_ms > self.reveal_deadline_ms {
            return Err(WindowError::RevealClosed {
                motion_id: motion_id.to_owned(),
                deadline_ms: self.reveal_deadline_ms,
            });
        }
        Ok(())
    }

    /// Revealed rulings may be shown to anyone (delivered to peers, stored for audit) only
    /// after the commit window has closed; there is no upper bound.
    pub fn check_exchange(&self, motion_id: &str, now_ms: i64) -> Result<(), WindowError> {
        if now_ms <= self.commit_deadline_ms {
            return Err(WindowError::RevealTooEarly {
                motion_id: motion_id.to_owned(),
                deadline_ms: self.commit_deadline_ms,
                now_ms,
            });
        }
        Ok(())
    }
}

/// How often a driver waiting for reveals that others submit (the nodes' own) looks at
/// the replicated state again.
pub const RECHECK_MS: i64 = 200;
/// How soon a close refused as too early (a reveal slipped in, or the batch was stamped a
/// hair before the deadline) is tried again.
pub const CLOSE_RETRY_MS: i64 = 20;

/// Which round a driver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundKind {
    /// A debate or procedure motion: commitments are logged as one entry after the
    /// commit window, reveals are stored by whoever submits them, and the round closes
    /// once every logged commitment is revealed or the reveal deadline passed.
    Logged,
    /// An exam: the driver collects the reveals itself and submits them together.
    Exam,
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Put the signed motion to the seats and collect their commitments, then report
    /// [`Round::on_commitments`].
    AskCommitments,
    /// Sleep until this instant (Unix ms), then poll again.
    WaitUntil(i64),
    /// Propose the collected commitments (logged rounds), then report
    /// [`Round::on_logged`] with how many logged commitments await their reveal.
    LogCommitments,
    /// Ask the committed seats for their reveals, then report [`Round::on_reveals`].
    AskReveals,
    /// Look at the replicated state again and report [`Round::on_reveals`].
    Recheck,
    /// Propose the close (logged rounds) or submit the answers (exams), then report
    /// [`Round::on_finished`] or [`Round::on_too_early`].
    Finish,
    /// The round needs nothing more from this driver.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    Fresh,
    Committed,
    Logged,
    RevealsAsked,
    Finished,
}

/// The driver's side of one round. See the module docs.
#[derive(Debug, Clone)]
pub struct Round {
    window: Window,
    kind: RoundKind,
    progress: Progress,
    /// Committed seats whose reveal is not stored yet (logged rounds).
    awaiting: usize,
    /// Set after a refused close or a recheck: nothing happens before it.
    not_before: Option<i64>,
}

impl Round {
    /// A fresh round under `window`.
    pub fn new(kind: RoundKind, window: Window) -> Self {
        Self {
            window,
            kind,
            progress: Progress::Fresh,
            awaiting: 0,
            not_before: None,
        }
    }

    /// A logged round whose commitments are already on the record (another leader logged
    /// them): it resumes at the reveals.
    pub fn resumed(window: Window, awaiting: usize) -> Self {
        Self {
            window,
            kind: RoundKind::Logged,
            progress: Progress::Logged,
            awaiting,
            not_before: None,
        }
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// What to do at `now_ms`. Asking changes nothing: only the `on_*` reports move the
    /// round on, so a shell may poll as often as it likes.
    pub fn poll(&self, now_ms: i64) -> Step {
        if let Some(t) = self.not_before
            && now_ms < t
        {
            return Step::WaitUntil(t);
        }
        let phase = self.window.phase(now_ms);
        match (self.progress, self.kind) {
            (Progress::Fresh, _) => Step::AskCommitments,
            (Progress::Committed, _) if phase == Phase::Commit => {
                Step::WaitUntil(self.window.reveal_opens_ms())
            }
            (Progress::Committed, RoundKind::Logged) => Step::LogCommitments,
            (Progress::Committed, RoundKind::Exam) => Step::AskReveals,
            (Progress::Logged, _) if phase == Phase::Commit => {
                Step::WaitUntil(self.window.reveal_opens_ms())
            }
            (Progress::Logged, _) if self.awaiting > 0 && phase == Phase::Reveal => {
                Step::AskReveals
            }
            (Progress::Logged, _) => Step::Finish,
            (Progress::RevealsAsked, RoundKind::Exam) => Step::Finish,
            (Progress::RevealsAsked, RoundKind::Logged)
                if self.awaiting > 0 && phase == Phase::Reveal =>
            {
                Step::Recheck
            }
            (Progress::RevealsAsked, RoundKind::Logged) => Step::Finish,
            (Progress::Finished, _) => Step::Done,
        }
    }

    /// The seats were asked and their commitments collected.
    pub fn on_commitments(&mut self) {
        if self.progress == Progress::Fresh {
            self.progress = Progress::Committed;
        }
    }

    /// The round is on the record with `awaiting` commitments not yet revealed.
    pub fn on_logged(&mut self, awaiting: usize) {
        self.progress = Progress::Logged;
        self.awaiting = awaiting;
    }

    /// After asking for reveals, or after a recheck at `now_ms`: `awaiting` committed
    /// seats have still not revealed. While some await, the next recheck comes after
    /// [`RECHECK_MS`], never later than the reveal deadline.
    pub fn on_reveals(&mut self, now_ms: i64, awaiting: usize) {
        self.progress = Progress::RevealsAsked;
        self.awaiting = awaiting;
        if awaiting > 0 && self.kind == RoundKind::Logged {
            let end = self.window.over_ms();
            self.not_before = Some(now_ms.saturating_add(RECHECK_MS).min(end));
        }
    }

    /// The close was refused as too early at `now_ms`: try again shortly.
    pub fn on_too_early(&mut self, now_ms: i64) {
        self.progress = Progress::RevealsAsked;
        self.not_before = Some(now_ms.saturating_add(CLOSE_RETRY_MS));
    }

    /// The close or the exam submission was applied, or the round ended otherwise (a
    /// refusal that no retry changes, or the motion is no longer open).
    pub fn on_finished(&mut self) {
        self.progress = Progress::Finished;
    }

    /// The next instant this round needs the driver, if it is waiting at `now_ms`.
    pub fn poll_timeout(&self, now_ms: i64) -> Option<i64> {
        match self.poll(now_ms) {
            Step::WaitUntil(t) => Some(t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: i64 = 10_000;
    const R: i64 = 20_000;

    fn w() -> Window {
        Window::new(C, R).unwrap()
    }

    #[test]
    fn the_phases_split_at_the_deadlines_inclusive() {
        let w = w();
        assert_eq!(w.phase(C), Phase::Commit);
        assert_eq!(w.phase(C + 1), Phase::Reveal);
        assert_eq!(w.phase(R), Phase::Reveal);
        assert_eq!(w.phase(R + 1), Phase::Over);
        assert_eq!(w.next_deadline(0), Some(C + 1));
        assert_eq!(w.next_deadline(C + 1), Some(R + 1));
        assert_eq!(w.next_deadline(R + 1), None);
        assert!(Window::new(R, C).is_err());
    }

    #[test]
    fn commits_reveals_and_exchanges_are_refused_outside_their_phase() {
        let w = w();
        assert!(w.check_commit("m", C).is_ok());
        assert!(matches!(
            w.check_commit("m", C + 1),
            Err(WindowError::CommitClosed { .. })
        ));
        assert!(matches!(
            w.check_reveal("m", C),
            Err(WindowError::RevealTooEarly { .. })
        ));
        assert!(w.check_reveal("m", C + 1).is_ok());
        assert!(matches!(
            w.check_reveal("m", R + 1),
            Err(WindowError::RevealClosed { .. })
        ));
        assert!(w.check_exchange("m", C).is_err());
        assert!(w.check_exchange("m", R + 1_000_000).is_ok());
    }

    #[test]
    fn a_takeover_keeps_the_first_deadlines_while_half_the_window_is_left() {
        let first = Window::for_round(1_000, 2_000, 10_000, 5_000);
        assert_eq!(first.commit_deadline_ms, 11_000);
        assert_eq!(first.reveal_deadline_ms, 16_000);
        let fresh = Window::for_round(1_000, 7_000, 10_000, 5_000);
        assert_eq!(fresh.commit_deadline_ms, 17_000);
    }

    /// Drives a round the way the shell does, with the events the test chooses, and
    /// returns the steps it was told to take.
    fn run(mut round: Round, mut now: i64, awaiting_after_ask: usize) -> Vec<Step> {
        let mut steps = Vec::new();
        for _ in 0..1_000 {
            let step = round.poll(now);
            steps.push(step);
            match step {
                Step::AskCommitments => round.on_commitments(),
                Step::WaitUntil(t) => now = t,
                Step::LogCommitments => round.on_logged(2),
                Step::AskReveals => round.on_reveals(now, awaiting_after_ask),
                Step::Recheck => round.on_reveals(now, awaiting_after_ask),
                Step::Finish => round.on_finished(),
                Step::Done => break,
            }
        }
        steps
    }

    #[test]
    fn a_logged_round_logs_after_the_commit_deadline_and_closes_when_all_revealed() {
        let steps = run(Round::new(RoundKind::Logged, w()), 0, 0);
        assert_eq!(
            steps,
            [
                Step::AskCommitments,
                Step::WaitUntil(C + 1),
                Step::LogCommitments,
                Step::AskReveals,
                Step::Finish,
                Step::Done
            ]
        );
    }

    #[test]
    fn a_withheld_reveal_holds_the_close_until_the_reveal_deadline_and_no_longer() {
        let steps = run(Round::new(RoundKind::Logged, w()), 0, 1);
        assert_eq!(
            steps[..4],
            [
                Step::AskCommitments,
                Step::WaitUntil(C + 1),
                Step::LogCommitments,
                Step::AskReveals
            ]
        );
        // Rechecks every RECHECK_MS, the last wait ending just past the reveal deadline.
        let waits: Vec<i64> = steps
            .iter()
            .filter_map(|s| match s {
                Step::WaitUntil(t) if *t > C + 1 => Some(*t),
                _ => None,
            })
            .collect();
        assert_eq!(waits.last(), Some(&(R + 1)));
        assert!(waits.windows(2).all(|p| p[1] - p[0] <= RECHECK_MS));
        assert_eq!(&steps[steps.len() - 2..], [Step::Finish, Step::Done]);
        assert_eq!(steps.iter().filter(|s| **s == Step::Finish).count(), 1);
    }

    #[test]
    fn an_exam_reveals_after_the_commit_deadline_and_submits_without_logging() {
        let steps = run(Round::new(RoundKind::Exam, w()), 0, 3);
        assert_eq!(
            steps,
            [
                Step::AskCommitments,
                Step::WaitUntil(C + 1),
                Step::AskReveals,
                Step::Finish,
                Step::Done
            ]
        );
    }

    #[test]
    fn a_resumed_round_never_asks_for_commitments_again() {
        let steps = run(Round::resumed(w(), 0), C + 5, 0);
        assert_eq!(steps, [Step::Finish, Step::Done]);
        let early = Round::resumed(w(), 1);
        assert_eq!(early.poll(C - 5), Step::WaitUntil(C + 1));
        assert_eq!(early.poll(C + 1), Step::AskReveals);
    }

    #[test]
    fn a_close_refused_as_too_early_is_retried_shortly() {
        let mut r = Round::resumed(w(), 0);
        assert_eq!(r.poll(C + 5), Step::Finish);
        r.on_too_early(C + 5);
        assert_eq!(r.poll(C + 6), Step::WaitUntil(C + 5 + CLOSE_RETRY_MS));
        assert_eq!(r.poll_timeout(C + 6), Some(C + 5 + CLOSE_RETRY_MS));
        assert_eq!(r.poll(C + 5 + CLOSE_RETRY_MS), Step::Finish);
        r.on_finished();
        assert_eq!(r.poll(R + 10), Step::Done);
    }
}
