//! A local replica's config file (docs/coordinator/operations.md, "Configuration file"): what the
//! replica runs with, and what a user copies to a host of its own.

use std::path::{Path, PathBuf};

use panel_transport::pki;

use super::LocalClusterError;
use crate::config::{CheckpointsSection, KeysSection, ReplicaConfig, TlsSection};

/// Replica `id` of an issued local federation: listening on `listen`, its data in
/// `data_dir`, its own TLS identity, the charter, the federation's motion and log keys,
/// and `witnesses` for its checkpoints. The caller adds what its cluster is for.
pub fn chartered(
    id: u64,
    listen: &str,
    data_dir: PathBuf,
    issued: &pki::Issued,
    witnesses: &[String],
) -> Result<ReplicaConfig, LocalClusterError> {
    Ok(ReplicaConfig {
        id: Some(id),
        listen: Some(listen.parse().map_err(|source| LocalClusterError::Addr {
            addr: listen.to_owned(),
            source,
        })?),
        data_dir: Some(data_dir),
        tls: TlsSection {
            dir: Some(issued.dir(&pki::replica_dir_name(id))),
            charter: Some(issued.charter_path()),
            insecure_loopback: None,
        },
        keys: KeysSection {
            motion_key: Some(issued.motion_key_path()),
            next_motion_key: None,
            log_key: Some(issued.log_key_path(id)),
        },
        checkpoints: CheckpointsSection {
            witnesses: Some(witnesses.to_vec()),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Writes `config` as `dir/replica-ID.toml` under a header naming `starter` (who wrote
/// it, e.g. "`panel up`") and how to run it; returns the file's path.
pub fn write(
    dir: &Path,
    id: u64,
    config: &ReplicaConfig,
    starter: &str,
) -> Result<PathBuf, LocalClusterError> {
    std::fs::create_dir_all(dir).map_err(|source| LocalClusterError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(format!("replica-{id}.toml"));
    let text = format!(
        "# Replica {id} of {starter} (docs/coordinator/operations.md, \"Configuration file\").\n\
         # `panel coordinator run --config {}`; flags given override these keys.\n\n{}",
        path.display(),
        config.to_toml()
    );
    std::fs::write(&path, text).map_err(|source| LocalClusterError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_its_starter_and_reads_back() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let config = ReplicaConfig {
            id: Some(2),
            simulation: Some(true),
            ..Default::default()
        };
        let path = write(&dir.path().join("config"), 2, &config, "`panel up`").expect("write");
        assert_eq!(path, dir.path().join("config").join("replica-2.toml"));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with(
            "# Replica 2 of `panel up` (docs/coordinator/operations.md, \"Configuration file\").\n"
        ));
        assert_eq!(ReplicaConfig::load(&path).expect("parse"), config);
    }
}
