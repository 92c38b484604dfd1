//! The load: claims threaded into the bench's debates by registered, signing
//! contributors, each opening a merge motion the leader draws a panel for, signs and puts
//! to the seated nodes; at most `concurrency` decisions in flight. Each writer then reads
//! its motion from a follower (local reads, so polling costs the leader nothing) until it
//! is decided.

use panel_machine::RefusalCode;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use crucible::contribution::Contribution;
use panel_coordinator::client::failover::{Failover, WriteOutcome, decode_reply};
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::debates::SubmissionHints;
use panel_machine::read::query::MotionReply;
use panel_machine::reply::ContributeReply;
use panel_machine::{ClientCommand, ContributionSubmission, Query};
use panel_machine::{Motion, MotionStatus};
use serde_json::json;
use tokio::sync::Mutex;
use tonic::transport::Channel;

use super::clock::unix_ms;
use super::group::{Author, Group, is_intake_limit};

/// One decision as the writer saw it, with the motion's own record of it.
pub struct Decision {
    /// When the writer sent the claim (Unix ms).
    pub submitted_ms: u64,
    /// When the writer first read the motion decided (Unix ms).
    pub seen_ms: u64,
    pub motion: Motion,
}

/// What the load did: the decisions, and every write that did not become one, by reason.
pub struct Driven {
    pub decisions: Vec<Decision>,
    /// Reason -> (count, first message).
    pub failures: BTreeMap<String, (usize, String)>,
    /// Refusals that were waited out and retried, by reason.
    pub retried: BTreeMap<String, usize>,
    pub started_ms: u64,
    pub finished_ms: u64,
    /// Where one more motion opened after the load (log index, leader Unix ms): a stamp
    /// after every close, for the timeline.
    pub closing_stamp: Option<(u64, u64)>,
}

/// How long a writer waits for its motion before counting it as not decided.
const DECISION_PATIENCE: Duration = Duration::from_secs(60);
/// Retries of one claim refused by a rate limit before it counts as failed.
const LIMIT_RETRIES: usize = 100;

struct Shared {
    next: AtomicUsize,
    total: usize,
    authors: Vec<Author>,
    debates: Vec<String>,
    commit_ms: u64,
    failures: Mutex<BTreeMap<String, (usize, String)>>,
    retried: Mutex<BTreeMap<String, usize>>,
}

impl Shared {
    async fn fail(&self, reason: &str, message: String) {
        let mut f = self.failures.lock().await;
        f.entry(reason.to_owned()).or_insert((0, message)).0 += 1;
    }

    async fn retry(&self, reason: &str) {
        *self
            .retried
            .lock()
            .await
            .entry(reason.to_owned())
            .or_default() += 1;
    }
}

/// Drives `total` decisions through `group` with `concurrency` writers.
pub async fn drive(
    group: &Group,
    total: usize,
    concurrency: usize,
    commit_ms: u64,
) -> Result<Driven> {
    let follower = group
        .addrs
        .iter()
        .find(|a| **a != group.leader)
        .unwrap_or(&group.leader)
        .clone();
    let reader = panel_coordinator::client::coordinator(&group.client_tls, &follower)
        .with_context(|| format!("a reader of {follower}"))?;
    // The leader first: a writer that starts at a follower pays a forwarding hop on
    // every write, which a client that learned the leader does not.
    let mut addrs = vec![group.leader.clone()];
    addrs.extend(group.addrs.iter().filter(|a| **a != group.leader).cloned());
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        total,
        authors: group.authors.clone(),
        debates: group.debates.clone(),
        commit_ms,
        failures: Mutex::new(BTreeMap::new()),
        retried: Mutex::new(BTreeMap::new()),
    });
    let started_ms = unix_ms();
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency.max(1) {
        let failover = Failover::new(
            addrs.clone(),
            group.client_tls.clone(),
            Failover::unique_client_id("panel-bench"),
        );
        tasks.push(tokio::spawn(writer(
            Arc::clone(&shared),
            failover,
            reader.clone(),
        )));
    }
    let mut decisions = Vec::with_capacity(total);
    for t in tasks {
        decisions.extend(t.await.context("a bench writer panicked")?);
    }
    let finished_ms = unix_ms();
    let closing_stamp = closing_stamp(&shared, addrs, group, reader).await;
    let failures = std::mem::take(&mut *shared.failures.lock().await);
    let retried = std::mem::take(&mut *shared.retried.lock().await);
    Ok(Driven {
        decisions,
        failures,
        retried,
        started_ms,
        finished_ms,
        closing_stamp,
    })
}

/// Opens one more motion (claim number `total`, not counted) and reads where it opened;
/// `None` when it opened none.
async fn closing_stamp(
    shared: &Shared,
    addrs: Vec<String>,
    group: &Group,
    mut reader: CoordinatorClient<Channel>,
) -> Option<(u64, u64)> {
    let mut failover = Failover::new(
        addrs,
        group.client_tls.clone(),
        Failover::unique_client_id("panel-bench-stamp"),
    );
    let (_, motion_id) = submit(shared, &mut failover, shared.total).await?;
    let q = Query::Motion { motion_id };
    let r = panel_coordinator::client::read_on(&mut reader, &q, false)
        .await
        .ok()?;
    let m = serde_json::from_str::<MotionReply>(&r.result_json)
        .ok()?
        .motion?;
    Some((m.opened_log_index, m.opened_at_ms))
}

/// One writer: takes the next claim number until all are taken, writes the claim and
/// waits for its motion's decision.
async fn writer(
    shared: Arc<Shared>,
    mut failover: Failover,
    mut reader: CoordinatorClient<Channel>,
) -> Vec<Decision> {
    let mut done = Vec::new();
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        if i >= shared.total {
            return done;
        }
        let Some((submitted_ms, motion_id)) = submit(&shared, &mut failover, i).await else {
            continue;
        };
        tokio::time::sleep(Duration::from_millis(shared.commit_ms)).await;
        match wait_decided(&mut reader, &motion_id).await {
            Ok(Some((motion, seen_ms))) => done.push(Decision {
                submitted_ms,
                seen_ms,
                motion,
            }),
            Ok(None) => {
                shared
                    .fail(
                        "not decided in 60 s",
                        format!("{motion_id} was still open after 60 s"),
                    )
                    .await
            }
            Err(e) => shared.fail("read failed", format!("{e:#}")).await,
        }
    }
}

/// Writes claim `i`, retrying rate-limit refusals; returns when it was sent and the
/// merge motion it opened, or counts why it opened none.
async fn submit(shared: &Shared, failover: &mut Failover, i: usize) -> Option<(u64, String)> {
    let author = &shared.authors[i % shared.authors.len()];
    let debate = &shared.debates[i % shared.debates.len()];
    for _ in 0..LIMIT_RETRIES {
        let command = match claim(failover, author, debate, i) {
            Ok(c) => c,
            Err(e) => {
                shared.fail("claim not signed", format!("{e:#}")).await;
                return None;
            }
        };
        let submitted_ms = unix_ms();
        match failover.write(&command).await {
            Ok(WriteOutcome::Applied(v)) => {
                return match decode_reply::<ContributeReply>("the contribution", v) {
                    Ok(r) if !r.opened.is_empty() => Some((submitted_ms, r.opened[0].clone())),
                    Ok(r) => {
                        shared
                            .fail(
                                "no motion opened",
                                format!("claim {i} in {} opened no motion", r.debate_id),
                            )
                            .await;
                        None
                    }
                    Err(e) => {
                        shared.fail("reply not decoded", e.to_string()).await;
                        None
                    }
                };
            }
            Ok(WriteOutcome::Refused {
                code: RefusalCode::RateLimited,
                ..
            }) => {
                shared.retry("rate_limited (apply)").await;
            }
            Ok(WriteOutcome::Refused { code, message }) => {
                shared.fail(&format!("refused: {code}"), message).await;
                return None;
            }
            Err(e) if is_intake_limit(&e.to_string()) => {
                shared.retry("rate limited at intake").await;
            }
            Err(e) => {
                shared.fail("write failed", e.to_string()).await;
                return None;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    shared
        .fail(
            "rate-limited past retries",
            format!("claim {i} was refused by a rate limit {LIMIT_RETRIES} times"),
        )
        .await;
    None
}

/// Claim `i` as a new thread by `author`, signed over the ids the write will carry.
fn claim(failover: &Failover, author: &Author, debate: &str, i: usize) -> Result<ClientCommand> {
    let contribution: Contribution = serde_json::from_value(json!({
        "op": "thread", "title": format!("Pilot site {i}"), "claim": {
            "type": "logical",
            "assertion": format!("The departments of pilot site {i} kept their service levels."),
            "grounds": "The site's service reports show the same response times before and during the pilot.",
            "warrant": "If service held while hours fell, the shorter week did not cost the public.",
            "evidence": [],
            "qualifier": "probable",
        },
    }))
    .context("the bench's claim")?;
    let mut sub = ContributionSubmission {
        debate_id: debate.to_owned(),
        author: author.name.clone(),
        side: if i.is_multiple_of(2) { "A" } else { "B" }.into(),
        model_family: None,
        contribution,
        hints: SubmissionHints {
            answer: Some(crucible::motion::Answer::Yes),
            verify: None,
            relevance: Some(1.0),
        },
        signature: None,
        random_sample: false,
    };
    let (client_id, request_id) = failover.next_ids();
    sub.signature = Some(panel_machine::authorship::sign(
        &author.key,
        &sub,
        &client_id,
        request_id,
    )?);
    Ok(ClientCommand::Contribute(sub))
}

/// Reads `motion_id` from the follower until it is decided; `None` after the patience.
async fn wait_decided(
    reader: &mut CoordinatorClient<Channel>,
    motion_id: &str,
) -> Result<Option<(Motion, u64)>> {
    let q = Query::Motion {
        motion_id: motion_id.to_owned(),
    };
    let start = tokio::time::Instant::now();
    while start.elapsed() < DECISION_PATIENCE {
        let r = panel_coordinator::client::read_on(reader, &q, false).await?;
        // Most reads find the motion open: skip decoding those.
        if !r.result_json.contains("\"status\":\"Open\"") {
            let seen_ms = unix_ms();
            let reply: MotionReply = serde_json::from_str(&r.result_json)?;
            if let Some(m) = reply.motion
                && matches!(m.status, MotionStatus::Decided(_))
            {
                return Ok(Some((m, seen_ms)));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(None)
}
