//! The node process: configuration, key, storage, judge, gRPC server with health and
//! reflection, outbound links to coordinators (`connect`), graceful shutdown on
//! SIGINT/SIGTERM.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use panel_proto::pb::arbiter_admin_server::ArbiterAdminServer;
use panel_proto::pb::arbiter_node_server::ArbiterNodeServer;
use panel_proto::pb::{ArbiterIdentity, OriginLabel, Side, Stance};
use panel_proto::{FILE_DESCRIPTOR_SET, parse_public_key};
use thiserror::Error;
use tracing::{info, warn};

use crate::arbiter::Arbiter;
use crate::config::{ConfigError, JudgeConfig, NodeConfig, StanceConfig};
use crate::exchange::PeerBook;
use crate::http::TrustRoots;
use crate::judge::command::CommandJudge;
use crate::judge::llm::{LlmJudge, LlmSettings};
use crate::judge::scripted::{ScriptedJudge, load_profile};
use crate::judge::simulated::{ProfileError, SimulatedJudge};
use crate::judge::{Judge, JudgeError};
use crate::keyfile::{KeyFileError, load_key};
use crate::retrieval::Retriever;
use crate::service::{AdminService, NodeCore, NodeService};
use crate::store::{Store, StoreError};
use panel_transport::{ClientAuth, Transport};

#[derive(Debug, Error)]
pub enum NodeError {
    #[error(transparent)]
    Transport(#[from] panel_transport::TransportError),
    #[error(transparent)]
    Link(#[from] crate::link::LinkError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Key(#[from] KeyFileError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("judge setup: {0}")]
    Judge(#[from] JudgeError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("gRPC server: {0}")]
    Serve(#[from] tonic::transport::Error),
    #[error("gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error(transparent)]
    Metrics(#[from] panel_ops::OpsError),
}

/// A node config that cannot run: each names the setting and the fix.
#[derive(Debug, Error)]
pub enum SetupError {
    #[error(
        "judge.kind = \"local\" needs a binary built with the local judge: \
         cargo build --release --features local-judge (docs/JUDGES.md \"Local\")"
    )]
    LocalJudgeNotBuilt,
    #[error("judge.weights {0:?} must be \"auto\", \"q8\", \"f32\" or \"as-file\"")]
    LocalWeights(String),
    #[error("judge.model: {0}")]
    LocalJudge(crate::judge::JudgeError),
    #[error(transparent)]
    Simulated(#[from] ProfileError),
    #[error("stance side {0:?} must be \"A\", \"B\" or \"none\"")]
    StanceSide(String),
    #[error("stance credence {credence} for debate {debate_id:?} must lie in [0, 1]")]
    StanceCredence { credence: f64, debate_id: String },
    #[error(
        "{from} is empty; put the endpoint's API key there, or remove the setting for an \
         endpoint without keys"
    )]
    EmptyApiKey { from: String },
    #[error(
        "{from}: the key contains spaces, control or non-ASCII characters (not shown); give \
         the key alone, on one line"
    )]
    ApiKeyCharacters { from: String },
    #[error(
        "judge.api_key_file = {:?} cannot be read ({source}); create it with the key alone \
         (mode 600) or fix the path", .path.display()
    )]
    ApiKeyFileUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "judge.api_key_file = {:?} is readable by every user of this machine; restrict it \
         (chmod 600 {}) and start the node again", .path.display(), .path.display()
    )]
    ApiKeyFileWorldReadable { path: PathBuf },
    #[error(
        "judge.api_key_file = {:?} is {bytes} bytes, more than a key ({MAX_KEY_FILE_BYTES} at \
         most); it must hold the key alone", .path.display()
    )]
    ApiKeyFileTooLarge { path: PathBuf, bytes: u64 },
    #[error(
        "judge.api_key_file = {:?} cannot be read as text ({source})", .path.display()
    )]
    ApiKeyFileNotText {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "judge.max_retries = {0} is above {MAX_LLM_RETRIES}; retries are bounded so a failing \
         endpoint cannot hold a motion: lower it"
    )]
    TooManyRetries(u32),
    #[error("judge.api_key_env and judge.api_key_file are both set; keep one")]
    TwoApiKeySources,
    #[error(
        "judge.api_key_env names {0:?}, but that environment variable is not set; export it \
         before starting the node"
    )]
    ApiKeyEnvUnset(String),
    #[error("no key file: set key_file in the config or pass --key")]
    NoKeyFile,
    #[error("no data directory: set data_dir or pass --data-dir")]
    NoDataDir,
    #[error("no [judge] section in the config")]
    NoJudge,
    #[error("peer public_key {0:?} is not hex")]
    PeerKeyNotHex(String),
    #[error("peer {endpoint}: {source}")]
    PeerKey {
        endpoint: String,
        source: panel_proto::KeyError,
    },
    #[error(
        "max_concurrent_judgements = {0} must lie in 1..={MAX_CONCURRENT_JUDGEMENTS}; it is how \
         many judge calls run at once (default {default})",
        default = crate::arbiter::DEFAULT_MAX_CONCURRENT_JUDGEMENTS
    )]
    Concurrency(usize),
    #[error(transparent)]
    Retrieval(#[from] crate::retrieval::RetrievalSetupError),
    #[error(
        "coordinator_keys entry {0:?} is not hex; give the 64 hex digits of the coordinator's \
         motion public key"
    )]
    CoordinatorKeyNotHex(String),
    #[error("coordinator_keys entry {entry:?}: {source}")]
    CoordinatorKey {
        entry: String,
        source: panel_proto::KeyError,
    },
    #[error(
        "connecting out needs the arbiter's id: set arbiter_id in the config or pass \
         --arbiter-id (the id given to `panel arbiter register --id`)"
    )]
    NoArbiterId,
    #[error("no listen address: set listen or pass --listen")]
    NoListen,
}

/// Command-line overrides of the config file.
#[derive(Debug, Clone, Default)]
pub struct RunOverrides {
    pub listen: Option<SocketAddr>,
    pub key_file: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    /// Replaces `connect` when non-empty.
    pub connect: Vec<String>,
    pub arbiter_id: Option<String>,
    /// Replace the config's `[transport]` when given.
    pub transport: Option<crate::config::TransportConfig>,
}

fn side(s: &str) -> Result<Side, NodeError> {
    match s {
        "A" | "a" => Ok(Side::A),
        "B" | "b" => Ok(Side::B),
        "none" | "NONE" | "None" => Ok(Side::None),
        other => Err(SetupError::StanceSide(other.to_owned()).into()),
    }
}

/// Most retries an LLM judge may be configured with.
pub const MAX_LLM_RETRIES: u32 = 10;
/// Largest API key file read (bytes).
const MAX_KEY_FILE_BYTES: u64 = 8 * 1024;
/// Most judge calls at once a node may be configured with.
pub const MAX_CONCURRENT_JUDGEMENTS: usize = 256;

/// An API key as read: printable ASCII without spaces (it goes into an HTTP header). The
/// error names where it came from, never the key.
fn checked_key(key: &str, from: &str) -> Result<String, NodeError> {
    if key.is_empty() {
        return Err(SetupError::EmptyApiKey { from: from.into() }.into());
    }
    if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(SetupError::ApiKeyCharacters { from: from.into() }.into());
    }
    Ok(key.to_owned())
}

/// Reads `judge.api_key_file`: refused if every user of the machine may read it, or if it
/// is larger than a key can be. The key is trimmed and never logged.
fn read_api_key_file(path: &std::path::Path) -> Result<String, NodeError> {
    let meta = std::fs::metadata(path).map_err(|source| SetupError::ApiKeyFileUnreadable {
        path: path.to_owned(),
        source,
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o004 != 0 {
            return Err(SetupError::ApiKeyFileWorldReadable {
                path: path.to_owned(),
            }
            .into());
        }
    }
    if meta.len() > MAX_KEY_FILE_BYTES {
        return Err(SetupError::ApiKeyFileTooLarge {
            path: path.to_owned(),
            bytes: meta.len(),
        }
        .into());
    }
    let text = std::fs::read_to_string(path).map_err(|source| SetupError::ApiKeyFileNotText {
        path: path.to_owned(),
        source,
    })?;
    checked_key(
        text.trim(),
        &format!("judge.api_key_file ({})", path.display()),
    )
}

/// Builds the judge named by the config (`None` for a human judge), for a node that
/// declares no model family and no stances.
pub fn build_judge(cfg: &JudgeConfig) -> Result<Option<Arc<dyn Judge>>, NodeError> {
    build_judge_for(cfg, "", &[])
}

/// Builds the judge of a node that declares `model_family` and `stances`: a model judge is
/// told the declared stance of each debate (docs/JUDGES.md "Declared priors in the
/// prompt") and must run a model of the declared lineage.
pub fn build_judge_for(
    cfg: &JudgeConfig,
    model_family: &str,
    stances: &[StanceConfig],
) -> Result<Option<Arc<dyn Judge>>, NodeError> {
    Ok(match cfg {
        JudgeConfig::Local {
            model,
            system_prompt,
            persona,
            temperature,
            rationale_tokens,
            weights,
            context,
        } => Some(local_judge(
            LocalJudgeConfig {
                model,
                system_prompt,
                persona,
                temperature: *temperature,
                rationale_tokens: *rationale_tokens,
                weights,
                context: *context,
            },
            model_family,
            stances,
        )?),
        JudgeConfig::Scripted { profiles, profile } => Some(Arc::new(ScriptedJudge::new(
            profile.clone(),
            load_profile(profiles, profile)?,
        )?)),
        JudgeConfig::Simulated(p) => Some(Arc::new(
            SimulatedJudge::new(p.clone()).map_err(SetupError::from)?,
        )),
        JudgeConfig::Command {
            program,
            args,
            timeout_ms,
            max_output_bytes,
            include_expected,
        } => Some(Arc::new(CommandJudge {
            program: program.clone(),
            args: args.clone(),
            timeout: Duration::from_millis(*timeout_ms),
            max_output_bytes: *max_output_bytes,
            include_expected: *include_expected,
        })),
        JudgeConfig::Llm {
            base_url,
            model,
            api_key_env,
            api_key_file,
            ca_file,
            timeout_ms,
            max_retries,
            backoff_ms,
            system_prompt,
            persona,
            temperature,
        } => {
            if *max_retries > MAX_LLM_RETRIES {
                return Err(SetupError::TooManyRetries(*max_retries).into());
            }
            let api_key = match (api_key_env, api_key_file) {
                (Some(_), Some(_)) => {
                    return Err(SetupError::TwoApiKeySources.into());
                }
                (None, None) => None,
                (Some(var), None) => {
                    let v =
                        std::env::var(var).map_err(|_| SetupError::ApiKeyEnvUnset(var.clone()))?;
                    Some(checked_key(
                        v.trim(),
                        &format!("judge.api_key_env ({var})"),
                    )?)
                }
                (None, Some(path)) => Some(read_api_key_file(path)?),
            };
            let roots = match ca_file {
                Some(path) => TrustRoots::CaFile {
                    key: "judge.ca_file",
                    path: path.clone(),
                },
                None => TrustRoots::System,
            };
            Some(Arc::new(
                LlmJudge::new(LlmSettings {
                    base_url: base_url.clone(),
                    model: model.clone(),
                    api_key,
                    timeout: Duration::from_millis(*timeout_ms),
                    max_retries: *max_retries,
                    backoff: Duration::from_millis(*backoff_ms),
                    roots,
                })?
                .with_persona(
                    persona_of(system_prompt.clone(), persona.clone(), stances),
                    *temperature,
                )?,
            ))
        }
        JudgeConfig::Human => None,
    })
}

/// The fields of `[judge] kind = "local"` (read only by a build with the local judge).
#[cfg_attr(not(feature = "local-judge"), allow(dead_code))]
struct LocalJudgeConfig<'a> {
    model: &'a std::path::Path,
    system_prompt: &'a Option<String>,
    persona: &'a Option<String>,
    temperature: f64,
    rationale_tokens: usize,
    weights: &'a str,
    context: usize,
}

/// What an arbiter's judge is told of who it is.
pub fn persona_of(
    system: Option<String>,
    persona: Option<String>,
    stances: &[StanceConfig],
) -> crate::judge::prompt::Persona {
    use crate::judge::prompt::{DeclaredStance, Persona};
    Persona {
        system,
        persona,
        stances: stances
            .iter()
            .map(|s| {
                (
                    s.debate_id.clone(),
                    DeclaredStance {
                        side: s.side.clone(),
                        credence: s.credence,
                    },
                )
            })
            .collect(),
    }
}

#[cfg(feature = "local-judge")]
fn local_judge(
    c: LocalJudgeConfig<'_>,
    model_family: &str,
    stances: &[StanceConfig],
) -> Result<Arc<dyn Judge>, NodeError> {
    use crate::judge::local::{LocalJudge, LocalSettings};
    use panel_lm::SlowFormats;
    let slow_formats = match c.weights {
        // f32 for files up to 600 MB (the shipped 270M and 0.5B models: 1.3x to 3.3x the
        // prompt speed of Q8 for about 2.5 GB of memory), Q8 above (BENCHMARKS.md "Local
        // judge").
        "auto" => {
            let bytes = std::fs::metadata(c.model)
                .map(|m| m.len())
                .unwrap_or(u64::MAX);
            if bytes <= 600 << 20 {
                SlowFormats::F32
            } else {
                SlowFormats::Q8
            }
        }
        "q8" => SlowFormats::Q8,
        "f32" => SlowFormats::F32,
        "as-file" => SlowFormats::AsFile,
        other => return Err(SetupError::LocalWeights(other.to_owned()).into()),
    };
    let judge = LocalJudge::load(LocalSettings {
        model: c.model.to_owned(),
        lineage: model_family.to_owned(),
        persona: persona_of(c.system_prompt.clone(), c.persona.clone(), stances),
        temperature: c.temperature,
        rationale_tokens: c.rationale_tokens,
        slow_formats,
        context: c.context,
    })
    .map_err(SetupError::LocalJudge)?;
    Ok(Arc::new(judge))
}

#[cfg(not(feature = "local-judge"))]
fn local_judge(
    _: LocalJudgeConfig<'_>,
    _: &str,
    _: &[StanceConfig],
) -> Result<Arc<dyn Judge>, NodeError> {
    Err(SetupError::LocalJudgeNotBuilt.into())
}

/// Assembles the node from its config (no sockets yet).
pub fn build_core(cfg: &NodeConfig) -> Result<Arc<NodeCore>, NodeError> {
    let key_file = cfg.key_file.clone().ok_or(SetupError::NoKeyFile)?;
    let key = load_key(&key_file)?;
    let data_dir = cfg.data_dir.clone().ok_or(SetupError::NoDataDir)?;
    let judge_cfg = cfg.judge.as_ref().ok_or(SetupError::NoJudge)?;
    let judge = build_judge_for(judge_cfg, &cfg.model_family, &cfg.stances)?;
    let mut stances = Vec::new();
    for s in &cfg.stances {
        if !(0.0..=1.0).contains(&s.credence) {
            return Err(SetupError::StanceCredence {
                credence: s.credence,
                debate_id: s.debate_id.clone(),
            }
            .into());
        }
        stances.push(Stance {
            debate_id: s.debate_id.clone(),
            side: side(&s.side)? as i32,
            credence: s.credence,
        });
    }
    let identity = ArbiterIdentity {
        organisation: cfg.organisation.clone(),
        model_family: cfg.model_family.clone(),
        labels: cfg
            .labels
            .iter()
            .map(|(k, v)| OriginLabel {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
        stances,
        ..Default::default()
    };
    let mut configured = BTreeMap::new();
    for p in &cfg.peers {
        let bytes = hex::decode(&p.public_key)
            .map_err(|_| SetupError::PeerKeyNotHex(p.public_key.clone()))?;
        let vk = parse_public_key(&bytes).map_err(|source| SetupError::PeerKey {
            endpoint: p.endpoint.clone(),
            source,
        })?;
        configured.insert(vk.to_bytes(), p.endpoint.clone());
    }
    let coordinator_keys = coordinator_keys(&cfg.coordinator_keys)?;
    if !(1..=MAX_CONCURRENT_JUDGEMENTS).contains(&cfg.max_concurrent_judgements) {
        return Err(SetupError::Concurrency(cfg.max_concurrent_judgements).into());
    }
    let retriever = Retriever::from_config(&cfg.retrieval).map_err(SetupError::from)?;
    let store = Arc::new(Store::open(&data_dir)?);
    let arbiter = Arc::new(Arbiter::new(key, judge, identity).with_limits(
        retriever,
        cfg.max_concurrent_judgements,
        cfg.declared_latency_ms.map(Duration::from_millis),
    ));
    Ok(Arc::new(
        NodeCore::new(
            arbiter,
            store,
            PeerBook::new(
                configured,
                cfg.delivery_attempts,
                cfg.max_message_bytes,
                transport(cfg)?,
            ),
        )
        .with_coordinator_keys(coordinator_keys)
        .with_coordinators(own_coordinators(cfg)),
    ))
}

/// Parses `coordinator_keys`: each a hex ed25519 public key, weak keys refused. An empty
/// list is allowed (the node then refuses every motion, naming the setting), so a node can
/// be started before its coordinator's key is known.
fn coordinator_keys(hex_keys: &[String]) -> Result<Vec<panel_proto::VerifyingKey>, NodeError> {
    hex_keys
        .iter()
        .map(|h| {
            let bytes =
                hex::decode(h.trim()).map_err(|_| SetupError::CoordinatorKeyNotHex(h.clone()))?;
            parse_public_key(&bytes).map_err(|source| {
                SetupError::CoordinatorKey {
                    entry: h.clone(),
                    source,
                }
                .into()
            })
        })
        .collect()
}

/// The node's transport from `[transport]`: TLS needs an identity and the charter (whose
/// replicas alone may ask this node to judge); plaintext is loopback only.
fn transport(cfg: &NodeConfig) -> Result<Transport, NodeError> {
    let t = &cfg.transport;
    let transport =
        Transport::from_flags(t.tls.as_deref(), t.charter.as_deref(), t.insecure_loopback)?;
    transport.require_server("an arbiter node")?;
    if let Some(listen) = cfg.listen {
        transport.check_listen(listen)?;
    }
    for addr in cfg
        .connect
        .iter()
        .chain(&cfg.coordinators)
        .chain(cfg.peers.iter().map(|p| &p.endpoint))
    {
        transport.check_addr(addr)?;
    }
    Ok(transport)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    info!("shutdown signal received; finishing in-flight calls");
}

/// The replicas the node writes its own reveals and declarations to and asks what the
/// record trusts: `coordinators`, else the `connect` list.
fn own_coordinators(cfg: &NodeConfig) -> Vec<String> {
    if cfg.coordinators.is_empty() {
        cfg.connect.clone()
    } else {
        cfg.coordinators.clone()
    }
}

/// Writes the node's configured `[[stances]]` (a `debate_id = "*"` entry is a standing
/// stance) to its coordinators, signed by its key (`declare.rs`); needs its arbiter id.
fn declare_stances(core: &Arc<NodeCore>, cfg: &NodeConfig, link_id: Option<&str>) {
    let Some(arbiter_id) = link_id.or(cfg.arbiter_id.as_deref()) else {
        return;
    };
    let coordinators = own_coordinators(cfg);
    for stance in &cfg.stances {
        match crate::declare::declaration_request(&core.arbiter, arbiter_id, stance) {
            Ok(req) => crate::submit::spawn_write(
                core.peers.channels.clone(),
                coordinators.clone(),
                req,
                "stance declaration",
            ),
            Err(e) => warn!(debate = %stance.debate_id, error = %e, "stance not declared"),
        }
    }
}

/// Runs the node until SIGINT/SIGTERM.
pub async fn run(mut cfg: NodeConfig, over: RunOverrides) -> Result<(), NodeError> {
    if over.listen.is_some() {
        cfg.listen = over.listen;
    }
    if over.key_file.is_some() {
        cfg.key_file = over.key_file;
    }
    if over.data_dir.is_some() {
        cfg.data_dir = over.data_dir;
    }
    if !over.connect.is_empty() {
        cfg.connect = over.connect;
    }
    if over.arbiter_id.is_some() {
        cfg.arbiter_id = over.arbiter_id;
    }
    if let Some(t) = over.transport {
        cfg.transport = t;
    }
    let link_id = match (&cfg.arbiter_id, cfg.connect.is_empty()) {
        (_, true) => None,
        (Some(id), false) if !id.trim().is_empty() => Some(id.trim().to_owned()),
        (_, false) => {
            return Err(SetupError::NoArbiterId.into());
        }
    };
    for addr in &cfg.connect {
        crate::link::coordinator_url(addr)?;
    }
    let addr = cfg.listen.ok_or(SetupError::NoListen)?;
    let core = build_core(&cfg)?;
    let limit = cfg.max_message_bytes;
    let metrics_endpoint = match cfg.metrics_addr {
        Some(addr) => Some(panel_ops::Endpoint::bind(addr, "metrics_addr in node.toml").await?),
        None => None,
    };

    let (health_reporter, health) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<ArbiterNodeServer<NodeService>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| NodeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| NodeError::Bind { addr, source })?;
    let id = core.arbiter.identity();
    info!(%local, fingerprint = %id.fingerprint, judge = %id.judge_kind, "arbiter node listening");
    println!(
        "panel node listening on {local} fingerprint {}",
        id.fingerprint
    );
    declare_stances(&core, &cfg, link_id.as_deref());
    if let Some(trust) = core.peers.transport().trust()
        && core.peers.transport().charter().is_some()
    {
        crate::record_trust::spawn(
            core.peers.channels.clone(),
            own_coordinators(&cfg),
            trust.clone(),
        );
    }
    let links = match &link_id {
        Some(arbiter_id) => {
            println!(
                "panel node linking arbiter {arbiter_id} out to {}",
                cfg.connect.join(", ")
            );
            crate::link::spawn(core.clone(), arbiter_id, &cfg.connect, limit)?
        }
        None => Vec::new(),
    };

    let probe = Arc::new(crate::metrics::NodeProbe {
        core: core.clone(),
        serving: std::sync::atomic::AtomicBool::new(true),
    });
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(endpoint) = metrics_endpoint {
        tokio::spawn(endpoint.run(probe.clone(), async {
            let _ = metrics_stopped.await;
        }));
    }
    let incoming = core
        .peers
        .transport()
        .incoming(listener, ClientAuth::Required)?;
    core.peers
        .transport()
        .server()
        .add_service(health)
        .add_service(reflection)
        .add_service(
            ArbiterNodeServer::new(NodeService(core.clone()))
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit),
        )
        .add_service(
            ArbiterAdminServer::new(AdminService(core.clone()))
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit),
        )
        .serve_with_incoming_shutdown(incoming, {
            let core = core.clone();
            let probe = probe.clone();
            async move {
                shutdown_signal().await;
                probe
                    .serving
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                core.begin_shutdown();
            }
        })
        .await?;
    let _ = stop_metrics.send(());
    for l in links {
        l.abort();
    }
    info!("node stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(api_key_env: Option<&str>, api_key_file: Option<PathBuf>) -> JudgeConfig {
        JudgeConfig::Llm {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key_env: api_key_env.map(str::to_owned),
            api_key_file,
            ca_file: None,
            timeout_ms: 1000,
            max_retries: 1,
            backoff_ms: 10,
            system_prompt: None,
            persona: None,
            temperature: 0.0,
        }
    }

    fn err(cfg: &JudgeConfig) -> String {
        match build_judge(cfg) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn api_key_files_are_read_once_checked_and_never_shown() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("llm.key");
        std::fs::write(&f, "sk-abc123\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(build_judge(&llm(None, Some(f.clone()))).is_ok());

        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = err(&llm(None, Some(f.clone())));
        assert!(
            e.contains("judge.api_key_file") && e.contains("chmod 600") && !e.contains("sk-abc"),
            "{e}"
        );

        std::fs::write(&f, "sk-abc 123\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = err(&llm(None, Some(f.clone())));
        assert!(e.contains("spaces") && !e.contains("sk-abc"), "{e}");

        let e = err(&llm(Some("PANEL_TEST_KEY_UNSET_VAR"), Some(f)));
        assert!(e.contains("both set"), "{e}");
        let e = err(&llm(Some("PANEL_TEST_KEY_UNSET_VAR"), None));
        assert!(
            e.contains("PANEL_TEST_KEY_UNSET_VAR") && e.contains("export"),
            "{e}"
        );
        let e = err(&llm(None, Some(dir.path().join("missing.key"))));
        assert!(e.contains("judge.api_key_file"), "{e}");
    }

    #[test]
    fn retries_are_bounded() {
        let mut cfg = llm(None, None);
        if let JudgeConfig::Llm { max_retries, .. } = &mut cfg {
            *max_retries = 1000;
        }
        assert!(err(&cfg).contains("judge.max_retries"));
    }
}
