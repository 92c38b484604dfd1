//! A replica's configuration file (`panel coordinator run --config replica.toml`;
//! docs/coordinator/operations.md, "Configuration file"). Every key is optional in the file, and a
//! command-line flag of the same meaning overrides it; [`ReplicaConfig::resolve`] checks
//! the result and names the key and the fix for anything wrong. Relative paths are taken
//! from the file's folder, so a folder of files can be copied to another host whole.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::DriverOptions;
use crate::raft::RaftOptions;
use crate::service::intake::IntakeLimits;
use crate::service::proposer::{DEFAULT_MAX_BATCH_BYTES, ProposerOptions};
use crate::service::serve::{DEFAULT_MAX_COMMAND_BYTES, ServeOptions};
use panel_machine::features::checkpoints::Cadence;
use panel_machine::features::limits::Rate;
use panel_transport::Transport;

/// Why a replica config's text is not one: not TOML, or a key unknown or of the wrong
/// type (named by its path, e.g. `raft.heartbeat_ms`, so the operator knows what to fix).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigParseError {
    #[error("{0}")]
    Toml(toml::de::Error),
    #[error("at key {path}: {}", .error.message().trim())]
    Key {
        path: String,
        error: toml::de::Error,
    },
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read the replica config {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("replica config {path}: {problem}")]
    Parse {
        path: String,
        /// Boxed: a TOML error is large, and every config step returns this enum.
        problem: Box<ConfigParseError>,
    },
    #[error("{key} is not set: {fix}")]
    Missing {
        key: &'static str,
        fix: &'static str,
    },
    #[error("{key} = {value}: {why}")]
    Invalid {
        key: &'static str,
        value: String,
        why: String,
    },
    #[error("{key}: {path} does not exist; {fix}")]
    NoSuchFile {
        key: &'static str,
        path: String,
        fix: &'static str,
    },
    #[error("transport: {0}")]
    Transport(#[from] panel_transport::TransportError),
}

/// The whole file. Field docs say what each key means; defaults are in [`ReplicaConfig::resolve`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaConfig {
    /// This replica's Raft id (1, 2, 3, ...), as in the group's membership.
    pub id: Option<u64>,
    /// Where clients, peers and the drivers reach this replica (gRPC).
    pub listen: Option<SocketAddr>,
    /// The replica's own folder (Raft log, vote, snapshots); never shared.
    pub data_dir: Option<PathBuf>,
    /// Serve the `Admin` service on its own listener (operators only under TLS).
    pub admin_listen: Option<SocketAddr>,
    /// Plain-HTTP /metrics, /livez and /readyz; bind where only monitoring reaches.
    pub metrics_addr: Option<SocketAddr>,
    /// Exam motions carry gold answers for scripted judges: simulation clusters only.
    pub simulation: Option<bool>,
    /// Accept test commands (test builds and test clusters only).
    pub test_commands: Option<bool>,
    /// Private exam pools (exam files in the format of exams/default-v2.jsonl), each sealed
    /// for one sitting, in order. Under organisation pools (rule set 21) these are this
    /// replica's organisation's own, offered to the leader (docs/coordinator/state-machine.md
    /// "Organisation pools"); before, every replica of the group needs the same list.
    /// Without it the embedded public pool is used, which examines nobody in secret
    /// ("Sealed exams").
    pub exam_pools: Option<Vec<PathBuf>>,
    #[serde(default)]
    pub tls: TlsSection,
    #[serde(default)]
    pub keys: KeysSection,
    #[serde(default)]
    pub raft: RaftSection,
    #[serde(default)]
    pub batching: BatchingSection,
    #[serde(default)]
    pub windows: WindowsSection,
    #[serde(default)]
    pub checkpoints: CheckpointsSection,
    #[serde(default)]
    pub limits: LimitsSection,
}

/// `[tls]`: mutual TLS (docs/SECURITY.md, "Transport").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// Identity folder: ca.pem, cert.pem, key.pem (`panel pki init` writes one per replica).
    pub dir: Option<PathBuf>,
    /// The federation charter: which certificates are replicas and operators.
    pub charter: Option<PathBuf>,
    /// Plaintext on loopback addresses only, for debugging; excludes `dir`.
    pub insecure_loopback: Option<bool>,
}

/// `[keys]`: the keys every replica of the group holds the same copy of.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeysSection {
    /// The motion key (`panel coordinator motion-keygen FILE`).
    pub motion_key: Option<PathBuf>,
    /// A second motion key held for a rotation (`RotateMotionKey`; docs/coordinator/state-machine.md
    /// "Rotating the motion key").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_motion_key: Option<PathBuf>,
    /// The record log's key (`panel pki init` writes log.key).
    pub log_key: Option<PathBuf>,
}

/// `[raft]`: timing and log compaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaftSection {
    pub heartbeat_ms: Option<u64>,
    pub election_min_ms: Option<u64>,
    pub election_max_ms: Option<u64>,
    /// Build a snapshot every this many log entries.
    pub snapshot_logs: Option<u64>,
    /// Entries kept behind the latest snapshot.
    pub keep_logs: Option<u64>,
}

/// `[batching]`: how the leader packs client commands into Raft entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchingSection {
    pub batch_max: Option<usize>,
    pub batch_max_bytes: Option<usize>,
    /// Largest client command; larger writes are refused at intake.
    pub max_command_bytes: Option<usize>,
    pub linger_us: Option<u64>,
}

/// `[windows]`: the commit-reveal round's windows (docs/COORDINATOR.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowsSection {
    pub commit_ms: Option<u64>,
    pub reveal_ms: Option<u64>,
    pub exam_ms: Option<u64>,
    /// Exam items put to one arbiter's node at once.
    pub exam_concurrency: Option<usize>,
    /// The commit window of particular motion kinds, in ms (`merge = "60000"`; kinds as
    /// `--commit-window` names them): for slow judges (docs/JUDGES.md).
    pub commit_by_kind: Option<std::collections::BTreeMap<String, String>>,
}

/// `[checkpoints]`: when apply issues checkpoints, and the witnesses they go to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsSection {
    pub every_entries: Option<u64>,
    pub every_ms: Option<u64>,
    /// Witness submission prefixes, e.g. "http://witness.example:7401".
    pub witnesses: Option<Vec<String>>,
}

/// `[limits]`: write limits (docs/SECURITY.md, "Floods"); unset keys keep the defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    pub identity_burst: Option<u32>,
    pub identity_per_minute: Option<u32>,
    pub organisation_burst: Option<u32>,
    pub organisation_per_minute: Option<u32>,
    pub anonymous_burst: Option<u32>,
    pub anonymous_per_minute: Option<u32>,
    pub global_burst: Option<u32>,
    pub global_per_minute: Option<u32>,
    pub debates_per_identity: Option<u32>,
    pub contributions_per_debate: Option<u32>,
    pub open_motions_per_question: Option<u32>,
    pub open_motions_per_identity: Option<u32>,
}

impl LimitsSection {
    /// The intake buckets and apply quotas, defaults where unset.
    pub fn intake(&self) -> IntakeLimits {
        let mut l = IntakeLimits::default();
        let rate = |r: Rate, burst: Option<u32>, per_minute: Option<u32>| {
            Rate::new(burst.unwrap_or(r.burst), per_minute.unwrap_or(r.per_minute))
        };
        let p = &mut l.policy;
        p.per_identity = rate(
            p.per_identity,
            self.identity_burst,
            self.identity_per_minute,
        );
        p.per_organisation = rate(
            p.per_organisation,
            self.organisation_burst,
            self.organisation_per_minute,
        );
        p.anonymous = rate(p.anonymous, self.anonymous_burst, self.anonymous_per_minute);
        p.debates_per_identity = self.debates_per_identity.unwrap_or(p.debates_per_identity);
        p.contributions_per_debate = self
            .contributions_per_debate
            .unwrap_or(p.contributions_per_debate);
        p.open_motions_per_question = self
            .open_motions_per_question
            .unwrap_or(p.open_motions_per_question);
        p.open_motions_per_identity = self
            .open_motions_per_identity
            .unwrap_or(p.open_motions_per_identity);
        l.writes_global = rate(l.writes_global, self.global_burst, self.global_per_minute);
        l
    }
}

impl ReplicaConfig {
    /// Reads a file, refusing unknown keys and wrong types with the key's path and line.
    pub fn load(path: &Path) -> Result<ReplicaConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let mut cfg = ReplicaConfig::parse(&text).map_err(|problem| ConfigError::Parse {
            path: path.display().to_string(),
            problem: Box::new(problem),
        })?;
        cfg.rebase(path.parent().unwrap_or(Path::new(".")));
        Ok(cfg)
    }

    /// Parses TOML text; the error names the key path (e.g. `raft.heartbeat_ms`).
    pub fn parse(text: &str) -> Result<ReplicaConfig, ConfigParseError> {
        let de = toml::Deserializer::parse(text).map_err(ConfigParseError::Toml)?;
        serde_path_to_error::deserialize(de).map_err(|e| ConfigParseError::Key {
            path: e.path().to_string(),
            error: e.into_inner(),
        })
    }

    /// The file as TOML (what `panel up` writes for each replica).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// Takes relative paths from `base` (the file's folder).
    fn rebase(&mut self, base: &Path) {
        let fix = |p: &mut Option<PathBuf>| {
            if let Some(path) = p
                && path.is_relative()
            {
                *path = base.join(&*path);
            }
        };
        fix(&mut self.data_dir);
        fix(&mut self.tls.dir);
        fix(&mut self.tls.charter);
        fix(&mut self.keys.motion_key);
        fix(&mut self.keys.next_motion_key);
        fix(&mut self.keys.log_key);
        for pool in self.exam_pools.iter_mut().flatten() {
            if pool.is_relative() {
                *pool = base.join(&*pool);
            }
        }
    }

    /// The options a replica runs with: defaults for unset keys, every value checked.
    pub fn resolve(&self) -> Result<ServeOptions, ConfigError> {
        let id = self.id.ok_or(ConfigError::Missing {
            key: "id",
            fix: "give the replica's Raft id (id = 1 in the file, or --id 1)",
        })?;
        if id == 0 {
            return Err(invalid("id", id, "replica ids start at 1"));
        }
        let listen = self.listen.ok_or(ConfigError::Missing {
            key: "listen",
            fix: "give the gRPC address (listen = \"0.0.0.0:7001\", or --listen)",
        })?;
        let data_dir = self.data_dir.clone().ok_or(ConfigError::Missing {
            key: "data_dir",
            fix: "give the replica's own folder (data_dir = \"/var/lib/panel/replica-1\", or --data-dir)",
        })?;
        let raft = self.raft()?;
        let windows = self.windows()?;
        let every_entries = self.checkpoints.every_entries.unwrap_or(256);
        if every_entries == 0 {
            return Err(invalid(
                "checkpoints.every_entries",
                every_entries,
                "must be at least 1",
            ));
        }
        let witnesses = self.checkpoints.witnesses.clone().unwrap_or_default();
        for w in &witnesses {
            if !(w.starts_with("http://") || w.starts_with("https://")) {
                return Err(invalid(
                    "checkpoints.witnesses",
                    format!("{w:?}"),
                    "a witness is its submission prefix, e.g. \"http://witness.example:7401\"",
                ));
            }
        }
        for (key, path, fix) in [
            (
                "tls.dir",
                &self.tls.dir,
                "give the identity folder `panel pki init` wrote for this replica",
            ),
            (
                "tls.charter",
                &self.tls.charter,
                "give the charter.json `panel pki init` wrote",
            ),
            (
                "keys.motion_key",
                &self.keys.motion_key,
                "make one with `panel coordinator motion-keygen FILE` and copy it to every replica",
            ),
            (
                "keys.log_key",
                &self.keys.log_key,
                "give each replica the log.key `panel pki init` wrote to its own folder",
            ),
        ] {
            if let Some(p) = path
                && !p.exists()
            {
                return Err(ConfigError::NoSuchFile {
                    key,
                    path: p.display().to_string(),
                    fix,
                });
            }
        }
        let batching = &self.batching;
        Ok(ServeOptions {
            id,
            listen,
            data_dir,
            raft,
            proposer: ProposerOptions {
                max_items: batching.batch_max.unwrap_or(512).max(1),
                max_batch_bytes: batching.batch_max_bytes.unwrap_or(DEFAULT_MAX_BATCH_BYTES),
                linger: Duration::from_micros(batching.linger_us.unwrap_or(1000)),
                ..ProposerOptions::default()
            },
            driver: DriverOptions {
                simulation: self.simulation.unwrap_or(false),
                exam_pools: self.exam_pools()?,
                ..windows
            },
            test_commands: self.test_commands.unwrap_or(false),
            max_command_bytes: batching
                .max_command_bytes
                .unwrap_or(DEFAULT_MAX_COMMAND_BYTES),
            transport: Transport::from_flags(
                self.tls.dir.as_deref(),
                self.tls.charter.as_deref(),
                self.tls.insecure_loopback.unwrap_or(false),
            )?,
            admin_listen: self.admin_listen,
            motion_key: self.keys.motion_key.clone(),
            next_motion_key: self.keys.next_motion_key.clone(),
            intake: self.limits.intake(),
            log_key: self.keys.log_key.clone(),
            witnesses,
            checkpoints: Cadence {
                every_entries,
                every_ms: self.checkpoints.every_ms.unwrap_or(1000),
            },
            metrics_addr: self.metrics_addr,
            restore: None,
        })
    }

    fn raft(&self) -> Result<RaftOptions, ConfigError> {
        let r = &self.raft;
        let heartbeat_ms = r.heartbeat_ms.unwrap_or(100);
        let election_min_ms = r.election_min_ms.unwrap_or(500);
        let election_max_ms = r.election_max_ms.unwrap_or(1000);
        if heartbeat_ms == 0 {
            return Err(invalid(
                "raft.heartbeat_ms",
                heartbeat_ms,
                "must be above 0",
            ));
        }
        if election_min_ms >= election_max_ms {
            return Err(invalid(
                "raft.election_min_ms",
                election_min_ms,
                format!("must be below raft.election_max_ms ({election_max_ms})"),
            ));
        }
        if heartbeat_ms >= election_min_ms {
            return Err(invalid(
                "raft.heartbeat_ms",
                heartbeat_ms,
                format!(
                    "must be well below raft.election_min_ms ({election_min_ms}), or followers start elections between heartbeats"
                ),
            ));
        }
        Ok(RaftOptions {
            heartbeat_ms,
            election_min_ms,
            election_max_ms,
            snapshot_logs: r.snapshot_logs.unwrap_or(5000).max(1),
            keep_logs: r.keep_logs.unwrap_or(1000),
        })
    }

    fn windows(&self) -> Result<DriverOptions, ConfigError> {
        let w = &self.windows;
        let ms = |key: &'static str, v: Option<u64>, default: u64| {
            let v = v.unwrap_or(default);
            if v == 0 {
                Err(invalid(key, v, "a window must be above 0 ms"))
            } else {
                Ok(Duration::from_millis(v))
            }
        };
        let mut commit_windows = Vec::new();
        for (kind, window) in w.commit_by_kind.iter().flatten() {
            let parsed = crate::service::driver::parse_kind_window(&format!("{kind}={window}"))
                .map_err(|why| invalid("windows.commit_by_kind", kind, why.to_string()))?;
            commit_windows.push(parsed);
        }
        let exam_concurrency = w
            .exam_concurrency
            .unwrap_or(crate::service::driver::DEFAULT_EXAM_CONCURRENCY);
        if exam_concurrency == 0 {
            return Err(invalid(
                "windows.exam_concurrency",
                0,
                "at least one exam item must be put to a node at a time",
            ));
        }
        Ok(DriverOptions {
            commit_window: ms("windows.commit_ms", w.commit_ms, 400)?,
            commit_windows,
            reveal_window: ms("windows.reveal_ms", w.reveal_ms, 5000)?,
            exam_window: ms("windows.exam_ms", w.exam_ms, 20000)?,
            exam_concurrency,
            simulation: false,
            exam_pools: None,
            // Derived from the log key at start (`log_key::beacon`), never configured.
            beacon: None,
            // The log key, set at start.
            seal_key: None,
        })
    }

    /// Loads `exam_pools`: each file must be a valid exam; none may repeat a pool.
    fn exam_pools(
        &self,
    ) -> Result<Option<std::sync::Arc<panel_machine::features::exam_sitting::Pools>>, ConfigError>
    {
        let Some(paths) = &self.exam_pools else {
            return Ok(None);
        };
        let mut pools: Vec<panel_machine::features::exam_sitting::PrivatePool> = Vec::new();
        for path in paths {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: shown.clone(),
                source,
            })?;
            let pool = panel_machine::features::exam_sitting::PrivatePool::load(&text)
                .map_err(|e| invalid("exam_pools", &shown, e.to_string()))?;
            if pools.iter().any(|p| p.public_id == pool.public_id) {
                return Err(invalid(
                    "exam_pools",
                    &shown,
                    "asks the same questions as an earlier pool: give each sitting fresh items",
                ));
            }
            pools.push(pool);
        }
        if pools.is_empty() {
            return Err(invalid(
                "exam_pools",
                "[]",
                "list at least one exam file, or leave the key out for the embedded public pool",
            ));
        }
        Ok(Some(std::sync::Arc::new(
            panel_machine::features::exam_sitting::Pools {
                pools,
                reusable: false,
            },
        )))
    }
}

fn invalid(
    key: &'static str,
    value: impl std::fmt::Display,
    why: impl Into<String>,
) -> ConfigError {
    ConfigError::Invalid {
        key,
        value: value.to_string(),
        why: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal() -> ReplicaConfig {
        ReplicaConfig::parse(
            "id = 1\nlisten = \"127.0.0.1:7001\"\ndata_dir = \"/tmp/r1\"\n[tls]\ninsecure_loopback = true\n",
        )
        .expect("minimal")
    }

    #[test]
    fn a_minimal_file_resolves_to_the_defaults() {
        let o = minimal().resolve().expect("resolve");
        assert_eq!(o.id, 1);
        assert_eq!(o.raft.heartbeat_ms, 100);
        assert_eq!(o.driver.reveal_window, Duration::from_millis(5000));
        assert_eq!(o.checkpoints.every_entries, 256);
    }

    /// `exam_pools`: each file loads as an exam and asks fresh questions; a bad file is
    /// named with the exam's own line error, and the replica does not start on it.
    #[test]
    fn exam_pools_load_private_pools_and_name_a_bad_file() {
        let dir = std::env::temp_dir().join(format!("exam-pools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let good = dir.join("pool-a.jsonl");
        std::fs::write(
            &good,
            panel_machine::features::exam_sitting::EMBEDDED_POOL_TEXT,
        )
        .expect("write");
        let bad = dir.join("pool-b.jsonl");
        std::fs::write(&bad, "{\"exam\":\"x\"}\n{\"id\":1}\n").expect("write");
        let with = |paths: &[&std::path::Path]| {
            let mut c = minimal();
            c.exam_pools = Some(paths.iter().map(|p| p.to_path_buf()).collect());
            c.resolve().map(|o| o.driver.exam_pools)
        };
        let pools = with(&[&good]).expect("resolves").expect("pools");
        assert_eq!(pools.pools.len(), 1);
        assert!(!pools.reusable, "a private pool is sealed once");
        let e = with(&[&good, &bad]).expect_err("bad").to_string();
        assert!(
            e.contains("exam_pools") && e.contains("pool-b.jsonl"),
            "{e}"
        );
        let e = with(&[&good, &good]).expect_err("twice").to_string();
        assert!(e.contains("same questions"), "{e}");
        let e = with(&[&dir.join("missing.jsonl")])
            .expect_err("missing")
            .to_string();
        assert!(e.contains("missing.jsonl"), "{e}");
        assert!(
            minimal()
                .resolve()
                .expect("default")
                .driver
                .exam_pools
                .is_none()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_key() {
        let e = ReplicaConfig::parse("id = 1\n[raft]\nheartbeat = 5\n")
            .expect_err("unknown")
            .to_string();
        assert!(e.contains("raft") && e.contains("heartbeat"), "{e}");
        let e = ReplicaConfig::parse("[raft]\nheartbeat_ms = \"fast\"\n")
            .expect_err("type")
            .to_string();
        assert!(e.contains("raft.heartbeat_ms"), "{e}");
        let e = ReplicaConfig::parse("listen = \"nowhere\"\n")
            .expect_err("addr")
            .to_string();
        assert!(e.contains("listen"), "{e}");
    }

    #[test]
    fn inconsistent_values_name_the_key_and_the_fix() {
        let mut c = minimal();
        c.raft.election_min_ms = Some(900);
        c.raft.election_max_ms = Some(800);
        let e = c.resolve().expect_err("election").to_string();
        assert!(
            e.contains("raft.election_min_ms") && e.contains("800"),
            "{e}"
        );
        let mut c = minimal();
        c.raft.heartbeat_ms = Some(600);
        assert!(
            c.resolve()
                .expect_err("hb")
                .to_string()
                .contains("raft.heartbeat_ms")
        );
        let mut c = minimal();
        c.id = None;
        assert!(c.resolve().expect_err("id").to_string().contains("--id"));
        let mut c = minimal();
        c.keys.motion_key = Some("/nonexistent/motion.key".into());
        let e = c.resolve().expect_err("file").to_string();
        assert!(
            e.contains("keys.motion_key") && e.contains("motion-keygen"),
            "{e}"
        );
        let mut c = minimal();
        c.checkpoints.witnesses = Some(vec!["witness:7401".into()]);
        assert!(
            c.resolve()
                .expect_err("w")
                .to_string()
                .contains("checkpoints.witnesses")
        );
        let mut c = minimal();
        c.windows.commit_by_kind = Some([("merge".to_owned(), "soon".to_owned())].into());
        let e = c.resolve().expect_err("window").to_string();
        assert!(
            e.contains("windows.commit_by_kind") && e.contains("merge"),
            "{e}"
        );
        c.windows.commit_by_kind = Some([("merge".to_owned(), "60000".to_owned())].into());
        assert_eq!(c.resolve().expect("window").driver.commit_windows.len(), 1);
        let mut c = minimal();
        c.tls.insecure_loopback = None;
        assert!(c.resolve().is_err(), "no transport configured");
    }

    #[test]
    fn relative_paths_are_taken_from_the_files_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("replica.toml");
        std::fs::write(
            &path,
            "data_dir = \"r1\"\n[keys]\nmotion_key = \"motion.key\"\n",
        )
        .expect("write");
        let c = ReplicaConfig::load(&path).expect("load");
        assert_eq!(c.data_dir.as_deref(), Some(dir.path().join("r1").as_path()));
        assert_eq!(
            c.keys.motion_key.as_deref(),
            Some(dir.path().join("motion.key").as_path())
        );
    }

    #[test]
    fn a_written_file_reads_back_the_same() {
        let mut c = minimal();
        c.checkpoints.witnesses = Some(vec!["http://127.0.0.1:7401".into()]);
        c.limits.identity_burst = Some(50);
        assert_eq!(ReplicaConfig::parse(&c.to_toml()).expect("parse"), c);
    }
}
