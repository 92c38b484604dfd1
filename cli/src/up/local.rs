//! `panel up --judge local`: the same federation with real models as its arbiters. The
//! worked example's four arbiters run Gemma 3 270M and Qwen2.5 Coder 0.5B in their own
//! processes (`judge.kind = "local"`, docs/JUDGES.md "Local"), each lineage on both
//! declared priors and in both organisations. They sit the sealed exam and are scored from
//! their own answers; the worked example is played only by arbiters the exam admitted.
//! With the shipped small models the exam admits nobody (BENCHMARKS.md "Local judge"), and
//! the run says so and why instead of pretending.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use crucible::scenario::worked_example;
use panel_coordinator::local::Supervisor;
use panel_machine::ClientCommand;

use crate::output::say;
use crate::up::cluster::{self, Judging};
use crate::up::nodes::{self, NodeJudge};
use crate::up::{ARBITERS, ArbiterSpec, Panel, WORKED_EXAMPLE_ARBITERS};
use crate::up::{example, exams};

/// The two model files, by lineage, as `scripts/models.sh` names them.
const GEMMA: &str = "gemma3-270m-q4_k_m.gguf";
const QWEN: &str = "qwen2.5-coder-0.5b-instruct.gguf";

/// The worked example's arbiters with their models: each lineage on stance A and B, one in
/// each organisation.
fn model_of(spec: &ArbiterSpec) -> (&'static str, &'static str) {
    match spec.id {
        "arb-north-a" | "arb-south-b" => (GEMMA, "gemma"),
        _ => (QWEN, "qwen"),
    }
}

fn local_judge(spec: &ArbiterSpec, models: &Path) -> Result<NodeJudge> {
    let (file, lineage) = model_of(spec);
    let path = models.join(file);
    Ok(NodeJudge {
        model_family: lineage.into(),
        section: format!(
            "# A real model in this node's process (docs/JUDGES.md \"Local\"): it rules by its\n\
             # next-token probabilities in both presentation orders.\n\
             [judge]\nkind = \"local\"\nmodel = \"{}\"\nrationale_tokens = 24\nweights = \"auto\"\n",
            path.display()
        ),
        described: format!("{lineage}, local model {file}"),
    })
}

/// `panel up --judge local`.
pub async fn run(
    state: &Path,
    fresh: bool,
    models: Option<&Path>,
    bar: panel_federation::ExamBar,
    cluster: &mut Supervisor,
) -> Result<ExitCode> {
    if !panel_node::judge::LOCAL_JUDGE_BUILT {
        bail!(
            "this `panel` was built without the local judge: run \
             `cargo run --release --features local-judge -- up --judge local`"
        );
    }
    let models = panel_node::judge::models_dir(models);
    for file in [GEMMA, QWEN] {
        if !models.join(file).exists() {
            bail!(
                "{} is missing: fetch the models with `bash scripts/models.sh gemma qwen-0.5b` \
                 (or point --models at a folder that holds {GEMMA} and {QWEN})",
                models.join(file).display()
            );
        }
    }
    let state = cluster::fresh_state(state, fresh)?;
    let (issued, operator) = cluster::certificates(&state, bar, None)?;
    let addrs =
        cluster::start_coordinators(cluster, &state, &issued, operator, Judging::LOCAL).await?;
    say!(
        "windows sized for local models: {} s to commit a ruling, {} s for an exam sitting",
        Judging::LOCAL.commit_ms / 1000,
        Judging::LOCAL.exam_ms / 1000
    );
    let specs = &ARBITERS[..WORKED_EXAMPLE_ARBITERS];
    let judge = |spec: &ArbiterSpec| local_judge(spec, &models);
    let registrations = nodes::start(cluster, &state, &issued, &addrs, specs, &judge)?;
    // A motion can take its whole commit window and a reveal round with real models.
    let mut panel = Panel::connect(&state, &addrs, &issued)?
        .with_patience(Duration::from_millis(Judging::LOCAL.commit_ms) * 3);
    for r in registrations {
        panel.write(ClientCommand::RegisterArbiter(r)).await?;
    }
    say!(
        "\nCalibration exam in a sealed sitting: each model answers its own draw of {} items, \
         read from its next-token probabilities (minutes: the models run on this machine's \
         cores) ...",
        panel_machine::features::exam_sitting::DRAW.items()
            + panel_machine::features::exam_sitting::HELD_BACK_EXTRA
    );
    // The sitting is scored after its window closes and every seat has revealed.
    let patience = Duration::from_millis(Judging::LOCAL.exam_ms) + Duration::from_secs(600);
    let arbiters = exams::wait_scored(&panel, &state, specs.len(), patience).await?;
    exams::print_scores(&arbiters);
    let admitted = arbiters.iter().filter(|a| a.admitted).count();
    exams::print_refused_reliability(&arbiters);
    if admitted < specs.len() {
        say!(
            "\n{admitted} of {} model arbiters admitted. The exam scored each from its own \
             answers and refused the others: their forecasts carry no signal on the shipped \
             pool (see each refusal above; BENCHMARKS.md \"Local judge\" has their Brier, AUC \
             and reliability). The worked example needs all four seats and is not played: no \
             motion is decided by a judge the exam refused. Every exam ruling is on the record \
             (`panel verify`). To watch these models rule anyway, run again with \
             `--fresh --exam-bar attendance`: the charter then admits an arbiter for answering its \
             draw whatever its scores, and every record of that federation says so.",
            specs.len()
        );
        return Ok(ExitCode::from(2));
    }
    let names = crate::rulings::names_from_arbiters(&arbiters);
    let sources = example::serve_sources(&state).await?;
    let scenario = worked_example(&sources.base_url);
    let debate_id = example::open_debate(&mut panel, &state, &scenario).await?;
    let contributors = example::register_contributors(&mut panel, &issued, &scenario).await?;
    example::play_live(
        &mut panel,
        &state,
        &scenario,
        &debate_id,
        &contributors,
        &names,
    )
    .await?;
    sources.abort();
    Ok(ExitCode::SUCCESS)
}
