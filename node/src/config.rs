//! `node.toml`: the node's configuration file (docs/WIRE.md "Node configuration").
//! Relative paths are resolved against the config file's directory; command-line flags
//! override file values.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use crate::judge::simulated::SimulatedProfile;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
}

/// A declared stance in the config (`[[stances]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StanceConfig {
    pub debate_id: String,
    /// "A", "B" or "none".
    pub side: String,
    #[serde(default)]
    pub credence: f64,
}

/// A peer node (`[[peers]]`): where to deliver revealed rulings for panels it sits on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    /// Hex ed25519 public key.
    pub public_key: String,
    /// e.g. `http://10.0.0.7:7401`.
    pub endpoint: String,
}

/// How the node talks (`[transport]`): mutual TLS with an identity folder issued by its
/// organisation and the federation charter (which says which certificates are the
/// coordinator's replicas), or the loopback debug mode. One of the two is required.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportConfig {
    /// Identity folder: ca.pem, cert.pem, key.pem (`panel pki init`).
    pub tls: Option<PathBuf>,
    /// The federation charter (charter.json).
    pub charter: Option<PathBuf>,
    /// Plaintext on 127.0.0.1 only, for debugging.
    #[serde(default)]
    pub insecure_loopback: bool,
}

/// Which judge backs the node (`[judge]`, selected by `kind`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum JudgeConfig {
    Scripted {
        /// TOML file with `[profiles.NAME]` tables.
        profiles: PathBuf,
        profile: String,
    },
    /// Declared noise by the simulator's judge model (docs/JUDGES.md "Simulated"): the
    /// settings are [`SimulatedProfile`]'s, inline (`accuracy`, `lineage`, ...).
    Simulated(SimulatedProfile),
    /// A GGUF model in the node's own process, read by its next-token distribution
    /// (docs/JUDGES.md "Local"; needs the binary built with the `local-judge` feature).
    Local {
        /// The model file (relative to the config file).
        model: PathBuf,
        /// Replaces the default system prompt.
        #[serde(default)]
        system_prompt: Option<String>,
        /// Who this arbiter is, in the operator's words; with the declared stances it makes
        /// two nodes on one model two different arbiters.
        #[serde(default)]
        persona: Option<String>,
        /// Sampling temperature of the rationale (the probability does not depend on it).
        #[serde(default)]
        temperature: f64,
        #[serde(default = "default_rationale_tokens")]
        rationale_tokens: usize,
        /// Weights candle multiplies on a scalar path (Q5_0, Q5_1): "auto" (f32 for files
        /// up to 600 MB, else q8), "q8" (re-quantized at load), "f32" (fastest, most
        /// memory) or "as-file".
        #[serde(default = "default_weights")]
        weights: String,
        /// Longest prompt and rationale of one ruling, in tokens.
        #[serde(default = "default_local_context")]
        context: usize,
    },
    Command {
        program: PathBuf,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default = "default_command_timeout")]
        timeout_ms: u64,
        #[serde(default = "default_output_limit")]
        max_output_bytes: usize,
        /// Pass the simulation truth hint to the program (simulation only).
        #[serde(default)]
        include_expected: bool,
    },
    Llm {
        /// `http://...` or `https://...`, e.g. `http://127.0.0.1:8080/v1`.
        base_url: String,
        model: String,
        /// Name of the environment variable holding the API key (not the key itself).
        #[serde(default)]
        api_key_env: Option<String>,
        /// A file holding the API key (read once at start; must not be world-readable).
        /// Relative to the config file. Exclusive with `api_key_env`.
        #[serde(default)]
        api_key_file: Option<PathBuf>,
        /// PEM file of the authorities to trust for an `https://` endpoint, instead of the
        /// system's root certificates (a private or self-signed endpoint).
        #[serde(default)]
        ca_file: Option<PathBuf>,
        #[serde(default = "default_llm_timeout")]
        timeout_ms: u64,
        #[serde(default = "default_retries")]
        max_retries: u32,
        #[serde(default = "default_backoff")]
        backoff_ms: u64,
        /// Replaces the default system prompt (as for `local`).
        #[serde(default)]
        system_prompt: Option<String>,
        /// Who this arbiter is, in the operator's words; with the declared stances it goes
        /// into the system message of every request.
        #[serde(default)]
        persona: Option<String>,
        /// Sampling temperature of every request, in [0, 2]; a probability read from the
        /// endpoint's log-probabilities does not depend on it.
        #[serde(default)]
        temperature: f64,
    },
    Human,
}

fn default_rationale_tokens() -> usize {
    24
}
fn default_weights() -> String {
    "auto".into()
}
fn default_local_context() -> usize {
    2048
}
fn default_command_timeout() -> u64 {
    10_000
}
fn default_output_limit() -> usize {
    64 * 1024
}
fn default_llm_timeout() -> u64 {
    60_000
}
fn default_retries() -> u32 {
    3
}
fn default_backoff() -> u64 {
    500
}
fn default_max_message() -> usize {
    1 << 20
}
fn default_concurrency() -> usize {
    crate::arbiter::DEFAULT_MAX_CONCURRENT_JUDGEMENTS
}
fn default_retrieval_timeout() -> u64 {
    10_000
}
fn default_retrieval_bytes() -> usize {
    crate::retrieval::MAX_SOURCE_BYTES
}

/// How the node retrieves cited sources for tier verification (`[retrieval]`).
///
/// A citation's address is chosen by whoever wrote the citation, so the node connects
/// only to public unicast addresses: a host that resolves to loopback, a private range,
/// link-local (the cloud metadata address 169.254.169.254), carrier-grade NAT, multicast or
/// another special-purpose address is refused, on every redirect hop (`crate::address`
/// lists the rules). `allow_hosts` is the one exception.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalConfig {
    /// PEM file of the authorities to trust for `https://` sources instead of the system's
    /// root certificates. Relative to the config file.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// The whole retrieval (redirects included), in milliseconds.
    #[serde(default = "default_retrieval_timeout")]
    pub timeout_ms: u64,
    /// Largest source fetched, in bytes.
    #[serde(default = "default_retrieval_bytes")]
    pub max_bytes: usize,
    /// Hosts exempt from the public-address rule, for an internal source mirror or a test
    /// server: exact host names (case-insensitive; no wildcards, no suffix matching) or IP
    /// addresses, e.g. `["mirror.internal", "127.0.0.1"]`. An entry is compared with the
    /// URL's host as written, not with what the host resolves to (`"127.0.0.1"` exempts
    /// `https://127.0.0.1:8443/x` but not `https://localhost/x`), and exempts every port
    /// of that host. Empty by default: nothing but public addresses.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            ca_file: None,
            timeout_ms: default_retrieval_timeout(),
            max_bytes: default_retrieval_bytes(),
            allow_hosts: Vec::new(),
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Address to serve gRPC on, e.g. "127.0.0.1:7401".
    pub listen: Option<SocketAddr>,
    pub key_file: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    #[serde(default)]
    pub organisation: String,
    #[serde(default)]
    pub model_family: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub stances: Vec<StanceConfig>,
    pub judge: Option<JudgeConfig>,
    #[serde(default)]
    pub peers: Vec<PeerConfig>,
    /// Largest gRPC message accepted, in bytes (default 1 MiB).
    #[serde(default = "default_max_message")]
    pub max_message_bytes: usize,
    /// How many times a revealed ruling is offered to an unreachable peer.
    #[serde(default = "default_retries")]
    pub delivery_attempts: u32,
    /// Coordinator replicas to connect out to (`host:port`), one link each, for a node
    /// that cannot be called (docs/WIRE.md "Arbiter link"). Give every replica.
    #[serde(default)]
    pub connect: Vec<String>,
    /// The id the arbiter was registered under; required with `connect`.
    #[serde(default)]
    pub arbiter_id: Option<String>,
    #[serde(default)]
    pub transport: TransportConfig,
    /// Hex ed25519 public keys of the coordinator motion keys this node trusts
    /// (docs/WIRE.md "Motion, layout v1"). A motion not signed by one of them is refused
    /// before the judge sees it; with none configured every motion is refused.
    #[serde(default)]
    pub coordinator_keys: Vec<String>,
    /// Coordinator replicas (`host:port`) the node writes its own reveals to
    /// (`SubmitReveal`, docs/coordinator/state-machine.md "The commit-reveal round"); when empty, the
    /// `connect` list is used. Give every replica: any of them forwards to the leader.
    #[serde(default)]
    pub coordinators: Vec<String>,
    /// Where to serve plain-HTTP `/metrics` (Prometheus), `/livez` and `/readyz`
    /// (docs/coordinator/operations.md, "Metrics and readiness"); off when unset.
    #[serde(default)]
    pub metrics_addr: Option<SocketAddr>,
    /// Judge calls that may run at once (exam items arrive together); the rest wait, and
    /// their wait counts against their commit window. Default 4.
    #[serde(default = "default_concurrency")]
    pub max_concurrent_judgements: usize,
    /// How long the judge is expected to take per motion, in milliseconds. A motion whose
    /// commit window leaves less is still judged, with a warning naming the coordinator
    /// setting that fixes it (docs/JUDGES.md "Windows for slow judges").
    #[serde(default)]
    pub declared_latency_ms: Option<u64>,
    /// Source retrieval for tier verification.
    #[serde(default)]
    pub retrieval: RetrievalConfig,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            listen: None,
            key_file: None,
            data_dir: None,
            organisation: String::new(),
            model_family: String::new(),
            labels: BTreeMap::new(),
            stances: Vec::new(),
            judge: None,
            peers: Vec::new(),
            max_message_bytes: default_max_message(),
            delivery_attempts: default_retries(),
            connect: Vec::new(),
            arbiter_id: None,
            transport: TransportConfig::default(),
            coordinator_keys: Vec::new(),
            coordinators: Vec::new(),
            metrics_addr: None,
            max_concurrent_judgements: default_concurrency(),
            declared_latency_ms: None,
            retrieval: RetrievalConfig::default(),
        }
    }
}

impl NodeConfig {
    /// Reads a config file and resolves its relative paths against its directory.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut cfg: NodeConfig = toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(p) = cfg.key_file.as_mut() {
            resolve(p);
        }
        if let Some(p) = cfg.data_dir.as_mut() {
            resolve(p);
        }
        if let Some(p) = cfg.transport.tls.as_mut() {
            resolve(p);
        }
        if let Some(p) = cfg.transport.charter.as_mut() {
            resolve(p);
        }
        if let Some(p) = cfg.retrieval.ca_file.as_mut() {
            resolve(p);
        }
        match cfg.judge.as_mut() {
            Some(JudgeConfig::Scripted { profiles, .. }) => resolve(profiles),
            Some(JudgeConfig::Local { model, .. }) => resolve(model),
            Some(JudgeConfig::Llm {
                api_key_file,
                ca_file,
                ..
            }) => {
                if let Some(p) = api_key_file.as_mut() {
                    resolve(p);
                }
                if let Some(p) = ca_file.as_mut() {
                    resolve(p);
                }
            }
            Some(JudgeConfig::Command { program, .. }) if program.components().count() > 1 => {
                resolve(program)
            }
            // A simulated judge errs with the lineage it declares unless told otherwise.
            Some(JudgeConfig::Simulated(p)) if p.lineage.is_empty() => {
                p.lineage.clone_from(&cfg.model_family);
            }
            _ => {}
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_config_and_profiles_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let cfg = NodeConfig::load(&dir.join("node.toml")).unwrap();
        assert_eq!(cfg.stances.len(), 1);
        let Some(JudgeConfig::Scripted { profiles, profile }) = cfg.judge else {
            panic!("example uses the scripted judge");
        };
        assert!(profiles.starts_with(&dir));
        crate::judge::scripted::load_profile(&profiles, &profile).unwrap();
        for name in [
            "perfect",
            "honest",
            "leans_a",
            "leans_b",
            "position_biased",
            "inert",
            "noisy",
        ] {
            crate::judge::scripted::load_profile(&profiles, name).unwrap();
        }
    }

    #[test]
    fn llm_key_file_ca_files_and_limits_load_relative_to_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.toml");
        std::fs::write(
            &path,
            "max_concurrent_judgements = 8\ndeclared_latency_ms = 5000\n\
             [retrieval]\nca_file = \"src-ca.pem\"\nallow_hosts = [\"mirror.internal\", \"10.0.0.5\"]\n\
             [judge]\nkind = \"llm\"\nbase_url = \"https://x.example/v1\"\nmodel = \"m\"\n\
             api_key_file = \"llm.key\"\nca_file = \"llm-ca.pem\"\n",
        )
        .unwrap();
        let cfg = NodeConfig::load(&path).unwrap();
        assert_eq!(cfg.max_concurrent_judgements, 8);
        assert_eq!(cfg.declared_latency_ms, Some(5000));
        assert_eq!(cfg.retrieval.ca_file, Some(dir.path().join("src-ca.pem")));
        assert_eq!(cfg.retrieval.timeout_ms, 10_000);
        assert_eq!(cfg.retrieval.allow_hosts, ["mirror.internal", "10.0.0.5"]);
        let Some(JudgeConfig::Llm {
            api_key_file,
            ca_file,
            ..
        }) = cfg.judge
        else {
            panic!("an llm judge");
        };
        assert_eq!(api_key_file, Some(dir.path().join("llm.key")));
        assert_eq!(ca_file, Some(dir.path().join("llm-ca.pem")));
        let d = NodeConfig::default();
        assert_eq!(d.max_concurrent_judgements, 4);
        assert!(
            d.retrieval.allow_hosts.is_empty(),
            "public addresses only by default"
        );
        let e = toml::from_str::<NodeConfig>("[retrieval]\nallow_private = true").unwrap_err();
        assert!(
            e.to_string().contains("unknown field `allow_private`"),
            "{e}"
        );
    }

    #[test]
    fn a_simulated_judge_is_configured_inline_and_takes_the_declared_lineage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.toml");
        std::fs::write(
            &path,
            "model_family = \"sim-lineage-x\"\n[judge]\nkind = \"simulated\"\naccuracy = 0.95\n\
             position_bias = 0.05\nleaning = \"B\"\nstance_bias = 0.2\nseed = 3\n",
        )
        .unwrap();
        let cfg = NodeConfig::load(&path).unwrap();
        let Some(JudgeConfig::Simulated(p)) = cfg.judge else {
            panic!("a simulated judge");
        };
        assert_eq!(p.lineage, "sim-lineage-x", "the node's declared lineage");
        assert_eq!((p.accuracy, p.confidence, p.seed), (0.95, 1.0, 3));
        assert_eq!(p.leaning.as_deref(), Some("B"));
        let e = toml::from_str::<NodeConfig>(
            "[judge]\nkind = \"simulated\"\naccuracy = 0.9\nskil = 2\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `skil`"), "{e}");
    }

    #[test]
    fn an_llm_judge_takes_a_persona_a_system_prompt_and_a_temperature() {
        let cfg: NodeConfig = toml::from_str(
            "[judge]\nkind = \"llm\"\nbase_url = \"http://127.0.0.1:8081/v1\"\nmodel = \"m\"\n\
             system_prompt = \"You judge debates.\"\npersona = \"A careful economist.\"\n\
             temperature = 0.3\n",
        )
        .unwrap();
        let Some(JudgeConfig::Llm {
            system_prompt,
            persona,
            temperature,
            ..
        }) = cfg.judge
        else {
            panic!("an llm judge");
        };
        assert_eq!(system_prompt.as_deref(), Some("You judge debates."));
        assert_eq!(persona.as_deref(), Some("A careful economist."));
        assert_eq!(temperature, 0.3);
    }

    #[test]
    fn unknown_keys_and_judges_are_named() {
        let err = toml::from_str::<NodeConfig>("listn = \"127.0.0.1:1\"").unwrap_err();
        assert!(err.to_string().contains("unknown field `listn`"), "{err}");
        let err = toml::from_str::<NodeConfig>("[judge]\nkind = \"oracle\"").unwrap_err();
        assert!(err.to_string().contains("oracle"), "{err}");
    }
}
