//! The discrete-event core: simulated time, timers, and a machine of `cores` identical CPUs
//! with serial lanes.
//!
//! Why a lane: a Raft group's state machine applies one entry at a time on one task, so
//! however many cores the machine has, a group's apply work runs on at most one of them at
//! a time. A lane is that constraint and nothing else: its bursts run in submission order,
//! never two at once, and each still needs a free core. Work without a lane (intake, TLS,
//! signatures, the nodes) runs on any free core.
//!
//! Scheduling is first come, first served and not preemptive: a burst that has a core
//! keeps it for its whole duration. Time is whole microseconds and ties are broken by the
//! order events were scheduled, so one input gives one history: no clock, no threads, no
//! hashing of addresses.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Simulated time in microseconds since the start of a run.
pub type Us = u64;

/// A serial lane (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneId(usize);

#[derive(Debug)]
struct Burst<T> {
    duration: Us,
    lane: Option<LaneId>,
    payload: Option<T>,
}

#[derive(Debug, Default)]
struct Lane {
    busy: bool,
    waiting: VecDeque<usize>,
}

#[derive(Debug)]
enum Slot<T> {
    Timer(T),
    BurstDone(usize),
}

/// The event queue and the CPUs. `T` is what the model wants back when a timer fires or a
/// burst of CPU work finishes.
#[derive(Debug)]
pub struct Engine<T> {
    now: Us,
    seq: u64,
    heap: BinaryHeap<Reverse<(Us, u64, usize)>>,
    slots: Vec<Option<Slot<T>>>,
    free_slots: Vec<usize>,
    bursts: Vec<Burst<T>>,
    free_bursts: Vec<usize>,
    lanes: Vec<Lane>,
    ready: VecDeque<usize>,
    cores: u32,
    idle_cores: u32,
    window: (Us, Us),
    busy_in_window: u128,
}

impl<T> Engine<T> {
    /// A machine of `cores` CPUs (at least one; the caller validates) at time zero.
    pub fn new(cores: u32) -> Self {
        Self {
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            bursts: Vec::new(),
            free_bursts: Vec::new(),
            lanes: Vec::new(),
            ready: VecDeque::new(),
            cores: cores.max(1),
            idle_cores: cores.max(1),
            window: (0, 0),
            busy_in_window: 0,
        }
    }

    /// The current simulated time.
    pub fn now(&self) -> Us {
        self.now
    }

    /// Core time is counted only inside `[from, to)`, so a run's utilisation leaves out
    /// its warm-up and drain.
    pub fn measure_between(&mut self, from: Us, to: Us) {
        self.window = (from, to);
    }

    /// Busy core-microseconds inside the measuring window (counted when a burst starts).
    pub fn busy_in_window(&self) -> u128 {
        self.busy_in_window
    }

    /// A new serial lane.
    pub fn lane(&mut self) -> LaneId {
        self.lanes.push(Lane::default());
        LaneId(self.lanes.len() - 1)
    }

    /// `payload` comes back from [`Engine::step`] `after` microseconds from now.
    pub fn at(&mut self, after: Us, payload: T) {
        self.push(self.now.saturating_add(after), Slot::Timer(payload));
    }

    /// A burst of `duration` microseconds of CPU work, on `lane` if given; `payload` comes
    /// back from [`Engine::step`] when it has run.
    pub fn cpu(&mut self, duration: Us, lane: Option<LaneId>, payload: T) {
        let burst = Burst {
            duration,
            lane,
            payload: Some(payload),
        };
        let ix = match self.free_bursts.pop() {
            Some(ix) => {
                self.bursts[ix] = burst;
                ix
            }
            None => {
                self.bursts.push(burst);
                self.bursts.len() - 1
            }
        };
        match lane.and_then(|l| self.lanes.get_mut(l.0)) {
            Some(l) if l.busy => l.waiting.push_back(ix),
            Some(l) => {
                l.busy = true;
                self.ready.push_back(ix);
            }
            None => self.ready.push_back(ix),
        }
        self.dispatch();
    }

    /// The next timer or finished burst, with time advanced to it; `None` when nothing is
    /// scheduled any more.
    pub fn step(&mut self) -> Option<T> {
        loop {
            let Reverse((time, _, slot)) = self.heap.pop()?;
            self.now = time;
            let taken = self.slots.get_mut(slot).and_then(Option::take);
            self.free_slots.push(slot);
            let Some(taken) = taken else { continue };
            match taken {
                Slot::Timer(payload) => return Some(payload),
                Slot::BurstDone(ix) => {
                    if let Some(payload) = self.finish(ix) {
                        return Some(payload);
                    }
                }
            }
        }
    }

    fn finish(&mut self, ix: usize) -> Option<T> {
        self.idle_cores += 1;
        let burst = self.bursts.get_mut(ix)?;
        let payload = burst.payload.take();
        if let Some(lane) = burst.lane.and_then(|l| self.lanes.get_mut(l.0)) {
            match lane.waiting.pop_front() {
                Some(next) => self.ready.push_back(next),
                None => lane.busy = false,
            }
        }
        self.free_bursts.push(ix);
        self.dispatch();
        payload
    }

    fn dispatch(&mut self) {
        while self.idle_cores > 0 {
            let Some(ix) = self.ready.pop_front() else {
                return;
            };
            self.idle_cores -= 1;
            let duration = self.bursts.get(ix).map_or(0, |b| b.duration);
            let (from, to) = self.window;
            let start = self.now.max(from);
            let end = self.now.saturating_add(duration).min(to);
            if end > start {
                self.busy_in_window += u128::from(end - start);
            }
            self.push(self.now.saturating_add(duration), Slot::BurstDone(ix));
        }
    }

    fn push(&mut self, time: Us, slot: Slot<T>) {
        let ix = match self.free_slots.pop() {
            Some(ix) => {
                self.slots[ix] = Some(slot);
                ix
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((time, self.seq, ix)));
    }

    /// How many CPUs the machine has.
    pub fn cores(&self) -> u32 {
        self.cores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(e: &mut Engine<&'static str>) -> Vec<(Us, &'static str)> {
        let mut out = Vec::new();
        while let Some(p) = e.step() {
            out.push((e.now(), p));
        }
        out
    }

    #[test]
    fn one_core_runs_bursts_one_after_another() {
        let mut e = Engine::new(1);
        e.cpu(10, None, "a");
        e.cpu(10, None, "b");
        assert_eq!(drain(&mut e), vec![(10, "a"), (20, "b")]);
    }

    #[test]
    fn two_cores_run_two_bursts_at_once() {
        let mut e = Engine::new(2);
        e.cpu(10, None, "a");
        e.cpu(10, None, "b");
        assert_eq!(drain(&mut e), vec![(10, "a"), (10, "b")]);
    }

    #[test]
    fn a_lane_is_serial_whatever_the_cores() {
        let mut e = Engine::new(8);
        let lane = e.lane();
        e.cpu(10, Some(lane), "a");
        e.cpu(10, Some(lane), "b");
        e.cpu(10, None, "free");
        assert_eq!(drain(&mut e), vec![(10, "a"), (10, "free"), (20, "b")]);
    }

    #[test]
    fn timers_fire_in_time_order_and_ties_in_scheduling_order() {
        let mut e = Engine::new(1);
        e.at(5, "late");
        e.at(1, "early");
        e.at(5, "late-too");
        assert_eq!(
            drain(&mut e),
            vec![(1, "early"), (5, "late"), (5, "late-too")]
        );
    }

    #[test]
    fn busy_time_counts_only_inside_the_window() {
        let mut e = Engine::new(2);
        e.measure_between(5, 15);
        e.cpu(10, None, "a");
        e.cpu(20, None, "b");
        drain(&mut e);
        // a: 5..10 inside (5), b: 5..15 inside (10)
        assert_eq!(e.busy_in_window(), 15);
    }
}
