//! Who convenes `panel up`'s procedure runs (docs/PROCEDURES.md "Who may start a run"):
//! under the charter a run starts only from a registered contributor's signed request, so
//! `panel up` registers two names, each endorsed by the first organisation:
//! [`CONVENER`](crate::up::procedures::CONVENER) for its own scripted demo runs (key held
//! in memory), and [`OPERATOR`] for the CLI's runs against a kept cluster, whose key it
//! writes to the state folder and names in cluster.json.

use std::path::Path;

use anyhow::Result;
use panel_proto::SigningKey;
use panel_transport::pki;

use crate::up::Panel;
use crate::up::seed::DemoSeed;

/// The contributor the CLI starts runs as against a `panel up --keep` cluster.
pub const OPERATOR: &str = "operator";

/// Registers both conveners, their keys derived from `seed`; returns the demo runs' key.
pub async fn register(
    panel: &mut Panel,
    issued: &pki::Issued,
    state: &Path,
    seed: &DemoSeed,
) -> Result<SigningKey> {
    let organisation = pki::LOCAL_ORGANISATIONS[0];
    let demo = seed.key("convener/demo");
    crate::up::example::register_contributor(
        panel,
        issued,
        crate::up::procedures::CONVENER,
        organisation,
        &demo,
    )
    .await?;
    let path = state.join("operator.key");
    let operator = seed.key("convener/operator");
    panel_node::keyfile::write_key(&path, &operator, true)?;
    crate::up::example::register_contributor(panel, issued, OPERATOR, organisation, &operator)
        .await?;
    crate::client::addr::record_convener(
        state,
        crate::client::addr::ConvenerFile {
            name: OPERATOR.into(),
            key: path,
        },
    )?;
    Ok(demo)
}
