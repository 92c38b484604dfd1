//! Intake protection (the paper's finding: an open door needs a rate limit before it
//! opens, not after). On the leader, before proposal, every contribution passes the Gate (a
//! refusal names the rule, the excerpt and the fix), and every client write that costs the
//! replicas memory (contributions, debates, panel requests, registrations) takes a token
//! from two buckets: one for its key (author, convener or arbiter id) and one for its kind
//! across all keys, so rotating names cannot outrun the global rate. A writer over a limit
//! gets a refusal saying when to retry, and nothing reaches the log. These buckets are leader
//! local (a new leader starts them full) and the per-key map is pruned, so a flood of fresh
//! names cannot grow it without bound; the global rates are stamped into every batch
//! ([`IntakeLimits::stamped_policy`]) and enforced again in apply, so they survive a
//! failover.
//!
//! On top of that every client write takes a token from its writer's buckets: the caller's
//! certificate (or the one shared anonymous identity), its organisation, and a global
//! bucket for all client writes (docs/SECURITY.md, "Floods"). The per-identity and
//! per-organisation quotas are also enforced in apply (`panel_machine::features::limits`) from the
//! identity this intake stamps on the logged item, so they survive a failover; these
//! buckets only refuse early, before a write costs a log entry.
//!
//! The global buckets (all client writes, and each kind's) are shared between
//! organisations as apply shares them (`panel_machine::features::limits`, "Fair shares"): each
//! organisation is one class, the anonymous callers together one more with a smaller
//! weight (as are certificates of no charter organisation), and a class's share is its
//! weight's part of the bucket's burst and rate among the classes that used some of their
//! share recently and the writer's. A write is admitted if its class's share has a token,
//! or if the global bucket holds one beyond every other class's unused share: so one
//! organisation's flood cannot take another's share, and a writer alone may still use the
//! rate nobody else claims. This intake does not know the charter's members, so a class
//! that has not written recently is not reserved for; instead its share is honoured even
//! when the others have spent the global bucket (which then goes below zero and lends no
//! one anything until it has refilled), so the first writes of an organisation arriving
//! in the middle of another's flood go through too. Apply reserves the shares of every
//! member organisation from the start, and so refuses a flooder's writes beyond its share
//! that this intake let through alone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use panel_machine::{ClientCommand, Command, ContributionSubmission};

pub use panel_machine::features::limits::Rate;
use panel_machine::features::limits::{LimitPolicy, Writer};

/// Limits per key and per kind.
#[derive(Debug, Clone, Copy)]
pub struct IntakeLimits {
    /// Contributions per author.
    pub burst: u32,
    /// Sustained contributions per minute per author.
    pub per_minute: u32,
    /// Contributions across all authors.
    pub contributions_global: Rate,
    /// `CreateDebate` per convener and across conveners.
    pub debates_per_convener: Rate,
    pub debates_global: Rate,
    /// `AskPanel` per author and across authors.
    pub panel_requests_per_author: Rate,
    pub panel_requests_global: Rate,
    /// `RegisterArbiter` across all ids.
    pub registrations_global: Rate,
    /// Every client write across all writers (`--global-burst`, `--global-per-minute`).
    pub writes_global: Rate,
    /// Per identity, per organisation and anonymous rates, and the caps apply enforces
    /// (stamped into every batch by the proposer).
    pub policy: LimitPolicy,
}

impl IntakeLimits {
    /// The policy the proposer stamps into every batch: the per-writer rates and caps, and
    /// the global rates, so apply enforces those too and a failover does not reset them.
    pub fn stamped_policy(&self) -> LimitPolicy {
        LimitPolicy {
            global: Some(panel_machine::features::limits::GlobalRates {
                all_writes: self.writes_global,
                contributions: self.contributions_global,
                debates: self.debates_global,
                panel_requests: self.panel_requests_global,
                registrations: self.registrations_global,
            }),
            ..self.policy
        }
    }
}

impl Default for IntakeLimits {
    fn default() -> Self {
        Self {
            burst: 30,
            per_minute: 60,
            contributions_global: Rate::new(2_000, 60_000),
            debates_per_convener: Rate::new(10, 30),
            debates_global: Rate::new(50, 300),
            panel_requests_per_author: Rate::new(20, 60),
            panel_requests_global: Rate::new(100, 1_200),
            registrations_global: Rate::new(50, 300),
            writes_global: Rate::new(10_000, 120_000),
            policy: LimitPolicy::default(),
        }
    }
}

/// Per-key buckets kept at most; above it, buckets that have refilled are dropped (a full
/// bucket and a missing one admit the same).
const MAX_KEYED_BUCKETS: usize = 10_000;

#[derive(Debug, Clone)]
struct Bucket {
    rate: Rate,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(rate: Rate, now: Instant) -> Self {
        Self {
            rate,
            tokens: f64::from(rate.burst.max(1)),
            at: now,
        }
    }

    fn per_sec(&self) -> f64 {
        f64::from(self.rate.per_minute.max(1)) / 60.0
    }

    fn burst(&self) -> f64 {
        f64::from(self.rate.burst.max(1))
    }

    /// The tokens the bucket holds at `now`.
    fn level(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * self.per_sec()).min(self.burst())
    }

    /// Refills to `now`; says how long until a token is there if none is.
    fn ready(&mut self, now: Instant) -> Result<(), Duration> {
        self.tokens = self.level(now);
        self.at = now;
        if self.tokens >= 1.0 {
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - self.tokens) / self.per_sec(),
            ))
        }
    }
}

/// What a limited write is, for the buckets and the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteKind {
    Contribution,
    Debate,
    PanelRequest,
    Registration,
}

impl WriteKind {
    fn noun(self) -> &'static str {
        match self {
            WriteKind::Contribution => "contributions",
            WriteKind::Debate => "new debates",
            WriteKind::PanelRequest => "panel requests",
            WriteKind::Registration => "arbiter registrations",
        }
    }
}

/// Token buckets by key and by kind.
#[derive(Debug, Default)]
pub struct Intake {
    limits: IntakeLimits,
    buckets: Mutex<Buckets>,
}

/// Which bucket: a key of one kind, a kind across keys, a writer's identity or
/// organisation, or all client writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum BucketKey {
    Keyed(WriteKind, String),
    Global(WriteKind),
    Identity(String),
    Organisation(String),
    AllWrites,
}

#[derive(Debug, Default)]
struct Buckets {
    map: HashMap<BucketKey, Bucket>,
    /// How much of its share of each global bucket each class has used (module docs).
    shares: HashMap<BucketKey, HashMap<String, Used>>,
}

/// A class's use of its share of one global bucket: tokens used at `at`, leaking at the
/// share's rate, and the class's weight.
#[derive(Debug, Clone, Copy)]
struct Used {
    tokens: f64,
    at: Instant,
    weight: f64,
}

/// One class's part of a global bucket's rate, among classes of `total` weight.
#[derive(Debug, Clone, Copy)]
struct Share {
    rate: Rate,
    weight: f64,
    total: f64,
}

impl Share {
    /// Tokens of the share's burst: at least one, so every class may write.
    fn cap(self) -> f64 {
        (f64::from(self.rate.burst.max(1)) * self.weight / self.total).max(1.0)
    }

    fn per_sec(self) -> f64 {
        f64::from(self.rate.per_minute.max(1)) / 60.0 * self.weight / self.total
    }

    /// Tokens of the share in use at `now`.
    fn used(self, u: Option<&Used>, now: Instant) -> f64 {
        u.map_or(0.0, |u| {
            let leaked = now.saturating_duration_since(u.at).as_secs_f64() * self.per_sec();
            (u.tokens - leaked).max(0.0)
        })
        .min(self.cap())
    }

    fn unused(self, u: Option<&Used>, now: Instant) -> f64 {
        self.cap() - self.used(u, now)
    }
}

/// The classes sharing one global bucket: those that used some of their share and have
/// not refilled it, and the writer's; with their total weight.
fn sharing<'a>(
    used: Option<&'a HashMap<String, Used>>,
    rate: Rate,
    class: &'a str,
    weight: f64,
    now: Instant,
) -> (Vec<(&'a str, f64)>, f64) {
    let mut classes: Vec<(&str, f64)> = vec![(class, weight)];
    for (c, u) in used.into_iter().flatten() {
        if c != class {
            classes.push((c.as_str(), u.weight));
        }
    }
    // A class whose use has leaked away has no demand, whatever the others' weights.
    let total_all: f64 = classes.iter().map(|(_, w)| w).sum();
    classes.retain(|(c, w)| {
        *c == class
            || Share {
                rate,
                weight: *w,
                total: total_all,
            }
            .used(used.and_then(|m| m.get(*c)), now)
                > 0.0
    });
    let total = classes.iter().map(|(_, w)| w).sum::<f64>().max(1.0);
    (classes, total)
}

/// Why a write was refused at intake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    #[error(
        "the Gate refused the contribution:\n{report}\nFix the text as each violation's fix says and submit again (`panel gate` checks fields offline); nothing was recorded."
    )]
    Gate {
        report: String,
        violations: Vec<crucible::gate::Violation>,
    },
    #[error(
        "author {author} has made too many contributions ({per_minute} per minute, bursts of {burst}); retry in {retry_ms} ms"
    )]
    RateLimited {
        author: String,
        per_minute: u32,
        burst: u32,
        retry_ms: u64,
    },
    #[error(
        "too many {what} from {who} ({per_minute} per minute, bursts of {burst}); retry in {retry_ms} ms"
    )]
    Busy {
        what: &'static str,
        /// The key, or "all writers" for the global limit.
        who: String,
        per_minute: u32,
        burst: u32,
        retry_ms: u64,
    },
    #[error(
        "rate limited: the {limit} limit ({per_minute} writes per minute, bursts of {burst}) of {who} is used up; retry in {retry_secs} s"
    )]
    Writer {
        /// "per-identity", "per-organisation", "anonymous" or "global".
        limit: &'static str,
        /// The identity, organisation, or "all client writers".
        who: String,
        per_minute: u32,
        burst: u32,
        retry_secs: u64,
    },
}

impl Intake {
    pub fn new(limits: IntakeLimits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(Buckets::default()),
        }
    }

    /// The limits apply enforces, for the proposer to stamp into every batch.
    pub fn policy(&self) -> &LimitPolicy {
        &self.limits.policy
    }

    /// Checks a client write at intake: the Gate for contributions, then the buckets of
    /// its writer (identity, organisation, all writes), of its key and of its kind. Only
    /// client commands are limited (test commands exist on test clusters only).
    pub fn admit(
        &self,
        command: &Command,
        writer: &Writer,
        now: Instant,
    ) -> Result<(), IntakeError> {
        let Command::Client(c) = command else {
            return Ok(());
        };
        let l = &self.limits;
        let mut wanted: Vec<(BucketKey, Rate)> = Vec::with_capacity(5);
        if writer.is_anonymous() {
            wanted.push((
                BucketKey::Identity(writer.identity.clone()),
                l.policy.anonymous,
            ));
        } else {
            wanted.push((
                BucketKey::Identity(writer.identity.clone()),
                l.policy.per_identity,
            ));
        }
        if let Some(org) = &writer.organisation {
            wanted.push((
                BucketKey::Organisation(org.clone()),
                l.policy.per_organisation,
            ));
        }
        wanted.push((BucketKey::AllWrites, l.writes_global));
        let kind = match c {
            ClientCommand::Contribute(sub) => {
                gate(sub)?;
                Some((
                    WriteKind::Contribution,
                    sub.author.as_str(),
                    Some(Rate::new(l.burst, l.per_minute)),
                    l.contributions_global,
                ))
            }
            ClientCommand::CreateDebate(spec) => Some((
                WriteKind::Debate,
                spec.convener.as_str(),
                Some(l.debates_per_convener),
                l.debates_global,
            )),
            // A procedure run costs what a debate costs, and its inputs what contributions do.
            ClientCommand::StartRun(req) => Some((
                WriteKind::Debate,
                req.convener.as_str(),
                Some(l.debates_per_convener),
                l.debates_global,
            )),
            // No bucket keyed by the run: a flood of unsigned inputs naming a run must not
            // use up the budget of the roles that may speak in it. The writer's own
            // buckets (above) and the global contributions bucket still bound the input.
            ClientCommand::SubmitRunInput(_) => {
                Some((WriteKind::Contribution, "", None, l.contributions_global))
            }
            ClientCommand::AskPanel(req) => Some((
                WriteKind::PanelRequest,
                req.author.as_str(),
                Some(l.panel_requests_per_author),
                l.panel_requests_global,
            )),
            ClientCommand::RegisterArbiter(_) => {
                Some((WriteKind::Registration, "", None, l.registrations_global))
            }
            _ => None,
        };
        if let Some((kind, key, keyed, global)) = kind {
            if let Some(rate) = keyed {
                wanted.push((BucketKey::Keyed(kind, key.to_owned()), rate));
            }
            wanted.push((BucketKey::Global(kind), global));
        }
        self.take(&wanted, self.class_of(writer).as_ref(), now)
    }

    /// The writer's class and weight in the shares of the global buckets (module docs);
    /// `None` when the policy does not share them.
    fn class_of(&self, writer: &Writer) -> Option<(String, f64)> {
        let fs = self.limits.policy.fair_share?;
        let outsider = (
            panel_machine::features::limits::ANONYMOUS.to_owned(),
            f64::from(fs.anonymous_weight.max(1)),
        );
        Some(match &writer.organisation {
            _ if writer.is_anonymous() => outsider,
            Some(org) if org != crate::service::replica::UNLISTED_ORGANISATION => (
                format!("organisation:{org}"),
                f64::from(fs.organisation_weight.max(1)),
            ),
            Some(org) => (
                format!("organisation:{org}"),
                f64::from(fs.anonymous_weight.max(1)),
            ),
            None => outsider,
        })
    }

    /// Takes a token from every bucket in `wanted`, or from none: all are checked before
    /// any is spent, so a write refused by one limit costs its writer nothing under the
    /// others.
    ///
    /// With `class` (the writer's class and weight) the global buckets are shared (module
    /// docs): a global bucket admits the write if the class's share has a token, or if the
    /// bucket holds one beyond the other classes' unused shares.
    fn take(
        &self,
        wanted: &[(BucketKey, Rate)],
        class: Option<&(String, f64)>,
        now: Instant,
    ) -> Result<(), IntakeError> {
        let mut b = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Buckets { map, shares } = &mut *b;
        if map.len() >= MAX_KEYED_BUCKETS {
            // The global buckets bound how fast keys arrive, and a key's bucket refills
            // within seconds, so this keeps the map near the live writers.
            map.retain(|_, bucket| bucket.level(now) < bucket.burst());
        }
        let shared = |key: &BucketKey| matches!(key, BucketKey::Global(_) | BucketKey::AllWrites);
        for (key, rate) in wanted {
            let mut probe = map
                .get(key)
                .cloned()
                .unwrap_or_else(|| Bucket::full(*rate, now));
            let ready = probe.ready(now);
            let Some((class, weight)) = class.filter(|_| shared(key)) else {
                if let Err(wait) = ready {
                    return Err(refusal(key, *rate, wait));
                }
                continue;
            };
            let used = shares.get(key);
            let (classes, total) = sharing(used, *rate, class, *weight, now);
            let share = |w: f64| Share {
                rate: *rate,
                weight: w,
                total,
            };
            let entry = |c: &str| used.and_then(|m| m.get(c));
            let mine = share(*weight);
            if mine.unused(entry(class), now) >= 1.0 {
                continue;
            }
            let others: f64 = classes
                .iter()
                .filter(|(c, _)| c != class)
                .map(|(c, w)| share(*w).unused(entry(c), now))
                .sum();
            if probe.tokens >= 1.0 + others {
                continue;
            }
            // The share has a whole token again once its use has leaked below cap - 1.
            let excess = mine.used(entry(class), now) - (mine.cap() - 1.0);
            let wait = Duration::from_secs_f64((excess / mine.per_sec()).max(0.0));
            // A bucket spent to below a token is refused as the global limit it is.
            if let Err(empty) = ready {
                return Err(refusal(key, *rate, empty.max(wait)));
            }
            return Err(share_refusal(key, mine, class, classes.len(), wait));
        }
        for (key, rate) in wanted {
            let bucket = map
                .entry(key.clone())
                .or_insert_with(|| Bucket::full(*rate, now));
            let _ = bucket.ready(now);
            // Checked above under the same lock, so the token is there, or (a shared
            // bucket) the class's share vouches for it and the bucket goes below zero.
            bucket.tokens -= 1.0;
            let Some((class, weight)) = class.filter(|_| shared(key)) else {
                continue;
            };
            let classes = shares.entry(key.clone()).or_default();
            let (members, total) = sharing(Some(classes), *rate, class, *weight, now);
            let members: Vec<String> = members.into_iter().map(|(c, _)| c.to_owned()).collect();
            let share = Share {
                rate: *rate,
                weight: *weight,
                total,
            };
            let used = share.used(classes.get(class.as_str()), now);
            // Classes without demand are forgotten (the map keeps the live classes only).
            classes.retain(|c, _| members.contains(c));
            classes.insert(
                class.clone(),
                Used {
                    tokens: (used + 1.0).min(share.cap()),
                    at: now,
                    weight: *weight,
                },
            );
        }
        Ok(())
    }
}

/// The refusal naming the bucket that ran out and when it holds a token again.
fn refusal(key: &BucketKey, rate: Rate, wait: Duration) -> IntakeError {
    let retry_ms = (wait.as_millis() as u64).max(1);
    let retry_secs = wait.as_secs_f64().ceil().max(1.0) as u64;
    let writer = |limit: &'static str, who: String| IntakeError::Writer {
        limit,
        who,
        per_minute: rate.per_minute,
        burst: rate.burst,
        retry_secs,
    };
    match key {
        BucketKey::Keyed(WriteKind::Contribution, author) => IntakeError::RateLimited {
            author: author.clone(),
            per_minute: rate.per_minute,
            burst: rate.burst,
            retry_ms,
        },
        BucketKey::Keyed(kind, who) => IntakeError::Busy {
            what: kind.noun(),
            who: who.clone(),
            per_minute: rate.per_minute,
            burst: rate.burst,
            retry_ms,
        },
        BucketKey::Global(kind) => IntakeError::Busy {
            what: kind.noun(),
            who: "all writers".into(),
            per_minute: rate.per_minute,
            burst: rate.burst,
            retry_ms,
        },
        BucketKey::Identity(id) if id == panel_machine::features::limits::ANONYMOUS => writer(
            "anonymous",
            "anonymous callers (no client certificate)".into(),
        ),
        BucketKey::Identity(id) => writer("per-identity", format!("identity {id}")),
        BucketKey::Organisation(org) => writer("per-organisation", format!("organisation {org}")),
        BucketKey::AllWrites => writer("global", "all client writers".into()),
    }
}

/// The refusal of a class over its share of a global bucket, naming the class, the share
/// and when it holds a token again.
fn share_refusal(
    key: &BucketKey,
    share: Share,
    class: &str,
    classes: usize,
    wait: Duration,
) -> IntakeError {
    let what = match key {
        BucketKey::Global(kind) => format!("all writers' {}", kind.noun()),
        _ => "all client writes".to_owned(),
    };
    let who = match class.strip_prefix("organisation:") {
        Some(org) => format!("organisation {org}"),
        None => "anonymous callers (no client certificate)".to_owned(),
    };
    IntakeError::Writer {
        limit: "global fair-share",
        who: format!("{who} (its share of {what}, shared by {classes} writer classes now writing)"),
        per_minute: (f64::from(share.rate.per_minute.max(1)) * share.weight / share.total) as u32,
        burst: share.cap() as u32,
        retry_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
    }
}

/// Runs the Gate on a contribution; the refusal lists rule, field, excerpt, message, fix.
pub fn gate(sub: &ContributionSubmission) -> Result<(), IntakeError> {
    let (fields, ctx) = sub.contribution.gate_input(&sub.author, &sub.side);
    let violations = crucible::gate::check(&fields, &ctx);
    if violations.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = violations
        .iter()
        .map(|v| {
            format!(
                "  {} {} [{}] \"{}\": {} Fix: {}",
                v.rule.as_str(),
                v.rule_name,
                v.field,
                v.excerpt,
                v.message,
                v.fix
            )
        })
        .collect();
    Err(IntakeError::Gate {
        report: lines.join("\n"),
        violations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible::contribution::{ClaimInput, Contribution};

    fn thread(author: &str, assertion: &str) -> Command {
        Command::Client(ClientCommand::Contribute(ContributionSubmission {
            debate_id: "deb_1".into(),
            author: author.into(),
            side: "A".into(),
            model_family: None,
            signature: None,
            contribution: Contribution::Thread {
                title: "Output".into(),
                claim: ClaimInput {
                    kind: "logical".into(),
                    assertion: assertion.into(),
                    grounds: "Shorter weeks reduce fatigue according to the cited trial data."
                        .into(),
                    warrant: "Less fatigue raises output per hour.".into(),
                    evidence: vec![],
                    qualifier: "probable".into(),
                },
            },
            hints: Default::default(),
            random_sample: false,
        }))
    }

    impl Intake {
        fn admit_anon(&self, c: &Command, now: Instant) -> Result<(), IntakeError> {
            self.admit(c, &Writer::anonymous(), now)
        }
    }

    fn unlimited_writers() -> IntakeLimits {
        let free = Rate::new(u32::MAX / 2, u32::MAX / 2);
        IntakeLimits {
            writes_global: free,
            policy: LimitPolicy {
                anonymous: free,
                per_identity: free,
                per_organisation: free,
                ..LimitPolicy::default()
            },
            ..IntakeLimits::default()
        }
    }

    #[test]
    fn an_author_over_the_limit_is_refused_with_a_retry_time_and_others_are_not() {
        let intake = Intake::new(IntakeLimits {
            burst: 3,
            per_minute: 60,
            ..IntakeLimits::default()
        });
        let t0 = Instant::now();
        let ok = "Output per hour rises when weekly hours fall.";
        for _ in 0..3 {
            intake
                .admit_anon(&thread("flood", ok), t0)
                .expect("within the burst");
        }
        match intake.admit_anon(&thread("flood", ok), t0) {
            Err(IntakeError::RateLimited { retry_ms, .. }) => assert!(retry_ms > 0),
            other => panic!("expected a rate-limit refusal, got {other:?}"),
        }
        intake
            .admit_anon(&thread("calm", ok), t0)
            .expect("another author is unaffected");
        // One token refills per second at 60 per minute.
        intake
            .admit_anon(&thread("flood", ok), t0 + Duration::from_millis(1100))
            .expect("refilled");
    }

    #[test]
    fn the_gate_runs_before_proposal_and_names_rule_excerpt_and_fix() {
        let intake = Intake::default();
        let err = intake
            .admit_anon(
                &thread("ada", "Only an idiot denies that output rises!"),
                Instant::now(),
            )
            .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("G4"), "{text}");
        assert!(text.contains("G7"), "{text}");
        assert!(text.contains("idiot"), "{text}");
        assert!(text.contains("Fix:"), "{text}");
    }

    fn new_debate(convener: &str) -> Command {
        Command::Client(ClientCommand::CreateDebate(
            serde_json::from_value(serde_json::json!({
                "resolution": "r", "pos_a": "a", "pos_b": "b", "seats": 4,
                "min_per_stance": 1, "convener": convener,
            }))
            .expect("debate"),
        ))
    }

    /// Rotating names does not outrun the global rate: after the global burst every new
    /// convener is refused too, with a retry time.
    #[test]
    fn rotating_names_meet_the_global_limit() {
        let intake = Intake::default();
        let t0 = Instant::now();
        let burst = IntakeLimits::default().debates_global.burst;
        for i in 0..burst {
            intake
                .admit_anon(&new_debate(&format!("c{i}")), t0)
                .expect("within the global burst");
        }
        match intake.admit_anon(&new_debate("fresh-name"), t0) {
            Err(IntakeError::Busy { who, retry_ms, .. }) => {
                assert_eq!(who, "all writers");
                assert!(retry_ms > 0);
            }
            other => panic!("expected the global limit, got {other:?}"),
        }
    }

    /// A flood of fresh names keeps the per-key map bounded.
    #[test]
    fn the_per_key_map_stays_bounded() {
        let intake = Intake::new(IntakeLimits {
            debates_global: Rate::new(u32::MAX, u32::MAX),
            ..unlimited_writers()
        });
        let t0 = Instant::now();
        for i in 0..(2 * MAX_KEYED_BUCKETS) {
            let at = t0 + Duration::from_millis(i as u64);
            intake
                .admit_anon(&new_debate(&format!("n{i}")), at)
                .expect("a fresh name");
        }
        let len = intake.buckets.lock().expect("lock").map.len();
        assert!(len <= MAX_KEYED_BUCKETS, "{len} buckets");
    }

    /// A write refused by the global limit does not spend its writer's own token.
    #[test]
    fn a_global_refusal_costs_the_writer_nothing() {
        let intake = Intake::new(IntakeLimits {
            debates_per_convener: Rate::new(1, 1),
            debates_global: Rate::new(1, 60),
            ..IntakeLimits::default()
        });
        let t0 = Instant::now();
        intake
            .admit_anon(&new_debate("a"), t0)
            .expect("first write");
        match intake.admit_anon(&new_debate("b"), t0) {
            Err(IntakeError::Busy { who, .. }) => assert_eq!(who, "all writers"),
            other => panic!("expected the global limit, got {other:?}"),
        }
        // Two seconds later the global bucket has refilled; b's own bucket (one a minute)
        // could not have, so b is admitted only if the refusal left it untouched.
        let later = t0 + Duration::from_secs(2);
        intake
            .admit_anon(&new_debate("b"), later)
            .expect("b's token is intact");
    }

    fn writer(identity: &str, org: &str) -> Writer {
        Writer {
            identity: identity.into(),
            organisation: Some(org.into()),
        }
    }

    /// The leader's fast buckets per identity and per organisation: a flooding
    /// certificate, then its organisation's other certificates, are refused with the
    /// limit, who and seconds to retry, while another organisation's writer is served.
    #[test]
    fn writers_are_limited_per_identity_and_per_organisation() {
        let intake = Intake::new(IntakeLimits {
            policy: LimitPolicy {
                per_identity: Rate::new(2, 6),
                per_organisation: Rate::new(3, 6),
                ..LimitPolicy::default()
            },
            ..IntakeLimits::default()
        });
        let t0 = Instant::now();
        let cmd = |i: u32| new_debate(&format!("c{i}"));
        let flood = writer("f1", "north");
        intake.admit(&cmd(0), &flood, t0).expect("burst");
        intake.admit(&cmd(1), &flood, t0).expect("burst");
        match intake.admit(&cmd(2), &flood, t0) {
            Err(e @ IntakeError::Writer { .. }) => {
                let text = e.to_string();
                assert!(text.contains("identity f1"), "{text}");
                assert!(text.contains("retry in 10 s"), "{text}");
            }
            other => panic!("expected the identity limit, got {other:?}"),
        }
        intake
            .admit(&cmd(3), &writer("f2", "north"), t0)
            .expect("north's third write");
        match intake.admit(&cmd(4), &writer("f3", "north"), t0) {
            Err(e @ IntakeError::Writer { .. }) => {
                assert!(e.to_string().contains("organisation north"), "{e}")
            }
            other => panic!("expected the organisation limit, got {other:?}"),
        }
        intake
            .admit(&cmd(5), &writer("s1", "south"), t0)
            .expect("another organisation is served");
    }

    /// Fair shares (docs/SECURITY.md "What is enforced") at the leader's intake: one certificate of `north` floods new
    /// debates past the global debates bucket while `south` sends 6 writes interleaved.
    /// Before fair shares the flood took the bucket and south got 1 of 6 through; now
    /// south's share is honoured (even though north spent the bucket before south first
    /// wrote), and north is refused with its share named.
    #[test]
    fn a_flooding_organisation_cannot_take_anothers_share_at_intake() {
        let intake = Intake::new(IntakeLimits {
            debates_global: Rate::new(12, 12),
            ..IntakeLimits::default()
        });
        let t0 = Instant::now();
        let (flood, honest) = (writer("f1", "north"), writer("h1", "south"));
        let (mut a, mut b) = (0, 0);
        let mut refusal = None;
        for i in 0..60u64 {
            let at = t0 + Duration::from_millis(10 * i);
            match intake.admit(&new_debate(&format!("f{i}")), &flood, at) {
                Ok(()) => a += 1,
                Err(e) => {
                    refusal.get_or_insert(e);
                }
            }
            if i % 10 == 9
                && intake
                    .admit(&new_debate(&format!("h{i}")), &honest, at)
                    .is_ok()
            {
                b += 1;
            }
        }
        eprintln!("intake: flooding organisation {a} of 60 through, the other {b} of 6");
        assert_eq!(b, 6, "south's writes within its share all pass");
        assert!(a <= 12, "{a}");
        let text = refusal.expect("the flood was refused").to_string();
        for needle in ["global fair-share", "organisation north", "retry in"] {
            assert!(text.contains(needle), "{needle}: {text}");
        }
        // South's share is used up now too, and neither may borrow from the spent bucket.
        let at = t0 + Duration::from_millis(700);
        let c = writer("h2", "south");
        let later = (0..10)
            .filter(|i| intake.admit(&new_debate(&format!("s{i}")), &c, at).is_ok())
            .count();
        assert_eq!(later, 0);
    }

    /// An organisation that first writes after another's flood spent the global bucket
    /// still gets its share at once; anonymous callers get a smaller one.
    #[test]
    fn a_late_organisation_gets_its_share_after_a_flood() {
        let intake = Intake::new(IntakeLimits {
            debates_global: Rate::new(12, 12),
            ..IntakeLimits::default()
        });
        let t0 = Instant::now();
        let flood = writer("f1", "north");
        let served = |w: &Writer, n: u32, tag: &str| {
            (0..n)
                .filter(|i| {
                    intake
                        .admit(&new_debate(&format!("{tag}{i}")), w, t0)
                        .is_ok()
                })
                .count()
        };
        assert_eq!(
            served(&flood, 60, "f"),
            12,
            "alone, the flood may use the whole bucket"
        );
        assert_eq!(served(&writer("h1", "south"), 10, "h"), 6, "south's half");
        assert_eq!(
            served(&Writer::anonymous(), 10, "a"),
            2,
            "1 of 5 parts of 12"
        );
        assert_eq!(
            served(&flood, 10, "g"),
            0,
            "north has nothing left to borrow"
        );
    }
}
