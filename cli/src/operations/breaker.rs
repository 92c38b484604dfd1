//! `panel org endorse-breaker`, `panel org breaker` and `panel org breakers`: circuit
//! breakers (docs/SECURITY.md "Circuit breakers"). Member organisations sign an order to
//! pause or lift new motions, closings or verdicts with their roster keys, offline; anyone
//! submits it with enough endorsements; `breakers` shows what is paused, since when, by
//! whom and why.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use panel_machine::features::breakers::{AutoBreaker, BreakerOrder, Scope};
use panel_machine::read::query::BreakersReply;
use panel_machine::{ClientCommand, Query};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, runtime};

/// A breaker order as every endorser signs it.
#[derive(clap::Args, Clone)]
#[command(group(clap::ArgGroup::new("direction").required(true).args(["pause", "lift"])))]
pub struct OrderArgs {
    /// The federation's charter.json (its digest names the federation).
    #[arg(long, value_name = "PATH")]
    charter: PathBuf,
    /// 1 for the first order under the charter, then one more each time (`panel org
    /// breakers` prints the next one).
    #[arg(long)]
    seq: u64,
    /// What to pause or lift: motions, closings, verdicts (comma-separated).
    #[arg(long, value_name = "SCOPES", value_delimiter = ',', required = true)]
    scope: Vec<String>,
    /// Pause the scopes.
    #[arg(long)]
    pause: bool,
    /// Lift the pause on the scopes.
    #[arg(long)]
    lift: bool,
    /// Why; every refused write shows it while the pause holds.
    #[arg(long)]
    reason: String,
    /// Arm the automatic breaker over this many decided motions (10 to 1000).
    #[arg(long, value_name = "N", requires_all = ["auto_max_deadlocks_percent", "auto_max_refused"])]
    auto_window: Option<u32>,
    /// ... pausing new motions when more than this percentage of them deadlocked.
    #[arg(long, value_name = "PERCENT", requires = "auto_window")]
    auto_max_deadlocks_percent: Option<u16>,
    /// ... or when their closes refused more than this many rulings in all.
    #[arg(long, value_name = "N", requires = "auto_window")]
    auto_max_refused: Option<u32>,
    /// ... or when more than this many outcomes were overturned on appeal over the window.
    #[arg(long, value_name = "N", requires = "auto_window")]
    auto_max_overturned: Option<u32>,
    /// ... or as soon as a prior check flags an arbiter (rulings its declared prior
    /// contradicts).
    #[arg(long, requires = "auto_window")]
    auto_on_flagged: bool,
}

impl OrderArgs {
    /// The order these flags describe, with `endorsements`.
    fn order(
        &self,
        endorsements: Vec<panel_machine::command::Endorsement>,
    ) -> Result<BreakerOrder> {
        let scopes = self
            .scope
            .iter()
            .map(|s| {
                Scope::parse(s).with_context(|| {
                    format!("--scope {s:?} is not a scope; use motions, closings or verdicts")
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let automatic = match (
            self.auto_window,
            self.auto_max_deadlocks_percent,
            self.auto_max_refused,
        ) {
            (Some(window), Some(percent), Some(refused)) => {
                if percent > 100 {
                    bail!("--auto-max-deadlocks-percent {percent} is more than 100");
                }
                Some(AutoBreaker {
                    window,
                    max_deadlock_permille: percent * 10,
                    max_refused_rulings: refused,
                    max_overturned: self.auto_max_overturned,
                    on_flagged: self.auto_on_flagged,
                })
            }
            _ => None,
        };
        Ok(BreakerOrder {
            seq: self.seq,
            scopes,
            pause: self.pause,
            reason: self.reason.clone(),
            automatic,
            endorsements,
        })
    }
}

/// `panel org endorse-breaker`: prints this organisation's signature over the order.
pub fn endorse(order: &OrderArgs, org_key: &std::path::Path) -> Result<ExitCode> {
    let charter = crate::operations::org::read_charter(&order.charter)?;
    let key = panel_transport::pki::read_seed_key(org_key)
        .with_context(|| format!("--org-key {}", org_key.display()))?;
    let signature =
        panel_machine::features::breakers::endorse(&charter, &order.order(Vec::new())?, &key)
            .context("signing the breaker order")?;
    println!("{signature}");
    Ok(ExitCode::SUCCESS)
}

/// `panel org breaker`: submits the order with its endorsements.
pub fn submit(
    order: &OrderArgs,
    endorsements: &[String],
    json: bool,
    cluster: &ClusterArgs,
) -> Result<ExitCode> {
    let o = order.order(crate::operations::org::endorsements(endorsements)?)?;
    let scopes = o
        .scopes
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ");
    let done = if o.pause {
        format!(
            "paused federation-wide: {scopes} (order {}); `panel org breakers` shows it",
            o.seq
        )
    } else {
        format!("lifted: {scopes} (order {})", o.seq)
    };
    crate::operations::org::submit(cluster, ClientCommand::SetBreaker(o), done, json)
}

/// `panel org breakers`: what is paused, by whom and why, and the next order's seq.
pub fn show(json: bool, cluster: &ClusterArgs) -> Result<ExitCode> {
    let c = Cluster::connect(cluster)?;
    let r: BreakersReply = runtime()?.block_on(c.read_as(&Query::Breakers))?;
    if json {
        print_json(&serde_json::to_value(&r)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if r.breakers.paused.is_empty() {
        println!("nothing is paused");
    }
    for (scope, p) in &r.breakers.paused {
        println!(
            "{} PAUSED since log index {} by {}: {}",
            scope.name(),
            p.log_index,
            p.by.join(", "),
            p.reason
        );
    }
    match r.breakers.automatic {
        Some(a) => {
            let overturned = a
                .max_overturned
                .map(|n| format!(", more than {n} outcomes overturned on appeal"))
                .unwrap_or_default();
            let flagged = if a.on_flagged {
                ", or any arbiter a prior check flags,"
            } else {
                ""
            };
            println!(
                "automatic breaker armed: over the last {} decided motions, more than {} deadlocked, more than {} refused rulings{overturned}{flagged} pause new motions ({} counted so far)",
                a.window,
                panel_machine::features::breakers::percent(u64::from(a.max_deadlock_permille)),
                a.max_refused_rulings,
                r.breakers.recent.len()
            )
        }
        None => println!("automatic breaker: not armed"),
    }
    println!("next order: --seq {}", r.next_seq);
    Ok(ExitCode::SUCCESS)
}
