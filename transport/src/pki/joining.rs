//! A joining organisation's own material (`panel org init`), in a folder of its own laid
//! out as `panel pki init` lays out an organisation's part of a federation:
//!
//! ```text
//! organisation.json                  its charter entry: name, ca_sha256, signing_key
//! ca.pem                             the roots its identities trust (its own authority,
//!                                    until the federation's ca.pem replaces it)
//! orgs/<org>/ca.pem, ca.key          its authority (the key never leaves the folder)
//! orgs/<org>/signing.key             its roster key
//! orgs/<org>/witness.key             its witness's cosigning key
//! operator-<org>/, client-<org>/     an operator and a client identity
//! witness-<org>/                     its witness's TLS identity, for the given hosts
//! ```
//!
//! The members endorse the entry in `organisation.json` (`panel org endorse`), and anyone
//! submits it with their endorsements (`panel org admit`). More identities of the
//! organisation are issued into the same folder with `panel pki issue --pki DIR`
//! ([`super::identity::issue_one`]).

use std::path::{Path, PathBuf};

use panel_federation::{Organisation, WitnessEntry};

use super::identity::{IdentityError, check_name};
use super::{
    IdentitySpec, KeySource, Kind, ORGS_DIR, SIGNING_KEY_FILE, WITNESS_KEY_FILE, client_dir_name,
    found_organisation, leaf, operator_dir_name, witness_dir_name, write, write_identity,
};
use crate::error::TransportError;
use crate::material::CA_FILE;
use crate::peer::Fingerprint;

/// The joining organisation's charter entry, as JSON, at the root of its folder.
pub const ORGANISATION_FILE: &str = "organisation.json";

/// What can stop [`init`], each with what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error(
        "{dir} exists and is not empty; `panel org init` never overwrites keys: give --out a \
         new or empty folder"
    )]
    NotEmpty { dir: String },
    #[error(
        "no host given: the witness's certificate needs the names or addresses it serves on \
         (--hosts HOST[,HOST...])"
    )]
    NoHosts,
    #[error("{0} (an organisation's name)")]
    BadName(#[source] IdentityError),
    #[error(
        "--federation-ca {path}: {problem}; give the federation's ca.pem (written by `panel \
         pki init`, public like its charter)"
    )]
    FederationCa { path: String, problem: String },
    #[error("cannot write {path}: {problem}")]
    Json { path: String, problem: String },
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// One identity [`init`] issued.
#[derive(Debug, Clone)]
pub struct JoiningIdentity {
    pub spec: IdentitySpec,
    pub dir: PathBuf,
    pub cert_sha256: Fingerprint,
}

/// What [`init`] wrote.
#[derive(Debug, Clone)]
pub struct Joining {
    pub root: PathBuf,
    /// The entry the members endorse and `panel org admit` submits.
    pub organisation: Organisation,
    /// Its witness, as a charter that lists it would (`witnesses[]`).
    pub witness: WitnessEntry,
    /// The operator, client and witness identities.
    pub identities: Vec<JoiningIdentity>,
}

impl Joining {
    fn org_dir(&self) -> PathBuf {
        self.root.join(ORGS_DIR).join(&self.organisation.name)
    }

    /// `organisation.json`.
    pub fn organisation_file(&self) -> PathBuf {
        self.root.join(ORGANISATION_FILE)
    }

    /// Its authority's certificate (the one `ca_sha256` pins).
    pub fn ca_path(&self) -> PathBuf {
        self.org_dir().join(CA_FILE)
    }

    /// Its roster key.
    pub fn signing_key_path(&self) -> PathBuf {
        self.org_dir().join(SIGNING_KEY_FILE)
    }

    /// Its witness's cosigning key.
    pub fn witness_key_path(&self) -> PathBuf {
        self.org_dir().join(WITNESS_KEY_FILE)
    }
}

/// Writes organisation `org`'s material under `out` (module docs), its witness serving on
/// `hosts`. `out` must not exist or be empty. `federation_ca`, the federation's public
/// `ca.pem`, joins the organisation's own authority in every identity's roots, so its
/// clients reach the members' replicas as soon as it is admitted.
pub fn init(
    org: &str,
    hosts: &[String],
    federation_ca: Option<&Path>,
    out: &Path,
) -> Result<Joining, JoinError> {
    check_name(org).map_err(JoinError::BadName)?;
    let hosts: Vec<String> = hosts
        .iter()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .collect();
    if hosts.is_empty() {
        return Err(JoinError::NoHosts);
    }
    let not_empty = std::fs::read_dir(out)
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(out.exists());
    if not_empty {
        return Err(JoinError::NotEmpty {
            dir: out.display().to_string(),
        });
    }
    let federation = federation_ca.map(read_federation_ca).transpose()?;
    let keys = KeySource {
        seed: None,
        root: out,
    };
    let (issuer, organisation, witness) =
        found_organisation(org, &out.join(ORGS_DIR).join(org), &keys)?;
    let own = issuer.pem();
    let bundle = match &federation {
        Some(f) => format!("{}\n{own}", f.trim_end()),
        None => own.clone(),
    };
    write(&out.join(CA_FILE), bundle.as_bytes(), false)?;
    let specs = [
        (Kind::Operator, operator_dir_name(org), Vec::new()),
        (Kind::Client, client_dir_name(org), Vec::new()),
        (Kind::Witness, witness_dir_name(org), hosts),
    ];
    let mut identities = Vec::new();
    for (kind, name, hosts) in specs {
        let spec = IdentitySpec {
            kind,
            name,
            organisation: org.to_owned(),
            hosts,
        };
        let (cert, key, cert_sha256) = leaf(&spec, &issuer)?;
        let dir = out.join(&spec.name);
        write_identity(&dir, &bundle, &cert, &own, &key)?;
        identities.push(JoiningIdentity {
            spec,
            dir,
            cert_sha256,
        });
    }
    let path = out.join(ORGANISATION_FILE);
    let json = serde_json::to_vec_pretty(&organisation).map_err(|e| JoinError::Json {
        path: path.display().to_string(),
        problem: e.to_string(),
    })?;
    write(&path, &json, false)?;
    Ok(Joining {
        root: out.to_owned(),
        organisation,
        witness,
        identities,
    })
}

/// The federation's `ca.pem`: one or more PEM certificates, or a refusal naming the file.
fn read_federation_ca(path: &Path) -> Result<String, JoinError> {
    let bad = |problem: String| JoinError::FederationCa {
        path: path.display().to_string(),
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    use rustls_pki_types::pem::PemObject;
    let certs = rustls_pki_types::CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(bad("it holds no certificate".into()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::TlsMaterial;
    use crate::pki::identity::{NewIdentity, issue_one};

    #[test]
    fn a_joining_organisation_gets_its_authority_keys_identities_and_entry() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("eastgate");
        let j = init("eastgate", &["127.0.0.1".into()], None, &out).unwrap();
        let der = crate::material::first_der(&std::fs::read(j.ca_path()).unwrap()).unwrap();
        assert_eq!(j.organisation.ca_sha256, Fingerprint::of_der(&der));
        let roster = crate::pki::read_seed_key(&j.signing_key_path()).unwrap();
        assert_eq!(
            j.organisation.signing_key,
            hex::encode(roster.verifying_key().to_bytes())
        );
        assert!(crate::pki::read_seed_key(&j.witness_key_path()).is_ok());
        let file: Organisation =
            serde_json::from_slice(&std::fs::read(j.organisation_file()).unwrap()).unwrap();
        assert_eq!(file, j.organisation);
        // Its identities chain to its own authority.
        let charter_like = panel_federation::Charter {
            charter_version: panel_federation::CHARTER_VERSION,
            organisations: vec![j.organisation.clone()],
            admission_threshold: 1,
            replicas: vec![],
            operators: vec![],
            motion_key: String::new(),
            floors: panel_federation::Floors::PROJECT,
            log: None,
            witnesses: vec![],
            exam: None,
            last_word: None,
            final_panel: None,
            appeal_credits: None,
        };
        for id in &j.identities {
            let m = TlsMaterial::load(&id.dir).unwrap();
            assert_eq!(m.fingerprint(), Some(id.cert_sha256.clone()));
            let leaf = crate::material::first_der(&m.identity.unwrap().0).unwrap();
            assert_eq!(
                crate::LiveTrust::new(&m.roots_pem, Some(&charter_like))
                    .view()
                    .organisation_of(&[leaf.into()])
                    .as_deref(),
                Some("eastgate")
            );
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out.join("orgs/eastgate/ca.key")), 0o600);
        assert_eq!(mode(&j.signing_key_path()), 0o600);
        // More identities are issued into the same folder.
        let node = issue_one(
            &out,
            "eastgate",
            &NewIdentity::Node {
                arbiter: "arb-e".into(),
            },
            vec!["127.0.0.1".into()],
        )
        .unwrap();
        assert!(node.dir.join("cert.pem").is_file());
    }

    #[test]
    fn a_folder_in_use_a_bad_name_or_no_host_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep"), "x").unwrap();
        let err = init("eastgate", &["127.0.0.1".into()], None, dir.path()).unwrap_err();
        assert!(matches!(err, JoinError::NotEmpty { .. }), "{err:?}");
        assert!(err.to_string().contains(&dir.path().display().to_string()));
        let empty = tempfile::tempdir().unwrap();
        let err = init("east gate", &["127.0.0.1".into()], None, empty.path()).unwrap_err();
        assert!(matches!(err, JoinError::BadName(_)), "{err:?}");
        let err = init("eastgate", &[], None, empty.path()).unwrap_err();
        assert!(matches!(err, JoinError::NoHosts), "{err:?}");
        // An empty folder is fine.
        init("eastgate", &["localhost".into()], None, empty.path()).unwrap();
    }
}
