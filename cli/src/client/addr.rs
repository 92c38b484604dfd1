//! Where the coordinator cluster is. The user's commands take, in this order: `--addr
//! host:port[,host:port...]`, the `PANEL_ADDR` environment variable (same form), or the
//! `cluster.json` that `panel up` writes into its state folder (`--state`, default
//! `.panel`). Every address is checked for the host:port form before anything dials it.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Environment variable naming the coordinators.
pub const ENV: &str = "PANEL_ADDR";
/// File in the state folder naming the coordinators of a running `panel up`.
pub const FILE: &str = "cluster.json";

/// How a command finds the cluster (flattened into each user command).
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Coordinator addresses, host:port[,host:port...]. Default: $PANEL_ADDR, else the
    /// state folder's cluster.json.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    pub addr: Vec<String>,
    /// State folder of `panel up` (its cluster.json names the coordinators).
    #[arg(long, default_value = ".panel", value_name = "DIR")]
    pub state: PathBuf,
    /// Identity folder for mutual TLS (ca.pem; cert.pem and key.pem to write as a known
    /// client). Default: $PANEL_TLS, else the state folder's cluster.json; without any,
    /// plaintext to loopback addresses only.
    #[arg(long, env = "PANEL_TLS", value_name = "DIR")]
    pub tls: Option<PathBuf>,
}

/// `DIR/cluster.json`: what `panel up` leaves for the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterFile {
    pub coordinators: Vec<String>,
    /// Process id of the `panel up` that started the cluster, to tell a stale file apart.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The client identity folder `panel up` issued for the CLI (mutual TLS).
    #[serde(default)]
    pub tls: Option<PathBuf>,
    /// The contributor `panel up` registered for the CLI's own runs (docs/PROCEDURES.md
    /// "Who may start a run"): the default `--convener` and `--key` of `panel <procedure>
    /// run` against this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convener: Option<ConvenerFile>,
}

/// A registered convener's name and key file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvenerFile {
    pub name: String,
    pub key: PathBuf,
}

/// Where the addresses came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env,
    File { path: PathBuf, pid: Option<u32> },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => f.write_str("--addr"),
            Source::Env => write!(f, "${ENV}"),
            Source::File { path, .. } => write!(f, "{}", path.display()),
        }
    }
}

impl Source {
    /// A hint for when no coordinator answers at the addresses from this source.
    pub fn unreachable_hint(&self) -> String {
        match self {
            Source::File { path, pid } => {
                let gone = pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
                format!(
                    "{}; {}start the panel again with `panel up --state {} --keep --fresh`, or pass --addr",
                    if gone {
                        "the `panel up` that wrote it is no longer running"
                    } else {
                        "is the cluster still running?"
                    },
                    if gone { "it is stale: " } else { "" },
                    path.parent()
                        .map_or(".".into(), |p| p.display().to_string())
                )
            }
            Source::Flag => "check the --addr list (host:port of each coordinator)".into(),
            Source::Env => format!("check ${ENV} (host:port of each coordinator, comma-separated)"),
        }
    }
}

/// Writes `DIR/cluster.json` (called by `panel up` once its replicas run).
pub fn write_cluster_file(state: &Path, coordinators: &[String], tls: Option<&Path>) -> Result<()> {
    let file = ClusterFile {
        coordinators: coordinators.to_vec(),
        pid: Some(std::process::id()),
        tls: tls.map(Path::to_owned),
        convener: None,
    };
    store(state, &file)
}

/// Names the registered convener in `DIR/cluster.json` (called by `panel up` once the
/// registration applied).
pub fn record_convener(state: &Path, convener: ConvenerFile) -> Result<()> {
    let mut file = read_file(state)?;
    file.convener = Some(convener);
    store(state, &file)
}

fn store(state: &Path, file: &ClusterFile) -> Result<()> {
    let path = state.join(FILE);
    std::fs::write(&path, serde_json::to_vec_pretty(file)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn read_file(state: &Path) -> Result<ClusterFile> {
    let path = state.join(FILE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a cluster file", path.display()))
}

/// Checks one address: a non-empty host, a colon, a port number 1..=65535.
pub fn check_addr(addr: &str, origin: &str) -> Result<String> {
    let a = addr.trim();
    let ok = a.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok_and(|p| p > 0)
    });
    if !ok {
        bail!(
            "{origin} has {addr:?}, which is not host:port; give each coordinator as host:port, e.g. 127.0.0.1:7001 (comma-separated for several)"
        );
    }
    Ok(a.to_string())
}

fn split(list: &[String], origin: &str) -> Result<Vec<String>> {
    list.iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(|s| check_addr(s, origin))
        .collect()
}

impl ClusterArgs {
    /// The convener `panel up` registered for this state folder, if any.
    pub fn convener(&self) -> Option<ConvenerFile> {
        read_file(&self.state).ok()?.convener
    }

    /// How to reach the coordinators: `--tls`/$PANEL_TLS, else the identity named in the
    /// state folder's cluster.json, else plaintext to loopback addresses only.
    pub fn transport(&self) -> Result<panel_transport::Transport> {
        let dir = self
            .tls
            .clone()
            .or_else(|| read_file(&self.state).ok()?.tls);
        Ok(panel_transport::Transport::from_flags(
            dir.as_deref(),
            None,
            dir.is_none(),
        )?)
    }

    /// The coordinator addresses and where they came from.
    pub fn resolve(&self) -> Result<(Vec<String>, Source)> {
        self.resolve_with(std::env::var(ENV).ok())
    }

    fn resolve_with(&self, env: Option<String>) -> Result<(Vec<String>, Source)> {
        if !self.addr.is_empty() {
            let addrs = split(&self.addr, "--addr")?;
            if addrs.is_empty() {
                bail!("--addr is empty; give host:port[,host:port...]");
            }
            return Ok((addrs, Source::Flag));
        }
        if let Some(v) = env.filter(|v| !v.trim().is_empty()) {
            return Ok((split(&[v], &format!("${ENV}"))?, Source::Env));
        }
        let path = self.state.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "no coordinator address: {} does not exist. Pass --addr host:port[,host:port...], \
                 set {ENV}=host:port[,...], or start a local panel with `panel up --state {} --keep` \
                 (it writes {FILE} there) and point --state at that folder",
                path.display(),
                self.state.display()
            ),
            Err(e) => bail!("cannot read {}: {e}", path.display()),
        };
        let file: ClusterFile = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a cluster file ({{\"coordinators\": [\"host:port\", ...]}}); \
                 restart `panel up --keep` to rewrite it, or pass --addr",
                path.display()
            )
        })?;
        let addrs = split(&file.coordinators, &path.display().to_string())?;
        if addrs.is_empty() {
            bail!(
                "{} lists no coordinators; restart `panel up --keep` or pass --addr",
                path.display()
            );
        }
        Ok((
            addrs,
            Source::File {
                path,
                pid: file.pid,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(addr: &[&str], state: &Path) -> ClusterArgs {
        ClusterArgs {
            addr: addr.iter().map(|s| s.to_string()).collect(),
            state: state.to_path_buf(),
            tls: None,
        }
    }

    #[test]
    fn flag_beats_env_beats_file() {
        let dir = std::env::temp_dir().join(format!("cluster-addr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_cluster_file(&dir, &["127.0.0.1:3".into()], None).unwrap();
        let (a, s) = args(&["127.0.0.1:1,127.0.0.1:2"], &dir)
            .resolve_with(Some("127.0.0.1:9".into()))
            .unwrap();
        assert_eq!((a.len(), s), (2, Source::Flag));
        let (a, s) = args(&[], &dir)
            .resolve_with(Some("127.0.0.1:9".into()))
            .unwrap();
        assert_eq!((a, s), (vec!["127.0.0.1:9".to_string()], Source::Env));
        let (a, s) = args(&[], &dir).resolve_with(None).unwrap();
        assert_eq!(a, vec!["127.0.0.1:3".to_string()]);
        assert!(matches!(s, Source::File { pid: Some(_), .. }));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_and_malformed_sources_say_how_to_fix_them() {
        let dir = std::env::temp_dir().join(format!("cluster-addr-none-{}", std::process::id()));
        let e = args(&[], &dir).resolve_with(None).unwrap_err().to_string();
        assert!(e.contains("--addr") && e.contains("PANEL_ADDR") && e.contains("panel up"));
        for bad in ["localhost", ":80", "h:0", "h:99999", "http://h:1"] {
            let e = args(&[bad], &dir).resolve_with(None).unwrap_err();
            assert!(e.to_string().contains("host:port"), "{bad}: {e}");
        }
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(FILE), "{\"nodes\": 1}").unwrap();
        let e = format!("{:#}", args(&[], &dir).resolve_with(None).unwrap_err());
        assert!(e.contains("not a cluster file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
