//! One run of the sharded federation on one machine: G chartered groups of replicas, one
//! index group, the arbiter nodes, the clients, all sharing `cores` CPUs.
//!
//! What a decision does here mirrors the real path `panel bench` times (BENCHMARKS.md
//! "Real path"), reduced to what costs CPU or time:
//!
//! 1. a client signs and sends a claim on a debate; the debate's group is fixed by
//!    [`super::routing`];
//! 2. four log rounds in that group: the claim that opens the motion, the logged
//!    commitments, the reveals, the close. A round is the leader's intake (any core), a
//!    flush on the leader and an append plus flush on each follower, commit at a majority,
//!    then apply on every replica's serial lane; the leader's apply ends the round;
//! 3. between the first two rounds the seats judge and commit (any core) and the commit
//!    window runs; between the second and third they reveal and check each other;
//! 4. the decision is decided when the close is applied on the leader.
//!
//! Every group also heartbeats its followers and, at the replica's default cadence, signs a
//! checkpoint, logs it, has the witnesses cosign it and logs the cosignatures; then one
//! entry naming that checkpoint goes through the index group's own log, and the index
//! group's cosigned checkpoint over that entry is when a decision becomes checkable
//! against the federation-wide index ("indexed" below).
//!
//! Service times are the inputs' means (measured or assumed: [`super::params`]) times a
//! uniform factor in [0.5, 1.5); claims
//! arrive as a Poisson stream (open loop) or from clients that send their next claim when
//! the last one is decided (closed loop). The seeded generator is the only randomness.

use serde::Serialize;

use super::engine::{Engine, LaneId, Us};
use super::error::ShardsError;
use super::params::{Params, ROUNDS};
use super::routing;
use super::stats::percentile_ms;
use crate::gaussian::Rng;

/// How claims arrive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Load {
    /// Poisson arrivals at this many decisions per second: the latency figures.
    Open { per_s: f64 },
    /// This many clients, each sending its next claim when its last one is decided: the
    /// capacity figures.
    Closed { clients: u32 },
}

/// What one run measured, over the measuring window only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    pub cores: u32,
    pub groups: u32,
    pub load: Load,
    /// Decisions decided inside the window, per second.
    pub throughput_per_s: f64,
    /// Claim sent to decision applied on the leader, for claims sent inside the window.
    pub decided_p50_ms: Option<f64>,
    pub decided_p99_ms: Option<f64>,
    /// Claim sent to the index group's cosigned checkpoint covering the decision's group
    /// checkpoint: when `panel verify` could check the decision against the index.
    pub indexed_p50_ms: Option<f64>,
    pub indexed_p99_ms: Option<f64>,
    /// Busy core time over all core time in the window.
    pub cpu_utilisation: f64,
    /// Open loop only: the federation did not keep up with the offered load, so its queue
    /// grows for as long as the load lasts and the latencies, which then depend on the
    /// run's length, are left out. Either claims sent in the window were still undecided
    /// when the run gave up draining, or the claims in flight grew over the window by more
    /// than they were at its start and by more than [`BACKLOG_GROWTH`] of the claims sent.
    pub saturated: bool,
    /// Claims sent inside the window.
    pub sent: usize,
    /// Index entries applied inside the window, per second.
    pub index_entries_per_s: f64,
    /// The busiest group's share of the claims sent in the window (1/G is perfect balance).
    pub busiest_group_share: f64,
}

/// How much the claims in flight may grow over the window, as a share of the claims sent
/// in it, before an open-loop run counts as not keeping up (see `RunResult::saturated`).
/// A stable run's claims in flight wander around the rate times the latency and end the
/// window about where they began; a run beyond capacity piles up the excess rate times the
/// window.
pub const BACKLOG_GROWTH: f64 = 0.05;

type Dec = usize;
type Rnd = usize;
type Ckp = usize;

#[derive(Debug, Clone, Copy)]
enum Then {
    Decision(Dec),
    Issued(Ckp),
    Cosigned(Ckp),
    Indexed(Ckp),
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrive,
    ClientStart(u32),
    ClientSent(Dec),
    Intake(Rnd),
    AtFollower(Rnd),
    Appended(Rnd),
    Ack(Rnd),
    LeaderSynced(Rnd),
    Applied(Rnd),
    Nothing,
    WindowEnd(Dec),
    NodeDone(Dec),
    Heartbeat(u32),
    CheckpointTick(u32),
    Signed(Ckp),
    WitnessDone(Ckp),
    CosignsBack(Ckp),
}

#[derive(Debug)]
struct Decision {
    arrived: Us,
    group: u32,
    client: Option<u32>,
    phase: usize,
    pending_nodes: u32,
    window_over: bool,
    decided: Option<Us>,
}

#[derive(Debug)]
struct Round {
    group: u32,
    cost: usize,
    then: Then,
    acks: u32,
    leader_synced: bool,
    committed: bool,
}

#[derive(Debug)]
struct Group {
    leader: LaneId,
    followers: Vec<LaneId>,
    entries: u64,
    pending: Vec<Dec>,
    checkpointing: bool,
}

#[derive(Debug)]
struct Checkpoint {
    group: u32,
    covered: Vec<Dec>,
    witnesses_left: u32,
}

/// Mean CPU of one log round per replica role, in ms.
#[derive(Debug, Clone, Copy)]
struct RoundCost {
    leader_par: f64,
    leader_ser: f64,
    follower_par: f64,
    follower_ser: f64,
}

const BOOKKEEPING: usize = ROUNDS;

fn round_costs(p: &Params) -> [RoundCost; ROUNDS + 1] {
    let c = &p.costs;
    let split = |replicas_ms: f64| {
        let leader = replicas_ms * c.leader_share;
        let follower = replicas_ms * (1.0 - c.leader_share) / f64::from(p.replicas - 1);
        RoundCost {
            leader_par: leader * (1.0 - c.serial_share),
            leader_ser: leader * c.serial_share,
            follower_par: follower * (1.0 - c.serial_share),
            follower_ser: follower * c.serial_share,
        }
    };
    let total: f64 = c.round_weights.iter().sum();
    let mut out = [split(c.bookkeeping_entry_ms); ROUNDS + 1];
    for (slot, w) in out.iter_mut().zip(c.round_weights) {
        *slot = split(c.replica_ms * w / total);
    }
    out
}

fn us(ms: f64) -> Us {
    (ms * 1000.0).round().max(0.0) as Us
}

struct Sim<'a> {
    p: &'a Params,
    load: Load,
    e: Engine<Ev>,
    jitter: Rng,
    arrivals: Rng,
    pick: Rng,
    debate_group: Vec<u32>,
    costs: [RoundCost; ROUNDS + 1],
    groups: Vec<Group>,
    decisions: Vec<Decision>,
    rounds: Vec<Round>,
    checkpoints: Vec<Checkpoint>,
    indexed: Vec<Option<Us>>,
    start: Us,
    end: Us,
    stop: Us,
    undecided_in_window: usize,
    unindexed_in_window: usize,
    index_entries_in_window: u64,
}

/// Runs one configuration under one load.
pub fn run(p: &Params, load: Load) -> Result<RunResult, ShardsError> {
    p.validate()?;
    match load {
        Load::Open { per_s } if !(per_s.is_finite() && per_s > 0.0 && per_s <= 1.0e6) => {
            return Err(ShardsError::invalid(
                "load.per_s",
                per_s,
                "more than 0 and at most 1,000,000 decisions per second",
            ));
        }
        Load::Closed { clients } if !(1..=1_000_000).contains(&clients) => {
            return Err(ShardsError::invalid(
                "load.clients",
                clients,
                "1 to 1,000,000 clients",
            ));
        }
        _ => {}
    }
    let mut sim = Sim::new(p, load)?;
    sim.start();
    sim.drive();
    Ok(sim.result())
}

impl<'a> Sim<'a> {
    fn new(p: &'a Params, load: Load) -> Result<Self, ShardsError> {
        let mut e = Engine::new(p.cores);
        let mut groups = Vec::new();
        // the data groups, then the index group at index `p.groups`
        for _ in 0..=p.groups {
            let leader = e.lane();
            let followers = (1..p.replicas).map(|_| e.lane()).collect();
            groups.push(Group {
                leader,
                followers,
                entries: 0,
                pending: Vec::new(),
                checkpointing: false,
            });
        }
        let start = us(p.warmup_s * 1000.0);
        let end = start + us(p.measure_s * 1000.0);
        // open loop: drain what was sent in the window for as long again (at least 10 s)
        let stop = match load {
            Load::Open { .. } => end + us(p.measure_s.max(10.0) * 1000.0),
            Load::Closed { .. } => end,
        };
        e.measure_between(start, end);
        Ok(Self {
            p,
            load,
            e,
            jitter: Rng::stream(p.seed, 1),
            arrivals: Rng::stream(p.seed, 2),
            pick: Rng::stream(p.seed, 3),
            debate_group: routing::assign(p.debates, p.groups)?,
            costs: round_costs(p),
            groups,
            decisions: Vec::new(),
            rounds: Vec::new(),
            checkpoints: Vec::new(),
            indexed: Vec::new(),
            start,
            end,
            stop,
            undecided_in_window: 0,
            unindexed_in_window: 0,
            index_entries_in_window: 0,
        })
    }

    /// A mean in ms as a jittered duration in µs: uniform in [0.5, 1.5) times the mean.
    fn jit(&mut self, mean_ms: f64) -> Us {
        let f = 0.5 + self.jitter.uniform();
        us(mean_ms * f)
    }

    fn start(&mut self) {
        for g in 0..=self.p.groups {
            let hb = self.jit(self.p.timing.heartbeat_ms);
            self.e.at(hb, Ev::Heartbeat(g));
            let tick = self.jit(self.p.timing.checkpoint_every_ms);
            self.e.at(tick, Ev::CheckpointTick(g));
        }
        match self.load {
            Load::Open { per_s } => {
                let gap = self.exp_gap(per_s);
                self.e.at(gap, Ev::Arrive);
            }
            Load::Closed { clients } => {
                for c in 0..clients {
                    // spread the first claims over one commit window
                    let at = self.jit(self.p.timing.commit_window_ms);
                    self.e.at(at, Ev::ClientStart(c));
                }
            }
        }
    }

    fn exp_gap(&mut self, per_s: f64) -> Us {
        let u = 1.0 - self.arrivals.uniform();
        us(-u.ln() / per_s * 1000.0).max(1)
    }

    fn drive(&mut self) {
        while let Some(ev) = self.e.step() {
            if self.e.now() >= self.stop {
                break;
            }
            self.handle(ev);
            if self.e.now() >= self.end
                && matches!(self.load, Load::Open { .. })
                && self.unindexed_in_window == 0
                && self.undecided_in_window == 0
            {
                break;
            }
        }
    }

    fn in_window(&self, t: Us) -> bool {
        t >= self.start && t < self.end
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive => {
                self.send(None);
                if let Load::Open { per_s } = self.load {
                    let gap = self.exp_gap(per_s);
                    if self.e.now() + gap < self.end {
                        self.e.at(gap, Ev::Arrive);
                    }
                }
            }
            Ev::ClientStart(c) => self.send(Some(c)),
            Ev::ClientSent(d) => {
                let g = self.decisions[d].group;
                self.start_round(g, 0, Then::Decision(d));
            }
            Ev::Intake(r) => {
                let fsync = self.jit(self.p.timing.fsync_ms);
                self.e.at(fsync, Ev::LeaderSynced(r));
                for _ in 0..self.p.replicas - 1 {
                    let net = self.jit(self.p.timing.net_ms);
                    self.e.at(net, Ev::AtFollower(r));
                }
            }
            Ev::AtFollower(r) => {
                let cost = self.costs[self.rounds[r].cost].follower_par;
                let d = self.jit(cost);
                self.e.cpu(d, None, Ev::Appended(r));
            }
            Ev::Appended(r) => {
                let back = self.jit(self.p.timing.fsync_ms) + self.jit(self.p.timing.net_ms);
                self.e.at(back, Ev::Ack(r));
            }
            Ev::Ack(r) => {
                self.rounds[r].acks += 1;
                self.try_commit(r);
            }
            Ev::LeaderSynced(r) => {
                self.rounds[r].leader_synced = true;
                self.try_commit(r);
            }
            Ev::Applied(r) => self.applied(r),
            Ev::Nothing => {}
            Ev::WindowEnd(d) => {
                self.decisions[d].window_over = true;
                if self.decisions[d].pending_nodes == 0 {
                    self.advance(d);
                }
            }
            Ev::NodeDone(d) => {
                let dec = &mut self.decisions[d];
                dec.pending_nodes = dec.pending_nodes.saturating_sub(1);
                if dec.pending_nodes == 0 && (dec.phase != 0 || dec.window_over) {
                    self.advance(d);
                }
            }
            Ev::Heartbeat(g) => {
                let followers = self.p.replicas - 1;
                let leader = self.jit(self.p.costs.heartbeat_cpu_ms * f64::from(followers));
                self.e.cpu(leader, None, Ev::Nothing);
                for _ in 0..followers {
                    let f = self.jit(self.p.costs.heartbeat_cpu_ms);
                    self.e.cpu(f, None, Ev::Nothing);
                }
                self.repeat(Ev::Heartbeat(g), self.p.timing.heartbeat_ms);
            }
            Ev::CheckpointTick(g) => {
                if self.groups[g as usize].entries > 0 {
                    self.checkpoint(g);
                }
                self.repeat(Ev::CheckpointTick(g), self.p.timing.checkpoint_every_ms);
            }
            Ev::Signed(c) => {
                let g = self.checkpoints[c].group;
                self.start_round(g, BOOKKEEPING, Then::Issued(c));
            }
            Ev::WitnessDone(c) => {
                let ck = &mut self.checkpoints[c];
                ck.witnesses_left = ck.witnesses_left.saturating_sub(1);
                if ck.witnesses_left == 0 {
                    let rtt = self.jit(self.p.timing.witness_rtt_ms);
                    self.e.at(rtt, Ev::CosignsBack(c));
                }
            }
            Ev::CosignsBack(c) => {
                let g = self.checkpoints[c].group;
                self.start_round(g, BOOKKEEPING, Then::Cosigned(c));
            }
        }
    }

    /// Periodic timers stop once the run is over, so the queue empties.
    fn repeat(&mut self, ev: Ev, every_ms: f64) {
        let gap = self.jit(every_ms).max(1);
        if self.e.now() + gap < self.stop {
            self.e.at(gap, ev);
        }
    }

    fn send(&mut self, client: Option<u32>) {
        let now = self.e.now();
        let debate = self.pick.below(self.debate_group.len());
        let group = self.debate_group.get(debate).copied().unwrap_or(0);
        let d = self.decisions.len();
        self.decisions.push(Decision {
            arrived: now,
            group,
            client,
            phase: 0,
            pending_nodes: 0,
            window_over: false,
            decided: None,
        });
        self.indexed.push(None);
        if self.in_window(now) {
            self.undecided_in_window += 1;
            self.unindexed_in_window += 1;
        }
        let cost = self.jit(self.p.costs.client_ms);
        self.e.cpu(cost, None, Ev::ClientSent(d));
    }

    fn start_round(&mut self, group: u32, cost: usize, then: Then) {
        let r = self.rounds.len();
        self.rounds.push(Round {
            group,
            cost,
            then,
            acks: 0,
            leader_synced: false,
            committed: false,
        });
        let d = self.jit(self.costs[cost].leader_par);
        self.e.cpu(d, None, Ev::Intake(r));
    }

    fn try_commit(&mut self, r: Rnd) {
        let majority = self.p.replicas / 2 + 1;
        let round = &mut self.rounds[r];
        if round.committed || !round.leader_synced || round.acks + 1 < majority {
            return;
        }
        round.committed = true;
        let (g, cost) = (round.group as usize, self.costs[round.cost]);
        let leader = self.groups[g].leader;
        let d = self.jit(cost.leader_ser);
        self.e.cpu(d, Some(leader), Ev::Applied(r));
        for f in 0..self.groups[g].followers.len() {
            let lane = self.groups[g].followers[f];
            let d = self.jit(cost.follower_ser);
            self.e.cpu(d, Some(lane), Ev::Nothing);
        }
    }

    fn applied(&mut self, r: Rnd) {
        match self.rounds[r].then {
            Then::Decision(d) => self.decision_step(d),
            Then::Issued(c) => {
                let witnesses = self.p.witnesses;
                if witnesses == 0 {
                    let g = self.checkpoints[c].group;
                    self.start_round(g, BOOKKEEPING, Then::Cosigned(c));
                    return;
                }
                self.checkpoints[c].witnesses_left = witnesses;
                for _ in 0..witnesses {
                    let d = self.jit(self.p.costs.witness_ms);
                    self.e.cpu(d, None, Ev::WitnessDone(c));
                }
            }
            Then::Cosigned(c) => {
                let g = self.checkpoints[c].group;
                self.groups[g as usize].checkpointing = false;
                if g == self.p.groups {
                    // the index group's own checkpoint: what it covers is now checkable
                    let now = self.e.now();
                    let covered = std::mem::take(&mut self.checkpoints[c].covered);
                    for d in covered {
                        if self.indexed[d].is_none() {
                            self.indexed[d] = Some(now);
                            if self.in_window(self.decisions[d].arrived) {
                                self.unindexed_in_window -= 1;
                            }
                        }
                    }
                } else {
                    self.start_round(self.p.groups, BOOKKEEPING, Then::Indexed(c));
                }
                self.checkpoint_if_full(g);
            }
            Then::Indexed(c) => {
                if self.in_window(self.e.now()) {
                    self.index_entries_in_window += 1;
                }
                let covered = std::mem::take(&mut self.checkpoints[c].covered);
                let index = self.p.groups;
                let ig = &mut self.groups[index as usize];
                ig.pending.extend(covered);
                ig.entries += 1;
                self.checkpoint_if_full(index);
            }
        }
    }

    fn decision_step(&mut self, d: Dec) {
        let g = self.decisions[d].group;
        let seats = self.p.seats;
        let share = self.p.costs.node_commit_share;
        let node_ms = self.p.costs.node_ms / f64::from(seats);
        match self.decisions[d].phase {
            0 => {
                // the window is a signed deadline, not work: its nominal length, no jitter
                let window = us(self.p.timing.commit_window_ms);
                self.e.at(window, Ev::WindowEnd(d));
                self.decisions[d].pending_nodes = seats;
                for _ in 0..seats {
                    let t = self.jit(node_ms * share);
                    self.e.cpu(t, None, Ev::NodeDone(d));
                }
            }
            1 => {
                self.decisions[d].pending_nodes = seats;
                for _ in 0..seats {
                    let t = self.jit(node_ms * (1.0 - share));
                    self.e.cpu(t, None, Ev::NodeDone(d));
                }
            }
            2 => self.advance(d),
            _ => self.decided(d),
        }
        self.groups[g as usize].entries += 1;
        self.checkpoint_if_full(g);
    }

    fn advance(&mut self, d: Dec) {
        let dec = &mut self.decisions[d];
        dec.phase += 1;
        let (g, phase) = (dec.group, dec.phase.min(ROUNDS - 1));
        self.start_round(g, phase, Then::Decision(d));
    }

    fn decided(&mut self, d: Dec) {
        let now = self.e.now();
        let dec = &mut self.decisions[d];
        if dec.decided.is_some() {
            return;
        }
        dec.decided = Some(now);
        let (g, arrived, client) = (dec.group, dec.arrived, dec.client);
        self.groups[g as usize].pending.push(d);
        if self.in_window(arrived) {
            self.undecided_in_window -= 1;
        }
        if let Some(c) = client
            && now < self.end
        {
            self.send(Some(c));
        }
    }

    fn checkpoint_if_full(&mut self, g: u32) {
        if self.groups[g as usize].entries >= self.p.timing.checkpoint_every_entries {
            self.checkpoint(g);
        }
    }

    /// Starts a checkpoint of group `g` unless one is already on its way (the next tick or
    /// the next full batch of entries tries again).
    fn checkpoint(&mut self, g: u32) {
        let group = &mut self.groups[g as usize];
        if group.checkpointing {
            return;
        }
        group.checkpointing = true;
        group.entries = 0;
        let covered = std::mem::take(&mut group.pending);
        let c = self.checkpoints.len();
        self.checkpoints.push(Checkpoint {
            group: g,
            covered,
            witnesses_left: 0,
        });
        let d = self.jit(self.p.costs.checkpoint_sign_ms);
        self.e.cpu(d, None, Ev::Signed(c));
    }

    /// Claims sent before `t` and not decided by then.
    fn in_flight_at(&self, t: Us) -> usize {
        self.decisions
            .iter()
            .filter(|d| d.arrived < t && d.decided.is_none_or(|x| x >= t))
            .count()
    }

    fn result(&self) -> RunResult {
        let measure_s = self.p.measure_s;
        let mut decided_lat = Vec::new();
        let mut indexed_lat = Vec::new();
        let mut per_group = vec![0usize; self.p.groups as usize];
        let mut sent = 0usize;
        let mut decided_in_window = 0usize;
        for (d, dec) in self.decisions.iter().enumerate() {
            if let Some(t) = dec.decided
                && self.in_window(t)
            {
                decided_in_window += 1;
            }
            if !self.in_window(dec.arrived) {
                continue;
            }
            sent += 1;
            if let Some(n) = per_group.get_mut(dec.group as usize) {
                *n += 1;
            }
            if let Some(t) = dec.decided {
                decided_lat.push(t - dec.arrived);
            }
            if let Some(Some(t)) = self.indexed.get(d) {
                indexed_lat.push(t - dec.arrived);
            }
        }
        decided_lat.sort_unstable();
        indexed_lat.sort_unstable();
        let throughput_per_s = decided_in_window as f64 / measure_s;
        let (before, after) = (self.in_flight_at(self.start), self.in_flight_at(self.end));
        let growth = after.saturating_sub(before) as f64;
        let saturated = matches!(self.load, Load::Open { .. })
            && (self.undecided_in_window > 0
                || growth > (before as f64).max(BACKLOG_GROWTH * sent as f64));
        let latency = |v: &[Us], q: f64| {
            if saturated { None } else { percentile_ms(v, q) }
        };
        let indexed_complete = self.unindexed_in_window == 0;
        let busiest = per_group.iter().copied().max().unwrap_or(0);
        let core_us = f64::from(self.p.cores) * measure_s * 1.0e6;
        RunResult {
            cores: self.p.cores,
            groups: self.p.groups,
            load: self.load,
            throughput_per_s,
            decided_p50_ms: latency(&decided_lat, 0.5),
            decided_p99_ms: latency(&decided_lat, 0.99),
            indexed_p50_ms: latency(&indexed_lat, 0.5).filter(|_| indexed_complete),
            indexed_p99_ms: latency(&indexed_lat, 0.99).filter(|_| indexed_complete),
            cpu_utilisation: self.e.busy_in_window() as f64 / core_us,
            saturated,
            sent,
            index_entries_per_s: self.index_entries_in_window as f64 / measure_s,
            busiest_group_share: if sent == 0 {
                0.0
            } else {
                busiest as f64 / sent as f64
            },
        }
    }
}
