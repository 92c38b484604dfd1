//! The limits the leader stamps on each batch and who wrote each item (docs/SECURITY.md
//! "Fair shares"); `limits` applies them.

use serde::{Deserialize, Serialize};

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
    /// How the global caps are shared between organisations (module docs); `None` in
    /// policies stamped before they were, whose entries replay with undivided global caps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_share: Option<FairShare>,
    /// Which client writes leave a deduplication row and how many rows one writer may keep
    /// ([`ReplyBounds`]); `None` in policies stamped before, whose entries replay storing a
    /// row for every write, as they applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_replies: Option<ReplyBounds>,
}

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
            fair_share: Some(FairShare::default()),
            stored_replies: Some(ReplyBounds::default()),
        }
    }
}

/// The identity of callers that presented no client certificate (and of every caller in
/// the `--insecure-loopback` debug mode): one shared identity with its own budget, so
/// anonymity cannot outrun authenticated writers.
pub const ANONYMOUS: &str = "anonymous";

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

    pub(crate) fn full_milli(self) -> u64 {
        u64::from(self.burst.max(1)) * 1000
    }

    pub(crate) fn per_minute(self) -> u64 {
        u64::from(self.per_minute.max(1))
    }
}

/// The weights of the classes that share each global cap (module docs, "Fair shares").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FairShare {
    /// Parts of a cap for one organisation's writers (a member organisation under a
    /// charter; any named organisation without one).
    pub organisation_weight: u32,
    /// Parts for all anonymous callers together, with (under a charter) every certificate
    /// of no member organisation, such as those of an unpinned authority.
    pub anonymous_weight: u32,
}

impl Default for FairShare {
    /// An organisation counts twice what anonymous callers count: with two member
    /// organisations, 2/5, 2/5 and 1/5 of every global cap.
    fn default() -> Self {
        Self {
            organisation_weight: 2,
            anonymous_weight: 1,
        }
    }
}

/// The deduplication rows (`State::requests`, `reply_table.rs`) client writes may leave.
///
/// Under a policy with these bounds a write refused over a limit leaves no row (the
/// refusal says when to retry, and a retry with the same ids must be judged again, not
/// answered with the old refusal), and neither does any refused write of an anonymous
/// caller: it can simply retry, and gets no idempotent replay of a refusal. (A reader
/// holding only `ca.pem` once stored 14,000 refusals a minute, each kept a day.)
///
/// And one writer keeps at most so many rows: stored within the lease (24 h of batch time,
/// `DEDUP_TTL_MS`), counted by hour in the replicated state (`LimitsState::replies`,
/// [`StoredRows`](crate::model::reply_table::StoredRows)) per identity, per organisation (so
/// rotating certificates does not multiply the bound) and for the shared anonymous
/// identity. A write past a bound is refused (`quota_exceeded`, naming the bound, the
/// identity or organisation and the seconds until its oldest hour of rows expires) and
/// leaves no row. Refusing was chosen over evicting the writer's oldest rows: a stored
/// reply stays dropped by one rule alone, its lease, which the replicas' archive of
/// retired replies relies on (`reply_table.rs`), and every reply a writer was given keeps
/// answering its retries (at-most-once holds for every stored write, where eviction would
/// let a retry of an evicted write apply twice); the cost of the bound falls only on the
/// writer that reached it, and counting by hour makes it deterministic integer
/// arithmetic over batch time. Rows the entry window keeps past their lease
/// (`DEDUP_MIN_KEEP_ENTRIES`) are not counted: that window is bounded across all writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyBounds {
    /// Rows one certificate may have stored within the lease.
    pub per_identity: u32,
    /// Rows all certificates of one organisation may have stored within the lease.
    pub per_organisation: u32,
    /// Rows all anonymous callers together may have stored within the lease.
    pub anonymous: u32,
}

impl Default for ReplyBounds {
    fn default() -> Self {
        Self {
            per_identity: 100_000,
            per_organisation: 400_000,
            anonymous: 20_000,
        }
    }
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
