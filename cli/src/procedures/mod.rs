//! Running a procedure on the cluster, whatever the procedure (docs/PROCEDURES.md): start
//! the run, supply each role input the run awaits from the role's source, wait while the
//! panel answers its questions, and read the finished run back. `crux`, `falsify`
//! and `dossier` differ only in how they build the start document and the inputs.

pub(crate) mod crux;
mod crux_live;
pub(crate) mod dossier;
pub(crate) mod falsify;
mod role_adapters;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use ed25519_dalek::SigningKey;
use panel_coordinator::client::failover::WriteOutcome;
use panel_machine::read::query::MotionReply;
use panel_machine::runs::RunInputSubmission;
use panel_machine::{ClientCommand, Query};
use panel_machine::{RunRecord, RunRequest};
use panel_procedures::{Awaited, DeadlockCauses, PanelOutcome, RunInput, RunStart};
use serde::Deserialize;

use crate::client::cluster::Cluster;
use crate::output::OutputArgs;

/// The `Run` query's answer, decoded once.
#[derive(Debug, Deserialize)]
pub struct RunView {
    pub run: Option<RunRecord>,
    #[serde(default)]
    pub finished: bool,
    #[serde(default)]
    pub awaiting: Vec<Awaited>,
    #[serde(default)]
    pub markdown: String,
}

/// Where the inputs a run awaits come from: the advocates' adapters, or a scripted list.
pub trait RoleSource {
    /// The input for what the run awaits now; `None` when this source has nothing more
    /// (the run then waits for someone else to submit it).
    fn next(
        &mut self,
        run: &RunRecord,
        awaiting: &[Awaited],
    ) -> impl std::future::Future<Output = Result<Option<RunInput>>>;
}

/// A fixed list of inputs, submitted whenever the run awaits one: the first in list order
/// that the run's engine takes now. Claims of one run move at the panels' pace, so a
/// later claim's input may be due before an earlier one's. When none fits, the first is
/// sent, and the run's refusal says what it waits for instead.
pub struct Scripted(pub std::collections::VecDeque<RunInput>);

impl RoleSource for Scripted {
    async fn next(&mut self, run: &RunRecord, _: &[Awaited]) -> Result<Option<RunInput>> {
        let due = self
            .0
            .iter()
            .position(|input| run.run.clone().submit(input.clone()).is_ok())
            .unwrap_or(0);
        Ok(self.0.remove(due))
    }
}

/// The keys this client signs role inputs with, one per role the run will await
/// (docs/PROCEDURES.md, "Who may submit"): loaded from `--role-key ROLE=FILE`, or made
/// fresh for this run, in which case this client alone plays the role.
pub struct RoleKeys(BTreeMap<String, SigningKey>);

impl RoleKeys {
    /// Keys for every role of `start`; `given` are `ROLE=FILE` pairs.
    pub fn for_start(start: &RunStart, given: &[String]) -> Result<RoleKeys> {
        let roles = start.roles();
        let mut loaded = BTreeMap::new();
        for pair in given {
            let (role, path) = pair.split_once('=').ok_or_else(|| {
                anyhow!("--role-key {pair:?}: expected ROLE=FILE, e.g. critic=critic.key")
            })?;
            if !roles.iter().any(|r| r == role) {
                return Err(anyhow!(
                    "--role-key {pair:?}: this run has no role {role:?}; its roles are {}",
                    if roles.is_empty() {
                        "none".to_string()
                    } else {
                        roles.join(", ")
                    }
                ));
            }
            let key = panel_node::keyfile::load_key(std::path::Path::new(path))
                .with_context(|| format!("--role-key {pair:?}: cannot load the key file"))?;
            loaded.insert(role.to_string(), key);
        }
        for role in roles {
            if let std::collections::btree_map::Entry::Vacant(slot) = loaded.entry(role) {
                // A fresh key held only by this process: the role is played here or not at all.
                let seed = panel_node::keyfile::random_32().context("a fresh role key")?;
                slot.insert(SigningKey::from_bytes(&seed));
            }
        }
        Ok(RoleKeys(loaded))
    }

    /// Keys for every role of `start`, each made by `key_of(role)`: `panel up --seed`
    /// derives its roles' keys from the seed.
    pub fn derived(start: &RunStart, key_of: impl Fn(&str) -> SigningKey) -> RoleKeys {
        RoleKeys(
            start
                .roles()
                .into_iter()
                .map(|role| {
                    let key = key_of(&role);
                    (role, key)
                })
                .collect(),
        )
    }

    /// Role → hex public key, for the start request.
    pub fn public(&self) -> BTreeMap<String, panel_machine::rules::hex_bytes::PublicKeyBytes> {
        self.0
            .iter()
            .map(|(role, k)| {
                (
                    role.clone(),
                    panel_machine::rules::hex_bytes::PublicKeyBytes::new(
                        k.verifying_key().to_bytes(),
                    ),
                )
            })
            .collect()
    }
}

/// Why the cluster refused a run or one of its inputs.
#[derive(Debug, thiserror::Error)]
#[error("{what} refused ({code}): {message}")]
pub struct Refused {
    pub what: String,
    pub code: panel_machine::RefusalCode,
    pub message: String,
}

/// Starts a run, signed by `key` (the convener's) when given; its id.
pub async fn start(
    c: &mut Cluster,
    mut req: RunRequest,
    key: Option<&SigningKey>,
) -> Result<String> {
    if let Some(key) = key {
        let (client_id, request_id) = c.next_ids();
        req.signature = Some(
            panel_machine::features::run_convener::sign(key, &req, &client_id, request_id)
                .context("cannot sign the run's start")?,
        );
    }
    match c.write(&ClientCommand::StartRun(Box::new(req))).await? {
        WriteOutcome::Applied(v) => {
            let started: panel_machine::reply::StartRunReply =
                panel_coordinator::client::failover::decode_reply("the run's start", v)?;
            Ok(started.run_id)
        }
        WriteOutcome::Refused { code, message } => Err(Refused {
            what: "the run".into(),
            code,
            message,
        }
        .into()),
    }
}

pub async fn read(c: &Cluster, run_id: &str) -> Result<RunView> {
    let v = c
        .read(&Query::Run {
            run_id: run_id.to_owned(),
        })
        .await?;
    let view: RunView = serde_json::from_value(v)?;
    if view.run.is_none() {
        return Err(anyhow!(
            "run {run_id} does not exist on this cluster; `panel runs` lists the runs"
        ));
    }
    Ok(view)
}

/// Drives a run to its end: submits what `roles` supplies whenever the run awaits input,
/// and waits for the panel otherwise, for at most `patience`.
pub async fn drive(
    c: &mut Cluster,
    run_id: &str,
    roles: &mut impl RoleSource,
    keys: &RoleKeys,
    patience: Duration,
) -> Result<RunView> {
    let until = Instant::now() + patience;
    loop {
        let view = read(c, run_id).await?;
        if view.finished {
            return Ok(view);
        }
        let Some(run) = view.run.as_ref() else {
            return Ok(view);
        };
        if !view.awaiting.is_empty()
            && let Some(input) = roles.next(run, &view.awaiting).await?
        {
            submit(c, run_id, input, keys).await?;
            continue;
        }
        if Instant::now() > until {
            return Err(anyhow!(
                "run {run_id} did not finish within {}s (waiting for: {}); `panel runs` shows \
                 where it stands",
                patience.as_secs(),
                waiting_for(&view)
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn submit(c: &mut Cluster, run_id: &str, input: RunInput, keys: &RoleKeys) -> Result<()> {
    let role = input.role().unwrap_or_default();
    let signature = match keys.0.get(&role) {
        Some(key) => {
            let (client_id, request_id) = c.next_ids();
            Some(panel_machine::features::run_roles::sign(
                key, run_id, &input, &client_id, request_id,
            )?)
        }
        None => None,
    };
    let sub = RunInputSubmission {
        run_id: run_id.to_owned(),
        input,
        signature,
    };
    match c
        .write(&ClientCommand::SubmitRunInput(Box::new(sub)))
        .await?
    {
        WriteOutcome::Applied(_) => Ok(()),
        WriteOutcome::Refused { code, message } => Err(Refused {
            what: format!("an input to {run_id}"),
            code,
            message,
        }
        .into()),
    }
}

fn waiting_for(view: &RunView) -> String {
    if !view.awaiting.is_empty() {
        return view
            .awaiting
            .iter()
            .map(|a| format!("{}: {}", a.role, a.what))
            .collect::<Vec<_>>()
            .join("; ");
    }
    match &view.run {
        Some(r) if !r.open.is_empty() => format!(
            "the panel on {}",
            r.open.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
        _ => "the panel (no question could be drawn yet: too few eligible arbiters?)".into(),
    }
}

/// Why each deadlocked question of `run` deadlocked, read from the record of the motion
/// that settled it: the acceptance conditions it failed, or that the procedure refused
/// the panel's answer until the machine took the question as deadlocked.
pub async fn deadlock_causes(c: &Cluster, run: &RunRecord) -> Result<DeadlockCauses> {
    let mut causes = DeadlockCauses::default();
    for s in run
        .settled
        .iter()
        .filter(|s| s.outcome == PanelOutcome::Deadlocked)
    {
        let reply: MotionReply = c
            .read_as(&Query::Motion {
                motion_id: s.motion_id.clone(),
            })
            .await
            .with_context(|| format!("reading motion {} to say why it deadlocked", s.motion_id))?;
        let refused = run.refused_settlements.get(&s.key).copied().unwrap_or(0);
        causes.insert(
            s.motion_id.clone(),
            panel_machine::features::run_deadlocks::causes_of(reply.motion.as_ref(), refused),
        );
    }
    Ok(causes)
}

/// The run's report with each deadlocked question's causes beside its outcome.
pub async fn explained_markdown(c: &Cluster, view: &RunView) -> Result<String> {
    match &view.run {
        Some(run) => {
            let causes = deadlock_causes(c, run).await?;
            Ok(run.run.render_markdown_with(&causes))
        }
        None => Ok(view.markdown.clone()),
    }
}

/// `panel <procedure> show RUN`.
#[derive(clap::Args)]
pub struct ShowArgs {
    /// The run id, e.g. run_1 (`panel runs`).
    pub run: String,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub cluster: crate::client::addr::ClusterArgs,
}

/// `panel <procedure> show RUN`: the run's report as Markdown, or its record as JSON.
pub fn show(a: &ShowArgs) -> Result<std::process::ExitCode> {
    let c = Cluster::connect(&a.cluster)?;
    crate::client::cluster::runtime()?.block_on(async {
        let view = read(&c, &a.run).await?;
        print_view(&c, &view, a.output.json).await
    })
}

async fn print_view(c: &Cluster, view: &RunView, json: bool) -> Result<std::process::ExitCode> {
    if json {
        crate::client::cluster::print_json(&serde_json::to_value(&view.run)?)?;
    } else {
        println!("{}", explained_markdown(c, view).await?);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The panel flags every `panel <procedure> run` shares.
#[derive(clap::Args)]
pub struct PanelArgs {
    /// Seats per question (default 4; falsification 2, since an escalated round keeps the
    /// weak attack's judges off its panel and the pool needs about seats × rounds
    /// arbiters).
    #[arg(long)]
    pub seats: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub min_per_stance: usize,
    /// Seconds to wait for the run to finish.
    #[arg(long, default_value_t = 300)]
    pub patience: u64,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Sign a role's inputs with this key file, ROLE=FILE (`panel node keygen --out FILE`),
    /// e.g. `--role-key critic=critic.key`; repeatable. A role without one gets a fresh key
    /// held only by this process.
    #[arg(long = "role-key", value_name = "ROLE=FILE")]
    pub role_keys: Vec<String>,
    /// Start the run as this registered contributor (docs/PROCEDURES.md "Who may start a
    /// run"); a chartered group refuses a run its convener did not sign. Default: the
    /// convener `panel up` registered for --state, else an unsigned `panel-cli`.
    #[arg(long, value_name = "NAME", requires = "key")]
    pub convener: Option<String>,
    /// The convener's key file (`panel node keygen --out FILE`), to sign the start with.
    #[arg(long, value_name = "FILE", requires = "convener")]
    pub key: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub cluster: crate::client::addr::ClusterArgs,
}

/// Who starts a run: a name, and the key that signs the start when there is one.
pub struct Convener {
    pub name: String,
    pub key: Option<SigningKey>,
}

impl Convener {
    /// `--convener`/`--key`, else the convener `panel up` left in the state folder, else
    /// the unsigned `panel-cli` (enough for an unchartered group).
    pub fn from_args(panel: &PanelArgs) -> Result<Convener> {
        let (name, path) = match (&panel.convener, &panel.key) {
            (Some(name), Some(path)) => (name.clone(), path.clone()),
            _ => match panel.cluster.convener() {
                Some(c) => (c.name, c.key),
                None => {
                    return Ok(Convener {
                        name: "panel-cli".into(),
                        key: None,
                    });
                }
            },
        };
        let key = panel_node::keyfile::load_key(&path).with_context(|| {
            format!(
                "cannot sign the run's start as {name:?} with key file {}",
                path.display()
            )
        })?;
        Ok(Convener {
            name,
            key: Some(key),
        })
    }
}

/// What one `panel <procedure> run` starts.
pub struct Launch {
    pub start: panel_procedures::RunStart,
    pub simulation: bool,
    pub retry_of: Option<String>,
    pub default_seats: usize,
}

/// Starts the run, drives it with `roles` until it finishes, prints its report.
pub fn run_and_print(
    panel: &PanelArgs,
    launch: Launch,
    roles: &mut impl RoleSource,
) -> Result<std::process::ExitCode> {
    let keys = RoleKeys::for_start(&launch.start, &panel.role_keys)?;
    let convener = Convener::from_args(panel)?;
    let req = RunRequest {
        start: launch.start,
        seats: panel.seats.unwrap_or(launch.default_seats),
        min_per_stance: panel.min_per_stance,
        policy: None,
        simulation: launch.simulation,
        convener: convener.name,
        retry_of: launch.retry_of,
        role_keys: keys.public(),
        signature: None,
    };
    let mut c = Cluster::connect(&panel.cluster)?;
    crate::client::cluster::runtime()?.block_on(async {
        let id = start(&mut c, req, convener.key.as_ref()).await?;
        crate::output::note!("started {id}; waiting for the panel");
        let view = drive(
            &mut c,
            &id,
            roles,
            &keys,
            Duration::from_secs(panel.patience),
        )
        .await?;
        print_view(&c, &view, panel.output.json).await
    })
}

/// `panel runs [submit]`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: Option<RunsAction>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub cluster: crate::client::addr::ClusterArgs,
}

#[derive(clap::Subcommand)]
pub enum RunsAction {
    /// Submit one role's input to a run, signed with that role's key: for a role played
    /// by another party than the one that started the run.
    Submit(SubmitArgs),
}

#[derive(clap::Args)]
pub struct SubmitArgs {
    /// The run id, e.g. run_1 (`panel runs`).
    pub run: String,
    /// One input as JSON, in the procedure's input format (docs/FALSIFY.md, docs/DOSSIER.md).
    #[arg(long)]
    pub input: std::path::PathBuf,
    /// The role's key file (`panel node keygen --out FILE`), the one its run's start bound.
    #[arg(long)]
    pub key: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub cluster: crate::client::addr::ClusterArgs,
}

pub fn runs(a: RunsArgs) -> Result<std::process::ExitCode> {
    match a.action {
        None => list(&a.cluster, a.output.json),
        Some(RunsAction::Submit(s)) => submit_one(&s),
    }
}

/// `panel runs submit`: reads the run to know its procedure, signs the input as its role.
fn submit_one(a: &SubmitArgs) -> Result<std::process::ExitCode> {
    let bytes =
        std::fs::read(&a.input).with_context(|| format!("reading {}", a.input.display()))?;
    let value: serde_json::Value = panel_procedures::decode("input", &bytes)
        .map_err(|e| anyhow!("{}: {e}", a.input.display()))?;
    let mut c = Cluster::connect(&a.cluster)?;
    crate::client::cluster::runtime()?.block_on(async {
        let view = read(&c, &a.run).await?;
        let run = view
            .run
            .as_ref()
            .ok_or_else(|| anyhow!("run {} is gone", a.run))?;
        let input = role_adapters::decode(&run.run, value)
            .with_context(|| format!("{} is not an input of run {}", a.input.display(), a.run))?;
        let mut keys = BTreeMap::new();
        if let (Some(path), Some(role)) = (&a.key, input.role()) {
            let key = panel_node::keyfile::load_key(path)
                .with_context(|| format!("--key {}", path.display()))?;
            keys.insert(role, key);
        }
        submit(&mut c, &a.run, input, &RoleKeys(keys)).await
    })?;
    println!("submitted to {}", a.run);
    Ok(std::process::ExitCode::SUCCESS)
}

/// `panel runs`: every procedure run on the cluster, one line each.
pub fn list(
    cluster: &crate::client::addr::ClusterArgs,
    json: bool,
) -> Result<std::process::ExitCode> {
    #[derive(Deserialize, serde::Serialize)]
    struct Line {
        id: String,
        kind: panel_procedures::RunKind,
        summary: String,
        finished: bool,
        open_motions: usize,
        retry_of: Option<String>,
    }
    #[derive(Deserialize)]
    struct Runs {
        runs: Vec<Line>,
    }
    let c = Cluster::connect(cluster)?;
    let v = crate::client::cluster::runtime()?.block_on(c.read(&Query::Runs))?;
    let runs: Runs = serde_json::from_value(v)?;
    if json {
        crate::client::cluster::print_json(&serde_json::to_value(&runs.runs)?)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if runs.runs.is_empty() {
        println!(
            "no procedure runs yet; start one with `panel crux run`, `panel falsify run` or `panel dossier run`"
        );
    }
    for r in runs.runs {
        println!(
            "{:<8} {:<8} {:<9} {}{}",
            r.id,
            format!("{:?}", r.kind).to_lowercase(),
            if r.finished { "finished" } else { "running" },
            r.summary,
            r.retry_of
                .map(|p| format!(" (retry of {p})"))
                .unwrap_or_default()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}
