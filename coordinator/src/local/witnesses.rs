//! One witness per organisation of the local federation, each with its own key, so no
//! single organisation can publish another history of the record: `panel up` runs them as
//! processes (`panel witness run`), the bench inside its own process (its executable runs
//! replicas only).

use std::path::Path;

use panel_transport::pki;

use super::{LocalClusterError, Supervisor, free_port};

/// The log a witness of this federation follows, as the charter names it: a quorum of
/// replica keys, or the single shared key (`panel witness run --charter`, `panel up`).
pub fn logs_of(
    charter: &panel_transport::Charter,
) -> Result<Vec<panel_tlog::witness::KnownLog>, LocalClusterError> {
    let log = charter.log.as_ref().ok_or(LocalClusterError::NoLog)?;
    match charter.log_quorum() {
        Some(q) => Ok(vec![panel_witness::config::quorum_log(&log.origin, q)]),
        None => {
            panel_witness::config::known_logs(std::slice::from_ref(&log.vkey)).map_err(|source| {
                LocalClusterError::Witness {
                    org: "(charter)".to_owned(),
                    source,
                }
            })
        }
    }
}

/// Starts `witness run` for each organisation under `processes`: data in `data/ORG`,
/// output in `logs/witness-ORG.log`. Returns their URLs, in organisation order.
pub fn spawn(
    processes: &mut Supervisor,
    issued: &pki::Issued,
    data: &Path,
    logs: &Path,
) -> Result<Vec<String>, LocalClusterError> {
    logs_of(&issued.charter)?;
    let mut urls = Vec::new();
    for org in pki::LOCAL_ORGANISATIONS {
        let listen = format!("127.0.0.1:{}", free_port()?);
        let args = [
            "witness".to_owned(),
            "run".to_owned(),
            "--listen".to_owned(),
            listen.clone(),
            "--data".to_owned(),
            data.join(org).display().to_string(),
            "--key".to_owned(),
            issued.witness_key_path(org).display().to_string(),
            "--name".to_owned(),
            pki::witness_name(org),
            "--charter".to_owned(),
            issued.charter_path().display().to_string(),
        ];
        processes.spawn(
            &format!("witness {org}"),
            &args,
            &logs.join(format!("witness-{org}.log")),
        )?;
        urls.push(format!("http://{listen}"));
    }
    Ok(urls)
}

/// Serves each organisation's witness on this process's runtime, data in
/// `dir/witness-ORG`, until the runtime ends. Returns their URLs, in organisation order.
pub async fn serve_here(
    issued: &pki::Issued,
    dir: &Path,
) -> Result<Vec<String>, LocalClusterError> {
    let mut urls = Vec::new();
    for org in pki::LOCAL_ORGANISATIONS {
        let failed = |source| LocalClusterError::Witness {
            org: org.to_owned(),
            source,
        };
        let config = panel_witness::Config::from_files(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            dir.join(format!("witness-{org}")),
            &pki::witness_name(org),
            &issued.witness_key_path(org),
            logs_of(&issued.charter)?,
        )
        .map_err(failed)?;
        let server = panel_witness::Server::bind(config, panel_witness::SystemClock)
            .await
            .map_err(failed)?;
        let addr = server
            .local_addr()
            .map_err(|source| LocalClusterError::WitnessAddr {
                org: org.to_owned(),
                source,
            })?;
        urls.push(format!("http://{addr}"));
        tokio::spawn(server.run(std::future::pending()));
    }
    Ok(urls)
}
