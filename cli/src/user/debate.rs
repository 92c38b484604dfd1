//! Debates on a running cluster: `panel debate new|list|show`, `panel ask` (a motion the
//! document does not raise by itself: a phase advance, a tier verification) and
//! `panel verdict` (the frozen verdicts, SPEC 3.7; `--reissue` asks for a fresh one).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::builder::PossibleValuesParser;
use crucible::document::{Debate, phase};
use crucible::motion::{Answer, Question};
use crucible::report::ledger_report;
use crucible::verdict::js_to_fixed;
use panel_coordinator::client::failover::{WriteOutcome, decode_reply};
use panel_machine::ClientCommand as Write;
use panel_machine::read::query::AppealCreditsReply;
use panel_machine::read::query::{DebatesReply, MotionReply};
use panel_machine::reply::{AskPanelReply, CreateDebateReply, ReissueVerdictReply};
use panel_machine::rules::acceptance::Rule;
use panel_machine::{DebateSpec, PanelRequest, Query};
use panel_machine::{Motion, MotionStatus};
use serde_json::{Value, json};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, report_refusal, runtime};
use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: DebateCmd,
}

#[derive(clap::Subcommand)]
enum DebateCmd {
    /// Open a debate (phase framing); its motions are drawn from the admitted arbiters.
    New {
        /// The resolution debated.
        #[arg(long)]
        resolution: String,
        /// Side A's position.
        #[arg(long)]
        pos_a: String,
        /// Side B's position.
        #[arg(long)]
        pos_b: String,
        /// Who carries the burden of proof (SPEC section 9: a tie goes against it).
        #[arg(long, value_parser = PossibleValuesParser::new(["A", "B", "shared"]))]
        burden: Option<String>,
        /// Most standing claims per side.
        #[arg(long)]
        claim_budget: Option<f64>,
        /// Seats per motion panel.
        #[arg(long, default_value_t = 4)]
        seats: usize,
        /// Least seats per declared stance on every panel.
        #[arg(long, default_value_t = 2)]
        min_per_stance: usize,
        /// The acceptance rule: `independent` (the default) seats arbiters under the stance
        /// each declared for this debate (`panel arbiter declare`) and adds the lineage,
        /// organisation, measured-independence and unsteerable-draw rules; `head-count` is
        /// the older rule, stances from registration and two agreeing stances enough;
        /// `weighted` is `independent` deciding by the performance-weighted pool of the
        /// rulings (docs/coordinator/acceptance.md "The acceptance rule", "The weighted
        /// pool").
        #[arg(long, value_enum, default_value_t = AcceptanceRule::Independent)]
        policy: AcceptanceRule,
        /// How long an accepted outcome stays provisional, open to appeal, before it is
        /// final (docs/PANEL.md "Finality"); default one day.
        #[arg(long, value_name = "SECS")]
        appeal_window_secs: Option<u64>,
        /// Motions carry the expected answer for scripted judges (demos and tests only).
        #[arg(long)]
        simulation: bool,
        /// Who opens the debate (on the record).
        #[arg(long, default_value = "panel-cli")]
        convener: String,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// List the debates: id, phase, verdicts, open motions, resolution.
    List {
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Show a debate: phase, threads with canonical versions and merits, open motions,
    /// verdicts. `--json` prints the SPEC JSON document.
    Show {
        #[command(flatten)]
        debate: DebateRef,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// The charter's last-word authority decides a question the panels left not proven,
    /// signing with its key (docs/PANEL.md "The last word").
    LastWord(crate::user::last_word::LastWordArgs),
}

/// `panel ask`: put a question to the panel.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("question").required(true).args(["advance", "verify_tier"])))]
pub struct AskArgs {
    #[command(flatten)]
    debate: DebateRef,
    /// Ask to advance from this phase (it must be the current one); `appeal-review` asks
    /// to conclude an admitted appeal's review: the revised verdict is issued and the
    /// debate closes again (docs/PANEL.md "Finality").
    #[arg(long, value_name = "FROM_PHASE", value_parser = PossibleValuesParser::new(phase::ORDER.iter().copied().chain([phase::APPEAL_REVIEW])))]
    advance: Option<String>,
    /// Ask the panel to retrieve a citation and verify its claimed tier.
    #[arg(long, value_name = "VERSION_ID", requires_all = ["thread", "citation"])]
    verify_tier: Option<String>,
    /// The thread of the version (with --verify-tier).
    #[arg(long)]
    thread: Option<String>,
    /// The citation's index in the version's evidence, from 0 (with --verify-tier).
    #[arg(long)]
    citation: Option<u32>,
    /// Simulation debates only: the answer scripted judges give.
    #[arg(long, value_parser = PossibleValuesParser::new(["yes", "no"]))]
    expect: Option<String>,
    /// Who asks (on the record).
    #[arg(long, default_value = "panel-cli")]
    author: String,
    /// Seat a panel even where a final outcome on the same content would answer the
    /// question by precedent, for this reason (on the record; docs/PANEL.md "Precedent").
    #[arg(long, value_name = "REASON")]
    fresh_panel: Option<String>,
    /// Wait until the motion is decided and print its outcome; `--wait final` waits
    /// further, until its outcome is no longer open to appeal (final, overturned or not
    /// proven; docs/PANEL.md "Finality").
    #[arg(
        long,
        value_name = "UNTIL",
        num_args = 0..=1,
        default_missing_value = "decided",
        value_parser = PossibleValuesParser::new(["decided", "final"])
    )]
    wait: Option<String>,
    /// How long --wait waits, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    wait_secs: u64,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `panel verdict`: show a debate's verdicts, or ask for a fresh one.
#[derive(clap::Args)]
pub struct VerdictArgs {
    #[command(flatten)]
    debate: DebateRef,
    /// Issue a fresh verdict from the current ledger (earlier verdicts stay).
    #[arg(long)]
    reissue: bool,
    /// Who asks for the fresh verdict (on the record).
    #[arg(long, default_value = "panel-cli")]
    author: String,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// A debate named positionally or with `--debate`, as every command that takes one
/// accepts it.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub struct DebateRef {
    /// The debate id, e.g. deb_1 (`panel debate list`).
    #[arg(id = "debate_id", value_name = "DEBATE")]
    id: Option<String>,
    /// The debate id, as a flag.
    #[arg(long = "debate", value_name = "DEBATE")]
    flag: Option<String>,
}

impl DebateRef {
    pub fn id(&self) -> &str {
        self.id
            .as_deref()
            .or(self.flag.as_deref())
            .unwrap_or_default()
    }
}

/// `panel debate new --policy`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum AcceptanceRule {
    Independent,
    HeadCount,
    /// The independent rule deciding by the performance-weighted pool.
    Weighted,
}

impl From<AcceptanceRule> for Rule {
    fn from(r: AcceptanceRule) -> Self {
        match r {
            AcceptanceRule::Independent => Rule::Independent,
            AcceptanceRule::HeadCount => Rule::HeadCount,
            AcceptanceRule::Weighted => Rule::Weighted,
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        DebateCmd::New {
            resolution,
            pos_a,
            pos_b,
            burden,
            claim_budget,
            seats,
            min_per_stance,
            policy,
            appeal_window_secs,
            simulation,
            convener,
            output: OutputArgs { json },
            cluster,
        } => {
            if min_per_stance * 2 > seats {
                bail!(
                    "--min-per-stance {min_per_stance} needs at least {} seats; raise --seats or lower --min-per-stance",
                    min_per_stance * 2
                );
            }
            let mut c = Cluster::connect(&cluster)?;
            let spec = DebateSpec {
                resolution,
                pos_a,
                pos_b,
                burden,
                claim_budget,
                seats,
                min_per_stance,
                policy: Some(panel_machine::Policy {
                    appeal_window_ms: appeal_window_secs.map(|s| s.saturating_mul(1000)),
                    ..Rule::from(policy).policy()
                }),
                simulation,
                convener,
            };
            runtime()?.block_on(async move {
                match c.write(&Write::CreateDebate(spec)).await? {
                    WriteOutcome::Refused { code, message } => {
                        report_refusal("the new debate", &code, &message, json)
                    }
                    WriteOutcome::Applied(v) => {
                        if json {
                            print_json(&v)?;
                        } else {
                            let created: CreateDebateReply =
                                decode_reply("the new debate", v)?;
                            let id = created.debate_id;
                            println!("created debate {id} (phase framing)");
                            crate::output::note!(
                                "next: `panel ask --debate {id} --advance framing` opens construction"
                            );
                        }
                        Ok(ExitCode::SUCCESS)
                    }
                }
            })
        }
        DebateCmd::List {
            output: OutputArgs { json },
            cluster,
        } => {
            let c = Cluster::connect(&cluster)?;
            let v: DebatesReply = runtime()?.block_on(c.read_as(&Query::Debates))?;
            if json {
                print_json(&serde_json::to_value(&v)?)?;
                return Ok(ExitCode::SUCCESS);
            }
            if v.debates.is_empty() {
                println!("no debates yet; open one with `panel debate new`");
            }
            for d in v.debates {
                println!(
                    "{:<8} {:<13} verdicts {:<2} open motions {:<3} {}",
                    d.id, d.phase, d.verdicts, d.open_motions, d.resolution
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        DebateCmd::LastWord(a) => crate::user::last_word::run(a),
        DebateCmd::Show {
            debate,
            output: OutputArgs { json },
            cluster,
        } => {
            let id = debate.id().to_owned();
            let c = Cluster::connect(&cluster)?;
            let (doc, rec, motions, credits) = runtime()?.block_on(async {
                let (doc, rec) = fetch(&c, &id).await?;
                let m: panel_machine::read::query::DebateMotionsReply = c
                    .read_as(&Query::DebateMotions {
                        debate_id: id.clone(),
                    })
                    .await?;
                // Absent from a replica that predates funded appeals: shown without.
                let credits: Option<AppealCreditsReply> = c
                    .read_as(&Query::AppealCredits {
                        debate_id: Some(id.clone()),
                    })
                    .await
                    .ok();
                Ok::<_, anyhow::Error>((doc, rec, m.motions, credits))
            })?;
            if json {
                print_json(&doc.to_json())?;
            } else {
                print_debate(&doc, &rec);
                // The panel bookkeeping, typed: appeals waiting, before their panel, or
                // put to a random sample. Absent from a replica whose record predates it.
                let rec = serde_json::from_value::<panel_machine::DebateRecord>(rec).ok();
                print_outcomes(&doc, &motions, credits.as_ref(), rec.as_ref());
                if let Some(r) = &credits {
                    crate::user::appeal_credits::print_balances(r, now_ms());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The debate document and its panel bookkeeping (open motions, settled questions).
pub async fn fetch(c: &Cluster, id: &str) -> Result<(Debate, Value)> {
    let v = c
        .read(&Query::Debate {
            debate_id: id.into(),
        })
        .await?;
    let rec = v.get("debate").cloned().unwrap_or(Value::Null);
    let doc = rec
        .get("debate")
        .cloned()
        .ok_or_else(|| anyhow!("debate {id} does not exist; `panel debate list` shows the ids"))?;
    let d = crucible::migrate::load_value(doc)
        .with_context(|| format!("the coordinator's copy of {id} does not load"))?;
    Ok((d, rec))
}

fn num(x: f64, digits: usize) -> String {
    js_to_fixed(x, digits)
}

fn print_debate(d: &Debate, rec: &Value) {
    println!("debate {}: {}", d.id, d.resolution);
    println!("  A: {}", d.positions.a);
    println!("  B: {}", d.positions.b);
    println!(
        "  phase {}, burden {}, {} thread(s), {} challenge(s), {} verdict(s)",
        d.phase,
        d.burden,
        d.threads.len(),
        d.challenges.len(),
        d.verdicts.len()
    );
    // The record's policy, decoded once here; a record without one is judged by head counts.
    let rule = serde_json::from_value::<Option<panel_machine::Policy>>(
        rec.get("policy").cloned().unwrap_or(Value::Null),
    )
    .map(|p| p.unwrap_or_default().describe())
    .unwrap_or("unreadable policy on record");
    println!("  acceptance rule: {rule}");
    let ledger = ledger_report(d);
    let merits: BTreeMap<&str, &Value> = ledger["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["versionId"].as_str().map(|id| (id, r)))
                .collect()
        })
        .unwrap_or_default();
    if !d.threads.is_empty() {
        println!("\nthreads");
    }
    for t in &d.threads {
        println!(
            "  {} (side {}) {}",
            t.id,
            t.side.as_deref().unwrap_or("?"),
            t.title_or_id()
        );
        match t.canonical() {
            Some(v) => {
                let merit = merits.get(v.id.as_str()).map_or_else(
                    || "not scored".to_string(),
                    |r| {
                        format!(
                            "merit {} = E {} x R {} x S {} x Q {}",
                            num(r["merit"].as_f64().unwrap_or(0.0), 2),
                            r["E"],
                            r["R"],
                            r["S"],
                            r["Q"]
                        )
                    },
                );
                println!(
                    "    canonical {} (v{}, {} / {}): {}",
                    v.id,
                    v.num,
                    v.kind.as_deref().unwrap_or("?"),
                    v.qualifier.as_deref().unwrap_or("?"),
                    v.assertion.as_deref().unwrap_or("")
                );
                println!("      {merit}");
            }
            None => println!("    no canonical version yet"),
        }
        for v in t
            .versions
            .iter()
            .filter(|v| Some(&v.id) != t.canonical_id.as_ref())
        {
            println!(
                "    {} (v{}) {}: {}",
                v.id,
                v.num,
                v.status,
                v.assertion.as_deref().unwrap_or("")
            );
        }
    }
    if !d.challenges.is_empty() {
        println!("\nchallenges");
    }
    for c in &d.challenges {
        println!(
            "  {} on {} ({}, side {}): {}",
            c.id,
            c.version_id,
            c.ground.as_deref().unwrap_or("?"),
            c.side.as_deref().unwrap_or("?"),
            c.resolution
                .as_deref()
                .filter(|r| !r.is_empty())
                .unwrap_or("unresolved")
        );
    }
    for (side, s) in [("A", &d.steelmans.a), ("B", &d.steelmans.b)] {
        if s.status != "none" {
            println!("steelman of side {side}: {}", s.status);
        }
    }
    let open = rec["open"].as_object().cloned().unwrap_or_default();
    println!(
        "\nopen motions:{}",
        if open.is_empty() { " none" } else { "" }
    );
    for (question, motion) in &open {
        println!("  {} asks {question}", motion.as_str().unwrap_or("?"));
    }
    println!(
        "\ncurrent ledger: A {} vs B {}, margin {}, {}",
        num(ledger["totals"]["A"].as_f64().unwrap_or(0.0), 2),
        num(ledger["totals"]["B"].as_f64().unwrap_or(0.0), 2),
        num(ledger["margin"].as_f64().unwrap_or(0.0), 3),
        ledger["band"]["label"].as_str().unwrap_or("?")
    );
    for v in &d.verdicts {
        println!("{}", verdict_line(v));
    }
}

/// The reader's clock, for showing a balance as it stands now (display only).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The appeals with their state and deposit, and every decided motion's outcome status
/// (docs/PANEL.md "Finality", "Funded appeals").
fn print_outcomes(
    d: &Debate,
    motions: &[Motion],
    credits: Option<&AppealCreditsReply>,
    rec: Option<&panel_machine::DebateRecord>,
) {
    if !d.appeals.is_empty() {
        println!("\nappeals");
    }
    for a in &d.appeals {
        let sample = if rec.is_some_and(|r| r.sample_appeals.contains(&a.id)) {
            ", put to a random sample of the admitted population"
        } else {
            ""
        };
        let state = rec
            .and_then(|r| crate::user::appeal_state::of(r, &a.id))
            .map_or_else(|| a.status.clone(), |s| s.to_string());
        let rationale = a
            .decision_rationale
            .as_deref()
            .filter(|r| !r.is_empty() && a.status != "denied")
            .map_or(String::new(), |r| format!(": {r}"));
        println!(
            "  {} by side {} ({}): {state}{sample}{rationale}",
            a.id,
            a.side.as_deref().unwrap_or("?"),
            a.ground.as_deref().unwrap_or("?"),
        );
        let deposit = credits.and_then(|c| c.deposits.iter().find(|x| x.appeal_id == a.id));
        if let Some(x) = deposit {
            println!("    {}", crate::user::appeal_credits::deposit_note(x));
        }
    }
    let decided: Vec<&Motion> = motions.iter().filter(|m| m.finality.is_some()).collect();
    if !decided.is_empty() {
        println!("\noutcome statuses");
    }
    for m in decided {
        if let Some(f) = &m.finality {
            println!(
                "  {:<16} {:<40} {}",
                m.spec.motion_id,
                m.spec.question_line(),
                f.sentence()
            );
        }
    }
}

fn verdict_line(v: &crucible::document::Verdict) -> String {
    format!(
        "verdict {}: A {} vs B {}, margin {} -> {}{}{}",
        v.n,
        num(v.totals.a.0, 2),
        num(v.totals.b.0, 2),
        num(v.margin.0, 3),
        match v.winner {
            Some(w) => format!("side {w} wins ({})", v.band.label),
            None => format!("no winner ({})", v.band.label),
        },
        if v.by_burden { ", by burden" } else { "" },
        v.via_appeal_id
            .as_deref()
            .map_or(String::new(), |a| format!(", after appeal {a}"))
    )
}

pub fn ask(args: AskArgs) -> Result<ExitCode> {
    let question = match (&args.advance, &args.verify_tier) {
        (Some(from), _) => Question::AdvancePhase { from: from.clone() },
        (None, Some(version)) => Question::VerifyTier {
            thread_id: args.thread.clone().unwrap_or_default(),
            version_id: version.clone(),
            citation_index: args.citation.unwrap_or(0),
        },
        (None, None) => bail!("say what to ask: --advance FROM_PHASE or --verify-tier VERSION_ID"),
    };
    let expected = args.expect.as_deref().map(|e| match e {
        "no" => Answer::No,
        _ => Answer::Yes,
    });
    let mut c = Cluster::connect(&args.cluster)?;
    let req = PanelRequest {
        debate_id: args.debate.id().to_owned(),
        author: args.author.clone(),
        question: question.clone(),
        expected,
        fresh_panel: args.fresh_panel.clone(),
    };
    runtime()?.block_on(async move {
        let v = match c.write(&Write::AskPanel(req)).await? {
            WriteOutcome::Refused { code, message } => {
                return report_refusal(
                    &format!("the {} question on {}", question.kind(), args.debate.id()),
                    &code,
                    &message,
                    args.output.json,
                );
            }
            WriteOutcome::Applied(v) => v,
        };
        let asked: AskPanelReply = decode_reply("the panel request", v.clone())?;
        let motion_id = asked.motion_id;
        let Some(until) = args.wait.as_deref() else {
            if args.output.json {
                print_json(&v)?;
            } else if let Some(cited) = &asked.precedent {
                println!(
                    "motion {motion_id} answered by precedent: {} was decided on the same \
                     content by motion {cited}, which is final; no panel sat (`panel motion \
                     show {motion_id}`; ask with --fresh-panel REASON to seat one)",
                    question.key()
                );
            } else {
                println!(
                    "motion {motion_id} opened: {} (`panel motion show {motion_id}`)",
                    question.key()
                );
            }
            return Ok(ExitCode::SUCCESS);
        };
        let limit = Duration::from_secs(args.wait_secs);
        let m = if until == "final" {
            wait_final(&c, &motion_id, limit).await?
        } else {
            wait_decided(&c, &motion_id, limit).await?
        };
        if args.output.json {
            print_json(&json!({ "ask": v, "motion": m }))?;
        } else {
            println!(
                "motion {motion_id} ({}): {}",
                question.key(),
                crate::user::motion::outcome_text(&m.status)
            );
            for line in crate::user::motion::outcome_lines(&m) {
                println!("{line}");
            }
        }
        // An outcome whose effect the engine refused changed nothing: say so and fail.
        if let Some(r) = &m.effect_refused {
            eprintln!(
                "error: the engine refused the outcome's effect ({}): {}; the debate is unchanged",
                r.code, r.message
            );
            return Ok(ExitCode::FAILURE);
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Polls a motion until the panel decided it.
async fn wait_decided(c: &Cluster, motion_id: &str, limit: Duration) -> Result<Motion> {
    wait_until(c, motion_id, limit, "decided", |m| {
        matches!(m.status, MotionStatus::Decided(_))
    })
    .await
}

/// Polls a motion until its outcome's status can no longer change (final, overturned or
/// not proven). A motion decided before outcome statuses (rule set 12) has none: it is
/// returned as decided.
async fn wait_final(c: &Cluster, motion_id: &str, limit: Duration) -> Result<Motion> {
    wait_until(c, motion_id, limit, "final", |m| match &m.finality {
        Some(f) => f.status.settled(),
        None => matches!(m.status, MotionStatus::Decided(_)) && m.decided_log_index.is_some(),
    })
    .await
}

async fn wait_until(
    c: &Cluster,
    motion_id: &str,
    limit: Duration,
    what: &str,
    done: impl Fn(&Motion) -> bool,
) -> Result<Motion> {
    let start = Instant::now();
    loop {
        let v: MotionReply = c
            .read_as(&Query::Motion {
                motion_id: motion_id.into(),
            })
            .await?;
        let Some(m) = v.motion else {
            bail!("motion {motion_id} does not exist; `panel motion list --debate ID` lists them");
        };
        if done(&m) {
            return Ok(m);
        }
        if start.elapsed() > limit {
            let now = match &m.finality {
                Some(f) => f.sentence(),
                None => crate::user::motion::outcome_text(&m.status),
            };
            bail!(
                "motion {motion_id} is not {what} after {} s (now: {now}); wait longer with --wait-secs or check it later with `panel motion show {motion_id}`",
                limit.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub fn verdict(args: VerdictArgs) -> Result<ExitCode> {
    let mut c = Cluster::connect(&args.cluster)?;
    runtime()?.block_on(async move {
        let mut reissued = Value::Null;
        if args.reissue {
            let w = Write::ReissueVerdict {
                debate_id: args.debate.id().to_owned(),
                author: args.author.clone(),
            };
            match c.write(&w).await? {
                WriteOutcome::Refused { code, message } => {
                    return report_refusal(
                        &format!("a fresh verdict for {}", args.debate.id()),
                        &code,
                        &message,
                        args.output.json,
                    );
                }
                WriteOutcome::Applied(v) => reissued = v,
            }
        }
        let (d, _) = fetch(&c, args.debate.id()).await?;
        if args.output.json {
            let doc = d.to_json();
            print_json(&json!({
                "debate_id": d.id,
                "phase": d.phase,
                "reissued": reissued,
                "verdicts": doc["verdicts"],
            }))?;
            return Ok(ExitCode::SUCCESS);
        }
        if !reissued.is_null() {
            let r: ReissueVerdictReply = decode_reply("the fresh verdict", reissued)?;
            println!("issued verdict {} from the current ledger", r.verdict);
        }
        if d.verdicts.is_empty() {
            println!(
                "debate {} has no verdict yet (phase {}); verdicts are issued when it reaches the verdict phase",
                d.id, d.phase
            );
        }
        for v in &d.verdicts {
            println!("{}", verdict_line(v));
            println!("  {}", v.rationale);
            for r in &v.ledger {
                println!(
                    "    {} {:<7} {} v{} merit {:>5} (E {} R {} S {} Q {}) {}",
                    r.side.as_deref().unwrap_or("?"),
                    r.thread_id,
                    r.version_id,
                    r.version_num,
                    num(r.merit.0, 2),
                    r.e.0,
                    r.r.0,
                    r.s.0,
                    r.q.0,
                    r.thread_title.as_deref().unwrap_or("")
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(extra: &[&str]) -> Result<Cli, clap::Error> {
        let mut argv = vec!["panel", "new", "--resolution", "r", "--pos-a", "a"];
        argv.extend_from_slice(&["--pos-b", "b"]);
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv)
    }

    fn rule_of(extra: &[&str]) -> Rule {
        match parse(extra).expect("parses").args.cmd {
            DebateCmd::New { policy, .. } => policy.into(),
            _ => unreachable!("parsed `new`"),
        }
    }

    /// A debate opened without `--policy` gets the independent rule (docs/SECURITY.md,
    /// "Organisation"); the older rule only when asked for by name.
    #[test]
    fn new_debates_ask_for_the_independent_rule_unless_told_otherwise() {
        assert_eq!(rule_of(&[]), Rule::Independent);
        assert_eq!(rule_of(&["--policy", "head-count"]), Rule::HeadCount);
        assert_eq!(rule_of(&["--policy", "weighted"]), Rule::Weighted);
        assert!(parse(&["--policy", "lenient"]).is_err());
    }
}
