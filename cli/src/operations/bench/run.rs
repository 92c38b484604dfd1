//! One bench run, phase by phase: the bound, the federation, the load, the watch of the
//! witnesses, the counters before and after, and the report.

use std::path::Path;

use anyhow::{Context, Result};
use panel_coordinator::local::Supervisor;

use super::group::{self, Sizing};
use super::report::{self, Collected, Report, Setup};
use super::usage::Snapshot;
use super::{Args, bound, cosigning, load};
use crate::output::say;

/// The local group's replicas and witnesses (`panel up`'s launcher).
const REPLICAS: usize = 3;
const WITNESSES: usize = 2;

pub async fn bench(args: &Args, state: &Path, cluster: &mut Supervisor) -> Result<Report> {
    say!(
        "measuring the signature-verification bound: {} five-ruling decisions per core ...",
        args.bound_decisions
    );
    let per_core = args.bound_decisions;
    let bound = tokio::task::spawn_blocking(move || bound::measure(per_core))
        .await
        .context("the bound's threads")??;
    say!(
        "  {:.0} decisions/s ({:.0} verifications/s on {} threads)",
        bound.decisions_per_s,
        bound.verifications_per_s,
        bound.threads
    );
    let sizing = Sizing {
        arbiters: args.arbiters,
        seats: args.seats,
        debates: args.debates,
        authors: args.authors(),
        commit_ms: args.commit_ms,
    };
    let group = group::start(cluster, state, sizing).await?;
    let follower = group
        .addrs
        .iter()
        .find(|a| **a != group.leader)
        .unwrap_or(&group.leader);
    let reader = panel_coordinator::client::coordinator(&group.client_tls, follower)?;
    let watch = cosigning::start(reader);
    say!(
        "driving {} claims, at most {} in flight ...",
        args.decisions,
        args.concurrency
    );
    let before = Snapshot::take(&group.state, REPLICAS)?;
    let driven = load::drive(&group, args.decisions, args.concurrency, args.commit_ms).await?;
    let after = Snapshot::take(&group.state, REPLICAS)?;
    let last_close = driven
        .decisions
        .iter()
        .map(|d| d.seen_ms)
        .max()
        .unwrap_or(driven.finished_ms);
    say!("waiting for the witnesses to cosign a checkpoint after the last decision ...");
    let cosigned = watch.finish(last_close).await?;
    let limits = group::limits();
    Ok(report::build(Collected {
        setup: Setup {
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            version: env!("CARGO_PKG_VERSION"),
            replicas: REPLICAS,
            witnesses: WITNESSES,
            arbiters: args.arbiters,
            seats: args.seats,
            debates: args.debates,
            authors: sizing.authors,
            commit_window_ms: args.commit_ms,
            decisions_asked: args.decisions,
            concurrency: args.concurrency,
            limits: format!(
                "per identity, per organisation and global writes raised to burst {} and {}/min (defaults elsewhere)",
                limits.identity_burst.unwrap_or_default(),
                limits.identity_per_minute.unwrap_or_default()
            ),
        },
        driven: &driven,
        cosigned: &cosigned,
        before: &before,
        after: &after,
        bound,
        cosigned_poll_ms: cosigning::POLL.as_millis() as u64,
    }))
}
