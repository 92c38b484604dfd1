//! The other seeds' procedures in `panel up` (docs/PROCEDURES.md): after the Crucible
//! example, one Crux decision, one falsification run and one decision dossier go through
//! the same local panel of simulated arbiters with scripted fixture role inputs, and each
//! prints its report. The record says so: each run's convener is [`CONVENER`], and the
//! crux fixture's advocates are `scripted-fixture` models.

use crate::output::say;
use std::collections::VecDeque;
use std::time::Duration;

use anyhow::{Context, Result};
use panel_machine::Policy;
use panel_machine::RunRequest;
use panel_procedures::{RunInput, RunStart, crux, dossier, falsify};

use crate::client::cluster::Cluster;
use crate::procedures::{self, Scripted};
use crate::up::seed::DemoSeed;

/// Which procedures `panel up` runs after the worked example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    All,
    Crux,
    Falsify,
    Dossier,
    None,
}

impl Which {
    fn includes(self, one: Which) -> bool {
        self == Which::All || self == one
    }
}

/// Who convenes the demo's runs, as the record (and `panel dash`) names them: the role
/// inputs are fixture text written for a scripted run, not any advocate's or critic's work.
pub const CONVENER: &str = "panel-up (scripted fixture role inputs)";

/// How long one demo run may take on the local panel.
const PATIENCE: Duration = Duration::from_secs(180);

/// One demo: what to start, the inputs to submit in order, the panel's size and policy.
struct Demo {
    title: &'static str,
    start: RunStart,
    inputs: Vec<RunInput>,
    seats: usize,
    policy: Option<Policy>,
}

fn demos(which: Which) -> Result<Vec<Demo>> {
    let mut out = Vec::new();
    if which.includes(Which::Crux) {
        let start = crux::decode_start(crux::eval::BASELINE.as_bytes())
            .context("the crux demo's start document")?;
        out.push(Demo {
            title: "CRUX: build or buy, mediated by the panel",
            start: RunStart::Crux(start),
            inputs: Vec::new(),
            seats: 4,
            policy: Some(Policy::independent()),
        });
    }
    if which.includes(Which::Falsify) {
        out.push(Demo {
            title: "FALSIFICATION BUCKETS: three claims, the panel judges",
            start: RunStart::Falsify(falsify::demo_start()),
            inputs: falsify::demo_inputs()
                .into_iter()
                .map(RunInput::Falsify)
                .collect(),
            // Two seats, so an escalated attack round can still draw a fresh panel of two
            // from the four local arbiters; two seats from two organisations cannot meet
            // the rule that no organisation carries an outcome, so this demo keeps the
            // cross-stance default rule (docs/PROCEDURES.md).
            seats: 2,
            policy: None,
        });
    }
    if which.includes(Which::Dossier) {
        out.push(Demo {
            title: "DECISION DOSSIER: NOW / PREPARE / REJECT, quenched by the panel",
            start: RunStart::Dossier(dossier::demo_start()),
            inputs: dossier::demo_inputs()
                .into_iter()
                .map(RunInput::Dossier)
                .collect(),
            seats: 4,
            policy: Some(Policy::independent()),
        });
    }
    Ok(out)
}

/// Runs the chosen demos in turn, each role signing with its key derived from `seed`;
/// returns the run ids.
pub async fn run(
    c: &mut Cluster,
    which: Which,
    convener: &ed25519_dalek::SigningKey,
    seed: &DemoSeed,
) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for d in demos(which)? {
        say!("\n== {} ==", d.title);
        let keys = procedures::RoleKeys::derived(&d.start, |role| {
            seed.key(&format!("role/{}/{role}", d.title))
        });
        let id = procedures::start(
            c,
            RunRequest {
                start: d.start,
                seats: d.seats,
                min_per_stance: 1,
                policy: d.policy,
                simulation: true,
                convener: CONVENER.into(),
                retry_of: None,
                role_keys: keys.public(),
                signature: None,
            },
            Some(convener),
        )
        .await?;
        let view = procedures::drive(
            c,
            &id,
            &mut Scripted(VecDeque::from(d.inputs)),
            &keys,
            PATIENCE,
        )
        .await?;
        let motions = view.run.as_ref().map_or(0, |r| r.settled.len());
        say!("run {id}: {motions} panel questions settled");
        let report = procedures::explained_markdown(c, &view).await?;
        for line in report.lines() {
            say!("  {line}");
        }
        ids.push(id);
    }
    Ok(ids)
}
