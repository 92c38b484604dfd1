//! The debate document of SPEC section 3, with the exact camelCase field names and key
//! order the reference engine writes, so a document moves between engines unchanged.
//!
//! Fields the reference fills from caller input (a version's author, type, assertion, ...)
//! are `Option` and vanish from the JSON when absent, as JavaScript's `undefined` does.
//! Fields the reference always writes (relevance, canonicalId, resolution, ...) are
//! `Option` serialised as `null`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Schema version this engine writes (SPEC 3.1 `schemaVersion`).
pub const SCHEMA_VERSION: u32 = 1;

/// A JSON number that prints like JavaScript: integral values without a fraction
/// (`3`, not `3.0`), so documents written here are byte-comparable with the reference's.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Num(pub f64);

impl Num {
    pub fn get(self) -> f64 {
        self.0
    }
}

impl From<f64> for Num {
    fn from(v: f64) -> Self {
        Num(v)
    }
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        // JSON.stringify writes non-finite numbers as null.
        if !v.is_finite() {
            return s.serialize_none();
        }
        if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
            // -0 prints as 0 in JavaScript.
            return s.serialize_i64(v as i64);
        }
        s.serialize_f64(v)
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        f64::deserialize(d).map(Num)
    }
}

/// The two sides of a debate (SPEC 3.1 `positions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }

    /// Parses exactly `A` or `B`, as G1 and the writers compare.
    pub fn parse(s: &str) -> Option<Side> {
        match s {
            "A" => Some(Side::A),
            "B" => Some(Side::B),
            _ => None,
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pair of values keyed by side, serialised as `{A, B}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BySide<T> {
    #[serde(rename = "A", default)]
    pub a: T,
    #[serde(rename = "B", default)]
    pub b: T,
}

impl<T> BySide<T> {
    pub fn get(&self, side: Side) -> &T {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    pub fn get_mut(&mut self, side: Side) -> &mut T {
        match side {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
        }
    }
}

/// Phase keys (SPEC section 6). `appeal-review` sits outside the ordered sequence.
pub mod phase {
    pub const FRAMING: &str = "framing";
    pub const CONSTRUCTION: &str = "construction";
    pub const CHALLENGE: &str = "challenge";
    pub const STEELMAN: &str = "steelman";
    pub const ADJUDICATION: &str = "adjudication";
    pub const VERDICT: &str = "verdict";
    pub const CLOSED: &str = "closed";
    pub const APPEAL_REVIEW: &str = "appeal-review";
    /// The ordered phases; an advance moves to the next one.
    pub const ORDER: [&str; 7] = [
        FRAMING,
        CONSTRUCTION,
        CHALLENGE,
        STEELMAN,
        ADJUDICATION,
        VERDICT,
        CLOSED,
    ];
}

/// Version status keys (SPEC 3.4).
pub mod status {
    pub const CANDIDATE: &str = "candidate";
    pub const MERGED: &str = "merged";
    pub const SUPERSEDED: &str = "superseded";
    pub const DEMOTED: &str = "demoted";
    pub const REJECTED: &str = "rejected";
}

/// The debate document (SPEC 3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Debate {
    pub schema_version: u32,
    /// Missing ids load as empty: a reader can still recompute the ledger (the
    /// reference's migrate does not require one either).
    #[serde(default)]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Num>,
    #[serde(default)]
    pub resolution: String,
    pub positions: BySide<String>,
    pub burden: String,
    /// Stored as given; the ledger floors it (reference behaviour, digest 6.6).
    pub claim_budget: Option<Num>,
    pub definitions: Vec<Definition>,
    pub phase: String,
    pub threads: Vec<Thread>,
    pub challenges: Vec<Challenge>,
    pub steelmans: BySide<Steelman>,
    pub verdicts: Vec<Verdict>,
    pub appeals: Vec<Appeal>,
    pub appeal_targets: Vec<String>,
    pub active_appeal_id: Option<String>,
    pub log: Vec<LogEntry>,
    /// Keys another engine or host added; kept so nothing is lost on a round trip.
    /// Filled by [`crate::migrate::load`] and written back by [`Debate::to_json`]
    /// (not `flatten`, which would hide JSON paths in load errors).
    #[serde(skip)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
}

/// A thread: one atomic point with its version history (SPEC 3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub versions: Vec<Version>,
    pub canonical_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Num>,
}

impl Thread {
    pub fn version(&self, id: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.id == id)
    }

    pub fn version_mut(&mut self, id: &str) -> Option<&mut Version> {
        self.versions.iter_mut().find(|v| v.id == id)
    }

    /// The canonical version, if the thread has one and it exists.
    pub fn canonical(&self) -> Option<&Version> {
        self.canonical_id
            .as_deref()
            .filter(|id| !id.is_empty())
            .and_then(|id| self.version(id))
    }

    pub fn title_or_id(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.id)
    }

    pub fn side(&self) -> Option<Side> {
        self.side.as_deref().and_then(Side::parse)
    }
}

/// One version of a claim (SPEC 3.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub id: String,
    pub thread_id: String,
    pub num: u32,
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grounds: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warrant: Option<String>,
    pub evidence: Vec<Citation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<String>,
    pub status: String,
    pub relevance: Option<Num>,
    #[serde(default)]
    pub merge_rationale: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Num>,
}

/// A citation: whatever the contributor supplied, plus the verification an arbiter
/// records (SPEC 3.3 `evidence`, section 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_verified: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_verified_note: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Citation {
    pub fn new(source: &str, url: &str, tier: &str) -> Citation {
        Citation {
            source: Some(source.to_string()),
            url: Some(url.to_string()),
            tier: Some(tier.to_string()),
            ..Citation::default()
        }
    }
}

/// A challenge against one version (SPEC 3.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    pub id: String,
    #[serde(default)]
    pub thread_id: String,
    #[serde(default)]
    pub version_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub evidence: Vec<Citation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    #[serde(default)]
    pub response: Option<Response>,
    pub resolution: Option<String>,
    /// Absent until resolved; stays absent when the resolver gave none (the
    /// reference stores `undefined`, which JSON drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    pub appeal_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Num>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<Num>,
}

/// A restatement of one side's case by the other (SPEC 3.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Steelman {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Three states as in the reference: absent (a restatement submitted without a
    /// side), `null` (the empty steelman) or the writer's side.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_or_null"
    )]
    pub side: Option<Option<String>>,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default)]
    pub ts: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certified_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arbiter_reason: Option<String>,
}

impl Default for Steelman {
    fn default() -> Self {
        Steelman {
            text: Some(String::new()),
            author: Some(String::new()),
            side: Some(None),
            status: "none".into(),
            note: Some(String::new()),
            ts: None,
            certified_by: None,
            arbiter_reason: None,
        }
    }
}

/// A key that is present deserialises to `Some`, even when its value is `null`, so an
/// absent key and an explicit `null` survive a round trip distinctly.
fn present_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The verdict band (SPEC section 9 table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub key: String,
    pub label: String,
}

/// A frozen verdict (SPEC 3.7). Append only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub n: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<Num>,
    pub winner: Option<Side>,
    pub totals: BySide<Num>,
    pub margin: Num,
    pub band: Band,
    #[serde(default)]
    pub rationale: String,
    pub ledger: Vec<LedgerRow>,
    #[serde(default)]
    pub by_burden: bool,
    #[serde(default)]
    pub via_appeal_id: Option<String>,
}

/// One row of the ledger: a canonical version and its four factors (SPEC section 9).
///
/// Generic over the string type so that [`crate::scoring::compute_ledger`] can borrow
/// every string from the document (`LedgerRow<&str>`: copying seven strings per row
/// dominated the ledger at 100,000 threads) while a frozen verdict owns its rows
/// (`LedgerRow<String>`, the default). One definition keeps both serialisations
/// identical.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRow<S = String> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<S>,
    pub thread_id: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_title: Option<S>,
    pub version_id: S,
    pub version_num: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<S>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<S>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<S>,
    /// Absent on rows frozen by pre-1.1 engines; such rows all scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoring: Option<bool>,
    #[serde(rename = "E")]
    pub e: Num,
    #[serde(rename = "R")]
    pub r: Num,
    #[serde(rename = "S")]
    pub s: Num,
    #[serde(rename = "Q")]
    pub q: Num,
    pub dismissed: u32,
    pub merit: Num,
}

impl LedgerRow<&str> {
    /// The owned copy a verdict freezes into the document.
    pub fn to_owned_row(&self) -> LedgerRow {
        let own = |s: Option<&str>| s.map(str::to_string);
        LedgerRow {
            side: own(self.side),
            thread_id: self.thread_id.to_string(),
            thread_title: own(self.thread_title),
            version_id: self.version_id.to_string(),
            version_num: self.version_num,
            assertion: own(self.assertion),
            kind: own(self.kind),
            qualifier: own(self.qualifier),
            scoring: self.scoring,
            e: self.e,
            r: self.r,
            s: self.s,
            q: self.q,
            dismissed: self.dismissed,
            merit: self.merit,
        }
    }
}

/// An appeal against a closed debate (SPEC section 12).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Appeal {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
    pub evidence: Vec<Citation>,
    pub target_thread_ids: Vec<String>,
    pub status: String,
    /// `""` until decided; absent when the decision gave no rationale (reference
    /// `undefined`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_rationale: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filed_at: Option<Num>,
}

/// One append-only log entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default)]
    pub side: Option<String>,
    pub action: String,
    /// Absent when the reference's detail is `undefined` (a thread opened without a
    /// title, an appeal without a ground, a definition without a term).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Debate {
    pub fn thread(&self, id: &str) -> Option<&Thread> {
        self.threads.iter().find(|t| t.id == id)
    }

    pub fn thread_mut(&mut self, id: &str) -> Option<&mut Thread> {
        self.threads.iter_mut().find(|t| t.id == id)
    }

    pub fn challenge(&self, id: &str) -> Option<&Challenge> {
        self.challenges.iter().find(|c| c.id == id)
    }

    pub fn appeal(&self, id: &str) -> Option<&Appeal> {
        self.appeals.iter().find(|a| a.id == id)
    }

    /// Serialises with the reference's key order, followed by any keys another engine
    /// added.
    pub fn to_json(&self) -> Value {
        // Serialising plain data structs into a Value cannot fail.
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut v {
            for (k, x) in &self.extra {
                map.entry(k.clone()).or_insert_with(|| x.clone());
            }
        }
        v
    }
}
