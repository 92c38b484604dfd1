//! The sweep behind docs/SHARDING.md: for each core count and each group count, one
//! closed-loop run at a saturating number of clients (the capacity) and one open-loop run
//! per offered load (the latency). Loads are fractions of the machine's CPU bound for that
//! core count, the same absolute rates for every group count, so a row compares group
//! counts at equal demand.

use std::fmt::Write as _;

use serde::Serialize;

use super::error::ShardsError;
use super::federation::{self, Load, RunResult};
use super::params::Params;

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// Everything but the cores and groups, which the sweep sets.
    pub base: Params,
    pub cores: Vec<u32>,
    pub groups: Vec<u32>,
    /// Offered loads as fractions of the machine's CPU bound (`Params::cpu_bound_per_s`).
    pub load_fractions: Vec<f64>,
    /// Clients of the capacity run, per core: enough that the run is CPU- or lane-bound,
    /// not client-bound. Each decision takes at least one commit window (0.3 s) and a core
    /// decides about 13 per second, so 16 per core is about four times what keeps every
    /// core busy.
    pub clients_per_core: u32,
}

impl Default for Sweep {
    fn default() -> Self {
        Self {
            base: Params::default(),
            cores: vec![2, 8, 32],
            groups: vec![1, 2, 4, 8, 16],
            load_fractions: vec![0.5, 0.8],
            clients_per_core: 16,
        }
    }
}

/// One core count and group count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub cores: u32,
    pub groups: u32,
    /// The machine's CPU bound (decisions only, no per-group cost), decisions/s.
    pub cpu_bound_per_s: f64,
    /// The groups' serial-apply bound with a perfectly even load, decisions/s.
    pub lane_bound_per_s: f64,
    /// The closed-loop run.
    pub capacity: RunResult,
    /// One open-loop run per load fraction, in the sweep's order.
    pub loads: Vec<RunResult>,
}

/// Every row of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub sweep: Sweep,
    pub rows: Vec<Row>,
}

/// Runs the sweep; refuses an empty list or any configuration `Params::validate` refuses.
pub fn run(sweep: &Sweep) -> Result<Report, ShardsError> {
    if sweep.cores.is_empty() {
        return Err(ShardsError::EmptySweep { parameter: "cores" });
    }
    if sweep.groups.is_empty() {
        return Err(ShardsError::EmptySweep {
            parameter: "groups",
        });
    }
    for f in &sweep.load_fractions {
        if !(f.is_finite() && *f > 0.0 && *f <= 10.0) {
            return Err(ShardsError::invalid(
                "load_fractions",
                f,
                "fractions of the CPU bound above 0 and at most 10",
            ));
        }
    }
    if !(1..=4096).contains(&sweep.clients_per_core) {
        return Err(ShardsError::invalid(
            "clients_per_core",
            sweep.clients_per_core,
            "1 to 4096",
        ));
    }
    let mut rows = Vec::new();
    for &cores in &sweep.cores {
        for &groups in &sweep.groups {
            let p = Params {
                cores,
                groups,
                ..sweep.base.clone()
            };
            p.validate()?;
            let bound = p.cpu_bound_per_s();
            let clients = sweep.clients_per_core.saturating_mul(cores);
            let capacity = federation::run(&p, Load::Closed { clients })?;
            let mut loads = Vec::new();
            for f in &sweep.load_fractions {
                loads.push(federation::run(&p, Load::Open { per_s: bound * f })?);
            }
            rows.push(Row {
                cores,
                groups,
                cpu_bound_per_s: bound,
                lane_bound_per_s: p.lane_bound_per_group_per_s() * f64::from(groups),
                capacity,
                loads,
            });
        }
    }
    Ok(Report {
        sweep: sweep.clone(),
        rows,
    })
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 10_000.0 => format!("{:.1} s", x / 1000.0),
        Some(x) => format!("{x:.0}"),
        None => "-".to_owned(),
    }
}

/// The decided cell carries the CPU share at that load and, when overloaded, what was
/// decided; the indexed cell beside it only its percentiles.
fn latency_cell(r: &RunResult, indexed: bool) -> String {
    match (r.saturated, indexed) {
        (true, false) => format!("overloaded ({:.1}/s decided)", r.throughput_per_s),
        (true, true) => "overloaded".to_owned(),
        (false, false) => format!(
            "{} / {} ({:.0} %)",
            ms(r.decided_p50_ms),
            ms(r.decided_p99_ms),
            r.cpu_utilisation * 100.0
        ),
        (false, true) => format!("{} / {}", ms(r.indexed_p50_ms), ms(r.indexed_p99_ms)),
    }
}

impl Report {
    /// One Markdown table per core count.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let mut cores: Vec<u32> = self.rows.iter().map(|r| r.cores).collect();
        cores.dedup();
        for c in cores {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.cores == c).collect();
            let Some(first) = rows.first() else { continue };
            let _ = writeln!(
                out,
                "**{c} cores** (CPU bound {:.1} decisions/s; offered loads {}):\n",
                first.cpu_bound_per_s,
                first
                    .loads
                    .iter()
                    .map(|l| match l.load {
                        Load::Open { per_s } => format!("{per_s:.1}/s"),
                        Load::Closed { clients } => format!("{clients} clients"),
                    })
                    .collect::<Vec<_>>()
                    .join(" and ")
            );
            let mut header = String::from(
                "| groups | capacity, decisions/s (CPU busy) | serial-apply bound/s | busiest group |",
            );
            let mut rule = String::from("|---:|---:|---:|---:|");
            for l in &first.loads {
                if let Load::Open { per_s } = l.load {
                    let _ = write!(
                        header,
                        " at {per_s:.1}/s: decided p50 / p99 ms (CPU) | at {per_s:.1}/s: indexed p50 / p99 ms |"
                    );
                    rule.push_str("---|---|");
                }
            }
            let _ = writeln!(out, "{header}\n{rule}");
            for r in rows {
                let mut line = format!(
                    "| {} | {:.1} ({:.0} %) | {:.0} | {:.0} % |",
                    r.groups,
                    r.capacity.throughput_per_s,
                    r.capacity.cpu_utilisation * 100.0,
                    r.lane_bound_per_s,
                    r.capacity.busiest_group_share * 100.0
                );
                for l in &r.loads {
                    let _ = write!(
                        line,
                        " {} | {} |",
                        latency_cell(l, false),
                        latency_cell(l, true)
                    );
                }
                let _ = writeln!(out, "{line}");
            }
            out.push('\n');
        }
        out
    }
}
