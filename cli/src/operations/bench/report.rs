//! The bench's figures, computed from what the run collected, and their two renderings:
//! text for people and JSON (`--json`) for scripts. Pure: no clock, no I/O.

use std::collections::BTreeMap;

use panel_machine::Acceptance;
use panel_machine::MotionStatus;
use serde::Serialize;

use super::bound::Bound;
use super::latency::Percentiles;
use super::load::Driven;
use super::timeline::{Cosigned, IndexClock, Milestones, milestones};
use super::usage::Snapshot;

/// What the run was.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub build: &'static str,
    pub version: &'static str,
    pub replicas: usize,
    pub witnesses: usize,
    pub arbiters: usize,
    pub seats: usize,
    pub debates: usize,
    pub authors: usize,
    pub commit_window_ms: u64,
    pub decisions_asked: usize,
    pub concurrency: usize,
    /// The write limits changed for the bench's group, as its replica configs set them.
    pub limits: String,
}

/// Decisions made and what failed.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    pub decided: usize,
    pub accepted: usize,
    pub deadlocked: usize,
    /// Why the deadlocked motions deadlocked, as their records say: reason -> motions.
    pub deadlock_reasons: BTreeMap<String, usize>,
    pub seconds: f64,
    pub decisions_per_s: f64,
    pub accepted_per_s: f64,
    /// Writes that became no decision: reason -> (count, first message).
    pub failed: BTreeMap<String, (usize, String)>,
    /// Rate-limit refusals waited out and retried, by limit.
    pub retried: BTreeMap<String, usize>,
}

/// Milliseconds from sending the claim to each milestone.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// The whole decision: claim sent -> close applied (decision and record entry).
    pub decision: Option<Percentiles>,
    pub opened: Option<Percentiles>,
    pub commitments_logged: Option<Percentiles>,
    pub reveals_applied: Option<Percentiles>,
    pub closed: Option<Percentiles>,
    pub seen_by_client: Option<Percentiles>,
    pub cosigned_checkpoint: Option<Percentiles>,
    /// Median gap between stamped entries: the scale of the reveal and close times'
    /// interpolation.
    pub interpolation_gap_ms: f64,
    pub cosigned_poll_ms: u64,
}

/// CPU, disk and network per decision.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// CPU ms per decision, by process.
    pub cpu_ms_per_decision: BTreeMap<String, f64>,
    pub cpu_ms_per_decision_replicas: f64,
    pub cpu_ms_per_decision_all: f64,
    /// Growth of each replica's data folder per decision, in bytes.
    pub disk_bytes_per_decision: BTreeMap<String, f64>,
    /// Loopback bytes per decision, every process on the machine included.
    pub loopback_bytes_per_decision: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub setup: Setup,
    pub throughput: Throughput,
    pub latency: Latency,
    pub cost: Cost,
    pub bound: Bound,
    /// Real-path decisions/s over the bound's.
    pub ratio_to_bound: f64,
}

/// Everything the run collected.
pub struct Collected<'a> {
    pub setup: Setup,
    pub driven: &'a Driven,
    pub cosigned: &'a [Cosigned],
    pub before: &'a Snapshot,
    pub after: &'a Snapshot,
    pub bound: Bound,
    pub cosigned_poll_ms: u64,
}

/// The report of one run.
pub fn build(c: Collected<'_>) -> Report {
    let d = &c.driven.decisions;
    let stamps: Vec<(u64, u64)> = c.driven.closing_stamp.into_iter().collect();
    let clock = IndexClock::from_motions(d.iter().map(|x| &x.motion), &stamps);
    let ms: Vec<Milestones> = d
        .iter()
        .map(|x| milestones(&x.motion, x.submitted_ms, x.seen_ms, &clock, c.cosigned))
        .collect();
    let accepted = d
        .iter()
        .filter(|x| matches!(&x.motion.status, MotionStatus::Decided(a) if a.is_accepted()))
        .count();
    let mut deadlock_reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut deadlocked = 0;
    for x in d {
        if let MotionStatus::Decided(Acceptance::Deadlocked(dissent)) = &x.motion.status {
            deadlocked += 1;
            for r in &dissent.reasons {
                *deadlock_reasons.entry(r.to_string()).or_default() += 1;
            }
        }
    }
    let seconds = c.driven.finished_ms.saturating_sub(c.driven.started_ms) as f64 / 1000.0;
    let decided = d.len();
    let per = |total: f64| {
        if decided == 0 {
            0.0
        } else {
            total / decided as f64
        }
    };
    let cpu: BTreeMap<String, f64> = c
        .after
        .cpu
        .iter()
        .map(|(role, s)| {
            let was = c.before.cpu.get(role).copied().unwrap_or(0.0);
            (role.clone(), per((s - was) * 1000.0))
        })
        .collect();
    let replicas_cpu = cpu
        .iter()
        .filter(|(r, _)| r.starts_with("replica"))
        .map(|(_, v)| v)
        .sum();
    let all_cpu = cpu.values().sum();
    let disk = c
        .after
        .disk
        .iter()
        .map(|(r, b)| {
            let was = c.before.disk.get(r).copied().unwrap_or(0);
            (r.clone(), per(b.saturating_sub(was) as f64))
        })
        .collect();
    let loopback = c
        .before
        .loopback
        .zip(c.after.loopback)
        .map(|(b, a)| per(a.saturating_sub(b) as f64));
    let decisions_per_s = if seconds > 0.0 {
        decided as f64 / seconds
    } else {
        0.0
    };
    let closed = Percentiles::of(ms.iter().filter_map(|m| m.closed));
    Report {
        setup: c.setup,
        throughput: Throughput {
            decided,
            accepted,
            deadlocked,
            deadlock_reasons,
            seconds,
            decisions_per_s,
            accepted_per_s: if seconds > 0.0 {
                accepted as f64 / seconds
            } else {
                0.0
            },
            failed: c.driven.failures.clone(),
            retried: c.driven.retried.clone(),
        },
        latency: Latency {
            decision: closed,
            opened: Percentiles::of(ms.iter().map(|m| m.opened)),
            commitments_logged: Percentiles::of(ms.iter().filter_map(|m| m.committed)),
            reveals_applied: Percentiles::of(ms.iter().filter_map(|m| m.revealed)),
            closed,
            seen_by_client: Percentiles::of(ms.iter().map(|m| m.seen)),
            cosigned_checkpoint: Percentiles::of(ms.iter().filter_map(|m| m.cosigned)),
            interpolation_gap_ms: clock.median_gap_ms(),
            cosigned_poll_ms: c.cosigned_poll_ms,
        },
        cost: Cost {
            cpu_ms_per_decision: cpu,
            cpu_ms_per_decision_replicas: replicas_cpu,
            cpu_ms_per_decision_all: all_cpu,
            disk_bytes_per_decision: disk,
            loopback_bytes_per_decision: loopback,
        },
        ratio_to_bound: if c.bound.decisions_per_s > 0.0 {
            decisions_per_s / c.bound.decisions_per_s
        } else {
            0.0
        },
        bound: c.bound,
    }
}

fn row(name: &str, p: Option<&Percentiles>) -> String {
    match p {
        Some(p) => format!(
            "  {name:<34} p50 {:>8.1}  p99 {:>8.1}  p999 {:>8.1}  max {:>8.1}  (n {})",
            p.p50_ms, p.p99_ms, p.p999_ms, p.max_ms, p.n
        ),
        None => format!("  {name:<34} p50 -  p99 -  p999 -  (no decision reached it)"),
    }
}

impl Report {
    /// The report as text, one figure a line.
    pub fn render(&self) -> String {
        let s = &self.setup;
        let t = &self.throughput;
        let l = &self.latency;
        let c = &self.cost;
        let b = &self.bound;
        let mut out = vec![
            format!(
                "panel bench ({} build, {}): the real path, {} replicas over mutual TLS, {} witnesses, {} arbiter nodes with simulated judges (labelled simulated), {}-seat panels, {} debate(s), {} contributors",
                s.build,
                s.version,
                s.replicas,
                s.witnesses,
                s.arbiters,
                s.seats,
                s.debates,
                s.authors
            ),
            format!(
                "load: {} claims asked, at most {} in flight; commit window {} ms; bench group limits: {}",
                s.decisions_asked, s.concurrency, s.commit_window_ms, s.limits
            ),
            String::new(),
            format!(
                "decisions/s at full load: {:.1}  ({} decided in {:.2} s: {} accepted, {:.1}/s; {} deadlocked)",
                t.decisions_per_s, t.decided, t.seconds, t.accepted, t.accepted_per_s, t.deadlocked
            ),
        ];
        for (reason, n) in &t.deadlock_reasons {
            out.push(format!("  deadlocked: {n} x {reason}"));
        }
        for (reason, (n, first)) in &t.failed {
            out.push(format!("  failed: {n} x {reason}; first: {first}"));
        }
        for (reason, n) in &t.retried {
            out.push(format!("  retried: {n} x {reason}"));
        }
        out.push(String::new());
        out.push("latency from the claim sent, ms:".into());
        out.push(row("decision (close applied)", l.decision.as_ref()));
        out.push(row("  draw/open (motion opened)", l.opened.as_ref()));
        out.push(row("  commit logged", l.commitments_logged.as_ref()));
        out.push(row("  reveals applied", l.reveals_applied.as_ref()));
        out.push(row("  close applied", l.closed.as_ref()));
        out.push(row(
            "  seen decided by the client",
            l.seen_by_client.as_ref(),
        ));
        out.push(row(
            "  cosigned checkpoint covering it",
            l.cosigned_checkpoint.as_ref(),
        ));
        out.push(format!(
            "  (reveal and close times interpolated between leader-stamped entries, median gap {:.1} ms; checkpoints read every {} ms)",
            l.interpolation_gap_ms, l.cosigned_poll_ms
        ));
        out.push(String::new());
        out.push(format!(
            "CPU per decision: {:.3} ms all processes, {:.3} ms the three replicas",
            c.cpu_ms_per_decision_all, c.cpu_ms_per_decision_replicas
        ));
        for (role, ms) in &c.cpu_ms_per_decision {
            out.push(format!("  CPU ms per decision  {role:<40} {ms:>8.3}"));
        }
        for (replica, bytes) in &c.disk_bytes_per_decision {
            out.push(format!(
                "bytes per decision on disk, {replica}: {bytes:.0} (data folder growth / decisions)"
            ));
        }
        out.push(match c.loopback_bytes_per_decision {
            Some(b) => format!(
                "bytes per decision over the network: {b:.0} (loopback interface, every process on the machine)"
            ),
            None => "bytes per decision over the network: not measured (no /proc/net/dev)".into(),
        });
        out.push(String::new());
        out.push(format!(
            "verification bound: {:.0} five-ruling decisions/s ({:.0} strict ed25519 verifications/s on {} threads, {} decisions in {:.2} s, same run)",
            b.decisions_per_s, b.verifications_per_s, b.threads, b.decisions, b.seconds
        ));
        out.push(format!(
            "ratio real path / bound: {:.3} ({:.1} %)",
            self.ratio_to_bound,
            self.ratio_to_bound * 100.0
        ));
        out.join("\n")
    }
}
