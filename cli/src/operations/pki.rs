//! `panel pki init`: issue a federation's certificates for hosts of its own (one authority
//! per organisation, a certificate per replica, operator, node and client) and the charter
//! that pins replicas and operators (docs/SECURITY.md, "Transport"). `panel up` issues the
//! same layout for its loopback panel.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use panel_transport::pki::{self, IdentitySpec, Kind, PkiPlan};

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Issue every certificate and the charter into a new folder.
    Init(InitArgs),
}

#[derive(ClapArgs)]
struct InitArgs {
    /// Output folder (must not exist yet); hand each identity folder to its host.
    #[arg(long)]
    out: PathBuf,
    /// An organisation of the federation (repeat): each gets its own authority.
    #[arg(long = "org", required = true, value_name = "NAME")]
    orgs: Vec<String>,
    /// A replica: ID=ORG@HOST[,HOST...] (the names or addresses it is dialled at).
    #[arg(long = "replica", required = true, value_name = "ID=ORG@HOSTS")]
    replicas: Vec<String>,
    /// An operator (may change membership): NAME=ORG.
    #[arg(long = "operator", value_name = "NAME=ORG")]
    operators: Vec<String>,
    /// An arbiter node: NAME=ORG@HOST[,HOST...].
    #[arg(long = "node", value_name = "NAME=ORG@HOSTS")]
    nodes: Vec<String>,
    /// A client identity (contributors, the CLI): NAME=ORG.
    #[arg(long = "client", value_name = "NAME=ORG")]
    clients: Vec<String>,
    /// Name the authority that has the last word on a question the panels could not
    /// answer (docs/PANEL.md "The last word"); its key is issued as last-word.key.
    #[arg(long, value_name = "NAME")]
    last_word: Option<String>,
}

/// `NAME=ORG[@HOST,HOST...]`, each part checked, with the flag named in the error.
fn parse(spec: &str, flag: &str, hosts_needed: bool) -> Result<(String, String, Vec<String>)> {
    let example = if hosts_needed {
        "NAME=ORG@HOST[,HOST...], e.g. 1=northwind@10.0.0.1"
    } else {
        "NAME=ORG, e.g. ops=northwind"
    };
    let (name, rest) = spec
        .split_once('=')
        .with_context(|| format!("{flag} {spec:?} must look like {example}"))?;
    let (org, hosts) = match rest.split_once('@') {
        Some((o, h)) => (o, h.split(',').map(|h| h.trim().to_owned()).collect()),
        None => (rest, Vec::new()),
    };
    if name.trim().is_empty() || org.trim().is_empty() {
        bail!("{flag} {spec:?} must look like {example}");
    }
    if hosts_needed && hosts.iter().all(String::is_empty) {
        bail!("{flag} {spec:?} names no host it serves on; it must look like {example}");
    }
    Ok((name.trim().to_owned(), org.trim().to_owned(), hosts))
}

fn plan(a: &InitArgs) -> Result<PkiPlan> {
    let mut identities = Vec::new();
    for r in &a.replicas {
        let (id, organisation, hosts) = parse(r, "--replica", true)?;
        let id: u64 = id
            .parse()
            .with_context(|| format!("--replica {r:?}: the replica id must be a number"))?;
        identities.push(IdentitySpec {
            kind: Kind::Replica { id },
            name: pki::replica_dir_name(id),
            organisation,
            hosts,
        });
    }
    for (specs, flag, kind, hosts_needed) in [
        (&a.operators, "--operator", Kind::Operator, false),
        (&a.nodes, "--node", Kind::Node, true),
        (&a.clients, "--client", Kind::Client, false),
    ] {
        for s in specs {
            let (name, organisation, hosts) = parse(s, flag, hosts_needed)?;
            let name = match kind {
                Kind::Operator => pki::operator_dir_name(&name),
                Kind::Node => pki::node_dir_name(&name),
                _ => name,
            };
            identities.push(IdentitySpec {
                kind: kind.clone(),
                name,
                organisation,
                hosts,
            });
        }
    }
    Ok(PkiPlan {
        organisations: a.orgs.clone(),
        identities,
        exam: None,
        last_word: a.last_word.clone(),
        key_seed: None,
    })
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Cmd::Init(a) => {
            if a.out.exists() {
                bail!(
                    "{} exists; pki init never overwrites keys: choose a new --out folder",
                    a.out.display()
                );
            }
            let issued = pki::issue(&plan(&a)?, &a.out)?;
            println!("{}", serde_json::to_string_pretty(&issued.charter)?);
            eprintln!(
                "issued under {}: give each host its identity folder (--tls DIR) and every \
                 replica and node charter.json (--charter); keep orgs/*/ca.key with its organisation",
                a.out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
