//! Arbiters on a running cluster: `panel arbiter register|declare|list|leaderboard|show`. A registered arbiter
//! takes the calibration exam through its node and is admitted or refused by the recorded
//! decision (calibration-digest: Brier skill, log score, Cooke's calibration, inertness);
//! `show` prints the scores and any failed bar, and the post-admission track record
//! scored on resolved outcomes (docs/CALIBRATION.md, "Recalibration from resolved
//! outcomes").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use calibration::recalibration::{RecalibrationPolicy, TrackRecord, assess};
use calibration::wilson::reliability_intervals;
use panel_coordinator::client::failover::WriteOutcome;
use panel_machine::Arbiter;
use panel_machine::Query;
use panel_machine::Stance;
use panel_machine::command::{ArbiterRegistration, ClientCommand as Write, Lineage};
use panel_machine::features::admission::ExamRecord;
use panel_machine::read::query::{ArbiterReply, ArbitersReply};
use serde::Deserialize;

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, report_refusal, runtime};
use crate::offline::calibrate::reliability_lines;
use crate::output::OutputArgs;
use crate::rulings::stance_name;
use crate::user::debate::DebateRef;
use calibration::probe_text::ProbeCells;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: ArbiterCmd,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum StanceArg {
    #[value(name = "A")]
    A,
    #[value(name = "B")]
    B,
    #[value(name = "none")]
    None,
}

#[derive(clap::Subcommand)]
enum ArbiterCmd {
    /// Register an arbiter node; the leader then gives it the calibration exam.
    #[command(group(clap::ArgGroup::new("key").required(true).args(["key_file", "public_key"])))]
    Register {
        /// The arbiter's id, unique in the panel.
        #[arg(long)]
        id: String,
        /// The node's key file (`panel node keygen`); only its public key is sent.
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
        /// The ed25519 public key as 64 hex characters (instead of --key-file).
        #[arg(long, value_name = "HEX")]
        public_key: Option<String>,
        /// The organisation running the arbiter (panels need two or more).
        #[arg(long)]
        organisation: String,
        /// The model family judging (kept off motions on same-family authors).
        #[arg(long)]
        model_family: String,
        /// The declared prior on the resolution.
        #[arg(long, value_enum, ignore_case = true)]
        stance: StanceArg,
        /// Where the node serves the ArbiterNode API, http://host:port; or `link` for a
        /// node that connects out (`panel node run --connect`).
        #[arg(long)]
        endpoint: String,
        /// The organisation's roster key (orgs/ORG/signing.key from `panel pki init`): the
        /// organisation endorses the registration, and the arbiter's --key-file signs it
        /// (proof of possession). A chartered group refuses registrations without both.
        #[arg(long, value_name = "PATH", requires = "key_file")]
        org_key: Option<PathBuf>,
        #[command(flatten)]
        lineage: LineageArgs,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Declare the arbiter's stance for one debate, signed by its key. Under a debate
    /// policy with declared stances (the default of `Policy::independent`), panels seat an
    /// arbiter under a stance only by such a declaration, and it cannot change later
    /// (docs/coordinator/acceptance.md "Declared priors").
    Declare {
        /// The arbiter's id.
        #[arg(long)]
        id: String,
        /// The arbiter's key file (`panel node keygen`), which signs the declaration.
        #[arg(long, value_name = "PATH")]
        key_file: PathBuf,
        /// The debate the stance is about (positionally or with `--debate`).
        #[command(flatten)]
        debate: DebateRef,
        /// The side the arbiter leans to in this debate.
        #[arg(long, value_enum, ignore_case = true)]
        stance: StanceArg,
        /// The arbiter's credence in that side, in [0, 1].
        #[arg(long, default_value_t = 0.7)]
        credence: f64,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// List the registered arbiters with stance, organisation and admission.
    List {
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Arbiters and organisations ranked on resolved outcomes, with the baseline and peer
    /// log scores (docs/CALIBRATION.md "The leaderboard") and how many resolved forecasts
    /// each rests on.
    Leaderboard {
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// One arbiter: registration, calibration scores and the admission decision.
    Show {
        #[command(flatten)]
        arbiter: ArbiterRef,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

/// An arbiter named positionally or with `--id` (alias `--arbiter`), as `register` and
/// `declare` name it.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct ArbiterRef {
    /// The arbiter id (`panel arbiter list`).
    #[arg(value_name = "ARBITER")]
    id: Option<String>,
    /// The arbiter id, as a flag.
    #[arg(long = "id", visible_alias = "arbiter", value_name = "ARBITER")]
    flag: Option<String>,
}

impl ArbiterRef {
    fn id(&self) -> String {
        self.id
            .clone()
            .or_else(|| self.flag.clone())
            .unwrap_or_default()
    }
}

/// Where the arbiter's model comes from, signed with the registration (docs/WIRE.md
/// "Registration"): an arbiter of a contributor's lineage is kept off motions about its
/// work, and supporters of one lineage count once.
#[derive(clap::Args)]
struct LineageArgs {
    /// The base model the arbiter runs or was tuned from (declaring a lineage needs it).
    #[arg(long, value_name = "NAME")]
    base_model: Option<String>,
    /// Who trained or serves the model.
    #[arg(long, value_name = "NAME", requires = "base_model")]
    provider: Option<String>,
    /// The fine-tune, where there is one.
    #[arg(long, value_name = "NAME", requires = "base_model")]
    fine_tune: Option<String>,
    /// The tuning data's source, where known.
    #[arg(long, value_name = "NAME", requires = "base_model")]
    data_source: Option<String>,
}

impl LineageArgs {
    fn lineage(self) -> Option<Lineage> {
        let base_model = self.base_model?;
        Some(Lineage {
            provider: self.provider.unwrap_or_default(),
            base_model,
            fine_tune: self.fine_tune.unwrap_or_default(),
            data_source: self.data_source.unwrap_or_default(),
        })
    }
}

impl StanceArg {
    fn stance(self) -> Stance {
        match self {
            StanceArg::A => Stance::A,
            StanceArg::B => Stance::B,
            StanceArg::None => Stance::None,
        }
    }
}

/// `--credence` in thousandths, refused outside [0, 1].
fn credence_permille(credence: f64) -> Result<u16> {
    if !(0.0..=1.0).contains(&credence) {
        bail!("--credence {credence} must lie in [0, 1] (0.7 means 70% confident in the side)");
    }
    Ok((credence * 1000.0).round() as u16)
}

/// The hex public key from `--public-key` or the key file, checked to be a valid
/// ed25519 point before it is sent.
fn public_key(key_file: Option<&PathBuf>, public_key: Option<&str>) -> Result<String> {
    let hex_key = match (key_file, public_key) {
        (Some(path), _) => {
            let key = panel_node::keyfile::load_key(path)
                .with_context(|| format!("--key-file {}", path.display()))?;
            hex::encode(key.verifying_key().as_bytes())
        }
        (None, Some(h)) => h.trim().to_ascii_lowercase(),
        (None, None) => bail!("give --key-file PATH or --public-key HEX"),
    };
    let bytes = hex::decode(&hex_key).map_err(|_| {
        anyhow!(
            "--public-key {hex_key:?} is not hex; give the 64 hex characters `panel node fingerprint --key-file PATH` prints"
        )
    })?;
    if bytes.len() != 32 {
        bail!(
            "--public-key has {} bytes; an ed25519 public key is 32 bytes (64 hex characters), as `panel node fingerprint` prints",
            bytes.len()
        );
    }
    panel_proto::keys::parse_public_key(&bytes).map_err(|e| {
        anyhow!("--public-key is not a usable ed25519 public key ({e}); copy it from `panel node fingerprint`")
    })?;
    Ok(hex_key)
}

fn check_endpoint(endpoint: &str) -> Result<()> {
    if panel_machine::command::is_link_endpoint(endpoint) {
        return Ok(());
    }
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"));
    match rest {
        Some(hp) => {
            crate::client::addr::check_addr(hp.trim_end_matches('/'), "--endpoint")?;
            Ok(())
        }
        None => bail!(
            "--endpoint {endpoint:?} must be https://host:port (where the node serves), e.g. https://10.0.0.7:7101, or `link` for a node that connects out"
        ),
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        ArbiterCmd::Register {
            id,
            key_file,
            public_key: pk,
            organisation,
            model_family,
            stance,
            endpoint,
            org_key,
            lineage,
            output: OutputArgs { json },
            cluster,
        } => {
            let public_key = public_key(key_file.as_ref(), pk.as_deref())?;
            check_endpoint(&endpoint)?;
            let mut reg = ArbiterRegistration {
                arbiter_id: id.clone(),
                public_key: public_key.into(),
                organisation,
                model_family,
                stance: stance.stance(),
                endpoint,
                attestation: None,
                lineage: lineage.lineage(),
            };
            if let (Some(org), Some(own)) = (&org_key, &key_file) {
                let organisation = panel_transport::pki::read_seed_key(org)
                    .with_context(|| format!("--org-key {}", org.display()))?;
                let arbiter = panel_node::keyfile::load_key(own)
                    .with_context(|| format!("--key-file {}", own.display()))?;
                reg.attestation = Some(
                    panel_machine::features::charter_rules::attest(&reg, &arbiter, &organisation)
                        .context("signing the registration")?,
                );
            }
            let mut c = Cluster::connect(&cluster)?;
            runtime()?.block_on(async move {
                match c.write(&Write::RegisterArbiter(reg)).await? {
                    WriteOutcome::Refused { code, message } => {
                        report_refusal(&format!("registering {id}"), &code, &message, json)
                    }
                    WriteOutcome::Applied(v) => {
                        if json {
                            print_json(&v)?;
                        } else {
                            println!(
                                "registered arbiter {id}; the leader now gives it the calibration exam (`panel arbiter show {id}`)"
                            );
                        }
                        Ok(ExitCode::SUCCESS)
                    }
                }
            })
        }
        ArbiterCmd::Declare {
            id,
            key_file,
            debate,
            stance,
            credence,
            output: OutputArgs { json },
            cluster,
        } => {
            let key = panel_node::keyfile::load_key(&key_file)
                .with_context(|| format!("--key-file {}", key_file.display()))?;
            let debate = debate.id().to_owned();
            let declaration = panel_machine::features::declared_priors::sign(
                &key,
                &id,
                &debate,
                stance.stance(),
                credence_permille(credence)?,
            )
            .context("signing the declaration")?;
            let mut c = Cluster::connect(&cluster)?;
            runtime()?.block_on(async move {
                match c.write(&Write::DeclareStance(declaration)).await? {
                    WriteOutcome::Refused { code, message } => report_refusal(
                        &format!("declaring {id}'s stance for {debate}"),
                        &code,
                        &message,
                        json,
                    ),
                    WriteOutcome::Applied(v) => {
                        if json {
                            print_json(&v)?;
                        } else {
                            println!(
                                "arbiter {id} declared stance {} for debate {debate}; its panels seat it under that stance",
                                stance_name(stance.stance())
                            );
                        }
                        Ok(ExitCode::SUCCESS)
                    }
                }
            })
        }
        ArbiterCmd::List {
            output: OutputArgs { json },
            cluster,
        } => {
            let c = Cluster::connect(&cluster)?;
            let v: ArbitersReply = runtime()?.block_on(c.read_as(&Query::Arbiters))?;
            if json {
                print_json(&serde_json::to_value(&v)?)?;
                return Ok(ExitCode::SUCCESS);
            }
            if v.arbiters.is_empty() {
                println!("no arbiters registered; `panel arbiter register` adds one");
            }
            for a in &v.arbiters {
                let r = &a.registration;
                println!(
                    "{:<14} stance {:<4} {:<12} {:<10} {:<10} {}",
                    r.arbiter_id,
                    stance_name(r.stance),
                    r.organisation,
                    r.model_family,
                    admission(a),
                    r.endpoint
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ArbiterCmd::Leaderboard {
            output: OutputArgs { json },
            cluster,
        } => {
            let c = Cluster::connect(&cluster)?;
            let v: ArbitersReply = runtime()?.block_on(c.read_as(&Query::Arbiters))?;
            crate::user::leaderboard::print(&v.arbiters, json)?;
            Ok(ExitCode::SUCCESS)
        }
        ArbiterCmd::Show {
            arbiter,
            output: OutputArgs { json },
            cluster,
        } => {
            let id = arbiter.id();
            let c = Cluster::connect(&cluster)?;
            let v: ArbiterReply = runtime()?.block_on(c.read_as(&Query::Arbiter {
                arbiter_id: id.clone(),
            }))?;
            let Some(a) = v.arbiter else {
                bail!("arbiter {id} is not registered; `panel arbiter list` shows the ids");
            };
            if json {
                print_json(&serde_json::to_value(&a)?)?;
            } else {
                print_arbiter(&a);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn admission(a: &Arbiter) -> &'static str {
    match (a.admitted, a.exam.is_none()) {
        (true, _) => "admitted",
        (_, true) => "exam due",
        _ => "refused",
    }
}

fn f(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The agreement scores of the exam's ordinal items, which `ExamRecord` leaves out.
#[derive(Deserialize)]
struct OrdinalExam {
    scores: OrdinalScores,
}

#[derive(Deserialize)]
struct OrdinalScores {
    relevance: Option<Ordinal>,
    tier: Option<Ordinal>,
}

#[derive(Deserialize)]
struct Ordinal {
    items: usize,
    kappa: Option<f64>,
    inert: Inert,
}

#[derive(Deserialize)]
struct Inert {
    inert: bool,
}

fn print_arbiter(a: &Arbiter) {
    let r = &a.registration;
    println!(
        "arbiter {}: stance {}, {}, {}",
        r.arbiter_id,
        stance_name(r.stance),
        r.organisation,
        r.model_family
    );
    println!("  public key {}", r.public_key);
    println!("  endpoint   {}", r.endpoint);
    let exam = match a.exam_record() {
        None => {
            println!(
                "  calibration exam: not scored yet (the leader administers it after registration)"
            );
            print_track_record(a);
            return;
        }
        Some(Err(e)) => {
            println!("  calibration exam: unreadable ({e})");
            print_track_record(a);
            return;
        }
        Some(Ok(exam)) => exam,
    };
    print_exam(&exam, a.exam.as_ref());
    for line in exam_detail_lines(&exam) {
        println!("{line}");
    }
    print_track_record(a);
}

/// What the stored exam says beyond its scores: the bias probes with their intervals, the
/// reliability table with a Wilson interval and count per bin, calibration per topic, and
/// the items held back for the track record (the latter two from rule set 14).
fn exam_detail_lines(exam: &ExamRecord) -> Vec<String> {
    let detail = exam;
    let mut out = Vec::new();
    if let Some(p) = &detail.probes {
        let c = ProbeCells::of(p);
        out.push(
            "  bias probes (each variant against its base question; 95% intervals: Wilson for rates, Wald for kappa)"
                .into(),
        );
        out.push(format!(
            "    order flips {} (rate {}), padding |shift| {}, consequence shift {}",
            c.order_flips, c.order_flip_rate, c.padding, c.consequence
        ));
        out.push(format!(
            "    kappa against gold {} (questions in brackets), objective items correct {}",
            c.kappa, c.objective
        ));
    }
    if let Some(b) = &exam.scores.binary {
        match reliability_intervals(&b.reliability) {
            Ok(rows) if !rows.is_empty() => {
                out.push("  reliability of binary forecasts (n forecasts and yes outcomes per bin; 95% Wilson interval of the observed frequency)".into());
                out.extend(
                    reliability_lines(&rows)
                        .into_iter()
                        .map(|l| format!("  {l}")),
                );
            }
            Ok(_) => {}
            Err(e) => out.push(format!("  reliability table unreadable: {e}")),
        }
    }
    if !detail.topics.is_empty() {
        out.push("  calibration per topic (the exam's tags; binary items asked, yes = gold yes; Brier 0.25 = always 0.5)".into());
        out.push(format!(
            "    {:<20} {:>4} {:>4} {:>7} {:>6}",
            "topic", "n", "yes", "mean_p", "Brier"
        ));
        for t in &detail.topics {
            out.push(format!(
                "    {:<20} {:>4} {:>4} {:>7.3} {:>6.3}",
                t.tag, t.items, t.yes, t.mean_forecast, t.brier
            ));
        }
    }
    if !detail.held_back.is_empty() {
        out.push(format!(
            "  held back from the admission score: {} binary items, scored on the track record against the revealed gold",
            detail.held_back.len()
        ));
    }
    out
}

fn print_exam(exam: &ExamRecord, raw: Option<&serde_json::Value>) {
    let s = &exam.scores;
    println!("  calibration exam {} ({} answered)", s.exam, s.answered);
    let b = s.binary.as_ref();
    println!(
        "    binary items {}: Brier {} (base rate {}), skill {}, log score {}, ECE {}",
        b.map_or("null".into(), |b| b.items.to_string()),
        f(b.map(|b| b.brier)),
        f(b.map(|b| b.base_rate_brier)),
        f(b.and_then(|b| b.brier_skill)),
        f(b.map(|b| b.log_score)),
        f(b.map(|b| b.ece))
    );
    let q = s.quantiles.as_ref();
    println!(
        "    quantile seeds {}: Cooke calibration {}, information {}",
        q.map_or("null".into(), |q| q.seeds.to_string()),
        f(q.map(|q| q.calibration)),
        f(q.map(|q| q.information))
    );
    let ordinal = raw.and_then(|v| OrdinalExam::deserialize(v).ok());
    if let Some(o) = ordinal {
        for (k, x) in [("relevance", o.scores.relevance), ("tier", o.scores.tier)] {
            if let Some(x) = x {
                println!(
                    "    {k} items {}: kappa {}, inert {}",
                    x.items,
                    f(x.kappa),
                    x.inert.inert
                );
            }
        }
    }
    let d = &exam.decision;
    if d.admitted {
        println!("  admission: admitted");
    } else {
        println!("  admission: refused");
        for bar in &d.failed {
            println!(
                "    failed {}: observed {}, required {}: {}",
                bar.bar,
                f(bar.observed),
                bar.required,
                bar.message
            );
        }
        if let Some(t) = &d.reexam_date {
            println!("    re-exam from {t}");
        }
    }
}

/// The track record scored on resolved outcomes (appeals, sources later verified) since
/// the latest exam, and the re-examination flag.
fn print_track_record(a: &Arbiter) {
    for line in track_record_lines(&a.recalibration) {
        println!("{line}");
    }
}

fn track_record_lines(record: &TrackRecord) -> Vec<String> {
    let policy = RecalibrationPolicy::default();
    if record.items.is_empty() {
        return vec![
            "  track record: no resolved outcomes yet (exam items held back from admission, appeals and sources later verified count, never agreement with a panel)".into(),
        ];
    }
    let window = record.window();
    let mut out = vec![format!(
        "  track record on resolved outcomes: {} since the latest exam ({} in all)",
        window.len(),
        record.items.len()
    )];
    let assessment = record
        .assessment
        .clone()
        .or_else(|| assess(&policy, window).ok());
    if let Some(s) = assessment.as_ref().and_then(|x| x.scores) {
        out.push(format!(
            "    Brier {:.3} (base rate {:.3}), log score {:.3} nats, {} of {} resolved yes",
            s.brier, s.base_rate_brier, s.log_score, s.yes, s.count
        ));
    }
    if window.len() < policy.min_resolved {
        out.push(format!(
            "    bars apply from {} resolved items (Brier below the base rate, log score below ln 2)",
            policy.min_resolved
        ));
    }
    match &record.flag {
        None => out.push("    flag: none".into()),
        Some(f) => {
            out.push(format!(
                "    FLAGGED for re-examination (not drawn until re-examined) after motion {} ({})",
                f.resolved_by.motion_id,
                f.resolved_by.kind.as_str()
            ));
            for bar in &f.assessment.failed {
                out.push(format!(
                    "      failed {}: observed {:.4}, required {}: {}",
                    bar.bar, bar.observed, bar.required, bar.message
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibration::recalibration::{Resolution, ResolutionKind, ResolvedItem};
    use serde_json::json;

    fn arbiter_with(items: usize, p: f64) -> TrackRecord {
        let mut r = TrackRecord::default();
        let by = Resolution {
            motion_id: "mot-later".into(),
            kind: ResolutionKind::SourceVerified,
        };
        for n in 0..items {
            r.record(ResolvedItem {
                motion_id: format!("mot-{n}"),
                probability: p,
                outcome: n % 2 == 0,
                resolved_by: by.clone(),
            })
            .expect("valid item");
            r.reassess(&RecalibrationPolicy::default(), &by)
                .expect("assess");
        }
        r
    }

    #[test]
    fn show_prints_the_track_record_and_the_flag() {
        let none = track_record_lines(&TrackRecord::default());
        assert!(none[0].contains("no resolved outcomes yet"), "{none:?}");
        let few = track_record_lines(&arbiter_with(4, 0.9)).join("\n");
        assert!(few.contains("4 since the latest exam (4 in all)"), "{few}");
        assert!(
            few.contains("Brier 0.410 (base rate 0.250), log score 1.204"),
            "{few}"
        );
        assert!(few.contains("bars apply from 30 resolved items"), "{few}");
        assert!(few.contains("flag: none"), "{few}");
        let flagged = track_record_lines(&arbiter_with(30, 0.9)).join("\n");
        assert!(
            flagged.contains("FLAGGED for re-examination (not drawn until re-examined) after motion mot-later (source-verified)"),
            "{flagged}"
        );
        assert!(
            flagged.contains("failed brier_skill: observed 0.4100"),
            "{flagged}"
        );
        assert!(
            flagged.contains("failed log_score: observed 1.2040"),
            "{flagged}"
        );
        // An arbiter row from before track records decodes with an empty one.
        let old: Arbiter = serde_json::from_value(json!({
            "registration": {
                "arbiter_id": "a1", "public_key": "00", "organisation": "o",
                "model_family": "m", "stance": "A", "endpoint": "link",
            },
            "admitted": false, "score_milli": 0, "registered_at_ms": 0,
        }))
        .expect("an old row");
        assert!(track_record_lines(&old.recalibration)[0].contains("no resolved outcomes yet"));
    }
}
