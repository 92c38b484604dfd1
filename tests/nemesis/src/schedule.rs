//! The fault schedule: generated from one seed, printed before the run, so a failing run is
//! replayed with `NEMESIS_SEED`. Targets are resolved when a step plays ("the leader" is
//! whoever leads then); the step's `pick` chooses among followers deterministically.

use std::time::Duration;

/// The schedule's generator: the calibration crate's SplitMix64 (small, seedable, the
/// same everywhere) with the one draw the schedule needs.
pub struct Rng(calibration::seeded_rng::SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(calibration::seeded_rng::SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `kill -9` of the leader while writes are in flight, restarted after `hold`.
    KillLeader,
    KillFollower,
    /// Any replica, leader or not.
    KillAny,
    /// SIGSTOP of the leader for longer than the election timeout, then SIGCONT.
    PauseLeader,
    /// The leader's peer link down: cut off from the followers, still reachable by
    /// clients (who probe it: writes must fail fast, default reads must refuse).
    PartitionLeader,
    /// One follower's peer link down.
    PartitionFollower,
    /// The leader's wall clock jumps 25 h forward, then back (test clusters read
    /// `DATA_DIR/test-clock-offset-ms`); acknowledged writes are retried meanwhile.
    ClockJumpLeader,
}

pub const ALL: [Fault; 7] = [
    Fault::KillLeader,
    Fault::KillFollower,
    Fault::KillAny,
    Fault::PauseLeader,
    Fault::PartitionLeader,
    Fault::PartitionFollower,
    Fault::ClockJumpLeader,
];

/// One step: the fault, how long it is held, how long the cluster rests afterwards.
#[derive(Debug, Clone)]
pub struct Step {
    pub fault: Fault,
    pub hold_ms: u64,
    pub rest_ms: u64,
    pub pick: u64,
}

#[derive(Debug, Clone)]
pub struct Schedule {
    pub steps: Vec<Step>,
}

impl Schedule {
    /// Steps until their total reaches `total`. With `cover_all`, the first steps are
    /// every kind once in seeded order (so a short CI run still exercises each); then kinds
    /// are drawn at random. A pause always outlasts the election timeout.
    pub fn generate(seed: u64, total: Duration, cover_all: bool, election_max_ms: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut kinds: Vec<Fault> = Vec::new();
        if cover_all {
            kinds.extend(ALL);
            for i in (1..kinds.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                kinds.swap(i, j);
            }
        }
        let mut steps = Vec::new();
        let mut spent = 0u64;
        let mut k = 0usize;
        while spent < total.as_millis() as u64 || k < kinds.len() {
            let fault = match kinds.get(k) {
                Some(f) => *f,
                None => ALL[(rng.next_u64() % ALL.len() as u64) as usize],
            };
            k += 1;
            let hold_ms = match fault {
                Fault::KillLeader | Fault::KillFollower | Fault::KillAny => rng.range(300, 2500),
                Fault::PauseLeader => rng.range(election_max_ms * 2, election_max_ms * 5),
                Fault::PartitionLeader | Fault::PartitionFollower => rng.range(2000, 5000),
                Fault::ClockJumpLeader => rng.range(1500, 3000),
            };
            let rest_ms = rng.range(1000, 3000);
            spent += hold_ms + rest_ms + 500;
            steps.push(Step {
                fault,
                hold_ms,
                rest_ms,
                pick: rng.next_u64(),
            });
        }
        Self { steps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_schedule_and_ci_covers_every_fault() {
        let a = Schedule::generate(7, Duration::from_secs(60), true, 600);
        let b = Schedule::generate(7, Duration::from_secs(60), true, 600);
        assert_eq!(format!("{:?}", a.steps), format!("{:?}", b.steps));
        for f in ALL {
            assert!(a.steps.iter().any(|s| s.fault == f), "{f:?}");
        }
        assert!(
            a.steps
                .iter()
                .filter(|s| s.fault == Fault::PauseLeader)
                .all(|s| s.hold_ms > 600)
        );
    }
}
