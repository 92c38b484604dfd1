//! The model's inputs, each with where it comes from.
//!
//! Measured inputs come from BENCHMARKS.md, "Real path (issue 41 part 1): `panel bench`",
//! the table of 2026-12-06 19:38-20:05 UTC ("part 2, first step"): the three runs of the
//! build "channels + store" without `perf` measured 79.8, 82.8 and 72.6 ms of CPU per
//! decision, of which the eight arbiter nodes took 43.1, 46.6 and 40.6 ms and the three
//! replicas 34.7, 34.5 and 30.3 ms; the defaults below are their means. The leader's share
//! of the replicas' CPU (24.1 of 49 ms) is run 2 of the same section, the only run that
//! splits it by replica. The commit window (300 ms), the heartbeat (100 ms) and the
//! checkpoint cadence (256 entries or 1,000 ms) are the bench's and the replica config's
//! defaults. Everything else is an assumption, named as such on its field, and
//! docs/SHARDING.md lists them all.

use serde::Serialize;

use super::error::ShardsError;

/// The most groups the model accepts (the sweep in docs/SHARDING.md goes to 16).
pub const MAX_GROUPS: u32 = 64;
/// The most cores the model accepts.
pub const MAX_CORES: u32 = 1024;

/// The log rounds of one decision, in order: the claim that opens the motion, the logged
/// commitments, the reveals, the close that writes the decision and its record entry.
pub const ROUNDS: usize = 4;

/// CPU per decision and how it divides, in milliseconds of one core.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Costs {
    /// Measured: the arbiter nodes' CPU per decision, all seats together (43.4 ms).
    pub node_ms: f64,
    /// Measured: the three replicas' CPU per decision, all together (33.2 ms).
    pub replica_ms: f64,
    /// Measured: the rest of the bench's CPU per decision (its own writers and readers,
    /// the witnesses): 78.4 - 43.4 - 33.2 = 1.8 ms, charged when a claim is sent.
    pub client_ms: f64,
    /// Measured (run 2 only): the leader's share of the replicas' CPU, 24.1 of 49 ms; the
    /// followers share the rest equally (measured 14.6 and 10.8).
    pub leader_share: f64,
    /// Assumed: the share of each replica's work that runs on the group's serial apply
    /// task. The section's profile puts 42-49 % of the replicas' samples in allocation,
    /// copying and JSON, which it places in apply and the record store; 0.5 is that,
    /// rounded up.
    pub serial_share: f64,
    /// Assumed: how the replicas' CPU divides over the four log rounds (normalised): the
    /// reveals round carries ten reveals (each seat's and the driver's copy).
    pub round_weights: [f64; ROUNDS],
    /// Assumed: the share of a seat's CPU spent before the commit deadline (verify the
    /// motion, judge, sign, commit); the rest is revealing and checking four peers. The
    /// section counts 2 signatures and about 9 verifications per seat, 8 of them of peers.
    pub node_commit_share: f64,
    /// Assumed: the replicas' CPU for one bookkeeping entry (a checkpoint issued, its
    /// cosignatures, one index entry), all replicas together: about half the component
    /// bench's 1.9-2.5 ms per two-entry decision (BENCHMARKS.md "Coordinator").
    pub bookkeeping_entry_ms: f64,
    /// Assumed: the leader signing one checkpoint note.
    pub checkpoint_sign_ms: f64,
    /// Assumed: one witness checking and cosigning one checkpoint.
    pub witness_ms: f64,
    /// Assumed: one heartbeat RPC's CPU on each side (TLS record, gRPC, JSON).
    pub heartbeat_cpu_ms: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            node_ms: 43.4,
            replica_ms: 33.2,
            client_ms: 1.8,
            leader_share: 0.49,
            serial_share: 0.5,
            round_weights: [0.25, 0.15, 0.40, 0.20],
            node_commit_share: 0.3,
            bookkeeping_entry_ms: 1.0,
            checkpoint_sign_ms: 0.2,
            witness_ms: 0.5,
            heartbeat_cpu_ms: 0.1,
        }
    }
}

/// Delays that take no CPU, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// The bench's default commit window (`panel bench --commit-ms`): no reveal before it.
    pub commit_window_ms: f64,
    /// Assumed: one-way loopback latency between processes.
    pub net_ms: f64,
    /// Assumed: one durable flush of the Raft log (the component bench's paced write,
    /// two flushes, took 3-4 ms on the faster machines).
    pub fsync_ms: f64,
    /// Assumed: a witness's round trip (HTTP on loopback and its own flush).
    pub witness_rtt_ms: f64,
    /// The replica config's default `raft.heartbeat_ms`.
    pub heartbeat_ms: f64,
    /// The replica config's default `checkpoints.every_ms`.
    pub checkpoint_every_ms: f64,
    /// The replica config's default `checkpoints.every_entries`.
    pub checkpoint_every_entries: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            commit_window_ms: 300.0,
            net_ms: 0.1,
            fsync_ms: 2.0,
            witness_rtt_ms: 5.0,
            heartbeat_ms: 100.0,
            checkpoint_every_ms: 1000.0,
            checkpoint_every_entries: 256,
        }
    }
}

/// One configuration of the federation on one machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    /// CPUs the machine has (the project's VM has 2).
    pub cores: u32,
    /// Raft groups the debates are sharded over (the index group comes on top).
    pub groups: u32,
    /// Replicas per group, the index group included (odd: a majority commits).
    pub replicas: u32,
    /// Debates the load is spread over, uniformly; each lives in one group.
    pub debates: u32,
    /// Seats on each decision's panel (the bench's five).
    pub seats: u32,
    /// Witnesses that cosign every checkpoint (the bench's two).
    pub witnesses: u32,
    pub costs: Costs,
    pub timing: Timing,
    /// The only source of randomness.
    pub seed: u64,
    /// Simulated seconds before measuring starts.
    pub warmup_s: f64,
    /// Simulated seconds measured.
    pub measure_s: f64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            cores: 2,
            groups: 1,
            replicas: 3,
            debates: 1000,
            seats: 5,
            witnesses: 2,
            costs: Costs::default(),
            timing: Timing::default(),
            seed: 41,
            warmup_s: 10.0,
            measure_s: 30.0,
        }
    }
}

fn finite_at_least(name: &'static str, v: f64, min: f64) -> Result<(), ShardsError> {
    if v.is_finite() && v >= min {
        Ok(())
    } else {
        Err(ShardsError::invalid(
            name,
            v,
            "a finite number, at least the minimum",
        ))
    }
}

fn share(name: &'static str, v: f64) -> Result<(), ShardsError> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ShardsError::invalid(name, v, "a share between 0 and 1"))
    }
}

impl Params {
    /// Every refusal names the parameter; a run starts only from parameters that pass.
    pub fn validate(&self) -> Result<(), ShardsError> {
        if !(1..=MAX_CORES).contains(&self.cores) {
            return Err(ShardsError::invalid("cores", self.cores, "1 to 1024"));
        }
        if !(1..=MAX_GROUPS).contains(&self.groups) {
            return Err(ShardsError::invalid("groups", self.groups, "1 to 64"));
        }
        if self.replicas < 3 || self.replicas > 7 || self.replicas.is_multiple_of(2) {
            return Err(ShardsError::invalid(
                "replicas",
                self.replicas,
                "3, 5 or 7 (odd, so a majority commits)",
            ));
        }
        if self.debates < 1 {
            return Err(ShardsError::invalid("debates", self.debates, "at least 1"));
        }
        if !(1..=64).contains(&self.seats) {
            return Err(ShardsError::invalid("seats", self.seats, "1 to 64"));
        }
        if self.witnesses > 16 {
            return Err(ShardsError::invalid("witnesses", self.witnesses, "0 to 16"));
        }
        let c = &self.costs;
        for (name, v) in [
            ("costs.node_ms", c.node_ms),
            ("costs.replica_ms", c.replica_ms),
            ("costs.client_ms", c.client_ms),
            ("costs.bookkeeping_entry_ms", c.bookkeeping_entry_ms),
            ("costs.checkpoint_sign_ms", c.checkpoint_sign_ms),
            ("costs.witness_ms", c.witness_ms),
            ("costs.heartbeat_cpu_ms", c.heartbeat_cpu_ms),
        ] {
            finite_at_least(name, v, 0.0)?;
        }
        if c.node_ms + c.replica_ms + c.client_ms <= 0.0 {
            return Err(ShardsError::invalid(
                "costs.node_ms",
                c.node_ms,
                "a decision that costs some CPU (node, replica and client costs all zero)",
            ));
        }
        share("costs.leader_share", c.leader_share)?;
        share("costs.serial_share", c.serial_share)?;
        share("costs.node_commit_share", c.node_commit_share)?;
        let weights: f64 = c.round_weights.iter().sum();
        if c.round_weights.iter().any(|w| !w.is_finite() || *w < 0.0) || weights <= 0.0 {
            return Err(ShardsError::invalid(
                "costs.round_weights",
                format!("{:?}", c.round_weights),
                "four non-negative weights with a positive sum",
            ));
        }
        let t = &self.timing;
        for (name, v) in [
            ("timing.commit_window_ms", t.commit_window_ms),
            ("timing.net_ms", t.net_ms),
            ("timing.fsync_ms", t.fsync_ms),
            ("timing.witness_rtt_ms", t.witness_rtt_ms),
        ] {
            finite_at_least(name, v, 0.0)?;
        }
        finite_at_least("timing.heartbeat_ms", t.heartbeat_ms, 1.0)?;
        finite_at_least("timing.checkpoint_every_ms", t.checkpoint_every_ms, 1.0)?;
        if t.checkpoint_every_entries < 1 {
            return Err(ShardsError::invalid(
                "timing.checkpoint_every_entries",
                t.checkpoint_every_entries,
                "at least 1",
            ));
        }
        finite_at_least("warmup_s", self.warmup_s, 0.0)?;
        if !(self.measure_s.is_finite() && self.measure_s > 0.0 && self.measure_s <= 3600.0) {
            return Err(ShardsError::invalid(
                "measure_s",
                self.measure_s,
                "more than 0 and at most 3600 simulated seconds",
            ));
        }
        if self.warmup_s > 3600.0 {
            return Err(ShardsError::invalid(
                "warmup_s",
                self.warmup_s,
                "at most 3600",
            ));
        }
        Ok(())
    }

    /// CPU per decision on the decision path, in ms: nodes, replicas and client.
    pub fn decision_cpu_ms(&self) -> f64 {
        self.costs.node_ms + self.costs.replica_ms + self.costs.client_ms
    }

    /// The machine's CPU bound in decisions per second, before any per-group cost: every
    /// core busy with decisions and nothing else.
    pub fn cpu_bound_per_s(&self) -> f64 {
        f64::from(self.cores) * 1000.0 / self.decision_cpu_ms()
    }

    /// One group's ceiling in decisions per second set by its leader's serial apply task
    /// alone (a perfectly balanced load, nothing else on that core's time).
    pub fn lane_bound_per_group_per_s(&self) -> f64 {
        let c = &self.costs;
        let serial_ms = c.replica_ms * c.leader_share * c.serial_share;
        if serial_ms <= 0.0 {
            f64::INFINITY
        } else {
            1000.0 / serial_ms
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(Params::default().validate(), Ok(()));
    }

    #[test]
    fn bad_parameters_are_named() {
        let cases: Vec<(Params, &str)> = vec![
            (
                Params {
                    cores: 0,
                    ..Params::default()
                },
                "cores",
            ),
            (
                Params {
                    groups: 0,
                    ..Params::default()
                },
                "groups",
            ),
            (
                Params {
                    groups: 65,
                    ..Params::default()
                },
                "groups",
            ),
            (
                Params {
                    replicas: 4,
                    ..Params::default()
                },
                "replicas",
            ),
            (
                Params {
                    measure_s: 0.0,
                    ..Params::default()
                },
                "measure_s",
            ),
            (
                Params {
                    costs: Costs {
                        serial_share: 1.5,
                        ..Costs::default()
                    },
                    ..Params::default()
                },
                "costs.serial_share",
            ),
            (
                Params {
                    costs: Costs {
                        node_ms: f64::NAN,
                        ..Costs::default()
                    },
                    ..Params::default()
                },
                "costs.node_ms",
            ),
            (
                Params {
                    costs: Costs {
                        round_weights: [0.0; ROUNDS],
                        ..Costs::default()
                    },
                    ..Params::default()
                },
                "costs.round_weights",
            ),
        ];
        for (p, name) in cases {
            let err = p.validate().expect_err(name);
            assert_eq!(err.parameter(), name, "{err}");
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn bounds_follow_the_measured_figures() {
        let p = Params::default();
        // 2 cores over 78.4 ms per decision
        assert!((p.cpu_bound_per_s() - 2000.0 / 78.4).abs() < 0.01);
        // 33.2 * 0.49 * 0.5 = 8.13 ms serial per decision on the leader
        assert!((p.lane_bound_per_group_per_s() - 1000.0 / 8.134).abs() < 0.1);
    }
}
