//! The paper's worked verdict (section 4) on the live panel: the debate, its signed
//! stances and contributors, and the live target the scenario player
//! ([`crucible::scenario::play`]) drives over gRPC. The player resolves labels, decodes
//! contributions and checks the verdicts; this file only writes, waits and narrates.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use crucible::contribution::Contribution;
use crucible::document::Debate;
use crucible::motion::{Answer, Question};
use crucible::scenario::{Scenario, Step, Submission, Target, VerdictCheck, play};
use crucible::verdict::js_to_fixed;
use panel_coordinator::client::failover::decode_reply;
use panel_machine::debates::SubmissionHints;
use panel_machine::reply::CreateDebateReply;
use panel_machine::{ClientCommand, DebateSpec, PanelRequest};
use panel_machine::{Policy, Stance};
use panel_transport::pki;

use crate::output::say;
use crate::rulings::Names;
use crate::up::source_server::SourceServer;
use crate::up::{ARBITERS, Contributor, Panel, WORKED_EXAMPLE_ARBITERS};

/// Starts the file server arbiters retrieve sources from when they verify a tier. B1's
/// source is published only when the scenario asks to verify it.
pub async fn serve_sources(state: &Path) -> Result<SourceServer> {
    let sources = SourceServer::start(state.join("sources")).await?;
    publish(
        state,
        "a1-trial-tabulation.txt",
        "Output per employee, participating firms, before and during the trial (official statistics tabulation).\n",
    )?;
    say!(
        "source server: {} (serving {})",
        sources.base_url,
        state.join("sources").display()
    );
    Ok(sources)
}

/// Creates the example's debate and has its four arbiters sign their stances for it.
pub async fn open_debate(panel: &mut Panel, state: &Path, scenario: &Scenario) -> Result<String> {
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
    crate::up::stances::declare(&mut panel.coordinators, state, &debate_id, &stances).await?;
    say!(
        "each arbiter signed its stance for {debate_id}: {}",
        stances
            .iter()
            .map(|(id, s)| format!("{id} {}", crate::rulings::stance_name(*s)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(debate_id)
}

/// The example's contributors and the keys their registrations bound to their names.
pub struct Contributors(BTreeMap<String, panel_proto::SigningKey>);

impl Contributors {
    fn get<'a>(&'a self, name: &'a str) -> Contributor<'a> {
        Contributor {
            name,
            key: self.0.get(name),
        }
    }

    /// The first contributor by name, who also writes in the contested question.
    pub fn first(&self) -> Result<Contributor<'_>> {
        let (name, key) = self
            .0
            .iter()
            .next()
            .context("the worked example registered no contributor")?;
        Ok(Contributor {
            name,
            key: Some(key),
        })
    }
}

/// Registers every author of the scenario: under the charter a name is bound to a key
/// only by a registration its organisation endorses, and each contribution is signed by
/// that key.
pub async fn register_contributors(
    panel: &mut Panel,
    issued: &pki::Issued,
    scenario: &Scenario,
) -> Result<Contributors> {
    register_contributors_with(panel, issued, scenario, &|_| {
        Ok(panel_proto::SigningKey::from_bytes(
            &panel_node::keyfile::random_32()?,
        ))
    })
    .await
}

/// [`register_contributors`] with each author's key made by `key_of(author)` (`panel up
/// --seed` derives them from the seed).
pub async fn register_contributors_with(
    panel: &mut Panel,
    issued: &pki::Issued,
    scenario: &Scenario,
    key_of: &(dyn Fn(&str) -> Result<panel_proto::SigningKey> + Sync),
) -> Result<Contributors> {
    let authors: BTreeSet<&str> = scenario
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Submit { author, .. } => Some(author.as_str()),
            _ => None,
        })
        .collect();
    let mut keys = BTreeMap::new();
    for (n, author) in authors.into_iter().enumerate() {
        let key = key_of(author)?;
        let organisation = pki::LOCAL_ORGANISATIONS[n % pki::LOCAL_ORGANISATIONS.len()];
        register_contributor(panel, issued, author, organisation, &key).await?;
        keys.insert(author.to_owned(), key);
    }
    say!(
        "registered {} contributors, each endorsed by its organisation",
        keys.len()
    );
    Ok(Contributors(keys))
}

/// `name`'s registration under `key`, signed by the key and endorsed by `organisation`'s
/// roster key, as a chartered group requires.
pub fn attested_contributor(
    issued: &pki::Issued,
    name: &str,
    organisation: &str,
    key: &panel_proto::SigningKey,
) -> Result<panel_machine::command::ContributorRegistration> {
    let mut reg = panel_machine::command::ContributorRegistration {
        name: name.to_owned(),
        public_key: hex::encode(key.verifying_key().to_bytes()).into(),
        organisation: organisation.to_owned(),
        attestation: panel_machine::command::WireAttestation {
            proof: Default::default(),
            endorsement: Default::default(),
        },
    };
    let roster = pki::read_seed_key(&issued.signing_key_path(organisation))?;
    reg.attestation =
        panel_machine::features::charter_rules::attest_contributor(&reg, key, &roster)?;
    Ok(reg)
}

/// Registers `name` under `key`, endorsed by `organisation`'s roster key.
pub async fn register_contributor(
    panel: &mut Panel,
    issued: &pki::Issued,
    name: &str,
    organisation: &str,
    key: &panel_proto::SigningKey,
) -> Result<()> {
    let reg = attested_contributor(issued, name, organisation, key)?;
    panel.write(ClientCommand::RegisterContributor(reg)).await?;
    Ok(())
}

/// Plays the scenario through the panel, motion by motion; returns the closed debate.
pub async fn play_live(
    panel: &mut Panel,
    state: &Path,
    scenario: &Scenario,
    debate_id: &str,
    contributors: &Contributors,
    names: &Names,
) -> Result<Debate> {
    let mut live = Live {
        panel,
        state,
        debate_id,
        contributors,
        names,
        printed: BTreeSet::new(),
        phase: String::new(),
    };
    play(scenario, &mut live).await?;
    let doc = live.document().await?;
    say!(
        "debate {debate_id} is {} with {} verdicts on the record",
        doc.phase,
        doc.verdicts.len()
    );
    Ok(doc)
}

/// The live-cluster target: writes go to the replicas, motions are answered by the
/// arbiter nodes, and each decided motion is printed once.
struct Live<'a> {
    panel: &'a mut Panel,
    state: &'a Path,
    debate_id: &'a str,
    contributors: &'a Contributors,
    names: &'a Names,
    printed: BTreeSet<String>,
    phase: String,
}

impl Target for Live<'_> {
    type Error = anyhow::Error;

    async fn document(&mut self) -> Result<Debate> {
        Ok(self.panel.debate(self.debate_id).await?.0)
    }

    async fn submit(&mut self, s: Submission<'_>) -> Result<Option<String>> {
        let told = describe_contribution(&s.contribution);
        let hints = SubmissionHints {
            answer: s.hint,
            verify: s.verify,
            relevance: s.relevance,
        };
        let who = self.contributors.get(s.author);
        let v = crate::up::submit(
            self.panel,
            self.debate_id,
            &who,
            s.side.as_str(),
            s.contribution,
            hints,
        )
        .await?;
        say!("  {} (side {}) {told}", s.author, s.side);
        Ok(v.created)
    }

    async fn ask(&mut self, q: Question, hint: Answer) -> Result<()> {
        if let Question::VerifyTier { .. } = q {
            publish(
                self.state,
                "b1-systematic-review.txt",
                "Systematic review: pooled studies of reduced scheduled hours; methods, search strategy and risk-of-bias assessment.\n",
            )?;
            say!("  B1's source is now published on the source server");
        }
        let asked = self
            .panel
            .write(ClientCommand::AskPanel(PanelRequest {
                debate_id: self.debate_id.to_owned(),
                author: "panel-up".into(),
                question: q.clone(),
                expected: Some(hint),
                fresh_panel: None,
            }))
            .await;
        match asked {
            Ok(_) => {}
            // A phase whose prerequisites do not hold (real judges may leave a merge
            // deadlocked) is refused before a panel is asked; the run says why.
            Err(e) if matches!(q, Question::AdvancePhase { .. }) => {
                say!("  the advance was not asked: {e:#}");
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        if !matches!(q, Question::AdvancePhase { .. }) {
            say!("  panel-up asks the panel: {}", q.kind());
        }
        Ok(())
    }

    async fn reissue_verdict(&mut self) -> Result<()> {
        self.panel
            .write(ClientCommand::ReissueVerdict {
                debate_id: self.debate_id.to_owned(),
                author: "panel-up".into(),
            })
            .await?;
        say!("  panel-up asks for a fresh verdict from the current ledger");
        Ok(())
    }

    async fn settle(&mut self) -> Result<()> {
        let (printed, phase) = (&mut self.printed, &mut self.phase);
        crate::up::settle(self.panel, self.debate_id, self.names, printed, phase).await
    }

    fn verdict(&mut self, check: VerdictCheck<'_>) -> Result<()> {
        if let Some(v) = check.verdict {
            crate::output::result!(
                "\n  VERDICT {}: A {} vs B {}, margin {} -> {}{}\n",
                v.n,
                js_to_fixed(v.totals.a.0, 2),
                js_to_fixed(v.totals.b.0, 2),
                js_to_fixed(v.margin.0, 3),
                match v.winner {
                    Some(w) => format!("Side {w} wins, {}", v.band.key),
                    None => "no winner (unresolved)".into(),
                },
                if v.by_burden { " (by burden)" } else { "" }
            );
        }
        Ok(check.enforce()?)
    }
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
