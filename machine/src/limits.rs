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

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::command::{ClientCommand, Command, ItemReply};
use crate::model::{MotionStatus, State};

/// The identity of callers that presented no client certificate (and of every caller in
/// the `--insecure-loopback` debug mode): one shared identity with its own budget, so
/// anonymity cannot outrun authenticated writers.
pub const ANONYMOUS: &str = "anonymous";

/// Who wrote an item, as the leader's intake established it from the TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Writer {
    /// SHA-256 (hex) of the caller's client certificate, or [`ANONYMOUS`].
    pub identity: String,
    /// The organisation whose authority issued the certificate; `None` for anonymous
    /// callers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
}

impl Writer {
    pub fn anonymous() -> Self {
        Self {
            identity: ANONYMOUS.into(),
            organisation: None,
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.identity == ANONYMOUS
    }
}

/// One token bucket's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    /// Writes allowed in a burst.
    pub burst: u32,
    /// Sustained writes per minute.
    pub per_minute: u32,
}

impl Rate {
    pub const fn new(burst: u32, per_minute: u32) -> Self {
        Self { burst, per_minute }
    }

    fn full_milli(self) -> u64 {
        u64::from(self.burst.max(1)) * 1000
    }

    fn per_minute(self) -> u64 {
        u64::from(self.per_minute.max(1))
    }
}

/// The limits apply enforces. The leader stamps its policy (from the flags of `panel
/// coordinator run`, docs/COORDINATOR.md) into every batch, so all replicas apply the
/// same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitPolicy {
    /// Client writes per authenticated identity (certificate).
    pub per_identity: Rate,
    /// Client writes per organisation, across all its certificates.
    pub per_organisation: Rate,
    /// Client writes of the shared anonymous identity.
    pub anonymous: Rate,
    /// Debates one identity may convene.
    pub debates_per_identity: u32,
    /// Contributions one debate may hold.
    pub contributions_per_debate: u32,
    /// Open motions asked for one question of a debate at a time.
    pub open_motions_per_question: u32,
    /// Open motions one identity's panel requests may hold at a time.
    pub open_motions_per_identity: u32,
    /// The caps across all writers, so they hold whoever leads (a new leader's intake
    /// buckets start full); `None` in policies stamped before they were enforced here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<GlobalRates>,
}

/// Rates across all writers (`--global-burst`, `--global-per-minute` and the per-kind
/// intake rates of docs/COORDINATOR.md): every client write takes a token from
/// `all_writes`, and a write of a costly kind also from its kind's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalRates {
    pub all_writes: Rate,
    /// `Contribute` and `SubmitRunInput`.
    pub contributions: Rate,
    /// `CreateDebate` and `StartRun`.
    pub debates: Rate,
    /// `AskPanel`.
    pub panel_requests: Rate,
    /// `RegisterArbiter` and `RegisterContributor`.
    pub registrations: Rate,
}

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

impl Default for LimitPolicy {
    /// Generous enough for honest use (and for tests that run everything anonymously in
    /// the loopback debug mode); tighten with the flags.
    fn default() -> Self {
        Self {
            per_identity: Rate::new(600, 6_000),
            per_organisation: Rate::new(3_000, 30_000),
            anonymous: Rate::new(1_000, 10_000),
            debates_per_identity: 1_000,
            contributions_per_debate: 20_000,
            open_motions_per_question: 2,
            open_motions_per_identity: 64,
            global: None,
        }
    }
}

/// A bucket in the replicated state: milli-tokens at a batch time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub milli: u64,
    pub at_ms: u64,
}

impl Bucket {
    fn full(rate: Rate, now_ms: u64) -> Self {
        Self {
            milli: rate.full_milli(),
            at_ms: now_ms,
        }
    }

    /// Milli-tokens at `now_ms`: `per_minute` tokens per 60 000 ms is `per_minute / 60`
    /// milli-tokens per ms. A clock that went backwards (a new leader) refills nothing.
    fn level(self, rate: Rate, now_ms: u64) -> u64 {
        let elapsed = now_ms.saturating_sub(self.at_ms);
        let refill = elapsed.saturating_mul(rate.per_minute()) / 60;
        self.milli.saturating_add(refill).min(rate.full_milli())
    }
}

/// Seconds until a bucket at `milli` holds one token again (at least 1).
fn retry_secs(milli: u64, rate: Rate) -> u64 {
    let missing = 1000u64.saturating_sub(milli);
    // ms = missing milli-tokens / (per_minute / 60 milli-tokens per ms).
    let ms = (missing * 60).div_ceil(rate.per_minute());
    ms.div_ceil(1000).max(1)
}

/// What the limits remember, in the replicated state (`State::limits`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsState {
    /// Token buckets by `identity:<fingerprint>` and `organisation:<name>`; buckets that
    /// have refilled are pruned (a full bucket and a missing one admit the same).
    #[serde(default)]
    pub buckets: BTreeMap<String, Bucket>,
    /// Debates convened per identity.
    #[serde(default)]
    pub debates_by_identity: BTreeMap<String, u32>,
    /// Contributions held per debate.
    #[serde(default)]
    pub contributions_by_debate: BTreeMap<String, u32>,
    /// Motions opened by each identity's panel requests; decided ones are pruned.
    #[serde(default)]
    pub asked: BTreeMap<String, Vec<String>>,
    /// Batch time of the last pruning pass.
    #[serde(default)]
    pub pruned_at_ms: u64,
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
    pub fn code(&self) -> &'static str {
        match self {
            LimitError::RateLimited { .. } => "rate_limited",
            _ => "quota_exceeded",
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
    reply: &ItemReply,
    now_ms: u64,
) {
    let Command::Client(c) = command else {
        return;
    };
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
            if let Some(m) = v.get("motion_id").and_then(|m| m.as_str()) {
                l.asked
                    .entry(writer.identity.clone())
                    .or_default()
                    .push(m.to_string());
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

        fn write(&mut self, time_ms: u64, w: Option<&Writer>, command: Command) -> ItemReply {
            self.log_index += 1;
            let batch = Batch {
                time_ms,
                seed: self.log_index,
                items: vec![Item {
                    client_id: "t".into(),
                    request_id: self.log_index,
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
            r.items.into_iter().next().expect("one item").reply
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

    fn refused(r: &ItemReply, code: &str, needle: &str) -> bool {
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
}
