//! `panel up`'s arbiter nodes: one process per [`ARBITERS`] entry, each with its own key,
//! config and scripted judge, and the signed registration the charter admits it by.

use std::fs;
use std::path::Path;

use anyhow::Result;
use panel_coordinator::acceptance::Stance;
use panel_coordinator::command::ArbiterRegistration;
use panel_coordinator::local::{Supervisor, free_port};
use panel_transport::pki;

use crate::output::say;
use crate::up::ARBITERS;

/// Starts every arbiter node; returns their registrations, signed by each arbiter and
/// endorsed by its organisation, for the caller to write once the panel is connected.
pub fn start(
    cluster: &mut Supervisor,
    state: &Path,
    issued: &pki::Issued,
    addrs: &[String],
) -> Result<Vec<ArbiterRegistration>> {
    let profiles = state.join("profiles.toml");
    fs::write(
        &profiles,
        "# Scripted judges used by `panel up`: `calibrated` answers as the simulation hint says;\n# `leans-b` does too, unless a yes would favour side A, which it then refuses.\n[profiles.calibrated]\naccuracy = 1.0\nseed = 7\n\n[profiles.leans-b]\naccuracy = 1.0\nbias_side = \"B\"\nbias = 0.6\nseed = 11\n",
    )?;
    // Every node trusts the cluster's motion key, which the charter names (docs/WIRE.md
    // "Motion, layout v1").
    let motion_public = &issued.charter.motion_key;
    // Nodes also write their own reveals to the replicas (docs/COORDINATOR.md "The
    // commit-reveal round").
    let reveal_to = addrs
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut regs = Vec::new();
    for spec in &ARBITERS {
        let dir = state.join("nodes").join(spec.id);
        fs::create_dir_all(&dir)?;
        let key = panel_node::keyfile::keygen(&dir.join("arbiter.key"), true)?;
        let port = free_port()?;
        let side = match spec.stance {
            Stance::A => "A",
            Stance::B => "B",
            Stance::None => "none",
        };
        let config = format!(
            "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\norganisation = \"{}\"\nmodel_family = \"{}\"\ncoordinator_keys = [\"{motion_public}\"]\ncoordinators = [{reveal_to}]\n\n[[stances]]\ndebate_id = \"deb_1\"\nside = \"{side}\"\ncredence = 0.7\n\n[judge]\nkind = \"scripted\"\nprofiles = \"{}\"\nprofile = \"{}\"\n\n# The demo's sources are served on loopback; retrieval reads only public\n# addresses unless a host is listed (docs/JUDGES.md).\n[retrieval]\nallow_hosts = [\"127.0.0.1\"]\n\n[transport]\ntls = \"{}\"\ncharter = \"{}\"\n",
            spec.organisation,
            spec.model_family,
            profiles.display(),
            spec.profile,
            issued.dir(&pki::node_dir_name(spec.id)).display(),
            issued.charter_path().display()
        );
        fs::write(dir.join("node.toml"), config)?;
        let a: Vec<String> = ["node", "run", "--config"]
            .iter()
            .map(|s| s.to_string())
            .chain([dir.join("node.toml").display().to_string()])
            .collect();
        cluster.spawn(
            spec.id,
            &a,
            &state.join("logs").join(format!("{}.log", spec.id)),
        )?;
        let mut reg = ArbiterRegistration {
            arbiter_id: spec.id.into(),
            public_key: hex::encode(key.verifying_key().as_bytes()),
            organisation: spec.organisation.into(),
            model_family: spec.model_family.into(),
            stance: spec.stance,
            endpoint: format!("https://127.0.0.1:{port}"),
            attestation: None,
            lineage: None,
        };
        // The arbiter signs its registration (proof of possession) and its organisation
        // endorses it with its roster key: the charter refuses anything less.
        let roster = pki::read_seed_key(&issued.signing_key_path(spec.organisation))?;
        reg.attestation = Some(panel_coordinator::charter::attest(&reg, &key, &roster)?);
        regs.push(reg);
        say!(
            "started arbiter node {:<12} stance {side}, {}, {}, {}",
            spec.id,
            spec.organisation,
            spec.model_family,
            format_args!("https://127.0.0.1:{port}")
        );
    }
    Ok(regs)
}
