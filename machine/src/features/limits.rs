//! Write limits per authenticated identity and per organisation, enforced in apply
//! (docs/SECURITY.md, "Floods"). The leader's intake keeps fast token buckets of the same
//! shape, but those are leader-local and start full after a failover; these live in the
//! replicated state, are computed from the identity the leader stamped on each logged
//! [`Item`](crate::command::Item) and the batch time, and so every replica, including a
//! freshly elected leader's, refuses the same over-quota writes.
//!
//! Everything here is integer arithmetic over `time_ms` (no clock, no floats), so apply
//! stays deterministic. A write is limited only when its item carries a [`Writer`] and its
//! batch a [`LimitPolicy`]: entries logged before this existed decode with neither and
//! replay exactly as they applied.
//!
//! **Policy versions.** A policy only ever gains optional fields, and an entry applies
//! under exactly the fields its batch was stamped with, so an entry logged before a field
//! existed decodes without it and replays as it applied: `global` (the caps across all
//! writers), then `fair_share` (those caps shared between organisations, [`FairShare`])
//! and `stored_replies` (which refusals leave a deduplication row, and how many rows one
//! writer may keep, [`ReplyBounds`]).
//!
//! **Fair shares of the global caps** ([`FairShare`]). Under a policy with `fair_share`
//! every global bucket (all client writes, and each costly kind's) is shared between
//! *classes* of writers: each organisation is one class, and anonymous callers together
//! are one more, with a smaller weight (under a charter, certificates of no member
//! organisation count with them). Under a charter the classes sharing a cap are always its
//! member organisations and the anonymous callers, so a class that has not written yet
//! still has its share when it does; without one (a loopback cluster, whose writers are all
//! anonymous, and tests) every class that wrote within its share's refill time and the
//! writer's own. A class's share
//! is its weight's part of the cap's burst and rate, and the state keeps how much of it
//! each class has used (`LimitsState::shares`, leaking at the share's rate). A write takes
//! a token from the global bucket as before, and is admitted only if its class still has a
//! token of its share, or if the global bucket holds a token beyond the unused shares of
//! every other class (so a lone writer may still use capacity nobody else claims: the cap's
//! rate is not wasted, but another class's burst is never taken). So one organisation's
//! flood uses up its own share and whatever the others leave, never theirs: the refusal
//! (`rate_limited`) names the share, the organisation and when its share holds a token.
//! The global bucket holds at least the unused shares of the classes that share it, so a
//! class with a token of its share finds one in the global bucket too. (Without a charter
//! a class arriving after others borrowed the bucket empty waits for one refill; once it
//! has written, no one else may borrow its share.)

use crate::log::refusal_code::RefusalCode;
use std::collections::BTreeMap;

use thiserror::Error;

use crate::command::{ClientCommand, Command, ItemReply};
pub use crate::log::limit_policy::{
    ANONYMOUS, FairShare, GlobalRates, LimitPolicy, Rate, ReplyBounds, Writer,
};
pub use crate::model::limits_state::{Bucket, LimitsState};
use crate::model::{MotionStatus, State};
use crate::reply::Reply;

/// The write kinds with a global bucket of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GlobalKind {
    Contributions,
    Debates,
    PanelRequests,
    Registrations,
}

impl GlobalKind {
    const ALL: [GlobalKind; 4] = [
        GlobalKind::Contributions,
        GlobalKind::Debates,
        GlobalKind::PanelRequests,
        GlobalKind::Registrations,
    ];

    fn of(c: &ClientCommand) -> Option<GlobalKind> {
        match c {
            ClientCommand::Contribute(_) | ClientCommand::SubmitRunInput(_) => {
                Some(GlobalKind::Contributions)
            }
            ClientCommand::CreateDebate(_) | ClientCommand::StartRun(_) => {
                Some(GlobalKind::Debates)
            }
            ClientCommand::AskPanel(_) => Some(GlobalKind::PanelRequests),
            ClientCommand::RegisterArbiter(_) | ClientCommand::RegisterContributor(_) => {
                Some(GlobalKind::Registrations)
            }
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            GlobalKind::Contributions => "contributions",
            GlobalKind::Debates => "debates",
            GlobalKind::PanelRequests => "panel-requests",
            GlobalKind::Registrations => "registrations",
        }
    }

    fn rate(self, g: &GlobalRates) -> Rate {
        match self {
            GlobalKind::Contributions => g.contributions,
            GlobalKind::Debates => g.debates,
            GlobalKind::PanelRequests => g.panel_requests,
            GlobalKind::Registrations => g.registrations,
        }
    }
}

/// Bucket key of the all-writers cap.
const ALL_WRITES_KEY: &str = "global:all";

/// Seconds until a bucket at `milli` holds one token again (at least 1).
fn retry_secs(milli: u64, rate: Rate) -> u64 {
    let missing = 1000u64.saturating_sub(milli);
    // ms = missing milli-tokens / (per_minute / 60 milli-tokens per ms).
    let ms = (missing * 60).div_ceil(rate.per_minute());
    ms.div_ceil(1000).max(1)
}

/// How often (in batch time) apply prunes refilled buckets and decided motions.
pub const PRUNE_EVERY_MS: u64 = 60_000;

/// Why apply refused a write over a limit; the message names the limit, who hit it and
/// when to retry.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LimitError {
    #[error(
        "rate limited: the {limit} limit ({per_minute} writes per minute, bursts of {burst}) of {who} is used up; retry in {retry_secs} s"
    )]
    RateLimited {
        limit: &'static str,
        who: String,
        per_minute: u32,
        burst: u32,
        retry_secs: u64,
    },
    #[error(
        "rate limited: {who} has used up its fair share of the global limit on {limit} (bursts of {share_burst}, {share_per_minute} writes per minute: {weight} of the {total_weight} parts shared by {classes} writer classes), and what the cap has left is held for the other classes' shares; retry in {retry_secs} s"
    )]
    FairShare {
        /// The global bucket, e.g. "all writers' debates".
        limit: String,
        /// "organisation <name>" or "anonymous callers (no client certificate)".
        who: String,
        share_burst: u64,
        share_per_minute: u64,
        weight: u64,
        total_weight: u64,
        classes: usize,
        retry_secs: u64,
    },
    #[error(
        "{who} has {rows} deduplication replies stored within the last 24 h, the most {bound_of} may keep (at most {bound}); this write was refused and stored nothing; retry in {retry_secs} s, when its oldest stored replies expire"
    )]
    StoredReplies {
        who: String,
        bound_of: &'static str,
        rows: u64,
        bound: u32,
        retry_secs: u64,
    },
    #[error(
        "identity {identity} has convened {count} debates, the most one identity may (replica option --debates-per-identity); contribute to an existing debate"
    )]
    DebatesPerIdentity { identity: String, count: u32 },
    #[error(
        "debate {debate} holds {count} contributions, the most one debate may (replica option --contributions-per-debate); open a new debate"
    )]
    ContributionsPerDebate { debate: String, count: u32 },
    #[error(
        "question {question} of debate {debate} already has {open} open motions (at most {max}, replica option --open-motions-per-question); ask again once they are decided"
    )]
    OpenMotionsPerQuestion {
        debate: String,
        question: String,
        open: u32,
        max: u32,
    },
    #[error(
        "identity {identity} already has {open} open panel requests (at most {max}, replica option --open-motions-per-identity); ask again once some are decided"
    )]
    OpenMotionsPerIdentity {
        identity: String,
        open: u32,
        max: u32,
    },
}

impl LimitError {
    pub fn code(&self) -> RefusalCode {
        match self {
            LimitError::RateLimited { .. } | LimitError::FairShare { .. } => {
                RefusalCode::RateLimited
            }
            _ => RefusalCode::QuotaExceeded,
        }
    }
}

/// The buckets a write takes a token from: its identity's and its organisation's, and
/// under a policy with global rates the all-writers bucket and its kind's.
fn buckets_of(
    policy: &LimitPolicy,
    w: &Writer,
    c: &ClientCommand,
) -> Vec<(String, Rate, &'static str, String)> {
    let mut out = Vec::with_capacity(4);
    if w.is_anonymous() {
        out.push((
            format!("identity:{ANONYMOUS}"),
            policy.anonymous,
            "anonymous",
            "anonymous callers (no client certificate)".to_string(),
        ));
    } else {
        out.push((
            format!("identity:{}", w.identity),
            policy.per_identity,
            "per-identity",
            format!("identity {}", w.identity),
        ));
    }
    if let Some(org) = &w.organisation {
        out.push((
            format!("organisation:{org}"),
            policy.per_organisation,
            "per-organisation",
            format!("organisation {org}"),
        ));
    }
    if let Some(g) = &policy.global {
        out.push((
            ALL_WRITES_KEY.to_string(),
            g.all_writes,
            "global",
            "all client writers".to_string(),
        ));
        if let Some(kind) = GlobalKind::of(c) {
            out.push((
                format!("global:{}", kind.name()),
                kind.rate(g),
                "global",
                format!("all writers' {}", kind.name()),
            ));
        }
    }
    out
}

/// The rate of a stored bucket under `policy`; `None` for a bucket the policy no longer
/// has (its global rates were dropped), which pruning then removes.
fn rate_of_key(policy: &LimitPolicy, key: &str) -> Option<Rate> {
    if key == format!("identity:{ANONYMOUS}") {
        Some(policy.anonymous)
    } else if key.starts_with("organisation:") {
        Some(policy.per_organisation)
    } else if key.starts_with("identity:") {
        Some(policy.per_identity)
    } else {
        let g = policy.global.as_ref()?;
        if key == ALL_WRITES_KEY {
            return Some(g.all_writes);
        }
        GlobalKind::ALL
            .into_iter()
            .find(|k| key.strip_prefix("global:") == Some(k.name()))
            .map(|k| k.rate(g))
    }
}

/// Class key of the anonymous callers (and, under a charter, of every certificate of no
/// member organisation) in the shares of the global caps.
const ANONYMOUS_CLASS: &str = "anonymous";

fn is_member(state: &State, org: &str) -> bool {
    crate::features::endorsers::organisations(state).any(|m| m.name == org)
}

/// The class a writer's writes share the global caps under (module docs, "Fair shares"):
/// its organisation, if it is a member (any named organisation without a charter), else
/// the anonymous callers'.
fn class_of(state: &State, w: &Writer) -> String {
    match &w.organisation {
        Some(o) if !w.is_anonymous() && (state.charter.is_none() || is_member(state, o)) => {
            format!("organisation:{o}")
        }
        _ => ANONYMOUS_CLASS.to_owned(),
    }
}

/// The class as a refusal names it.
fn class_name(class: &str) -> String {
    match class.strip_prefix("organisation:") {
        Some(o) => format!("organisation {o}"),
        None => {
            "anonymous callers (no client certificate, or one of no member organisation)".to_owned()
        }
    }
}

/// The global buckets a write takes a token from: key, rate, and what they cap.
fn global_buckets(g: &GlobalRates, c: &ClientCommand) -> Vec<(String, Rate, String)> {
    let mut out = vec![(
        ALL_WRITES_KEY.to_owned(),
        g.all_writes,
        "all client writes".to_owned(),
    )];
    if let Some(kind) = GlobalKind::of(c) {
        out.push((
            format!("global:{}", kind.name()),
            kind.rate(g),
            format!("all writers' {}", kind.name()),
        ));
    }
    out
}

/// `a * b / c` in integers, saturating.
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    let q = u128::from(a) * u128::from(b) / u128::from(c.max(1));
    u64::try_from(q).unwrap_or(u64::MAX)
}

/// The classes that share one global cap, with their weights: under a charter its member
/// organisations and the anonymous callers, always; the classes that have used some of
/// their share and not yet refilled it; and the writer's own.
struct Sharing {
    classes: Vec<(String, u64)>,
    total: u64,
}

impl Sharing {
    fn of(state: &State, fs: &FairShare, key: &str, writer: Option<&str>) -> Self {
        let mut names: std::collections::BTreeSet<String> =
            crate::features::endorsers::organisations(state)
                .map(|o| format!("organisation:{}", o.name))
                .collect();
        if state.charter.is_some() {
            names.insert(ANONYMOUS_CLASS.to_owned());
        }
        if let Some(used) = state.limits.shares.get(key) {
            names.extend(used.keys().cloned());
        }
        names.extend(writer.map(str::to_owned));
        let weight = |c: &str| {
            u64::from(if c.starts_with("organisation:") {
                fs.organisation_weight.max(1)
            } else {
                fs.anonymous_weight.max(1)
            })
        };
        let classes: Vec<(String, u64)> = names
            .into_iter()
            .map(|c| {
                let w = weight(&c);
                (c, w)
            })
            .collect();
        let total = classes.iter().map(|(_, w)| *w).sum::<u64>().max(1);
        Self { classes, total }
    }

    fn share(&self, rate: Rate, class: &str) -> Share {
        let weight = self
            .classes
            .iter()
            .find(|(c, _)| c == class)
            .map_or(1, |(_, w)| *w);
        Share {
            rate,
            weight,
            total: self.total,
        }
    }
}

/// One class's part of one global cap: `weight / total` of its burst and rate.
#[derive(Debug, Clone, Copy)]
struct Share {
    rate: Rate,
    weight: u64,
    total: u64,
}

impl Share {
    /// Milli-tokens of the share's burst: at least one token, so every class may write
    /// however many share the cap.
    fn cap(self) -> u64 {
        mul_div(self.rate.full_milli(), self.weight, self.total).max(1000)
    }

    fn per_minute(self) -> u64 {
        mul_div(self.rate.per_minute(), self.weight, self.total)
    }

    /// Milli-tokens the share refills in `elapsed_ms` (`per_minute * weight / total`
    /// tokens per 60 000 ms).
    fn refill(self, elapsed_ms: u64) -> u64 {
        let q =
            u128::from(elapsed_ms) * u128::from(self.rate.per_minute()) * u128::from(self.weight)
                / (60 * u128::from(self.total));
        u64::try_from(q).unwrap_or(u64::MAX)
    }

    /// Milli-tokens of the share used at `now_ms` (a clock behind the entry leaks nothing).
    fn used(self, b: Option<&Bucket>, now_ms: u64) -> u64 {
        b.map_or(0, |b| {
            b.milli
                .saturating_sub(self.refill(now_ms.saturating_sub(b.at_ms)))
        })
        .min(self.cap())
    }

    fn unused(self, b: Option<&Bucket>, now_ms: u64) -> u64 {
        self.cap() - self.used(b, now_ms)
    }

    /// Seconds until a share with `used` milli-tokens used has a whole token again.
    fn retry_secs(self, used: u64) -> u64 {
        let excess = used.saturating_sub(self.cap() - 1000);
        let per = u128::from(self.rate.per_minute()) * u128::from(self.weight);
        let ms = (u128::from(excess) * 60 * u128::from(self.total)).div_ceil(per.max(1));
        u64::try_from(ms.div_ceil(1000)).unwrap_or(u64::MAX).max(1)
    }
}

/// Checks the shares of the global caps a write takes from (module docs, "Fair shares"):
/// its class's share has a token, or the global bucket (`level` milli-tokens) holds one
/// beyond every other class's unused share.
fn check_shares(
    state: &State,
    g: &GlobalRates,
    fs: &FairShare,
    writer: &Writer,
    c: &ClientCommand,
    now_ms: u64,
) -> Result<(), LimitError> {
    let l = &state.limits;
    let class = class_of(state, writer);
    for (key, rate, what) in global_buckets(g, c) {
        let level = l
            .buckets
            .get(&key)
            .map_or(rate.full_milli(), |b| b.level(rate, now_ms));
        let sharing = Sharing::of(state, fs, &key, Some(&class));
        let used = l.shares.get(&key);
        let entry = |cls: &str| used.and_then(|m| m.get(cls));
        let mine = sharing.share(rate, &class);
        if mine.unused(entry(&class), now_ms) >= 1000 {
            continue;
        }
        let others: u64 = sharing
            .classes
            .iter()
            .filter(|(cls, _)| *cls != class)
            .map(|(cls, _)| sharing.share(rate, cls).unused(entry(cls), now_ms))
            .sum();
        if level >= others.saturating_add(1000) {
            continue;
        }
        return Err(LimitError::FairShare {
            limit: what,
            who: class_name(&class),
            share_burst: mine.cap() / 1000,
            share_per_minute: mine.per_minute(),
            weight: mine.weight,
            total_weight: sharing.total,
            classes: sharing.classes.len(),
            retry_secs: mine.retry_secs(mine.used(entry(&class), now_ms)),
        });
    }
    Ok(())
}

/// Records a write's use of its class's shares: one token more, at most the whole share
/// (a write beyond it borrowed what no other class claimed).
fn charge_shares(
    state: &mut State,
    g: &GlobalRates,
    fs: &FairShare,
    writer: &Writer,
    c: &ClientCommand,
    now_ms: u64,
) {
    let class = class_of(state, writer);
    for (key, rate, _) in global_buckets(g, c) {
        let share = Sharing::of(state, fs, &key, Some(&class)).share(rate, &class);
        let entry = state
            .limits
            .shares
            .entry(key)
            .or_default()
            .entry(class.clone())
            .or_insert(Bucket {
                milli: 0,
                at_ms: now_ms,
            });
        let used = share.used(Some(entry), now_ms);
        *entry = Bucket {
            milli: used.saturating_add(1000).min(share.cap()),
            at_ms: entry.at_ms.max(now_ms),
        };
    }
}

/// The row counts a writer's stored replies go to: its identity's and its organisation's,
/// or the shared anonymous identity's; with the bound, who it is and what the bound is of.
fn reply_owners(b: &ReplyBounds, w: &Writer) -> Vec<(String, u32, String, &'static str)> {
    if w.is_anonymous() {
        return vec![(
            format!("identity:{ANONYMOUS}"),
            b.anonymous,
            "anonymous callers (no client certificate)".to_owned(),
            "all anonymous callers together (ReplyBounds::anonymous)",
        )];
    }
    let mut out = vec![(
        format!("identity:{}", w.identity),
        b.per_identity,
        format!("identity {}", w.identity),
        "one identity (ReplyBounds::per_identity)",
    )];
    if let Some(org) = &w.organisation {
        out.push((
            format!("organisation:{org}"),
            b.per_organisation,
            format!("organisation {org}"),
            "the certificates of one organisation together (ReplyBounds::per_organisation)",
        ));
    }
    out
}

/// Whether apply stores the deduplication row of a client write's reply (`over_limit`: it
/// was refused by [`check`]). Always under a policy without [`ReplyBounds`] and for
/// commands that are not client writes; otherwise not for a refusal over a limit, nor for
/// any refusal of an anonymous caller ([`ReplyBounds`]).
pub fn keeps_reply(
    policy: &LimitPolicy,
    writer: &Writer,
    command: &Command,
    reply: &ItemReply<Reply>,
    over_limit: bool,
) -> bool {
    if policy.stored_replies.is_none() || !matches!(command, Command::Client(_)) {
        return true;
    }
    if over_limit {
        return false;
    }
    !(writer.is_anonymous() && matches!(reply, ItemReply::Refused { .. }))
}

/// Counts a stored deduplication row of a client write against its writer's bounds.
pub fn count_reply(
    state: &mut State,
    policy: &LimitPolicy,
    writer: &Writer,
    command: &Command,
    now_ms: u64,
) {
    let (Some(b), Command::Client(_)) = (&policy.stored_replies, command) else {
        return;
    };
    for (key, _, _, _) in reply_owners(b, writer) {
        state.limits.replies.entry(key).or_default().add(now_ms);
    }
}

fn open_motions(state: &State, ids: &[String]) -> u32 {
    ids.iter()
        .filter(|m| {
            state
                .motions
                .get(m)
                .is_some_and(|m| matches!(m.status, MotionStatus::Open))
        })
        .count() as u32
}

/// Checks a write against every limit without changing anything (validate before
/// mutating, like every command).
pub fn check(
    state: &State,
    policy: &LimitPolicy,
    writer: &Writer,
    command: &Command,
    now_ms: u64,
) -> Result<(), LimitError> {
    let Command::Client(c) = command else {
        return Ok(());
    };
    let l = &state.limits;
    for (key, rate, limit, who) in buckets_of(policy, writer, c) {
        let milli = l
            .buckets
            .get(&key)
            .map_or(rate.full_milli(), |b| b.level(rate, now_ms));
        if milli < 1000 {
            return Err(LimitError::RateLimited {
                limit,
                who,
                per_minute: rate.per_minute,
                burst: rate.burst,
                retry_secs: retry_secs(milli, rate),
            });
        }
    }
    if let (Some(g), Some(fs)) = (&policy.global, &policy.fair_share) {
        check_shares(state, g, fs, writer, c, now_ms)?;
    }
    if let Some(b) = &policy.stored_replies {
        for (key, bound, who, bound_of) in reply_owners(b, writer) {
            let Some(stored) = l.replies.get(&key) else {
                continue;
            };
            let rows = stored.live(now_ms);
            if rows >= u64::from(bound.max(1)) {
                return Err(LimitError::StoredReplies {
                    who,
                    bound_of,
                    rows,
                    bound,
                    retry_secs: stored.wait_ms(bound.max(1), now_ms).div_ceil(1000).max(1),
                });
            }
        }
    }
    match c {
        ClientCommand::CreateDebate(_) | ClientCommand::StartRun(_) => {
            let count = l
                .debates_by_identity
                .get(&writer.identity)
                .copied()
                .unwrap_or(0);
            if count >= policy.debates_per_identity {
                return Err(LimitError::DebatesPerIdentity {
                    identity: writer.identity.clone(),
                    count,
                });
            }
        }
        ClientCommand::Contribute(sub) => {
            let count = l
                .contributions_by_debate
                .get(&sub.debate_id)
                .copied()
                .unwrap_or(0);
            if count >= policy.contributions_per_debate {
                return Err(LimitError::ContributionsPerDebate {
                    debate: sub.debate_id.clone(),
                    count,
                });
            }
        }
        ClientCommand::AskPanel(req) => {
            let asked = l.asked.get(&writer.identity).map_or(&[][..], Vec::as_slice);
            let open = open_motions(state, asked);
            if open >= policy.open_motions_per_identity {
                return Err(LimitError::OpenMotionsPerIdentity {
                    identity: writer.identity.clone(),
                    open,
                    max: policy.open_motions_per_identity,
                });
            }
            if let Some(rec) = state.debates.get(&req.debate_id) {
                let key = req.question.key();
                let same: Vec<String> = rec
                    .questions
                    .iter()
                    .filter(|(_, q)| q.key() == key)
                    .map(|(m, _)| m.clone())
                    .collect();
                let open = open_motions(state, &same);
                if open >= policy.open_motions_per_question {
                    return Err(LimitError::OpenMotionsPerQuestion {
                        debate: req.debate_id.clone(),
                        question: key,
                        open,
                        max: policy.open_motions_per_question,
                    });
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Records a write that passed [`check`]: it takes a token from its buckets whatever apply
/// then decided (a refused write still cost the replicas a log entry and a stored reply),
/// and an applied debate, contribution or panel request counts toward its cap.
pub fn charge(
    state: &mut State,
    policy: &LimitPolicy,
    writer: &Writer,
    command: &Command,
    reply: &ItemReply<Reply>,
    now_ms: u64,
) {
    let Command::Client(c) = command else {
        return;
    };
    if let (Some(g), Some(fs)) = (&policy.global, &policy.fair_share) {
        charge_shares(state, g, fs, writer, c, now_ms);
    }
    let l = &mut state.limits;
    for (key, rate, _, _) in buckets_of(policy, writer, c) {
        let b = l
            .buckets
            .entry(key)
            .or_insert_with(|| Bucket::full(rate, now_ms));
        b.milli = b.level(rate, now_ms).saturating_sub(1000);
        b.at_ms = b.at_ms.max(now_ms);
    }
    let ItemReply::Applied(v) = reply else {
        return;
    };
    match c {
        ClientCommand::CreateDebate(_) | ClientCommand::StartRun(_) => {
            *l.debates_by_identity
                .entry(writer.identity.clone())
                .or_default() += 1;
        }
        ClientCommand::Contribute(sub) => {
            *l.contributions_by_debate
                .entry(sub.debate_id.clone())
                .or_default() += 1;
        }
        ClientCommand::AskPanel(_) => {
            if let Ok(asked) = v.get::<crate::reply::AskPanelReply>() {
                l.asked
                    .entry(writer.identity.clone())
                    .or_default()
                    .push(asked.motion_id.clone());
            }
        }
        _ => {}
    }
}

/// Drops what no longer limits anything, at most once per [`PRUNE_EVERY_MS`] of batch
/// time: buckets that have refilled and panel requests whose motions are decided. So the
/// limits' memory follows the writers active in the last minutes, not all writers ever.
pub fn prune(state: &mut State, policy: &LimitPolicy, now_ms: u64) {
    if now_ms < state.limits.pruned_at_ms.saturating_add(PRUNE_EVERY_MS) {
        return;
    }
    state.limits.buckets.retain(|k, b| {
        rate_of_key(policy, k).is_some_and(|rate| b.level(rate, now_ms) < rate.full_milli())
    });
    // Shares that have refilled no longer make their class one with demand; under a
    // policy without fair shares none limits anything.
    let shares = match (&policy.global, &policy.fair_share) {
        (Some(_), Some(fs)) => {
            let mut kept = BTreeMap::new();
            for (key, used) in &state.limits.shares {
                let Some(rate) = rate_of_key(policy, key) else {
                    continue;
                };
                let sharing = Sharing::of(state, fs, key, None);
                let live: BTreeMap<String, Bucket> = used
                    .iter()
                    .filter(|(cls, b)| sharing.share(rate, cls).used(Some(b), now_ms) > 0)
                    .map(|(cls, b)| (cls.clone(), *b))
                    .collect();
                if !live.is_empty() {
                    kept.insert(key.clone(), live);
                }
            }
            kept
        }
        _ => BTreeMap::new(),
    };
    state.limits.shares = shares;
    state.limits.replies.retain(|_, rows| {
        rows.prune(now_ms);
        !rows.is_empty()
    });
    let asked = std::mem::take(&mut state.limits.asked);
    let mut kept = BTreeMap::new();
    for (identity, ids) in asked {
        let open: Vec<String> = ids
            .into_iter()
            .filter(|m| {
                state
                    .motions
                    .get(m)
                    .is_some_and(|m| matches!(m.status, MotionStatus::Open))
            })
            .collect();
        if !open.is_empty() {
            kept.insert(identity, open);
        }
    }
    state.limits.asked = kept;
    state.limits.pruned_at_ms = now_ms;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::apply_batch;
    use crate::command::{Batch, Item};
    use serde_json::json;

    fn writer(identity: &str, org: &str) -> Writer {
        Writer {
            identity: identity.into(),
            organisation: Some(org.into()),
        }
    }

    fn debate(convener: &str) -> Command {
        Command::Client(ClientCommand::CreateDebate(
            serde_json::from_value(json!({
                "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes",
                "pos_b": "no", "seats": 2, "min_per_stance": 1, "convener": convener,
            }))
            .expect("debate"),
        ))
    }

    fn definition(debate_id: &str, n: u64) -> Command {
        Command::Client(ClientCommand::Contribute(
            serde_json::from_value(json!({
                "debate_id": debate_id, "author": format!("w{n}"), "side": "A",
                "contribution": {"op": "definition", "term": format!("harm{n}"),
                                 "definition": "Measurable loss of welfare."},
            }))
            .expect("submission"),
        ))
    }

    /// One replica's view: the state and a counter for request ids.
    struct Replica {
        state: State,
        log_index: u64,
        policy: LimitPolicy,
    }

    impl Replica {
        fn new(policy: LimitPolicy) -> Self {
            Self {
                state: State::default(),
                log_index: 0,
                policy,
            }
        }

        fn write(
            &mut self,
            time_ms: u64,
            w: Option<&Writer>,
            command: Command,
        ) -> ItemReply<Reply> {
            let request_id = self.log_index + 1;
            self.write_ids(time_ms, w, "t", request_id, command).reply
        }

        /// One write with its own client and request ids.
        fn write_ids(
            &mut self,
            time_ms: u64,
            w: Option<&Writer>,
            client_id: &str,
            request_id: u64,
            command: Command,
        ) -> crate::reply::ItemOutcome {
            self.log_index += 1;
            let batch = Batch {
                time_ms,
                seed: self.log_index,
                items: vec![Item {
                    client_id: client_id.into(),
                    request_id,
                    command,
                    writer: w.cloned(),
                }],
                limits: Some(self.policy),
                checkpoints: None,
                rules: None,
            };
            let r = apply_batch(
                &mut self.state,
                self.log_index,
                &batch,
                &panel_proto::VerifiedMemo::default(),
            );
            r.items.into_iter().next().expect("one item")
        }
    }

    fn tight() -> LimitPolicy {
        LimitPolicy {
            per_identity: Rate::new(3, 6),
            per_organisation: Rate::new(5, 60),
            anonymous: Rate::new(2, 6),
            ..LimitPolicy::default()
        }
    }

    fn refused(r: &ItemReply<Reply>, code: &str, needle: &str) -> bool {
        matches!(r, ItemReply::Refused { code: c, message } if c == code && message.contains(needle))
    }

    /// An identity over its burst is refused in apply with the limit, the identity and
    /// the seconds to wait; an identity of another organisation is still served; the
    /// bucket refills with batch time.
    #[test]
    fn an_identity_over_its_budget_is_refused_with_a_retry_time() {
        let mut r = Replica::new(tight());
        let flood = writer("f1", "north");
        let honest = writer("h1", "south");
        for i in 0..3 {
            let ok = r.write(1_000, Some(&flood), debate(&format!("c{i}")));
            assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        }
        let over = r.write(1_000, Some(&flood), debate("c9"));
        assert!(refused(&over, "rate_limited", "identity f1"), "{over:?}");
        // 6 per minute: one token every 10 s.
        assert!(refused(&over, "rate_limited", "retry in 10 s"), "{over:?}");
        assert!(refused(&over, "rate_limited", "per-identity"), "{over:?}");
        let other = r.write(1_000, Some(&honest), debate("h"));
        assert!(matches!(other, ItemReply::Applied(_)), "{other:?}");
        let later = r.write(11_000, Some(&flood), debate("c10"));
        assert!(matches!(later, ItemReply::Applied(_)), "{later:?}");
    }

    /// Rotating certificates and organisations does not outrun the global caps, and they
    /// hold in apply, so a failover (a new leader's intake starts full) does not reset
    /// them: every replica refuses the same over-cap write from the replicated buckets.
    #[test]
    fn global_caps_hold_across_writers_and_leaders() {
        let g = GlobalRates {
            all_writes: Rate::new(6, 6),
            contributions: Rate::new(100, 600),
            debates: Rate::new(4, 6),
            panel_requests: Rate::new(100, 600),
            registrations: Rate::new(100, 600),
        };
        let policy = LimitPolicy {
            global: Some(g),
            ..LimitPolicy::default()
        };
        let mut r = Replica::new(policy);
        let fresh = |i: u32| writer(&format!("rot-{i}"), &format!("org-{i}"));
        for i in 0..4 {
            let ok = r.write(1_000, Some(&fresh(i)), debate(&format!("c{i}")));
            assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        }
        // The debates cap is used up by four identities of four organisations.
        let over = r.write(1_000, Some(&fresh(4)), debate("c4"));
        assert!(
            refused(&over, "rate_limited", "all writers' debates"),
            "{over:?}"
        );
        assert!(refused(&over, "rate_limited", "retry in 10 s"), "{over:?}");
        // The buckets are in the replicated state: a replica with the same state (any
        // follower, the next leader) refuses the same write, whatever its intake holds.
        let follower = State {
            limits: r.state.limits.clone(),
            ..State::default()
        };
        assert!(
            check(&follower, &policy, &fresh(9), &debate("c9"), 1_000).is_err(),
            "the cap is in the replicated state"
        );
        // The all-writes cap: four debates and two contributions use up its six tokens (a
        // write refused over a limit costs none), so the third contribution is refused.
        for n in 1..=2 {
            let ok = r.write(
                1_000,
                Some(&fresh(10 + n)),
                definition("deb_1", u64::from(n)),
            );
            assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        }
        let over = r.write(1_000, Some(&fresh(13)), definition("deb_1", 3));
        assert!(
            refused(&over, "rate_limited", "all client writers"),
            "{over:?}"
        );
        // The buckets refill with batch time and are then pruned.
        let later = r.write(200_000, Some(&fresh(12)), debate("c12"));
        assert!(matches!(later, ItemReply::Applied(_)), "{later:?}");
        assert!(
            r.state.limits.buckets.len() <= 4,
            "refilled buckets are pruned: {:?}",
            r.state.limits.buckets.keys().collect::<Vec<_>>()
        );
    }

    /// Rotating certificates within one organisation meets the organisation's budget,
    /// while another organisation's writer is served.
    #[test]
    fn many_identities_of_one_organisation_share_its_budget() {
        let mut r = Replica::new(tight());
        let mut applied = 0;
        let mut last = None;
        for i in 0..20 {
            let w = writer(&format!("north-{i}"), "north");
            let reply = r.write(1_000, Some(&w), debate(&format!("n{i}")));
            if matches!(reply, ItemReply::Applied(_)) {
                applied += 1;
            }
            last = Some(reply);
        }
        assert_eq!(applied, 5, "the organisation's burst");
        let last = last.expect("a reply");
        assert!(
            refused(&last, "rate_limited", "organisation north"),
            "{last:?}"
        );
        let honest = r.write(1_000, Some(&writer("s1", "south")), debate("s"));
        assert!(matches!(honest, ItemReply::Applied(_)), "{honest:?}");
    }

    /// All anonymous callers share one small budget.
    #[test]
    fn anonymous_callers_share_one_budget() {
        let mut r = Replica::new(tight());
        let anon = Writer::anonymous();
        assert!(matches!(
            r.write(1_000, Some(&anon), debate("a")),
            ItemReply::Applied(_)
        ));
        assert!(matches!(
            r.write(1_000, Some(&anon), debate("b")),
            ItemReply::Applied(_)
        ));
        let over = r.write(1_000, Some(&anon), debate("c"));
        assert!(refused(&over, "rate_limited", "anonymous"), "{over:?}");
        let authed = r.write(1_000, Some(&writer("x", "north")), debate("d"));
        assert!(matches!(authed, ItemReply::Applied(_)), "{authed:?}");
    }

    /// A failover: the new leader's intake starts empty and its clock runs a little
    /// behind, but the replicas' state (here through a snapshot's JSON) still holds the
    /// spent buckets, so the same over-quota write is refused.
    #[test]
    fn limits_survive_a_failover() {
        let mut old = Replica::new(tight());
        let flood = writer("f1", "north");
        for i in 0..3 {
            old.write(50_000, Some(&flood), debate(&format!("c{i}")));
        }
        assert!(refused(
            &old.write(50_000, Some(&flood), debate("x")),
            "rate_limited",
            "identity f1"
        ));
        let snapshot = serde_json::to_string(&old.state).expect("snapshot");
        let mut new = Replica {
            state: serde_json::from_str(&snapshot).expect("restore"),
            log_index: old.log_index,
            policy: tight(),
        };
        let after = new.write(49_500, Some(&flood), debate("y"));
        assert!(refused(&after, "rate_limited", "identity f1"), "{after:?}");
        assert!(
            refused(&after, "rate_limited", "retry in 10 s"),
            "{after:?}"
        );
        // And the same entry applied on the old replica gives the same reply.
        let same = old.write(49_500, Some(&flood), debate("y"));
        assert_eq!(same, after);
    }

    /// Entries without a stamped writer (the drivers', and every entry logged before
    /// limits existed) are never limited, so old logs replay as they applied.
    #[test]
    fn unstamped_items_are_not_limited() {
        let mut r = Replica::new(tight());
        for i in 0..20 {
            let ok = r.write(1_000, None, debate(&format!("c{i}")));
            assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        }
        assert!(r.state.limits.buckets.is_empty());
    }

    /// The caps in apply: debates per convening identity and contributions per debate.
    #[test]
    fn debates_per_identity_and_contributions_per_debate_are_capped() {
        let mut r = Replica::new(LimitPolicy {
            debates_per_identity: 2,
            contributions_per_debate: 3,
            ..LimitPolicy::default()
        });
        let w = writer("c1", "north");
        for i in 0..2 {
            assert!(matches!(
                r.write(1_000, Some(&w), debate(&format!("c{i}"))),
                ItemReply::Applied(_)
            ));
        }
        let third = r.write(1_000, Some(&w), debate("c2"));
        assert!(
            refused(&third, "quota_exceeded", "identity c1 has convened 2"),
            "{third:?}"
        );
        for n in 0..3 {
            let ok = r.write(
                1_000,
                Some(&writer(&format!("a{n}"), "south")),
                definition("deb_1", n),
            );
            assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        }
        let full = r.write(1_000, Some(&writer("a9", "south")), definition("deb_1", 9));
        assert!(
            refused(&full, "quota_exceeded", "debate deb_1 holds 3"),
            "{full:?}"
        );
        let other = r.write(1_000, Some(&writer("a9", "south")), definition("deb_2", 9));
        assert!(matches!(other, ItemReply::Applied(_)), "{other:?}");
    }

    /// A flood of fresh identities leaves buckets behind only until they refill: the
    /// pruning pass keeps the table near the writers of the last minutes.
    #[test]
    fn refilled_buckets_are_pruned() {
        let mut r = Replica::new(LimitPolicy {
            per_organisation: Rate::new(u32::MAX / 1000, u32::MAX),
            ..tight()
        });
        for i in 0..500 {
            r.write(1_000, Some(&writer(&format!("x{i}"), "north")), debate("c"));
        }
        assert!(r.state.limits.buckets.len() > 500);
        // One token per 10 s and bursts of 3: refilled after 30 s; pruned at the next
        // pass (at most PRUNE_EVERY_MS later).
        r.write(
            1_000 + PRUNE_EVERY_MS + 30_000,
            Some(&writer("y", "south")),
            debate("c"),
        );
        assert!(
            r.state.limits.buckets.len() <= 2,
            "{} buckets",
            r.state.limits.buckets.len()
        );
    }

    #[test]
    fn buckets_refill_in_integer_time() {
        let rate = Rate::new(2, 60);
        let b = Bucket { milli: 0, at_ms: 0 };
        assert_eq!(b.level(rate, 500), 500);
        assert_eq!(b.level(rate, 1_000), 1_000);
        assert_eq!(b.level(rate, 10_000), 2_000);
        // A clock behind the bucket refills nothing.
        let later = Bucket {
            milli: 300,
            at_ms: 5_000,
        };
        assert_eq!(later.level(rate, 1_000), 300);
        assert_eq!(retry_secs(0, rate), 1);
        assert_eq!(retry_secs(0, Rate::new(1, 6)), 10);
    }

    fn applied(r: &ItemReply<crate::reply::Reply>) -> bool {
        matches!(r, ItemReply::Applied(_))
    }

    /// Global rates where only the debates cap can bind.
    fn global(debates: Rate) -> GlobalRates {
        let free = Rate::new(10_000, 60_000);
        GlobalRates {
            all_writes: free,
            contributions: free,
            debates,
            panel_requests: free,
            registrations: free,
        }
    }

    /// The replica of a chartered group: member organisations `north` and `south`.
    fn chartered(policy: LimitPolicy) -> Replica {
        let mut r = Replica::new(policy);
        r.state.charter = Some(crate::features::charter_rules::tests::charter());
        r
    }

    /// One flood of `CreateDebate` under `flood` (60 writes in 600 ms of batch time) with
    /// `honest`'s 6 writes interleaved after every 10th; the writes each got through.
    fn flood_with_interleaved(
        r: &mut Replica,
        flood: &Writer,
        honest: &Writer,
    ) -> (u32, u32, Vec<ItemReply<crate::reply::Reply>>) {
        let (mut a, mut b, mut refusals) = (0, 0, Vec::new());
        for i in 0..60u64 {
            let reply = r.write(1_000 + 10 * i, Some(flood), debate(&format!("f{i}")));
            if applied(&reply) {
                a += 1;
            } else {
                refusals.push(reply);
            }
            if i % 10 == 9 {
                let reply = r.write(1_005 + 10 * i, Some(honest), debate(&format!("h{i}")));
                if applied(&reply) {
                    b += 1;
                } else {
                    refusals.push(reply);
                }
            }
        }
        (a, b, refusals)
    }

    /// docs/SECURITY.md "What is enforced": one certificate of member organisation `north` floods
    /// `CreateDebate` past the global debates cap (15 in a burst, 12 a minute) while
    /// `south` sends 6 writes interleaved. Before fair shares the flood took the whole cap
    /// and south got 1 of its 6 writes through; now each member organisation has 2 of the
    /// 5 parts of the burst (anonymous callers the fifth) whoever writes first, so south
    /// gets all 6 and north its own 6, and north's refusal names the share, the
    /// organisation and when to retry.
    #[test]
    fn a_flooding_organisation_leaves_the_other_its_share_of_a_global_cap() {
        let mut r = chartered(LimitPolicy {
            global: Some(global(Rate::new(15, 12))),
            ..LimitPolicy::default()
        });
        let (a, b, refusals) =
            flood_with_interleaved(&mut r, &writer("f1", "north"), &writer("h1", "south"));
        eprintln!("flooding organisation: {a} of 60 writes through; the other: {b} of 6");
        assert_eq!(
            b, 6,
            "the other organisation's writes, within its share, all go through"
        );
        assert_eq!(
            a, 6,
            "the flooder gets its own share (2 of 5 parts of 15), not the other's"
        );
        let first = refusals.first().expect("the flood was refused");
        for needle in [
            "organisation north",
            "fair share",
            "all writers' debates",
            "retry in 13 s",
        ] {
            assert!(
                refused(first, "rate_limited", needle),
                "{needle}: {first:?}"
            );
        }
    }

    /// Without a charter (no members to reserve for) the classes with recent demand share
    /// the cap: once south has written, north's flood cannot take south's share.
    #[test]
    fn without_a_charter_the_classes_writing_share_the_cap() {
        let mut r = Replica::new(LimitPolicy {
            global: Some(global(Rate::new(15, 12))),
            ..LimitPolicy::default()
        });
        let (flood, honest) = (writer("f1", "north"), writer("h1", "south"));
        assert!(applied(&r.write(900, Some(&honest), debate("h"))));
        let (a, b, refusals) = flood_with_interleaved(&mut r, &flood, &honest);
        // Half the burst each (7.5 tokens): south's write before the flood and its 6 during.
        assert_eq!(b, 6, "south's writes all go through: {:?}", refusals.last());
        assert_eq!(a, 7, "north gets its half of the burst");
    }

    /// A lone writer is not held to its share of the rate: the global bucket refills past
    /// the other members' unused shares and it may borrow that, so the cap's rate is not
    /// wasted; the other organisation's whole share is still there when it writes.
    #[test]
    fn a_lone_writer_still_uses_the_rate_no_other_class_claims() {
        let mut r = chartered(LimitPolicy {
            global: Some(global(Rate::new(15, 12))),
            ..LimitPolicy::default()
        });
        let flood = writer("f1", "north");
        let mut a = 0;
        // Ten minutes, one write a second: 12 a minute refill.
        for s in 0..600u64 {
            if applied(&r.write(1_000 + 1_000 * s, Some(&flood), debate(&format!("f{s}")))) {
                a += 1;
            }
        }
        eprintln!("a lone flooder: {a} of 600 writes through in 10 minutes");
        assert!(
            (6 + 115..=6 + 121).contains(&a),
            "its share and the refilled rate: {a}"
        );
        let honest = writer("h1", "south");
        for i in 0..6 {
            let ok = r.write(601_500, Some(&honest), debate(&format!("h{i}")));
            assert!(applied(&ok), "south's share was kept: {ok:?}");
        }
    }

    /// Anonymous callers are one more class, with half an organisation's weight, and so
    /// are certificates of no member organisation: their flood gets 1/5 of the burst and
    /// the member organisations still have theirs.
    #[test]
    fn anonymous_callers_share_as_one_smaller_class() {
        let mut r = chartered(LimitPolicy {
            global: Some(global(Rate::new(15, 12))),
            ..LimitPolicy::default()
        });
        let anon = Writer::anonymous();
        let mut through = 0;
        let mut last = None;
        for i in 0..20 {
            let reply = r.write(1_000, Some(&anon), debate(&format!("a{i}")));
            if applied(&reply) {
                through += 1;
            } else {
                last = Some(reply);
            }
        }
        assert_eq!(through, 3, "1 of 5 parts of 15");
        let last = last.expect("refused");
        assert!(
            refused(&last, "rate_limited", "anonymous callers"),
            "{last:?}"
        );
        // An unpinned authority's certificate is in the anonymous callers' class.
        let outsider = writer("x1", "(no charter organisation)");
        let outsider = r.write(1_000, Some(&outsider), debate("x"));
        assert!(
            refused(&outsider, "rate_limited", "anonymous callers"),
            "{outsider:?}"
        );
        for org in ["north", "south"] {
            for i in 0..6 {
                let ok = r.write(1_000, Some(&writer(&format!("{org}{i}"), org)), debate(org));
                assert!(applied(&ok), "{org}: {ok:?}");
            }
        }
    }

    /// docs/SECURITY.md "What is enforced": a reader holding only `ca.pem` wrote refusals that each stored a
    /// deduplication row for a day (3,497 in 15 s). Refused anonymous writes now store
    /// none (a retry is judged again), while an applied one keeps its row, so its retry is
    /// still answered once. Refusals over a limit store none for anyone.
    #[test]
    fn refused_anonymous_writes_leave_no_reply_rows() {
        let mut r = Replica::new(LimitPolicy::default());
        let anon = Writer::anonymous();
        let mut refusals = 0;
        for n in 0..100 {
            let reply = r.write(1_000 + n, Some(&anon), definition("deb_none", n));
            if matches!(reply, ItemReply::Refused { .. }) {
                refusals += 1;
            }
        }
        let rows = r.state.requests.len();
        eprintln!("{refusals} refused anonymous writes left {rows} deduplication rows");
        assert_eq!(refusals, 100);
        assert_eq!(rows, 0, "refused anonymous writes store no row");
        // The same ids again: judged again, not replayed.
        let again = r.write_ids(2_000, Some(&anon), "t", 1, definition("deb_none", 0));
        assert!(!again.duplicate, "{again:?}");
        // An applied anonymous write keeps its row: its retry applies once.
        let first = r.write_ids(2_000, Some(&anon), "a", 1, debate("c"));
        assert!(applied(&first.reply), "{first:?}");
        let retry = r.write_ids(2_001, Some(&anon), "a", 1, debate("c"));
        assert!(retry.duplicate, "{retry:?}");
        assert_eq!(r.state.requests.len(), 1);
        // A write refused over a rate limit (here an identity's burst) stores no row.
        let mut r = Replica::new(tight());
        let f1 = writer("f1", "north");
        for i in 0..10 {
            r.write(1_000, Some(&f1), debate(&format!("c{i}")));
        }
        assert_eq!(
            r.state.requests.len(),
            3,
            "the burst of 3; the 7 refusals store none"
        );
    }

    /// docs/SECURITY.md "What is enforced": one identity cannot fill the deduplication table. It keeps at
    /// most its bound of rows within the lease; a write past it is refused, names the
    /// bound, the identity and when to retry, and stores nothing. Its organisation's
    /// certificates together have a bound too, anonymous callers theirs, and another
    /// organisation is not affected. Once the rows' hour has expired it writes again.
    #[test]
    fn one_writer_cannot_store_more_than_its_bound_of_reply_rows() {
        let mut r = Replica::new(LimitPolicy {
            stored_replies: Some(ReplyBounds {
                per_identity: 5,
                per_organisation: 8,
                anonymous: 3,
            }),
            ..LimitPolicy::default()
        });
        let f1 = writer("f1", "north");
        // Refused in apply for a reason of their own (no such debate), not over a limit:
        // an authenticated writer's refusal keeps its row for idempotent retries.
        for n in 0..5 {
            let reply = r.write(1_000 + n, Some(&f1), definition("deb_none", n));
            assert!(matches!(reply, ItemReply::Refused { .. }), "{reply:?}");
        }
        assert_eq!(r.state.requests.len(), 5);
        let over = r.write(1_010, Some(&f1), definition("deb_none", 9));
        for needle in [
            "identity f1",
            "at most 5",
            "retry in 89999 s",
            "stored nothing",
        ] {
            assert!(
                refused(&over, "quota_exceeded", needle),
                "{needle}: {over:?}"
            );
        }
        let over = r.write(1_011, Some(&f1), debate("c"));
        assert!(refused(&over, "quota_exceeded", "identity f1"), "{over:?}");
        assert_eq!(
            r.state.requests.len(),
            5,
            "refusals past the bound store nothing"
        );
        // Rotating certificates meets the organisation's bound.
        let f2 = writer("f2", "north");
        for i in 0..3 {
            assert!(applied(&r.write(
                1_020,
                Some(&f2),
                debate(&format!("d{i}"))
            )));
        }
        let org = r.write(1_021, Some(&f2), debate("d9"));
        assert!(
            refused(&org, "quota_exceeded", "organisation north"),
            "{org:?}"
        );
        // Another organisation writes on.
        assert!(applied(&r.write(
            1_030,
            Some(&writer("s1", "south")),
            debate("s")
        )));
        // Anonymous callers together: three applied writes, refusals store nothing.
        let anon = Writer::anonymous();
        for i in 0..3 {
            assert!(applied(&r.write(
                1_040,
                Some(&anon),
                debate(&format!("a{i}"))
            )));
        }
        let anon_over = r.write(1_041, Some(&anon), debate("a9"));
        assert!(
            refused(&anon_over, "quota_exceeded", "anonymous callers"),
            "{anon_over:?}"
        );
        assert_eq!(r.state.requests.len(), 5 + 3 + 1 + 3);
        // The hour the rows were stored in, plus the lease, later: f1 writes again.
        let later = 1_000
            + crate::model::reply_table::ROWS_SLOT_MS
            + crate::model::reply_table::DEDUP_TTL_MS;
        assert!(applied(&r.write(later, Some(&f1), debate("c"))));
        assert!(
            r.state
                .limits
                .replies
                .values()
                .all(|rows| rows.live(later) <= 1),
            "the expired hours are pruned: {:?}",
            r.state.limits.replies
        );
    }

    /// An anonymous caller cannot choose a client id that makes an identity's
    /// deduplication key (`<fingerprint>/<client>#<request>`), and so turn that identity's
    /// write into a "duplicate" of its own.
    #[test]
    fn an_anonymous_client_id_cannot_take_an_identitys_key() {
        let mut r = Replica::new(LimitPolicy::default());
        let anon = Writer::anonymous();
        let planted = r.write_ids(1_000, Some(&anon), "f1/cli", 7, debate("anon"));
        assert!(applied(&planted.reply), "{planted:?}");
        let own = r.write_ids(
            1_001,
            Some(&writer("f1", "north")),
            "cli",
            7,
            debate("mine"),
        );
        assert!(!own.duplicate, "{own:?}");
        assert!(applied(&own.reply));
    }

    /// Entries stamped before fair shares and reply bounds existed replay as they applied:
    /// one undivided global cap, a row for every write, plain anonymous keys.
    #[test]
    fn policies_stamped_before_fair_shares_replay_as_they_applied() {
        let old = LimitPolicy {
            global: Some(global(Rate::new(15, 12))),
            fair_share: None,
            stored_replies: None,
            ..LimitPolicy::default()
        };
        let mut r = chartered(old);
        let (a, b, _) =
            flood_with_interleaved(&mut r, &writer("f1", "north"), &writer("h1", "south"));
        assert_eq!((a, b), (14, 1), "the old undivided cap");
        let rows = r.state.requests.len();
        let anon = Writer::anonymous();
        let refusal = r.write(2_000, Some(&anon), definition("deb_none", 1));
        assert!(matches!(refusal, ItemReply::Refused { .. }));
        assert_eq!(
            r.state.requests.len(),
            rows + 1,
            "the old rule stored every reply"
        );
        assert!(
            r.state.requests.held("t#67").is_some(),
            "and under the plain key"
        );
        assert!(r.state.limits.shares.is_empty() && r.state.limits.replies.is_empty());
        // And the policy decodes from an old entry's JSON without the new fields.
        let json = serde_json::to_value(old).expect("policy");
        assert!(json.get("fair_share").is_none() && json.get("stored_replies").is_none());
        let back: LimitPolicy = serde_json::from_value(json).expect("decodes");
        assert_eq!(back, old);
    }
}
