//! `panel up`'s arbiter nodes: one process per [`ARBITERS`] entry, each with its own key,
//! config and simulated judge (declared noise, docs/JUDGES.md "Simulated"), and the
//! signed registration the charter admits it by.

use std::fs;
use std::path::Path;

use anyhow::Result;
use panel_coordinator::local::{Supervisor, free_port};
use panel_machine::Stance;
use panel_machine::command::ArbiterRegistration;
use panel_proto::SigningKey;
use panel_transport::pki;

use crate::output::say;
use crate::up::ArbiterSpec;

/// Starts every arbiter node; returns their registrations, signed by each arbiter and
/// endorsed by its organisation, for the caller to write once the panel is connected.
/// What one node judges with: its `[judge]` section, the lineage it declares, and a line
/// saying so.
pub struct NodeJudge {
    pub model_family: String,
    pub section: String,
    pub described: String,
}

/// The demo's simulated judge of `spec`.
pub fn simulated(spec: &ArbiterSpec) -> Result<NodeJudge> {
    Ok(NodeJudge {
        model_family: spec.model_family.into(),
        section: judge_section(spec),
        described: format!(
            "{}, simulated judge of accuracy {:.2}{}",
            spec.model_family,
            spec.noise.accuracy,
            if spec.noise.stance_bias > 1.0 {
                format!(" leaning hard to {}", spec.noise.leaning.unwrap_or("none"))
            } else {
                String::new()
            }
        ),
    })
}

pub fn start(
    cluster: &mut Supervisor,
    state: &Path,
    issued: &pki::Issued,
    addrs: &[String],
    specs: &[ArbiterSpec],
    judge_of: &dyn Fn(&ArbiterSpec) -> Result<NodeJudge>,
) -> Result<Vec<ArbiterRegistration>> {
    let fresh = |_: &ArbiterSpec| -> Result<SigningKey> {
        Ok(SigningKey::from_bytes(&panel_node::keyfile::random_32()?))
    };
    start_with_keys(cluster, state, issued, addrs, specs, judge_of, &fresh)
}

/// [`start`] with each arbiter's key made by `key_of` (`panel up --seed` derives them
/// from the seed, and an arbiter's key seeds its exam draw).
pub fn start_with_keys(
    cluster: &mut Supervisor,
    state: &Path,
    issued: &pki::Issued,
    addrs: &[String],
    specs: &[ArbiterSpec],
    judge_of: &dyn Fn(&ArbiterSpec) -> Result<NodeJudge>,
    key_of: &dyn Fn(&ArbiterSpec) -> Result<SigningKey>,
) -> Result<Vec<ArbiterRegistration>> {
    // Every node trusts the cluster's motion key, which the charter names (docs/WIRE.md
    // "Motion, layout v1").
    let motion_public = &issued.charter.motion_key;
    // Nodes also write their own reveals to the replicas (docs/coordinator/state-machine.md "The
    // commit-reveal round").
    let reveal_to = addrs
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut regs = Vec::new();
    for spec in specs {
        let judge = judge_of(spec)?;
        let dir = state.join("nodes").join(spec.id);
        fs::create_dir_all(&dir)?;
        let key = key_of(spec)?;
        panel_node::keyfile::write_key(&dir.join("arbiter.key"), &key, true)?;
        let port = free_port()?;
        let side = match spec.stance {
            Stance::A => "A",
            Stance::B => "B",
            Stance::None => "none",
        };
        let config = format!(
            "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\norganisation = \"{}\"\nmodel_family = \"{}\"\ncoordinator_keys = [\"{motion_public}\"]\ncoordinators = [{reveal_to}]\n\n[[stances]]\ndebate_id = \"deb_1\"\nside = \"{side}\"\ncredence = 0.7\n\n{}\n# The demo's sources are served on loopback; retrieval reads only public\n# addresses unless a host is listed (docs/JUDGES.md).\n[retrieval]\nallow_hosts = [\"127.0.0.1\"]\n\n[transport]\ntls = \"{}\"\ncharter = \"{}\"\n",
            spec.organisation,
            judge.model_family,
            judge.section,
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
            public_key: hex::encode(key.verifying_key().as_bytes()).into(),
            organisation: spec.organisation.into(),
            model_family: judge.model_family.clone(),
            stance: spec.stance,
            endpoint: format!("https://127.0.0.1:{port}"),
            attestation: None,
            lineage: None,
        };
        // The arbiter signs its registration (proof of possession) and its organisation
        // endorses it with its roster key: the charter refuses anything less.
        let roster = pki::read_seed_key(&issued.signing_key_path(spec.organisation))?;
        reg.attestation = Some(panel_machine::features::charter_rules::attest(
            &reg, &key, &roster,
        )?);
        regs.push(reg);
        say!(
            "started arbiter node {:<12} stance {side}, {}, {}, https://127.0.0.1:{port}",
            spec.id,
            spec.organisation,
            judge.described,
        );
    }
    Ok(regs)
}

/// The node's `[judge]` section: a simulated judge with the arbiter's declared noise.
pub(crate) fn judge_section(spec: &ArbiterSpec) -> String {
    let p = spec.profile();
    format!(
        "# A simulated arbiter (docs/JUDGES.md \"Simulated\"): it aims at the simulation's\n\
         # truth hint through declared noise; its rulings are labelled judge_kind = simulated.\n\
         [judge]\nkind = \"simulated\"\naccuracy = {}\nlineage = \"{}\"\nlineage_share = {}\n\
         position_bias = {}\nstance_bias = {}\n{}seed = {}\n",
        p.accuracy,
        p.lineage,
        p.lineage_share,
        p.position_bias,
        p.stance_bias,
        p.leaning
            .as_ref()
            .map_or(String::new(), |l| format!("leaning = \"{l}\"\n")),
        p.seed
    )
}
