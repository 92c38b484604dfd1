//! Issuing one more identity into a folder that `panel pki init` (or `panel org init`)
//! wrote (`panel pki issue`): a replica, operator, node, client or witness of one of its
//! organisations, with the folder name and certificate profile [`super::issue`] gives that
//! kind, signed by the organisation's authority key kept under `orgs/<org>/ca.key`.
//!
//! The charter is never edited here: a new replica or operator is pinned only once the
//! federation adopts a charter that lists it, so the caller is handed the entry to add.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use panel_federation::{Charter, OperatorEntry, ReplicaEntry};
use rcgen::{Issuer, KeyPair};

use super::{
    AUTHORITY_KEY_FILE, CHARTER_FILE, IdentitySpec, Kind, LOG_KEY_FILE, ORGS_DIR, WITNESS_KEY_FILE,
    authority_name, authority_params, leaf, node_dir_name, operator_dir_name, replica_dir_name,
    witness_dir_name, write_identity,
};
use crate::error::TransportError;
use crate::material::CA_FILE;
use crate::peer::Fingerprint;

/// What can stop [`issue_one`], each with what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(
        "{dir} is not a folder `panel pki init` or `panel org init` wrote (it has neither \
         {CHARTER_FILE} nor {ORGS_DIR}/): give --pki the folder they wrote"
    )]
    NotIssuedFolder { dir: String },
    #[error(
        "organisation {org:?} is not one of {dir}'s: it holds {known}; name one of them with --org"
    )]
    UnknownOrganisation {
        org: String,
        dir: String,
        known: String,
    },
    #[error(
        "the authority of organisation {org:?} is not held in this folder ({path} is missing): \
         issue its identities where {org}'s ca.key is kept (each organisation keeps its own)"
    )]
    AuthorityNotHeld { org: String, path: String },
    #[error(
        "{path} is not organisation {org:?}'s authority as `panel pki init` issues it \
         ({problem}); give the folder that holds {org}'s own orgs/{org}/ca.pem and ca.key"
    )]
    BadAuthority {
        org: String,
        path: String,
        problem: String,
    },
    #[error(
        "identity folder {dir} already exists: an identity is issued once; choose another \
         name, or move the folder away first to replace it (its certificate, and any pin \
         of it in the charter, then change)"
    )]
    IdentityExists { dir: String },
    #[error(
        "replica {id} is already listed in {charter}: choose a replica id the charter does \
         not list"
    )]
    ReplicaTaken { id: u64, charter: String },
    #[error("{name:?} cannot name an identity ({problem}); use letters, digits, '.', '_' and '-'")]
    BadName { name: String, problem: &'static str },
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// The one identity to issue; each kind is named as [`super::issue`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewIdentity {
    /// `replica-<id>`, pinned in the charter by its Raft id.
    Replica { id: u64 },
    /// `operator-<name>`, pinned in the charter by name.
    Operator { name: String },
    /// `node-<arbiter id>`, the arbiter node of that id.
    Node { arbiter: String },
    /// A client identity in a folder of its own name.
    Client { name: String },
    /// `witness-<org>`: the organisation's witness where it serves behind TLS.
    Witness,
}

impl NewIdentity {
    /// The identity's spec: its kind, folder name and hosts.
    pub fn spec(&self, organisation: &str, hosts: Vec<String>) -> IdentitySpec {
        let (kind, name) = match self {
            NewIdentity::Replica { id } => (Kind::Replica { id: *id }, replica_dir_name(*id)),
            NewIdentity::Operator { name } => (Kind::Operator, operator_dir_name(name)),
            NewIdentity::Node { arbiter } => (Kind::Node, node_dir_name(arbiter)),
            NewIdentity::Client { name } => (Kind::Client, name.clone()),
            NewIdentity::Witness => (Kind::Witness, witness_dir_name(organisation)),
        };
        IdentitySpec {
            kind,
            name,
            organisation: organisation.to_owned(),
            hosts,
        }
    }
}

/// The entry a charter must list before an identity holds its role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CharterEntry {
    Replica(ReplicaEntry),
    Operator(OperatorEntry),
}

/// What [`issue_one`] wrote.
#[derive(Debug, Clone)]
pub struct OneIssued {
    /// The identity folder (`ca.pem`, `cert.pem`, `key.pem`): its `--tls` folder.
    pub dir: PathBuf,
    pub spec: IdentitySpec,
    /// SHA-256 of the new certificate (what a charter pins).
    pub cert_sha256: Fingerprint,
    /// For a replica or an operator: the entry the charter must list (a charter change).
    pub charter_entry: Option<CharterEntry>,
    /// A replica's own log key, issued when the folder's charter has a quorum log.
    pub log_key: Option<PathBuf>,
    /// For a witness: the organisation's cosigning key, when this folder holds it.
    pub witness_key: Option<PathBuf>,
}

/// A name that fits a folder and a SPIFFE path segment.
pub fn check_name(name: &str) -> Result<(), IdentityError> {
    let bad = |problem| {
        Err(IdentityError::BadName {
            name: name.to_owned(),
            problem,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.starts_with('.') {
        return bad("it starts with '.'");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return bad("it has a character other than letters, digits, '.', '_' and '-'");
    }
    Ok(())
}

/// The organisations `root` knows: its charter's and those with a folder under `orgs/`.
fn organisations(root: &Path, charter: Option<&Charter>) -> BTreeSet<String> {
    let mut known: BTreeSet<String> = charter
        .map(|c| c.organisations.iter().map(|o| o.name.clone()).collect())
        .unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir(root.join(ORGS_DIR)) {
        for e in entries.flatten() {
            if e.path().is_dir() {
                known.insert(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    known
}

/// Organisation `org`'s authority from `orgs/<org>/ca.pem` and `ca.key`, checked to be the
/// pair `panel pki init` wrote: the certificate names `<org> authority` and holds the key.
fn load_authority(org_dir: &Path, org: &str) -> Result<Issuer<'static, KeyPair>, IdentityError> {
    let key_path = org_dir.join(AUTHORITY_KEY_FILE);
    if !key_path.is_file() {
        return Err(IdentityError::AuthorityNotHeld {
            org: org.to_owned(),
            path: key_path.display().to_string(),
        });
    }
    let bad = |path: &Path, problem: String| IdentityError::BadAuthority {
        org: org.to_owned(),
        path: path.display().to_string(),
        problem,
    };
    let key_pem = std::fs::read_to_string(&key_path).map_err(|e| TransportError::File {
        path: key_path.display().to_string(),
        what: "an organisation's authority key",
        source: e,
    })?;
    let key = KeyPair::from_pem(&key_pem).map_err(|e| bad(&key_path, e.to_string()))?;
    let ca_path = org_dir.join(CA_FILE);
    let ca_pem = std::fs::read(&ca_path).map_err(|e| TransportError::File {
        path: ca_path.display().to_string(),
        what: "an organisation's authority certificate",
        source: e,
    })?;
    let der = crate::material::first_der(&ca_pem)
        .ok_or_else(|| bad(&ca_path, "no PEM certificate in it".into()))?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| bad(&ca_path, format!("the certificate does not parse: {e}")))?;
    let common = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default();
    if common != authority_name(org) {
        return Err(bad(
            &ca_path,
            format!("its subject is {common:?}, not {:?}", authority_name(org)),
        ));
    }
    if cert.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
        return Err(bad(
            &key_path,
            format!("it is not the key of {}", ca_path.display()),
        ));
    }
    Ok(Issuer::new(authority_params(org), key))
}

/// Issues `new` for organisation `org` into `root` (a folder `panel pki init` or `panel org
/// init` wrote), valid for `hosts`. Refuses an organisation `root` does not know, an
/// identity folder that exists, a replica id its charter lists, and an organisation whose
/// authority key is not held there.
pub fn issue_one(
    root: &Path,
    org: &str,
    new: &NewIdentity,
    hosts: Vec<String>,
) -> Result<OneIssued, IdentityError> {
    let charter_path = root.join(CHARTER_FILE);
    if !charter_path.is_file() && !root.join(ORGS_DIR).is_dir() {
        return Err(IdentityError::NotIssuedFolder {
            dir: root.display().to_string(),
        });
    }
    let charter = if charter_path.is_file() {
        Some(crate::charter_file::load(&charter_path)?)
    } else {
        None
    };
    let known = organisations(root, charter.as_ref());
    if !known.contains(org) {
        return Err(IdentityError::UnknownOrganisation {
            org: org.to_owned(),
            dir: root.display().to_string(),
            known: if known.is_empty() {
                "none".to_owned()
            } else {
                known.into_iter().collect::<Vec<_>>().join(", ")
            },
        });
    }
    match new {
        NewIdentity::Operator { name: n }
        | NewIdentity::Node { arbiter: n }
        | NewIdentity::Client { name: n } => check_name(n)?,
        NewIdentity::Replica { .. } | NewIdentity::Witness => check_name(org)?,
    }
    let spec = new.spec(org, hosts);
    let dir = root.join(&spec.name);
    if let (NewIdentity::Replica { id }, Some(c)) = (new, &charter)
        && c.replicas.iter().any(|r| r.id == *id)
    {
        return Err(IdentityError::ReplicaTaken {
            id: *id,
            charter: charter_path.display().to_string(),
        });
    }
    if dir.exists() {
        return Err(IdentityError::IdentityExists {
            dir: dir.display().to_string(),
        });
    }
    let org_dir = root.join(ORGS_DIR).join(org);
    let issuer = load_authority(&org_dir, org)?;
    // The roots every identity of this folder trusts: the federation's bundle, or (in a
    // joining organisation's folder without one) the organisation's own authority.
    let bundle_path = if root.join(CA_FILE).is_file() {
        root.join(CA_FILE)
    } else {
        org_dir.join(CA_FILE)
    };
    let bundle = std::fs::read_to_string(&bundle_path).map_err(|e| TransportError::File {
        path: bundle_path.display().to_string(),
        what: "the federation's authorities",
        source: e,
    })?;
    let authority_path = org_dir.join(CA_FILE);
    let authority = std::fs::read_to_string(&authority_path).map_err(|e| TransportError::File {
        path: authority_path.display().to_string(),
        what: "the organisation's authority",
        source: e,
    })?;
    let (cert, key, cert_sha256) = leaf(&spec, &issuer)?;
    write_identity(&dir, &bundle, &cert, &authority, &key)?;
    let mut log_key = None;
    let charter_entry = match &spec.kind {
        Kind::Replica { id } => {
            let mut entry = ReplicaEntry {
                id: *id,
                organisation: org.to_owned(),
                cert_sha256: cert_sha256.clone(),
                log_vkey: None,
                beacon_vkey: None,
            };
            // Under a quorum log each replica signs with a key of its own (module docs of
            // `pki`), named in its charter entry with the beacon key that follows from it.
            if let Some(log) = charter.as_ref().and_then(|c| c.log.as_ref())
                && log.quorum > 0
            {
                let path = dir.join(LOG_KEY_FILE);
                let seed = super::generate_seed_key(&path)?;
                let beacon =
                    panel_federation::beacon_key::BeaconSecret::from_log_seed(&seed.to_bytes());
                entry.beacon_vkey = Some(beacon.public_hex());
                let signer = panel_tlog::NoteSigner::new(&log.origin, seed)
                    .map_err(|e| super::plan_error(&charter_path, e.to_string()))?;
                entry.log_vkey = Some(signer.verifier().to_string());
                log_key = Some(path);
            }
            Some(CharterEntry::Replica(entry))
        }
        Kind::Operator => Some(CharterEntry::Operator(OperatorEntry {
            name: spec.name.clone(),
            organisation: org.to_owned(),
            cert_sha256: cert_sha256.clone(),
        })),
        Kind::Node | Kind::Client | Kind::Witness => None,
    };
    let witness_key = (spec.kind == Kind::Witness)
        .then(|| org_dir.join(WITNESS_KEY_FILE))
        .filter(|p| p.is_file());
    Ok(OneIssued {
        dir,
        spec,
        cert_sha256,
        charter_entry,
        log_key,
        witness_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::{KEY_FILE, TlsMaterial};
    use crate::pki::{PkiPlan, issue};

    fn federation(dir: &Path) -> crate::pki::Issued {
        let plan = PkiPlan {
            organisations: vec!["north".into(), "south".into()],
            identities: vec![
                IdentitySpec {
                    kind: Kind::Replica { id: 1 },
                    name: "replica-1".into(),
                    organisation: "north".into(),
                    hosts: vec!["127.0.0.1".into()],
                },
                IdentitySpec {
                    kind: Kind::Replica { id: 2 },
                    name: "replica-2".into(),
                    organisation: "south".into(),
                    hosts: vec!["127.0.0.1".into()],
                },
            ],
            exam: None,
            last_word: None,
            final_panel: None,
            key_seed: None,
        };
        issue(&plan, dir).unwrap()
    }

    /// The charter organisation whose authority the leaf in `dir` verifies against, by
    /// the same webpki path building the handshake runs (`crate::TrustView`).
    fn issuer_of(dir: &Path, charter: &Charter) -> Option<String> {
        let m = TlsMaterial::load(dir).unwrap();
        let (cert_pem, _) = m.identity.clone().unwrap();
        let leaf = crate::material::first_der(&cert_pem).unwrap();
        crate::LiveTrust::new(&m.roots_pem, Some(charter))
            .view()
            .organisation_of(&[leaf.into()])
    }

    #[test]
    fn a_new_node_chains_to_its_organisations_authority_only() {
        let dir = tempfile::tempdir().unwrap();
        let issued = federation(dir.path());
        let one = issue_one(
            dir.path(),
            "south",
            &NewIdentity::Node {
                arbiter: "arb-z".into(),
            },
            vec!["127.0.0.1".into()],
        )
        .unwrap();
        assert_eq!(one.dir, dir.path().join("node-arb-z"));
        let m = TlsMaterial::load(&one.dir).unwrap();
        assert_eq!(m.fingerprint(), Some(one.cert_sha256.clone()));
        // The folder trusts the federation's roots, as every issued identity does.
        assert_eq!(
            std::fs::read(one.dir.join(CA_FILE)).unwrap(),
            std::fs::read(dir.path().join(CA_FILE)).unwrap()
        );
        assert_eq!(
            issuer_of(&one.dir, &issued.charter).as_deref(),
            Some("south")
        );
        let id =
            crate::spiffe::of_leaf(&crate::material::first_der(&m.identity.unwrap().0).unwrap())
                .unwrap();
        assert!(id.is_node_of("arb-z", "south"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(one.dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(one.charter_entry.is_none());
        // The charter is left as it was.
        assert_eq!(
            crate::charter_file::load(&issued.charter_path()).unwrap(),
            issued.charter
        );
    }

    #[test]
    fn a_new_replica_under_a_quorum_log_gets_its_log_key_and_charter_entry() {
        let dir = tempfile::tempdir().unwrap();
        let issued = federation(dir.path());
        let one = issue_one(
            dir.path(),
            "north",
            &NewIdentity::Replica { id: 3 },
            vec!["10.0.0.3".into()],
        )
        .unwrap();
        assert_eq!(one.dir, dir.path().join("replica-3"));
        let Some(CharterEntry::Replica(entry)) = &one.charter_entry else {
            panic!("{:?}", one.charter_entry);
        };
        assert_eq!(entry.id, 3);
        assert_eq!(entry.cert_sha256, one.cert_sha256);
        assert!(entry.log_vkey.is_some() && entry.beacon_vkey.is_some());
        assert!(crate::pki::read_seed_key(one.log_key.as_ref().unwrap()).is_ok());
        // The charter with the entry added still checks.
        let mut charter = issued.charter.clone();
        charter.replicas.push(entry.clone());
        charter.check().unwrap();
        let taken = issue_one(dir.path(), "north", &NewIdentity::Replica { id: 2 }, vec![]);
        assert!(
            matches!(taken, Err(IdentityError::ReplicaTaken { id: 2, .. })),
            "{taken:?}"
        );
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        federation(dir.path());
        let node = NewIdentity::Node {
            arbiter: "arb-y".into(),
        };
        let err = issue_one(dir.path(), "east", &node, vec![]).unwrap_err();
        assert!(
            matches!(&err, IdentityError::UnknownOrganisation { known, .. } if known == "north, south"),
            "{err:?}"
        );
        assert!(err.to_string().contains("north, south"), "{err}");

        issue_one(dir.path(), "north", &node, vec![]).unwrap();
        let err = issue_one(dir.path(), "north", &node, vec![]).unwrap_err();
        assert!(
            matches!(err, IdentityError::IdentityExists { .. }),
            "{err:?}"
        );

        std::fs::remove_file(dir.path().join("orgs/south/ca.key")).unwrap();
        let err = issue_one(dir.path(), "south", &NewIdentity::Witness, vec![]).unwrap_err();
        assert!(
            matches!(&err, IdentityError::AuthorityNotHeld { org, .. } if org == "south"),
            "{err:?}"
        );
        assert!(err.to_string().contains("not held in this folder"), "{err}");
        assert!(!dir.path().join("witness-south").exists());

        // Another organisation's key beside an authority certificate is not its key.
        std::fs::copy(
            dir.path().join("orgs/north/ca.key"),
            dir.path().join("orgs/south/ca.key"),
        )
        .unwrap();
        let err = issue_one(dir.path(), "south", &NewIdentity::Witness, vec![]).unwrap_err();
        assert!(matches!(err, IdentityError::BadAuthority { .. }), "{err:?}");

        let bad = NewIdentity::Client {
            name: "../x".into(),
        };
        let err = issue_one(dir.path(), "north", &bad, vec![]).unwrap_err();
        assert!(matches!(err, IdentityError::BadName { .. }), "{err:?}");

        let empty = tempfile::tempdir().unwrap();
        let err = issue_one(empty.path(), "north", &node, vec![]).unwrap_err();
        assert!(
            matches!(err, IdentityError::NotIssuedFolder { .. }),
            "{err:?}"
        );
    }
}
