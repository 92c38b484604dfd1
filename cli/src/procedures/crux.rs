//! `panel crux`: a Crux decision on the panel (docs/CRUX.md). `run` gets one position per
//! side from the advocates' adapters (in parallel, each given only the pack and its side,
//! one pass) or from positions written elsewhere, starts the run (the deterministic
//! checks run in apply and refuse with the rule and the JSON path), and waits while the
//! panel names, converges on and rules on the crux; `show` prints the decision aid;
//! `eval` runs the suite of named mutations.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use panel_node::advocate::{AdvocateConfig, AdvocateTask};
use panel_procedures::RunStart;
use panel_procedures::crux::{self, Advocate, CruxStart, EvidencePack, Position, Side};
use serde::Deserialize;
use serde_json::json;

use crate::client::cluster::{print_json, runtime};
use crate::output::OutputArgs;
use crate::procedures::{self, Launch, PanelArgs, Scripted, ShowArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: CruxCmd,
}

#[derive(clap::Subcommand)]
enum CruxCmd {
    /// Run one Crux decision on the cluster and print the decision aid.
    Run(Box<RunArgs>),
    /// Print a run's decision aid: the accepted crux, what would resolve it, the
    /// verdict-warranted answer by stance, the dissent.
    Show(ShowArgs),
    /// Run the eval: named mutations of a baseline debate through the deterministic
    /// layer and a scripted panel; reports blocked, caught and false positives.
    Eval {
        #[command(flatten)]
        output: OutputArgs,
        /// Live mode (documented, never run in CI): put every case that passes the
        /// deterministic layer to a real model endpoint (OpenAI-compatible base URL) as the
        /// mediator, and report what it names and whether its reports pass the gate.
        #[arg(long, requires = "live_model")]
        live_url: Option<String>,
        /// The model to ask in live mode.
        #[arg(long)]
        live_model: Option<String>,
        /// Environment variable holding the endpoint's API key (never a flag).
        #[arg(long)]
        api_key_env: Option<String>,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// A whole start document (docs/schemas/crux/crux-start.schema.json); replaces
    /// --pack, --decision, --positions and --advocates.
    #[arg(long, conflicts_with_all = ["pack", "decision", "positions", "advocates"])]
    start: Option<PathBuf>,
    /// The evidence pack (docs/schemas/crux/evidence-pack.schema.json).
    #[arg(long, requires = "decision")]
    pack: Option<PathBuf>,
    /// The decision, phrased as a question.
    #[arg(long)]
    decision: Option<String>,
    /// Both positions, written elsewhere: a JSON array of two positions plus the
    /// advocates who wrote them ({"positions": [...], "advocates": [...]}).
    #[arg(long, conflicts_with = "advocates")]
    positions: Option<PathBuf>,
    /// The two advocates' adapters and identities (TOML: [optimist] and [pessimist], each
    /// with model, provider, family and an [*.adapter] table as for judges).
    #[arg(long)]
    advocates: Option<PathBuf>,
    /// Words each position may use.
    #[arg(long, default_value_t = 600)]
    word_budget: u32,
    #[command(flatten)]
    panel: PanelArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        CruxCmd::Run(a) => run_one(*a),
        CruxCmd::Show(a) => procedures::show(&a),
        CruxCmd::Eval {
            output: OutputArgs { json },
            live_url: Some(url),
            live_model,
            api_key_env,
        } => crate::procedures::crux_live::run(
            &url,
            live_model.as_deref().unwrap_or_default(),
            api_key_env.as_deref(),
            json,
        ),
        CruxCmd::Eval {
            output: OutputArgs { json },
            ..
        } => {
            let report = crux::eval::run_eval();
            if json {
                print_json(&serde_json::to_value(&report)?)?;
            } else {
                println!("{}", report.to_markdown());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_one(a: RunArgs) -> Result<ExitCode> {
    let start = match &a.start {
        Some(path) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            crux::decode_start(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))?
        }
        None => runtime()?.block_on(assemble(&a))?,
    };
    let launch = Launch {
        simulation: start.simulation.is_some(),
        start: RunStart::Crux(start),
        retry_of: None,
        default_seats: 4,
    };
    procedures::run_and_print(&a.panel, launch, &mut Scripted(Default::default()))
}

/// Positions written elsewhere, with who wrote them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrittenPositions {
    positions: Vec<Position>,
    advocates: Vec<Advocate>,
}

/// One advocate of `advocates.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdvocateEntry {
    model: String,
    #[serde(default)]
    provider: String,
    family: String,
    adapter: AdvocateConfig,
}

/// The start document from a pack and either written positions or the advocates.
async fn assemble(a: &RunArgs) -> Result<CruxStart> {
    let pack_path = a
        .pack
        .as_ref()
        .ok_or_else(|| anyhow!("give --start FILE, or --pack FILE with --decision"))?;
    let bytes =
        std::fs::read(pack_path).with_context(|| format!("reading {}", pack_path.display()))?;
    let pack: EvidencePack = panel_procedures::decode("evidence pack", &bytes)
        .map_err(|e| anyhow!("{}: {e}", pack_path.display()))?;
    let decision = a.decision.clone().unwrap_or_default();
    let (positions, advocates) = match (&a.positions, &a.advocates) {
        (Some(p), _) => {
            let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            let w: WrittenPositions = panel_procedures::decode("positions", &bytes)
                .map_err(|e| anyhow!("{}: {e}", p.display()))?;
            (w.positions, w.advocates)
        }
        (None, Some(t)) => ask_advocates(t, &decision, &pack, a.word_budget).await?,
        (None, None) => {
            return Err(anyhow!(
                "give the positions: --positions FILE (written elsewhere) or --advocates FILE \
                 (adapters to ask)"
            ));
        }
    };
    Ok(CruxStart {
        decision,
        pack,
        positions,
        word_budget: a.word_budget,
        advocates,
        simulation: None,
    })
}

/// Asks both advocates at once, each with only the pack and its side; one pass each.
async fn ask_advocates(
    toml_path: &PathBuf,
    decision: &str,
    pack: &EvidencePack,
    word_budget: u32,
) -> Result<(Vec<Position>, Vec<Advocate>)> {
    let text = std::fs::read_to_string(toml_path)
        .with_context(|| format!("reading {}", toml_path.display()))?;
    let mut entries: BTreeMap<String, AdvocateEntry> =
        toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", toml_path.display()))?;
    let take = |side: Side, entries: &mut BTreeMap<String, AdvocateEntry>| {
        entries.remove(side.name()).ok_or_else(|| {
            anyhow!(
                "{} names no [{}] advocate; add one with model, family and an adapter",
                toml_path.display(),
                side.name()
            )
        })
    };
    let opt = take(Side::Optimist, &mut entries)?;
    let pes = take(Side::Pessimist, &mut entries)?;
    let (o, p) = tokio::join!(
        write_position(&opt, Side::Optimist, decision, pack, word_budget),
        write_position(&pes, Side::Pessimist, decision, pack, word_budget)
    );
    let advocates = [(Side::Optimist, &opt), (Side::Pessimist, &pes)]
        .into_iter()
        .map(|(side, e)| Advocate {
            side,
            model: e.model.clone(),
            provider: e.provider.clone(),
            family: e.family.clone(),
        })
        .collect();
    Ok((vec![o?, p?], advocates))
}

async fn write_position(
    e: &AdvocateEntry,
    side: Side,
    decision: &str,
    pack: &EvidencePack,
    word_budget: u32,
) -> Result<Position> {
    let task = AdvocateTask {
        role: side.name().into(),
        instructions: format!(
            "Build the strongest {} case on the decision from the evidence pack only, in at most \
             {word_budget} words. Every claim cites pack items by id with a verbatim quoted span, \
             labels its inference (direct_read, inference, extrapolation) and its confidence. Set \
             pack_hash to {}.",
            side.name(),
            pack.content_hash()
        ),
        input: json!({ "decision": decision, "side": side, "pack": pack, "word_budget": word_budget }),
        schema: serde_json::from_str(POSITION_SCHEMA)?,
    };
    let v = e
        .adapter
        .write(&task)
        .await
        .with_context(|| format!("the {} advocate ({})", side.name(), e.adapter.kind()))?;
    serde_json::from_value(v)
        .map_err(|err| anyhow!("the {} advocate's position: {err}", side.name()))
}

const POSITION_SCHEMA: &str = include_str!("../../../docs/schemas/crux/position.schema.json");
