//! The bench's federation: `panel up`'s launcher (the organisations' certificates, one
//! witness per organisation, three chartered replicas over mutual TLS, arbiter nodes with
//! simulated judges) sized for the bench, then the contributors and debates its load
//! writes to. Everything here goes through the same client commands a user's would.

use panel_machine::RefusalCode;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use panel_coordinator::client::failover::{WriteOutcome, decode_reply};
use panel_coordinator::config::{LimitsSection, ReplicaConfig};
use panel_coordinator::local::Supervisor;
use panel_machine::Stance;
use panel_machine::reply::CreateDebateReply;
use panel_machine::{ClientCommand, DebateSpec, PanelRequest};
use panel_proto::SigningKey;
use panel_transport::{Transport, pki};

use crate::output::say;
use crate::up::cluster::{self, Judging, Tuning};
use crate::up::{ArbiterSpec, Noise, Panel};

/// How big the bench's federation and load are.
#[derive(Debug, Clone, Copy)]
pub struct Sizing {
    pub arbiters: usize,
    pub seats: usize,
    pub debates: usize,
    pub authors: usize,
    pub commit_ms: u64,
}

/// A registered contributor the load writes claims as.
#[derive(Clone)]
pub struct Author {
    pub name: String,
    pub key: SigningKey,
}

/// The running federation, ready for load.
pub struct Group {
    pub state: PathBuf,
    pub addrs: Vec<String>,
    /// The leader's address, first in the order the load's writers try.
    pub leader: String,
    pub client_tls: Transport,
    pub authors: Vec<Author>,
    pub debates: Vec<String>,
}

/// Lineages the bench's arbiters are spread over, so a five-seat panel's supporters are
/// worth more than one independent vote.
const LINEAGES: [&str; 3] = ["sim-lineage-x", "sim-lineage-y", "sim-lineage-z"];

/// The bench's arbiters: alternating organisations, each organisation with both stances,
/// three lineages, and judges that rule right 99 times in 100 with no bias, so nearly
/// every claim is accepted and the work measured is the system's. Their ids are leaked
/// once per process: `ArbiterSpec` holds `'static` names because `panel up`'s are
/// constants.
pub fn arbiters(n: usize) -> Vec<ArbiterSpec> {
    (0..n)
        .map(|i| ArbiterSpec {
            id: Box::leak(format!("bench-arb-{i:02}").into_boxed_str()),
            organisation: pki::LOCAL_ORGANISATIONS[i % pki::LOCAL_ORGANISATIONS.len()],
            model_family: LINEAGES[i % LINEAGES.len()],
            stance: if (i / 2) % 2 == 0 {
                Stance::A
            } else {
                Stance::B
            },
            noise: Noise {
                accuracy: 0.99,
                position_bias: 0.0,
                stance_bias: 0.0,
                leaning: None,
                seed: 1_000 + i as u64,
            },
        })
        .collect()
}

/// The write limits of the bench's own group (never the defaults): the load writes every
/// claim under one client certificate and one organisation, and each node submits its own
/// reveals, far beyond the per-identity, per-organisation and global rates an honest
/// single writer needs. The per-author contribution bucket and the registration and
/// panel-request rates are the intake's own and not configurable; the bench spreads its
/// claims over enough authors instead.
pub fn limits() -> LimitsSection {
    const BURST: u32 = 1_000_000;
    const PER_MINUTE: u32 = 60_000_000;
    LimitsSection {
        identity_burst: Some(BURST),
        identity_per_minute: Some(PER_MINUTE),
        organisation_burst: Some(BURST),
        organisation_per_minute: Some(PER_MINUTE),
        global_burst: Some(BURST),
        global_per_minute: Some(PER_MINUTE),
        ..Default::default()
    }
}

/// Starts the federation in `state` and makes it ready for load: arbiters registered and
/// admitted, authors registered, debates open with every arbiter's stance declared and
/// past framing.
pub async fn start(cluster: &mut Supervisor, state: &Path, sizing: Sizing) -> Result<Group> {
    let state = cluster::fresh_state(state, true)?;
    let specs = arbiters(sizing.arbiters);
    // The exam still runs and is scored; the attendance bar admits whoever answers, so a
    // judge's draw can never keep the bench from starting.
    let (issued, operator) =
        cluster::certificates_for(&state, panel_federation::ExamBar::Attendance, &specs, None)?;
    let judging = Judging {
        commit_ms: sizing.commit_ms,
        ..Judging::SIMULATED
    };
    let tune = |c: &mut ReplicaConfig| c.limits = limits();
    let tuning = Tuning {
        starter: "`panel bench`",
        tune: &tune,
    };
    let addrs =
        cluster::start_coordinators_tuned(cluster, &state, &issued, operator, judging, &tuning)
            .await?;
    let registrations = crate::up::nodes::start(
        cluster,
        &state,
        &issued,
        &addrs,
        &specs,
        &crate::up::nodes::simulated,
    )?;
    let mut panel = Panel::connect(&state, &addrs, &issued)?;
    for r in registrations {
        write_patiently(&mut panel, ClientCommand::RegisterArbiter(r)).await?;
    }
    let scored =
        crate::up::exams::wait_scored(&panel, &state, specs.len(), Duration::from_secs(300))
            .await?;
    if let Some(a) = scored.iter().find(|a| !a.admitted) {
        bail!(
            "arbiter {} was not admitted; see {}",
            a.registration.arbiter_id,
            state.join("logs").display()
        );
    }
    let authors = register_authors(&mut panel, &issued, sizing.authors).await?;
    let mut debates = Vec::with_capacity(sizing.debates);
    for n in 0..sizing.debates {
        debates.push(open_debate(&mut panel, &state, &specs, sizing.seats, n).await?);
    }
    say!(
        "{} debate(s) past framing, every arbiter's stance declared: {}",
        debates.len(),
        debates.join(", ")
    );
    let leader = leader_of(&addrs, &issued).await?;
    Ok(Group {
        client_tls: Transport::from_flags(Some(&issued.dir(pki::LOCAL_CLIENT)), None, false)?,
        state,
        addrs,
        leader,
        authors,
        debates,
    })
}

/// The address of the replica that leads now.
async fn leader_of(addrs: &[String], issued: &pki::Issued) -> Result<String> {
    let t = Transport::from_flags(Some(&issued.dir(pki::LOCAL_CLIENT)), None, false)?;
    for a in addrs {
        if let Ok(s) = panel_coordinator::client::status(&t, a).await
            && s.has_leader
            && !s.leader_addr.is_empty()
        {
            return Ok(s.leader_addr);
        }
    }
    bail!("no replica of {} names a leader", addrs.join(","))
}

/// Writes `command`, waiting out rate-limit refusals (registrations are rate-limited
/// across all writers, a limit the bench keeps); any other refusal is an error.
async fn write_patiently(panel: &mut Panel, command: ClientCommand) -> Result<serde_json::Value> {
    for _ in 0..120 {
        match panel.coordinators.write(&command).await {
            Ok(WriteOutcome::Applied(v)) => return Ok(v),
            Ok(WriteOutcome::Refused {
                code: RefusalCode::RateLimited,
                ..
            }) => {}
            Ok(WriteOutcome::Refused { code, message }) => {
                bail!(
                    "the coordinator refused {} ({code}): {message}",
                    command.kind()
                )
            }
            Err(e) if is_intake_limit(&format!("{e:#}")) => {}
            Err(e) => return Err(e),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    bail!("{} stayed rate-limited for a minute", command.kind())
}

/// Whether an error text is the intake's rate-limit refusal (gRPC RESOURCE_EXHAUSTED).
pub fn is_intake_limit(text: &str) -> bool {
    text.contains("resource exhausted")
        || text.contains("ResourceExhausted")
        || text.contains("rate limit")
}

/// Registers `n` contributors, each endorsed by an organisation, with fresh keys.
async fn register_authors(
    panel: &mut Panel,
    issued: &pki::Issued,
    n: usize,
) -> Result<Vec<Author>> {
    let mut authors = Vec::with_capacity(n);
    let mut progress = crate::progress::Progress::new(n as u64, "contributors registered");
    for i in 0..n {
        let name = format!("bench-author-{i:04}");
        let key = SigningKey::from_bytes(&panel_node::keyfile::random_32()?);
        let organisation = pki::LOCAL_ORGANISATIONS[i % pki::LOCAL_ORGANISATIONS.len()];
        let reg = crate::up::example::attested_contributor(issued, &name, organisation, &key)?;
        write_patiently(panel, ClientCommand::RegisterContributor(reg)).await?;
        authors.push(Author { name, key });
        progress.set(i as u64 + 1);
    }
    progress.finish();
    Ok(authors)
}

/// Creates debate number `n` with `seats`-seat panels, declares every arbiter's stance
/// for it (signed with each node's key) and has the panel advance it past framing, so
/// claims may be threaded.
async fn open_debate(
    panel: &mut Panel,
    state: &Path,
    specs: &[ArbiterSpec],
    seats: usize,
    n: usize,
) -> Result<String> {
    let created = write_patiently(
        panel,
        ClientCommand::CreateDebate(DebateSpec {
            resolution: format!("Resolved: bench question {n} is answered yes."),
            pos_a: "Yes".into(),
            pos_b: "No".into(),
            burden: None,
            claim_budget: None,
            seats,
            min_per_stance: 2,
            policy: None,
            simulation: true,
            convener: "panel-bench".into(),
        }),
    )
    .await?;
    let debate_id = decode_reply::<CreateDebateReply>("a bench debate", created)?.debate_id;
    let stances: Vec<(&str, Stance)> = specs.iter().map(|s| (s.id, s.stance)).collect();
    crate::up::stances::declare(&mut panel.coordinators, state, &debate_id, &stances).await?;
    for _ in 0..3 {
        write_patiently(
            panel,
            ClientCommand::AskPanel(PanelRequest {
                debate_id: debate_id.clone(),
                author: "panel-bench".into(),
                question: crucible::motion::Question::AdvancePhase {
                    from: "framing".into(),
                },
                expected: Some(crucible::motion::Answer::Yes),
                fresh_panel: None,
            }),
        )
        .await?;
        if wait_past_framing(panel, &debate_id).await? {
            return Ok(debate_id);
        }
    }
    bail!("{debate_id} stayed in framing after three panel requests")
}

/// Waits until the debate has no open motion; says whether it left framing.
async fn wait_past_framing(panel: &Panel, debate_id: &str) -> Result<bool> {
    for _ in 0..600 {
        let (doc, rec) = panel.debate(debate_id).await?;
        let open = rec["open"].as_object().map_or(0, |m| m.len());
        if open == 0 {
            return Ok(doc.phase != "framing");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(anyhow::anyhow!(
        "{debate_id}: its framing motion stayed open for a minute"
    ))
    .context("opening the bench's debates")
}
