//! `panel up`: a whole local panel in one command. Three coordinator replicas and four
//! arbiter nodes start as separate processes on loopback; the arbiters take the
//! calibration exam and are admitted; the paper's worked verdict (section 4) is played
//! through the panel, motion by motion; B1's source is then retrieved from a local file
//! server and confirmed at T1, and the revised verdict is issued. The record is exported
//! and verified offline.

pub(crate) mod cluster;
mod conveners;
mod dissent;
pub(crate) mod example;
pub(crate) mod exams;
mod judges;
mod local;
pub(crate) mod nodes;
mod procedures;
mod record;
mod seed;
mod source_server;
pub(crate) mod stances;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use crucible::contribution::Contribution;
use crucible::document::Debate;
use crucible::scenario::worked_example;
use panel_coordinator::client::failover::{WriteOutcome, decode_reply};
use panel_coordinator::local::Supervisor;
use panel_machine::Stance;
use panel_machine::debates::SubmissionHints;
use panel_machine::reply::{CheckPriorsReply, ContributeReply};
use panel_machine::{ClientCommand, ContributionSubmission, Query};
use panel_machine::{Motion, MotionStatus};
use panel_transport::pki;
use serde_json::Value;

use self::seed::DemoSeed;
use crate::client::addr::ClusterArgs;
use crate::client::cluster::Cluster as Coordinators;
use crate::output::OutputArgs;
use crate::output::say;
use crate::rulings::ruling_line;

#[derive(clap::Args)]
pub struct Args {
    /// State folder: data directories, logs, keys, sources and the exported record.
    #[arg(long, default_value = ".panel")]
    state: PathBuf,
    /// Replace the state folder when it already holds an earlier run (its record, keys
    /// and logs are deleted); without it, `up` refuses to touch an earlier run.
    #[arg(long)]
    fresh: bool,
    /// Leave the cluster running for the CLI after the worked example (Ctrl-C stops it).
    #[arg(long)]
    keep: bool,
    /// The other seeds' procedures to run after the worked example (docs/PROCEDURES.md).
    #[arg(long, value_enum, default_value = "all")]
    procedure: procedures::Which,
    #[command(flatten)]
    output: OutputArgs,
    /// Who judges. `simulated` (the default): eight simulated arbiters with declared noise,
    /// labelled simulated on every ruling, in seconds. `local`: the worked example's four
    /// arbiters are real models in their nodes' processes (Gemma 3 270M and Qwen2.5 Coder
    /// 0.5B, each on both declared priors), scored by the exam from their own answers; needs
    /// `--features local-judge` and `scripts/models.sh`, and takes minutes.
    #[arg(long, value_enum, default_value = "simulated")]
    judge: JudgeChoice,
    /// Folder of the model files for `--judge local` (default: $PANEL_MODELS, else
    /// ~/.cache/crucible-panel/models).
    #[arg(long)]
    models: Option<PathBuf>,
    /// The exam's admission bar, written into the federation's charter (`exam.bar`), which
    /// every replica adopts as the record's first entry: `skill` (the default: the
    /// calibration bars) or `attendance` (admitted for answering the draw, whatever the
    /// scores; the record says so). This local federation is always a practice group: its
    /// exam is the shipped pool, whose answers are public.
    #[arg(long, value_enum, default_value = "skill")]
    exam_bar: ExamBarChoice,
    /// Derive every key the demo makes (arbiters', whose keys seed their exam draws,
    /// contributors', conveners', procedure roles') and the federation's Ed25519 keys
    /// (roster, witness, log and motion keys; the replicas' beacon keys follow from the
    /// log keys) from this number; without it one is picked and printed. Panels are drawn
    /// by the replicas' beacon over what each question asks (docs/SECURITY.md "The
    /// beacon"), so a second run with the same seed seats the same panels and reaches the
    /// same outcomes; certificates, ports and timestamps still differ, and no draw reads
    /// them.
    /// Simulated judges only.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
}

/// `panel up --exam-bar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExamBarChoice {
    Skill,
    Attendance,
}

impl ExamBarChoice {
    pub(crate) fn bar(self) -> panel_federation::ExamBar {
        match self {
            ExamBarChoice::Skill => panel_federation::ExamBar::Skill,
            ExamBarChoice::Attendance => panel_federation::ExamBar::Attendance,
        }
    }
}

/// `panel up --judge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum JudgeChoice {
    Simulated,
    Local,
}

/// One arbiter node of the local panel.
pub(crate) struct ArbiterSpec {
    pub(crate) id: &'static str,
    pub(crate) organisation: &'static str,
    /// The declared lineage (registered model family), which its simulated judge's
    /// shared error follows.
    pub(crate) model_family: &'static str,
    pub(crate) stance: Stance,
    /// Its simulated judge's declared noise (docs/JUDGES.md "Simulated").
    pub(crate) noise: Noise,
}

/// A demo arbiter's simulated judge: the settings of its `[judge] kind = "simulated"`.
pub(crate) struct Noise {
    /// Probability of a right ruling without bias (skill = Φ⁻¹(accuracy)).
    pub(crate) accuracy: f64,
    /// Pull toward the first of two listed items.
    pub(crate) position_bias: f64,
    /// Pull toward `leaning`'s side on motions where a yes favours a side.
    pub(crate) stance_bias: f64,
    pub(crate) leaning: Option<&'static str>,
    pub(crate) seed: u64,
}

/// Share of every demo arbiter's error variance its lineage has in common.
pub(crate) const LINEAGE_SHARE: f64 = 0.3;

impl ArbiterSpec {
    /// The profile its node's simulated judge runs with.
    pub(crate) fn profile(&self) -> panel_node::judge::simulated::SimulatedProfile {
        let n = &self.noise;
        panel_node::judge::simulated::SimulatedProfile {
            accuracy: n.accuracy,
            confidence: 1.0,
            lineage: self.model_family.into(),
            lineage_share: LINEAGE_SHARE,
            position_bias: n.position_bias,
            stance_bias: n.stance_bias,
            leaning: n.leaning.map(str::to_owned),
            seed: n.seed,
        }
    }
}

const fn arbiter(
    id: &'static str,
    organisation: &'static str,
    model_family: &'static str,
    stance: Stance,
    noise: Noise,
) -> ArbiterSpec {
    ArbiterSpec {
        id,
        organisation,
        model_family,
        stance,
        noise,
    }
}

/// An honest simulated judge: a slight lean to its own stance and to the first item.
const fn honest(accuracy: f64, leaning: &'static str, seed: u64) -> Noise {
    Noise {
        accuracy,
        position_bias: 0.05,
        stance_bias: 0.1,
        leaning: Some(leaning),
        seed,
    }
}

/// The worked example's four arbiters (the first four, who alone declare stances for its
/// debate), then the four more the contested question needs (`dissent`): seven honest
/// simulated judges of accuracy 0.92 to 0.97 in three lineages, and `arb-north-p`, whose
/// judge leans to side B far more than any evidence moves it. The seeds are chosen so
/// the story holds (tests in `judges`); every ruling still comes from the noisy
/// judgement.
pub(crate) const ARBITERS: [ArbiterSpec; 8] = [
    arbiter(
        "arb-north-a",
        "northwind",
        "sim-lineage-x",
        Stance::A,
        honest(0.95, "A", 44),
    ),
    arbiter(
        "arb-south-a",
        "southbank",
        "sim-lineage-y",
        Stance::A,
        honest(0.93, "A", 2554),
    ),
    arbiter(
        "arb-north-b",
        "northwind",
        "sim-lineage-y",
        Stance::B,
        honest(0.96, "B", 29),
    ),
    arbiter(
        "arb-south-b",
        "southbank",
        "sim-lineage-x",
        Stance::B,
        honest(0.94, "B", 470),
    ),
    arbiter(
        "arb-north-p",
        "northwind",
        "sim-lineage-z",
        Stance::B,
        Noise {
            accuracy: 0.94,
            position_bias: 0.0,
            stance_bias: 4.0,
            leaning: Some("B"),
            seed: 2365,
        },
    ),
    arbiter(
        "arb-north-c",
        "northwind",
        "sim-lineage-x",
        Stance::A,
        honest(0.95, "A", 387),
    ),
    arbiter(
        "arb-south-c",
        "southbank",
        "sim-lineage-y",
        Stance::A,
        honest(0.92, "A", 28945),
    ),
    arbiter(
        "arb-south-d",
        "southbank",
        "sim-lineage-x",
        Stance::B,
        honest(0.97, "B", 59),
    ),
];

/// How many of [`ARBITERS`] judge the worked example.
pub(crate) const WORKED_EXAMPLE_ARBITERS: usize = 4;

pub fn run(args: Args) -> Result<ExitCode> {
    crate::output::set_json(args.output.json);
    let rt = tokio::runtime::Runtime::new()?;
    // Every process of the panel: stopped when `panel up` ends, however it ends.
    let mut cluster = Supervisor::new(std::env::current_exe()?);
    let outcome = rt.block_on(async {
        // SIGTERM (kill, service managers, test harnesses) stops the children like Ctrl-C;
        // without this the replicas and nodes would outlive `panel up`.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = up(&args, &mut cluster) => r,
            _ = tokio::signal::ctrl_c() => {
                say!("\ninterrupted: stopping every process");
                Ok(ExitCode::from(130))
            }
            _ = term.recv() => {
                say!("\nterminated: stopping every process");
                Ok(ExitCode::from(143))
            }
        }
    });
    cluster.stop();
    say!("all panel processes stopped");
    outcome
}

/// The coordinators as `panel up` talks to them: the CLI's client, refusals as errors.
pub(crate) struct Panel {
    pub(crate) coordinators: Coordinators,
    /// How long `settle` waits for a debate's open motions: a minute for simulated
    /// judges, longer where real models rule (`with_patience`).
    pub(crate) patience: Duration,
}

impl Panel {
    /// The CLI's client of the local replicas, over the federation's client certificate.
    pub(crate) fn connect(state: &Path, addrs: &[String], issued: &pki::Issued) -> Result<Panel> {
        Ok(Panel {
            coordinators: Coordinators::connect(&ClusterArgs {
                addr: addrs.to_vec(),
                state: state.to_path_buf(),
                tls: Some(issued.dir(pki::LOCAL_CLIENT)),
            })?,
            patience: Duration::from_secs(60),
        })
    }

    /// The same client, waiting `patience` for a debate's motions to settle.
    pub(crate) fn with_patience(self, patience: Duration) -> Panel {
        Panel { patience, ..self }
    }

    pub(crate) async fn write(&mut self, command: ClientCommand) -> Result<Value> {
        match self.coordinators.write(&command).await? {
            WriteOutcome::Applied(v) => Ok(v),
            WriteOutcome::Refused { code, message } => {
                bail!(
                    "the coordinator refused {} ({code}): {message}",
                    command.kind()
                )
            }
        }
    }

    async fn read(&self, q: &Query) -> Result<Value> {
        self.coordinators.read(q).await
    }

    pub(crate) async fn debate(&self, id: &str) -> Result<(Debate, Value)> {
        crate::user::debate::fetch(&self.coordinators, id).await
    }
}

/// The demo's plot, one phase a line: the federation comes up, its arbiters pass the
/// exam, the paper's worked example is played through the panel, then the contested
/// question and the other procedures; the record is exported and verified offline.
async fn up(args: &Args, cluster: &mut Supervisor) -> Result<ExitCode> {
    if args.judge == JudgeChoice::Local {
        if let Some(seed) = args.seed {
            bail!(
                "--seed {seed} fixes the simulated demo's choices; --judge local makes its keys \
                 fresh and is not seeded: drop --seed, or drop --judge local"
            );
        }
        return local::run(
            &args.state,
            args.fresh,
            args.models.as_deref(),
            args.exam_bar.bar(),
            cluster,
        )
        .await;
    }
    let seed = DemoSeed::new(args.seed)?;
    say!(
        "seed {} ({}): the demo's keys derive from it",
        seed.value(),
        if args.seed.is_some() {
            "given"
        } else {
            "picked; --seed replays it"
        }
    );
    let state = cluster::fresh_state(&args.state, args.fresh)?;
    let (issued, operator) = cluster::certificates(
        &state,
        args.exam_bar.bar(),
        Some(seed.key("pki").to_bytes()),
    )?;
    let sources = example::serve_sources(&state).await?;
    let addrs = cluster::start_coordinators(
        cluster,
        &state,
        &issued,
        operator,
        cluster::Judging::SIMULATED,
    )
    .await?;
    let registrations = nodes::start_with_keys(
        cluster,
        &state,
        &issued,
        &addrs,
        &ARBITERS,
        &nodes::simulated,
        &|spec| Ok(seed.key(&format!("arbiter/{}", spec.id))),
    )?;
    let mut panel = Panel::connect(&state, &addrs, &issued)?;
    for r in registrations {
        panel.write(ClientCommand::RegisterArbiter(r)).await?;
    }
    let names = exams::wait_for_admission(&panel, &state).await?;
    // Registered before anything else runs, so the CLI can start signed runs against a
    // kept cluster as soon as cluster.json names its convener.
    let convener = conveners::register(&mut panel, &issued, &state, &seed).await?;

    let scenario = worked_example(&sources.base_url);
    let debate_id = example::open_debate(&mut panel, &state, &scenario).await?;
    let contributors =
        example::register_contributors_with(&mut panel, &issued, &scenario, &|author| {
            Ok(seed.key(&format!("contributor/{author}")))
        })
        .await?;
    let doc = example::play_live(
        &mut panel,
        &state,
        &scenario,
        &debate_id,
        &contributors,
        &names,
    )
    .await?;
    check_priors(&mut panel).await?;

    let author = contributors.first()?;
    dissent::run(&mut panel, &state, &author, &names)
        .await?
        .say();
    let runs = procedures::run(&mut panel.coordinators, args.procedure, &convener, &seed).await?;
    if !runs.is_empty() {
        say!(
            "\n{} procedure run(s) on the record: {}; `panel runs` lists them",
            runs.len(),
            runs.join(", ")
        );
    }

    let summary = record::Summary {
        state: &state,
        debate_id: &debate_id,
        verdicts: &doc.verdicts,
        runs: &runs,
        addrs: &addrs,
        seed: seed.value(),
    };
    record::export(&panel, &issued, &summary, args.output.json).await?;
    if args.keep {
        keep_running(&state, &addrs, &debate_id).await?;
    }
    sources.abort();
    Ok(ExitCode::SUCCESS)
}

/// Declared priors are claims: measure them against the ruling history.
async fn check_priors(panel: &mut Panel) -> Result<()> {
    let checked = panel.write(ClientCommand::CheckPriors).await?;
    let flagged = decode_reply::<CheckPriorsReply>("the prior-consistency check", checked)?
        .flagged
        .len();
    say!(
        "prior-consistency check over the ruling history: {flagged} arbiter(s) flagged as ruling with the other camp"
    );
    Ok(())
}

/// `--keep`: the cluster stays up for the CLI until Ctrl-C.
async fn keep_running(state: &Path, addrs: &[String], debate_id: &str) -> Result<()> {
    say!(
        "\ncluster left running (--keep): coordinators at {}",
        addrs.join(",")
    );
    say!(
        "try: panel debate show {debate_id} --state {}   (addresses in {}; Ctrl-C stops everything)",
        state.display(),
        state.join(crate::client::addr::FILE).display()
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}

/// A contributor of the demo: its name and the key its registration bound to it.
pub(crate) struct Contributor<'a> {
    pub(crate) name: &'a str,
    pub(crate) key: Option<&'a panel_proto::SigningKey>,
}

/// Submits one contribution, signed by its author's key (the charter refuses unsigned
/// writes under a registered name).
pub(crate) async fn submit(
    panel: &mut Panel,
    debate_id: &str,
    author: &Contributor<'_>,
    side: &str,
    contribution: Contribution,
    hints: SubmissionHints,
) -> Result<ContributeReply> {
    let mut sub = ContributionSubmission {
        debate_id: debate_id.to_owned(),
        author: author.name.to_owned(),
        side: side.to_owned(),
        model_family: None,
        contribution,
        hints,
        signature: None,
        random_sample: false,
    };
    if let Some(key) = author.key {
        let (client_id, request_id) = panel.coordinators.next_ids();
        sub.signature = Some(panel_machine::authorship::sign(
            key, &sub, &client_id, request_id,
        )?);
    }
    let v = panel.write(ClientCommand::Contribute(sub)).await?;
    Ok(decode_reply("the contribution", v)?)
}

/// Waits until the debate has no open motion, printing each decided motion once.
pub(crate) async fn settle(
    panel: &Panel,
    debate_id: &str,
    names: &BTreeMap<String, (String, String)>,
    printed: &mut BTreeSet<String>,
    phase: &mut String,
) -> Result<()> {
    let start = Instant::now();
    loop {
        let (doc, rec) = panel.debate(debate_id).await?;
        print_new_motions(panel, debate_id, names, printed).await?;
        if doc.phase != *phase {
            say!("  -- phase: {} --", doc.phase);
            *phase = doc.phase.clone();
        }
        let open = rec["open"].as_object().map_or(0, |m| m.len());
        if open == 0 {
            return Ok(());
        }
        if start.elapsed() > panel.patience {
            bail!(
                "{open} motion(s) still open after {} s; `panel motion list --debate {debate_id}` shows them",
                panel.patience.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn print_new_motions(
    panel: &Panel,
    debate_id: &str,
    names: &BTreeMap<String, (String, String)>,
    printed: &mut BTreeSet<String>,
) -> Result<()> {
    let v = panel
        .read(&Query::DebateMotions {
            debate_id: debate_id.into(),
        })
        .await?;
    /// The `DebateMotions` reply, decoded once.
    #[derive(serde::Deserialize)]
    struct Motions {
        motions: Vec<Motion>,
    }
    let Motions { motions } = serde_json::from_value(v)?;
    for m in motions {
        let MotionStatus::Decided(outcome) = &m.status else {
            continue;
        };
        if !printed.insert(m.spec.motion_id.clone()) {
            continue;
        }
        say!(
            "  motion {}: {} -> {outcome}",
            m.spec.motion_id,
            crate::user::motion::question_line(&m.spec)
        );
        for note in panel_machine::features::motion_history::one_lineage_support(&m) {
            say!("      {note}");
        }
        let mut by_stance: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &m.rulings {
            if let Some((stance, arb, val)) = ruling_line(r, names, &m.seats) {
                by_stance
                    .entry(stance)
                    .or_default()
                    .push(format!("{arb}: {val}"));
            }
        }
        for (stance, rs) in by_stance {
            say!("      stance {stance}: {}", rs.join("; "));
        }
    }
    Ok(())
}
