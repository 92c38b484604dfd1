//! What the run cost the machine, read from Linux's /proc and the state folder: CPU time
//! of this process and of each child (the replicas, nodes and witnesses `panel bench`
//! started), bytes of each replica's data folder, and bytes over the loopback interface.
//! Parsing is pure; the reads are the shell around it.

use std::collections::BTreeMap;
use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum UsageError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} does not have the layout of /proc/PID/stat")]
    Stat { path: String },
    #[error("/proc/net/dev has no loopback line")]
    NoLoopback,
}

/// CPU seconds per process, by role ("replica 1", "node bench-arb-00", "bench (this
/// process)").
pub type CpuSeconds = BTreeMap<String, f64>;

/// The parent pid and CPU ticks (user + system) of a `/proc/PID/stat` text.
pub fn parse_stat(text: &str) -> Option<(u32, u64)> {
    // The command name is in parentheses and may hold spaces: fields after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// The role of a child from its command line (NUL-separated arguments).
pub fn role_of(cmdline: &str) -> String {
    let args: Vec<&str> = cmdline.split('\0').filter(|a| !a.is_empty()).collect();
    let file_stem = |a: &str| {
        Path::new(a)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match args.get(1).copied() {
        Some("coordinator") => args
            .iter()
            .find(|a| a.ends_with(".toml"))
            .map(|a| file_stem(a).replace('-', " "))
            .unwrap_or_else(|| "replica".into()),
        Some("node") => args
            .iter()
            .find(|a| a.ends_with("node.toml"))
            .and_then(|a| Path::new(a).parent())
            .and_then(|d| d.file_name())
            .map(|d| format!("node {}", d.to_string_lossy()))
            .unwrap_or_else(|| "node".into()),
        Some("witness") => args
            .iter()
            .position(|a| *a == "--name")
            .and_then(|i| args.get(i + 1))
            .map(|n| format!("witness {n}"))
            .unwrap_or_else(|| "witness".into()),
        Some(other) => other.to_owned(),
        None => "child".into(),
    }
}

/// Received bytes of the loopback interface in a `/proc/net/dev` text (on loopback
/// every byte sent is received once).
pub fn parse_loopback(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim() == "lo")
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
}

fn read(path: &str) -> Result<String, UsageError> {
    std::fs::read_to_string(path).map_err(|source| UsageError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Clock ticks per second of /proc's CPU times.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// CPU seconds so far of this process and of each of its children, by role.
pub fn cpu_seconds() -> Result<CpuSeconds, UsageError> {
    let me = std::process::id();
    let per_tick = 1.0 / ticks_per_second();
    let mut out = CpuSeconds::new();
    let own = read("/proc/self/stat")?;
    let (_, ticks) = parse_stat(&own).ok_or_else(|| UsageError::Stat {
        path: "/proc/self/stat".into(),
    })?;
    out.insert(
        "bench (this process: writers, readers)".into(),
        ticks as f64 * per_tick,
    );
    let dir = std::fs::read_dir("/proc").map_err(|source| UsageError::Read {
        path: "/proc".into(),
        source,
    })?;
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // A process may exit between the listing and the read: skip it.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((ppid, ticks)) = parse_stat(&stat) else {
            continue;
        };
        if ppid != me {
            continue;
        }
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        *out.entry(role_of(&cmdline)).or_default() += ticks as f64 * per_tick;
    }
    Ok(out)
}

/// Bytes received over the loopback interface so far, by every process on the machine.
pub fn loopback_bytes() -> Result<u64, UsageError> {
    parse_loopback(&read("/proc/net/dev")?).ok_or(UsageError::NoLoopback)
}

/// Total length of the files under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The machine's counters at one instant of the run.
pub struct Snapshot {
    pub cpu: CpuSeconds,
    /// Bytes of each replica's data folder, by replica ("replica 1", ...).
    pub disk: BTreeMap<String, u64>,
    pub loopback: Option<u64>,
}

impl Snapshot {
    /// Reads the counters now; the replicas' data folders are `STATE/coordinators/cN`.
    pub fn take(state: &Path, replicas: usize) -> Result<Self, UsageError> {
        let disk = (1..=replicas)
            .map(|id| {
                let dir = state.join("coordinators").join(format!("c{id}"));
                (format!("replica {id}"), dir_bytes(&dir))
            })
            .collect();
        Ok(Self {
            cpu: cpu_seconds()?,
            disk,
            loopback: loopback_bytes().ok(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_spaces() {
        let text = "4242 (panel x) S 17 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 9 0";
        assert_eq!(parse_stat(text), Some((17, 300)));
    }

    #[test]
    fn roles_from_command_lines() {
        assert_eq!(
            role_of("/t/panel\0coordinator\0run\0--config\0/s/config/replica-2.toml\0"),
            "replica 2"
        );
        assert_eq!(
            role_of("/t/panel\0node\0run\0--config\0/s/nodes/bench-arb-03/node.toml\0"),
            "node bench-arb-03"
        );
    }

    #[test]
    fn loopback_line() {
        let text = "Inter-|   Receive\n face |bytes packets\n    lo: 123456 77 0 0 0 0 0 0 123456 77\n  eth0: 9 1 0 0 0 0 0 0 9 1\n";
        assert_eq!(parse_loopback(text), Some(123_456));
    }
}
