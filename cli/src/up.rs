//! `panel up`: a whole local panel in one command. Three coordinator replicas and four
//! arbiter nodes start as separate processes on loopback; the arbiters take the
//! calibration exam and are admitted; the paper's worked verdict (section 4) is played
//! through the panel, motion by motion; B1's source is then retrieved from a local file
//! server and confirmed at T1, and the revised verdict is issued. The record is exported
//! and verified offline.

use crate::output::say;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use crucible::contribution::Contribution;
use crucible::document::Debate;
use crucible::motion::Question;
use crucible::scenario::{Labels, Step, parse_request, worked_example};
use crucible::verdict::js_to_fixed;
use panel_coordinator::acceptance::{Policy, Stance};
use panel_coordinator::client::failover::{WriteOutcome, decode_reply};
use panel_coordinator::command::{
    ArbiterRegistration, ClientCommand, ContributionSubmission, DebateSpec, PanelRequest, Query,
};
use panel_coordinator::debates::SubmissionHints;
use panel_coordinator::local::{self, LocalCluster, ReplicaLaunch, Supervisor, free_port};
use panel_coordinator::model::{Motion, MotionStatus};
use panel_coordinator::query::ArbitersReply;
use panel_coordinator::record::{self, Bundle};
use panel_machine::reply::{CheckPriorsReply, ContributeReply, CreateDebateReply, Decided};
use serde::Deserialize;
use serde_json::Value;

use panel_transport::{Transport, pki};

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::Cluster as Coordinators;
use crate::rulings::ruling_line;
use crate::source_server::SourceServer;

#[derive(clap::Args)]
pub struct Args {
    /// State folder: data directories, logs, keys, sources and the exported record.
    #[arg(long, default_value = ".panel")]
    state: PathBuf,
    /// Leave the cluster running for the CLI after the worked example (Ctrl-C stops it).
    #[arg(long)]
    keep: bool,
    /// The other seeds' procedures to run after the worked example (docs/PROCEDURES.md).
    #[arg(long, value_enum, default_value = "all")]
    procedure: crate::up_procedures::Which,
    /// Print one JSON summary on stdout at the end (verdicts, record, checkpoints, runs);
    /// the narration goes to stderr.
    #[arg(long)]
    json: bool,
}

/// One arbiter node of the local panel.
struct ArbiterSpec {
    id: &'static str,
    organisation: &'static str,
    model_family: &'static str,
    stance: Stance,
    /// The scripted judge profile in `profiles.toml`.
    profile: &'static str,
}

const fn arbiter(
    id: &'static str,
    organisation: &'static str,
    model_family: &'static str,
    stance: Stance,
    profile: &'static str,
) -> ArbiterSpec {
    ArbiterSpec {
        id,
        organisation,
        model_family,
        stance,
        profile,
    }
}

/// The worked example's four arbiters (the first four, who alone declare stances for its
/// debate), then the four more the contested question needs (`up_dissent`): three
/// calibrated judges and `arb-north-p`, whose judge leans to side B.
const ARBITERS: [ArbiterSpec; 8] = [
    arbiter(
        "arb-north-a",
        "northwind",
        "family-x",
        Stance::A,
        "calibrated",
    ),
    arbiter(
        "arb-south-a",
        "southbank",
        "family-y",
        Stance::A,
        "calibrated",
    ),
    arbiter(
        "arb-north-b",
        "northwind",
        "family-y",
        Stance::B,
        "calibrated",
    ),
    arbiter(
        "arb-south-b",
        "southbank",
        "family-x",
        Stance::B,
        "calibrated",
    ),
    arbiter("arb-north-p", "northwind", "family-z", Stance::B, "leans-b"),
    arbiter(
        "arb-north-c",
        "northwind",
        "family-x",
        Stance::A,
        "calibrated",
    ),
    arbiter(
        "arb-south-c",
        "southbank",
        "family-y",
        Stance::A,
        "calibrated",
    ),
    arbiter(
        "arb-south-d",
        "southbank",
        "family-x",
        Stance::B,
        "calibrated",
    ),
];

/// How long every arbiter's exam may take: eight exams share the machine's cores with
/// the replicas, and a busy machine (a CI runner) is several times slower than a quiet one.
const EXAM_PATIENCE: Duration = Duration::from_secs(300);

/// How many of [`ARBITERS`] judge the worked example.
const WORKED_EXAMPLE_ARBITERS: usize = 4;

pub fn run(args: Args) -> Result<ExitCode> {
    crate::output::set_json(args.json);
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
}

impl Panel {
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

    async fn debate(&self, id: &str) -> Result<(Debate, Value)> {
        crate::debate_cmd::fetch(&self.coordinators, id).await
    }
}

async fn up(args: &Args, cluster: &mut Supervisor) -> Result<ExitCode> {
    let state = &args.state;
    if state.exists() {
        fs::remove_dir_all(state).with_context(|| format!("clearing {}", state.display()))?;
    }
    for d in ["coordinators", "nodes", "logs", "sources", "witnesses"] {
        fs::create_dir_all(state.join(d))?;
    }
    let state = fs::canonicalize(state)?;
    say!("Crucible Panel: a local panel on loopback");
    say!("state folder: {}", state.display());

    // The federation's certificates: one authority per organisation, mutual TLS on every
    // hop, replicas and operators pinned in the charter.
    let nodes: Vec<(&str, &str)> = ARBITERS.iter().map(|a| (a.id, a.organisation)).collect();
    let issued = pki::issue(&pki::local_plan(3, &nodes), &state.join("pki"))?;
    let operator = Transport::from_flags(
        Some(&issued.dir(&pki::operator_dir_name(ARBITERS[0].organisation))),
        None,
        false,
    )?;
    let client_tls = issued.dir(pki::LOCAL_CLIENT);
    say!(
        "mutual TLS: {} organisations' authorities, charter {}",
        issued.charter.organisations.len(),
        issued.charter_path().display()
    );

    // Sources arbiters retrieve when they verify a tier. B1's is not published yet.
    let sources = SourceServer::start(state.join("sources")).await?;
    let scenario = worked_example(&sources.base_url);
    publish(
        &state,
        "a1-trial-tabulation.txt",
        "Output per employee, participating firms, before and during the trial (official statistics tabulation).\n",
    )?;
    say!(
        "source server: {} (serving {})",
        sources.base_url,
        state.join("sources").display()
    );

    // One witness per organisation, each with its own key: they cosign the log's
    // checkpoints, so no single organisation can publish another history of the record.
    let witness_urls = local::witnesses::spawn(
        cluster,
        &issued,
        &state.join("witnesses"),
        &state.join("logs"),
    )?;
    say!(
        "started {} witnesses, one per organisation: {}",
        witness_urls.len(),
        witness_urls.join(", ")
    );

    // The cluster's motion key, issued with the charter that names it: one file, named in
    // every replica's config; every node trusts its public key (docs/WIRE.md "Motion,
    // layout v1").
    let motion_public = issued.charter.motion_key.clone();
    // Three coordinator replicas, each from its config file in the state folder, made one
    // Raft group.
    let replicas =
        LocalCluster::spawn(cluster, local::loopback_addrs(3)?, operator, |id, addr| {
            let config = write_replica_config(&state, id, addr, &issued, &witness_urls)?;
            let log = state.join("logs").join(format!("coordinator-{id}.log"));
            Ok(ReplicaLaunch::config_file(&config, log))
        })?;
    let addrs = replicas.addrs().to_vec();
    say!("started 3 coordinator replicas: {}", addrs.join(", "));
    crate::cluster_addr::write_cluster_file(&state, &addrs, Some(&client_tls))?;
    replicas.wait_answering(Duration::from_secs(30)).await?;
    replicas.init(Duration::from_secs(30)).await?;
    let leader = replicas.wait_for_leader(Duration::from_secs(30)).await?;
    say!(
        "raft group formed: leader is replica {} at {}",
        leader.leader_id,
        leader.leader_addr
    );

    // Four arbiter nodes: two stances, two organisations, scripted judges.
    let profiles = state.join("profiles.toml");
    fs::write(
        &profiles,
        "# Scripted judges used by `panel up`: `calibrated` answers as the simulation hint says;\n# `leans-b` does too, unless a yes would favour side A, which it then refuses.\n[profiles.calibrated]\naccuracy = 1.0\nseed = 7\n\n[profiles.leans-b]\naccuracy = 1.0\nbias_side = \"B\"\nbias = 0.6\nseed = 11\n",
    )?;
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
    let mut panel = Panel {
        coordinators: Coordinators::connect(&ClusterArgs {
            addr: addrs.clone(),
            state: state.clone(),
            tls: Some(client_tls.clone()),
        })?,
    };
    for r in regs {
        panel.write(ClientCommand::RegisterArbiter(r)).await?;
    }

    // The calibration exam, administered by the leader through each node's judge.
    say!(
        "\nCalibration exam (default exam, {} items) administered to every arbiter ...",
        crucible_exam_items()
    );
    let started = Instant::now();
    let mut progress = crate::progress::Progress::new(ARBITERS.len() as u64, "exams scored");
    let arbiters = loop {
        let v: ArbitersReply = panel.coordinators.read_as(&Query::Arbiters).await?;
        let list = v.arbiters;
        let done = list.iter().filter(|a| a.exam.is_some()).count();
        progress.set(done as u64);
        if done == ARBITERS.len() {
            break list;
        }
        if started.elapsed() > EXAM_PATIENCE {
            bail!(
                "only {done} of {} arbiters finished the exam in {} s; see {}",
                ARBITERS.len(),
                EXAM_PATIENCE.as_secs(),
                state.join("logs").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    progress.finish();
    say!("  all exams scored in {} s", started.elapsed().as_secs());
    say!(
        "  {:<12} {:<6} {:<10} {:>7} {:>8} {:>9} {:>6}  admitted",
        "arbiter",
        "stance",
        "org",
        "brier",
        "base",
        "log",
        "C"
    );
    for a in &arbiters {
        let exam = a.exam_record().and_then(Result::ok);
        let s = exam.as_ref().map(|e| &e.scores);
        let b = s.and_then(|s| s.binary.as_ref());
        let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
        say!(
            "  {:<12} {:<6} {:<10} {:>7} {:>8} {:>9} {:>6}  {}",
            a.registration.arbiter_id,
            crate::rulings::stance_name(a.registration.stance),
            a.registration.organisation,
            f(b.map(|b| b.brier)),
            f(b.map(|b| b.base_rate_brier)),
            f(b.map(|b| b.log_score)),
            f(s.and_then(|s| s.quantiles.as_ref()).map(|q| q.calibration)),
            if a.admitted {
                "yes".to_string()
            } else {
                format!(
                    "no: {}",
                    exam.as_ref()
                        .and_then(|e| serde_json::to_string(&e.decision.failed).ok())
                        .unwrap_or_else(|| "null".into())
                )
            }
        );
    }
    if arbiters.iter().any(|a| !a.admitted) {
        bail!(
            "not every arbiter was admitted; the demo needs all {}",
            ARBITERS.len()
        );
    }
    let names = crate::rulings::names_from_arbiters(&arbiters);

    // The worked example, through the panel.
    let created = panel
        .write(ClientCommand::CreateDebate(DebateSpec {
            resolution: scenario.resolution.clone(),
            pos_a: scenario.pos_a.clone(),
            pos_b: scenario.pos_b.clone(),
            burden: Some(scenario.burden.clone()),
            claim_budget: scenario.claim_budget,
            seats: 4,
            min_per_stance: 2,
            // Every independence rule (no organisation, one supporter per lineage, the
            // unsteerable draw) and the prior-consistency check every 8 decided motions.
            policy: Some(Policy {
                prior_check_every: Some(8),
                ..Policy::independent()
            }),
            simulation: true,
            convener: "panel-up".into(),
        }))
        .await?;
    let debate_id = decode_reply::<CreateDebateReply>("the new debate", created)?.debate_id;
    say!("\nDebate {debate_id}: {}", scenario.resolution);
    say!("  A: {}\n  B: {}", scenario.pos_a, scenario.pos_b);
    // Stances are declared per debate, each signed by the arbiter's key: the registered
    // label seats nobody under this debate's policy.
    let stances: Vec<(&str, Stance)> = ARBITERS[..WORKED_EXAMPLE_ARBITERS]
        .iter()
        .map(|a| (a.id, a.stance))
        .collect();
    crate::up_stances::declare(&mut panel.coordinators, &state, &debate_id, &stances).await?;
    say!(
        "each arbiter signed its stance for {debate_id}: {}",
        stances
            .iter()
            .map(|(id, s)| format!("{id} {}", crate::rulings::stance_name(*s)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // The example's contributors: under the charter a name is bound to a key only by a
    // registration its organisation endorses, and each contribution is signed by that key.
    let mut contributor_keys = BTreeMap::new();
    for (n, author) in scenario
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Submit { author, .. } => Some(author.clone()),
            _ => None,
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
    {
        let key = panel_proto::SigningKey::from_bytes(&panel_node::keyfile::random_32()?);
        let organisation = pki::LOCAL_ORGANISATIONS[n % pki::LOCAL_ORGANISATIONS.len()];
        let mut reg = panel_coordinator::command::ContributorRegistration {
            name: author.clone(),
            public_key: hex::encode(key.verifying_key().to_bytes()),
            organisation: organisation.to_owned(),
            attestation: panel_coordinator::command::WireAttestation {
                proof: String::new(),
                endorsement: String::new(),
            },
        };
        let roster = pki::read_seed_key(&issued.signing_key_path(organisation))?;
        reg.attestation = panel_coordinator::charter::attest_contributor(&reg, &key, &roster)?;
        panel.write(ClientCommand::RegisterContributor(reg)).await?;
        contributor_keys.insert(author, key);
    }
    say!(
        "registered {} contributors, each endorsed by its organisation",
        contributor_keys.len()
    );
    let mut labels = Labels::default();
    let mut printed: BTreeSet<String> = BTreeSet::new();
    let mut phase = String::new();
    for step in &scenario.steps {
        match step {
            Step::Submit {
                label,
                author,
                side,
                contribution,
                hint,
                relevance,
                verify,
            } => {
                let (doc, _) = panel.debate(&debate_id).await?;
                let resolved = labels.resolve(&doc, contribution)?;
                let c: Contribution = serde_json::from_value(resolved)?;
                let hints = SubmissionHints {
                    answer: *hint,
                    verify: *verify,
                    relevance: *relevance,
                };
                let who = Contributor {
                    name: author,
                    key: contributor_keys.get(author),
                };
                let v = submit(
                    &mut panel,
                    &debate_id,
                    &who,
                    side.as_str(),
                    c.clone(),
                    hints,
                )
                .await?;
                say!("  {author} (side {side}) {}", describe_contribution(&c));
                if let (Some(l), Some(id)) = (label, v.created.as_deref()) {
                    labels.bind(l, id);
                }
            }
            Step::Request { question, hint } => {
                let (doc, _) = panel.debate(&debate_id).await?;
                match parse_request(&labels.resolve(&doc, question)?)? {
                    None => {
                        panel
                            .write(ClientCommand::ReissueVerdict {
                                debate_id: debate_id.clone(),
                                author: "panel-up".into(),
                            })
                            .await?;
                        say!("  panel-up asks for a fresh verdict from the current ledger");
                    }
                    Some(q) => {
                        if let Question::VerifyTier { .. } = q {
                            publish(
                                &state,
                                "b1-systematic-review.txt",
                                "Systematic review: pooled studies of reduced scheduled hours; methods, search strategy and risk-of-bias assessment.\n",
                            )?;
                            say!("  B1's source is now published on the source server");
                        }
                        panel
                            .write(ClientCommand::AskPanel(PanelRequest {
                                debate_id: debate_id.clone(),
                                author: "panel-up".into(),
                                question: q.clone(),
                                expected: Some(*hint),
                            }))
                            .await?;
                        if !matches!(q, Question::AdvancePhase { .. }) {
                            say!("  panel-up asks the panel: {}", q.kind());
                        }
                    }
                }
            }
            Step::ExpectVerdict {
                n,
                winner,
                margin,
                band,
            } => {
                settle(&panel, &debate_id, &names, &mut printed, &mut phase).await?;
                let (doc, _) = panel.debate(&debate_id).await?;
                let v = doc
                    .verdicts
                    .get(*n as usize - 1)
                    .ok_or_else(|| anyhow!("verdict {n} was not issued"))?;
                let got_margin = js_to_fixed(v.margin.0, 3);
                say!(
                    "\n  VERDICT {}: A {} vs B {}, margin {} -> {}{}\n",
                    v.n,
                    js_to_fixed(v.totals.a.0, 2),
                    js_to_fixed(v.totals.b.0, 2),
                    got_margin,
                    match v.winner {
                        Some(w) => format!("Side {w} wins, {}", v.band.key),
                        None => "no winner (unresolved)".into(),
                    },
                    if v.by_burden { " (by burden)" } else { "" }
                );
                if v.winner != *winner || &got_margin != margin || &v.band.key != band {
                    bail!(
                        "verdict {n} differs from the paper: expected winner {winner:?}, margin {margin}, band {band}"
                    );
                }
                continue;
            }
        }
        settle(&panel, &debate_id, &names, &mut printed, &mut phase).await?;
    }
    let (doc, _) = panel.debate(&debate_id).await?;
    say!(
        "debate {debate_id} is {} with {} verdicts on the record",
        doc.phase,
        doc.verdicts.len()
    );

    // Declared priors are claims: measure them against the ruling history.
    let checked = panel.write(ClientCommand::CheckPriors).await?;
    let flagged = decode_reply::<CheckPriorsReply>("the prior-consistency check", checked)?
        .flagged
        .len();
    say!(
        "prior-consistency check over the ruling history: {flagged} arbiter(s) flagged as ruling with the other camp"
    );

    let (author, key) = contributor_keys
        .iter()
        .next()
        .context("the worked example registered no contributor")?;
    let shown = crate::up_dissent::run(
        &mut panel,
        &state,
        &Contributor {
            name: author,
            key: Some(key),
        },
        &names,
    )
    .await?;
    say!(
        "  the panel earned its keep in {}: {} deadlocked with stance B split, the fresh panel accepted {}",
        shown.debate_id,
        shown.deadlocked,
        shown.accepted
    );
    say!(
        "  measured independence (Kish n_eff, from {} decided yes/no motions): the fresh panel is worth {:.2} of {} votes ({} of {} pairs measured, the rest by declared lineage; the rule needs 2); the admitted pool's measured errors make its {} arbiters worth {:.2}",
        shown.motions_measured,
        shown.n_eff_panel,
        up_dissent_panel_size(),
        shown.pairs_measured,
        shown.pairs,
        shown.pool,
        shown.n_eff_pool
    );

    let runs = crate::up_procedures::run(&mut panel.coordinators, args.procedure).await?;
    if !runs.is_empty() {
        say!(
            "\n{} procedure run(s) on the record: {}; `panel runs` lists them",
            runs.len(),
            runs.join(", ")
        );
    }

    // Export once the checkpoint covering the whole record carries both witnesses'
    // cosignatures, and verify it offline against the policy and the charter.
    let policy = panel_tlog::Policy::parse(&fs::read_to_string(issued.policy_path())?)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let bundle = loop {
        let b: Bundle = panel.coordinators.read_as(&Query::Export).await?;
        if record::check_policy(&b, &policy).is_ok() || Instant::now() > deadline {
            break b;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let path = state.join("record.json");
    fs::write(&path, serde_json::to_vec_pretty(&bundle)?)?;
    let checked = record::check_charter(&bundle, &issued.charter)
        .and_then(|()| record::verify(&bundle))
        .and_then(|r| Ok((r, record::check_policy(&bundle, &policy)?)));
    match checked {
        Ok((r, w)) => {
            let scheduled = bundle
                .entries
                .iter()
                .filter(|e| {
                    matches!(&e.reply, panel_coordinator::command::ItemReply::Applied(v)
                        if Decided::deserialize(v).is_ok_and(|d| d.prior_check.is_some()))
                })
                .count();
            say!(
                "the prior-consistency check also ran by itself {scheduled} time(s) inside apply, every 8 decided motions (the debate's policy)"
            );
            say!(
                "record exported to {} ({} entries, {} motions accepted, {} deadlocked, {} checkpoints)",
                path.display(),
                r.entries,
                r.motions_accepted,
                r.motions_deadlocked,
                r.checkpoints,
            );
            say!(
                "its last checkpoint is signed by the log {} and cosigned by the witnesses of {}; it verifies offline against the policy and the charter: `panel verify {} --policy {} --charter {}`",
                w.origin,
                w.witnesses.join(" and "),
                path.display(),
                issued.policy_path().display(),
                issued.charter_path().display()
            );
            if args.json {
                let summary = serde_json::json!({
                    "state": state,
                    "debate": debate_id,
                    "verdicts": doc.verdicts,
                    "record": path,
                    "policy": issued.policy_path(),
                    "charter": issued.charter_path(),
                    "verification": r,
                    "log": w,
                    "runs": runs,
                    "coordinators": addrs,
                });
                crate::cluster_client::print_json(&summary)?;
            }
        }
        Err(e) => bail!("the exported record does not verify: {e}"),
    }
    if args.keep {
        say!(
            "\ncluster left running (--keep): coordinators at {}",
            addrs.join(",")
        );
        say!(
            "try: panel debate show {debate_id} --state {}   (addresses in {}; Ctrl-C stops everything)",
            state.display(),
            state.join(crate::cluster_addr::FILE).display()
        );
        tokio::signal::ctrl_c().await?;
    }
    sources.abort();
    Ok(ExitCode::SUCCESS)
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
    };
    if let Some(key) = author.key {
        let (client_id, request_id) = panel.coordinators.next_ids();
        sub.signature = Some(panel_coordinator::authorship::sign(
            key, &sub, &client_id, request_id,
        )?);
    }
    let v = panel.write(ClientCommand::Contribute(sub)).await?;
    Ok(decode_reply("the contribution", v)?)
}

fn up_dissent_panel_size() -> usize {
    crate::up_dissent::FRESH.len()
}

fn crucible_exam_items() -> usize {
    panel_coordinator::admission::default_exam().map_or(0, |e| e.items.len())
}

fn publish(state: &Path, name: &str, text: &str) -> Result<()> {
    fs::write(state.join("sources").join(name), text).with_context(|| format!("publishing {name}"))
}

fn describe_contribution(c: &Contribution) -> String {
    match c {
        Contribution::Thread { title, claim } => format!(
            "opens thread \"{title}\": {} [{} / {}]",
            claim.assertion, claim.kind, claim.qualifier
        ),
        Contribution::Version { claim, .. } => format!("proposes a repair: {}", claim.assertion),
        Contribution::Challenge { ground, text, .. } => format!("challenges ({ground}): {text}"),
        Contribution::Respond { text, .. } => format!("responds: {text}"),
        Contribution::Steelman { of_side, .. } => format!("restates side {of_side}'s case"),
        Contribution::Certify { of_side } => format!("certifies the restatement of side {of_side}"),
        Contribution::ReturnSteelman { of_side, .. } => {
            format!("returns the restatement of side {of_side}")
        }
        Contribution::Appeal { ground, .. } => format!("appeals on ground {ground}"),
        Contribution::Definition { term, .. } => format!("defines {term}"),
    }
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
        if start.elapsed() > Duration::from_secs(60) {
            bail!("{open} motion(s) still open after 60 s");
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
            crate::motion_cmd::question_line(&m.spec)
        );
        let mut by_stance: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &m.rulings {
            if let Some((registered, arb, val)) = ruling_line(&r.0, names) {
                // The stance the seat counted under: a debate's declaration, not the
                // registered label (docs/COORDINATOR.md "Declared priors").
                let stance = m
                    .seats
                    .iter()
                    .find(|s| s.arbiter_id == arb)
                    .map_or(registered, |s| {
                        crate::rulings::stance_name(s.stance).to_string()
                    });
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

/// Writes replica `id`'s config file into the state folder (`config/replica-ID.toml`, the
/// shape docs/COORDINATOR.md "Configuration file" documents) and returns its path: what
/// this replica runs with, and what a user copies to a host of its own.
fn write_replica_config(
    state: &Path,
    id: u64,
    addr: &str,
    issued: &pki::Issued,
    witness_urls: &[String],
) -> Result<PathBuf, local::LocalClusterError> {
    let data = state.join("coordinators").join(format!("c{id}"));
    let mut config = local::config::chartered(id, addr, data, issued, witness_urls)?;
    // The demo's exam carries gold answers for its scripted judges.
    config.simulation = Some(true);
    config.windows = panel_coordinator::config::WindowsSection {
        commit_ms: Some(300),
        exam_ms: Some(3000),
        ..Default::default()
    };
    local::config::write(&state.join("config"), id, &config, "`panel up`")
}
