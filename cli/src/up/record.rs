//! The end of `panel up`: the record exported once its last checkpoint carries the
//! witnesses' cosignatures, verified offline against the policy and the charter the
//! way `panel verify` does (docs/WITNESS.md), and the JSON summary.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use crucible::document::Verdict;
use panel_machine::Bundle;
use panel_machine::Query;
use panel_machine::read::record;
use panel_machine::reply::Decided;
use panel_transport::pki;
use serde::Deserialize;

use crate::output::say;
use crate::up::Panel;

/// What the JSON summary reports besides the record.
pub struct Summary<'a> {
    pub state: &'a Path,
    pub debate_id: &'a str,
    pub verdicts: &'a [Verdict],
    pub runs: &'a [String],
    pub addrs: &'a [String],
    /// The run's `--seed`, given or picked.
    pub seed: u64,
}

/// Exports the record to `STATE/record.json` and verifies it; prints the summary as JSON
/// when `json` is set.
pub async fn export(
    panel: &Panel,
    issued: &pki::Issued,
    summary: &Summary<'_>,
    json: bool,
) -> Result<()> {
    let policy = panel_tlog::Policy::parse(&fs::read_to_string(issued.policy_path())?)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let bundle = loop {
        let b: Bundle = panel.coordinators.read_as(&Query::Export).await?;
        if record::check_policy(&b, &policy).is_ok() || Instant::now() > deadline {
            break b;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let path = summary.state.join("record.json");
    fs::write(&path, serde_json::to_vec_pretty(&bundle)?)?;
    let checked = record::check_charter(&bundle, &issued.charter)
        .and_then(|()| record::verify(&bundle))
        .and_then(|r| Ok((r, record::check_policy(&bundle, &policy)?)));
    let (r, w) = match checked {
        Ok(rw) => rw,
        Err(e) => bail!("the exported record does not verify: {e}"),
    };
    let scheduled = bundle
        .entries
        .iter()
        .filter(|e| {
            matches!(&e.reply, panel_machine::ItemReply::Applied(v)
                if Decided::deserialize(v).is_ok_and(|d| d.prior_check.is_some()))
        })
        .count();
    say!(
        "the prior-consistency check also ran by itself {scheduled} time(s) inside apply, every 8 decided motions (the debate's policy)"
    );
    crate::output::result!(
        "record exported to {} ({} entries, {} motions accepted, {} deadlocked, {} checkpoints)",
        path.display(),
        r.entries,
        r.motions_accepted,
        r.motions_deadlocked,
        r.checkpoints,
    );
    crate::output::result!("{}", crate::up::seed::replay_line(summary.seed));
    say!(
        "its last checkpoint is signed by the log {} and cosigned by the witnesses of {}; it verifies offline against the policy and the charter: `panel verify {} --policy {} --charter {}`",
        w.origin,
        w.witnesses.join(" and "),
        path.display(),
        issued.policy_path().display(),
        issued.charter_path().display()
    );
    if json {
        let summary = serde_json::json!({
            "state": summary.state,
            "debate": summary.debate_id,
            "verdicts": summary.verdicts,
            "record": path,
            "policy": issued.policy_path(),
            "charter": issued.charter_path(),
            "verification": r,
            "log": w,
            "runs": summary.runs,
            "coordinators": summary.addrs,
            "seed": summary.seed,
        });
        crate::client::cluster::print_json(&summary)?;
    }
    Ok(())
}
