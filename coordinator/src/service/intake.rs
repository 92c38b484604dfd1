//! Intake protection for open contributions (the paper's finding: an open door needs a
//! rate limit before it opens, not after). On the leader, before proposal, every
//! contribution passes the Gate (a refusal names the rule, the excerpt and the fix) and a
//! per-author token bucket; an author over the limit gets a clear refusal saying when to
//! retry, and nothing reaches the log.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::command::{ClientCommand, Command, ContributionSubmission};

/// Per-author limits.
#[derive(Debug, Clone, Copy)]
pub struct IntakeLimits {
    /// Contributions an author may make in a burst.
    pub burst: u32,
    /// Sustained contributions per minute per author.
    pub per_minute: u32,
}

impl Default for IntakeLimits {
    fn default() -> Self {
        Self {
            burst: 30,
            per_minute: 60,
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by author (leader-local; a new leader starts them full).
#[derive(Debug, Default)]
pub struct Intake {
    limits: IntakeLimits,
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// Why a contribution was refused at intake.
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
}

impl Intake {
    pub fn new(limits: IntakeLimits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Checks a command at intake; only contributions are limited.
    pub fn admit(&self, command: &Command, now: Instant) -> Result<(), IntakeError> {
        let Command::Client(ClientCommand::Contribute(sub)) = command else {
            return Ok(());
        };
        gate(sub)?;
        self.take(&sub.author, now)
    }

    fn take(&self, author: &str, now: Instant) -> Result<(), IntakeError> {
        let rate = f64::from(self.limits.per_minute.max(1)) / 60.0;
        let burst = f64::from(self.limits.burst.max(1));
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let b = buckets.entry(author.to_string()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            let wait = Duration::from_secs_f64((1.0 - b.tokens) / rate);
            Err(IntakeError::RateLimited {
                author: author.to_string(),
                per_minute: self.limits.per_minute,
                burst: self.limits.burst,
                retry_ms: wait.as_millis() as u64,
            })
        }
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
}
