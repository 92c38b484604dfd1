//! `panel node ...`: run an arbiter node and manage its key and human queue.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use panel_node::config::NodeConfig;
use panel_node::keyfile;
use panel_node::run::RunOverrides;
use panel_proto::keys;
use panel_proto::pb::arbiter_admin_client::ArbiterAdminClient;
use panel_proto::pb::{HumanAnswer, PendingRequest};
use panel_proto::ruling_check::{kind_name, parse_decision};
use prost::Message;

#[derive(Parser)]
pub struct Args {
    /// Identity folder for mutual TLS (ca.pem, cert.pem, key.pem). For `run` it replaces
    /// the config's `[transport] tls`; for `pending` and `rule` it is how this command
    /// reaches the node (without it: plaintext, loopback only).
    #[arg(long, global = true, env = "PANEL_TLS", value_name = "DIR")]
    tls: Option<PathBuf>,
    /// `keygen`, `fingerprint` and `pending` print one JSON document instead of lines.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: NodeCommand,
}

#[derive(Subcommand)]
enum NodeCommand {
    /// Generate an ed25519 key file (mode 0600) and print its fingerprint.
    Keygen {
        /// Where to write the key file.
        #[arg(long, default_value = "arbiter.key")]
        out: PathBuf,
        /// Replace an existing key file.
        #[arg(long)]
        force: bool,
    },
    /// Print the public key and fingerprint of a key file.
    Fingerprint {
        #[arg(long, default_value = "arbiter.key")]
        key: PathBuf,
    },
    /// Run the arbiter node (gRPC) until SIGINT/SIGTERM.
    Run {
        /// The node's TOML config.
        #[arg(long)]
        config: PathBuf,
        /// Override `listen`.
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Override `key_file`.
        #[arg(long)]
        key: Option<PathBuf>,
        /// Override `data_dir`.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Connect out to this coordinator replica (host:port) instead of waiting to be
        /// called; repeat or comma-separate to give every replica. Replaces `connect`.
        /// Register the arbiter with `--endpoint link`.
        #[arg(long, value_name = "ADDR", value_delimiter = ',')]
        connect: Vec<String>,
        /// The id the arbiter was registered under (needed with --connect). Overrides
        /// `arbiter_id`.
        #[arg(long, value_name = "ID")]
        arbiter_id: Option<String>,
        /// Replace the config's `[transport] charter` (needs --tls too).
        #[arg(long, value_name = "FILE")]
        charter: Option<PathBuf>,
        /// Plaintext on loopback only; replaces the config's `[transport]`.
        #[arg(long)]
        insecure_loopback: bool,
    },
    /// List motions waiting for a human answer on a running node.
    Pending {
        /// The node's gRPC endpoint (loopback).
        #[arg(long, default_value = "http://127.0.0.1:7401")]
        node: String,
    },
    /// Answer a pending motion on a running node (human judge).
    Rule {
        #[command(flatten)]
        motion: crate::user::motion::MotionRef,
        /// ACCEPT, REJECT, UPHOLD, DISMISS, ADMIT, DENY, NONE or ABSTAIN.
        #[arg(long)]
        decision: String,
        /// Credence in the affirmative outcome, in [0, 1].
        #[arg(long)]
        probability: f64,
        #[arg(long, default_value = "")]
        rationale: String,
        /// Relevance step 1..4 (assign-relevance motions).
        #[arg(long)]
        relevance: Option<u32>,
        /// Tier 1..5 (verify-tier motions).
        #[arg(long)]
        tier: Option<u32>,
        #[arg(long, default_value = "http://127.0.0.1:7401")]
        node: String,
    },
    /// Sign a key rotation document (old key authorises, new key proves possession).
    Rotate {
        #[arg(long)]
        old: PathBuf,
        #[arg(long)]
        new: PathBuf,
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Sign a revocation of a key (by that key).
    Revoke {
        #[arg(long)]
        key: PathBuf,
        /// Rulings issued from this instant (Unix ms) on are void; default now.
        #[arg(long)]
        effective_from: Option<i64>,
        #[arg(long, default_value = "")]
        reason: String,
    },
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

async fn admin(
    tls: Option<&std::path::Path>,
    node: &str,
) -> anyhow::Result<ArbiterAdminClient<tonic::transport::Channel>> {
    let channel = panel_transport::Transport::from_flags(tls, None, tls.is_none())?
        .endpoint(node)?
        .connect()
        .await
        .with_context(|| format!("cannot reach node at {node}; is `panel node run` up?"))?;
    Ok(ArbiterAdminClient::new(channel))
}

/// A key's public half and fingerprint, as lines or (`--json`) one document.
fn print_key(file: Option<&std::path::Path>, vk: &ed25519_dalek::VerifyingKey, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::json!({
                "file": file, "public_key": hex::encode(vk.as_bytes()),
                "fingerprint": keys::fingerprint(vk),
            })
        );
        return;
    }
    if let Some(f) = file {
        println!("wrote {} (mode 0600)", f.display());
    }
    println!("public key  {}", hex::encode(vk.as_bytes()));
    println!("fingerprint {}", keys::fingerprint(vk));
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let tls = args.tls;
    let json = args.json;
    match args.command {
        NodeCommand::Keygen { out, force } => {
            let key = keyfile::keygen(&out, force)?;
            print_key(Some(&out), &key.verifying_key(), json);
        }
        NodeCommand::Fingerprint { key } => {
            print_key(None, &keyfile::load_key(&key)?.verifying_key(), json);
        }
        NodeCommand::Run {
            config,
            listen,
            key,
            data_dir,
            connect,
            arbiter_id,
            charter,
            insecure_loopback,
        } => {
            let transport = (tls.is_some() || charter.is_some() || insecure_loopback).then(|| {
                panel_node::config::TransportConfig {
                    tls: tls.clone(),
                    charter,
                    insecure_loopback,
                }
            });
            let _ = tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
                )
                .with_writer(std::io::stderr)
                .try_init();
            let cfg = NodeConfig::load(&config)?;
            runtime()?.block_on(panel_node::run(
                cfg,
                RunOverrides {
                    listen,
                    key_file: key,
                    data_dir,
                    connect,
                    arbiter_id,
                    transport,
                },
            ))?;
        }
        NodeCommand::Pending { node } => runtime()?.block_on(async {
            let list = admin(tls.as_deref(), &node)
                .await?
                .pending(PendingRequest {})
                .await?
                .into_inner();
            if json {
                let motions: Vec<serde_json::Value> = list
                    .motions
                    .iter()
                    .map(|m| {
                        let p = m.projection.clone().unwrap_or_default();
                        serde_json::json!({
                            "motion_id": m.motion_id, "debate_id": m.debate_id,
                            "kind": panel_proto::pb::MotionKind::try_from(m.kind).map(kind_name).unwrap_or("unknown"),
                            "commit_deadline_unix_ms": m.commit_deadline_unix_ms,
                            "question": p.question,
                            "items": p.items.iter().map(|i| serde_json::json!({"label": i.label, "text": i.text})).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(motions));
                return Ok(());
            }
            if list.motions.is_empty() {
                println!("no pending motions");
            }
            for m in list.motions {
                let kind = panel_proto::pb::MotionKind::try_from(m.kind)
                    .map(kind_name)
                    .unwrap_or("unknown");
                let p = m.projection.unwrap_or_default();
                println!(
                    "{}\t{}\tdebate {}\tcommit by {} ms",
                    m.motion_id, kind, m.debate_id, m.commit_deadline_unix_ms
                );
                if !p.question.is_empty() {
                    println!("    {}", p.question);
                }
                for item in p.items {
                    println!("    [{}] {}", item.label, item.text);
                }
            }
            Ok::<_, anyhow::Error>(())
        })?,
        NodeCommand::Rule {
            motion,
            decision,
            probability,
            rationale,
            relevance,
            tier,
            node,
        } => {
            let Some(d) = parse_decision(&decision) else {
                bail!(
                    "--decision {decision:?} is not one of ACCEPT, REJECT, UPHOLD, DISMISS, ADMIT, DENY, NONE, ABSTAIN"
                );
            };
            runtime()?.block_on(async {
                let c = admin(tls.as_deref(), &node)
                    .await?
                    .answer(HumanAnswer {
                        motion_id: motion.id().to_owned(),
                        decision: d as i32,
                        probability,
                        relevance,
                        tier,
                        quantiles: vec![],
                        receipt: None,
                        rationale,
                    })
                    .await
                    .map_err(|s| anyhow::anyhow!("node refused the answer: {}", s.message()))?
                    .into_inner();
                println!("committed on {}: digest {}", motion.id(), hex::encode(&c.digest));
                Ok::<_, anyhow::Error>(())
            })?;
        }
        NodeCommand::Rotate { old, new, reason } => {
            let old = keyfile::load_key(&old)?;
            let new = keyfile::load_key(&new)?;
            let doc = keys::sign_rotation(&old, &new, panel_proto::round::Clock::now_ms(&panel_node::clock::SystemClock), &reason)?;
            println!(
                "old fingerprint {}",
                keys::fingerprint(&old.verifying_key())
            );
            println!(
                "new fingerprint {}",
                keys::fingerprint(&new.verifying_key())
            );
            println!("{}", hex::encode(doc.encode_to_vec()));
        }
        NodeCommand::Revoke {
            key,
            effective_from,
            reason,
        } => {
            let key = keyfile::load_key(&key)?;
            let now = panel_proto::round::Clock::now_ms(&panel_node::clock::SystemClock);
            let doc = keys::sign_revocation(&key, now, effective_from.unwrap_or(now), &reason)?;
            println!(
                "revoked fingerprint {}",
                keys::fingerprint(&key.verifying_key())
            );
            println!("{}", hex::encode(doc.encode_to_vec()));
        }
    }
    Ok(ExitCode::SUCCESS)
}
