//! `panel org endorse` and `panel org admit`: admitting a new organisation to a chartered
//! federation (docs/SECURITY.md, "Charter and registrations"). Each existing organisation
//! signs the newcomer's entry with its roster key, offline (`endorse` prints the
//! signature); anyone then submits the entry with enough endorsements (`admit`), and apply
//! admits it only with the charter's `admission_threshold` of distinct endorsers.
//!
//! `panel org endorse-rotation` and `panel org rotate-motion-key` change the cluster's
//! motion key the same way: organisations sign the rotation offline, the holder of the new
//! key signs it too and submits it (docs/coordinator/state-machine.md "Rotating the motion key").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use panel_coordinator::client::failover::WriteOutcome;
use panel_coordinator::command::{
    ClientCommand, ContributorRegistration, Endorsement, MembershipAuthorisation,
    MotionKeyRotation, OrganisationAdmission, WireAttestation,
};
use panel_federation::{Fingerprint, Organisation};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, runtime};
use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: OrgCmd,
}

/// The organisation being admitted.
#[derive(clap::Args, Clone)]
struct Newcomer {
    /// Its name.
    #[arg(long)]
    name: String,
    /// SHA-256 of its certificate authority's certificate (64 hex digits).
    #[arg(long, value_name = "HEX")]
    ca_sha256: String,
    /// Its roster key's public half (64 hex digits).
    #[arg(long, value_name = "HEX")]
    signing_key: String,
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
    let ca_sha256: Fingerprint = n
        .ca_sha256
        .parse()
        .map_err(|e| anyhow::anyhow!("--ca-sha256 {:?}: {e}", n.ca_sha256))?;
    Ok(Organisation {
        name: n.name.clone(),
        ca_sha256,
        signing_key: n.signing_key.trim().to_ascii_lowercase(),
    })
}

/// Parses `ORG=SIGNATURE_HEX` endorsements.
pub(crate) fn endorsements(given: &[String]) -> Result<Vec<Endorsement>> {
    given
        .iter()
        .map(|e| match e.split_once('=') {
            Some((by, sig)) if !by.is_empty() && !sig.is_empty() => Ok(Endorsement {
                by: by.to_owned(),
                signature: sig.trim().to_owned(),
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
            let signature = panel_coordinator::membership::endorse(
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
            let voters = panel_coordinator::membership::sorted(&membership.voters);
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
                public_key: hex::encode(key.verifying_key().to_bytes()),
                organisation,
                attestation: WireAttestation {
                    proof: String::new(),
                    endorsement: String::new(),
                },
            };
            reg.attestation =
                panel_coordinator::charter_rules::attest_contributor(&reg, &key, &roster)
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
            let signature = panel_coordinator::charter_rules::sign_rotation(
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
            let possession = panel_coordinator::charter_rules::sign_rotation(
                &charter,
                rotation.seq,
                &from,
                &to,
                &key,
            )
            .context("signing the rotation with the new key")?;
            let command = ClientCommand::RotateMotionKey(MotionKeyRotation {
                seq: rotation.seq,
                to: hex::encode(to.to_bytes()),
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
            let signature = panel_coordinator::charter_rules::endorse(&org, &key)
                .context("signing the admission")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::Admit { newcomer, endorsed } => {
            let organisation = organisation(&newcomer)?;
            let command = ClientCommand::AdmitOrganisation(OrganisationAdmission {
                organisation,
                endorsements: endorsements(&endorsed.endorsements)?,
            });
            submit(
                &endorsed.cluster,
                command,
                format!("organisation {} admitted", newcomer.name),
                endorsed.output.json,
            )
        }
    }
}
