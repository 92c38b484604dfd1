//! `panel up`'s arbiters declare their stance for each debate they judge: a signed claim
//! about that debate, not one label for all (docs/coordinator/acceptance.md "Declared priors"). Each
//! declaration is signed with the node's own key file, as `panel arbiter declare` does.

use std::path::Path;

use anyhow::{Context, Result, bail};
use panel_machine::ClientCommand;
use panel_machine::Stance;

use crate::client::cluster::Cluster;
use panel_coordinator::client::failover::WriteOutcome;

/// Declares `stance` for `debate_id` for each `(arbiter id, stance)`, signed by the key in
/// `STATE/nodes/ID/arbiter.key`, with the credence the node's config declares (0.7).
pub async fn declare(
    coordinators: &mut Cluster,
    state: &Path,
    debate_id: &str,
    stances: &[(&str, Stance)],
) -> Result<()> {
    for (id, stance) in stances {
        let path = state.join("nodes").join(id).join("arbiter.key");
        let key = panel_node::keyfile::load_key(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let d = panel_machine::features::declared_priors::sign(&key, id, debate_id, *stance, 700)
            .with_context(|| format!("signing {id}'s stance for {debate_id}"))?;
        if let WriteOutcome::Refused { code, message } =
            coordinators.write(&ClientCommand::DeclareStance(d)).await?
        {
            bail!("the coordinator refused {id}'s stance for {debate_id} ({code}): {message}");
        }
    }
    Ok(())
}
