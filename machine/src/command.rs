//! What travels in the Raft log: batches of client commands, stamped by the leader.
//!
//! openraft 0.9 flushes one entry per fsync on the leader (perf-anchors (d)), so one entry
//! carries a whole batch of items. The leader stamps the time and a seed into the batch;
//! `apply` reads them from here and never from a clock or a random source, so every
//! replica computes the same state.

use serde::{Deserialize, Serialize};

use crate::acceptance::{MotionKind, Policy, Stance};
use crate::ruling::WireRuling;

/// The application payload of one Raft entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// Leader's wall clock (ms since the Unix epoch) when it sealed the batch.
    pub time_ms: u64,
    /// Leader's random seed for this batch; panel draws derive theirs from it.
    pub seed: u64,
    pub items: Vec<Item>,
}

/// One client command with its deduplication identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Stable identity of the writer. Empty means "no deduplication".
    pub client_id: String,
    /// Unique per client; a retry reuses it and gets the first result back.
    pub request_id: u64,
    pub command: Command,
}

/// Every state change the coordinator knows. New domains (debates) add variants here and a
/// match arm in [`crate::apply::apply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Set a key (tests and operations notes).
    Put {
        key: String,
        value: String,
    },
    /// Append a note to a topic; used by the exactly-once tests.
    Note {
        topic: String,
        text: String,
    },
    RegisterArbiter(ArbiterRegistration),
    /// Record the calibration exam's admission decision for an arbiter.
    SetAdmission {
        arbiter_id: String,
        admitted: bool,
        /// Exam score in thousandths, as computed by the calibration module.
        score_milli: u32,
    },
    OpenMotion(MotionSpec),
    RecordOutcome(OutcomeSubmission),
    /// Open a debate (phase framing) with its acceptance policy and panel size.
    CreateDebate(DebateSpec),
    /// A contributor's write; the Gate runs before proposal and again in apply.
    Contribute(ContributionSubmission),
    /// Ask the panel a question the document does not raise by itself.
    AskPanel(PanelRequest),
    /// Issue a fresh verdict from the current ledger.
    ReissueVerdict {
        debate_id: String,
        author: String,
    },
    /// A signed key revocation (hex protobuf `KeyRevocation`, signed by the revoked key):
    /// the arbiter holding the key is no longer drawn and its rulings no longer count.
    RevokeKey {
        revocation: String,
    },
    /// A signed key rotation (hex protobuf `KeyRotation`, signed by the old key for
    /// authority and by the new key for possession): the arbiter holding the old key
    /// signs with the new one from then on; the old key is kept in its key history.
    RotateKey {
        rotation: String,
    },
    /// Run the prior-consistency check over the ruling history and record its findings;
    /// a confirmed arbiter is seated under its fitted camp from then on.
    CheckPriors,
    /// An arbiter's committed and revealed answers to the calibration exam; scored in
    /// apply, which admits or refuses the arbiter.
    SubmitExam {
        arbiter_id: String,
        /// Hex protobuf `Reveal`s, one per exam item.
        reveals: Vec<String>,
    },
}

impl Command {
    /// The variant name, used as the event kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Command::Put { .. } => "Put",
            Command::Note { .. } => "Note",
            Command::RegisterArbiter(_) => "RegisterArbiter",
            Command::SetAdmission { .. } => "SetAdmission",
            Command::OpenMotion(_) => "OpenMotion",
            Command::RecordOutcome(_) => "RecordOutcome",
            Command::CreateDebate(_) => "CreateDebate",
            Command::Contribute(_) => "Contribute",
            Command::AskPanel(_) => "AskPanel",
            Command::ReissueVerdict { .. } => "ReissueVerdict",
            Command::SubmitExam { .. } => "SubmitExam",
            Command::CheckPriors => "CheckPriors",
            Command::RevokeKey { .. } => "RevokeKey",
            Command::RotateKey { .. } => "RotateKey",
        }
    }
}

/// An arbiter's identity and declared prior (ARCHITECTURE.md, "Prior").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArbiterRegistration {
    pub arbiter_id: String,
    /// Hex of the 32-byte ed25519 public key.
    pub public_key: String,
    pub organisation: String,
    pub model_family: String,
    pub stance: Stance,
    /// Where the arbiter's node serves `crucible.panel.v1.ArbiterNode` (http://host:port);
    /// the leader's motion driver calls it. `link` ([`LINK_ENDPOINT`]) for a node that
    /// connects out to the replicas instead of being called; empty for no node.
    #[serde(default)]
    pub endpoint: String,
}

/// The registration endpoint of an arbiter whose node connects out instead of being
/// called (`panel arbiter register --endpoint link`).
pub const LINK_ENDPOINT: &str = "link";

/// Whether a registration endpoint names a link arbiter rather than a node URL.
pub fn is_link_endpoint(endpoint: &str) -> bool {
    endpoint == LINK_ENDPOINT
}

/// A motion to open; the panel is drawn in `apply` from the batch seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotionSpec {
    pub motion_id: String,
    pub debate_id: String,
    pub kind: MotionKind,
    /// Hex SHA-256 of the debate state the panel judges.
    pub state_hash: String,
    pub seats: usize,
    pub min_per_stance: usize,
    /// Arbiter ids who contributed to the debate (never seated).
    #[serde(default)]
    pub contributors: Vec<String>,
    #[serde(default)]
    pub author_model_family: Option<String>,
    #[serde(default)]
    pub policy: Option<Policy>,
    /// The protocol question, for motions a debate opened.
    #[serde(default)]
    pub question: Option<crucible::motion::Question>,
    /// What the panel is shown: content without authorship.
    #[serde(default)]
    pub projection: Option<crucible::motion::Projection>,
    /// Simulation debates only: the answer scripted judges are told to give.
    #[serde(default)]
    pub expected: Option<crucible::motion::Answer>,
}

/// A new debate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateSpec {
    pub resolution: String,
    pub pos_a: String,
    pub pos_b: String,
    #[serde(default)]
    pub burden: Option<String>,
    #[serde(default)]
    pub claim_budget: Option<f64>,
    /// Seats per motion and minimum seats per stance group.
    pub seats: usize,
    pub min_per_stance: usize,
    #[serde(default)]
    pub policy: Option<Policy>,
    /// Motions carry expected answers for scripted judges (simulations and demos only).
    #[serde(default)]
    pub simulation: bool,
    pub convener: String,
}

/// A contribution to a debate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContributionSubmission {
    pub debate_id: String,
    pub author: String,
    pub side: String,
    #[serde(default)]
    pub model_family: Option<String>,
    pub contribution: crucible::contribution::Contribution,
    #[serde(default)]
    pub hints: crate::debates::SubmissionHints,
    /// The contributor's own signature over the write (`authorship`); once an author name
    /// has signed, every later write under that name must be signed by the same key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::authorship::ContributorSignature>,
}

/// A participant's request for a motion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRequest {
    pub debate_id: String,
    pub author: String,
    pub question: crucible::motion::Question,
    #[serde(default)]
    pub expected: Option<crucible::motion::Answer>,
}

/// The revealed, signed rulings for a motion (retrieval receipts ride inside the rulings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeSubmission {
    pub motion_id: String,
    /// Bare signed rulings: accepted only on raw motions opened with `OpenMotion`.
    #[serde(default)]
    pub rulings: Vec<WireRuling>,
    /// Hex protobuf `Reveal`s (signed ruling, salt, commitment): required for debate
    /// motions, so no ruling counts without a prior commitment (invariant 2). Clients send
    /// the commitment as the arbiter signed it; intake verifies that signature and logs the
    /// commitment without it (`ruling::intake_check`).
    #[serde(default)]
    pub reveals: Vec<String>,
}

/// The result of one item, as every replica computes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ItemReply {
    Applied(serde_json::Value),
    /// The command was refused deterministically; nothing changed.
    Refused {
        code: String,
        message: String,
    },
}

/// What `apply` returns for one item of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemOutcome {
    pub reply: ItemReply,
    /// True when this is the stored reply of an earlier item with the same ids.
    pub duplicate: bool,
    /// Log index of the entry that first applied the item.
    pub log_index: u64,
}

/// The application response of one Raft entry (openraft's `R`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchReply {
    pub items: Vec<ItemOutcome>,
}

/// Read-only questions to the replicated state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Query {
    Get {
        key: String,
    },
    Notes {
        topic: String,
    },
    Arbiter {
        arbiter_id: String,
    },
    Arbiters,
    Motion {
        motion_id: String,
    },
    /// Row counts per table.
    Stats,
    /// One debate: its SPEC document and panel bookkeeping.
    Debate {
        debate_id: String,
    },
    /// Debate ids, resolutions and phases.
    Debates,
    /// Every motion of a debate, in opening order.
    DebateMotions {
        debate_id: String,
    },
    /// The whole record for offline verification (`panel verify`): entries in order,
    /// debates, arbiters. The serving replica adds a signed checkpoint.
    Export,
}
