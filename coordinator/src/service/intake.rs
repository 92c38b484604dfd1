//! Intake protection (the paper's finding: an open door needs a rate limit before it
//! opens, not after). On the leader, before proposal, every contribution passes the Gate (a
//! refusal names the rule, the excerpt and the fix), and every client write that costs the
//! replicas memory (contributions, debates, panel requests, registrations) takes a token
//! from two buckets: one for its key (author, convener or arbiter id) and one for its kind
//! across all keys, so rotating names cannot outrun the global rate. A writer over a limit
//! gets a refusal saying when to retry, and nothing reaches the log. Buckets are leader
//! local (a new leader starts them full) and the per-key map is pruned, so a flood of fresh
//! names cannot grow it without bound.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::command::{ClientCommand, Command, ContributionSubmission};

/// One token bucket's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Writes allowed in a burst.
    pub burst: u32,
    /// Sustained writes per minute.
    pub per_minute: u32,
}

impl Rate {
    const fn new(burst: u32, per_minute: u32) -> Self {
        Self { burst, per_minute }
    }
}

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
        }
    }
}

/// Per-key buckets kept at most; above it, buckets that have refilled are dropped (a full
/// bucket and a missing one admit the same).
const MAX_KEYED_BUCKETS: usize = 10_000;

#[derive(Debug)]
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

#[derive(Debug, Default)]
struct Buckets {
    keyed: HashMap<(WriteKind, String), Bucket>,
    global: HashMap<WriteKind, Bucket>,
}

/// Why a write was refused at intake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    #[error(
        "the Gate refused the contribution:\n{report}\nFix the text and submit again; nothing was recorded."
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
}

impl Intake {
    pub fn new(limits: IntakeLimits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(Buckets::default()),
        }
    }

    /// Checks a client write at intake: the Gate for contributions, then the buckets of
    /// its key and its kind. Other writes pass.
    pub fn admit(&self, command: &Command, now: Instant) -> Result<(), IntakeError> {
        let Command::Client(c) = command else {
            return Ok(());
        };
        let l = &self.limits;
        let (kind, key, keyed, global) = match c {
            ClientCommand::Contribute(sub) => {
                gate(sub)?;
                let per_author = Rate::new(l.burst, l.per_minute);
                (
                    WriteKind::Contribution,
                    sub.author.as_str(),
                    Some(per_author),
                    l.contributions_global,
                )
            }
            ClientCommand::CreateDebate(spec) => (
                WriteKind::Debate,
                spec.convener.as_str(),
                Some(l.debates_per_convener),
                l.debates_global,
            ),
            ClientCommand::AskPanel(req) => (
                WriteKind::PanelRequest,
                req.author.as_str(),
                Some(l.panel_requests_per_author),
                l.panel_requests_global,
            ),
            ClientCommand::RegisterArbiter(_) => {
                (WriteKind::Registration, "", None, l.registrations_global)
            }
            _ => return Ok(()),
        };
        self.take(kind, key, keyed, global, now)
    }

    fn take(
        &self,
        kind: WriteKind,
        key: &str,
        keyed: Option<Rate>,
        global: Rate,
        now: Instant,
    ) -> Result<(), IntakeError> {
        let mut b = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Buckets {
            keyed: keyed_map,
            global: global_map,
        } = &mut *b;
        // Both buckets are checked before either is spent, so a write refused by one limit
        // costs its writer nothing under the other.
        let mut key_bucket = None;
        if let Some(rate) = keyed {
            if keyed_map.len() >= MAX_KEYED_BUCKETS {
                // The global buckets bound how fast keys arrive, and a key's bucket refills
                // within seconds, so this keeps the map near the live writers.
                keyed_map.retain(|_, bucket| bucket.level(now) < bucket.burst());
            }
            let bucket = keyed_map
                .entry((kind, key.to_owned()))
                .or_insert_with(|| Bucket::full(rate, now));
            bucket.ready(now).map_err(|wait| {
                let retry_ms = wait.as_millis() as u64;
                if kind == WriteKind::Contribution {
                    IntakeError::RateLimited {
                        author: key.to_owned(),
                        per_minute: rate.per_minute,
                        burst: rate.burst,
                        retry_ms,
                    }
                } else {
                    IntakeError::Busy {
                        what: kind.noun(),
                        who: key.to_owned(),
                        per_minute: rate.per_minute,
                        burst: rate.burst,
                        retry_ms,
                    }
                }
            })?;
            key_bucket = Some(bucket);
        }
        let global_bucket = global_map
            .entry(kind)
            .or_insert_with(|| Bucket::full(global, now));
        global_bucket.ready(now).map_err(|wait| IntakeError::Busy {
            what: kind.noun(),
            who: "all writers".into(),
            per_minute: global.per_minute,
            burst: global.burst,
            retry_ms: wait.as_millis().max(1) as u64,
        })?;
        global_bucket.tokens -= 1.0;
        if let Some(bucket) = key_bucket {
            bucket.tokens -= 1.0;
        }
        Ok(())
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
        }))
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
                .admit(&thread("flood", ok), t0)
                .expect("within the burst");
        }
        match intake.admit(&thread("flood", ok), t0) {
            Err(IntakeError::RateLimited { retry_ms, .. }) => assert!(retry_ms > 0),
            other => panic!("expected a rate-limit refusal, got {other:?}"),
        }
        intake
            .admit(&thread("calm", ok), t0)
            .expect("another author is unaffected");
        // One token refills per second at 60 per minute.
        intake
            .admit(&thread("flood", ok), t0 + Duration::from_millis(1100))
            .expect("refilled");
    }

    #[test]
    fn the_gate_runs_before_proposal_and_names_rule_excerpt_and_fix() {
        let intake = Intake::default();
        let err = intake
            .admit(
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
                .admit(&new_debate(&format!("c{i}")), t0)
                .expect("within the global burst");
        }
        match intake.admit(&new_debate("fresh-name"), t0) {
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
            ..IntakeLimits::default()
        });
        let t0 = Instant::now();
        for i in 0..(2 * MAX_KEYED_BUCKETS) {
            let at = t0 + Duration::from_millis(i as u64);
            intake
                .admit(&new_debate(&format!("n{i}")), at)
                .expect("a fresh name");
        }
        let len = intake.buckets.lock().expect("lock").keyed.len();
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
        intake.admit(&new_debate("a"), t0).expect("first write");
        match intake.admit(&new_debate("b"), t0) {
            Err(IntakeError::Busy { who, .. }) => assert_eq!(who, "all writers"),
            other => panic!("expected the global limit, got {other:?}"),
        }
        // Two seconds later the global bucket has refilled; b's own bucket (one a minute)
        // could not have, so b is admitted only if the refusal left it untouched.
        let later = t0 + Duration::from_secs(2);
        intake
            .admit(&new_debate("b"), later)
            .expect("b's token is intact");
    }
}
