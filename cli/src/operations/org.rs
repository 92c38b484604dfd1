//! `panel org init`, `panel org endorse` and `panel org admit`: admitting a new
//! organisation to a chartered federation (docs/SECURITY.md, "Charter and registrations";
//! docs/WIRE.md "Organisation admission"). The newcomer writes its own authority, keys and
//! identities and its charter entry (`init`, `organisation.json`); each existing
//! organisation signs that entry with its roster key, offline (`endorse` prints the
//! signature); anyone then submits the entry with enough endorsements (`admit`), and apply
//! admits it only with the charter's `admission_threshold` of distinct endorsers.
//!
//! `panel org endorse-removal` and `panel org remove` take a member out the same way, by
//! the others' endorsements (docs/FEDERATION.md "Removal").
//!
//! `panel org endorse-rotation` and `panel org rotate-motion-key` change the cluster's
//! motion key the same way: organisations sign the rotation offline, the holder of the new
//! key signs it too and submits it (docs/coordinator/state-machine.md "Rotating the motion key").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use panel_coordinator::client::failover::WriteOutcome;
use panel_federation::{Fingerprint, Organisation};
use panel_machine::ClientCommand;
use panel_machine::command::{
    ContributorRegistration, Endorsement, MembershipAuthorisation, MotionKeyRotation,
    OrganisationAdmission, OrganisationRemoval, RosterKeyRotation, WireAttestation,
};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, runtime};
use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: OrgCmd,
}

/// The organisation being admitted: its entry from `panel org init`'s file, or each field.
#[derive(clap::Args, Clone)]
struct Newcomer {
    /// Its entry as `panel org init` wrote it (DIR/organisation.json: name, ca_sha256,
    /// signing_key), instead of the three flags below.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["name", "ca_sha256", "signing_key"]
    )]
    organisation_file: Option<PathBuf>,
    /// Its name.
    #[arg(long, required_unless_present = "organisation_file")]
    name: Option<String>,
    /// SHA-256 of its certificate authority's certificate (64 hex digits).
    #[arg(
        long,
        value_name = "HEX",
        required_unless_present = "organisation_file"
    )]
    ca_sha256: Option<String>,
    /// Its roster key's public half (64 hex digits).
    #[arg(
        long,
        value_name = "HEX",
        required_unless_present = "organisation_file"
    )]
    signing_key: Option<String>,
}

/// An entry's endorsements and where to submit it.
#[derive(clap::Args, Clone)]
struct Endorsed {
    /// One member organisation's signature, ORG=SIGNATURE_HEX (repeat for each).
    #[arg(long = "endorsement", value_name = "ORG=HEX", required = true)]
    endorsements: Vec<String>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// The member whose removal is signed: a founder by name (its entry is in the charter), an
/// admitted organisation by the entry it was admitted with.
#[derive(clap::Args, Clone)]
struct Member {
    /// The federation's charter.json (its digest names the federation).
    #[arg(long, value_name = "PATH")]
    charter: PathBuf,
    /// A founder's name.
    #[arg(
        long,
        conflicts_with = "organisation_file",
        required_unless_present = "organisation_file"
    )]
    name: Option<String>,
    /// An admitted member's entry (the organisation.json `panel org init` wrote for it).
    #[arg(long, value_name = "FILE")]
    organisation_file: Option<PathBuf>,
}

/// The charter, and the entry of the member a removal names.
fn member(m: &Member) -> Result<(panel_federation::Charter, Organisation)> {
    let charter = read_charter(&m.charter)?;
    let org = match (&m.name, &m.organisation_file) {
        (_, Some(path)) => organisation_file(path)?,
        (Some(name), None) => charter
            .organisations
            .iter()
            .find(|o| &o.name == name)
            .cloned()
            .with_context(|| {
                format!(
                    "--name {name}: the charter lists no such founder; for an organisation \
                     admitted by entry give its entry with --organisation-file FILE"
                )
            })?,
        (None, None) => bail!("name the member: --name FOUNDER or --organisation-file FILE"),
    };
    Ok((charter, org))
}

/// A roster-key rotation as every signer signs it.
#[derive(clap::Args, Clone)]
struct RosterRotation {
    #[command(flatten)]
    member: Member,
    /// 1 for the member's first rotation, then one more each time.
    #[arg(long, default_value_t = 1)]
    seq: u64,
    /// The member's roster key in force (64 hex digits); its entry's when omitted, which
    /// is right for its first rotation only.
    #[arg(long, value_name = "HEX")]
    from: Option<String>,
    /// How long the replaced key still counts, in ms (at most seven days).
    #[arg(long, default_value_t = 3_600_000)]
    overlap_ms: u64,
}

/// The charter, the rotation as signed (without signatures) and the key it rotates from.
fn roster_rotation(
    r: &RosterRotation,
    to: panel_proto::VerifyingKey,
) -> Result<(
    panel_federation::Charter,
    RosterKeyRotation,
    panel_proto::VerifyingKey,
)> {
    let (charter, org) = member(&r.member)?;
    let from = match &r.from {
        Some(hex_key) => public_key("--from", hex_key)?,
        None if r.seq == 1 => org
            .roster_key()
            .with_context(|| format!("{}'s entry holds no valid roster key", org.name))?,
        None => bail!(
            "--seq {} is not the first rotation: give the key in force with --from HEX",
            r.seq
        ),
    };
    let rotation = RosterKeyRotation {
        organisation: org.name,
        seq: r.seq,
        to: panel_machine::rules::hex_bytes::PublicKeyBytes::new(to.to_bytes()),
        overlap_ms: r.overlap_ms,
        possession: Default::default(),
        endorsements: vec![],
    };
    Ok((charter, rotation, from))
}

/// A motion-key rotation as every signer signs it.
#[derive(clap::Args, Clone)]
struct Rotation {
    /// The federation's charter.json (its digest names the federation).
    #[arg(long, value_name = "PATH")]
    charter: PathBuf,
    /// 1 for the first rotation under the charter, then one more each time.
    #[arg(long, default_value_t = 1)]
    seq: u64,
    /// The motion key in force (64 hex digits); the charter's when omitted.
    #[arg(long, value_name = "HEX")]
    from: Option<String>,
}

/// A change of the group's Raft voters as every endorser signs it.
#[derive(clap::Args, Clone)]
struct Membership {
    /// The federation's charter.json (its digest names the federation).
    #[arg(long, value_name = "PATH")]
    charter: PathBuf,
    /// 1 for the first membership change under the charter, then one more each time
    /// (`panel coordinator status` shows the voters; the refusal of a wrong seq names the
    /// next one).
    #[arg(long)]
    seq: u64,
    /// Every voter after the change, e.g. 1,2,4.
    #[arg(long, value_name = "IDS", value_delimiter = ',', required = true)]
    voters: Vec<u64>,
}

#[derive(clap::Subcommand)]
enum OrgCmd {
    /// Write a joining organisation's material into a new folder: its authority, roster
    /// and witness keys, an operator, a client and a witness identity, and its entry
    /// (organisation.json); prints what the members must endorse and the next commands.
    Init {
        /// The organisation's name (letters, digits, '.', '_', '-').
        #[arg(long)]
        name: String,
        /// The names or addresses its witness serves on.
        #[arg(
            long,
            value_name = "HOST[,HOST...]",
            value_delimiter = ',',
            required = true
        )]
        hosts: Vec<String>,
        /// The federation's ca.pem (public, like its charter): its identities then reach
        /// the members' replicas as soon as the organisation is admitted.
        #[arg(long, value_name = "FILE")]
        federation_ca: Option<PathBuf>,
        /// The folder to write (must not exist yet, or be empty).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// What key or certificate files are and the values members endorse them by: a PEM
    /// certificate's SHA-256 (the charter's pin), an Ed25519 key's public half and
    /// fingerprint (roster, log and motion keys, node key files).
    Fingerprint {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Sign a circuit-breaker order (pause or lift new motions, closings or verdicts
    /// federation-wide) with your organisation's roster key; prints the signature
    /// (docs/SECURITY.md "Circuit breakers").
    EndorseBreaker {
        #[command(flatten)]
        order: crate::operations::breaker::OrderArgs,
        /// Your organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
    },
    /// Submit a circuit-breaker order with organisations' endorsements, each
    /// ORG=SIGNATURE_HEX.
    Breaker {
        #[command(flatten)]
        order: crate::operations::breaker::OrderArgs,
        #[command(flatten)]
        endorsed: Endorsed,
    },
    /// What is paused, since when, by whom and why; the automatic breaker; the next seq.
    Breakers {
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Sign a change of the group's voters with your organisation's roster key; prints
    /// the signature (docs/SECURITY.md "Membership").
    EndorseMembership {
        #[command(flatten)]
        membership: Membership,
        /// Your organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
    },
    /// Submit a change of voters with organisations' endorsements, each ORG=SIGNATURE_HEX;
    /// an operator then executes it with `panel coordinator change-membership`.
    AuthoriseMembership {
        #[command(flatten)]
        membership: Membership,
        #[command(flatten)]
        endorsed: Endorsed,
    },
    /// Sign a motion-key rotation to the public key TO with your organisation's roster
    /// key; prints the signature.
    EndorseRotation {
        #[command(flatten)]
        rotation: Rotation,
        /// The new motion key's public half (64 hex digits).
        #[arg(long, value_name = "HEX")]
        to: String,
        /// Your organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
    },
    /// Submit a rotation to the motion key in NEW_KEY (it signs the rotation as proof of
    /// possession) with organisations' endorsements, each ORG=SIGNATURE_HEX. Give every
    /// replica the new key with --next-motion-key first.
    RotateMotionKey {
        #[command(flatten)]
        rotation: Rotation,
        /// The new motion key (`panel coordinator motion-keygen FILE`).
        #[arg(long, value_name = "PATH")]
        new_key: PathBuf,
        #[command(flatten)]
        endorsed: Endorsed,
    },
    /// Sign a newcomer's entry with your organisation's roster key; prints the signature.
    Endorse {
        #[command(flatten)]
        newcomer: Newcomer,
        /// Your organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
    },
    /// Submit the newcomer with its endorsements, each ORG=SIGNATURE_HEX.
    Admit {
        #[command(flatten)]
        newcomer: Newcomer,
        #[command(flatten)]
        endorsed: Endorsed,
    },
    /// Sign the removal of a member organisation with your organisation's roster key;
    /// prints the signature (docs/FEDERATION.md "Removal").
    EndorseRemoval {
        #[command(flatten)]
        member: Member,
        /// Your organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
    },
    /// Sign a member's change of roster key (to the public key TO) with your
    /// organisation's roster key; the member itself signs too (docs/FEDERATION.md
    /// "Rotating a roster key").
    EndorseRosterRotation {
        #[command(flatten)]
        rotation: RosterRotation,
        /// The new roster key's public half (64 hex digits).
        #[arg(long, value_name = "HEX")]
        to: String,
        /// Your organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
    },
    /// Submit a member's change to the roster key in NEW_KEY (a raw 32-byte seed file,
    /// mode 0600, as `panel coordinator motion-keygen FILE` writes one; it signs the
    /// rotation as proof of possession) with the endorsements, each ORG=SIGNATURE_HEX, the
    /// member's own among them.
    RotateRosterKey {
        #[command(flatten)]
        rotation: RosterRotation,
        #[arg(long, value_name = "PATH")]
        new_key: PathBuf,
        #[command(flatten)]
        endorsed: Endorsed,
    },
    /// Submit the removal of member NAME with the other members' endorsements, each
    /// ORG=SIGNATURE_HEX: from that entry on no replica trusts its authority.
    Remove {
        /// The member's name.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        endorsed: Endorsed,
    },
    /// Bind a contributor name to a key: signed by the contributor's key file and
    /// endorsed by its organisation's roster key (a chartered group binds names only so).
    RegisterContributor {
        #[arg(long)]
        name: String,
        /// The contributor's key file (`panel node keygen`); it signs its contributions
        /// (`--key` on the contribution commands).
        #[arg(long, value_name = "PATH")]
        key_file: PathBuf,
        #[arg(long)]
        organisation: String,
        /// The organisation's roster key (orgs/ORG/signing.key).
        #[arg(long, value_name = "PATH")]
        org_key: PathBuf,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

fn organisation(n: &Newcomer) -> Result<Organisation> {
    if let Some(path) = &n.organisation_file {
        return organisation_file(path);
    }
    let (Some(name), Some(ca), Some(key)) = (&n.name, &n.ca_sha256, &n.signing_key) else {
        bail!(
            "name the newcomer: --organisation-file FILE, or --name, --ca-sha256 and --signing-key"
        );
    };
    let ca_sha256: Fingerprint = ca
        .parse()
        .map_err(|e| anyhow::anyhow!("--ca-sha256 {ca:?}: {e}"))?;
    Ok(Organisation {
        name: name.clone(),
        ca_sha256,
        signing_key: key.trim().to_ascii_lowercase(),
    })
}

/// The newcomer's entry from `panel org init`'s organisation.json, checked.
fn organisation_file(path: &std::path::Path) -> Result<Organisation> {
    let what = || format!("--organisation-file {}", path.display());
    let text = std::fs::read_to_string(path).with_context(what)?;
    let mut org: Organisation = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not an organisation entry ({{\"name\", \"ca_sha256\", \"signing_key\"}}, \
             as `panel org init` writes it)",
            what()
        )
    })?;
    org.signing_key = org.signing_key.trim().to_ascii_lowercase();
    if org.name.trim().is_empty() {
        bail!("{}: the organisation's name is empty", what());
    }
    if org.roster_key().is_none() {
        bail!(
            "{}: signing_key {:?} is not an Ed25519 public key (64 hex digits)",
            what(),
            org.signing_key
        );
    }
    Ok(org)
}

/// `panel org init`: writes the folder and prints what the members endorse and what next.
fn init(
    name: &str,
    hosts: &[String],
    federation_ca: Option<&std::path::Path>,
    out: &std::path::Path,
) -> Result<ExitCode> {
    let j = panel_transport::pki::joining::init(name, hosts, federation_ca, out)?;
    let o = &j.organisation;
    let file = j.organisation_file();
    println!("organisation {} written to {}", o.name, j.root.display());
    println!();
    println!(
        "what every member endorses (check these values with {} first):",
        o.name
    );
    println!("  name:        {}", o.name);
    println!(
        "  ca_sha256:   {}  ({})",
        o.ca_sha256,
        j.ca_path().display()
    );
    println!(
        "  signing_key: {}  ({})",
        o.signing_key,
        j.signing_key_path().display()
    );
    println!("  entry file:  {}", file.display());
    println!();
    println!("next:");
    println!(
        "  1. each member signs it with its roster key:\n     panel org endorse \
         --organisation-file {} --org-key pki/orgs/MEMBER/signing.key",
        file.display()
    );
    println!(
        "  2. anyone submits it with the charter's admission_threshold of signatures:\n     \
         panel org admit --organisation-file {} --endorsement MEMBER=SIGNATURE ... \
         --addr HOST:PORT --tls CLIENT_DIR",
        file.display()
    );
    println!(
        "  3. nothing else: from the entry that admits {}, every replica trusts its authority \
         (its identities present it after their own certificate), with no file edited or \
         process restarted anywhere{}",
        o.name,
        if federation_ca.is_some() {
            ""
        } else {
            "; its clients need the federation's ca.pem beside their own (--federation-ca)"
        }
    );
    println!();
    println!("identities (ca.pem, cert.pem, key.pem):");
    for id in &j.identities {
        println!(
            "  {:<24} sha256 {}{}",
            id.spec.name,
            id.cert_sha256,
            if id.spec.hosts.is_empty() {
                String::new()
            } else {
                format!("  serves on {}", id.spec.hosts.join(", "))
            }
        );
    }
    println!(
        "witness: key {}, vkey {} (for a charter's witnesses[])",
        j.witness_key_path().display(),
        j.witness.vkey
    );
    println!(
        "more identities: panel pki issue --pki {} --org {} (--node ID | --replica ID \
         --hosts HOSTS | --operator NAME | --client NAME | --witness)",
        j.root.display(),
        o.name
    );
    crate::output::note!(
        "keep orgs/{}/ca.key and signing.key in {}: they never leave the organisation",
        o.name,
        j.root.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Parses `ORG=SIGNATURE_HEX` endorsements.
pub(crate) fn endorsements(given: &[String]) -> Result<Vec<Endorsement>> {
    given
        .iter()
        .map(|e| match e.split_once('=') {
            Some((by, sig)) if !by.is_empty() && !sig.is_empty() => Ok(Endorsement {
                by: by.to_owned(),
                signature: sig.trim().into(),
            }),
            _ => bail!("--endorsement {e:?} must look like ORG=SIGNATURE_HEX"),
        })
        .collect()
}

fn public_key(flag: &str, hex_key: &str) -> Result<panel_proto::VerifyingKey> {
    let bytes = hex::decode(hex_key.trim())
        .map_err(|_| anyhow::anyhow!("{flag} {hex_key:?} is not hex"))?;
    panel_proto::parse_public_key(&bytes).map_err(|e| anyhow::anyhow!("{flag} {hex_key:?}: {e}"))
}

/// The charter file given with `--charter`, checked.
pub(crate) fn read_charter(path: &std::path::Path) -> Result<panel_federation::Charter> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--charter {}", path.display()))?;
    panel_federation::Charter::parse(&text)
        .with_context(|| format!("--charter {}: not a valid charter", path.display()))
}

/// The charter, and the key the rotation rotates from.
fn rotation_base(r: &Rotation) -> Result<(panel_federation::Charter, panel_proto::VerifyingKey)> {
    let charter = read_charter(&r.charter)?;
    let from = public_key(
        "--from",
        r.from.as_deref().unwrap_or(charter.motion_key.as_str()),
    )?;
    Ok((charter, from))
}

/// Writes `command` and reports its outcome in one line.
pub(crate) fn submit(
    cluster: &ClusterArgs,
    command: ClientCommand,
    done: String,
    json: bool,
) -> Result<ExitCode> {
    let what = command.kind();
    let mut c = Cluster::connect(cluster)?;
    runtime()?.block_on(async move {
        match c.write(&command).await? {
            WriteOutcome::Applied(v) => {
                if json {
                    print_json(&v)?;
                } else {
                    println!("{done}");
                }
                Ok(ExitCode::SUCCESS)
            }
            WriteOutcome::Refused { code, message } => {
                eprintln!("error: {what} was refused ({code}): {message}");
                Ok(ExitCode::from(1))
            }
        }
    })
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        OrgCmd::Init {
            name,
            hosts,
            federation_ca,
            out,
        } => init(&name, &hosts, federation_ca.as_deref(), &out),
        OrgCmd::Fingerprint {
            files,
            output: OutputArgs { json },
        } => {
            crate::operations::fingerprint::run(&files, json)?;
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::EndorseBreaker { order, org_key } => {
            crate::operations::breaker::endorse(&order, &org_key)
        }
        OrgCmd::Breaker { order, endorsed } => crate::operations::breaker::submit(
            &order,
            &endorsed.endorsements,
            endorsed.output.json,
            &endorsed.cluster,
        ),
        OrgCmd::Breakers {
            output: OutputArgs { json },
            cluster,
        } => crate::operations::breaker::show(json, &cluster),
        OrgCmd::EndorseMembership {
            membership,
            org_key,
        } => {
            let charter = read_charter(&membership.charter)?;
            let key = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let signature = panel_machine::features::membership::endorse(
                &charter,
                membership.seq,
                &membership.voters,
                &key,
            )
            .context("signing the membership change")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::AuthoriseMembership {
            membership,
            endorsed,
        } => {
            let voters = panel_machine::features::membership::sorted(&membership.voters);
            let command = ClientCommand::AuthoriseMembership(MembershipAuthorisation {
                seq: membership.seq,
                voters: voters.clone(),
                endorsements: endorsements(&endorsed.endorsements)?,
            });
            submit(
                &endorsed.cluster,
                command,
                format!(
                    "membership change {} to voters {voters:?} authorised; execute it with \
                     `panel coordinator change-membership --voters {}`",
                    membership.seq,
                    voters
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                endorsed.output.json,
            )
        }
        OrgCmd::RegisterContributor {
            name,
            key_file,
            organisation,
            org_key,
            cluster,
        } => {
            let key = panel_node::keyfile::load_key(&key_file)
                .with_context(|| format!("--key-file {}", key_file.display()))?;
            let roster = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let mut reg = ContributorRegistration {
                name: name.clone(),
                public_key: hex::encode(key.verifying_key().to_bytes()).into(),
                organisation,
                attestation: WireAttestation {
                    proof: Default::default(),
                    endorsement: Default::default(),
                },
            };
            reg.attestation =
                panel_machine::features::charter_rules::attest_contributor(&reg, &key, &roster)
                    .context("signing the registration")?;
            submit(
                &cluster,
                ClientCommand::RegisterContributor(reg),
                format!("contributor {name} registered"),
                false,
            )
        }
        OrgCmd::EndorseRotation {
            rotation,
            to,
            org_key,
        } => {
            let (charter, from) = rotation_base(&rotation)?;
            let to = public_key("--to", &to)?;
            let key = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let signature = panel_machine::features::charter_rules::sign_rotation(
                &charter,
                rotation.seq,
                &from,
                &to,
                &key,
            )
            .context("signing the rotation")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::RotateMotionKey {
            rotation,
            new_key,
            endorsed,
        } => {
            let (charter, from) = rotation_base(&rotation)?;
            let key = panel_coordinator::service::motion_key::load(&new_key)
                .with_context(|| format!("--new-key {}", new_key.display()))?;
            let to = key.verifying_key();
            let possession = panel_machine::features::charter_rules::sign_rotation(
                &charter,
                rotation.seq,
                &from,
                &to,
                &key,
            )
            .context("signing the rotation with the new key")?;
            let command = ClientCommand::RotateMotionKey(MotionKeyRotation {
                seq: rotation.seq,
                to: panel_machine::rules::hex_bytes::PublicKeyBytes::new(to.to_bytes()),
                possession,
                endorsements: endorsements(&endorsed.endorsements)?,
            });
            submit(
                &endorsed.cluster,
                command,
                format!(
                    "motion key rotated to {} (rotation {})",
                    hex::encode(to.to_bytes()),
                    rotation.seq
                ),
                endorsed.output.json,
            )
        }
        OrgCmd::Endorse { newcomer, org_key } => {
            let org = organisation(&newcomer)?;
            let key = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let signature = panel_machine::features::charter_rules::endorse(&org, &key)
                .context("signing the admission")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::EndorseRemoval { member: m, org_key } => {
            let (charter, org) = member(&m)?;
            let key = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let signature =
                panel_machine::features::charter_rules::endorse_removal(&charter, &org, &key)
                    .context("signing the removal")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::EndorseRosterRotation {
            rotation,
            to,
            org_key,
        } => {
            let (charter, rot, from) = roster_rotation(&rotation, public_key("--to", &to)?)?;
            let key = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let signature = panel_machine::features::roster_keys::sign(&charter, &rot, &from, &key)
                .context("signing the rotation")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::RotateRosterKey {
            rotation,
            new_key,
            endorsed,
        } => {
            let key = panel_transport::pki::read_seed_key(&new_key)
                .with_context(|| format!("--new-key {}", new_key.display()))?;
            let (charter, mut rot, from) = roster_rotation(&rotation, key.verifying_key())?;
            rot.possession =
                panel_machine::features::roster_keys::sign(&charter, &rot, &from, &key)
                    .context("signing the rotation with the new key")?;
            rot.endorsements = endorsements(&endorsed.endorsements)?;
            let done = format!(
                "{}'s roster key rotated to {} (rotation {})",
                rot.organisation,
                hex::encode(key.verifying_key().to_bytes()),
                rot.seq
            );
            submit(
                &endorsed.cluster,
                ClientCommand::RotateRosterKey(rot),
                done,
                endorsed.output.json,
            )
        }
        OrgCmd::Remove { name, endorsed } => {
            let command = ClientCommand::RemoveOrganisation(OrganisationRemoval {
                organisation: name.clone(),
                endorsements: endorsements(&endorsed.endorsements)?,
            });
            submit(
                &endorsed.cluster,
                command,
                format!("organisation {name} removed"),
                endorsed.output.json,
            )
        }
        OrgCmd::Admit { newcomer, endorsed } => {
            let organisation = organisation(&newcomer)?;
            let name = organisation.name.clone();
            let command = ClientCommand::AdmitOrganisation(OrganisationAdmission {
                organisation,
                endorsements: endorsements(&endorsed.endorsements)?,
            });
            submit(
                &endorsed.cluster,
                command,
                format!("organisation {name} admitted"),
                endorsed.output.json,
            )
        }
    }
}
