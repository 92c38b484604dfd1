//! Issuing the federation's certificates (`panel pki init`, `panel up`): one authority per
//! organisation, and for every replica, operator, node and client an ECDSA P-256
//! certificate signed by its own organisation's authority, valid for the hosts it serves
//! on and named `spiffe://crucible-panel/<organisation>/<kind>/<name>`. Then the charter
//! that pins the replicas' and operators' certificates.
//!
//! Layout under the output folder:
//! ```text
//! ca.pem                      every organisation's authority (the federation's roots)
//! charter.json                organisations, replicas, operators (crate::charter_file)
//! orgs/<org>/ca.pem, ca.key   one organisation's authority (the key stays with it)
//! orgs/<org>/signing.key      its roster key: endorses its arbiters' registrations
//! orgs/<org>/witness.key      its witness's cosigning key (`panel witness run --key`)
//! motion.key                  the cluster's motion key (every replica holds it)
//! policy.txt                  the tlog-policy a verifier of the record trusts
//! <identity>/ca.pem, cert.pem, key.pem   what `--tls <identity dir>` reads
//! <replica>/log.key           that replica's own log key (`--log-key`)
//! ```
//!
//! Afterwards [`identity::issue_one`] issues one more identity into such a folder
//! (`panel pki issue`), and [`joining::init`] writes a joining organisation's own folder
//! in the same layout (`panel org init`).
//!
//! The log is a quorum log whenever replicas of two or more organisations are planned:
//! each replica signs checkpoints with its own key, and a checkpoint is the log's only with
//! the signatures of a majority (at least two) of those organisations (docs/SECURITY.md
//! "The record"). A plan whose replicas all belong to one organisation gets the single
//! shared `log.key` of older federations, at the root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};

use crate::error::TransportError;
use crate::material::{CA_FILE, CERT_FILE, KEY_FILE};
use crate::peer::Fingerprint;
use ed25519_dalek::SigningKey;
use panel_federation::{
    CHARTER_VERSION, Charter, Floors, LogIdentity, OperatorEntry, Organisation, ReplicaEntry,
    WitnessEntry,
};
use sha2::{Digest, Sha256};

pub mod identity;
pub mod joining;

/// The folder of the organisations' authorities and keys under an issued folder.
pub const ORGS_DIR: &str = "orgs";
/// The file every issued folder's charter is written to.
pub const CHARTER_FILE: &str = "charter.json";
/// The cluster's motion key under the issued folder.
pub const MOTION_KEY_FILE: &str = "motion.key";
/// The last-word authority's signing key (docs/PANEL.md "The last word").
pub const LAST_WORD_KEY_FILE: &str = "last-word.key";
/// An organisation's roster key under `orgs/<org>/`.
pub const SIGNING_KEY_FILE: &str = "signing.key";
/// An organisation's witness key under `orgs/<org>/`.
pub const WITNESS_KEY_FILE: &str = "witness.key";
/// A replica's own log key, in its identity folder (or, for a single-key log, the shared
/// key at the root).
pub const LOG_KEY_FILE: &str = "log.key";
/// The trust policy for the federation's record (tlog-policy).
pub const POLICY_FILE: &str = "policy.txt";

/// The name of organisation `org`'s witness (its cosignatures' key name).
pub fn witness_name(org: &str) -> String {
    format!("witness.{org}.crucible-panel")
}

/// What an identity is for; replicas and operators are pinned in the charter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Replica {
        id: u64,
    },
    Operator,
    Node,
    Client,
    /// An organisation's witness, where it serves behind TLS (its charter identity is its
    /// cosigning key, `orgs/<org>/witness.key`).
    Witness,
}

impl Kind {
    fn label(&self) -> &'static str {
        match self {
            Kind::Replica { .. } => "replica",
            Kind::Operator => "operator",
            Kind::Node => "node",
            Kind::Client => "client",
            Kind::Witness => "witness",
        }
    }
}

/// One certificate to issue.
#[derive(Debug, Clone)]
pub struct IdentitySpec {
    pub kind: Kind,
    /// Folder name under the output folder, and the certificate's common name.
    pub name: String,
    pub organisation: String,
    /// DNS names or IP addresses the identity serves on (servers only need them).
    pub hosts: Vec<String>,
}

/// Everything `issue` creates.
#[derive(Debug, Clone, Default)]
pub struct PkiPlan {
    pub organisations: Vec<String>,
    pub identities: Vec<IdentitySpec>,
    /// The charter's exam terms (`None`: a real group at the skill bar).
    pub exam: Option<panel_federation::ExamTerms>,
    /// The name of the authority that has the last word (docs/PANEL.md "The last word");
    /// its key is issued as `last-word.key` beside the charter.
    pub last_word: Option<String>,
    /// The charter's final panel (docs/PANEL.md "The last word"); `None`: none is drawn.
    pub final_panel: Option<panel_federation::FinalPanel>,
    /// Derive every Ed25519 key the plan issues (roster, witness, log, motion, last-word
    /// keys; the replicas' beacon keys follow from their log keys) from this secret and the
    /// key file's place, instead of the OS's randomness: `panel up --seed` replays its
    /// panel draws with it. TLS keys stay fresh; no draw reads them. `None` for every real
    /// federation.
    pub key_seed: Option<[u8; 32]>,
}

/// Where the issued material is.
#[derive(Debug, Clone)]
pub struct Issued {
    pub root: PathBuf,
    pub charter: Charter,
    /// Each replica's log key file, by Raft id (empty for a single-key log).
    pub replica_log_keys: BTreeMap<u64, PathBuf>,
}

impl Issued {
    /// The `--tls` folder of identity `name`.
    pub fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub fn charter_path(&self) -> PathBuf {
        self.root.join(CHARTER_FILE)
    }

    /// The log key replica `id` signs checkpoints with: its own under a quorum log, else
    /// the shared one.
    pub fn log_key_path(&self, id: u64) -> PathBuf {
        self.replica_log_keys
            .get(&id)
            .cloned()
            .unwrap_or_else(|| self.root.join(LOG_KEY_FILE))
    }

    pub fn policy_path(&self) -> PathBuf {
        self.root.join(POLICY_FILE)
    }

    /// The witness key file of `organisation`.
    pub fn witness_key_path(&self, organisation: &str) -> PathBuf {
        self.root
            .join("orgs")
            .join(organisation)
            .join(WITNESS_KEY_FILE)
    }

    pub fn motion_key_path(&self) -> PathBuf {
        self.root.join(MOTION_KEY_FILE)
    }

    /// The roster key file of `organisation`.
    pub fn signing_key_path(&self, organisation: &str) -> PathBuf {
        self.root
            .join("orgs")
            .join(organisation)
            .join(SIGNING_KEY_FILE)
    }
}

/// A fresh Ed25519 key, written as its raw 32-byte seed (mode 0600), as the motion key and
/// the organisations' roster keys are kept.
pub fn generate_seed_key(path: &Path) -> Result<SigningKey, TransportError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| TransportError::Write {
        path: path.display().to_string(),
        source: std::io::Error::other(e.to_string()),
    })?;
    write(path, &seed, true)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Where the plan's Ed25519 keys come from: the OS, or [`PkiPlan::key_seed`].
struct KeySource<'a> {
    seed: Option<[u8; 32]>,
    root: &'a Path,
}

impl KeySource<'_> {
    /// A key for the file `path` under the issue's root, written as its raw seed.
    fn key(&self, path: &Path) -> Result<SigningKey, TransportError> {
        let Some(secret) = self.seed else {
            return generate_seed_key(path);
        };
        let place = path.strip_prefix(self.root).unwrap_or(path);
        let mut h = Sha256::new();
        h.update(b"crucible-panel/pki-key/v1\0");
        h.update(secret);
        h.update(place.to_string_lossy().as_bytes());
        let seed: [u8; 32] = h.finalize().into();
        write(path, &seed, true)?;
        Ok(SigningKey::from_bytes(&seed))
    }
}

/// Reads a raw 32-byte seed key file; one readable by group or others is refused.
pub fn read_seed_key(path: &Path) -> Result<SigningKey, TransportError> {
    use std::os::unix::fs::PermissionsExt;
    let err = |e| TransportError::File {
        path: path.display().to_string(),
        what: "a signing key",
        source: e,
    };
    let mode = std::fs::metadata(path).map_err(err)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(err(std::io::Error::other(format!(
            "mode {mode:o} lets others read it; run `chmod 600 {}`",
            path.display()
        ))));
    }
    let bytes = std::fs::read(path).map_err(err)?;
    let seed: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        err(std::io::Error::other(format!(
            "{} bytes; a key file is a raw 32-byte Ed25519 seed",
            bytes.len()
        )))
    })?;
    Ok(SigningKey::from_bytes(&seed))
}

fn write(path: &Path, bytes: &[u8], secret: bool) -> Result<(), TransportError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e| TransportError::Write {
        path: path.display().to_string(),
        source: e,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(path)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)
}

fn name(common: &str, organisation: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common);
    dn.push(DnType::OrganizationName, organisation);
    dn
}

/// The certificate profile of organisation `org`'s authority.
fn authority_params(org: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&authority_name(org), org);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// The common name of organisation `org`'s authority certificate.
fn authority_name(org: &str) -> String {
    format!("{org} authority")
}

fn authority(org: &str) -> Result<(CertifiedIssuer<'static, KeyPair>, String), TransportError> {
    let key = KeyPair::generate()?;
    let key_pem = key.serialize_pem();
    Ok((
        CertifiedIssuer::self_signed(authority_params(org), key)?,
        key_pem,
    ))
}

/// The authority key file of an organisation, beside its `ca.pem` under `orgs/<org>/`.
pub const AUTHORITY_KEY_FILE: &str = "ca.key";

/// A founded organisation: its authority, its charter entry and its witness's entry.
type Founded = (
    CertifiedIssuer<'static, KeyPair>,
    Organisation,
    WitnessEntry,
);

/// What founding one organisation writes under `org_dir` (`orgs/<org>/`): its authority
/// (`ca.pem`, `ca.key`), its roster key and its witness key; and its charter entries.
fn found_organisation(
    org: &str,
    org_dir: &Path,
    keys: &KeySource,
) -> Result<Founded, TransportError> {
    let (issuer, key_pem) = authority(org)?;
    write(&org_dir.join(CA_FILE), issuer.pem().as_bytes(), false)?;
    write(&org_dir.join(AUTHORITY_KEY_FILE), key_pem.as_bytes(), true)?;
    let roster = keys.key(&org_dir.join(SIGNING_KEY_FILE))?;
    let witness_key = keys.key(&org_dir.join(WITNESS_KEY_FILE))?;
    let witness = panel_tlog::Cosigner::new(&witness_name(org), witness_key)
        .map_err(|e| plan_error(org_dir, e.to_string()))?;
    let entry = Organisation {
        name: org.to_owned(),
        ca_sha256: Fingerprint::of_der(issuer.der()),
        signing_key: hex::encode(roster.verifying_key().to_bytes()),
    };
    let witness = WitnessEntry {
        organisation: org.to_owned(),
        vkey: witness.verifier().to_string(),
    };
    Ok((issuer, entry, witness))
}

/// Writes one identity folder: the roots `bundle`, its certificate followed by its
/// `authority`'s (so a peer whose `ca.pem` predates the organisation still finds the
/// authority the record trusts by fingerprint, docs/FEDERATION.md), and its key (0600).
fn write_identity(
    dir: &Path,
    bundle: &str,
    cert: &str,
    authority: &str,
    key: &str,
) -> Result<(), TransportError> {
    write(&dir.join(CA_FILE), bundle.as_bytes(), false)?;
    let chain = format!("{}\n{}", cert.trim_end(), authority.trim_start());
    write(&dir.join(CERT_FILE), chain.as_bytes(), false)?;
    write(&dir.join(KEY_FILE), key.as_bytes(), true)
}

fn leaf(
    spec: &IdentitySpec,
    issuer: &rcgen::Issuer<'_, KeyPair>,
) -> Result<(String, String, Fingerprint), TransportError> {
    let mut params = CertificateParams::new(spec.hosts.clone())?;
    let uri = format!(
        "spiffe://crucible-panel/{}/{}/{}",
        spec.organisation,
        spec.kind.label(),
        spec.name
    );
    params.subject_alt_names.push(SanType::URI(uri.try_into()?));
    params.distinguished_name = name(&spec.name, &spec.organisation);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    let fp = Fingerprint::of_der(cert.der());
    Ok((cert.pem(), key.serialize_pem(), fp))
}

fn plan_error(out: &Path, problem: String) -> TransportError {
    TransportError::Charter {
        path: out.display().to_string(),
        problem,
    }
}

/// The tlog-policy a verifier of the federation's record trusts: the charter's log, each
/// organisation's witness, and a quorum of every organisation's witness (no record is
/// trusted that one organisation alone could have rewritten).
pub fn policy_of(charter: &Charter) -> String {
    let mut s = String::from("# Crucible Panel record trust policy (C2SP tlog-policy)\n");
    match (&charter.log, charter.log_quorum()) {
        (Some(_), Some(q)) => {
            for signer in &q.signers {
                s.push_str(&format!(
                    "log-signer {} {}\n",
                    signer.organisation, signer.key
                ));
            }
            s.push_str(&format!("log-quorum {}\n", q.organisations));
        }
        (Some(log), None) => s.push_str(&format!("log {}\n", log.vkey)),
        (None, _) => {}
    }
    let mut names = Vec::new();
    for w in &charter.witnesses {
        s.push_str(&format!("witness {} {}\n", w.organisation, w.vkey));
        names.push(w.organisation.clone());
    }
    if names.is_empty() {
        s.push_str("quorum none\n");
    } else {
        s.push_str(&format!(
            "group organisations all {}\nquorum organisations\n",
            names.join(" ")
        ));
    }
    s
}

/// The log's identity (module docs): with replicas of two or more organisations, a key in
/// each replica's folder, its vkey in the replica's charter entry, and a quorum of a
/// majority (at least two) of those organisations; otherwise one shared key at the root.
/// The origin names this federation's log uniquely by the first key's first bytes.
fn log_identity(
    plan: &PkiPlan,
    out: &Path,
    keys: &KeySource,
    replicas: &mut [ReplicaEntry],
) -> Result<(LogIdentity, BTreeMap<u64, PathBuf>), TransportError> {
    let origin_of = |key: &SigningKey| {
        format!(
            "crucible-panel/log-{}",
            hex::encode(&key.verifying_key().to_bytes()[..6])
        )
    };
    let orgs = replicas
        .iter()
        .map(|r| r.organisation.as_str())
        .collect::<std::collections::BTreeSet<&str>>()
        .len();
    if orgs < 2 {
        let seed = keys.key(&out.join(LOG_KEY_FILE))?;
        let origin = origin_of(&seed);
        let log = panel_tlog::NoteSigner::new(&origin, seed)
            .map_err(|e| plan_error(out, e.to_string()))?;
        let vkey = log.verifier().to_string();
        return Ok((
            LogIdentity {
                origin,
                vkey,
                quorum: 0,
            },
            BTreeMap::new(),
        ));
    }
    let mut paths = BTreeMap::new();
    let mut seeds = Vec::new();
    for r in replicas.iter() {
        let name = plan
            .identities
            .iter()
            .find(|s| s.kind == Kind::Replica { id: r.id })
            .map(|s| s.name.clone())
            .unwrap_or_else(|| replica_dir_name(r.id));
        let path = out.join(name).join(LOG_KEY_FILE);
        seeds.push(keys.key(&path)?);
        paths.insert(r.id, path);
    }
    let origin = origin_of(&seeds[0]);
    for (r, seed) in replicas.iter_mut().zip(seeds) {
        let beacon = panel_federation::beacon_key::BeaconSecret::from_log_seed(&seed.to_bytes());
        r.beacon_vkey = Some(beacon.public_hex());
        let signer = panel_tlog::NoteSigner::new(&origin, seed)
            .map_err(|e| plan_error(out, e.to_string()))?;
        r.log_vkey = Some(signer.verifier().to_string());
    }
    let log = LogIdentity {
        origin,
        vkey: String::new(),
        quorum: (orgs / 2 + 1).max(2),
    };
    Ok((log, paths))
}

/// Issues `plan` under `out` (see the module docs) and writes the charter.
pub fn issue(plan: &PkiPlan, out: &Path) -> Result<Issued, TransportError> {
    let keys = KeySource {
        seed: plan.key_seed,
        root: out,
    };
    let mut issuers = BTreeMap::new();
    let mut witnesses = Vec::new();
    let mut bundle = String::new();
    let mut organisations = Vec::new();
    for org in &plan.organisations {
        let (issuer, entry, witness) =
            found_organisation(org, &out.join(ORGS_DIR).join(org), &keys)?;
        witnesses.push(witness);
        bundle.push_str(&issuer.pem());
        organisations.push(entry);
        issuers.insert(org.clone(), issuer);
    }
    write(&out.join(CA_FILE), bundle.as_bytes(), false)?;
    let mut replicas = Vec::new();
    let mut operators = Vec::new();
    for spec in &plan.identities {
        let issuer = issuers
            .get(&spec.organisation)
            .ok_or_else(|| TransportError::Charter {
                path: out.display().to_string(),
                problem: format!(
                    "identity {:?} names organisation {:?}, which the plan does not list",
                    spec.name, spec.organisation
                ),
            })?;
        let (cert, key, fp) = leaf(spec, issuer)?;
        write_identity(&out.join(&spec.name), &bundle, &cert, &issuer.pem(), &key)?;
        match spec.kind {
            Kind::Replica { id } => replicas.push(ReplicaEntry {
                id,
                organisation: spec.organisation.clone(),
                cert_sha256: fp,
                log_vkey: None,
                beacon_vkey: None,
            }),
            Kind::Operator => operators.push(OperatorEntry {
                name: spec.name.clone(),
                organisation: spec.organisation.clone(),
                cert_sha256: fp,
            }),
            Kind::Node | Kind::Client | Kind::Witness => {}
        }
    }
    let motion_key = keys.key(&out.join(MOTION_KEY_FILE))?;
    let last_word = match &plan.last_word {
        Some(name) => Some(panel_federation::LastWordAuthority {
            name: name.clone(),
            key: hex::encode(
                keys.key(&out.join(LAST_WORD_KEY_FILE))?
                    .verifying_key()
                    .to_bytes(),
            ),
        }),
        None => None,
    };
    let (log, replica_log_keys) = log_identity(plan, out, &keys, &mut replicas)?;
    let charter = Charter {
        charter_version: CHARTER_VERSION,
        // A new organisation needs the endorsement of a majority of the founders.
        admission_threshold: organisations.len() / 2 + 1,
        organisations,
        replicas,
        operators,
        motion_key: hex::encode(motion_key.verifying_key().to_bytes()),
        floors: Floors::PROJECT,
        log: Some(log),
        witnesses,
        exam: plan.exam.clone(),
        last_word,
        final_panel: plan.final_panel,
        // The project's terms; a federation that wants others writes them in the
        // charter it adopts (docs/PANEL.md "Funded appeals").
        appeal_credits: None,
    };
    charter.check().map_err(|e| TransportError::Charter {
        path: out.display().to_string(),
        problem: e.to_string(),
    })?;
    let json = serde_json::to_vec_pretty(&charter).map_err(|e| TransportError::Charter {
        path: out.display().to_string(),
        problem: e.to_string(),
    })?;
    write(&out.join(CHARTER_FILE), &json, false)?;
    write(
        &out.join(POLICY_FILE),
        policy_of(&charter).as_bytes(),
        false,
    )?;
    Ok(Issued {
        root: out.to_owned(),
        charter,
        replica_log_keys,
    })
}

/// The organisations of a local federation (`panel up`, the bench, the tests).
pub const LOCAL_ORGANISATIONS: [&str; 2] = ["northwind", "southbank"];
/// The identity folder of the local federation's general-purpose client.
pub const LOCAL_CLIENT: &str = "client";

/// The identity folder of local replica `id`.
pub fn replica_dir_name(id: u64) -> String {
    format!("replica-{id}")
}

/// The identity folder of a local organisation's operator.
pub fn operator_dir_name(org: &str) -> String {
    format!("operator-{org}")
}

/// The identity folder of an organisation's witness (its TLS certificate).
pub fn witness_dir_name(org: &str) -> String {
    format!("witness-{org}")
}

/// The identity folder of a joining organisation's client (`panel org init`).
pub fn client_dir_name(org: &str) -> String {
    format!("client-{org}")
}

/// The identity folder of a local arbiter node.
pub fn node_dir_name(arbiter: &str) -> String {
    format!("node-{arbiter}")
}

/// A practice federation on loopback (its charter says so: it examines with the
/// shipped, public pool): the two [`LOCAL_ORGANISATIONS`], replicas `1..=replicas`
/// run by them in turn, one operator each, one node per `(arbiter, organisation)`, and a
/// client. Everything serves on `127.0.0.1` and `localhost`.
pub fn local_plan(replicas: u64, nodes: &[(&str, &str)]) -> PkiPlan {
    let loopback = || vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let orgs = LOCAL_ORGANISATIONS;
    let mut identities: Vec<IdentitySpec> = (1..=replicas)
        .map(|id| IdentitySpec {
            kind: Kind::Replica { id },
            name: replica_dir_name(id),
            organisation: orgs[(id as usize - 1) % orgs.len()].to_owned(),
            hosts: loopback(),
        })
        .collect();
    identities.extend(orgs.iter().map(|org| IdentitySpec {
        kind: Kind::Operator,
        name: operator_dir_name(org),
        organisation: (*org).to_owned(),
        hosts: vec![],
    }));
    identities.extend(nodes.iter().map(|(arbiter, org)| IdentitySpec {
        kind: Kind::Node,
        name: node_dir_name(arbiter),
        organisation: (*org).to_owned(),
        hosts: loopback(),
    }));
    identities.push(IdentitySpec {
        kind: Kind::Client,
        name: LOCAL_CLIENT.to_owned(),
        organisation: orgs[0].to_owned(),
        hosts: vec![],
    });
    PkiPlan {
        organisations: orgs.iter().map(|o| (*o).to_owned()).collect(),
        identities,
        // Everything on loopback examines with the shipped, public pool.
        exam: Some(panel_federation::ExamTerms {
            practice: true,
            bar: panel_federation::ExamBar::Skill,
        }),
        // A local panel's last word is a key in its own folder, so the tests and a user
        // trying the command have one; a real federation names its own authority.
        last_word: Some("the local panel's appeals board (a key in .panel/pki)".into()),
        final_panel: None,
        key_seed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::TlsMaterial;

    #[test]
    fn issued_identities_load_and_are_pinned_in_the_charter() {
        let dir = tempfile::tempdir().unwrap();
        let plan = PkiPlan {
            organisations: vec!["north".into(), "south".into()],
            identities: vec![
                IdentitySpec {
                    kind: Kind::Replica { id: 1 },
                    name: "replica-1".into(),
                    organisation: "north".into(),
                    hosts: vec!["127.0.0.1".into(), "localhost".into()],
                },
                IdentitySpec {
                    kind: Kind::Operator,
                    name: "operator-south".into(),
                    organisation: "south".into(),
                    hosts: vec![],
                },
            ],
            exam: None,
            last_word: None,
            final_panel: None,
            key_seed: None,
        };
        let issued = issue(&plan, dir.path()).unwrap();
        let m = TlsMaterial::load(&issued.dir("replica-1")).unwrap();
        assert_eq!(
            m.fingerprint(),
            Some(issued.charter.replicas[0].cert_sha256.clone())
        );
        let loaded = crate::charter_file::load(&issued.charter_path()).unwrap();
        assert!(read_seed_key(&issued.motion_key_path()).is_ok());
        assert!(read_seed_key(&issued.signing_key_path("south")).is_ok());
        assert_eq!(loaded, issued.charter);
        assert_eq!(loaded.organisations.len(), 2);
        let key = std::fs::metadata(issued.dir("replica-1").join(KEY_FILE)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
    }
}
