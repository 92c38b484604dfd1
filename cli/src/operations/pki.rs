//! `panel pki init`: issue a federation's certificates for hosts of its own (one authority
//! per organisation, a certificate per replica, operator, node and client) and the charter
//! that pins replicas and operators (docs/SECURITY.md, "Transport"). `panel up` issues the
//! same layout for its loopback panel.
//!
//! `panel pki issue`: one more identity of one organisation, into a folder `pki init` (or
//! `panel org init`) wrote, signed by the authority key held there; a new replica or
//! operator is printed as the charter entry a new charter must add (docs/WIRE.md
//! "Organisation admission").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use panel_transport::pki::identity::{self, CharterEntry, NewIdentity};
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
    /// Issue one more identity of one organisation into a folder `pki init` or `org init`
    /// wrote, signed by that organisation's authority key held there. The charter is not
    /// edited: a new replica or operator is printed as the entry a new charter must add.
    Issue(IssueArgs),
}

#[derive(ClapArgs)]
struct IssueArgs {
    /// The folder `panel pki init` (or `panel org init`) wrote; it must hold the
    /// organisation's authority key, orgs/ORG/ca.key.
    #[arg(long, value_name = "DIR")]
    pki: PathBuf,
    /// The organisation the identity belongs to.
    #[arg(long, value_name = "NAME")]
    org: String,
    #[command(flatten)]
    what: What,
    /// The names or addresses the identity serves on (a replica needs them; a node the
    /// replicas dial and a witness behind TLS too).
    #[arg(long, value_name = "HOST[,HOST...]", value_delimiter = ',')]
    hosts: Vec<String>,
}

/// The one identity to issue.
#[derive(ClapArgs)]
#[group(required = true, multiple = false)]
struct What {
    /// An arbiter node: folder node-ARBITER_ID.
    #[arg(long, value_name = "ARBITER_ID")]
    node: Option<String>,
    /// A replica of this Raft id: folder replica-ID (a charter change: printed, not made).
    #[arg(long, value_name = "ID", requires = "hosts")]
    replica: Option<u64>,
    /// An operator: folder operator-NAME (a charter change: printed, not made).
    #[arg(long, value_name = "NAME")]
    operator: Option<String>,
    /// A client identity (contributors, the CLI): folder NAME.
    #[arg(long, value_name = "NAME")]
    client: Option<String>,
    /// The organisation's witness where it serves behind TLS: folder witness-ORG.
    #[arg(long)]
    witness: bool,
}

impl What {
    fn identity(&self) -> Result<NewIdentity> {
        Ok(match self {
            What {
                node: Some(arbiter),
                ..
            } => NewIdentity::Node {
                arbiter: arbiter.clone(),
            },
            What {
                replica: Some(id), ..
            } => NewIdentity::Replica { id: *id },
            What {
                operator: Some(name),
                ..
            } => NewIdentity::Operator { name: name.clone() },
            What {
                client: Some(name), ..
            } => NewIdentity::Client { name: name.clone() },
            What { witness: true, .. } => NewIdentity::Witness,
            _ => bail!("name the identity: --node, --replica, --operator, --client or --witness"),
        })
    }
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
    /// Draw a final panel for a question the ladder left unanswered, before any last-word
    /// authority: the widest fresh panel across all organisations, whose answer needs this
    /// share of its counted rulings in thousandths (600 to 1000; 667 for two thirds;
    /// docs/PANEL.md "The last word").
    #[arg(long, value_name = "MILLI")]
    final_panel: Option<u32>,
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
        final_panel: a
            .final_panel
            .map(|supermajority_milli| panel_federation::FinalPanel {
                supermajority_milli,
            }),
        key_seed: None,
    })
}

/// `panel pki issue`: writes the identity and says what it is and what follows.
fn issue_one(a: &IssueArgs) -> Result<ExitCode> {
    let new = a.what.identity()?;
    let hosts: Vec<String> = a
        .hosts
        .iter()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .collect();
    let one = identity::issue_one(&a.pki, &a.org, &new, hosts)?;
    println!(
        "issued {} of {} in {} (ca.pem, cert.pem, key.pem: its --tls folder)",
        one.spec.name,
        a.org,
        one.dir.display()
    );
    println!("certificate sha256: {}", one.cert_sha256);
    if !one.spec.hosts.is_empty() {
        println!("serves on: {}", one.spec.hosts.join(", "));
    }
    match &one.charter_entry {
        Some(CharterEntry::Replica(entry)) => {
            if let Some(key) = &one.log_key {
                println!("its log key: {} (--log-key)", key.display());
            }
            let charter = a.pki.join(pki::CHARTER_FILE);
            println!(
                "replica {} joins the group only once the charter lists it: this is a charter \
                 change (the federation adopts a new charter with this entry in replicas[]; \
                 this command does not edit any charter):",
                entry.id
            );
            println!("{}", serde_json::to_string_pretty(entry)?);
            if !charter.is_file() {
                crate::output::note!(
                    "{} holds no charter.json, so the entry names no log key: if the \
                     federation's charter has a quorum log (log.quorum), move {} away, copy the \
                     charter.json there and issue the replica again; it then gets its own \
                     log.key and the entry its log_vkey and beacon_vkey",
                    a.pki.display(),
                    one.dir.display()
                );
            }
        }
        Some(CharterEntry::Operator(entry)) => {
            println!(
                "operator {} holds its role only once the charter lists it: this is a \
                 charter change (a new charter with this entry in operators[]; this command \
                 does not edit the charter):",
                entry.name
            );
            println!("{}", serde_json::to_string_pretty(entry)?);
        }
        None => {}
    }
    if let Some(key) = &one.witness_key {
        println!(
            "its cosigning key stays {} (`panel witness run --key`)",
            key.display()
        );
    }
    if one.spec.hosts.is_empty() && matches!(new, NewIdentity::Node { .. } | NewIdentity::Witness) {
        crate::output::note!(
            "no --hosts: the certificate names no host, so no one can dial {} over TLS by \
             name (a node can still connect out over its outbound link); issue another with \
             --hosts for one that is dialled",
            one.spec.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Cmd::Issue(a) => issue_one(&a),
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
