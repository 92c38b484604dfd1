//! The charter document: organisations (each with the fingerprint of its certificate
//! authority and an Ed25519 key that signs its roster), the replicas and operators pinned
//! by certificate, the cluster's motion key, the rule for admitting another organisation,
//! and the policy floors no debate may go below.

use std::collections::BTreeSet;

use panel_proto::{VerifyingKey, parse_public_key};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fingerprint::Fingerprint;

/// The only layout this build reads.
pub const CHARTER_VERSION: u32 = 1;

/// Why a charter is not acceptable; the message names the JSON path and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CharterError {
    #[error("not a charter: {0}")]
    Json(String),
    #[error("{path}: {problem}")]
    Rule { path: String, problem: String },
    /// The charter's JSON could not be written, so it has no digest to pin or sign over.
    #[error("the charter cannot be encoded as JSON ({0}), so it has no digest; check its fields")]
    Unencodable(String),
}

fn rule(path: impl Into<String>, problem: impl Into<String>) -> CharterError {
    CharterError::Rule {
        path: path.into(),
        problem: problem.into(),
    }
}

/// One organisation of the federation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Organisation {
    pub name: String,
    /// Its certificate authority's certificate (what its TLS identities chain to).
    pub ca_sha256: Fingerprint,
    /// Hex Ed25519 public key that signs the organisation's roster: each registration of
    /// one of its arbiters carries this key's endorsement (docs/WIRE.md, "Registration").
    pub signing_key: String,
}

impl Organisation {
    /// Its roster key, if `signing_key` is a valid, non-weak public key (always so for the
    /// organisations of a checked charter).
    pub fn roster_key(&self) -> Option<VerifyingKey> {
        key(String::new(), &self.signing_key).ok()
    }
}

/// A coordinator replica: its Raft id, the organisation that runs it, its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaEntry {
    pub id: u64,
    pub organisation: String,
    pub cert_sha256: Fingerprint,
    /// The replica's own log key (a C2SP Ed25519 vkey named for the log's origin) when the
    /// log is signed by a quorum of replicas ([`LogIdentity::quorum`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_vkey: Option<String>,
    /// The replica's beacon key (hex vrf-r255 public key, `beacon_key.rs`), derived from
    /// its log key: its proofs are the shares a motion's panel is drawn from
    /// (docs/SECURITY.md "The draw cannot be steered"). Absent in charters from before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon_vkey: Option<String>,
}

/// An operator: may change the group's membership through the `Admin` service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorEntry {
    pub name: String,
    pub organisation: String,
    pub cert_sha256: Fingerprint,
}

/// What no debate policy may go below (docs/ARCHITECTURE.md, invariant 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floors {
    /// Stances seated on every panel (A and B).
    pub min_stances: usize,
    /// Organisations seated on every panel.
    pub min_organisations: usize,
    /// Net support an outcome needs from each side.
    pub min_net_support_per_side: usize,
}

impl Floors {
    /// The project's floors: two stances, two organisations, net support of one per side.
    pub const PROJECT: Floors = Floors {
        min_stances: 2,
        min_organisations: 2,
        min_net_support_per_side: 1,
    };
}

/// The record's transparency log identity (docs/WIRE.md, "Transparency log"): the origin
/// line of its checkpoints and who signs them. Either one log key that every replica holds
/// (`vkey`, the charters written before quorum logs), or, with `quorum`, each replica's own
/// key (`ReplicaEntry::log_vkey`) and a checkpoint is the log's only when the keys of
/// `quorum` distinct organisations signed it, so no replica or operator can sign alone
/// (docs/SECURITY.md "The record").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogIdentity {
    pub origin: String,
    /// C2SP vkey (signature type 0x01) whose key name is the origin: the single shared log
    /// key. Empty under a quorum.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vkey: String,
    /// Distinct organisations whose replicas' log keys must sign each checkpoint; 0 (and
    /// absent) for the single shared key.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quorum: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl LogIdentity {
    /// The single log key (checked valid by [`Charter::check`]); `None` under a quorum.
    pub fn verifier(&self) -> Option<panel_tlog::VerifierKey> {
        panel_tlog::VerifierKey::parse(&self.vkey).ok()
    }
}

/// A witness that cosigns the log's checkpoints, run by one of the organisations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessEntry {
    pub organisation: String,
    /// C2SP vkey (signature type 0x04, tlog-cosignature) of the witness.
    pub vkey: String,
}

impl WitnessEntry {
    /// The witness's verifier key (checked valid by [`Charter::check`]).
    pub fn verifier(&self) -> Option<panel_tlog::VerifierKey> {
        panel_tlog::VerifierKey::parse(&self.vkey).ok()
    }
}

/// What the federation agreed about its calibration exam (docs/SECURITY.md "Exams").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExamTerms {
    /// A practice group: its exams may use the shipped pool, whose gold answers anyone
    /// can read, so an admission in it shows that an arbiter sat the exam, never that
    /// nobody could have looked the answers up. Every record of it says so.
    #[serde(default)]
    pub practice: bool,
    /// The admission bar; anything below [`ExamBar::Skill`] needs `practice`.
    #[serde(default)]
    pub bar: ExamBar,
}

/// How high the exam's admission bar is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExamBar {
    /// The calibration module's bars: Brier skill over a constant forecast, calibration,
    /// log score and the bias probes (docs/CALIBRATION.md).
    #[default]
    Skill,
    /// Admitted for answering enough items, whatever the scores: the scores are still
    /// computed and kept on record, and nothing says the arbiter forecasts better than a
    /// coin. Only in a practice group.
    Attendance,
}

/// The federation charter (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Charter {
    pub charter_version: u32,
    pub organisations: Vec<Organisation>,
    /// Endorsements of existing organisations a new organisation needs.
    pub admission_threshold: usize,
    pub replicas: Vec<ReplicaEntry>,
    pub operators: Vec<OperatorEntry>,
    /// Hex Ed25519 public key every motion put to arbiters is signed with.
    pub motion_key: String,
    pub floors: Floors,
    /// The log identity whose checkpoints the replicas sign; absent in charters written
    /// before the witnessed log (their records carry no checkpoints to trust).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<LogIdentity>,
    /// The witnesses whose cosignatures apply accepts onto the log's checkpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<WitnessEntry>,
    /// The exam terms; absent means a real group at the skill bar (charters written
    /// before exam terms read so, and their digests are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exam: Option<ExamTerms>,
    /// Who decides a debate question after the ladder's last round left it unanswered
    /// (docs/PANEL.md "The last word"); absent: such a question stays not proven.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_word: Option<LastWordAuthority>,
    /// A final panel that decides, by a supermajority, a debate question the ladder left
    /// unanswered, before any last-word authority (docs/PANEL.md "The last word"); absent:
    /// none is drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_panel: Option<FinalPanel>,
    /// The appeal credits each organisation is granted (docs/PANEL.md "Funded appeals");
    /// absent: the project's terms (8 credits, one more a day, 2 for a first round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appeal_credits: Option<AppealCredits>,
}

/// The budget of appeal credits the charter grants every organisation, and what an appeal
/// costs from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppealCredits {
    /// What an organisation holds before its first appeal, and the most it can hold.
    pub budget: u64,
    /// Credits added every `refill_period_ms` of the record's time, up to `budget`.
    pub refill: u64,
    pub refill_period_ms: u64,
    /// The deposit of a debate's first appeal; each later round doubles it.
    pub deposit: u64,
}

impl AppealCredits {
    /// Longest refill period (a year) and largest budget a charter may set.
    const MAX_PERIOD_MS: u64 = 366 * 24 * 3600 * 1000;
    const MAX_BUDGET: u64 = 1_000_000;

    fn check(&self) -> Result<(), CharterError> {
        let field = |f: &str| format!("appeal_credits.{f}");
        if self.deposit == 0 || self.deposit > self.budget {
            return Err(rule(
                field("deposit"),
                format!(
                    "{} is not between 1 and the budget {}: an appeal must cost something and \
                     a full budget must pay a first round",
                    self.deposit, self.budget
                ),
            ));
        }
        if self.budget > Self::MAX_BUDGET {
            return Err(rule(
                field("budget"),
                format!("{} is above {}", self.budget, Self::MAX_BUDGET),
            ));
        }
        if self.refill == 0 || !(60_000..=Self::MAX_PERIOD_MS).contains(&self.refill_period_ms) {
            return Err(rule(
                field("refill_period_ms"),
                format!(
                    "refill {} every {} ms: give at least 1 credit every 60000 ms to a year",
                    self.refill, self.refill_period_ms
                ),
            ));
        }
        Ok(())
    }
}

/// A named human authority whose signed decision ends a question the panels could not
/// answer, with its reason on the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastWordAuthority {
    /// Its name, as the record shows it ("the federation's appeals board").
    pub name: String,
    /// Hex Ed25519 public key its decisions are signed with.
    pub key: String,
}

/// The final panel: the widest fresh draw across all organisations, under registered
/// stances, whose answer stands only with this share of its counted rulings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalPanel {
    /// The share of counted rulings the answer needs, in thousandths, from
    /// [`FinalPanel::MIN_SUPERMAJORITY_MILLI`] to 1000.
    pub supermajority_milli: u32,
}

impl FinalPanel {
    /// Three in five: anything lower is hardly more than the majority the ladder's panels
    /// already failed to reach across priors.
    pub const MIN_SUPERMAJORITY_MILLI: u32 = 600;

    fn check(&self) -> Result<(), CharterError> {
        if !(Self::MIN_SUPERMAJORITY_MILLI..=1000).contains(&self.supermajority_milli) {
            return Err(rule(
                "final_panel.supermajority_milli",
                format!(
                    "is {}: a supermajority is between {} and 1000 thousandths of the counted                      rulings (667 for two thirds)",
                    self.supermajority_milli,
                    Self::MIN_SUPERMAJORITY_MILLI
                ),
            ));
        }
        Ok(())
    }
}

/// A role a peer can hold on the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A replica of the group: may call the `Replica` service and judge-facing RPCs.
    Replica,
    /// An operator: may call the `Admin` service.
    Operator,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Replica => "a replica",
            Role::Operator => "an operator",
        })
    }
}

fn key(path: String, hex_key: &str) -> Result<VerifyingKey, CharterError> {
    let bytes = hex::decode(hex_key.trim())
        .map_err(|e| rule(&path, format!("not hex ({e}); give 64 hex digits")))?;
    parse_public_key(&bytes).map_err(|e| rule(path, e.to_string()))
}

impl Charter {
    /// Decodes and checks a charter's JSON text.
    pub fn parse(text: &str) -> Result<Self, CharterError> {
        let charter: Charter =
            serde_json::from_str(text).map_err(|e| CharterError::Json(e.to_string()))?;
        charter.check()?;
        Ok(charter)
    }

    /// Structural rules: known version; organisations named once with valid keys; every
    /// replica and operator of a listed organisation; no certificate holding two roles; a
    /// valid motion key; floors no lower than the project's; an admission threshold between
    /// one and the number of organisations.
    pub fn check(&self) -> Result<(), CharterError> {
        if let Some(credits) = &self.appeal_credits {
            credits.check()?;
        }
        if let Some(fp) = &self.final_panel {
            fp.check()?;
        }
        if let Some(lw) = &self.last_word {
            if lw.name.trim().is_empty() {
                return Err(rule("last_word.name", "is empty: name the authority"));
            }
            key("last_word.key".into(), &lw.key)?;
        }
        if let Some(exam) = &self.exam
            && exam.bar != ExamBar::Skill
            && !exam.practice
        {
            return Err(rule(
                "exam.bar",
                "a bar below \"skill\" is allowed only in a practice group; set exam.practice \
                 to true (and its records say that its exams prove nothing) or keep the skill bar"
                    .to_owned(),
            ));
        }
        if self.charter_version != CHARTER_VERSION {
            return Err(rule(
                "charter_version",
                format!(
                    "{} is not understood; this build reads version {CHARTER_VERSION}",
                    self.charter_version
                ),
            ));
        }
        let mut orgs = BTreeSet::new();
        let mut org_keys = BTreeSet::new();
        for (i, o) in self.organisations.iter().enumerate() {
            if o.name.trim().is_empty() || !orgs.insert(o.name.as_str()) {
                return Err(rule(
                    format!("organisations[{i}].name"),
                    format!("{:?} is empty or listed twice", o.name),
                ));
            }
            let k = key(format!("organisations[{i}].signing_key"), &o.signing_key)?;
            if !org_keys.insert(k.to_bytes()) {
                return Err(rule(
                    format!("organisations[{i}].signing_key"),
                    "two organisations share one signing key",
                ));
            }
        }
        let mut certs = BTreeSet::new();
        let mut ids = BTreeSet::new();
        for (i, r) in self.replicas.iter().enumerate() {
            if !orgs.contains(r.organisation.as_str()) {
                return Err(rule(
                    format!("replicas[{i}].organisation"),
                    format!(
                        "{:?} is not one of the charter's organisations",
                        r.organisation
                    ),
                ));
            }
            if !ids.insert(r.id) {
                return Err(rule(
                    format!("replicas[{i}].id"),
                    format!("replica {} is listed twice", r.id),
                ));
            }
            if !certs.insert(r.cert_sha256.clone()) {
                return Err(rule(
                    format!("replicas[{i}].cert_sha256"),
                    "a certificate may hold one identity only",
                ));
            }
        }
        for (i, o) in self.operators.iter().enumerate() {
            if !orgs.contains(o.organisation.as_str()) {
                return Err(rule(
                    format!("operators[{i}].organisation"),
                    format!(
                        "{:?} is not one of the charter's organisations",
                        o.organisation
                    ),
                ));
            }
            if !certs.insert(o.cert_sha256.clone()) {
                return Err(rule(
                    format!("operators[{i}].cert_sha256"),
                    "a certificate may hold one identity only",
                ));
            }
        }
        key("motion_key".into(), &self.motion_key)?;
        let f = &self.floors;
        let p = Floors::PROJECT;
        if f.min_stances < p.min_stances
            || f.min_organisations < p.min_organisations
            || f.min_net_support_per_side < p.min_net_support_per_side
        {
            return Err(rule(
                "floors",
                format!(
                    "floors may not go below two stances, two organisations and net support \
                     of 1 per side (got {} stances, {} organisations, {})",
                    f.min_stances, f.min_organisations, f.min_net_support_per_side
                ),
            ));
        }
        self.check_log(&orgs)?;
        if self.admission_threshold == 0 || self.admission_threshold > self.organisations.len() {
            return Err(rule(
                "admission_threshold",
                format!(
                    "{} must be between 1 and the number of organisations ({})",
                    self.admission_threshold,
                    self.organisations.len()
                ),
            ));
        }
        Ok(())
    }

    /// The log's vkey must be an Ed25519 note key named for the origin; each witness's a
    /// cosignature key of a listed organisation, none listed twice, none the log's.
    fn check_log(&self, orgs: &BTreeSet<&str>) -> Result<(), CharterError> {
        use panel_tlog::note::{TYPE_COSIGNATURE_V1, TYPE_ED25519};
        let mut keys = BTreeSet::new();
        let log_key = |path: String, vkey: &str, origin: &str| {
            let v = panel_tlog::VerifierKey::parse(vkey).map_err(|e| rule(&path, e.to_string()))?;
            if v.sig_type != TYPE_ED25519 || v.name != origin {
                return Err(rule(
                    path,
                    "must be an Ed25519 note key (type 0x01) whose name is the log's origin",
                ));
            }
            Ok(v)
        };
        match &self.log {
            Some(log) if log.quorum > 0 => {
                if !log.vkey.is_empty() {
                    return Err(rule(
                        "log.vkey",
                        "a log signed by a quorum of replicas has no shared key; remove \
                         log.vkey and give each replica its log_vkey",
                    ));
                }
                let mut signing_orgs = BTreeSet::new();
                for (i, r) in self.replicas.iter().enumerate() {
                    let path = format!("replicas[{i}].log_vkey");
                    let vkey = r.log_vkey.as_deref().ok_or_else(|| {
                        rule(
                            &path,
                            "missing: under log.quorum every replica signs with its own log key",
                        )
                    })?;
                    let v = log_key(path.clone(), vkey, &log.origin)?;
                    if !keys.insert(v.key.to_bytes()) {
                        return Err(rule(path, "two replicas share one log key"));
                    }
                    signing_orgs.insert(r.organisation.as_str());
                }
                if log.quorum < 2 || log.quorum > signing_orgs.len() {
                    return Err(rule(
                        "log.quorum",
                        format!(
                            "{} must be at least 2 (no organisation signs alone) and at most \
                             the {} organisation(s) that run replicas",
                            log.quorum,
                            signing_orgs.len()
                        ),
                    ));
                }
            }
            Some(log) => {
                let v = log_key("log.vkey".into(), &log.vkey, &log.origin)?;
                keys.insert(v.key.to_bytes());
                if let Some(i) = self.replicas.iter().position(|r| r.log_vkey.is_some()) {
                    return Err(rule(
                        format!("replicas[{i}].log_vkey"),
                        "replica log keys need log.quorum (and no log.vkey)",
                    ));
                }
            }
            None => {
                if let Some(i) = self.replicas.iter().position(|r| r.log_vkey.is_some()) {
                    return Err(rule(
                        format!("replicas[{i}].log_vkey"),
                        "replica log keys need a log identity (`log`)",
                    ));
                }
            }
        }
        let mut beacon_keys = BTreeSet::new();
        for (i, r) in self.replicas.iter().enumerate() {
            if let Some(k) = &r.beacon_vkey {
                let path = format!("replicas[{i}].beacon_vkey");
                crate::beacon_key::parse_public(k).map_err(|e| rule(&path, e.to_string()))?;
                if !beacon_keys.insert(k.to_ascii_lowercase()) {
                    return Err(rule(path, "two replicas share one beacon key"));
                }
            }
        }
        for (i, w) in self.witnesses.iter().enumerate() {
            let path = format!("witnesses[{i}]");
            if !orgs.contains(w.organisation.as_str()) {
                return Err(rule(
                    format!("{path}.organisation"),
                    format!(
                        "{:?} is not one of the charter's organisations",
                        w.organisation
                    ),
                ));
            }
            let v = panel_tlog::VerifierKey::parse(&w.vkey)
                .map_err(|e| rule(format!("{path}.vkey"), e.to_string()))?;
            if v.sig_type != TYPE_COSIGNATURE_V1 {
                return Err(rule(
                    format!("{path}.vkey"),
                    "a witness key is a cosignature/v1 key (type 0x04)",
                ));
            }
            if !keys.insert(v.key.to_bytes()) {
                return Err(rule(
                    format!("{path}.vkey"),
                    "this key is already the log's or another witness's",
                ));
            }
        }
        if !self.witnesses.is_empty() && self.log.is_none() {
            return Err(rule(
                "witnesses",
                "witnesses need a log identity (`log`) to cosign",
            ));
        }
        Ok(())
    }

    /// SHA-256 of the charter's JSON, to pin it (`panel verify --charter`) and to bind
    /// every endorsement made under it. An encoding failure is an error, never the digest
    /// of empty bytes (which every charter would share).
    pub fn digest(&self) -> Result<[u8; 32], CharterError> {
        let json =
            serde_json::to_vec(self).map_err(|e| CharterError::Unencodable(e.to_string()))?;
        Ok(Sha256::digest(json).into())
    }

    pub fn organisation(&self, name: &str) -> Option<&Organisation> {
        self.organisations.iter().find(|o| o.name == name)
    }

    /// Who signs the log's checkpoints under a quorum (`None` for the single shared key):
    /// every replica's log key with its organisation.
    pub fn log_quorum(&self) -> Option<panel_tlog::LogQuorum> {
        let log = self.log.as_ref().filter(|l| l.quorum > 0)?;
        Some(panel_tlog::LogQuorum {
            signers: self
                .replicas
                .iter()
                .filter_map(|r| {
                    let key = panel_tlog::VerifierKey::parse(r.log_vkey.as_deref()?).ok()?;
                    Some(panel_tlog::LogSigner {
                        organisation: r.organisation.clone(),
                        key,
                    })
                })
                .collect(),
            organisations: log.quorum,
        })
    }

    /// The cluster's motion key (checked valid by [`Charter::check`]).
    pub fn motion_key(&self) -> Option<VerifyingKey> {
        key(String::new(), &self.motion_key).ok()
    }

    /// The replica whose certificate this is, if any.
    pub fn replica(&self, cert: &Fingerprint) -> Option<&ReplicaEntry> {
        self.replicas.iter().find(|r| &r.cert_sha256 == cert)
    }

    /// The operator whose certificate this is, if any.
    pub fn operator(&self, cert: &Fingerprint) -> Option<&OperatorEntry> {
        self.operators.iter().find(|o| &o.cert_sha256 == cert)
    }

    /// Whether the charter lists replica `id` (membership changes may name only these).
    pub fn has_replica(&self, id: u64) -> bool {
        self.replicas.iter().any(|r| r.id == id)
    }

    /// The name under which `cert` holds `role`, or `None` if it does not.
    pub fn holder(&self, cert: &Fingerprint, role: Role) -> Option<String> {
        match role {
            Role::Replica => self.replica(cert).map(|r| format!("replica {}", r.id)),
            Role::Operator => self.operator(cert).map(|o| format!("operator {}", o.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(b: u8) -> Fingerprint {
        Fingerprint([b; 32])
    }

    /// A valid public key (the basepoint's compressed form is not weak).
    fn pk(seed: u8) -> String {
        let sk = panel_proto::SigningKey::from_bytes(&[seed; 32]);
        hex::encode(sk.verifying_key().to_bytes())
    }

    fn charter() -> Charter {
        Charter {
            charter_version: 1,
            organisations: vec![
                Organisation {
                    name: "north".into(),
                    ca_sha256: fp(1),
                    signing_key: pk(1),
                },
                Organisation {
                    name: "south".into(),
                    ca_sha256: fp(4),
                    signing_key: pk(2),
                },
            ],
            admission_threshold: 2,
            replicas: vec![ReplicaEntry {
                id: 1,
                organisation: "north".into(),
                cert_sha256: fp(2),
                log_vkey: None,
                beacon_vkey: None,
            }],
            operators: vec![OperatorEntry {
                name: "ops".into(),
                organisation: "north".into(),
                cert_sha256: fp(3),
            }],
            motion_key: pk(9),
            floors: Floors::PROJECT,
            log: None,
            witnesses: Vec::new(),
            exam: None,
            last_word: None,
            final_panel: None,
            appeal_credits: None,
        }
    }

    fn refused(c: &Charter) -> String {
        c.check().unwrap_err().to_string()
    }

    #[test]
    fn roles_are_found_by_certificate_only() {
        let c = charter();
        assert!(c.check().is_ok());
        assert_eq!(
            c.holder(&fp(2), Role::Replica).as_deref(),
            Some("replica 1")
        );
        assert_eq!(c.holder(&fp(2), Role::Operator), None);
        assert_eq!(
            c.holder(&fp(3), Role::Operator).as_deref(),
            Some("operator ops")
        );
        assert_eq!(c.holder(&fp(9), Role::Replica), None);
        assert!(
            c.organisation("north")
                .and_then(Organisation::roster_key)
                .is_some()
        );
        assert!(c.organisation("elsewhere").is_none());
    }

    #[test]
    fn a_quorum_log_gives_every_replica_its_own_key_and_needs_two_organisations() {
        let origin = "panel.test/log";
        let vkey = |seed: u8| {
            panel_tlog::NoteSigner::new(origin, panel_proto::SigningKey::from_bytes(&[seed; 32]))
                .expect("k")
                .verifier()
                .to_string()
        };
        let mut c = charter();
        c.replicas.push(ReplicaEntry {
            id: 2,
            organisation: "south".into(),
            cert_sha256: fp(5),
            log_vkey: Some(vkey(21)),
            beacon_vkey: None,
        });
        c.replicas[0].log_vkey = Some(vkey(20));
        c.log = Some(LogIdentity {
            origin: origin.into(),
            vkey: String::new(),
            quorum: 2,
        });
        c.check()
            .expect("two organisations' replica keys, quorum 2");
        let q = c.log_quorum().expect("a quorum log");
        assert_eq!((q.signers.len(), q.organisations), (2, 2));
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            !json.contains("\"vkey\":\"\""),
            "no empty shared key is written: {json}"
        );
        for (change, path) in [
            (
                &(|c: &mut Charter| c.log.as_mut().unwrap().quorum = 1) as &dyn Fn(&mut Charter),
                "log.quorum",
            ),
            (
                &|c: &mut Charter| c.log.as_mut().unwrap().quorum = 3,
                "log.quorum",
            ),
            (
                &|c: &mut Charter| c.log.as_mut().unwrap().vkey = vkey(22),
                "log.vkey",
            ),
            (
                &|c: &mut Charter| c.replicas[1].log_vkey = None,
                "replicas[1].log_vkey",
            ),
            (
                &|c: &mut Charter| c.replicas[1].log_vkey = c.replicas[0].log_vkey.clone(),
                "replicas[1].log_vkey",
            ),
            (
                &|c: &mut Charter| c.log.as_mut().unwrap().quorum = 0,
                "log.vkey",
            ),
        ] {
            let mut bad = c.clone();
            change(&mut bad);
            assert!(refused(&bad).starts_with(path), "{path}: {}", refused(&bad));
        }
        // A single-key log keeps its old shape (and digest).
        let mut single = charter();
        single.log = Some(LogIdentity {
            origin: origin.into(),
            vkey: vkey(23),
            quorum: 0,
        });
        single.check().expect("single key");
        assert!(single.log_quorum().is_none());
        assert!(!serde_json::to_string(&single).unwrap().contains("quorum"));
    }

    #[test]
    fn a_lower_exam_bar_needs_a_practice_group() {
        let mut c = charter();
        c.exam = Some(ExamTerms {
            practice: false,
            bar: ExamBar::Attendance,
        });
        assert!(refused(&c).contains("exam.bar"), "{}", refused(&c));
        c.exam = Some(ExamTerms {
            practice: true,
            bar: ExamBar::Attendance,
        });
        c.check().expect("a practice group at the attendance bar");
        // Charters without exam terms keep their digest: the field is not written.
        c.exam = None;
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("exam"), "{json}");
    }

    #[test]
    fn a_member_of_an_unlisted_organisation_is_refused() {
        let mut c = charter();
        c.replicas[0].organisation = "elsewhere".into();
        assert!(refused(&c).starts_with("replicas[0].organisation"));
    }

    #[test]
    fn one_certificate_cannot_hold_two_identities() {
        let mut c = charter();
        c.operators[0].cert_sha256 = fp(2);
        assert!(refused(&c).starts_with("operators[0].cert_sha256"));
    }

    #[test]
    fn keys_must_be_valid_and_distinct() {
        let mut c = charter();
        c.organisations[1].signing_key = c.organisations[0].signing_key.clone();
        assert!(refused(&c).contains("share one signing key"));
        let mut c = charter();
        c.motion_key = "00".repeat(32);
        assert!(refused(&c).starts_with("motion_key"), "{}", refused(&c));
        let mut c = charter();
        c.organisations[0].signing_key = "zz".into();
        assert!(refused(&c).starts_with("organisations[0].signing_key"));
    }

    #[test]
    fn floors_and_thresholds_cannot_go_below_the_project() {
        let mut c = charter();
        c.floors.min_organisations = 1;
        assert!(refused(&c).starts_with("floors"));
        let mut c = charter();
        c.floors.min_net_support_per_side = 0;
        assert!(refused(&c).starts_with("floors"));
        let mut c = charter();
        c.admission_threshold = 3;
        assert!(refused(&c).starts_with("admission_threshold"));
        c.admission_threshold = 0;
        assert!(refused(&c).starts_with("admission_threshold"));
    }

    #[test]
    fn unknown_fields_and_versions_are_refused() {
        let mut v = serde_json::to_value(charter()).unwrap();
        v["extra"] = serde_json::json!(1);
        assert!(Charter::parse(&v.to_string()).is_err());
        let mut c = charter();
        c.charter_version = 2;
        assert!(refused(&c).starts_with("charter_version"));
        let text = serde_json::to_string(&charter()).unwrap();
        assert_eq!(Charter::parse(&text).unwrap(), charter());
    }

    #[test]
    fn appeal_credits_must_cost_something_that_a_full_budget_can_pay() {
        let good = AppealCredits {
            budget: 8,
            refill: 1,
            refill_period_ms: 86_400_000,
            deposit: 2,
        };
        assert!(good.check().is_ok());
        for (bad, field) in [
            (
                AppealCredits { deposit: 0, ..good },
                "appeal_credits.deposit",
            ),
            (
                AppealCredits { deposit: 9, ..good },
                "appeal_credits.deposit",
            ),
            (
                AppealCredits {
                    budget: 2_000_000,
                    ..good
                },
                "appeal_credits.budget",
            ),
            (
                AppealCredits { refill: 0, ..good },
                "appeal_credits.refill_period_ms",
            ),
            (
                AppealCredits {
                    refill_period_ms: 10,
                    ..good
                },
                "appeal_credits.refill_period_ms",
            ),
        ] {
            let e = bad.check().unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
    }
}
