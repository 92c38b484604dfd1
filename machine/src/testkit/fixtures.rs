//! Fixture values: pools of arbiters, how a seat answers ([`Vote`]), and commands built
//! through JSON so that fields others add with defaults do not break their users.

use crucible::motion::Answer;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::command::ClientCommand;
use crate::debates::relevance_step;
use crate::model::Motion;
use crate::rules::acceptance::{MotionKind, Stance};

use super::KitError;

/// How one seated arbiter answers one motion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vote {
    pub yes: bool,
    /// Its credence in yes.
    pub p: f64,
    pub relevance: Option<u32>,
    /// The byte the receipt's SHA-256 is filled with; `None` for no receipt.
    pub receipt: Option<u8>,
}

impl Vote {
    /// A plain yes or no at credence 0.8 toward it, with no relevance and no receipt.
    pub fn plain(yes: bool) -> Vote {
        Vote {
            yes,
            p: if yes { 0.8 } else { 0.2 },
            relevance: None,
            receipt: None,
        }
    }
}

/// How every seat answers: the motion and the seated arbiter's id.
pub type Judge<'a> = &'a dyn Fn(&Motion, &str) -> Vote;

/// The simulation hint of a motion, answered at `confidence`, with a retrieval receipt
/// on every tier verification.
pub fn hinted(m: &Motion, confidence: f64) -> Vote {
    let receipt = (m.spec.kind == MotionKind::TierVerification).then_some(7);
    match m.spec.expected {
        Some(Answer::Relevance(x)) => Vote {
            yes: true,
            p: 0.5,
            relevance: Some(u32::from(relevance_step(x))),
            receipt,
        },
        Some(Answer::No) => Vote {
            yes: false,
            p: 1.0 - confidence,
            relevance: None,
            receipt,
        },
        _ => Vote {
            yes: true,
            p: confidence,
            relevance: None,
            receipt,
        },
    }
}

/// A command from its JSON form (fields added later with defaults stay optional).
pub fn try_cmd<T: DeserializeOwned>(v: Value) -> Result<T, KitError> {
    Ok(serde_json::from_value(v)?)
}

/// [`try_cmd`] for tests: panics on a malformed command.
#[track_caller]
pub fn cmd<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("well-formed command")
}

/// An arbiter's registration: id, public key (hex), organisation, lineage, stance.
pub fn registration(
    id: &str,
    public_key: &[u8; 32],
    organisation: &str,
    model_family: &str,
    stance: Stance,
) -> Result<ClientCommand, KitError> {
    Ok(ClientCommand::RegisterArbiter(try_cmd(json!({
        "arbiter_id": id,
        "public_key": hex::encode(public_key),
        "organisation": organisation,
        "model_family": model_family,
        "stance": stance,
    }))?))
}

/// A pool entry: id, registered stance, organisation.
pub type PoolMember = (&'static str, Stance, &'static str);

pub const SIX: [PoolMember; 6] = [
    ("a1", Stance::A, "o1"),
    ("a2", Stance::A, "o2"),
    ("a3", Stance::A, "o3"),
    ("b1", Stance::B, "o1"),
    ("b2", Stance::B, "o4"),
    ("b3", Stance::B, "o5"),
];

/// Enough arbiters that an appeal finds a fresh panel of six (docs/PANEL.md, "Fresh
/// panels"): disjoint from everyone who sat on the threads it contests.
pub const EIGHTEEN: [PoolMember; 18] = [
    ("a1", Stance::A, "o1"),
    ("a2", Stance::A, "o2"),
    ("a3", Stance::A, "o3"),
    ("a4", Stance::A, "o4"),
    ("a5", Stance::A, "o5"),
    ("a6", Stance::A, "o1"),
    ("a7", Stance::A, "o2"),
    ("a8", Stance::A, "o3"),
    ("a9", Stance::A, "o4"),
    ("b1", Stance::B, "o1"),
    ("b2", Stance::B, "o4"),
    ("b3", Stance::B, "o5"),
    ("b4", Stance::B, "o2"),
    ("b5", Stance::B, "o3"),
    ("b6", Stance::B, "o1"),
    ("b7", Stance::B, "o4"),
    ("b8", Stance::B, "o5"),
    ("b9", Stance::B, "o2"),
];

/// A thread contribution with one empirical claim about a registry, citing `evidence`
/// (`{"source", "url", "tier"}` objects): the cited claim the kit's debates argue over.
pub fn registry_claim(evidence: Vec<Value>) -> Value {
    json!({"op": "thread", "title": "Registry data", "claim": {
        "type": "empirical",
        "assertion": "The national registry recorded a fall in incidents after the change.",
        "grounds": "The registry publishes yearly incident counts before and after the change.",
        "warrant": "If the counts fell while reporting stayed constant, incidents fell.",
        "evidence": evidence,
        "qualifier": "probable",
    }})
}

/// A charter with nothing in it but what every charter needs: no organisations, replicas,
/// operators, log or witnesses, the project floors and the test kit's motion key. Tests
/// name the part they exercise with struct update syntax (`Charter { last_word, ..bare_charter() }`).
pub fn bare_charter() -> panel_federation::Charter {
    panel_federation::Charter {
        charter_version: panel_federation::CHARTER_VERSION,
        organisations: Vec::new(),
        admission_threshold: 1,
        replicas: Vec::new(),
        operators: Vec::new(),
        motion_key: hex::encode(super::keys::motion_key().verifying_key().to_bytes()),
        floors: panel_federation::Floors::PROJECT,
        log: None,
        witnesses: Vec::new(),
        exam: None,
        last_word: None,
        final_panel: None,
        appeal_credits: None,
    }
}
