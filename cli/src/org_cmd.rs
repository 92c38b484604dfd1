//! `panel org endorse` and `panel org admit`: admitting a new organisation to a chartered
//! federation (docs/SECURITY.md, "Charter and registrations"). Each existing organisation
//! signs the newcomer's entry with its roster key, offline (`endorse` prints the
//! signature); anyone then submits the entry with enough endorsements (`admit`), and apply
//! admits it only with the charter's `admission_threshold` of distinct endorsers.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use panel_coordinator::command::{
    ClientCommand, ContributorRegistration, Endorsement, OrganisationAdmission, WireAttestation,
};
use panel_federation::{Fingerprint, Organisation};

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::{Cluster, WriteOutcome, print_json, runtime};

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

#[derive(clap::Subcommand)]
enum OrgCmd {
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
        #[arg(long = "endorsement", value_name = "ORG=HEX", required = true)]
        endorsements: Vec<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cluster: ClusterArgs,
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

/// Writes `command` and reports its outcome in one line.
fn submit(
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
            reg.attestation = panel_coordinator::charter::attest_contributor(&reg, &key, &roster)
                .context("signing the registration")?;
            submit(
                &cluster,
                ClientCommand::RegisterContributor(reg),
                format!("contributor {name} registered"),
                false,
            )
        }
        OrgCmd::Endorse { newcomer, org_key } => {
            let org = organisation(&newcomer)?;
            let key = panel_transport::pki::read_seed_key(&org_key)
                .with_context(|| format!("--org-key {}", org_key.display()))?;
            let signature =
                panel_coordinator::charter::endorse(&org, &key).context("signing the admission")?;
            println!("{signature}");
            Ok(ExitCode::SUCCESS)
        }
        OrgCmd::Admit {
            newcomer,
            endorsements,
            json,
            cluster,
        } => {
            let organisation = organisation(&newcomer)?;
            let endorsements = endorsements
                .iter()
                .map(|e| match e.split_once('=') {
                    Some((by, sig)) if !by.is_empty() && !sig.is_empty() => Ok(Endorsement {
                        by: by.to_owned(),
                        signature: sig.trim().to_owned(),
                    }),
                    _ => bail!("--endorsement {e:?} must look like ORG=SIGNATURE_HEX"),
                })
                .collect::<Result<Vec<_>>>()?;
            let command = ClientCommand::AdmitOrganisation(OrganisationAdmission {
                organisation,
                endorsements,
            });
            submit(
                &cluster,
                command,
                format!("organisation {} admitted", newcomer.name),
                json,
            )
        }
    }
}
