//! What travels in the Raft log: batches of client commands, stamped by the leader.
//!
//! openraft 0.9 flushes one entry per fsync on the leader (BENCHMARKS.md, "Coordinator"), so one entry
//! carries a whole batch of items. The leader stamps the time and a seed into the batch;
//! `apply` reads them from here and never from a clock or a random source, so every
//! replica computes the same state.

use serde::{Deserialize, Serialize};

pub use crate::log::endorsement::Endorsement;
use crate::rules::acceptance::{MotionKind, Policy, Stance};
use crate::rules::ruling::WireRuling;

/// The application payload of one Raft entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// Leader's wall clock (ms since the Unix epoch) when it sealed the batch.
    pub time_ms: u64,
    /// Leader's random seed for this batch; panel draws derive theirs from it.
    pub seed: u64,
    pub items: Vec<Item>,
    /// The write limits apply enforces for this batch, stamped by the leader from its
    /// flags (`limits.rs`); `None` in entries logged before limits existed, which replay
    /// unlimited exactly as they applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::log::limit_policy::LimitPolicy>,
    /// When apply issues checkpoints (`checkpoints.rs`), stamped by the leader from its
    /// flags; `None` in entries logged before checkpoints were issued in apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<crate::log::cadence::Cadence>,
    /// The rule set the leader's code applies (`rules.rs`); `None` in entries logged
    /// before rule sets were stamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<u32>,
}

/// One client command with its deduplication identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Stable identity of the writer. Empty means "no deduplication".
    pub client_id: String,
    /// Unique per client; a retry reuses it and gets the first result back.
    pub request_id: u64,
    pub command: Command,
    /// Who wrote it, as the leader's intake established from the caller's TLS certificate
    /// (docs/SECURITY.md, "Floods"); `None` for the drivers' own items and for entries
    /// logged before identities were stamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<crate::log::limit_policy::Writer>,
}

/// Every state change the log carries, in three families that differ in who may cause
/// them (docs/SECURITY.md): [`ClientCommand`] is all a client can write;
/// [`InternalCommand`] only the leader's own driver proposes; [`TestCommand`] exists for
/// test clusters started with `--test-commands`. The families serialise untagged, so an
/// entry reads `{"Contribute": {...}}` exactly as before the split and records exported
/// earlier still verify. New commands add a variant to the family whose sender may send
/// them and a match arm in [`crate::apply::apply`].
// Client writes (contributions) dominate the log, so boxing them would add an allocation to
// the common case to save bytes on the rare internal ones.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Command {
    Client(ClientCommand),
    Internal(InternalCommand),
    Test(TestCommand),
}

/// Every command kind, grouped by family: client kinds first, then internal, then test
/// (`TestCommand::RecordOutcome` shares the internal tag and decodes as internal). The
/// family ranges route decoding ([`Command`]'s `Deserialize`).
const KINDS: [&str; 35] = [
    "RegisterArbiter",
    "CreateDebate",
    "Contribute",
    "AskPanel",
    "ReissueVerdict",
    "RevokeKey",
    "RotateKey",
    "CheckPriors",
    "AdmitOrganisation",
    "RegisterContributor",
    "SubmitReveal",
    "StartRun",
    "SubmitRunInput",
    "RotateMotionKey",
    "DeclareStance",
    "AuthoriseMembership",
    "SetBreaker",
    "LastWord",
    "RemoveOrganisation",
    "RotateRosterKey",
    "RecordOutcome",
    "SubmitExam",
    "AdoptCharter",
    "LogCommitments",
    "CloseMotion",
    "IssueCheckpoint",
    "AddCosignatures",
    "SealExamPool",
    "RevealExamKey",
    "SeatMotion",
    "CloseExamSitting",
    "Put",
    "Note",
    "SetAdmission",
    "OpenMotion",
];
const CLIENT_KINDS: std::ops::Range<usize> = 0..20;
const INTERNAL_KINDS: std::ops::Range<usize> = 20..31;

/// Decodes a command by reading its variant tag first and handing the rest to the family
/// that owns the tag. (An untagged derive would buffer every command and try the families
/// in turn, on the leader's intake and on every replica's decode of every entry.) A
/// `RecordOutcome` in the log decodes as the internal command; apply treats both alike.
impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CommandVisitor)
    }
}

struct CommandVisitor;

impl<'de> serde::de::Visitor<'de> for CommandVisitor {
    type Value = Command;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a command: {\"<Kind>\": {...}} or \"CheckPriors\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Command, E> {
        let unit = serde::de::value::StrDeserializer::<E>::new(v);
        match KINDS.iter().position(|k| *k == v) {
            Some(at) if INTERNAL_KINDS.contains(&at) => {
                InternalCommand::deserialize(unit).map(Command::Internal)
            }
            _ => ClientCommand::deserialize(unit).map(Command::Client),
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Command, A::Error> {
        use serde::de::Error;
        use serde::de::value::MapAccessDeserializer;
        let tag: String = map.next_key()?.ok_or_else(|| {
            A::Error::custom("a command object needs one key, the command's kind")
        })?;
        let rest = MapAccessDeserializer::new(Peeked {
            key: Some(tag.clone()),
            inner: &mut map,
        });
        let Some(at) = KINDS.iter().position(|k| *k == tag) else {
            return Err(A::Error::unknown_variant(&tag, &KINDS));
        };
        let command = if CLIENT_KINDS.contains(&at) {
            Command::Client(ClientCommand::deserialize(rest)?)
        } else if INTERNAL_KINDS.contains(&at) {
            Command::Internal(InternalCommand::deserialize(rest)?)
        } else {
            Command::Test(TestCommand::deserialize(rest)?)
        };
        if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            return Err(A::Error::custom(
                "a command object has exactly one key, the command's kind",
            ));
        }
        Ok(command)
    }
}

/// A map whose first key was already read: yields it again, then the rest.
struct Peeked<A> {
    key: Option<String>,
    inner: A,
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for Peeked<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.key.take() {
            Some(k) => seed
                .deserialize(serde::de::value::StringDeserializer::<A::Error>::new(k))
                .map(Some),
            None => self.inner.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

/// What a client may write (`Write`, `WriteStream`, the typed `Debates` API). Replicas
/// decode client writes into this type and nothing else, so no client can produce an
/// internal command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientCommand {
    RegisterArbiter(ArbiterRegistration),
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
    /// A reveal (hex protobuf `Reveal`: signed ruling and salt; a commitment in it is
    /// ignored) opening a commitment logged by [`InternalCommand::LogCommitments`]. Anyone
    /// may send it, the arbiter's own node included, so no driver chooses which reveals
    /// count (docs/coordinator/state-machine.md "The commit-reveal round"); apply accepts it only inside
    /// the signed motion's reveal window, from the seat that committed, opening exactly its
    /// logged commitment, and once.
    SubmitReveal {
        motion_id: String,
        reveal: crate::rules::hex_bytes::RevealBytes,
    },
    /// Admit a new organisation to a chartered federation, endorsed by at least the
    /// charter's `admission_threshold` existing organisations (docs/WIRE.md, "Organisation
    /// admission").
    AdmitOrganisation(OrganisationAdmission),
    /// Remove a member organisation, endorsed by at least the charter's
    /// `admission_threshold` (and never fewer than two) of the other members: its
    /// authority is no longer trusted, its roster key endorses nothing, and its identity
    /// can never be admitted again (docs/FEDERATION.md, "Removal").
    RemoveOrganisation(OrganisationRemoval),
    /// Rotate a member's roster key, signed by the new key and endorsed by the charter's
    /// `admission_threshold` of members including the member itself; the replaced key
    /// still counts for `overlap_ms` (docs/FEDERATION.md "Rotating a roster key").
    RotateRosterKey(RosterKeyRotation),
    /// Bind a contributor name to a key, signed by that key and endorsed by the
    /// contributor's organisation (docs/WIRE.md, "Registration"). Under a charter a name is
    /// bound only this way, never on first use.
    RegisterContributor(ContributorRegistration),
    /// Start a procedure run (crux, falsification buckets, decision dossier;
    /// docs/PROCEDURES.md). Its deterministic checks run in apply; a refusal names the
    /// rule and the JSON path, and nothing is recorded.
    StartRun(Box<crate::runs::RunRequest>),
    /// A role's input to a run (a defender's form, a critic's commitment, an advocate's
    /// nomination); refused when out of order or breaking the procedure's rules.
    SubmitRunInput(Box<crate::runs::RunInputSubmission>),
    /// Replace the cluster's motion key, endorsed by the charter's `admission_threshold`
    /// of member organisations and signed by the new key (docs/WIRE.md "Motion-key
    /// rotation"; docs/SECURITY.md). Motions opened from then on must be signed by it.
    RotateMotionKey(MotionKeyRotation),
    /// An arbiter's signed stance for one debate (docs/WIRE.md "Stance declaration"); once
    /// declared it cannot change for that debate.
    DeclareStance(StanceDeclaration),
    /// Authorise the next change of a chartered group's Raft voters, endorsed by member
    /// organisations (docs/WIRE.md "Membership change"; docs/SECURITY.md "Membership").
    /// `Admin.ChangeMembership` executes only the latest authorised voter set.
    AuthoriseMembership(MembershipAuthorisation),
    /// Pause or lift new motions, closings or verdicts federation-wide, endorsed by member
    /// organisations (docs/WIRE.md "Circuit breakers"; docs/SECURITY.md "Circuit
    /// breakers"); may arm the automatic breaker.
    SetBreaker(crate::log::breaker_order::BreakerOrder),
    /// The charter's last-word authority decides a question the panels left not proven.
    LastWord(crate::log::last_word::LastWordDecision),
}

/// A change of voters as organisations endorse it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MembershipAuthorisation {
    /// 1 for the first change under the charter, then one more each time.
    pub seq: u64,
    /// Raft ids of every voter after the change, strictly ascending.
    pub voters: Vec<u64>,
    /// Member organisations' roster-key signatures over the change.
    pub endorsements: Vec<Endorsement>,
}

/// A motion-key rotation as submitted: the key it rotates from is the one in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MotionKeyRotation {
    /// 1 for the first rotation under the charter, then one more each time.
    pub seq: u64,
    /// The new 32-byte ed25519 motion key.
    pub to: crate::rules::hex_bytes::PublicKeyBytes,
    /// Signature by the new key over the rotation (proof of possession).
    pub possession: crate::rules::hex_bytes::SignatureBytes,
    /// Member organisations' roster-key signatures over the rotation.
    pub endorsements: Vec<Endorsement>,
}

/// A contributor's name, key and organisation, attested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContributorRegistration {
    pub name: String,
    /// The 32-byte ed25519 public key.
    pub public_key: crate::rules::hex_bytes::PublicKeyBytes,
    pub organisation: String,
    pub attestation: WireAttestation,
}

/// A newcomer organisation and its endorsements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganisationAdmission {
    pub organisation: panel_federation::Organisation,
    pub endorsements: Vec<Endorsement>,
}

/// The removal of a member organisation, named, and the other members' endorsements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganisationRemoval {
    pub organisation: String,
    pub endorsements: Vec<Endorsement>,
}

/// A member's change of roster key (`features::roster_keys`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosterKeyRotation {
    pub organisation: String,
    /// 1 for the member's first rotation, then one more each time.
    pub seq: u64,
    /// The new 32-byte ed25519 roster key.
    pub to: crate::rules::hex_bytes::PublicKeyBytes,
    /// How long after the entry the replaced key still counts (at most seven days).
    pub overlap_ms: u64,
    /// Signature by the new key over the rotation (proof of possession).
    pub possession: crate::rules::hex_bytes::SignatureBytes,
    /// Members' roster-key signatures over the rotation, the member's own among them.
    pub endorsements: Vec<Endorsement>,
}

/// What only the leader's motion and exam drivers propose, under the reserved client ids
/// of [`INTERNAL_CLIENT_IDS`]: the outcome of a motion and the scoring of an exam.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InternalCommand {
    /// The revealed, signed rulings of a motion the driver collected from its seats.
    RecordOutcome(OutcomeSubmission),
    /// An arbiter's committed and revealed answers to the calibration exam; scored in
    /// apply, which admits or refuses the arbiter.
    SubmitExam {
        arbiter_id: String,
        /// Hex protobuf `Reveal`s, one per exam item.
        reveals: Vec<crate::rules::hex_bytes::RevealBytes>,
        /// The signed exam motions the reveals answer, as the driver put them to the node
        /// (hex protobuf `Motion`s); required from rule set
        /// [`EXAM_MOTIONS`](crate::rules::EXAM_MOTIONS) on, so apply can check that the
        /// arbiter was examined on the exam's own items (docs/SECURITY.md).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        motions: Vec<crate::rules::signed_motion::WireMotion>,
        /// The sealed sitting the answers belong to; required from rule set
        /// [`SEALED_EXAMS`](crate::rules::SEALED_EXAMS) on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sitting: Option<u32>,
    },
    /// Opens an exam sitting: a pool's public half and the commitment to its answer key,
    /// from the pool the replicas were configured with (`exam_sitting.rs`).
    SealExamPool(Box<crate::log::exam_pool::SealedPool>),
    /// Closes the open sitting: the pool's exam file and the key's salt; apply checks them
    /// against the seal and scores every held exam.
    RevealExamKey(Box<crate::log::exam_pool::KeyReveal>),
    /// Ends the answers of the open organisation sitting, so its organisation's replica
    /// may hand over the key for the reveal (`org_pools.rs`).
    CloseExamSitting(crate::log::exam_pool::SittingClose),
    /// The federation charter, proposed once by the replica that initialises the group
    /// (`Admin.Init`), from the charter it was started with: the first record entry. From
    /// then on every role-bearing entry is checked against it (docs/SECURITY.md).
    AdoptCharter(Box<panel_federation::Charter>),
    /// After the commit window: the signed motion put to the seats and every commitment
    /// the driver received. Logged before any reveal, so the record shows which seats
    /// committed (docs/coordinator/state-machine.md "The commit-reveal round").
    LogCommitments(CommitmentLog),
    /// After the reveal deadline (or once every logged commitment is revealed): apply
    /// decides from every stored reveal. Carries no rulings, so nothing can be left out.
    CloseMotion { motion_id: String },
    /// The leader's clock says a checkpoint is due for entries the last one does not cover
    /// (`checkpoints::due_at`); apply issues it at the current size, or does nothing.
    IssueCheckpoint,
    /// Cosignatures witnesses returned for an issued checkpoint; apply keeps only those
    /// that verify under a charter witness key (docs/SECURITY.md "The record").
    AddCosignatures(crate::log::cadence::Cosignatures),
    /// The beacon shares an unseated motion's panel is drawn from (`beacon.rs`): proposed
    /// by the leader's driver for every motion that opened awaiting its seats.
    SeatMotion(crate::log::seating::Seating),
}

/// Commands for test clusters only: a replica accepts them from clients only when built
/// with the `test-commands` feature and started with `--test-commands`. They bypass the
/// exam (`SetAdmission`), open raw motions outside any debate (`OpenMotion`) and let a
/// client submit an outcome, so no production replica takes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TestCommand {
    /// Set a key (exactly-once and fault tests).
    Put { key: String, value: String },
    /// Append a note to a topic (exactly-once and fault tests).
    Note { topic: String, text: String },
    /// Record an admission decision without the exam.
    SetAdmission {
        arbiter_id: String,
        admitted: bool,
        /// Exam score in thousandths.
        score_milli: u32,
    },
    /// Open a motion outside any debate; the panel is drawn in apply from the batch seed.
    OpenMotion(Box<MotionSpec>),
    /// An outcome submitted by a client (raw motions, bare rulings).
    RecordOutcome(OutcomeSubmission),
}

impl ClientCommand {
    /// The variant name, as the log's JSON tags it.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientCommand::RegisterArbiter(_) => "RegisterArbiter",
            ClientCommand::CreateDebate(_) => "CreateDebate",
            ClientCommand::Contribute(_) => "Contribute",
            ClientCommand::AskPanel(_) => "AskPanel",
            ClientCommand::ReissueVerdict { .. } => "ReissueVerdict",
            ClientCommand::CheckPriors => "CheckPriors",
            ClientCommand::AdmitOrganisation(_) => "AdmitOrganisation",
            ClientCommand::RemoveOrganisation(_) => "RemoveOrganisation",
            ClientCommand::RotateRosterKey(_) => "RotateRosterKey",
            ClientCommand::RegisterContributor(_) => "RegisterContributor",
            ClientCommand::RevokeKey { .. } => "RevokeKey",
            ClientCommand::RotateKey { .. } => "RotateKey",
            ClientCommand::SubmitReveal { .. } => "SubmitReveal",
            ClientCommand::StartRun(_) => "StartRun",
            ClientCommand::SubmitRunInput(_) => "SubmitRunInput",
            ClientCommand::RotateMotionKey(_) => "RotateMotionKey",
            ClientCommand::DeclareStance(_) => "DeclareStance",
            ClientCommand::AuthoriseMembership(_) => "AuthoriseMembership",
            ClientCommand::SetBreaker(_) => "SetBreaker",
            ClientCommand::LastWord(_) => "LastWord",
        }
    }
}

impl InternalCommand {
    /// The variant name, as the log's JSON tags it.
    pub fn kind(&self) -> &'static str {
        match self {
            InternalCommand::RecordOutcome(_) => "RecordOutcome",
            InternalCommand::SubmitExam { .. } => "SubmitExam",
            InternalCommand::SealExamPool(_) => "SealExamPool",
            InternalCommand::RevealExamKey(_) => "RevealExamKey",
            InternalCommand::AdoptCharter(_) => "AdoptCharter",
            InternalCommand::LogCommitments(_) => "LogCommitments",
            InternalCommand::CloseMotion { .. } => "CloseMotion",
            InternalCommand::IssueCheckpoint => "IssueCheckpoint",
            InternalCommand::AddCosignatures(_) => "AddCosignatures",
            InternalCommand::SeatMotion(_) => "SeatMotion",
            InternalCommand::CloseExamSitting(_) => "CloseExamSitting",
        }
    }
}

impl TestCommand {
    /// The variant name, as the log's JSON tags it.
    pub fn kind(&self) -> &'static str {
        match self {
            TestCommand::Put { .. } => "Put",
            TestCommand::Note { .. } => "Note",
            TestCommand::SetAdmission { .. } => "SetAdmission",
            TestCommand::OpenMotion(_) => "OpenMotion",
            TestCommand::RecordOutcome(_) => "RecordOutcome",
        }
    }
}

/// Client ids reserved for the leader's drivers; a client write under one is refused at
/// intake, so nobody can squat the deduplication keys the drivers use.
pub const INTERNAL_CLIENT_IDS: [&str; 3] = ["motion-driver", "exam-driver", "charter"];

/// Whether `client_id` is reserved for the replica's own drivers.
pub fn is_internal_client_id(client_id: &str) -> bool {
    INTERNAL_CLIENT_IDS.contains(&client_id)
}

impl From<ClientCommand> for Command {
    fn from(c: ClientCommand) -> Self {
        Command::Client(c)
    }
}

impl From<InternalCommand> for Command {
    fn from(c: InternalCommand) -> Self {
        Command::Internal(c)
    }
}

impl From<TestCommand> for Command {
    fn from(c: TestCommand) -> Self {
        Command::Test(c)
    }
}

impl Command {
    /// The variant name, used as the event kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Command::Client(c) => c.kind(),
            Command::Internal(c) => c.kind(),
            Command::Test(c) => c.kind(),
        }
    }
}

/// An arbiter's identity and declared prior (docs/ARCHITECTURE.md, "Prior").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArbiterRegistration {
    pub arbiter_id: String,
    /// The 32-byte ed25519 public key (hex on the wire).
    pub public_key: crate::rules::hex_bytes::PublicKeyBytes,
    pub organisation: String,
    pub model_family: String,
    pub stance: Stance,
    /// Where the arbiter's node serves `crucible.panel.v1.ArbiterNode` (http://host:port);
    /// the leader's motion driver calls it. `link` ([`LINK_ENDPOINT`]) for a node that
    /// connects out to the replicas instead of being called; empty for no node.
    #[serde(default)]
    pub endpoint: String,
    /// The arbiter's proof of possession and its organisation's endorsement (docs/WIRE.md,
    /// "Registration"). Required once the group has a charter; absent in records of
    /// unchartered debug groups, and then omitted from the JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<WireAttestation>,
    /// Where the arbiter's model comes from, when known (docs/coordinator/acceptance.md "Declared
    /// priors"). Signed with the registration (layout v2); absent in registrations
    /// written before it, whose lineage is their model family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage: Option<Lineage>,
}

/// An arbiter's declared model lineage. Every part names the lineage the arbiter shares
/// errors with: two arbiters, or an arbiter and a contributor, that share any named part
/// are related (`Lineage::names`). Unknown parts are empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lineage {
    /// Who trained or serves the model (an organisation, not the arbiter's organisation).
    #[serde(default)]
    pub provider: String,
    /// The base model the arbiter runs or was tuned from.
    pub base_model: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fine_tune: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data_source: String,
}

impl ArbiterRegistration {
    /// The lineage key panels count supporters under (rule 4) and the draw keeps apart:
    /// the declared base model, else the model family.
    pub fn lineage_key(&self) -> &str {
        match &self.lineage {
            Some(l) if !l.base_model.trim().is_empty() => &l.base_model,
            _ => &self.model_family,
        }
    }

    /// Every name of the arbiter's lineage, lower-cased: the model family and each
    /// declared part. An author of any of these lineages is related to the arbiter.
    pub fn lineage_names(&self) -> Vec<String> {
        let mut names = vec![self.model_family.trim().to_lowercase()];
        if let Some(l) = &self.lineage {
            names.extend(
                [&l.provider, &l.base_model, &l.fine_tune, &l.data_source]
                    .into_iter()
                    .map(|p| p.trim().to_lowercase()),
            );
        }
        names.retain(|n| !n.is_empty());
        names.sort();
        names.dedup();
        names
    }
}

/// An arbiter's stance for one debate, signed by the arbiter's key (docs/WIRE.md
/// "Stance declaration"). Under a policy with `declared_stances`, a debate's panels seat
/// an arbiter under a stance only by such a declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StanceDeclaration {
    pub arbiter_id: String,
    pub debate_id: String,
    pub stance: Stance,
    /// The arbiter's credence in its side, in thousandths (0..=1000).
    pub credence_permille: u16,
    /// The 64-byte ed25519 signature by the arbiter's current key.
    pub signature: crate::rules::hex_bytes::SignatureBytes,
}

/// The two signatures of a registration, hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireAttestation {
    /// By the arbiter's own key.
    pub proof: crate::rules::hex_bytes::SignatureBytes,
    /// By the organisation's roster key named in the charter.
    pub endorsement: crate::rules::hex_bytes::SignatureBytes,
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
    /// SHA-256 of the debate state the panel judges.
    pub state_hash: crate::rules::hex_bytes::DigestBytes,
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
    /// The procedure question, for motions a procedure run opened (`runs.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure: Option<crate::runs::RunMotion>,
    /// A final panel's motion: the not-proven motion whose question it decides
    /// (`apply/final_panel.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_panel_of: Option<String>,
}

impl MotionSpec {
    /// A motion a debate or a procedure run opened (not a raw test motion): decided only
    /// through a logged commit-reveal round, from reveals, never from bare rulings.
    pub fn asks_a_question(&self) -> bool {
        self.question.is_some() || self.procedure.is_some()
    }

    /// What the motion asks, in a few words: the debate question, the procedure question's
    /// key, or the kind of a raw test motion (`panel motion list`, `panel dash`).
    pub fn question_line(&self) -> String {
        use crucible::motion::Question as Q;
        if let Some(p) = &self.procedure {
            return format!("{} of {}", p.key, p.run_id);
        }
        match &self.question {
            Some(Q::Merge {
                thread_id,
                version_id,
            }) => format!("merge {version_id} into {thread_id}"),
            Some(Q::VerifyTier {
                version_id,
                citation_index,
                ..
            }) => format!("verify tier of {version_id} citation {citation_index}"),
            Some(Q::ResolveChallenge { challenge_id }) => format!("resolve {challenge_id}"),
            Some(Q::AssignRelevance { version_id, .. }) => format!("relevance of {version_id}"),
            Some(Q::CertifySteelman { of_side }) => format!("certify steelman of side {of_side}"),
            Some(Q::AdvancePhase { from }) => format!("advance from {from}"),
            Some(Q::AdmitAppeal { appeal_id }) => format!("admit {appeal_id}"),
            None => format!("{:?} (raw motion)", self.kind),
        }
    }
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
    pub signature: Option<crate::log::contributor_signature::ContributorSignature>,
    /// For an appeal (rule set [`SAMPLE_APPEALS`](crate::rules::SAMPLE_APPEALS)): put it to
    /// a panel drawn at random from the whole admitted population, not the debate's
    /// declared arbiters (`sample_appeals.rs`). Signed with the write when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_sample: bool,
}

/// A participant's request for a motion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRequest {
    pub debate_id: String,
    pub author: String,
    pub question: crucible::motion::Question,
    #[serde(default)]
    pub expected: Option<crucible::motion::Answer>,
    /// Why a panel must sit although a `final` outcome already answers this question on
    /// the same content (docs/PANEL.md "Precedent"); without it such a question is
    /// answered by citing that outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_panel: Option<String>,
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
    pub reveals: Vec<crate::rules::hex_bytes::RevealBytes>,
    /// Hex protobuf of the signed `Motion` the driver put to the seats (docs/WIRE.md
    /// "Motion, layout v1"). Apply checks its signature, that it is the motion opened under
    /// `motion_id`, and that every ruling binds its digest (`signed_motion`). Absent in
    /// records written before motions were signed (and on raw test motions), which carry
    /// envelope v1 rulings only; omitted from the JSON when absent, so they read unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motion: Option<crate::rules::signed_motion::WireMotion>,
}

/// The commitments of one round of a motion, logged after its commit window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitmentLog {
    pub motion_id: String,
    /// Hex protobuf of the signed `Motion` of this round (docs/WIRE.md "Motion, layout
    /// v1"): its digest is what every reveal must bind, its deadlines are the windows
    /// apply enforces.
    pub motion: crate::rules::signed_motion::WireMotion,
    /// Hex protobuf `Commitment`s, each exactly as the arbiter signed it (the signature is
    /// kept: it is the record's proof that the seat committed).
    pub commitments: Vec<crate::rules::hex_bytes::CommitmentBytes>,
}

/// The result of one item, as every replica computes it. `R` is the applied reply: the
/// typed [`crate::reply::Reply`] that `apply` answers (in `ItemOutcome`), or its JSON,
/// the default, as the record and the stored replies keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ItemReply<R = serde_json::Value> {
    Applied(R),
    /// The command was refused deterministically; nothing changed.
    Refused {
        code: crate::log::refusal_code::RefusalCode,
        message: String,
    },
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
    /// Procedure runs: id, kind, summary, whether finished.
    Runs,
    /// One procedure run: its record and its report as Markdown.
    Run {
        run_id: String,
    },
    /// Every motion (debates' and procedure runs'; exam motions go to the nodes and are
    /// not kept), in opening order; with `limit`, only the latest that many, and `total`
    /// says how many there are.
    Motions {
        #[serde(default)]
        limit: Option<usize>,
    },
    /// The log's checkpoints with the witnesses' cosignatures, and each charter
    /// witness's latest cosignature; with `limit`, only the latest that many checkpoints.
    Checkpoints {
        #[serde(default)]
        limit: Option<usize>,
    },
    /// The circuit breakers: pauses in force with who set them, the automatic breaker.
    Breakers,
    /// Appeal credits: the terms, every organisation's balance, and the deposits appeals
    /// hold or held (only `debate_id`'s, when given).
    AppealCredits {
        #[serde(default)]
        debate_id: Option<String>,
    },
    /// The organisations in force (the charter's, those admitted, less those removed) with
    /// their authority pins: what a node's transport trusts (docs/FEDERATION.md).
    Organisations,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records exported before the command families were split still decode, each entry
    /// into the family whose sender may send it, and encode back to the same JSON.
    #[test]
    fn the_split_keeps_the_log_format() {
        for (json, family) in [
            (r#""CheckPriors""#, "client"),
            (
                r#"{"ReissueVerdict":{"debate_id":"d","author":"x"}}"#,
                "client",
            ),
            (r#"{"RevokeKey":{"revocation":"00"}}"#, "client"),
            (
                r#"{"RecordOutcome":{"motion_id":"m","rulings":[],"reveals":[]}}"#,
                "internal",
            ),
            (
                r#"{"SubmitExam":{"arbiter_id":"a","reveals":[]}}"#,
                "internal",
            ),
            (r#"{"Note":{"topic":"t","text":"x"}}"#, "test"),
            (
                r#"{"SetAdmission":{"arbiter_id":"a","admitted":true,"score_milli":1}}"#,
                "test",
            ),
        ] {
            let c: Command = serde_json::from_str(json).expect(json);
            let got = match c {
                Command::Client(_) => "client",
                Command::Internal(_) => "internal",
                Command::Test(_) => "test",
            };
            assert_eq!(got, family, "{json}");
            assert_eq!(serde_json::to_string(&c).expect("encode"), json);
        }
    }

    /// Every variant of every family encodes and decodes back to itself through
    /// [`Command`], so the kind table routes each tag to the family that owns it.
    #[test]
    fn every_variant_round_trips_through_its_family() {
        let value = |json: &str| serde_json::from_str::<serde_json::Value>(json).expect(json);
        let reg: ArbiterRegistration = serde_json::from_value(value(
            r#"{"arbiter_id":"a","public_key":"00","organisation":"o","model_family":"f","stance":"A"}"#,
        ))
        .expect("registration");
        let debate: DebateSpec = serde_json::from_value(value(
            r#"{"resolution":"r","pos_a":"a","pos_b":"b","seats":4,"min_per_stance":1,"convener":"c"}"#,
        ))
        .expect("debate");
        let contribution: ContributionSubmission = serde_json::from_value(value(
            r#"{"debate_id":"d","author":"x","side":"A","contribution":{"op":"definition","term":"t","definition":"d"}}"#,
        ))
        .expect("contribution");
        let ask: PanelRequest = serde_json::from_value(value(
            r#"{"debate_id":"d","author":"x","question":{"kind":"merge","threadId":"t","versionId":"v"}}"#,
        ))
        .expect("request");
        let motion: MotionSpec = serde_json::from_value(value(
            r#"{"motion_id":"m","debate_id":"d","kind":"Merge","state_hash":"00","seats":2,"min_per_stance":1}"#,
        ))
        .expect("motion");
        let outcome = OutcomeSubmission {
            motion_id: "m".into(),
            rulings: vec![],
            reveals: vec!["00".into()],
            motion: None,
        };
        let client = [
            ClientCommand::RegisterArbiter(reg),
            ClientCommand::CreateDebate(debate),
            ClientCommand::Contribute(contribution),
            ClientCommand::AskPanel(ask),
            ClientCommand::ReissueVerdict {
                debate_id: "d".into(),
                author: "x".into(),
            },
            ClientCommand::RevokeKey {
                revocation: "00".into(),
            },
            ClientCommand::RotateKey {
                rotation: "00".into(),
            },
            ClientCommand::CheckPriors,
            ClientCommand::RegisterContributor(ContributorRegistration {
                name: "ada".into(),
                public_key: "00".into(),
                organisation: "north".into(),
                attestation: WireAttestation {
                    proof: "00".into(),
                    endorsement: "00".into(),
                },
            }),
            ClientCommand::AdmitOrganisation(OrganisationAdmission {
                organisation: crate::features::charter_rules::tests::charter().organisations[0]
                    .clone(),
                endorsements: vec![Endorsement {
                    by: "south".into(),
                    signature: "00".into(),
                }],
            }),
            ClientCommand::RemoveOrganisation(OrganisationRemoval {
                organisation: "north".into(),
                endorsements: vec![Endorsement {
                    by: "south".into(),
                    signature: "00".into(),
                }],
            }),
            ClientCommand::RotateRosterKey(RosterKeyRotation {
                organisation: "north".into(),
                seq: 1,
                to: "00".into(),
                overlap_ms: 0,
                possession: "00".into(),
                endorsements: vec![],
            }),
            ClientCommand::SubmitReveal {
                motion_id: "m".into(),
                reveal: "00".into(),
            },
            ClientCommand::StartRun(Box::new(crate::runs::RunRequest {
                start: panel_procedures::RunStart::Falsify(panel_procedures::falsify::demo_start()),
                seats: 2,
                min_per_stance: 1,
                policy: None,
                simulation: true,
                convener: "c".into(),
                retry_of: None,
                role_keys: Default::default(),
                signature: None,
            })),
            ClientCommand::SubmitRunInput(Box::new(crate::runs::RunInputSubmission {
                run_id: "run_1".into(),
                input: panel_procedures::RunInput::Falsify(
                    panel_procedures::falsify::demo_inputs().remove(0),
                ),
                signature: None,
            })),
            ClientCommand::RotateMotionKey(MotionKeyRotation {
                seq: 1,
                to: "00".into(),
                possession: "00".into(),
                endorsements: vec![],
            }),
            ClientCommand::DeclareStance(StanceDeclaration {
                arbiter_id: "a".into(),
                debate_id: "deb_1".into(),
                stance: Stance::A,
                credence_permille: 700,
                signature: "00".into(),
            }),
            ClientCommand::AuthoriseMembership(MembershipAuthorisation {
                seq: 1,
                voters: vec![1, 2, 3],
                endorsements: vec![],
            }),
            ClientCommand::SetBreaker(crate::log::breaker_order::BreakerOrder {
                seq: 1,
                scopes: vec![crate::log::breaker_order::Scope::Motions],
                pause: true,
                reason: "r".into(),
                automatic: None,
                endorsements: vec![],
            }),
            ClientCommand::LastWord(crate::log::last_word::LastWordDecision {
                debate_id: "deb_1".into(),
                motion_id: "m".into(),
                answer: crucible::motion::Answer::Yes,
                reason: "r".into(),
                signature: "00".into(),
            }),
        ];
        let internal = [
            InternalCommand::RecordOutcome(outcome.clone()),
            InternalCommand::SubmitExam {
                arbiter_id: "a".into(),
                reveals: vec![],
                motions: vec![],
                sitting: None,
            },
            InternalCommand::AdoptCharter(Box::new(
                crate::features::charter_rules::tests::charter(),
            )),
            InternalCommand::LogCommitments(CommitmentLog {
                motion_id: "m".into(),
                motion: "00".into(),
                commitments: vec!["00".into()],
            }),
            InternalCommand::CloseMotion {
                motion_id: "m".into(),
            },
            InternalCommand::IssueCheckpoint,
            InternalCommand::AddCosignatures(crate::log::cadence::Cosignatures {
                size: 1,
                lines: vec!["\u{2014} w AAAA".into()],
            }),
            InternalCommand::SealExamPool(Box::new(crate::log::exam_pool::SealedPool {
                public: calibration::public_pool::PublicPool {
                    name: "p".into(),
                    version: "1".into(),
                    quantiles: vec![0.5],
                    items: vec![],
                },
                key_commitment: "00".into(),
                organisation: None,
                seal: None,
            })),
            InternalCommand::CloseExamSitting(crate::log::exam_pool::SittingClose { sitting: 1 }),
            InternalCommand::RevealExamKey(Box::new(crate::log::exam_pool::KeyReveal {
                sitting: 1,
                exam: "{}".into(),
                salt: "00".into(),
            })),
            InternalCommand::SeatMotion(crate::log::seating::Seating {
                motion_id: "m".into(),
                shares: vec![crate::log::seating::BeaconShare {
                    replica: 1,
                    proof: "00".into(),
                }],
            }),
        ];
        let test = [
            TestCommand::Put {
                key: "k".into(),
                value: "v".into(),
            },
            TestCommand::Note {
                topic: "t".into(),
                text: "x".into(),
            },
            TestCommand::SetAdmission {
                arbiter_id: "a".into(),
                admitted: true,
                score_milli: 1,
            },
            TestCommand::OpenMotion(Box::new(motion)),
        ];
        let all: Vec<Command> = client
            .into_iter()
            .map(Command::from)
            .chain(internal.into_iter().map(Command::from))
            .chain(test.into_iter().map(Command::from))
            .collect();
        assert_eq!(all.len(), KINDS.len(), "one value per kind");
        for c in all {
            let json = serde_json::to_string(&c).expect("encode");
            let back: Command = serde_json::from_str(&json).expect(&json);
            assert_eq!(back, c, "{json}");
        }
        // A test client's outcome has the driver's JSON and decodes as the internal one.
        let json = serde_json::to_string(&Command::from(TestCommand::RecordOutcome(outcome)))
            .expect("encode");
        assert!(matches!(
            serde_json::from_str::<Command>(&json),
            Ok(Command::Internal(InternalCommand::RecordOutcome(_)))
        ));
        assert!(
            serde_json::from_str::<Command>(r#"{"Nope":{}}"#)
                .unwrap_err()
                .to_string()
                .contains("unknown variant `Nope`")
        );
        assert!(
            serde_json::from_str::<Command>(r#"{"CheckPriors":null,"Put":{}}"#).is_err(),
            "two kinds in one object"
        );
    }

    #[test]
    fn a_client_command_never_decodes_an_internal_one() {
        for json in [
            r#"{"RecordOutcome":{"motion_id":"m","rulings":[],"reveals":[]}}"#,
            r#"{"SetAdmission":{"arbiter_id":"a","admitted":true,"score_milli":1}}"#,
            r#"{"SubmitExam":{"arbiter_id":"a","reveals":[]}}"#,
            r#"{"LogCommitments":{"motion_id":"m","motion":"00","commitments":[]}}"#,
            r#"{"CloseMotion":{"motion_id":"m"}}"#,
        ] {
            assert!(
                serde_json::from_str::<ClientCommand>(json).is_err(),
                "{json}"
            );
        }
    }
}
